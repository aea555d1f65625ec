// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QElapsedTimer>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QTimer>

namespace Tether {

class HostLock;
class KeeperLink;
class Server;
class SessionRegistry;
class UpgradeWatch;

/**
 * Tether restarts in place without losing a session (SIGUSR2, `tether
 * restart`, POST /api/restart, the tray's "Restart Tether"): the running
 * process execve(2)s the binary it was started from, in the same process.
 * The pid stays; the shells stay its children (their exit status can still
 * be reaped); the PTY masters, pidfds and the listening socket stay open
 * across the exec (FD_CLOEXEC cleared just before it, put back if it
 * fails), so no connection is refused during the swap: the kernel queues
 * them on the socket and the next image accepts them. Everything else
 * (sessions, rings, terminal states, TTL times, ids issued, the key) goes
 * in a memfd (Handover, docs/architecture.md "Restart in place").
 *
 * Steps of request():
 *  1. check(): the binary exists and is executable (access(2) X_OK), else
 *     refused with the reason (POST /api/restart answers 500 with it).
 *  2. Server::beginRestart(): accepting paused, WebSocket viewers closed
 *     1012 "server restarting", event streams ended.
 *  3. Drain, on a timer (no sleep): until Server::isQuiet() (close frames
 *     and answers flushed, peers gone) or drainTimeoutMs (1 s) passed.
 *  4. The state is written to a memfd; FD_CLOEXEC is cleared on it, the
 *     listening socket, every master and pidfd; SIGTERM, SIGINT, SIGHUP and
 *     SIGUSR2 are blocked (the mask survives exec: a signal arriving during
 *     the swap waits for the next image's handler instead of killing the
 *     process with its default action); stdio is flushed; execve(2).
 *     Just before the exec a guardian is spawned (see guardIfAsked()).
 *  5. Only if execve returns (it failed): FD_CLOEXEC and the signal mask put
 *     back, the memfd closed, accepting resumed, the guardian told to stand
 *     down; lastError() says why and failed() is emitted. The old process
 *     carries on, sessions and all; viewers reconnect to it.
 *
 * The guardian covers what an in-process check cannot: a new binary whose
 * execve(2) succeeds but that dies before it has adopted the state (a
 * missing shared library, a crash at start, a command line it rejects).
 * Without it the masters would close with the process and the kernel would
 * hang up every shell. It is our own image again (posix_spawn of
 * /proc/self/exe, the running image even when an upgrade replaced its file)
 * started with the same fds; the new image tells it through a pipe once it
 * has adopted everything (adoptHandover()), and it exits; when the pipe's
 * other end closes without that word, it takes over (guardIfAsked()).
 *
 * Under systemd (NOTIFY_SOCKET, SystemdNotify; docs/architecture.md "Under
 * systemd"): request() says RELOADING=1; the old image says MAINPID=G for
 * the guardian G just before the exec, so that the death of the new image
 * does not end the unit; the guardian hands it back (MAINPID=P, then a
 * barrier) before it stands down, and the image that then holds the
 * sessions says READY=1 (a failed exec: fail()). Needs NotifyAccess=all.
 *
 * The next image calls adoptHandover() before listening: it takes the
 * listening socket, reads the state (or, when it cannot, adopts every PTY
 * from the bare fd list with empty buffers), and removes the handover
 * variables from its environment.
 *
 * Test hooks, read only when used: TETHER_RESTART_BINARY (at restart time)
 * names the binary to exec instead of the recorded one;
 * TETHER_RESTART_DEADLINE_MS (read by the guardian, from the environment
 * Tether was started with) sets the guardian's deadline; Handover::
 * kIgnoreStateEnv makes the next image treat the state as unreadable.
 */
class RestartInPlace : public QObject
{
    Q_OBJECT
public:
    /// Remembers how this process was started, for the exec: argv (copied)
    /// and the binary, resolved now from argv[0] as the shell did (absolute
    /// or relative to the working directory when it has a '/', else the
    /// first executable match in PATH). Not /proc/self/exe: after a package
    /// upgrade that names the deleted old file, and the point of a restart
    /// is often to run the new one. Symlinks are kept, so one repointed by
    /// an upgrade is followed at exec time. Call before QApplication, which
    /// may remove arguments (-platform) from argv.
    static void recordStartup(int argc, char **argv);
    /**
     * Restart guardian mode: when this process was started as the guardian
     * of a restart in place (environment variable TETHER_HANDOVER_GUARD =
     * "FD:PID", set only by execNow()), never returns. It waits on the pipe
     * FD with poll(2), Qt-free, holding the PTY masters, pidfds, listening
     * socket and state memfd it inherited, all of which keep the sessions'
     * terminals open:
     *  - the byte 'A' (the new image adopted the sessions, or the exec
     *    failed and the old image kept them): exits 0, silently;
     *  - end of file without it (the new image died before adopting):
     *    says so on stderr and execs its own image (/proc/self/exe, the
     *    previous binary) with `argv` and the same handover variables plus
     *    TETHER_HANDOVER_TAKEOVER=PID: a restart in place from the state,
     *    in another process. The shells are not its children (they were
     *    the dead image's, reparented to the nearest subreaper or init):
     *    their exit statuses are unknown to it (pidfd without a code).
     *  - no word within its deadline (60 s; the test hook
     *    TETHER_RESTART_DEADLINE_MS, 100 to 3,600,000 ms, sets another):
     *    the new image is taken to be hung (a successor stuck at start, or
     *    a Tether older than the pipe, which never says it): it is killed
     *    (SIGKILL, through a pidfd, only while it is still our parent),
     *    waited for (10 s at most), and the guardian takes over as above,
     *    with TETHER_HANDOVER_TAKEOVER=PID:MS. Before, the guardian left
     *    and the sessions ended with the hung process.
     * Call first in main(), before anything opens a descriptor or starts a
     * thread. Returns at once when the variable is not set. Only an image
     * whose main() calls it gets a guardian when it restarts (a program
     * that does not, such as a test, could not act as one).
     */
    static void guardIfAsked(char **argv);
    /// The binary recorded by recordStartup() (empty before).
    static QString startupBinary();

    RestartInPlace(SessionRegistry *registry, Server *server, QObject *parent = nullptr);
    ~RestartInPlace() override;

    /// What adoptHandover() found.
    enum class Adoption {
        None,     ///< not started by a restart: listen as usual
        Adopted,  ///< listening socket and sessions taken over
        Failed,   ///< a handover was present but the socket could not be used: listen as usual
    };
    /**
     * In the process image a restart exec'd: takes over the listening socket
     * (Server::adoptListeningSocket), then the sessions from the state
     * (SessionRegistry::adopt, and the key), or, when the state cannot be
     * read, from the bare fd list (SessionRegistry::adoptBare). Removes the
     * handover variables from the environment (the shells must not inherit
     * them) and closes the memfd. *report gets one line for the log, e.g.
     * "restarted in place: 3 sessions kept".
     */
    Adoption adoptHandover(QString *report);

    /// Whether a restart can start now: false with *why when one is in
    /// progress, or the binary is unknown, missing or not executable.
    bool check(QString *why) const;
    /// Starts a restart (see the class comment); returns at once. False with
    /// *why (also lastError()) when check() fails.
    bool request(QString *why = nullptr);
    bool isRestarting() const { return m_restarting; }

    /// Restarts in place that led to this process image (0 for a fresh start).
    quint32 restarts() const { return m_restarts; }
    /// Why the last restart of this image failed; empty if none did.
    QString lastError() const { return m_lastError; }
    /// Random id of this process image: it changes with every exec, so a
    /// client can tell that the restart happened.
    QString instance() const { return m_instance; }
    /// {"version", "update", "pid", "binary", "instance", "restarts",
    /// "restarting", "last_error", "recovered_after_crash", "crashed_at",
    /// "keeper_pid"}: the body of GET /api/restart and of the
    /// `server` event (docs/protocol.md). "version" is this process image's
    /// (Tether::version()); "update" is UpgradeWatch::updateJson().
    /// statusChanged() says when "update" changed.
    QJsonObject status() const;
    /// The binary a restart would exec now (TETHER_RESTART_BINARY, else startupBinary()).
    static QString binary();
    /// Watches the binary a restart would execute and says when it is
    /// another Tether than the running one (an upgrade); started by the
    /// constructor when recordStartup() knew the binary.
    UpgradeWatch *upgradeWatch() const { return m_upgrades; }
    /// The single-host lock this process holds (HostLock), kept locked across
    /// the exec: its descriptor stays open (FD_CLOEXEC cleared like the
    /// masters') and its number goes in HostLock::kHandoverEnv, where the
    /// next image's HostLock::acquire() adopts it. Null (the default): none.
    void setHostLock(HostLock *lock) { m_hostLock = lock; }
    /// The session keeper link (KeeperLink) whose pid status() reports as
    /// "keeper_pid"; null: none.
    void setKeeper(KeeperLink *keeper);
    /// Sessions this start recovered after a crash of the previous host
    /// (status(): "recovered_after_crash"; 0 for none) and when that host
    /// was lost (status(): "crashed_at", ISO-8601 UTC; `crashedAtMs` ms
    /// since the epoch, 0 when not known: KeeperLink::previousHostLostMs()).
    void setRecoveredAfterCrash(int sessions, qint64 crashedAtMs = 0)
    {
        m_recovered = sessions;
        m_crashedAtMs = crashedAtMs;
    }
    /// Bound on step 3, ms (default 1000).
    void setDrainTimeout(int msec) { m_drainTimeoutMs = msec; }

Q_SIGNALS:
    /// Right before the state is taken and execve(2) is called (e.g. the
    /// desktop app lets go of its single-instance lock). Nothing may be
    /// left running that expects to finish.
    void aboutToExec();
    /// The restart failed (execve or the state could not be written); the
    /// process carries on. `why` as lastError().
    void failed(const QString &why);
    /// status() changed in a way clients are told about (an upgrade was
    /// noticed or went away): Server sends the `server` event.
    void statusChanged();

private:
    void drainStep();
    void execNow();
    void fail(const QString &why);

    QPointer<SessionRegistry> m_registry;
    QPointer<Server> m_server;
    QTimer m_drainTimer;
    QElapsedTimer m_drainClock;
    int m_drainTimeoutMs = 1000;
    bool m_restarting = false;
    quint32 m_restarts = 0;
    QString m_lastError;
    QString m_instance;
    UpgradeWatch *m_upgrades = nullptr;
    HostLock *m_hostLock = nullptr;
    QPointer<KeeperLink> m_keeper;
    int m_recovered = 0;
    qint64 m_crashedAtMs = 0;
};

} // namespace Tether
