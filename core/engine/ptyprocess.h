// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "attachinfo.h"

#include <QObject>
#include <QStringList>
#include <QByteArray>
#include <sys/types.h>

class QSocketNotifier;
class QTimer;

namespace Tether {

/// What to run in a new PTY. Sizes are in character cells (columns×rows).
struct SpawnOptions {
    /// Program and arguments. Empty: the user's login shell (from getpwuid(3),
    /// else $SHELL, else /bin/sh) started as a login shell (argv[0] "-bash").
    QStringList argv;
    /// Working directory. Empty: the user's home directory ($HOME, else the
    /// passwd entry's home).
    QString cwd;
    int cols = 80;   ///< 1..1000
    int rows = 24;   ///< 1..1000
    /// "NAME=value" entries added to (or replacing in) the inherited environment.
    /// TERM=xterm-256color and COLORTERM=truecolor are always set; a
    /// Session adds TETHER_SESSION=its id. LINES, COLUMNS and
    /// kOuterTerminalVariables are never inherited.
    QStringList extraEnv;
    /// Start argv[0] as a login shell: exec(3) receives "-" + basename as argv[0].
    /// Set by resolveSpawnOptions() for the default command.
    bool loginShell = false;
};

/// Fills in the defaults of `options`: empty argv → {login shell path} with
/// loginShell = true (shell from getpwuid(3), else $SHELL, else /bin/sh);
/// empty cwd → the home directory ($HOME, else getpwuid(3)'s). start() applies this itself; callers use it
/// to know (and show) what will run.
SpawnOptions resolveSpawnOptions(SpawnOptions options);

/// Variables that describe the terminal Tether itself was started in (a tmux
/// pane, a screen window, a terminal emulator), not the session's terminal:
/// not inherited by the programs of a session, as tmux replaces them in its
/// panes. Inherited, $TMUX made `tmux` in a session refuse to start
/// ("sessions should be nested with care") and `tmux kill-server` there end
/// the outer tmux server (found by a new user who ran `make run` in tmux);
/// TERM_PROGRAM=tmux told programs to wrap their sequences for tmux.
inline constexpr const char *kOuterTerminalVariables[] = {
    "TMUX", "TMUX_PANE",                    // tmux: its socket and pane
    "STY", "WINDOW",                        // GNU screen: its session and window
    "TERM_PROGRAM", "TERM_PROGRAM_VERSION", // the emulator (tmux, iTerm.app, vscode...)
    "WINDOWID",                             // the X window of the emulator
};

/// Window-size bounds accepted by resize() and SpawnOptions (WSL once reported
/// 131072 columns, hidden browser tabs report 0×0: both must be refused).
constexpr int kMinCells = 1;
constexpr int kMaxCells = 1000;
/// Bound on queued, not yet written input (bytes). A program that does not read
/// its stdin plus a large paste must not block us or grow memory (jupyter/terminado#189).
/// The WebSocket viewer stops taking messages once more than its input high
/// watermark (256 KiB) waits and a message is at most 1 MiB, so a paste from
/// the network never reaches this bound (docs/protocol.md, "Input flow
/// control"); it refuses what other sources would add beyond it.
constexpr qsizetype kMaxPendingInput = 2 * 1024 * 1024;
/// The read buffer (bytes): what one outputReady() hands out at most.
/// 64 bytes short of 64 KiB so that a full chunk, sent as one WebSocket
/// frame (4-byte header for payloads up to 65,535 bytes, RFC 6455 §5.2),
/// fits one TCP segment on loopback, where the MSS is 65,483 bytes (the
/// 65,536-byte MTU less 20 of IP, 20 of TCP and 12 of timestamps): a full
/// 64 KiB chunk was a 65,546-byte frame, which TCP_NODELAY sent as two
/// segments, 65,483 and 63 bytes, each a trip through the loopback receive
/// path and a wakeup of the client (issue 11).
constexpr qsizetype kReadChunk = 64 * 1024 - 64;
/// Most bytes read per notifier wakeup (bytes, kReadChunk at a time) by the
/// one PTY that is busy (its last wakeup ended with output still pending)
/// while no other is; each of several busy PTYs reads one kReadChunk per
/// wakeup, which keeps them fair (make bench's 200 `yes` sessions: with 2
/// or 4 chunks for all, the slowest got 0.1-0.17 of the mean under load,
/// 0.24-0.38 with one).
constexpr qsizetype kReadBudget = 4 * kReadChunk;

/**
 * A PtyProcess as handed from one Tether process image to the next when
 * Tether restarts in place (docs/architecture.md, "Restart in place"):
 * execve(2) keeps the pid, the children and every fd without FD_CLOEXEC, so
 * the child stays ours (its exit status can still be reaped) and the fds
 * keep their numbers.
 */
struct PtyHandover {
    pid_t pid = 0;          ///< the leader (= the PTY session id)
    int masterFd = -1;      ///< PTY master; -1 once closed
    int pidfd = -1;         ///< the leader's pidfd; -1 once reaped or without pidfd support
    int cols = 80;
    int rows = 24;
    bool leaderExited = false; ///< the leader was reaped: exitStatus is valid
    bool finished = false;     ///< finished() was emitted
    bool masterEof = false;    ///< the master reported EIO (no slave left)
    bool tornDown = false;     ///< tornDown() was emitted (master closed)
    ExitStatus exitStatus;
    QByteArray pendingInput;   ///< input queued but not yet written to the master
};

/// Pids of our children that were handed to the internal reaper (a leader
/// whose PtyProcess was destroyed first, or whose exec failed) and are not
/// reaped yet. A restart in place hands them on, and the next process image
/// reaps them (reapChildLater): no zombie is left behind.
QList<pid_t> childrenAwaitingReap();
/// Hands `pid`, an unreaped child of this process, to the internal reaper:
/// it is reaped with waitpid(pid, WNOHANG) when its pidfd becomes readable,
/// never blocking, never waitpid(-1).
void reapChildLater(pid_t pid);

/**
 * A child process in its own PTY, driven entirely by the Qt event loop.
 *
 * Spawn (forkpty(3) semantics, done by hand for error reporting): the child
 * starts a new session (setsid) with the PTY slave as its controlling
 * terminal, has its signal dispositions and mask reset, every fd >= 3 closed,
 * its soft descriptor limit set back to the one Tether started with
 * (FdLimit::childSoftLimit(): programs using select(2) break above 1024),
 * IUTF8 set, the initial window size applied. The master is O_NONBLOCK|O_CLOEXEC.
 * exec failures (no such file, not executable, bad cwd) travel back over a
 * close-on-exec pipe and make start() fail with the errno text.
 *
 * Output: read on a QSocketNotifier, kReadChunk at a time into one reusable
 * buffer, each chunk handed out by outputReady(); one chunk per wakeup, or up
 * to kReadBudget while no other PTY of this thread is busy. EIO on the master is end
 * of output. No decoding: bytes only (a read can split a UTF-8 character).
 *
 * Input: write() queues; a write notifier drains the queue with non-blocking
 * writes (partial writes and EAGAIN handled). The queue is bounded by
 * kMaxPendingInput; overflow refuses the write and emits inputStalled().
 * Each write notifier wakeup that makes progress emits inputWritten().
 *
 * Exit: detected with a pidfd (Linux >= 5.3) on a notifier; only our own pid is
 * reaped (never waitpid(-1), which would steal QProcess's children). When the
 * leader has exited, the master is drained until it has no pending output, then
 * finished() is emitted exactly once, after the last output byte, even if a
 * background process still holds the slave open (the master then never sees EIO).
 *
 * Teardown (terminate()): SIGHUP to every process whose session id is the
 * leader's pid (found in /proc/<pid>/stat field 6, so background jobs in their
 * own process groups are included; tsl0922/ttyd#1401), SIGTERM after the grace period,
 * SIGKILL after another; timers only, never blocking. Escalation continues after
 * the leader dies (other members may ignore SIGHUP). Processes that called
 * setsid themselves have left the session and are out of reach.
 *
 * Destruction never blocks and never leaves a zombie: a still-running leader is
 * killed (SIGKILL to its session) and handed to an internal reaper.
 */
class PtyProcess : public QObject
{
    Q_OBJECT
public:
    explicit PtyProcess(QObject *parent = nullptr);
    ~PtyProcess() override;

    /// Spawns the child. Returns false and sets *error (strerror text plus what
    /// failed, e.g. "cannot execute /nope: No such file or directory") when the
    /// PTY cannot be opened, the size is out of range, or exec/chdir fails.
    /// Returns once the child has reached execve(2) (the close-on-exec error
    /// pipe closes); a child that failed is already reaped when it returns.
    /// A SIGCHLD disposition inherited as SIG_IGN (or with SA_NOCLDWAIT) is
    /// reset to SIG_DFL first, with a warning: with it, the kernel reaps our
    /// children itself and no exit status could be read.
    bool start(const SpawnOptions &options, QString *error);

    /// Why the last start() failed.
    enum class StartFailure {
        None,      ///< no failure (not started yet, or started)
        Command,   ///< the command, its cwd or the size cannot work: retrying will not help
        /// The process or the system ran out of something a later retry may
        /// find free: file descriptors (EMFILE, ENFILE), pseudo-terminals
        /// (ENOSPC from posix_openpt(3): kernel.pty.max, pts(4)), processes
        /// or memory (EAGAIN, ENOMEM: fork(2), execve(2)). The errno of the
        /// failing step decides, whichever step it was. The error text then
        /// ends with which limit was reached and where it is set, e.g.
        /// "cannot open a pseudo-terminal: No space left on device (every
        /// pseudo-terminal is in use: the kernel allows 4096 in
        /// /proc/sys/kernel/pty/max, ...)".
        Resources,
    };
    StartFailure startFailure() const { return m_startFailure; }

    /// What the next process image needs to go on with this child (restart
    /// in place): pid, fds, size, exit progress, queued input. The fds stay
    /// this object's until release().
    PtyHandover handover() const;
    /// Lets go of the child without killing it or closing its fds (they were
    /// handed over): stops watching them, forgets pid and fds. The object is
    /// inert afterwards (isRunning() false, no signal is emitted again).
    void release();
    /**
     * Takes over a child described by `h` instead of start(): a child of this
     * process (the previous process image's, kept across execve(2), or one
     * release()d in this process). Puts FD_CLOEXEC back on the fds (they were
     * handed over without it), watches the master and the leader as start()
     * does, and carries on from where the old owner was: a leader that exited
     * meanwhile is reaped now, a pending finished() is emitted after the last
     * output byte, members left after the leader are watched. Returns false
     * with *error, taking nothing, when this object was started already, the
     * pid is not positive, or the master fd is not open.
     */
    bool adopt(const PtyHandover &h, QString *error);

    pid_t pid() const { return m_pid; }      ///< leader pid (= session id); 0 before start
    int masterFd() const { return m_master; } ///< -1 before start / after close
    /// The leader's pidfd; -1 before start, once the leader was reaped, or
    /// without pidfd support. Still this object's (KeeperLink sends a copy).
    int pidfd() const { return m_pidfd; }
    bool isRunning() const;                   ///< started and finished() not yet emitted
    /// Exit status; meaningful after finished().
    ExitStatus exitStatus() const { return m_exitStatus; }

    /// Queues input bytes for the child. Returns false (nothing queued) and emits
    /// inputStalled() when the queue would exceed kMaxPendingInput; false also
    /// after the master closed.
    bool write(const char *data, qsizetype size);
    bool write(const QByteArray &data) { return write(data.constData(), data.size()); }
    qsizetype pendingInput() const;            ///< queued input bytes
    /// False once the master is closed or has reached end of output (EIO: no
    /// process holds the slave any more): write() then refuses everything.
    bool acceptsInput() const { return m_master >= 0 && !m_masterEof && !m_tornDownEmitted; }

    /// Applies a window size with TIOCSWINSZ (the kernel sends SIGWINCH to the
    /// foreground process group). Returns false, applying nothing, when cols or
    /// rows is outside kMinCells..kMaxCells or the master is closed.
    bool resize(int cols, int rows);
    int cols() const { return m_cols; }
    int rows() const { return m_rows; }

    /// The terminal's foreground process group (tcgetpgrp(3) on the master;
    /// Linux answers for the slave's side): the job that gets the keystrokes
    /// and SIGWINCH, e.g. `vim` started from the shell. -1 when there is none
    /// (the master is closed, or no process holds the slave as its
    /// controlling terminal any more). A snapshot: jobs change without notice.
    pid_t foregroundProcessGroup() const;

    /// Pauses (false) or resumes (true) reading the master: backpressure from a
    /// slow viewer. While paused the kernel buffer fills and the child blocks
    /// in write(2). finished() is deferred until reading resumes and drains.
    void setReadEnabled(bool enabled);
    bool isReadEnabled() const { return m_readEnabled; }
    /**
     * Bounds what is read from the master from now on to `bytes` in all
     * (negative: no bound, the default; each call replaces the last bound).
     * Reads are cut to fit (one read(2) asks for no more than what is left),
     * and once the bound is used up the read notifier is off (no wakeups)
     * until the next call: the kernel's buffer fills and the child blocks
     * in write(2), as with setReadEnabled(false). finished() is deferred
     * the same way. Teardown ignores it (dying processes must not stay
     * blocked). Session's output hold (Session::holdOutput) keeps a restart's
     * control viewer's bytes in the ring with it.
     */
    void setReadLimit(qsizetype bytes);
    /// What is left of the bound set by setReadLimit() (bytes); -1 for none.
    qsizetype readLimit() const { return m_readLimit; }

    /// Starts teardown (see class doc). Idempotent; does nothing before a
    /// successful start(). tornDown() follows (never from inside this call).
    /// Teardown reads the master even while setReadEnabled(false): dying
    /// processes must not stay blocked in write(2), and finished() must come.
    void terminate();
    /// Grace before each escalation step (SIGHUP→SIGTERM→SIGKILL); default 2000 ms.
    void setTeardownGrace(int msec) { m_graceMs = msec; }

Q_SIGNALS:
    /// Output bytes; `data` is valid only during the call (one reused buffer).
    void outputReady(const char *data, qsizetype size);
    /// The leader exited and all its output has been delivered. Emitted once.
    void finished(const Tether::ExitStatus &status);
    /// write() refused input because kMaxPendingInput bytes are queued.
    void inputStalled();
    /// The write notifier wrote queued input to the master (or the queue
    /// was dropped on a write error); `pending` bytes still wait. Emitted
    /// only while input is queued, so an idle PTY costs nothing: the
    /// progress a holder paused on a full queue resumes from.
    void inputWritten(qsizetype pending);
    /// Teardown complete: leader reaped and no process of its session left
    /// (or SIGKILL sent to all), master closed. Also emitted when the child
    /// exited by itself and its session is empty, after finished().
    void tornDown();

private:
    /// Outcome of one readChunk(): the chunk was filled (more may be pending),
    /// the master had nothing more (EAGAIN), the slave is closed by everyone
    /// (EIO), or a slot connected to outputReady() deleted this object.
    enum class ReadResult { More, WouldBlock, Eof, Deleted };

    /// The parent's side of a successful start(): takes `master` and the
    /// leader `pid`, and sets up the read/write notifiers and the exit watch
    /// (a pidfd, or a kFallbackPollMs poll without pidfd support).
    void startRunning(pid_t pid, int master, const SpawnOptions &options);

    void watchMaster();          ///< read and write notifiers on m_master
    void watchLeader(int pidfd); ///< exit notifier on `pidfd` (-1: open one), or the poll fallback
    void onReadable();
    void onWritable();
    void onLeaderExit();
    void escalate();
    ReadResult readChunk();
    void afterRead(ReadResult result);
    void markMasterEof();
    void tryFinish();
    void emitFinished();
    void checkDone();
    void completeTeardown();
    void updateReadNotifier();
    void signalSession(int signo);
    void watchMember(pid_t member);
    void stopWatchingMember();
    void scheduleProgress();
    qsizetype writeNow(const char *data, qsizetype size);

    // Implementation detail members; see ptyprocess.cpp.
    pid_t m_pid = 0;
    StartFailure m_startFailure = StartFailure::None;
    int m_master = -1;
    int m_pidfd = -1;
    int m_memberPidfd = -1;      ///< pidfd of the session member being watched
    pid_t m_watchedMember = 0;
    int m_cols = 80;
    int m_rows = 24;
    int m_graceMs = 2000;
    int m_teardownStep = 0;      ///< 0 none, 1 SIGHUP sent, 2 SIGTERM sent, 3 SIGKILL sent
    bool m_readEnabled = true;
    qsizetype m_readLimit = -1;  ///< setReadLimit(): bytes still to read; -1 no bound
    /// Reading is off (a blocked viewer, or the read limit used up); teardown reads anyway.
    bool readPaused() const { return !m_readEnabled || m_readLimit == 0; }
    bool m_leaderExited = false; ///< leader reaped, m_exitStatus valid
    bool m_exitDrained = false;  ///< master read to EAGAIN/EIO after the leader was reaped
    bool m_finishedEmitted = false;
    bool m_tornDownEmitted = false;
    bool m_masterEof = false;
    bool m_killGraceExpired = false;
    bool m_progressPending = false;
    qsizetype m_drainedSinceExit = 0;
    /// The last wakeup left output pending (counted in the thread's busy
    /// PTYs, see kReadBudget).
    bool m_busy = false;
    void setBusy(bool busy);
    ExitStatus m_exitStatus;
    QByteArray m_readBuffer;
    QByteArray m_inputQueue;
    qsizetype m_inputHead = 0;
    QSocketNotifier *m_readNotifier = nullptr;
    QSocketNotifier *m_writeNotifier = nullptr;
    QSocketNotifier *m_exitNotifier = nullptr;
    QSocketNotifier *m_memberNotifier = nullptr;
    QTimer *m_teardownTimer = nullptr;
    QTimer *m_exitPollTimer = nullptr;   ///< only without pidfd support
    QTimer *m_memberPollTimer = nullptr; ///< only without pidfd support
};

} // namespace Tether

