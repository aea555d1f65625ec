// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <sys/types.h>
#include <vector>

namespace Tether::FdPassing {

/// Most descriptors one message carries (the control buffer's room).
constexpr int kMaxFds = 4;

/**
 * One sendmsg(2) of `size` bytes of `data` on the connected AF_UNIX socket
 * `sock`, with `nfds` descriptors of `fds` attached (SCM_RIGHTS, unix(7);
 * none when 0), retried on EINTR. `flags` are added to MSG_NOSIGNAL (e.g.
 * MSG_DONTWAIT). Returns the bytes sent, or -1 with errno (EINVAL when nfds
 * is over kMaxFds). No Qt: the session keeper uses it too.
 */
ssize_t send(int sock, const void *data, size_t size, const int *fds, int nfds, int flags = 0);

/**
 * One recvmsg(2) without waiting (MSG_DONTWAIT) into `buf` (`size` bytes),
 * retried on EINTR; descriptors that came with it (close-on-exec,
 * MSG_CMSG_CLOEXEC) are appended to `fds`, whatever the return value, and
 * are the caller's to close. Returns the bytes read (0: the peer closed), or
 * -1 with errno (EAGAIN: nothing to read). `msgFlags`, when given, gets the
 * message's flags (MSG_TRUNC, MSG_CTRUNC: it did not fit).
 */
ssize_t receive(int sock, void *buf, size_t size, std::vector<int> *fds, int *msgFlags = nullptr);

} // namespace Tether::FdPassing
