// SPDX-License-Identifier: GPL-2.0-or-later
#include "signalpipe.h"
#include "logging.h"

#include <QSocketNotifier>

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

namespace Tether {

namespace {
/// Write end, read by the handler; -1 when no SignalPipe exists. An int read
/// and written only while the handlers are (un)installed.
volatile sig_atomic_t g_writeFd = -1;

void onSignal(int signalNumber)
{
    const int savedErrno = errno;
    const unsigned char c = static_cast<unsigned char>(signalNumber);
    const int fd = g_writeFd;
    if (fd >= 0)
        [[maybe_unused]] const ssize_t n = ::write(fd, &c, 1); // non-blocking: a full pipe drops it
    errno = savedErrno;
}
} // namespace

SignalPipe::SignalPipe(const QList<int> &signalNumbers, QObject *parent)
    : QObject(parent)
{
    if (g_writeFd >= 0) {
        m_error = QStringLiteral("another SignalPipe is active");
        qCWarning(lcServer) << "SignalPipe:" << m_error;
        return;
    }
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, m_fds) != 0) {
        m_error = QString::fromLocal8Bit(std::strerror(errno));
        m_fds[0] = m_fds[1] = -1;
        return;
    }
    g_writeFd = m_fds[1];
    m_notifier = new QSocketNotifier(m_fds[0], QSocketNotifier::Read, this);
    connect(m_notifier, &QSocketNotifier::activated, this, [this]() { drain(); });

    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; // a signal must not fail unrelated syscalls with EINTR
    sigset_t unblock;
    sigemptyset(&unblock);
    for (int sig : signalNumbers) {
        Saved saved{sig, {}};
        if (::sigaction(sig, &sa, &saved.action) != 0) {
            m_error = QStringLiteral("signal %1: %2").arg(sig).arg(QString::fromLocal8Bit(std::strerror(errno)));
            return; // the destructor restores what was installed
        }
        m_saved.append(saved);
        sigaddset(&unblock, sig);
    }
    ::pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    m_valid = true;
}

SignalPipe::~SignalPipe()
{
    for (const Saved &s : std::as_const(m_saved))
        ::sigaction(s.signalNumber, &s.action, nullptr);
    if (m_fds[1] >= 0 && g_writeFd == m_fds[1])
        g_writeFd = -1;
    delete m_notifier;
    for (int &fd : m_fds) {
        if (fd >= 0)
            ::close(fd);
        fd = -1;
    }
}

void SignalPipe::drain()
{
    unsigned char buf[64];
    ssize_t n;
    while ((n = ::read(m_fds[0], buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; ++i)
            Q_EMIT received(int(buf[i]));
    }
}

} // namespace Tether
