// SPDX-License-Identifier: GPL-2.0-or-later
// PtyProcess: a child in its own PTY, driven by the Qt event loop.
//
// The spawn itself (the exec arguments, the PTY, the child between fork and
// exec, its report) is in ptyspawn.cpp (ptyspawn.h).
#include "ptyprocess.h"
#include "childreaper.h"
#include "fdutil.h"
#include "logging.h"
#include "procinfo.h"
#include "ptyspawn.h"

#include <QFile>
#include <QPointer>
#include <QSocketNotifier>
#include <QTimer>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace Tether {

namespace {

/**
 * The processes of session `sid` (not zombies), from one scan of /proc
 * shared by every PtyProcess of this thread within one turn of its event
 * loop. A shutdown signals every session in one turn and their escalation
 * timers fire together; a scan per session and phase made the teardown of
 * N sessions cost N scans of a /proc that holds N shells (issue 27: SIGTERM
 * took 9.4 s with 487 sessions). The next turn scans again (processes die
 * and fork in between); within a turn a process forked after the scan is
 * missed as it was between a scan and its use before.
 */
QList<pid_t> sessionMembers(pid_t sid)
{
    struct Cache
    {
        QHash<pid_t, QList<pid_t>> bySession;
        bool valid = false;
    };
    thread_local Cache cache;
    if (!cache.valid) {
        cache.bySession = processesBySession();
        cache.valid = true;
        QTimer::singleShot(0, [] {
            cache.valid = false;
            cache.bySession.clear();
        });
    }
    return cache.bySession.value(sid);
}

/// After the leader exited, at most this many bytes are read before finished()
/// is emitted even if the master never reports EAGAIN (a background process
/// that writes without pause). Everything the leader wrote was already in the
/// kernel's PTY buffers when it exited (flip buffers are capped at 640 KiB plus
/// the 4 KiB line discipline buffer), and reads are FIFO, so reading more than
/// that has delivered every leader byte.
constexpr qsizetype kExitDrainBudget = 4 * 1024 * 1024;

QString errnoText(int err)
{
    return QString::fromLocal8Bit(std::strerror(err));
}

} // namespace

// ---------------------------------------------------------------------------

SpawnOptions resolveSpawnOptions(SpawnOptions options)
{
    QString shell;
    QString home;
    {
        struct passwd pw;
        struct passwd *result = nullptr;
        long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
        std::vector<char> buf(size > 0 ? size_t(size) : 16384);
        if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &result) == 0 && result) {
            shell = QFile::decodeName(pw.pw_shell ? pw.pw_shell : "");
            home = QFile::decodeName(pw.pw_dir ? pw.pw_dir : "");
        }
    }
    if (options.argv.isEmpty()) {
        if (shell.isEmpty())
            shell = QFile::decodeName(qgetenv("SHELL"));
        if (shell.isEmpty())
            shell = QStringLiteral("/bin/sh");
        options.argv = QStringList{shell};
        options.loginShell = true;
    }
    if (options.cwd.isEmpty()) {
        // $HOME first: the child inherits it, so `cd` and `~` in the shell
        // agree with where it starts (as terminal emulators do); the passwd
        // entry when HOME is unset.
        const QString envHome = QFile::decodeName(qgetenv("HOME"));
        if (!envHome.isEmpty())
            home = envHome;
        options.cwd = home.isEmpty() ? QStringLiteral("/") : home;
    }
    return options;
}

// ---------------------------------------------------------------------------

PtyProcess::PtyProcess(QObject *parent)
    : QObject(parent)
{
    // Qt 5's QSignalSpy and queued connections need the type registered.
    static const int registered = qRegisterMetaType<Tether::ExitStatus>("Tether::ExitStatus");
    Q_UNUSED(registered);
}

PtyProcess::~PtyProcess()
{
    setBusy(false);
    // Notifiers first: they must not outlive the fds they watch.
    delete m_readNotifier;
    delete m_writeNotifier;
    delete m_exitNotifier;
    delete m_memberNotifier;
    if (m_pid > 0 && !m_tornDownEmitted) {
        // Never block, never leave a zombie: kill the whole session (a pid with
        // live session members cannot be reused as a session id, so the scan
        // is valid even after the leader was reaped) and let the reaper wait.
        // The unreaped leader first (its pid cannot be reused before we reap
        // it): it dies while /proc is scanned, so the reaper's first WNOHANG
        // usually reaps it at once instead of leaving a zombie until the next
        // event-loop pass.
        if (!m_leaderExited)
            ::kill(m_pid, SIGKILL);
        const QList<pid_t> members = processesInSession(m_pid);
        for (pid_t p : members)
            ::kill(p, SIGKILL);
        if (!m_leaderExited) {
            ChildReaper::adopt(m_pid, m_pidfd);
            m_pidfd = -1;
        }
        qCDebug(lcPty) << "destroyed while running: killed session" << m_pid << members;
    }
    closeFd(m_master);
    closeFd(m_pidfd);
    closeFd(m_memberPidfd);
}

bool PtyProcess::start(const SpawnOptions &requested, QString *error)
{
    // `err`: the errno of the failing step, 0 for a check of ours.
    auto fail = [this, error](const QString &text, int err = 0) {
        const bool resources = isResourceShortage(err);
        if (error)
            *error = resources ? QStringLiteral("%1 (%2)").arg(text, resourceHint(err)) : text;
        m_startFailure = resources ? StartFailure::Resources : StartFailure::Command;
        qCDebug(lcPty) << "start failed:" << text;
        return false;
    };
    if (m_pid != 0 || m_master >= 0)
        return fail(QStringLiteral("process already started"));
    ensureChildrenWaitable();

    const SpawnOptions options = resolveSpawnOptions(requested);
    if (options.cols < kMinCells || options.cols > kMaxCells || options.rows < kMinCells
        || options.rows > kMaxCells) {
        return fail(QStringLiteral("window size %1x%2 out of range (%3..%4)")
                            .arg(options.cols).arg(options.rows).arg(kMinCells).arg(kMaxCells));
    }
    if (QFile::encodeName(options.argv.first()).isEmpty())
        return fail(QStringLiteral("empty command"));

    ExecArgs exec(options);
    PtyPair pty;
    StartError why;
    if (!openPty(options.cols, options.rows, &pty, &why))
        return fail(why.text, why.err);
    const pid_t pid = spawnChild(exec, &pty, options, &why);
    if (pid < 0)
        return fail(why.text, why.err);
    startRunning(pid, pty.master, options);
    return true;
}

void PtyProcess::startRunning(pid_t pid, int master, const SpawnOptions &options)
{
    m_startFailure = StartFailure::None;
    m_pid = pid;
    m_master = master;
    m_cols = options.cols;
    m_rows = options.rows;
    m_readBuffer.resize(kReadChunk);
    watchMaster();
    watchLeader(-1);
    qCDebug(lcPty) << "spawned" << pid << options.argv << "in" << options.cwd
                   << options.cols << "x" << options.rows;
}

void PtyProcess::watchMaster()
{
    m_readNotifier = new QSocketNotifier(m_master, QSocketNotifier::Read, this);
    connect(m_readNotifier, &QSocketNotifier::activated, this, [this] { onReadable(); });
    m_readNotifier->setEnabled(!readPaused());
    m_writeNotifier = new QSocketNotifier(m_master, QSocketNotifier::Write, this);
    m_writeNotifier->setEnabled(pendingInput() > 0); // enabled only while input waits
    connect(m_writeNotifier, &QSocketNotifier::activated, this, [this] { onWritable(); });
}

void PtyProcess::watchLeader(int pidfd)
{
    // The leader cannot have been reaped by anyone yet (it is our child), so
    // a pidfd opened now refers to it even if it already exited.
    m_pidfd = pidfd >= 0 ? pidfd : pidfdOpen(m_pid);
    if (m_pidfd >= 0) {
        m_pidfd = moveAbove2(m_pidfd);
        m_exitNotifier = new QSocketNotifier(m_pidfd, QSocketNotifier::Read, this);
        connect(m_exitNotifier, &QSocketNotifier::activated, this, [this] { onLeaderExit(); });
    } else {
        qCWarning(lcPty) << "pidfd_open failed:" << errnoText(errno) << "- polling for exit";
        m_exitPollTimer = new QTimer(this);
        m_exitPollTimer->setInterval(kFallbackPollMs);
        connect(m_exitPollTimer, &QTimer::timeout, this, [this] { onLeaderExit(); });
        m_exitPollTimer->start();
    }
}

bool PtyProcess::isRunning() const
{
    return m_pid > 0 && !m_finishedEmitted;
}

// --- output -------------------------------------------------------------------

namespace {
/// PTYs of this thread whose last wakeup left output pending (kReadBudget).
thread_local int t_busyPtys = 0;
} // namespace

void PtyProcess::onReadable()
{
    // A program that writes flat out refills the PTY (on another CPU) while
    // we read: a wakeup that stopped at one full chunk found more waiting
    // at once. Each further chunk read here saves a turn of the event loop
    // (a poll, the notifier's dispatch): `cat` of 16 MiB took 300 polls
    // with one chunk per wakeup, 142 with four (strace -c). Not past the
    // budget (fairness), nor once reading was switched off (a blocked
    // control viewer) or the leader's exit was drained (finished() is due).
    // Only while no other PTY is busy: among several floods, one chunk each
    // per wakeup keeps them fair (kReadBudget).
    const bool alone = t_busyPtys == (m_busy ? 1 : 0);
    ReadResult r = ReadResult::More;
    for (qsizetype budget = alone ? kReadBudget : kReadChunk; budget > 0; budget -= kReadChunk) {
        r = readChunk();
        if (r != ReadResult::More || readPaused() || (m_leaderExited && m_exitDrained))
            break;
    }
    if (r == ReadResult::Deleted)
        return;
    setBusy(r == ReadResult::More);
    afterRead(r);
}

void PtyProcess::setBusy(bool busy)
{
    if (busy != m_busy)
        t_busyPtys += busy ? 1 : -1;
    m_busy = busy;
}

PtyProcess::ReadResult PtyProcess::readChunk()
{
    if (m_master < 0 || m_masterEof)
        return ReadResult::Eof;
    // The read limit (setReadLimit) cuts the chunk; teardown reads past it.
    const bool limited = m_readLimit >= 0 && m_teardownStep == 0 && !m_tornDownEmitted;
    const qsizetype want = limited ? qMin(kReadChunk, m_readLimit) : kReadChunk;
    if (want <= 0)
        return ReadResult::WouldBlock; // nothing read: not the end of an exit's drain either
    char *buf = m_readBuffer.data();
    qsizetype total = 0;
    ReadResult result = ReadResult::More;
    // Several read(2)s per wakeup (one returns at most the line discipline's
    // 4 KiB), bounded by kReadChunk for fairness between sessions.
    while (total < want) {
        const ssize_t n = ::read(m_master, buf + total, size_t(want - total));
        if (n > 0) {
            total += n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            // On Linux, n_tty_read flushes pending flip-buffer work before it
            // reports EAGAIN, so nothing the slave side wrote is left behind.
            result = ReadResult::WouldBlock;
            break;
        }
        // EIO: every slave fd is closed; nothing more will come.
        if (n < 0 && errno != EIO)
            qCWarning(lcPty) << "read from master failed:" << errnoText(errno);
        result = ReadResult::Eof;
        break;
    }
    if (result == ReadResult::Eof)
        markMasterEof();
    if (m_leaderExited && !m_finishedEmitted && !m_exitDrained) {
        m_drainedSinceExit += total;
        if (result != ReadResult::More || m_drainedSinceExit >= kExitDrainBudget)
            m_exitDrained = true;
    }
    if (limited && total > 0) {
        m_readLimit -= total;
        if (m_readLimit == 0)
            updateReadNotifier(); // used up: no wakeups until the next setReadLimit()
    }
    if (total > 0) {
        QPointer<PtyProcess> self(this);
        Q_EMIT outputReady(buf, total);
        if (!self)
            return ReadResult::Deleted;
    }
    return result;
}

void PtyProcess::afterRead(ReadResult result)
{
    if (result == ReadResult::Deleted)
        return;
    if (m_leaderExited && !m_finishedEmitted && m_exitDrained) {
        emitFinished();
        return;
    }
    if (result == ReadResult::Eof)
        checkDone();
}

void PtyProcess::markMasterEof()
{
    m_masterEof = true;
    // EIO is level-triggered: a live notifier would spin.
    dropNotifier(m_readNotifier);
    dropNotifier(m_writeNotifier);
    m_inputQueue.clear();
    m_inputHead = 0;
    qCDebug(lcPty) << "end of output of" << m_pid;
}

void PtyProcess::setReadEnabled(bool enabled)
{
    m_readEnabled = enabled;
    updateReadNotifier();
    if (enabled && m_leaderExited && !m_finishedEmitted)
        scheduleProgress(); // the deferred drain + finished()
}

void PtyProcess::setReadLimit(qsizetype bytes)
{
    const bool wasPaused = readPaused();
    m_readLimit = bytes < 0 ? -1 : bytes;
    updateReadNotifier();
    if (wasPaused && !readPaused() && m_leaderExited && !m_finishedEmitted)
        scheduleProgress(); // the deferred drain + finished()
}

void PtyProcess::updateReadNotifier()
{
    if (m_readNotifier)
        m_readNotifier->setEnabled(!readPaused() || m_teardownStep > 0);
}

void PtyProcess::scheduleProgress()
{
    if (m_progressPending)
        return;
    m_progressPending = true;
    QMetaObject::invokeMethod(this, [this] {
        m_progressPending = false;
        if (m_tornDownEmitted)
            return;
        QPointer<PtyProcess> self(this);
        tryFinish();
        if (self && !m_tornDownEmitted)
            checkDone();
    }, Qt::QueuedConnection);
}

// --- input --------------------------------------------------------------------

qsizetype PtyProcess::pendingInput() const
{
    return m_inputQueue.size() - m_inputHead;
}

qsizetype PtyProcess::writeNow(const char *data, qsizetype size)
{
    qsizetype done = 0;
    while (done < size) {
        const ssize_t n = ::write(m_master, data + done, size_t(size - done));
        if (n > 0) {
            done += n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            qCWarning(lcPty) << "write to master failed:" << errnoText(errno);
            return -1;
        }
    }
    return done;
}

bool PtyProcess::write(const char *data, qsizetype size)
{
    if (!acceptsInput())
        return false;
    if (size <= 0)
        return true;
    if (pendingInput() + size > kMaxPendingInput) {
        Q_EMIT inputStalled();
        return false;
    }
    if (pendingInput() == 0) {
        // Nothing queued: try at once, queue only what the kernel refuses.
        const qsizetype n = writeNow(data, size);
        if (n < 0)
            return false;
        data += n;
        size -= n;
        if (size == 0)
            return true;
    }
    if (m_inputHead > 0 && m_inputHead >= m_inputQueue.size() / 2) {
        m_inputQueue.remove(0, int(m_inputHead));
        m_inputHead = 0;
    }
    m_inputQueue.append(data, int(size));
    if (m_writeNotifier)
        m_writeNotifier->setEnabled(true);
    return true;
}

void PtyProcess::onWritable()
{
    const qsizetype n = writeNow(m_inputQueue.constData() + m_inputHead, pendingInput());
    if (n < 0) {
        m_inputQueue.clear();
        m_inputHead = 0;
    } else {
        m_inputHead += n;
    }
    if (pendingInput() == 0) {
        m_inputQueue.clear();
        m_inputHead = 0;
        if (m_writeNotifier)
            m_writeNotifier->setEnabled(false); // enabled only while input waits
    }
    if (n != 0)
        Q_EMIT inputWritten(pendingInput());
}

pid_t PtyProcess::foregroundProcessGroup() const
{
    if (m_master < 0)
        return -1;
    const pid_t pgrp = ::tcgetpgrp(m_master);
    return pgrp > 0 ? pgrp : -1;
}

bool PtyProcess::resize(int cols, int rows)
{
    if (cols < kMinCells || cols > kMaxCells || rows < kMinCells || rows > kMaxCells)
        return false;
    if (m_master < 0)
        return false;
    struct winsize ws = {};
    ws.ws_col = static_cast<unsigned short>(cols);
    ws.ws_row = static_cast<unsigned short>(rows);
    if (::ioctl(m_master, TIOCSWINSZ, &ws) < 0) {
        qCWarning(lcPty) << "TIOCSWINSZ failed:" << errnoText(errno);
        return false;
    }
    m_cols = cols;
    m_rows = rows;
    return true;
}

// --- exit -----------------------------------------------------------------------

void PtyProcess::onLeaderExit()
{
    if (m_leaderExited || m_pid <= 0)
        return;
    int status = 0;
    pid_t r;
    do
        r = ::waitpid(m_pid, &status, WNOHANG); // our pid only, never -1
    while (r < 0 && errno == EINTR);
    if (r == 0) {
        // Still running: normal with the poll fallback. A pidfd is readable
        // only once the process exited, so retry shortly instead of spinning.
        if (m_exitNotifier) {
            m_exitNotifier->setEnabled(false);
            QTimer::singleShot(10, this, [this] {
                if (m_exitNotifier)
                    m_exitNotifier->setEnabled(true);
            });
        }
        return;
    }
    if (r < 0) {
        // ECHILD: someone reaped it behind our back (SIGCHLD set to SIG_IGN,
        // or a waitpid(-1) elsewhere). The status is lost.
        qCWarning(lcPty) << "leader" << m_pid << "was reaped elsewhere:" << errnoText(errno);
        m_exitStatus = ExitStatus{false, -1, 0};
    } else if (WIFSIGNALED(status)) {
        m_exitStatus = ExitStatus{true, 0, WTERMSIG(status)};
    } else {
        m_exitStatus = ExitStatus{false, WEXITSTATUS(status), 0};
    }
    m_leaderExited = true;
    dropNotifier(m_exitNotifier);
    closeFd(m_pidfd);
    if (m_exitPollTimer) {
        m_exitPollTimer->stop();
        m_exitPollTimer->deleteLater();
        m_exitPollTimer = nullptr;
    }
    qCDebug(lcPty) << "leader" << m_pid << "exited:"
                   << (m_exitStatus.signaled ? "signal" : "code")
                   << (m_exitStatus.signaled ? m_exitStatus.signal : m_exitStatus.code);
    tryFinish(); // checkDone() follows finished()
}

void PtyProcess::tryFinish()
{
    if (m_finishedEmitted || !m_leaderExited)
        return;
    if (m_masterEof || m_master < 0) {
        emitFinished();
        return;
    }
    if (readPaused() && m_teardownStep == 0)
        return; // deferred until setReadEnabled(true) or setReadLimit()
    // Drain: finished() follows the first EAGAIN/EIO seen after the reap. A
    // full chunk leaves the rest to the (level-triggered) read notifier.
    afterRead(readChunk());
}

void PtyProcess::emitFinished()
{
    if (m_finishedEmitted)
        return;
    m_finishedEmitted = true;
    QPointer<PtyProcess> self(this);
    Q_EMIT finished(m_exitStatus);
    if (self)
        checkDone();
}

// --- teardown -------------------------------------------------------------------

void PtyProcess::terminate()
{
    if (m_pid <= 0 || m_tornDownEmitted || m_teardownStep > 0)
        return;
    qCDebug(lcPty) << "terminating session" << m_pid << "grace" << m_graceMs << "ms";
    m_teardownStep = 1;
    updateReadNotifier();
    signalSession(SIGHUP);
    m_teardownTimer = new QTimer(this);
    m_teardownTimer->setSingleShot(true);
    connect(m_teardownTimer, &QTimer::timeout, this, &PtyProcess::escalate);
    m_teardownTimer->start(qMax(0, m_graceMs));
    scheduleProgress(); // e.g. the leader had already exited: done at once
}

void PtyProcess::escalate()
{
    switch (m_teardownStep) {
    case 1:
        m_teardownStep = 2;
        signalSession(SIGTERM);
        m_teardownTimer->start(qMax(0, m_graceMs));
        break;
    case 2:
        m_teardownStep = 3;
        signalSession(SIGKILL);
        m_teardownTimer->start(qMax(0, m_graceMs));
        break;
    default:
        // SIGKILL was sent a grace period ago: do not wait for stragglers in
        // uninterruptible sleep any longer once the leader is reaped.
        m_killGraceExpired = true;
        break;
    }
    QPointer<PtyProcess> self(this);
    tryFinish();
    if (self)
        checkDone();
}

void PtyProcess::signalSession(int signo)
{
    QList<pid_t> targets = sessionMembers(m_pid);
    // The unreaped leader is our child: its pid cannot be reused, so signal it
    // even when the scan missed it.
    if (!m_leaderExited && !targets.contains(m_pid))
        targets.append(m_pid);
    qCDebug(lcPty) << "session" << m_pid << "signal" << signo << "to" << targets;
    for (const pid_t p : targets) {
        ::kill(p, signo);
        // A stopped process acts on SIGHUP/SIGTERM only once continued (the
        // kernel's own hangup sends SIGCONT after SIGHUP too).
        if (signo == SIGHUP || signo == SIGTERM)
            ::kill(p, SIGCONT);
    }
}

void PtyProcess::checkDone()
{
    if (m_tornDownEmitted || m_pid <= 0 || !m_leaderExited || !m_finishedEmitted)
        return;
    const QList<pid_t> members = sessionMembers(m_pid);
    if (members.isEmpty() || m_killGraceExpired) {
        completeTeardown();
        return;
    }
    // Members remain (a background job, or a process that ignores the signal
    // sent so far). They are not our children: watch one with a pidfd (any
    // pid works with pidfd_open) and re-check when it exits. A leader that
    // exited by itself leaves them running: only terminate() kills them.
    watchMember(members.first());
}

void PtyProcess::watchMember(pid_t member)
{
    if (member == m_watchedMember && (m_memberNotifier || m_memberPollTimer))
        return;
    stopWatchingMember();
    const int fd = pidfdOpen(member);
    if (fd >= 0) {
        m_memberPidfd = moveAbove2(fd);
        m_watchedMember = member;
        m_memberNotifier = new QSocketNotifier(m_memberPidfd, QSocketNotifier::Read, this);
        connect(m_memberNotifier, &QSocketNotifier::activated, this, [this] {
            stopWatchingMember();
            checkDone();
        });
    } else if (errno == ESRCH) {
        scheduleProgress(); // gone between scan and pidfd_open: re-check
    } else {
        m_watchedMember = member;
        m_memberPollTimer = new QTimer(this);
        m_memberPollTimer->setSingleShot(true);
        connect(m_memberPollTimer, &QTimer::timeout, this, [this] {
            stopWatchingMember();
            checkDone();
        });
        m_memberPollTimer->start(kFallbackPollMs);
    }
}

void PtyProcess::stopWatchingMember()
{
    dropNotifier(m_memberNotifier);
    closeFd(m_memberPidfd);
    if (m_memberPollTimer) {
        m_memberPollTimer->stop();
        m_memberPollTimer->deleteLater();
        m_memberPollTimer = nullptr;
    }
    m_watchedMember = 0;
}

void PtyProcess::completeTeardown()
{
    if (m_tornDownEmitted)
        return;
    m_tornDownEmitted = true;
    if (m_teardownTimer)
        m_teardownTimer->stop();
    stopWatchingMember();
    // Hand out what is still pending before closing (bounded: no member is
    // left to write, only a process that escaped with setsid could).
    QPointer<PtyProcess> self(this);
    for (qsizetype budget = kExitDrainBudget; m_master >= 0 && !m_masterEof && budget > 0;
         budget -= kReadChunk) {
        const ReadResult r = readChunk();
        if (!self)
            return;
        if (r != ReadResult::More)
            break;
    }
    dropNotifier(m_readNotifier);
    dropNotifier(m_writeNotifier);
    dropNotifier(m_exitNotifier);
    closeFd(m_master);
    setBusy(false); // nothing more to read here
    closeFd(m_pidfd);
    m_inputQueue.clear();
    m_inputHead = 0;
    qCDebug(lcPty) << "session" << m_pid << "torn down";
    Q_EMIT tornDown();
}

// --- restart in place ------------------------------------------------------------

PtyHandover PtyProcess::handover() const
{
    PtyHandover h;
    h.pid = m_pid;
    h.masterFd = m_master;
    h.pidfd = m_leaderExited ? -1 : m_pidfd;
    h.cols = m_cols;
    h.rows = m_rows;
    h.leaderExited = m_leaderExited;
    h.finished = m_finishedEmitted;
    h.masterEof = m_masterEof;
    h.tornDown = m_tornDownEmitted;
    h.exitStatus = m_exitStatus;
    h.pendingInput = m_inputQueue.mid(int(m_inputHead));
    return h;
}

void PtyProcess::release()
{
    dropNotifier(m_readNotifier);
    dropNotifier(m_writeNotifier);
    dropNotifier(m_exitNotifier);
    stopWatchingMember();
    for (QTimer **t : {&m_teardownTimer, &m_exitPollTimer}) {
        if (*t) {
            (*t)->stop();
            (*t)->deleteLater();
            *t = nullptr;
        }
    }
    qCDebug(lcPty) << "released" << m_pid << "master" << m_master << "pidfd" << m_pidfd;
    // Forgotten, not closed: their new owner has them.
    m_pid = 0;
    m_master = -1;
    m_pidfd = -1;
    m_inputQueue.clear();
    m_inputHead = 0;
    m_tornDownEmitted = true; // inert: queued progress checks return early
}

bool PtyProcess::adopt(const PtyHandover &h, QString *error)
{
    auto fail = [error](const QString &text) {
        if (error)
            *error = text;
        qCWarning(lcPty).noquote() << "adopt failed:" << text;
        return false;
    };
    if (m_pid != 0 || m_master >= 0)
        return fail(QStringLiteral("process already started"));
    if (h.pid <= 0)
        return fail(QStringLiteral("no process id"));
    if (h.masterFd >= 0 && ::fcntl(h.masterFd, F_GETFD) < 0)
        return fail(QStringLiteral("PTY master fd %1: %2").arg(h.masterFd).arg(errnoText(errno)));
    ensureChildrenWaitable();
    m_pid = h.pid;
    m_master = h.masterFd;
    m_cols = h.cols;
    m_rows = h.rows;
    m_leaderExited = h.leaderExited;
    m_finishedEmitted = h.finished;
    m_exitDrained = h.finished;
    m_masterEof = h.masterEof;
    m_tornDownEmitted = h.tornDown;
    m_exitStatus = h.exitStatus;
    m_readBuffer.resize(kReadChunk);
    int pidfd = h.pidfd;
    if (pidfd >= 0)
        ::fcntl(pidfd, F_SETFD, FD_CLOEXEC); // handed over without it; keep it from the shells
    if (m_master >= 0) {
        ::fcntl(m_master, F_SETFD, FD_CLOEXEC);
        ::fcntl(m_master, F_SETFL, ::fcntl(m_master, F_GETFL) | O_NONBLOCK);
    }
    if (m_tornDownEmitted) {
        closeFd(m_master);
        closeFd(pidfd);
        return true;
    }
    if (m_master >= 0 && !m_masterEof) {
        m_inputQueue = h.pendingInput;
        m_inputHead = 0;
        watchMaster();
    }
    if (!m_leaderExited) {
        // A leader that exited while we were exec'ing is still an unreaped
        // child: its pidfd is readable at once, and onLeaderExit reaps it.
        watchLeader(pidfd);
    } else {
        closeFd(pidfd);
        // Deliver a pending finished(), or watch the members still left.
        scheduleProgress();
    }
    qCDebug(lcPty) << "adopted" << m_pid << "master" << m_master << "pidfd" << m_pidfd
                   << (m_leaderExited ? "(leader exited)" : "");
    return true;
}

QList<pid_t> childrenAwaitingReap()
{
    return ChildReaper::pending();
}

void reapChildLater(pid_t pid)
{
    if (pid > 0)
        ChildReaper::adopt(pid, -1);
}

} // namespace Tether
