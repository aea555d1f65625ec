// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThreadPool>

#include <functional>

namespace Tether {

class Session;
class SessionRegistry;

/**
 * What is kept on disk of one session (SessionRecordStore): enough to show
 * what it showed and to start it again. One JSON file per session,
 * `<dir>/<id>.json` (docs/architecture.md, "Records of sessions").
 */
struct SessionRecord {
    QString id;
    QString name;
    /// The argv asked for (Session::command(): before the shell
    /// integration's rewrite, which a revived session applies again).
    QStringList command;
    /// Started as a login shell (Session::loginShell()): revived as one.
    bool loginShell = false;
    QString cwd;           ///< the leader's working directory when saved (/proc/PID/cwd), else the start one
    QString title;
    QDateTime created;     ///< UTC
    QDateTime saved;       ///< UTC: when this record was written
    QString bootId;        ///< /proc/sys/kernel/random/boot_id when written
    /// Written at the host's orderly shutdown (SIGTERM, SIGINT, a logout's
    /// or the system's shutdown), not by a save while it ran.
    bool shutdown = false;
    int cols = 80;
    int rows = 24;
    /// The screen: scrollbackLines lines of scrollback, then every cell and
    /// mode (Screen::snapshot from a reset terminal, not synchronized).
    /// Empty when the session had no server-side screen (sessions/screen off).
    QByteArray screen;
    int scrollbackLines = 0;
};

/**
 * Keeps a record of every running session on disk, so that a session whose
 * host went away without ending it (a reboot, a SIGKILL or crash of the
 * host that nothing survived) can be shown and revived later
 * (docs/protocol.md, "Ended sessions"; issue 24).
 *
 * Where: dir() (defaultDir(): $XDG_STATE_HOME/tether/sessions, else
 * ~/.local/state/tether/sessions), mode 0700; each record mode 0600,
 * written whole with QSaveFile (a crash mid-write leaves the old record).
 *
 * When: never on the output path. A session's first output after a write
 * marks it dirty and arms its single-shot timer (a bool test per read
 * otherwise); the timer writes once the output has been quiet kIdleMs, at
 * most once per kMinIntervalMs per session. The last viewer leaving writes
 * a dirty record as soon as the rate limit allows. shutdown() writes every
 * record at once. An idle session costs no wakeup. A save needs the
 * session's screen (Session::ensureScreen()) to have parsed all output: it
 * waits for it on the same timer (kScreenWaitMs, kMaxScreenWaits times at
 * most).
 *
 * What is kept: only sessions still running. A session that ends normally
 * (its program exited, it was killed, deleted or expired) has its record
 * removed: it is forgotten. Records are left by sessions that were running
 * when the host went away without ending them: after shutdown() (an orderly
 * stop of the host, which ends its sessions), or when the host died.
 *
 * At start, loadEnded() takes the records of sessions the registry does not
 * hold (a restart in place keeps its sessions, and their records) as ended
 * sessions: why() says "reboot" when the boot id changed since the record
 * was written, else "shutdown" when shutdown() wrote it, else "crash".
 *
 * lines 0 (setting sessions/savedScrollbackLines) turns it off: nothing is
 * written, and records already on disk are still listed.
 */
class SessionRecordStore : public QObject
{
    Q_OBJECT
public:
    /// Output quiet this long before a record is written (ms).
    static constexpr int kIdleMs = 2000;
    /// Shortest time between two writes of one session's record (ms).
    static constexpr int kMinIntervalMs = 10000;
    /// How often a save that waits for the screen to catch up looks again (ms).
    static constexpr int kScreenWaitMs = 100;
    /// Looks at most this many times; then the record takes what the screen
    /// shows (a screen that cannot catch up must not cost wakeups for good).
    static constexpr int kMaxScreenWaits = 50;
    /// At shutdown(), output a session's screen has not parsed yet is parsed
    /// then and there up to this much (bytes; about 0.2 s of libvterm at its
    /// slowest), per session whose record is not up to date.
    static constexpr qsizetype kShutdownParseBytes = 256 * 1024;
    /// Records larger than this are not read (bytes): 1000 lines of 1000
    /// coloured columns in base64 stay far below it.
    static constexpr qint64 kMaxRecordBytes = 64 * 1024 * 1024;

    /// $XDG_STATE_HOME/tether/sessions, or $HOME/.local/state/tether/sessions
    /// when XDG_STATE_HOME is unset or not absolute (XDG Base Directory).
    static QString defaultDir();
    /// The kernel's boot id (/proc/sys/kernel/random/boot_id, trimmed), or
    /// the contents of the file TETHER_BOOT_ID_FILE names when set (the
    /// tests' simulated reboot). Empty when unreadable.
    static QString currentBootId();

    /// Records the sessions of `registry` (must outlive the store) in `dir`
    /// with `lines` scrollback lines (0..1000; 0: no writes).
    SessionRecordStore(SessionRegistry *registry, const QString &dir, int lines, QObject *parent = nullptr);
    ~SessionRecordStore() override;

    QString dir() const { return m_dir; }
    int lines() const { return m_lines; }
    bool isEnabled() const { return m_lines > 0; }
    /**
     * Changes the scrollback lines of the records written from now on
     * (PATCH /api/settings `saved_scrollback_lines`; clamped to 0..1000).
     * 0 turns recording off: the running sessions' records are removed
     * (nothing of them stays on disk) and none is written; from 0 to more
     * after start(), every running session is recorded from then on.
     * Ended sessions' records are not touched.
     */
    void setLines(int lines);
    /// Overrides kIdleMs and kMinIntervalMs (tests).
    void setTiming(int idleMs, int minIntervalMs);

    /// Starts recording: tracks the sessions the registry holds now and
    /// every one added later. Call once, after any restart-in-place adoption.
    void start();
    /// Reads the records of sessions the registry does not hold as ended
    /// sessions (unreadable ones are logged and left alone). Returns how many.
    int loadEnded();
    /// The ended sessions, oldest first (by created).
    QList<SessionRecord> ended() const { return m_ended; }
    /// The ended session `id`, or nullptr.
    const SessionRecord *findEnded(const QString &id) const;
    /// "reboot", "shutdown" or "crash" (class comment).
    QString why(const SessionRecord &record) const;
    /// Forgets ended session `id` (its file is removed). False when none.
    bool forget(const QString &id);
    /// The SESSION object of an ended session (docs/protocol.md, "Ended
    /// sessions"): id, name, command, cwd, title, created, state "ended",
    /// ended (why()), ended_at (saved), cols, rows, pid/exit_code/exit_signal null.
    QJsonObject toJson(const SessionRecord &record) const;
    /// What a revived session shows first: the saved screen, modes put back
    /// to a fresh terminal's, and a marker line naming when and why it ended.
    static QByteArray revivePreamble(const SessionRecord &record, const QString &why);
    /// The same with another marker line: `marker` (UTF-8, one line, no
    /// controls) shown in reverse video where revivePreamble() puts its own.
    /// Used for a session adopted after a crash (KeeperLink): its saved screen
    /// above what the program writes next.
    static QByteArray screenPreamble(const SessionRecord &record, const QByteArray &marker);
    /**
     * `record`'s saved screen with only the last `lines` (>= 0) of its
     * scrollbackLines saved lines (GET /api/sessions/{id}/screen?lines=N,
     * docs/protocol.md "Ended sessions"); the screen as saved when `lines`
     * is not fewer. The bytes a terminal of the saved size needs, as
     * Screen::snapshot (from a reset terminal, not synchronized) paints
     * them with that many lines.
     *
     * Cost: a record laid out as recordOf() writes it (the reset prefix,
     * each line ended by EL CR LF, rows - 1 line feeds, then the screen from
     * its top) is cut without parsing, one pass over its bytes. Any other
     * layout (a record written otherwise) is parsed again by a Screen of the
     * saved size, up to about a second for 1,000 lines at 1000 columns.
     * `parsed` (optional): set to whether it was parsed again.
     */
    static QByteArray screenWithLines(const SessionRecord &record, int lines, bool *parsed = nullptr);

    /// The host is shutting down: waits for the writes in flight, then writes
    /// every tracked session's record now (on the calling thread: the host
    /// is ending)
    /// marked `shutdown` (no rate limit; a record that is up to date only
    /// gets the mark; otherwise the screen parses what it has not yet, up to
    /// kShutdownParseBytes), and from now on removes no record (the sessions
    /// are about to be killed).
    void shutdown();
    /// Writes `session`'s record if its screen has caught up (or `force`),
    /// ignoring the rate limit: the record is taken now, on the event loop,
    /// and written on the store's I/O thread; saved() follows once it is on
    /// disk (a failed write is logged). False when it waits for the screen.
    bool save(Session *session, bool force = false);

    /// Waits for the record writes and removals queued so far (tests, shutdown).
    void flush();
    /// Tests: `hook` runs where each queued record write runs, before it.
    void setBeforeWriteHook(std::function<void()> hook) { m_beforeWrite = std::move(hook); }

    /// Writes / reads one record file (mode 0600; the directory made 0700;
    /// blocking: QSaveFile, fdatasync, rename).
    static bool write(const QString &dir, const SessionRecord &record, QString *error);
    static bool read(const QString &file, SessionRecord *record, QString *error);
    /// The file of session `id` in `dir`.
    static QString fileFor(const QString &dir, const QString &id);

Q_SIGNALS:
    /// The list of ended sessions changed (forget()).
    void endedChanged();
    /// A record was written (on disk; emitted on the store's thread, the
    /// event loop's, after the I/O thread's write).
    void saved(const QString &id);

private:
    struct Tracker;
    void track(Session *session);
    void untrack(Session *session, bool removeFile);
    void onTimer(Tracker *t);
    /// A queued write finished (event loop): saved(), or a warning and a
    /// retry after the rate limit.
    void onWritten(const QString &id, bool ok, const QString &error);
    SessionRecord recordOf(Session *session) const;
    /// Tracks the registry's sessions, now and as they come and go.
    void follow();

    SessionRegistry *m_registry;
    QString m_dir;
    int m_lines;
    int m_idleMs = kIdleMs;
    int m_minIntervalMs = kMinIntervalMs;
    /// Queues a file operation on m_io (in order: a removal never overtakes
    /// a write of the same record).
    void enqueue(std::function<void()> job);

    bool m_shuttingDown = false;
    bool m_started = false; ///< start() was called
    QString m_bootId;
    /// One thread for every write and removal of a record file: QSaveFile's
    /// commit is an fdatasync(2) (tens of ms on a busy disk), which must not
    /// stall the event loop. Drained by shutdown() and the destructor.
    QThreadPool m_io;
    std::function<void()> m_beforeWrite;
    QHash<Session *, Tracker *> m_trackers;
    QList<SessionRecord> m_ended;
};

} // namespace Tether
