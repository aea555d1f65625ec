// SPDX-License-Identifier: GPL-2.0-or-later
#include "systemdnotify.h"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
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

namespace {
/// The datagram, with `fd` attached (SCM_RIGHTS) when it is not -1.
int sendWithFd(const char *address, const char *message, std::size_t length, int fd)
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
    struct iovec iov = {const_cast<char *>(message), length};
    struct msghdr mh;
    std::memset(&mh, 0, sizeof mh);
    mh.msg_name = &sa;
    mh.msg_namelen = len;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    union {
        struct cmsghdr align;
        char bytes[CMSG_SPACE(sizeof(int))];
    } control;
    if (fd >= 0) {
        std::memset(&control, 0, sizeof control);
        mh.msg_control = &control;
        mh.msg_controllen = sizeof control;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    const int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return errno;
    int err = 0;
    ssize_t sent;
    do {
        sent = ::sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0)
        err = errno;
    else if (std::size_t(sent) != length)
        err = EMSGSIZE;
    ::close(sock);
    return err;
}
} // namespace

int sendDatagram(const char *address, const char *message, std::size_t length)
{
    return sendWithFd(address, message, length, -1);
}

int barrier(const char *address, int timeoutMs)
{
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0)
        return errno;
    const int err = sendWithFd(address, "BARRIER=1", 9, p[1]);
    ::close(p[1]); // the manager's copy is now the only write end
    if (err != 0) {
        ::close(p[0]);
        return err;
    }
    struct timespec start, now;
    ::clock_gettime(CLOCK_MONOTONIC, &start);
    int result = ETIMEDOUT;
    for (;;) {
        ::clock_gettime(CLOCK_MONOTONIC, &now);
        const long long left = timeoutMs - ((now.tv_sec - start.tv_sec) * 1000LL + (now.tv_nsec - start.tv_nsec) / 1000000);
        if (left <= 0)
            break;
        struct pollfd pfd = {p[0], 0, 0}; // POLLHUP is always reported
        const int r = ::poll(&pfd, 1, int(left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            result = errno;
            break;
        }
        if (r > 0 && (pfd.revents & (POLLHUP | POLLERR))) {
            result = 0;
            break;
        }
    }
    ::close(p[0]);
    return result;
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
