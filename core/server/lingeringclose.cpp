// SPDX-License-Identifier: GPL-2.0-or-later
#include "lingeringclose.h"

#include <QSocketNotifier>

#include <cerrno>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace Tether {

void LingeringClose::start(int fd, QObject *owner, int timeoutMs, qint64 maxBytes)
{
    if (fd < 0)
        return;
    new LingeringClose(fd, owner, timeoutMs, maxBytes);
}

LingeringClose::LingeringClose(int fd, QObject *owner, int timeoutMs, qint64 maxBytes)
    : QObject(owner)
    , m_fd(fd)
    , m_left(maxBytes)
{
    ++s_pending;
    ::fcntl(m_fd, F_SETFL, ::fcntl(m_fd, F_GETFL) | O_NONBLOCK);
    ::shutdown(m_fd, SHUT_WR);
    m_notifier = new QSocketNotifier(m_fd, QSocketNotifier::Read, this);
    connect(m_notifier, &QSocketNotifier::activated, this, &LingeringClose::onReadable);
    m_timer.setSingleShot(true);
    connect(&m_timer, &QTimer::timeout, this, &LingeringClose::finish);
    m_timer.start(timeoutMs);
    onReadable();
}

LingeringClose::~LingeringClose()
{
    --s_pending;
    if (m_fd >= 0)
        ::close(m_fd);
}

void LingeringClose::onReadable()
{
    if (m_fd < 0)
        return;
    char buf[16384];
    for (;;) {
        const ssize_t n = ::recv(m_fd, buf, sizeof buf, 0);
        if (n > 0) {
            m_left -= n;
            if (m_left <= 0) {
                finish();
                return;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        finish(); // EOF (the peer closed too) or an error
        return;
    }
}

void LingeringClose::finish()
{
    if (m_fd < 0)
        return;
    m_notifier->setEnabled(false);
    m_timer.stop();
    ::close(m_fd);
    m_fd = -1;
    deleteLater();
}

} // namespace Tether
