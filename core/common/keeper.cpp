// SPDX-License-Identifier: GPL-2.0-or-later
// The session keeper's main loop: plain POSIX, no Qt (keeper.h says why).
#include "keeper.h"
#include "fdpassing.h"

#include <cerrno>
#include <csignal>
#include <dirent.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace Tether::Keeper {

namespace {

/// How long a keeper waits for its first host, ms: the host that started
/// it connected before it spawned it, so this bounds only a host that died
/// in between.
constexpr int kFirstHostMs = 10000;
/// Bound on a send to the host (SO_SNDTIMEO): a host that stops reading
/// cannot hold the keeper.
constexpr int kSendTimeoutMs = 5000;

struct Held {
    std::string id;
    std::string meta; ///< "ID\n..." as the host sent it
    int fds[2] = {-1, -1};
};

std::vector<Held> g_held;
/// When the last host's connection ended (ms since the epoch, wall clock);
/// 0: none ended yet. Told to the next host ('L'): after a crash, the time of
/// the crash as near as the keeper can see it.
long long g_hostLostMs = 0;

long long wallClockMs()
{
    struct timespec ts;
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void say(const char *text)
{
    char line[300];
    const int n = std::snprintf(line, sizeof line, "tether keeper (pid %d): %s\n", int(::getpid()), text);
    if (n > 0) {
        const ssize_t ignored = ::write(STDERR_FILENO, line, size_t(n < int(sizeof line) ? n : int(sizeof line) - 1));
        (void)ignored;
    }
}

void closeHeld(Held &h)
{
    for (int &fd : h.fds) {
        if (fd >= 0)
            ::close(fd);
        fd = -1;
    }
}

[[noreturn]] void finish(int status)
{
    for (Held &h : g_held)
        closeHeld(h);
    ::_exit(status);
}

std::string idOf(const char *data, size_t size)
{
    const void *nl = std::memchr(data, '\n', size);
    return std::string(data, nl ? size_t(static_cast<const char *>(nl) - data) : size);
}

Held *find(const std::string &id)
{
    for (Held &h : g_held)
        if (h.id == id)
            return &h;
    return nullptr;
}

void drop(const std::string &id)
{
    for (size_t i = 0; i < g_held.size(); ++i) {
        if (g_held[i].id == id) {
            closeHeld(g_held[i]);
            g_held.erase(g_held.begin() + long(i));
            return;
        }
    }
}

/// Sends `kind` + `payload` with `fds` (n of them) to `sock`; false on failure.
bool sendMessage(int sock, char kind, const std::string &payload, const int *fds, int n)
{
    std::string buf(1, kind);
    buf += payload;
    return FdPassing::send(sock, buf.data(), buf.size(), fds, n) == ssize_t(buf.size());
}

/// Handles one message of the host. False: the connection is to be closed.
bool handle(int sock, const char *data, size_t size, std::vector<int> &fds)
{
    if (size == 0)
        return false;
    const char kind = data[0];
    ++data;
    --size;
    switch (kind) {
    case 'H':
        for (const Held &h : g_held) {
            const int n = h.fds[1] >= 0 ? 2 : 1;
            if (!sendMessage(sock, 'S', h.meta, h.fds, n))
                return false;
        }
        if (g_hostLostMs > 0 && !sendMessage(sock, 'L', std::to_string(g_hostLostMs), nullptr, 0))
            return false;
        return sendMessage(sock, 'E', std::to_string(::getpid()), nullptr, 0);
    case 'A': {
        if (fds.empty() || fds.size() > 2)
            return true; // nothing to hold; the fds are closed by the caller
        const std::string id = idOf(data, size);
        if (id.empty())
            return true;
        drop(id);
        Held h;
        h.id = id;
        h.meta.assign(data, size);
        h.fds[0] = fds[0];
        h.fds[1] = fds.size() > 1 ? fds[1] : -1;
        fds.clear(); // ours now
        g_held.push_back(std::move(h));
        return true;
    }
    case 'M':
        if (Held *h = find(idOf(data, size)))
            h->meta.assign(data, size);
        return true;
    case 'D':
        drop(std::string(data, size));
        return true;
    case 'Q':
        finish(0);
    default:
        return true; // unknown: ignored (a newer host)
    }
}

/// Reads and handles one message from the host. False: it is gone (or broke
/// the protocol) and its connection is to be closed.
bool readHost(int sock)
{
    static char buf[kMaxMessage];
    std::vector<int> fds;
    int flags = 0;
    const ssize_t n = FdPassing::receive(sock, buf, sizeof buf, &fds, &flags);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return true;
    bool keep = n > 0;
    if (keep && (flags & (MSG_TRUNC | MSG_CTRUNC))) {
        say("a message from the host was too long; ignored");
    } else if (keep) {
        keep = handle(sock, buf, size_t(n), fds);
    }
    for (const int fd : fds) // whatever was not taken
        ::close(fd);
    return keep;
}

int parseFd(const char *text, const char **end)
{
    char *e = nullptr;
    errno = 0;
    const long v = std::strtol(text, &e, 10);
    if (errno != 0 || e == text || v < 0 || v > 1 << 20)
        return -1;
    *end = e;
    return int(v);
}

} // namespace

int keeperMain(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const char *fdsText = ::getenv(kFdsEnv);
    const char *socketPath = ::getenv(kSocketEnv);
    int listenFd = -1, lockFd = -1;
    if (fdsText && socketPath && *socketPath) {
        const char *p = fdsText;
        listenFd = parseFd(p, &p);
        if (listenFd >= 0 && *p == ':')
            lockFd = parseFd(p + 1, &p);
    }
    if (listenFd < 0 || lockFd < 0 || ::fcntl(listenFd, F_GETFD) < 0 || ::fcntl(lockFd, F_GETFD) < 0) {
        std::fputs("tether keeper: internal command, started by `tether serve` (it holds the sessions' terminals "
                   "so that they survive a crash of Tether); not to be run by hand\n",
                   stderr);
        return 2;
    }
    const std::string socketFile = socketPath;
    // Nothing but what it holds: descriptors the host inherited without
    // close-on-exec (from whatever started it) are not the keeper's.
    if (DIR *d = ::opendir("/proc/self/fd")) {
        std::vector<int> stray;
        while (const struct dirent *e = ::readdir(d)) {
            const int fd = std::atoi(e->d_name);
            if (e->d_name[0] != '.' && fd > STDERR_FILENO && fd != listenFd && fd != lockFd && fd != ::dirfd(d))
                stray.push_back(fd);
        }
        ::closedir(d);
        for (const int fd : stray)
            ::close(fd);
    }
    ::unsetenv(kFdsEnv);
    ::unsetenv(kSocketEnv);
    ::fcntl(listenFd, F_SETFD, FD_CLOEXEC);
    ::fcntl(lockFd, F_SETFD, FD_CLOEXEC);
    ::fcntl(listenFd, F_SETFL, ::fcntl(listenFd, F_GETFL) | O_NONBLOCK);
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGHUP, SIG_IGN);
    std::signal(SIGINT, SIG_IGN);
    const int ignored = ::chdir("/");
    (void)ignored;
    // Two descriptors a session: room for every session a host may hold.
    struct rlimit rl;
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &rl);
    }
    // The socket file gone (its directory removed, a stale-file cleanup):
    // no host can reach us again, so nothing we hold can be adopted.
    const size_t slash = socketFile.rfind('/');
    const std::string dir = slash == std::string::npos ? std::string(".") : socketFile.substr(0, slash);
    const std::string base = slash == std::string::npos ? socketFile : socketFile.substr(slash + 1);
    const int watch = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (watch >= 0
        && ::inotify_add_watch(watch, dir.c_str(), IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
        ::close(watch);
        say("cannot watch the runtime directory; going on without");
    }

    int host = -1;
    bool hadHost = false;
    for (;;) {
        struct pollfd p[3] = {{listenFd, POLLIN, 0}, {watch, POLLIN, 0}, {host, POLLIN, 0}};
        const int r = ::poll(p, 3, hadHost ? -1 : kFirstHostMs);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            say(std::strerror(errno));
            finish(1);
        }
        if (r == 0 && g_held.empty()) // no host ever came
            finish(0);
        if (p[1].revents) {
            alignas(struct inotify_event) char ev[4096];
            const ssize_t n = ::read(watch, ev, sizeof ev);
            for (ssize_t at = 0; at < n;) {
                const auto *e = reinterpret_cast<const struct inotify_event *>(ev + at);
                if ((e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
                    || (e->len > 0 && base == e->name)) {
                    say("its socket was removed; ending (the sessions it held are closed)");
                    finish(0);
                }
                at += ssize_t(sizeof(struct inotify_event) + e->len);
            }
        }
        if (p[2].revents) {
            if (!readHost(host)) {
                ::close(host);
                host = -1;
                g_hostLostMs = wallClockMs();
                if (g_held.empty())
                    finish(0);
            }
        }
        if (p[0].revents) {
            const int c = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
            if (c >= 0) {
                // The newest connection is the host (a restart in place, or
                // the next `tether serve` after a crash): one at a time.
                if (host >= 0) {
                    ::close(host);
                    g_hostLostMs = wallClockMs();
                }
                host = c;
                hadHost = true;
                struct timeval tv = {kSendTimeoutMs / 1000, (kSendTimeoutMs % 1000) * 1000};
                ::setsockopt(host, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
            }
        }
    }
}

} // namespace Tether::Keeper
