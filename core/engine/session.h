// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "commandlog.h"
#include "handover.h"
#include "inertruns.h"
#include "ptyprocess.h"
#include "ringbuffer.h"
#include "sessionscreen.h"
#include "shellmarks.h"
#include "terminalstate.h"
#include "viewer.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <memory>
#include <optional>

namespace Tether {

class Screen;

/**
 * What an attaching viewer asks to be replayed (docs/protocol.md §5).
 * `resume`: the offset it already has (nullopt: none). `screen`: the
 * `replay=screen` query: a reset replay is then the server's screen with
 * `lines` lines of its scrollback (Screen::snapshot, painted from a reset
 * terminal) followed by the output the screen has not parsed yet, instead of
 * all retained output (Session::attach says when it falls back).
 * `cols`×`rows`: the size of the viewer's terminal (the `cols=C&rows=R`
 * query), 1..1000 each, or 0×0 when it did not say: a control viewer's
 * size is applied before its replay is built (Session::attach), a
 * watcher's is ignored.
 */
struct ReplayRequest {
    std::optional<quint64> resume;
    bool screen = false;
    int lines = 0; ///< 0..kMaxReplayLines
    int cols = 0;  ///< the viewer's columns, 1..1000; 0: not given
    int rows = 0;  ///< the viewer's rows, 1..1000; 0: not given
};

/**
 * One PTY session that outlives whoever is watching it.
 *
 * Owns the PtyProcess, the RingBuffer of its output (scrollback as bytes) and
 * two TerminalStates: one at the head of the stream (title) and one at the
 * retained start (modes a reset replay must restore). Output always drains
 * into the ring, viewer or not; viewers get it as it arrives.
 *
 * Viewers: at most one control viewer (a new one supersedes the old, which is
 * told DetachReason::Superseded) and any number of watchers (the server
 * admits at most kMaxViewers over the network: hasRoomFor()). Attaching is
 * synchronous, so N racing control attaches end with one control viewer.
 *
 * Backpressure: while the control viewer reports itself blocked
 * (setViewerBlocked), PTY reads pause; watchers never pause the session (a
 * watcher too far behind closes itself). With no control viewer, output
 * drains at full speed, except while a restart in place holds it for the
 * control viewer it closed (holdOutput(), at most kOutputHoldGraceMs).
 */
class Session : public QObject
{
    Q_OBJECT
public:
    enum class State { Starting, Running, Exited };

    /// `id`: the registry's random id. `bufferCapacity`: ring capacity in
    /// bytes. The server screen parses what a read would evict before the
    /// append, which covers every byte only when the ring holds a whole read
    /// (kReadChunk, ptyprocess.h): with a smaller ring a large read's head
    /// never enters it, and the screen is outrun. Tether's rings are at
    /// least SettingsBounds::kMinBufferSize (settingsbounds.h), asserted at compile time in
    /// session.cpp; tests that use smaller rings do not use the screen.
    Session(const QString &id, const SpawnOptions &options, qsizetype bufferCapacity,
            QObject *parent = nullptr);
    ~Session() override;

    /// Spawns the process. False with *error set (errno text) if it cannot start.
    bool start(QString *error);

    QString id() const { return m_id; }
    /// The name people gave it (POST /api/sessions "name", PATCH, `tether
    /// new -n`, `tether rename`); empty when it has none. The registry checks
    /// names (SessionRegistry::nameProblem, unique among its sessions).
    QString name() const { return m_name; }
    /// Sets the name as it is (the caller checked it); emits nameChanged()
    /// when it differs. Empty clears it.
    void setName(const QString &name);
    /// The argv asked for (the default command resolved: the login shell's
    /// path), before ShellIntegration rewrote it to load its script.
    QStringList command() const { return m_command; }
    /// Asked for as a login shell (SpawnOptions::loginShell after
    /// resolveSpawnOptions(): the default command), whatever the shell
    /// integration then ran. Kept in its record, for Revive, and across a
    /// restart in place and a crash.
    bool loginShell() const { return m_options.loginShell; }
    QString cwd() const { return m_cwd; }             ///< working directory actually used
    pid_t pid() const { return m_pty.pid(); }
    QDateTime created() const { return m_created; }   ///< UTC
    State state() const { return m_state; }
    ExitStatus exitStatus() const { return m_pty.exitStatus(); } ///< valid when Exited
    QDateTime exitedAt() const { return m_exitedAt; } ///< UTC; null while running
    int cols() const { return m_pty.cols(); }
    int rows() const { return m_pty.rows(); }
    QString title() const { return m_head.title(); }
    /// The foreground process group of the terminal (PtyProcess::
    /// foregroundProcessGroup(): the program in front, e.g. `vim` run from
    /// the shell); -1 when none. A snapshot read on request, never watched:
    /// a change emits nothing.
    pid_t foregroundProcessGroup() const { return m_pty.foregroundProcessGroup(); }
    /// Last output or input (UTC), for "idle for".
    QDateTime lastActivity() const;

    const RingBuffer &buffer() const { return m_ring; }
    quint64 offset() const { return m_ring.endOffset(); } ///< total output bytes
    /// The offset where the output stream began from a fresh terminal: 0,
    /// or for a session adopted after a crash (the keeper held it) the
    /// offset its new buffer started at. A ring that still starts there has
    /// dropped nothing: attaches replay it whole (planReplay()).
    quint64 streamStart() const { return m_streamStart; }
    void setBufferCapacity(qsizetype bytes);

    // --- viewers -------------------------------------------------------------
    /**
     * Attaches `viewer`. `resume`: the absolute offset the viewer already has
     * (nullopt: none). Replay rules (docs/protocol.md): no resume → reset,
     * Initial, all retained output; resume == end → nothing replayed; inside the
     * retained range → the missing bytes, no reset; before the retained start →
     * reset, RolledOut; beyond the end → reset, Ahead (also what the server uses
     * for an unparsable offset). A reset replay of a stream whose beginning was
     * dropped starts at the first safe boundary and is preceded by a prelude
     * restoring the terminal modes in force there. planReplay() (replayplan.h)
     * decides all of that; this applies it.
     * Calls viewer->attached(), then output() with prelude + replay, then, if the
     * process already exited, exited(). A control attach supersedes the current
     * control viewer first.
     */
    void attach(Viewer *viewer, ViewerMode mode, std::optional<quint64> resume)
    {
        attach(viewer, mode, ReplayRequest{resume, false, 0});
    }
    /**
     * The same with a ReplayRequest. The server-side screen (below) changes
     * reset replays of a stream whose beginning was dropped:
     *  - default (request.screen false): when the screen is synced, its
     *    snapshot (Screen::snapshot, in place, synchronized output) is
     *    inserted at S = screenOffset(): the viewer gets the prelude, the
     *    retained bytes [replayFrom, S), a fixup at S if there is one, the
     *    snapshot, then [S, end). AttachInfo::snapshotAt/snapshotBytes say
     *    where and how long; the snapshot has no offsets. Unsynced or absent
     *    screen: the raw replay as before.
     *  - request.screen: the snapshot with request.lines scrollback lines
     *    from a reset terminal (snapshotAt = replayFrom = S, no prelude), then
     *    [S, end). Without a screen one is made; it is parsed up to the end
     *    at once only when at most kMaxSyncScreenParse bytes are retained,
     *    else (and while the screen is unsynced) the raw replay is sent and
     *    AttachInfo::screenReplay is false. A resume inside the retained
     *    range is never affected.
     * Before the snapshot is taken, for request.screen or an unsynced
     * screen, the screen parses what it has not yet (bounded like one turn
     * of its timer; a synced screen's snapshot is exact at any S), then up
     * to the next safe boundary (at most kMaxSnapshotBoundaryScan bytes;
     * none found: no snapshot). While flooding a screen it has parses
     * nothing here either, not even an outrun one (no snapshot then: the
     * raw replay).
     *
     * The viewer's size (request.cols×rows, docs/protocol.md §5 "Attaching
     * at the viewer's size"): a control attach to a running session whose
     * size differs resizes the session first, after superseding the old
     * control viewer and before anything is planned, as tmux resizes a
     * session to its client before drawing it: the PTY (SIGWINCH to the
     * program), the watchers (sizeChanged, and a fixup when it resets the
     * margins), the screen at the end of the stream; AttachInfo then has
     * the new size. A reset replay then carries the screen's snapshot at
     * the new size, also when nothing was dropped (the retained bytes were
     * written for the old size: the raw replay paints them into the
     * viewer's terminal at the new one, and the snapshot repaints the
     * screen over them, in place; not for a stream without output yet,
     * whose screen a reset terminal is). For that the screen must reach the end
     * of the stream here: a screen it does not have is made as for
     * request.screen (parsed at once only when at most kMaxSyncScreenParse
     * bytes are retained), a synced one parses what it has not yet (at most
     * kMaxSyncScreenParse bytes); when it cannot (more to parse, a flood,
     * unsynced) the replay is the raw one, painted at the new size, as
     * before. A watcher's size, a size out of range, or one equal to the
     * session's changes nothing.
     *
     * Bytes written at another number of rows than the session's now (issue
     * 29): each DECSTBM among them that was the whole screen at its own
     * size gets a fixup "CSI r" right after it in the replay, and the
     * prelude leaves such margins out (wholeScreenMargins()). An attach
     * that made the session taller has the snapshot first scroll, into the
     * viewer's scrollback, the lines its raw replay left above the
     * screen's old rows (Screen::SnapshotOptions::pushLines: as many as
     * the rows added, at most the screen's scrollback lines).
     */
    void attach(Viewer *viewer, ViewerMode mode, const ReplayRequest &request);
    /// Most scrollback lines a `replay=screen` attach asks for
    /// (Screen::kMaxScrollbackLines, the lines a screen keeps).
    static constexpr int kMaxReplayLines = 1000;
    /// Removes `viewer` (no callback to it). Safe to call for an unknown viewer.
    void detach(Viewer *viewer);
    Viewer *controlViewer() const { return m_control; }
    QList<Viewer *> watchers() const { return m_watchers; }
    int viewerCount() const { return (m_control ? 1 : 0) + int(m_watchers.size()); }
    /// Most viewers (control + watchers) a session takes from the network.
    /// Each attach gets its own copy of the replay (up to the buffer
    /// capacity, 64 MiB at most) queued for its socket, so without a bound
    /// many watchers would be unbounded memory. The server refuses an attach
    /// past it (WebSocket close 4429, docs/protocol.md).
    static constexpr int kMaxViewers = 16;
    /**
     * Whether one more viewer in `mode` fits within kMaxViewers. A control
     * attach while a control viewer is attached supersedes it and takes its
     * place, so it always fits (it does not count twice). attach() itself
     * does not enforce the bound (a local window is never refused); callers
     * that serve untrusted numbers of clients ask first.
     */
    bool hasRoomFor(ViewerMode mode) const
    {
        if (mode == ViewerMode::Control && m_control)
            return true;
        return viewerCount() < kMaxViewers;
    }
    /// When the last viewer left (UTC); null while any viewer is attached.
    /// A never-attached session counts from creation.
    QDateTime detachedSince() const { return m_detachedSince; }

    /// Input from a viewer. Ignored (returns true) from a watcher or after exit.
    /// Returns false, queueing nothing, when the input queue is full
    /// (kMaxPendingInput: the program does not read its input); the viewer
    /// should then give up (the WebSocket viewer closes 1013) and detach.
    bool sendInput(Viewer *from, const char *data, qsizetype size);
    bool sendInput(Viewer *from, const QByteArray &data) { return sendInput(from, data.constData(), data.size()); }
    /// Input typed by the API (POST /api/sessions/{id}/input, `tether send`),
    /// with or without a control viewer, as if it had typed it. False when
    /// the session is not running or the input queue is full (nothing is
    /// queued then).
    bool sendApiInput(const QByteArray &data);
    /// Input queued for the program and not yet written to its terminal
    /// (bytes; PtyProcess::pendingInput). inputWritten() reports progress.
    qsizetype pendingInput() const { return m_pty.pendingInput(); }
    /// Resize from the control viewer (columns×rows, each 1..1000). Returns false
    /// and applies nothing when out of range or `from` is not the control viewer.
    bool resize(Viewer *from, int cols, int rows);
    /// Backpressure: the viewer's unsent output is above (true) / below (false)
    /// its watermark. Only the control viewer's state pauses PTY reads.
    void setViewerBlocked(Viewer *viewer, bool blocked);

    // --- the output hold of a restart in place ---------------------------------
    /**
     * Keeps the output from `offset` on in the ring for a control viewer
     * that a restart in place closed (1012) and that will come back with
     * resume=OFFSET (docs/protocol.md, "Restart in place"): between the
     * close and its return no control viewer holds the program back, so
     * without a hold the session drained the PTY at full speed and rolled
     * the viewer's offset out of the ring (a new user lost ~2,400 lines of
     * `seq 1 3000000` through a 64 KiB ring, 2 runs of 2). While held, PTY
     * reads are cut to what fits in the ring without evicting a byte at or
     * after max(offset, ring start) (PtyProcess::setReadLimit): a quiet
     * session reads on as usual, a flood fills the ring and then blocks in
     * write(2), with the read notifier off (no wakeups, never a busy loop).
     * The hold ends when a control viewer attaches (the resume, or anyone
     * else: backpressure is then that viewer's) or kOutputHoldGraceMs after
     * this call (a single-shot timer; a client that never comes back does
     * not block the program for good), or with kill(). A second call moves
     * the hold to `offset` and starts the grace period again. Watchers
     * never hold output (protocol.md, "Flow control").
     */
    void holdOutput(quint64 offset);
    /// Moves an existing hold forward to `offset` (never back; nothing
    /// without a hold), keeping its grace period: the old image learns, as
    /// the closed viewer's socket drains, that its client has more.
    void advanceOutputHold(quint64 offset);
    /// The held offset (holdOutput()); nullopt when output is not held.
    std::optional<quint64> outputHold() const { return m_hold; }
    /// How long a hold lasts without a control viewer (ms): the client's
    /// reconnect (250 ms backoff, AttachClient; the dashboard likewise)
    /// plus the start of the next process image, with room for a loaded
    /// or sanitized build. A program is blocked at most this long (plus
    /// the old image's drain, at most RestartInPlace's 1 s, and the exec).
    static constexpr int kOutputHoldGraceMs = 5000;

    /// Detaches every viewer with `reason` and starts teardown of the processes.
    /// tornDown() follows (bounded: 2 s + 2 s grace, then SIGKILL).
    void kill(DetachReason reason = DetachReason::Killed);
    bool isTornDown() const { return m_tornDown; }
    PtyProcess *process() { return &m_pty; }

    // --- the server-side screen (screen.h, docs/architecture.md) -------------
    /**
     * The session's terminal screen, kept by the server (issue 9): a Screen
     * fed from the ring, lazily. None until the ring first reaches half its
     * capacity (it then parses from the start of the stream, still retained),
     * a terminal query needs answering with no control viewer attached, or a
     * `replay=screen` attach asks for it. It parses [S, end) from the ring on
     * a timer (kScreenSettleMs after output that found it caught up, then
     * zero-timers), in bounded slices, and the timer stops when it has caught
     * up: an idle session costs no wakeups, and the PTY read path only
     * appends to the ring, hands the bytes to the viewers and schedules. A slice is up to kScreenChunk bytes
     * and kScreenTurnUs µs per turn of the event loop; bytes about to leave
     * the ring unparsed are parsed before the append (at most kScreenChunk:
     * more and the screen is outrun).
     * Floods (FloodMeter, which says why): output is measured per window of
     * FloodMeter::kWindowMs (one coarse monotonic clock read per PTY read;
     * the process's CPU clock once per window while output flows; nothing
     * while idle). A flood is a window that brings FloodMeter::kFloodBytes
     * or more, or output that keeps the screen on the output path (parsing
     * bytes the ring is about to evict unparsed, so the read waits for it)
     * beyond its budget there: FloodMeter::kBurstNs of CPU, refilled at
     * FloodMeter::kSharePercent of the process's CPU, or beyond
     * FloodMeter::kRescueBytes parsed there since it last caught up (a
     * burst of TUI output is not a flood however slow the CPU; output
     * sustained faster than the screen parses is). While flooding the screen does not
     * parse at all (no slice, no rescue): the output runs as fast as with
     * no screen; the ring moves on and evicts what the screen has not
     * parsed (outrun: screenSynced() false, reset replays are raw, which is
     * exact for scrolling output). A timer of FloodMeter::kWindowMs runs
     * only while flooding; the first window whose output the screen could
     * parse in FloodMeter::kSharePercent of a window (or one with no output)
     * ends the flood, and the screen resumes where it
     * paused if that is still retained (synced), else at a safe boundary
     * at most kFloodResyncBytes before the end, in the modes in force there
     * (the tail TerminalState advanced to it): SessionScreen::resync(), unsynced
     * until the screen is rewritten, which scrolling output does within
     * those bytes. Below that, a program (a TUI, a monitor, a shell) is never
     * outrun however loaded or slow the machine: what it writes is parsed
     * before it leaves the ring, up to kScreenChunk bytes at once, and its
     * bursts stay within the budget.
     * Exited sessions keep their screen (freed with the session).
     */
    bool hasScreen() const { return m_screen.hasScreen(); }
    /**
     * Switches the server-side screen on (the default) or off (setting
     * sessions/screen, Limits::screen). Off drops a screen the session has
     * and makes none until switched on again; reset replays are then raw.
     */
    void setScreenEnabled(bool enabled);
    bool screenEnabled() const { return m_screen.enabled(); }
    /// Makes the server-side screen now when the session has none (and it is
    /// enabled): it parses the retained output on its timer, off the output
    /// path. For the saved record (SessionRecordStore), which needs what the
    /// screen shows. Queries in the output before now go unanswered.
    /// `parseNow` > 0: also parses up to that many bytes at once (the
    /// host's shutdown, which cannot wait for the timer).
    void ensureScreen(qsizetype parseNow = 0);
    /**
     * Output that did not come from the program, handled as if it had
     * written it (ring, viewers, screen, title): a revived session's saved
     * screen and marker line (SessionRecordStore, docs/protocol.md
     * "Ended sessions"). Call right after start(), before the event loop
     * reads the PTY, so that it comes first.
     */
    void injectOutput(const QByteArray &bytes) { onOutput(bytes.constData(), bytes.size()); }
    const Screen *screen() const { return m_screen.screen(); }
    /**
     * The screen as the server has it now, for a look at it without
     * attaching (GET /api/sessions/{id}/screen of a live session,
     * docs/protocol.md "Ended sessions"; the dashboard's miniatures): the
     * in-place snapshot (Screen::snapshot, no scrollback, no synchronized
     * output) of the screen parsed up to screenOffset(), which `*offset`
     * gets. A session without a screen gets one (ensureScreen()), and up to
     * kPreviewParseBytes not parsed yet are parsed now (none while
     * flooding), so the snapshot is the end of the stream unless more was
     * waiting; the screen's timer parses the rest as usual. Empty when
     * there is no screen (switched off, or larger than kMaxScreenCells). A
     * detached session's screen is compacted again after the usual delay
     * (a compact one is rebuilt to be read).
     */
    QByteArray screenPreview(quint64 *offset);
    /// Most bytes screenPreview() parses at once: about 13 ms of libvterm at
    /// its slowest (a `seq` flood at 1.2 MB/s), so that many previews asked
    /// at once stay short.
    static constexpr qsizetype kPreviewParseBytes = 16 * 1024;
    /// S: the offset the screen has parsed up to (ringStart <= S <= end); 0
    /// without a screen.
    quint64 screenOffset() const { return m_screen.offset(); }
    /**
     * The screen shows exactly what a viewer that never left would show at
     * S. False after a flood outran it (bytes were evicted from the ring
     * before it parsed them): it then skipped to a safe boundary at the
     * ring's start, restored the modes in force there (the tail
     * TerminalState) and is synced again once the whole screen has been
     * rewritten since (Screen::fullyRewrittenSinceMark(): a full erase,
     * RIS, entering the alternate screen with a clear, or a screenful of
     * lines scrolled off a full-screen scroll region).
     */
    bool screenSynced() const { return m_screen.synced(); }
    /// How many times a flood outran the screen (see screenSynced()).
    quint64 screenOutruns() const { return m_screen.outruns(); }
    /// Memory the screen holds (Screen::memoryBytes(), bytes); 0 without one.
    qsizetype screenBytes() const;
    /**
     * Compaction of the screen of a detached idle session (issue 27,
     * Screen::compact()): a single-shot timer started by output while no
     * viewer is attached and by the last viewer's detach; when it fires, the
     * screen, caught up with the stream, is compacted (or it refuses and
     * stays as it is until the next output: no wakeups while idle); one
     * still parsing is compacted when its parse reaches the end. The
     * next output, attach or query rebuilds it (Screen does, on use).
     * Default kScreenCompactMs; for tests, any delay >= 0 (ms).
     */
    static constexpr int kScreenCompactMs = 10000;
    /**
     * The hard cap on one server screen (issue 27): at most this many cells
     * (cols x rows; 131,072 is 512x256 or 362x362). libvterm keeps two
     * buffers of about 36 bytes a cell, so a 1000x1000 terminal would cost
     * 36 MB. While the terminal is larger the session keeps no screen:
     * reset replays are the raw replay from the ring (as with the screen
     * switched off), queries in output no control viewer saw go unanswered;
     * a screen is made again, unsynced, once the output written at that
     * size has left the ring and the size fits again
     * (docs/architecture.md, "Server screen").
     */
    static constexpr qsizetype kMaxScreenCells = 131072;
    static bool screenFits(int cols, int rows) { return qsizetype(cols) * qsizetype(rows) <= kMaxScreenCells; }
    void setScreenCompactDelay(int ms);
    int screenCompactDelay() const { return m_screen.compactDelay(); }
    /// The screen is compact now (Screen::isCompact()).
    bool screenCompact() const;
    /// Largest output a `replay=screen` attach parses at once to make a
    /// screen that did not exist (bytes): about 50 ms of libvterm at its
    /// slowest (a `seq` flood at 1.2 MB/s).
    static constexpr qsizetype kMaxSyncScreenParse = 64 * 1024;
    static constexpr qsizetype kScreenChunk = 64 * 1024;
    static constexpr qint64 kScreenTurnUs = 4000;
    /// Output that finds the screen caught up is parsed this long after it
    /// arrived (ms), not in the same turn of the event loop: a zero-timer
    /// fires in the turn that read the PTY, after the socket notifiers, so a
    /// viewer in the same event loop (the desktop window, which reads its
    /// own PTY on the GUI thread) got a keystroke's echo only after the
    /// screen had parsed it. Later, the parse also takes what several small
    /// reads brought in one slice.
    static constexpr int kScreenSettleMs = 1;
    /// After a flood outran the screen, it restarts this many bytes before
    /// the end (or at the ring's start, if later), not at the ring's start:
    /// libvterm parses `seq` at 1.2-4 MB/s, so a 1 MiB ring would cost a
    /// quarter to a whole second; the modes there come from a
    /// TerminalState (about 75 MB/s on `seq` here, 20-60 times faster).
    static constexpr qsizetype kFloodResyncBytes = 64 * 1024;
    /// Whether the output is a flood now (see hasScreen()); only measured
    /// while the screen is enabled.
    bool flooding() const { return m_screen.flooding(); }
    static constexpr qsizetype kMaxSnapshotBoundaryScan = 4096;
    /// Most ranges of output that arrived with no control viewer kept for
    /// query answers (older ones are dropped: their queries go unanswered).
    static constexpr int kMaxAnswerRanges = 64;
    /// A resize queued for the screen: it applies at `offset`.
    struct SizeChange {
        quint64 offset = 0;
        int cols = 0;
        int rows = 0;
    };

    // --- restart in place (handover.h, docs/architecture.md) -----------------
    /// This session as the next process image needs it: id, command, cwd,
    /// times (so TTL deadlines are kept), state, the PTY (PtyProcess::
    /// handover), the ring (capacity, start offset, bytes), both terminal
    /// states, the margin resets and the output hold (outputHold()). The
    /// ring pieces point into this session's ring: valid until its next
    /// output.
    Handover::SessionRecord handover() const;
    /**
     * Rebuilds a session from a record that handover() made in the process
     * image Tether restarted from: the same id, command, cwd, times, ring
     * (offsets and bytes: a viewer resuming at its offset gets exactly what
     * it missed), terminal states (title, modes for a reset replay), margin
     * resets and exit status; the PTY is taken over with PtyProcess::adopt().
     * A running session whose record carries an output hold holds its
     * output again from there (holdOutput(), a fresh grace period: the
     * viewer can only come back once this image serves).
     * Returns nullptr with *error when the record cannot be used (a terminal
     * state or a ring that does not restore, or the adoption fails): nothing
     * of it is taken then, so the caller can still adopt the PTY bare.
     */
    static Session *restore(const Handover::SessionRecord &record, QObject *parent, QString *error);
    /**
     * Adopts a PTY from the bare fd list, when the state could not be read:
     * no output retained (offsets start at 0: a viewer resuming gets a reset
     * replay, reason "ahead"), command and cwd read from /proc, the size
     * from the master (TIOCGWINSZ), created now. A leader already reaped
     * gives an exited session whose status is unknown (code -1).
     * `bufferCapacity`: ring capacity in bytes. nullptr with *error when the
     * adoption fails.
     */
    static Session *adoptBare(const Handover::FdEntry &entry, qsizetype bufferCapacity, QObject *parent,
                              QString *error);

    // --- commands and notifications (docs/protocol.md §4) -----------------------
    /// Loads the shell-integration scripts into the shell start() runs
    /// (ShellIntegration; setting sessions/shellIntegration, default on).
    /// Call before start(); `dir` is ShellIntegration::scriptDir() (empty: off).
    void setShellIntegration(const QString &dir) { m_shellIntegrationDir = dir; }
    /// The commands the shell's marks told (CommandLog: bounded, kept across
    /// a restart in place).
    const CommandLog &commands() const { return m_commands; }
    /// A command that ran at least this long (ms) notifies when it ends
    /// (notify(), kind "command"); default kDefaultNotifyAfterMs.
    void setNotifyAfterMs(qint64 ms) { m_notifyAfterMs = ms; }
    static constexpr qint64 kDefaultNotifyAfterMs = 10000;
    /// Bells and program notifications (OSC 9/777/99) are reported
    /// (notify()) at most kNotifyBurst at once, then one per
    /// kNotifyIntervalMs, each kind on its own (a token bucket); more are
    /// dropped: a program ringing in a loop costs nothing.
    static constexpr int kNotifyBurst = 5;
    static constexpr qint64 kNotifyIntervalMs = 1000;

    /// The session's own notification settings (docs/protocol.md §4,
    /// "Commands and notifications"; `PATCH /api/sessions/{id}`), kept
    /// across a restart in place.
    struct NotifySettings {
        /// No notify() at all for this session, but the one `next` asks for.
        bool muted = false;
        /// The next command that ends (whatever its duration), or the
        /// session's exit if that comes first, notifies with `requested`
        /// set, even when muted; then this clears itself.
        bool next = false;
        /// Activity alert (tmux's monitor-activity): output while nobody
        /// watches notifies (kind "activity") once, then again only after a
        /// viewer attached.
        bool activity = false;
        /// Silence alert (tmux's monitor-silence), seconds: no output for
        /// this long notifies (kind "silence") once, then again only after
        /// more output. 0: off. At most kMaxSilenceSeconds.
        int silence = 0;
        bool operator==(const NotifySettings &o) const
        {
            return muted == o.muted && next == o.next && activity == o.activity && silence == o.silence;
        }
        bool operator!=(const NotifySettings &o) const { return !(*this == o); }
    };
    static constexpr int kMaxSilenceSeconds = 86400;
    NotifySettings notifySettings() const { return m_notifySettings; }
    /// Replaces them; emits notifySettingsChanged() when they differ.
    void setNotifySettings(const NotifySettings &settings);

Q_SIGNALS:
    void titleChanged(const QString &title);
    /// setName() changed the name (empty: cleared).
    void nameChanged(const QString &name);
    void sizeChanged(int cols, int rows);
    void exited(const Tether::ExitStatus &status);
    /// Control viewer or watcher set changed.
    void viewersChanged();
    /// New output arrived (bytes count); for UIs — not for viewers.
    void outputArrived(qsizetype bytes);
    /// No process of this session is left.
    void tornDown();
    /// Queued input was written to the program's terminal (PtyProcess::
    /// inputWritten); `pending` bytes still wait. Only while input waits.
    void inputWritten(qsizetype pending);
    /// A command started (OSC 133;C) or ended (D, or A/C while it ran):
    /// `record` as commands() holds it now.
    void commandStarted(const Tether::CommandRecord &record);
    void commandFinished(const Tether::CommandRecord &record);
    /// The shell's state (CommandLog::state()) changed without a command
    /// starting or ending (its first prompt).
    void shellStateChanged();
    /// Something the user may want to hear about: `kind` "command" (a
    /// command that ran >= setNotifyAfterMs() ended; `record` is it),
    /// "bell" (BEL), "message" (OSC 9, 777;notify, 99: `text`), "exit" (the
    /// session's process exited). `watched`: a viewer was attached.
    /// `requested`: NotifySettings::next asked for it (a command of any
    /// duration, or the exit). Nothing is emitted while NotifySettings::muted
    /// but what `next` asked for.
    /// "activity" and "silence" too (NotifySettings::activity, silence;
    /// `text` "output while nobody watched", "no output for N s").
    void notify(const QString &kind, const QString &text, bool watched, bool requested,
                const Tether::CommandRecord &record);
    /// setNotifySettings() changed them, or a requested notify() cleared `next`.
    void notifySettingsChanged();

private:
    /// The screen work (sessionscreen.h) reads the stream's state below.
    friend class SessionScreen;
    SizeChange sizeAt(quint64 offset) const;
    void recordSize(int cols, int rows);
    /**
     * For a replay to a viewer of `rows` rows (issue 29): the retained
     * offsets just after a DECSTBM ("ESC [ t ; b r", no private marker or
     * intermediate) that set the whole screen at the rows in force there
     * (sizeAt(); TerminalState::marginsWholeScreen()) when those rows are
     * not `rows`: the same bytes set a region on the viewer's screen, where
     * output then scrolls without reaching its scrollback. Ascending.
     * Empty, with no scan, when every retained byte was written at `rows`
     * rows. Otherwise one memchr() pass over the ring for ESC (a DECSTBM
     * inside a string cannot occur: ESC ends every string), at attach only.
     */
    QList<quint64> wholeScreenMargins(int rows) const;
    /// Resizes the PTY (SIGWINCH) and tells the viewers (sizeChanged, a
    /// margin fixup), records the size for the screen and applies it now
    /// when the screen has caught up: resize()'s work, for resize() and a
    /// sized control attach. False, changing nothing, when the PTY refuses
    /// (out of range, no PTY).
    bool applySize(int cols, int rows);
    void onOutput(const char *data, qsizetype size);
    void onShellMark(const ShellMark &mark);
    struct MarkSink : ShellMarkScanner::Handler {
        Session *session = nullptr;
        void shellMark(const ShellMark &mark) override { session->onShellMark(mark); }
    };
    /// The ring's eviction handler: moves m_tail over evicted bytes, applying
    /// the margin resets recorded inside them.
    void feedTail(const char *data, qsizetype size);
    void onFinished(const ExitStatus &status);
    void updatePause();
    /// Sets the PTY's read limit from the hold (none without one): the
    /// bytes that fit in the ring without evicting the held ones.
    void updateReadLimit();
    /// Ends the hold (`why` for the log).
    void releaseOutputHold(const char *why);
    void updateDetached();
    /// Calls f for the control viewer, then each watcher. A viewer may detach
    /// itself (or others) inside f, e.g. a watcher too far behind closes
    /// itself, so membership is re-checked before each call.
    template<typename F> void forEachViewer(F f)
    {
        if (m_control) {
            Viewer *c = m_control;
            f(c);
        }
        if (m_watchers.isEmpty())
            return;
        const QList<Viewer *> watchers = m_watchers; // shares, no copy unless modified
        for (Viewer *w : watchers)
            if (m_watchers.contains(w))
                f(w);
    }

    QString m_id;
    QString m_name;
    SpawnOptions m_options;
    QStringList m_command;
    QString m_cwd;
    QDateTime m_created;
    QDateTime m_exitedAt;
    QDateTime m_detachedSince;
    qint64 m_lastActivityMs = 0;
    State m_state = State::Starting;
    bool m_tornDown = false;
    bool m_controlBlocked = false;
    PtyProcess m_pty;
    RingBuffer m_ring;
    /// Offsets (ascending, within the retained range or at its end) where a
    /// resize reset scroll margins the stream had set: a replay calls
    /// Viewer::fixup() there. At most kMaxMarginResets; older ones are dropped
    /// with the output they belong to.
    QList<quint64> m_marginResets;
    static constexpr int kMaxMarginResets = 256;
    TerminalState m_head;  ///< state at endOffset(): title, scroll margins
    TerminalState m_tail;  ///< state at startOffset(): modes for a reset replay
    quint64 m_tailOffset = 0; ///< offset m_tail has been fed up to (= ring start)
    /// Ranges of the ring the head found inert: the tail skips their scan.
    /// Not handed over on a restart (the successor's tail scans them).
    InertRuns m_inertRuns;
    quint64 m_titleSerial = 0;
    Viewer *m_control = nullptr;
    QList<Viewer *> m_watchers;
    std::optional<quint64> m_hold; ///< holdOutput(): keep [m_hold, end) in the ring
    QTimer m_holdTimer;            ///< the hold's grace period; runs only while held

    /// streamStart(): where the output stream began from a fresh terminal.
    quint64 m_streamStart = 0;
    /// The server-side screen and its work (hasScreen()).
    SessionScreen m_screen{*this};
    /// Sizes in force from each offset on, ascending; the first entry holds
    /// the size at the ring's start (or the screen's S, whichever is lower).
    QList<SizeChange> m_sizes;

    // Commands and notifications.
    QString m_shellIntegrationDir;
    ShellMarkScanner m_marks;
    MarkSink m_markSink;
    CommandLog m_commands;
    qint64 m_notifyAfterMs = kDefaultNotifyAfterMs;
    NotifySettings m_notifySettings;
    /// A command ended (D, or a C or A while it ran): notify() when it ran
    /// long enough or `next` asked for it.
    void commandEnded(const CommandRecord &record, bool watched);
    /// Takes NotifySettings::next: true (and clears it, emitting
    /// notifySettingsChanged()) when it was set.
    bool takeNextRequest();
    /// Activity and silence alerts (NotifySettings::activity, silence).
    /// Armed: the next output (activity) or silence may notify.
    bool m_activityArmed = true;
    bool m_silenceArmed = true;
    /// Monotonic ms of the last output, kept only while a silence alert is set.
    qint64 m_lastOutputMono = 0;
    /// Fires at the earliest moment the silence can have lasted long enough;
    /// it then looks at m_lastOutputMono (output does not restart it: no
    /// timer work on the output path).
    QTimer m_silenceTimer;
    /// Starts or stops m_silenceTimer as the settings and state ask.
    void scheduleSilence();
    void onSilenceTimer();
    void onOutputAlerts();
    /// The token buckets of bells [0] and messages [1]: tokens, and when
    /// they were last counted (monotonic ms).
    struct NotifyBucket {
        double tokens = kNotifyBurst;
        qint64 atMs = 0;
    };
    NotifyBucket m_notifyBuckets[2];
};

} // namespace Tether
