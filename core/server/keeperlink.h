// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QDateTime>
#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

class QSocketNotifier;

namespace Tether {

class Session;
class SessionRegistry;
class ShareStore;

/**
 * The host's side of the session keeper (keeper.h; docs/architecture.md
 * "When Tether crashes"): `tether serve` connects to this user's keeper, or
 * starts one, hands it a copy of each running session's PTY master and
 * leader pidfd with the metadata a new host needs (SCM_RIGHTS over the
 * keeper's AF_UNIX socket, `$XDG_RUNTIME_DIR/tether/keeper.sock`), and tells
 * it to drop a session when it ends. After a crash of the previous host the
 * keeper still holds them: connect() reads them back and adopt() makes them
 * sessions again (same ids, pids, names, commands; output read by the dead
 * host is lost; offsets start past every offset the dead host gave out, so a
 * resuming viewer gets a reset replay).
 *
 * Metadata (opaque to the keeper): "ID\n" + compact JSON {"name", "argv",
 * "login" (Session::loginShell()), "cwd", "created" (ms since the epoch), "pid", "bound",
 * "notify" (Session::notifySettings() as the restart state's flags word),
 * "shares" ([{"token", "created"}], the session's read-only links),
 * "detached_since" (ms since the epoch; absent while a viewer is attached)}: `bound` is above
 * every output offset the host has given out for the session (raised, by
 * doubling, when the session's output nears it: a few messages in a
 * session's life, never one per read).
 *
 * Nothing here blocks the event loop once it runs: connect() and the start
 * of a keeper happen before it (bounded waits: 5 s for the keeper's answer,
 * 2 s for a keeper that is exiting to release its lock); later messages are
 * sent without waiting (a keeper started again while the host runs gets
 * 500 ms to answer hello, not 5 s): what the socket has no room for waits in a queue
 * (its descriptors copied) sent by a write notifier, on only while the
 * queue is not empty; a keeper that takes nothing while 16,384 messages
 * wait, or whose socket fails, is dropped with a warning, as if it had
 * died. When the keeper dies while the host runs,
 * the sessions go on; the host starts a new keeper (at most once per 10 s;
 * when that fails, again when the next session starts) and hands it every
 * session again, those started meanwhile included.
 */
class KeeperLink : public QObject
{
    Q_OBJECT
public:
    /// A session the keeper held when connect() said hello.
    struct Kept {
        QString id;
        QByteArray meta; ///< the JSON part of the metadata
        int masterFd = -1;
        int pidfd = -1;
    };

    explicit KeeperLink(SessionRegistry *registry, QObject *parent = nullptr);
    ~KeeperLink() override;

    /// The keeper's socket: RuntimeFile::directory() + "/keeper.sock".
    static QString socketPath();
    /// The keeper's lock: RuntimeFile::directory() + "/keeper.lock".
    static QString lockPath();
    /// Environment variable: "0" turns the keeper off (`tether serve` then
    /// behaves as before it: a crash hangs up every session).
    static const char kDisableEnv[];

    /**
     * Connects to the keeper, or starts one (`/proc/self/exe keeper`, in a
     * process session of its own, stdin and stdout /dev/null, stderr the
     * host's when that is a file such as host.log, else /dev/null), says
     * hello and reads the sessions it holds (kept()). False with *error when
     * there is no keeper and none could be started: the host serves without
     * crash protection.
     */
    bool connectToKeeper(QString *error);
    /**
     * The read-only links to hand to the keeper with each session's
     * metadata ("shares"), and to take back for the sessions adopted after
     * a crash (ShareStore::adopt). Set before adoptAndFollow(); null: links
     * are not kept across a crash.
     */
    void setShareStore(ShareStore *shares);
    /// What the keeper held at connectToKeeper().
    const QList<Kept> &kept() const { return m_kept; }
    /**
     * Makes the kept sessions whose ids the registry does not hold sessions
     * again (a crash of the previous host; SessionRegistry::adopt), closes
     * the copies of those it holds (a restart in place handed them over
     * already), tells the keeper to drop what could not be adopted, hands
     * it every running session it lacks, and from then on follows the
     * registry. Returns the number of sessions recovered after a crash;
     * *problems gets a line per session that could not be adopted.
     */
    int adoptAndFollow(QStringList *problems);
    /// The ids of the sessions adoptAndFollow() recovered after a crash.
    QStringList recoveredIds() const { return m_recoveredIds; }
    /// When the keeper saw its previous host's connection end (ms since the
    /// epoch; its 'L' answer to hello): after a crash, the time of the
    /// crash. 0 when it never had another host, or did not say (an older
    /// keeper).
    qint64 previousHostLostMs() const { return m_hostLostMs; }
    /// Orderly stop: the keeper closes everything and exits ('Q'). The
    /// sessions are the host's to end; nothing is sent afterwards.
    void stop();
    bool isConnected() const { return m_sock >= 0; }
    /// The keeper's pid (from its answer to hello); 0 when none.
    qint64 keeperPid() const { return m_keeperPid; }

Q_SIGNALS:
    /// The keeper's pid changed (0: the connection was lost).
    void keeperChanged();

private:
    bool connectSocket(QString *error);
    bool startKeeper(QString *error);
    bool hello(QString *error);
    bool send(char kind, const QByteArray &payload, const int *fds = nullptr, int nfds = 0);
    /// Connects to the session's exit, rename and output (the bound).
    void watch(Session *s);
    /// A new running session: watch() and add().
    void follow(Session *s);
    void add(Session *s);
    void drop(Session *s);
    void sendMeta(Session *s);
    QByteArray meta(Session *s) const;
    void lose(const QString &why);
    /// Sends what waits in m_queue, as far as the socket takes it.
    void flushQueue();
    /// Drops what waits (closing its descriptor copies).
    void clearQueue();
    void onReadable();
    void restartKeeper();
    /// restartKeeper() soon (at most once per 10 s), when no keeper is connected.
    void scheduleRestart();

    SessionRegistry *m_registry;
    ShareStore *m_shares = nullptr;
    int m_sock = -1;
    qint64 m_keeperPid = 0;
    qint64 m_hostLostMs = 0;
    QSocketNotifier *m_notifier = nullptr;
    /// On only while messages wait in m_queue.
    QSocketNotifier *m_writeNotifier = nullptr;
    /// A message the socket had no room for, with copies of its descriptors.
    struct Pending {
        QByteArray message;
        int fds[2] = {-1, -1};
        int nfds = 0;
    };
    QList<Pending> m_queue;
    QList<Kept> m_kept;
    QStringList m_recoveredIds;
    QHash<Session *, quint64> m_bound; ///< sessions held by the keeper: their offset bound
    QHash<Session *, QDateTime> m_detachedSent; ///< detachedSince() in the last META sent
    bool m_stopped = false;
    bool m_following = false;
    qint64 m_lastRestartMs = 0;
    bool m_restartPending = false;
};

} // namespace Tether
