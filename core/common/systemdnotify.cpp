// SPDX-License-Identifier: GPL-2.0-or-later
#include "systemdnotify.h"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace Tether {
namespace SystemdNotify {

namespace {
/// Written once at start, before any thread exists.
QByteArray g_address;
} // namespace

void takeFromEnvironment()
{
    g_address = qgetenv(kSocketEnv);
    qunsetenv(kSocketEnv);
}

bool isEnabled()
{
    return !g_address.isEmpty();
}

QByteArray environmentEntry()
{
    return isEnabled() ? QByteArray(kSocketEnv) + '=' + g_address : QByteArray();
}

int sendDatagram(const char *address, const char *message, std::size_t length)
{
    if (!address || !*address)
        return EINVAL;
    struct sockaddr_un sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    const std::size_t n = std::strlen(address);
    if (n >= sizeof sa.sun_path)
        return EINVAL;
    if (address[0] == '@') {
        // Abstract namespace (unix(7)): a leading NUL, and the length says
        // where the name ends (no terminating NUL counted).
        if (n < 2)
            return EINVAL;
        std::memcpy(sa.sun_path + 1, address + 1, n - 1);
    } else if (address[0] == '/') {
        std::memcpy(sa.sun_path, address, n);
    } else {
        return std::strchr(address, ':') ? EAFNOSUPPORT : EINVAL;
    }
    const socklen_t len = socklen_t(offsetof(struct sockaddr_un, sun_path) + n + (address[0] == '/' ? 1 : 0));
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int err = 0;
    ssize_t sent;
    do {
        sent = ::sendto(fd, message, length, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<struct sockaddr *>(&sa), len);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0)
        err = errno;
    else if (std::size_t(sent) != length)
        err = EMSGSIZE;
    ::close(fd);
    return err;
}

bool notify(const QByteArray &state, QString *error)
{
    if (!isEnabled())
        return true;
    const int err = sendDatagram(g_address.constData(), state.constData(), std::size_t(state.size()));
    if (err != 0 && error)
        *error = QStringLiteral("%1: %2").arg(QString::fromLocal8Bit(g_address), QString::fromLocal8Bit(std::strerror(err)));
    return err == 0;
}

QByteArray monotonicUsec()
{
    struct timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return "MONOTONIC_USEC=" + QByteArray::number(qint64(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000);
}

} // namespace SystemdNotify
} // namespace Tether
