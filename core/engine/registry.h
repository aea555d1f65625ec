// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "session.h"

#include <QHash>
#include <QObject>
#include <QSet>
#include <QTimer>

namespace Tether {

/// Limits of a registry. All apply to the running registry without restart.
struct Limits {
    /// Live sessions at once, >= 1. 256: at about 2 fds a session (PTY master,
    /// pidfd) plus a socket a viewer, it stays clear of the soft fd limit of
    /// 1024 that desktops start processes with, viewers included.
    int maxSessions = 256;
    /// TTL of a detached session whose program still runs, seconds; 0 (the
    /// default) = kept until killed, as tmux keeps its sessions.
    int ttlSeconds = 0;
    /// TTL of a session whose program exited, seconds, counted from the exit
    /// or from the last viewer leaving, whichever is later: long enough to
    /// read what it printed. 0 = kept until killed.
    int exitedTtlSeconds = 1800;
    qsizetype bufferCapacity = RingBuffer::kDefaultCapacity; ///< bytes per session, 64 KiB..64 MiB
    /// Whether sessions keep a server-side screen (Session::setScreenEnabled;
    /// setting sessions/screen). Off: a reset replay after rollover is the raw
    /// replay and `replay=screen` falls back to it; queries with no control
    /// viewer go unanswered. For comparison (bench/, docs/performance.md) and
    /// for a user who wants the bytes only.
    bool screen = true;
    /// Whether sessions load Tether's shell integration into the bash, zsh
    /// or fish they start (ShellIntegration; setting
    /// sessions/shellIntegration). Off: marks come only from shells and
    /// programs that send them themselves. Applies to sessions started after.
    bool shellIntegration = true;
    /// A command that ran at least this long (seconds) notifies when it ends
    /// (Session::setNotifyAfterMs; setting sessions/notifyAfter), 0..86400.
    int notifyAfterSeconds = 10;
};

/**
 * All live sessions: create, find, list, kill, expire, shut down.
 *
 * TTL: a session with no viewer expires after its TTL counted from its
 * detachedSince() (the last viewer leaving; creation if never attached; the
 * exit for a finished session if that is later). The TTL is ttlSeconds while
 * the program runs (default 0: never) and exitedTtlSeconds once it exited
 * (default 30 min), so running work is never ended behind the user's back.
 * Expiry runs on one single-shot timer set to the next deadline: no polling,
 * no wakeups while nothing can expire.
 *
 * Warning: expiryWarningLeadMs(ttl) before a deadline the same timer wakes once
 * and emits expiringSoon() (the desktop shows "bash — expires in 1 min"). Once
 * per deadline: attaching and detaching again, an exit while detached or a new
 * TTL make a new deadline, which is warned about again. Nothing is emitted for
 * sessions that cannot expire (a viewer attached, TTL 0).
 *
 * Limit: when maxSessions live sessions exist, create() ends the exited
 * session without a viewer that was detached longest (earliest
 * detachedSince()), once the new one has started. A running session is never
 * ended to make room: with no such exited session, create() refuses with
 * CreateError::TooManySessions and a text that names the limit and how to
 * raise it.
 *
 * kill()/expiry remove the session from the list at once (sessionRemoved) and
 * tear its processes down in the background; the Session object is deleted
 * after tornDown. shutdown() kills everything and emits shutdownComplete()
 * once all are torn down (bounded: grace 2 s + 2 s, then SIGKILL).
 */
class SessionRegistry : public QObject
{
    Q_OBJECT
public:
    /// A new random session id: 22 characters of URL-safe base64 (RFC 4648
    /// section 5) holding 128 bits from the system CSPRNG, never starting
    /// with '-' (it would read as an option on a command line).
    static QString randomId();
    enum class CreateError {
        None,
        TooManySessions, ///< the list is full and every session has a viewer
        SpawnFailed,     ///< the command cannot start (or the registry is shutting down)
        /// Out of file descriptors, pseudo-terminals, processes or memory
        /// (PtyProcess::StartFailure::Resources): a later retry may work.
        OutOfResources,
        BadName,         ///< the name breaks a rule of nameProblem()
        NameTaken,       ///< another listed session has that name
    };

    /// Longest session name, in characters (Unicode code points): long
    /// enough for "build of the release branch", short enough for a tray
    /// menu line and a `tether list` column.
    static constexpr int kMaxNameLength = 64;
    /// Length of a session id (randomId(): 128 bits in base64url).
    static constexpr int kIdLength = 22;
    /**
     * Why `name` cannot name a session, as the text of an error answer
     * (HTTP 400, docs/protocol.md "Session names"); empty when it can. Empty
     * means "no name" and is allowed. Refused: more than kMaxNameLength code
     * points; control characters (Unicode category Cc: C0, DEL, C1: a name
     * is printed on terminals, where they would act), line and paragraph
     * separators (Zl, Zp: a name is one line), unpaired surrogates; leading
     * or trailing white space (two names that look the same would differ);
     * the form of a session id, kIdLength characters of base64url (it could
     * be another session's id: `tether attach X` would mean either).
     */
    static QString nameProblem(const QString &name);

    explicit SessionRegistry(const Limits &limits = Limits(), QObject *parent = nullptr);
    ~SessionRegistry() override;

    /// Creates and starts a session. On failure returns nullptr and sets
    /// *error (CreateError) and *errorText (human text, e.g. errno text).
    /// A refusal for lack of resources (OutOfResources) is logged as a
    /// warning once per shortage: later ones are counted, and the count is
    /// logged when a session starts again.
    /// When the list is full, the session that made room (see the class
    /// doc) is ended only after the new one has started, and its id is put
    /// in *evictedId (empty when none was); a command that cannot start
    /// ends nobody.
    Session *create(const SpawnOptions &options, CreateError *error = nullptr,
                    QString *errorText = nullptr, QString *evictedId = nullptr)
    {
        return create(options, QString(), error, errorText, evictedId);
    }
    /// create() with a name (empty: none). Refused before anything starts
    /// (BadName, NameTaken) when rename() would refuse it.
    Session *create(const SpawnOptions &options, const QString &name, CreateError *error = nullptr,
                    QString *errorText = nullptr, QString *evictedId = nullptr);
    Session *find(const QString &id) const;
    /// The listed session named `name` (exact, case-sensitive), or nullptr.
    /// nullptr for an empty name.
    Session *findByName(const QString &name) const;
    /**
     * Names `session` `name` (empty clears the name). Names are unique among
     * the listed sessions, running or exited: a name is how `tether attach
     * NAME` finds one. False with *error (BadName, NameTaken) and
     * *errorText when refused; renaming a session to the name it has is
     * fine. sessionChanged() follows a change.
     */
    bool rename(Session *session, const QString &name, CreateError *error = nullptr,
                QString *errorText = nullptr);
    QList<Session *> sessions() const { return m_order; } ///< oldest first
    int count() const { return int(m_order.size()); }
    /// Removes the session now, detaches its viewers (Killed) and tears it down
    /// in the background. False if no such id.
    bool kill(const QString &id);

    /// Seconds until `session` expires; -1 when it cannot expire now (a viewer
    /// is attached, or its TTL — ttlSeconds running, exitedTtlSeconds exited — is 0).
    qint64 expiresIn(const Session *session) const;
    /// UTC deadline, null when none.
    QDateTime expiryDeadline(const Session *session) const;
    /// How long before its deadline a session is announced with expiringSoon(),
    /// in milliseconds: 60 s, or a tenth of the TTL when the TTL is under
    /// 10 min (a 60 s warning for a 90 s TTL would come two thirds of the way
    /// in, when the user has barely left). 0 for ttlSeconds <= 0.
    static qint64 expiryWarningLeadMs(int ttlSeconds);
    /// The TTL that applies to `session` now, seconds (0 = never): ttlSeconds
    /// while its program runs, exitedTtlSeconds once it exited.
    int ttlFor(const Session *session) const;

    Limits limits() const { return m_limits; }
    /// Applies new limits to the running registry. A new buffer capacity is
    /// applied to existing sessions too (shrinking drops their oldest output).
    void setLimits(const Limits &limits);

    /// Kills every session; shutdownComplete() when all are torn down (at once
    /// if none). Further create() calls fail.
    void shutdown();
    bool isShuttingDown() const { return m_shuttingDown; }
    // --- restart in place (handover.h, docs/architecture.md) -----------------
    /**
     * Everything the next process image needs (restart in place): every live
     * session oldest first (Session::handover), then the sessions still
     * being torn down (`dying`: the successor tears them down and reaps
     * them), every id ever issued, and the children only waiting to be
     * reaped (childrenAwaitingReap). `key`, `listenFd` and `restarts` are
     * the server's to fill in. Ring pieces point into the live rings: use
     * the state before the event loop runs again.
     */
    Handover::State handover() const;
    /// Lets go of every process after their handover was taken by another
    /// registry of this same process (tests; an execve discards us anyway):
    /// PtyProcess::release() on each, so destruction kills nothing.
    void releaseAll();
    /**
     * Adopts the sessions of `state` (made by handover() in the process image
     * Tether restarted from): each live one with Session::restore, falling
     * back to Session::adoptBare for a record that does not restore (its
     * output is then lost, the process kept); each dying one is taken over
     * and its teardown started again; the issued ids are remembered; the
     * pids only waiting to be reaped are reaped (reapChildLater). Buffer
     * capacities follow limits(). Returns the number of live sessions
     * adopted; *problems (if given) gets one line per record that was not
     * restored whole. Emits sessionAdded for each.
     */
    int adopt(const Handover::State &state, QStringList *problems = nullptr);
    /// Adopts from the bare fd list (the state was unreadable): Session::
    /// adoptBare for each entry with an id, teardown for each without.
    /// Returns the number of live sessions adopted; see adopt().
    int adoptBare(const QList<Handover::FdEntry> &entries, QStringList *problems = nullptr);

    /// Overrides expiryWarningLeadMs() with `msec` (>= 0; -1 restores the
    /// rule), for tests: a lead far longer than the timer's possible lateness
    /// keeps a short-TTL test independent of how loaded the machine is.
    void setExpiryWarningLead(qint64 msec) { m_warningLeadMs = msec; rescheduleExpiry(); }
    /// Teardown grace per escalation step (ms), for tests; default 2000.
    void setTeardownGrace(int msec) { m_graceMs = msec; }

Q_SIGNALS:
    void sessionAdded(Tether::Session *session);
    /// Emitted when the session leaves the list (kill, expiry, eviction).
    void sessionRemoved(Tether::Session *session);
    /// Something shown in lists changed (title, state, viewers, size, ...).
    void sessionChanged(Tether::Session *session);
    /// `session` will expire in about `secondsLeft` seconds (rounded up, >= 1)
    /// unless someone attaches; see the class doc for when and how often.
    void expiringSoon(Tether::Session *session, int secondsLeft);
    /// A command of `session` started or ended (Session::commandStarted,
    /// commandFinished): `finished` says which.
    void sessionCommand(Tether::Session *session, const Tether::CommandRecord &record, bool finished);
    /// Session::notify() of `session`.
    void sessionNotify(Tether::Session *session, const QString &kind, const QString &text, bool watched,
                       bool requested, const Tether::CommandRecord &record);
    void shutdownComplete();

private:
    void remove(Session *s, DetachReason reason);
    /// Why `session` (nullptr: a new one) cannot be named `name`, with
    /// *error BadName or NameTaken; empty (and None) when it can.
    QString nameRefusal(const Session *session, const QString &name, CreateError *error) const;
    /// Lists `s` (created or adopted) and forwards its changes.
    void track(Session *s);
    /// An adopted session: listed (true), or torn down when `dying` or its id
    /// is taken already (false).
    bool enlist(Session *s, bool dying);
    /// Tears `s` down in the background and deletes it after tornDown.
    void bury(Session *s, DetachReason reason);
    /// Last resort for a PTY that could not be adopted at all: close the
    /// master (the kernel hangs up its session), SIGHUP the session, reap.
    static void abandon(const PtyHandover &pty);
    void rescheduleExpiry();
    /// When the expiry timer must wake for `s` (ms since epoch): its warning
    /// time until warned, then its deadline; -1 when it cannot expire.
    qint64 nextWakeupMs(const Session *s) const;
    qint64 warningLeadMs(const Session *s) const;
    void expireDue();
    QString newId();
    void maybeFinishShutdown();

    Limits m_limits;
    QList<Session *> m_order;
    QHash<QString, Session *> m_byId;
    QSet<Session *> m_dying;
    QSet<QString> m_issuedIds;
    /// Deadline (ms since epoch) each session was last warned about.
    QHash<const Session *, qint64> m_warnedDeadline;
    QTimer m_expiryTimer;
    int m_graceMs = 2000;
    qint64 m_warningLeadMs = -1; ///< -1: expiryWarningLeadMs(ttl)
    bool m_shuttingDown = false;
    /// create() refusals for lack of resources since the last success: the
    /// first is logged (a warning), the rest counted (issue 10).
    int m_refusedForResources = 0;
    bool m_shutdownDone = false;
};

} // namespace Tether
