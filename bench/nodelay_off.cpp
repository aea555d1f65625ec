// SPDX-License-Identifier: GPL-2.0-or-later
// LD_PRELOAD shim for the bench only (never linked into Tether): makes every
// setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, ...) a successful no-op, so a
// Tether binary started with it keeps Nagle's algorithm on its sockets, as
// it did before TCP_NODELAY was set (issue 11). bench/run.py runs the same
// latency workload against a server with and without it: the difference is
// what TCP_NODELAY bought. It interposes the libc symbol that Qt's socket
// engine calls through the PLT (ld.so(8), LD_PRELOAD; dlsym(3) RTLD_NEXT).
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

extern "C" int setsockopt(int fd, int level, int name, const void *value, socklen_t length)
{
    using Real = int (*)(int, int, int, const void *, socklen_t);
    static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "setsockopt"));
    if (level == IPPROTO_TCP && name == TCP_NODELAY)
        return 0;
    return real(fd, level, name, value, length);
}
