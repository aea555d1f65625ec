// SPDX-License-Identifier: GPL-2.0-or-later
#include "acceptor.h"
#include "logging.h"
#include "repeatlimiter.h"

#include <QPointer>
#include <QSocketNotifier>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace Tether {

namespace {
/// Connections taken per readable notification; the notifier is level
/// triggered, so the rest follow on the next event loop pass (other sockets
/// and timers get their turn during a connection flood).
constexpr int kMaxAcceptsPerPass = 256;
/// Pending connections closed per failure for lack of resources (a listen
/// backlog is at most net.core.somaxconn, 4096 by default).
constexpr int kMaxShedPerPass = 4096;

QString errnoName(int err)
{
    switch (err) {
    case EMFILE: return QStringLiteral("EMFILE");
    case ENFILE: return QStringLiteral("ENFILE");
    case ENOBUFS: return QStringLiteral("ENOBUFS");
    case ENOMEM: return QStringLiteral("ENOMEM");
    default: return QStringLiteral("errno %1").arg(err);
    }
}

/// man 2 accept, "Error handling": Linux passes errors already pending on a
/// new connection to accept(); they concern that connection only.
bool connectionError(int err)
{
    switch (err) {
    case ECONNABORTED:
    case ENETDOWN:
    case EPROTO:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
        return true;
    default:
        return false;
    }
}
} // namespace

Acceptor::Acceptor(qintptr listenFd, QObject *parent)
    : QObject(parent)
    , m_listenFd(listenFd)
{
    openReserve();
    m_notifier = new QSocketNotifier(listenFd, QSocketNotifier::Read, this);
    connect(m_notifier, &QSocketNotifier::activated, this, &Acceptor::onReadable);
    m_pause.setSingleShot(true);
    m_pause.setInterval(kDefaultPauseMs);
    connect(&m_pause, &QTimer::timeout, this, [this]() {
        if (m_reserveFd < 0)
            openReserve();
        m_notifier->setEnabled(true);
    });
}

Acceptor::~Acceptor()
{
    if (m_reserveFd >= 0)
        ::close(m_reserveFd);
}

void Acceptor::openReserve()
{
    m_reserveFd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void Acceptor::onReadable()
{
    const QPointer<Acceptor> self(this);
    for (int i = 0; i < kMaxAcceptsPerPass; ++i) {
        const int fd = ::accept4(int(m_listenFd), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            if (m_inEpisode) {
                // Episodes can follow each other as fast as the pause allows,
                // and a peer without the key can cause them: when the start
                // of this one was not written (rate-limited, issue 10), its
                // end is counted the same way.
                if (m_episodeLogged) {
                    qCWarning(lcServer).nospace()
                        << "accepting connections again, after " << m_episodeFailures
                        << " failed accept pass(es) for lack of resources; " << m_episodeDropped
                        << " connection(s) were closed unserved meanwhile";
                } else {
                    logLimited(lcServer(), QtWarningMsg,
                               QStringLiteral("accepting connections again after running out of resources"));
                }
                m_inEpisode = false;
                m_episodeFailures = 0;
                m_episodeDropped = 0;
            }
            Q_EMIT accepted(fd);
            if (!self || !m_notifier->isEnabled())
                return;
            continue;
        }
        const int err = errno;
        if (err == EINTR || connectionError(err))
            continue;
        if (err == EAGAIN || err == EWOULDBLOCK)
            return;
        // EMFILE, ENFILE, ENOBUFS, ENOMEM, or anything unexpected: retrying
        // now would fail again at once.
        onOutOfResources(err);
        return;
    }
}

void Acceptor::onOutOfResources(int err)
{
    // Only a descriptor shortage can be bridged by the reserve; lack of
    // memory cannot (nor can the unexpected: just pause).
    const int shed = (err == EMFILE || err == ENFILE) ? shedPending() : 0;
    m_notifier->setEnabled(false);
    m_pause.start();
    ++m_episodeFailures;
    m_episodeDropped += shed;
    m_droppedTotal += shed;
    if (m_inEpisode)
        return; // counted; reported in one line when accepting works again
    m_inEpisode = true;
    m_episodeLogged = logLimited(lcServer(), QtWarningMsg,
               QStringLiteral("cannot accept connections: %1 (%2); closing new connections unserved and trying "
                              "again every %3 ms until it works (not logged again until a connection is accepted)")
                   .arg(QString::fromLocal8Bit(std::strerror(err)), errnoName(err))
                   .arg(m_pause.interval()));
}

int Acceptor::shedPending()
{
    if (m_reserveFd < 0)
        return 0;
    ::close(m_reserveFd);
    m_reserveFd = -1;
    int shed = 0;
    for (int i = 0; i < kMaxShedPerPass; ++i) {
        const int fd = ::accept4(int(m_listenFd), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || connectionError(errno))
                continue;
            break; // EAGAIN: none left; EMFILE: the freed slot was taken meanwhile
        }
        ::close(fd);
        ++shed;
    }
    openReserve(); // the slot just freed; if another thread took it, retried after the pause
    return shed;
}

} // namespace Tether
