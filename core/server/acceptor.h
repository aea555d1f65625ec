// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QObject>
#include <QTimer>

class QSocketNotifier;

namespace Tether {

/**
 * Accepts the connections of a listening TCP socket on the event loop, and
 * survives running out of file descriptors.
 *
 * Why not QTcpServer's own loop: on a readable listening socket it calls
 * accept4(2) until it fails, and tells "nothing pending" (EAGAIN) from other
 * failures by its socket engine's error, which keeps only the FIRST error
 * ever set on that engine (QAbstractSocketEnginePrivate::setError, Qt 5.15
 * and 6.4). The first accept batch ends with EAGAIN, so later EMFILE reads
 * as "temporary": the connection stays in the backlog, the socket stays
 * readable and accept4 failed ~250,000 times a second (100 % CPU, nothing
 * served) until descriptors were freed (accept(2): EMFILE leaves the
 * connection queued; the same spin in libuv, joyent/libuv#690).
 * When EMFILE was the first error, QTcpServer instead paused accepting for
 * good (acceptError) and never served again. The owner keeps QTcpServer for
 * listen()/close(), calls pauseAccepting() so its loop never runs, and lets
 * this class accept on socketDescriptor().
 *
 * When accept4 fails for lack of resources (man 2 accept: EMFILE, ENFILE,
 * ENOBUFS, ENOMEM), the pending connections cannot be taken and would keep
 * the socket readable. The classic remedy (libuv's uv__emfile_trick, nginx):
 * a reserve descriptor (/dev/null, opened here) is closed, the pending
 * connections are accepted and closed at once (their clients see the
 * connection closed instead of waiting in the backlog), and the reserve is
 * opened again; then the socket is not watched for pauseMs() (a single-shot
 * timer, never a busy loop). Each episode is logged twice at most: a warning
 * at its first failure, and one line when a connection is accepted again
 * that counts the failures and closed connections in between. Episodes can
 * follow each other every pauseMs() and any peer can cause them, so the
 * first line goes through logLimited(), and when it was counted instead of
 * written, so is the second (in a text without counts).
 *
 * The network errors accept4 passes on from a pending connection (man 2
 * accept, "Error handling": ENETDOWN, EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET,
 * EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH) and ECONNABORTED skip that
 * connection. Never blocks.
 */
class Acceptor : public QObject
{
    Q_OBJECT
public:
    /// Pause after a failure for lack of resources, ms.
    static constexpr int kDefaultPauseMs = 250;

    /// Watches `listenFd`, a listening TCP socket that the caller keeps open
    /// (and owns) for this object's whole life. Opens the reserve descriptor
    /// (/dev/null, close-on-exec); without one (already out of descriptors)
    /// it only pauses, and tries to open it again after each pause.
    explicit Acceptor(qintptr listenFd, QObject *parent = nullptr);
    /// Closes the reserve descriptor; leaves `listenFd` open.
    ~Acceptor() override;

    /// Pause after a failure for lack of resources, ms (default kDefaultPauseMs).
    void setPauseMs(int msec) { m_pause.setInterval(msec); }
    int pauseMs() const { return m_pause.interval(); }

    /// Connections closed unserved for lack of descriptors, since construction.
    qint64 droppedConnections() const { return m_droppedTotal; }

Q_SIGNALS:
    /// A new connection: a connected, non-blocking, close-on-exec socket
    /// descriptor that the receiver now owns (e.g. for
    /// QTcpSocket::setSocketDescriptor). Exactly one receiver must take it,
    /// or close it.
    void accepted(qintptr fd);

private:
    void onReadable();
    void onOutOfResources(int err);
    int shedPending();
    void openReserve();

    qintptr m_listenFd;
    QSocketNotifier *m_notifier = nullptr;
    QTimer m_pause;          ///< single shot: watch the socket again
    int m_reserveFd = -1;    ///< /dev/null, closed to make room to shed
    bool m_inEpisode = false; ///< out of resources since the last accepted connection
    bool m_episodeLogged = false; ///< this episode's start was written (not rate-limited away)
    qint64 m_episodeFailures = 0;
    qint64 m_episodeDropped = 0;
    qint64 m_droppedTotal = 0;
};

} // namespace Tether
