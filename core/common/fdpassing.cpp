// SPDX-License-Identifier: GPL-2.0-or-later
#include "fdpassing.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>

namespace Tether::FdPassing {

ssize_t send(int sock, const void *data, size_t size, const int *fds, int nfds, int flags)
{
    if (nfds < 0 || nfds > kMaxFds) {
        errno = EINVAL;
        return -1;
    }
    struct iovec iov = {const_cast<void *>(data), size};
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(struct cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))] = {};
    if (nfds > 0) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(size_t(nfds) * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(size_t(nfds) * sizeof(int));
        std::memcpy(CMSG_DATA(c), fds, size_t(nfds) * sizeof(int));
    }
    ssize_t r;
    do
        r = ::sendmsg(sock, &msg, MSG_NOSIGNAL | flags);
    while (r < 0 && errno == EINTR);
    return r;
}

ssize_t receive(int sock, void *buf, size_t size, std::vector<int> *fds, int *msgFlags)
{
    alignas(struct cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))];
    struct iovec iov = {buf, size};
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do
        n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    const int saved = errno;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); n >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            fds->push_back(fd);
        }
    }
    if (msgFlags)
        *msgFlags = n >= 0 ? msg.msg_flags : 0;
    errno = saved;
    return n;
}

} // namespace Tether::FdPassing
