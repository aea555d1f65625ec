// SPDX-License-Identifier: GPL-2.0-or-later
// Spawning a child in a new PTY: the steps of PtyProcess::start() (ptyspawn.h).
//
// Spawn is done by hand (not forkpty(3)) so that exec/chdir failures can be
// reported to the caller through a close-on-exec pipe, and so that the child
// only runs async-signal-safe code between fork and exec: everything it needs
// (argv, envp, candidate paths, cwd) is prepared before fork.
#include "ptyspawn.h"
#include "childreaper.h"
#include "fdlimit.h"
#include "fdutil.h"
#include "logging.h"
#include "ptyprocess.h"

#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace Tether {

namespace {

QString errnoText(int err)
{
    return QString::fromLocal8Bit(std::strerror(err));
}

/// First line of a /proc/sys file (e.g. "4096"), "?" when unreadable.
QString procSysValue(const char *path)
{
    QFile f(QString::fromLatin1(path));
    if (!f.open(QIODevice::ReadOnly))
        return QStringLiteral("?");
    const QByteArray v = f.readLine().trimmed();
    return v.isEmpty() ? QStringLiteral("?") : QString::fromLatin1(v);
}

} // namespace

// ---------------------------------------------------------------------------
// Child side. Only async-signal-safe calls (signal-safety(7)) from here to exec.

/// Everything the child needs, prepared before fork().
struct ChildPlan {
    int slave = -1;
    int errorFd = -1;
    long maxFd = 1024;                  ///< fallback close loop bound (RLIMIT_NOFILE)
    /// The descriptor limit the program gets (FdLimit::childSoftLimit()):
    /// Tether's own soft limit is raised, programs using select(2) need the
    /// one Tether started with. Applied only when lowerNofile.
    struct rlimit nofile = {};
    bool lowerNofile = false;
    const char *cwd = nullptr;
    char *const *argv = nullptr;        ///< argv as exec'd (argv[0] may be "-bash")
    char *const *envp = nullptr;
    const char *const *candidates = nullptr; ///< paths to try, execvp(3) order
    char **shArgv = nullptr;            ///< {"/bin/sh", <slot for path>, argv[1..], 0}
    struct sigaction defaultAction;
    sigset_t emptyMask;
};

namespace {

enum ChildStep : int { StepSetsid = 1, StepCtty, StepDup, StepChdir, StepExec };

struct ChildError {
    int step;
    int err;
};

[[noreturn]] void childFail(int fd, int step, int err)
{
    const ChildError e{step, err};
    ssize_t r;
    do
        r = ::write(fd, &e, sizeof e);
    while (r < 0 && errno == EINTR);
    ::_exit(127);
}

/// Resets every signal disposition to the default and empties the mask.
void resetSignals(const ChildPlan &p)
{
    // Dispositions first, then the mask: the parent blocked every signal
    // around fork(), so none of its handlers can run here (they might write to
    // Qt's self-pipes, which this child shares). Ignored dispositions and the
    // mask survive exec; a shell started with SIGPIPE ignored breaks pipelines.
    for (int s = 1; s < NSIG; ++s) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        if (::sigaction(s, &p.defaultAction, nullptr) < 0) {
            // glibc refuses its reserved signals (32, 33: SIGCANCEL, SIGSETXID)
            // with EINVAL, yet they can arrive ignored: GNU make 4.3 starts its
            // recipes that way, and ignored dispositions survive exec, so
            // every shell started under `make run` had them ignored. The
            // kernel's struct sigaction with SIG_DFL (= 0), no flags and an
            // empty mask is all zeros whatever the architecture's layout.
            unsigned long kernelDefault[4] = {0, 0, 0, 0};
            ::syscall(SYS_rt_sigaction, s, kernelDefault, nullptr, 8 /* kernel sigset: 64 bits */);
        }
    }
    ::sigprocmask(SIG_SETMASK, &p.emptyMask, nullptr);
}

/// Starts a new session with the slave as controlling terminal and stdio.
void takeTerminal(const ChildPlan &p)
{
    if (::setsid() < 0)
        childFail(p.errorFd, StepSetsid, errno);
    if (::ioctl(p.slave, TIOCSCTTY, 0) < 0)
        childFail(p.errorFd, StepCtty, errno);
    for (int fd = 0; fd <= 2; ++fd) {
        if (fd == p.slave) {
            ::fcntl(fd, F_SETFD, 0); // keep it across exec
        } else if (::dup2(p.slave, fd) < 0) {
            childFail(p.errorFd, StepDup, errno);
        }
    }
    if (p.slave > 2)
        ::close(p.slave);
}

/// Closes every fd >= 3 but the report pipe.
void closeInheritedFds(const ChildPlan &p)
{
    // Close every fd >= 3 except the error pipe (close-on-exec: it closes at
    // exec and tells the parent exec worked). Inherited fds without O_CLOEXEC
    // would otherwise leak into the shell and every program it starts.
    bool closed = false;
#ifdef SYS_close_range
    closed = (p.errorFd == 3 || ::syscall(SYS_close_range, 3u, unsigned(p.errorFd - 1), 0u) == 0)
            && ::syscall(SYS_close_range, unsigned(p.errorFd + 1), ~0u, 0u) == 0;
#endif
    if (!closed) {
        for (long fd = 3; fd < p.maxFd; ++fd) {
            if (fd != p.errorFd)
                ::close(int(fd));
        }
    }
}

/// Execs the first candidate that runs; reports the failure if none does.
[[noreturn]] void execCandidates(const ChildPlan &p)
{
    // execvp(3) semantics without its non-async-signal-safe PATH handling:
    // try each candidate; EACCES is remembered, "not there" errors go on to
    // the next, anything else stops. ENOEXEC (no #! line) runs it with /bin/sh.
    bool sawEacces = false;
    int lastErr = ENOENT;
    for (const char *const *c = p.candidates; *c; ++c) {
        ::execve(*c, p.argv, p.envp);
        int err = errno;
        if (err == ENOEXEC) {
            p.shArgv[1] = const_cast<char *>(*c);
            ::execve("/bin/sh", p.shArgv, p.envp);
            err = errno;
        }
        if (err == EACCES) {
            sawEacces = true;
        } else if (err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV
                   || err == ETIMEDOUT) {
            lastErr = err;
        } else {
            childFail(p.errorFd, StepExec, err);
        }
    }
    childFail(p.errorFd, StepExec, sawEacces ? EACCES : lastErr);
}

/// The child between fork() and exec: never returns.
[[noreturn]] void runChild(const ChildPlan &p)
{
    resetSignals(p);
    takeTerminal(p);
    closeInheritedFds(p);
    if (p.lowerNofile)
        ::setrlimit(RLIMIT_NOFILE, &p.nofile); // lowering the soft limit cannot fail
    if (p.cwd && *p.cwd && ::chdir(p.cwd) < 0)
        childFail(p.errorFd, StepChdir, errno);
    execCandidates(p);
}

// ---------------------------------------------------------------------------
// Parent side.

/// Reaps a child that reported a setup failure and is in _exit(127), so that
/// start() returns with no zombie left. Waits for its pidfd with poll(2),
/// bounded (the child has nothing left to do but exit), then waitpid(WNOHANG);
/// should that still find it running, the reaper takes over.
void reapFailedChild(pid_t pid)
{
    int pidfd = moveAbove2(pidfdOpen(pid));
    if (pidfd >= 0) {
        struct pollfd pfd = {pidfd, POLLIN, 0};
        int rc;
        do
            rc = ::poll(&pfd, 1, 1000);
        while (rc < 0 && errno == EINTR);
    }
    int status;
    pid_t r;
    do
        r = ::waitpid(pid, &status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == pid || (r < 0 && errno == ECHILD)) {
        if (pidfd >= 0)
            ::close(pidfd);
        return;
    }
    qCWarning(lcPty) << "failed child" << pid << "still running after 1 s; reaping it later";
    ChildReaper::adopt(pid, pidfd);
}

/// Replaces the NAME=... entry of `env` (or appends one).
void setEnv(QList<QByteArray> &env, const QByteArray &entry)
{
    const int eq = entry.indexOf('=');
    const QByteArray prefix = entry.left(eq + 1);
    for (QByteArray &e : env) {
        if (e.startsWith(prefix)) {
            e = entry;
            return;
        }
    }
    env.append(entry);
}

QByteArray envValue(const QList<QByteArray> &env, const QByteArray &name)
{
    const QByteArray prefix = name + '=';
    for (const QByteArray &e : env) {
        if (e.startsWith(prefix))
            return e.mid(prefix.size());
    }
    return QByteArray();
}

/// A failure the child reported (`got` bytes of `ce` arrived; a partial
/// report has no errno).
StartError childError(const ChildError &ce, size_t got, const SpawnOptions &options)
{
    if (got != sizeof ce)
        return {QStringLiteral("cannot start %1: child setup failed").arg(options.argv.first())};
    const QString why = errnoText(ce.err);
    switch (ce.step) {
    case StepChdir:
        return {QStringLiteral("cannot change directory to %1: %2").arg(options.cwd, why), ce.err};
    case StepExec:
        return {QStringLiteral("cannot execute %1: %2").arg(options.argv.first(), why), ce.err};
    case StepSetsid:
        return {QStringLiteral("cannot start a new session (setsid): %1").arg(why), ce.err};
    case StepCtty:
        return {QStringLiteral("cannot set the controlling terminal (TIOCSCTTY): %1").arg(why), ce.err};
    default:
        return {QStringLiteral("cannot set up the terminal (dup2): %1").arg(why), ce.err};
    }
}

/// Waits on the read end of the report pipe until the child reached exec
/// (the pipe closes: EOF) or reported a failure into *ce. Returns the bytes
/// of the report received: 0 when exec worked.
size_t readChildReport(int fd, ChildError *ce)
{
    size_t got = 0;
    while (got < sizeof *ce) {
        const ssize_t n = ::read(fd, reinterpret_cast<char *>(ce) + got, sizeof *ce - got);
        if (n > 0)
            got += size_t(n);
        else if (n < 0 && errno == EINTR)
            continue;
        else
            break;
    }
    return got;
}

} // namespace

bool isResourceShortage(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOSPC || err == EAGAIN || err == ENOMEM;
}

QString resourceHint(int err)
{
    switch (err) {
    case EMFILE: {
        struct rlimit rl;
        const QString soft = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 ? QString::number(qulonglong(rl.rlim_cur))
                                                                  : QStringLiteral("?");
        return QStringLiteral("Tether's descriptor limit is reached: RLIMIT_NOFILE %1; raise the hard limit, "
                              "e.g. LimitNOFILE= in a systemd unit")
            .arg(soft);
    }
    case ENFILE:
        return QStringLiteral("the system-wide limit on open files is reached: fs.file-max = %1 in "
                              "/proc/sys/fs/file-max")
            .arg(procSysValue("/proc/sys/fs/file-max"));
    case ENOSPC:
        return QStringLiteral("every pseudo-terminal is in use: the kernel allows %1 in /proc/sys/kernel/pty/max, "
                              "%2 fewer in a container per /proc/sys/kernel/pty/reserve, or the max= option of the "
                              "devpts mount; %3 are open per /proc/sys/kernel/pty/nr")
            .arg(procSysValue("/proc/sys/kernel/pty/max"), procSysValue("/proc/sys/kernel/pty/reserve"),
                 procSysValue("/proc/sys/kernel/pty/nr"));
    case EAGAIN:
        return QStringLiteral("the limit on processes is reached: RLIMIT_NPROC, kernel.pid_max, "
                              "kernel.threads-max or the cgroup's pids.max");
    case ENOMEM:
        return QStringLiteral("out of memory");
    default:
        return QString();
    }
}

void ensureChildrenWaitable()
{
    struct sigaction sa;
    if (::sigaction(SIGCHLD, nullptr, &sa) < 0)
        return;
    const bool ignored = !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN;
    if (!ignored && !(sa.sa_flags & SA_NOCLDWAIT))
        return;
    if (ignored) {
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0;
    } else {
        sa.sa_flags &= ~SA_NOCLDWAIT;
    }
    ::sigaction(SIGCHLD, &sa, nullptr);
    qCWarning(lcPty) << "SIGCHLD was" << (ignored ? "ignored" : "set to SA_NOCLDWAIT")
                     << "(inherited): restored, or no exit status could be read";
}

// ---------------------------------------------------------------------------
// start() in steps: the exec arguments, the PTY, the child, the parent's side.

ExecArgs::ExecArgs(const SpawnOptions &options)
{
    const QByteArray program = QFile::encodeName(options.argv.first());
    for (const QString &a : options.argv)
        m_args.append(QFile::encodeName(a));
    if (options.loginShell)
        m_args[0] = '-' + QFile::encodeName(QFileInfo(options.argv.first()).fileName());

    for (char **e = environ; e && *e; ++e) {
        const QByteArray entry(*e);
        // Stale LINES/COLUMNS override the window size in ncurses programs.
        if (entry.startsWith("LINES=") || entry.startsWith("COLUMNS="))
            continue;
        // The terminal Tether was started in is not the session's terminal
        // (kOuterTerminalVariables).
        const QByteArray name = entry.left(entry.indexOf('='));
        if (std::find(std::begin(kOuterTerminalVariables), std::end(kOuterTerminalVariables), name)
            != std::end(kOuterTerminalVariables))
            continue;
        m_env.append(entry);
    }
    setEnv(m_env, QByteArrayLiteral("TERM=xterm-256color"));
    setEnv(m_env, QByteArrayLiteral("COLORTERM=truecolor"));
    for (const QString &extra : options.extraEnv) {
        const QByteArray entry = extra.toLocal8Bit();
        if (entry.indexOf('=') <= 0) {
            qCWarning(lcPty) << "ignoring malformed environment entry (no NAME=)";
            continue;
        }
        setEnv(m_env, entry);
    }

    if (program.contains('/')) {
        m_candidates.append(program);
    } else {
        QByteArray path = envValue(m_env, "PATH");
        if (path.isEmpty())
            path = "/usr/local/bin:/usr/bin:/bin";
        for (const QByteArray &dir : path.split(':'))
            m_candidates.append((dir.isEmpty() ? QByteArray(".") : dir) + '/' + program);
    }
    m_cwd = QFile::encodeName(options.cwd);

    for (QByteArray &a : m_args)
        m_argvPtrs.push_back(a.data());
    m_argvPtrs.push_back(nullptr);
    for (QByteArray &e : m_env)
        m_envPtrs.push_back(e.data());
    m_envPtrs.push_back(nullptr);
    for (const QByteArray &c : std::as_const(m_candidates))
        m_candidatePtrs.push_back(c.constData());
    m_candidatePtrs.push_back(nullptr);
    static char shPath[] = "/bin/sh";
    m_shArgv = {shPath, nullptr};
    for (int i = 1; i < m_args.size(); ++i)
        m_shArgv.push_back(m_args[i].data());
    m_shArgv.push_back(nullptr);
}

void ExecArgs::fill(ChildPlan &plan)
{
    plan.cwd = m_cwd.constData();
    plan.argv = m_argvPtrs.data();
    plan.envp = m_envPtrs.data();
    plan.candidates = m_candidatePtrs.data();
    plan.shArgv = m_shArgv.data();
}

bool openPty(int cols, int rows, PtyPair *pty, StartError *error)
{
    int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (master < 0) {
        const int err = errno;
        *error = {QStringLiteral("cannot open a pseudo-terminal: %1").arg(errnoText(err)), err};
        return false;
    }
    master = moveAbove2(master);
    // posix_openpt passes the flags to open(2); set them again in case a libc
    // does not (O_NONBLOCK: the event loop must never block on the master).
    ::fcntl(master, F_SETFD, FD_CLOEXEC);
    ::fcntl(master, F_SETFL, ::fcntl(master, F_GETFL) | O_NONBLOCK);

    int slave = -1;
    if (::grantpt(master) == 0 && ::unlockpt(master) == 0) {
#ifdef TIOCGPTPEER
        // Opens the peer of this very master: no path lookup race (Linux >= 4.13).
        slave = ::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
#endif
        if (slave < 0) {
            char name[128];
            if (::ptsname_r(master, name, sizeof name) == 0)
                slave = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        }
    }
    if (slave < 0) {
        const int err = errno;
        ::close(master);
        *error = {QStringLiteral("cannot open the pseudo-terminal slave: %1").arg(errnoText(err)), err};
        return false;
    }
    slave = moveAbove2(slave);

    struct termios tio;
    if (::tcgetattr(slave, &tio) == 0) {
        // IUTF8: the line discipline erases whole UTF-8 characters on backspace.
        tio.c_iflag |= IUTF8;
        ::tcsetattr(slave, TCSANOW, &tio);
    }
    struct winsize ws = {};
    ws.ws_col = static_cast<unsigned short>(cols);
    ws.ws_row = static_cast<unsigned short>(rows);
    ::ioctl(master, TIOCSWINSZ, &ws);
    pty->master = master;
    pty->slave = slave;
    return true;
}

pid_t spawnChild(ExecArgs &exec, PtyPair *pty, const SpawnOptions &options, StartError *error)
{
    const auto giveUp = [pty, error](const QString &text, int err) {
        closeFd(pty->slave);
        closeFd(pty->master);
        *error = {text, err};
        return pid_t(-1);
    };
    int errPipe[2];
    if (::pipe2(errPipe, O_CLOEXEC) < 0) {
        const int err = errno;
        return giveUp(QStringLiteral("cannot create a pipe: %1").arg(errnoText(err)), err);
    }
    errPipe[0] = moveAbove2(errPipe[0]);
    errPipe[1] = moveAbove2(errPipe[1]);

    ChildPlan plan;
    plan.slave = pty->slave;
    plan.errorFd = errPipe[1];
    struct rlimit rl;
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur != RLIM_INFINITY)
            plan.maxFd = long(qMin<rlim_t>(rl.rlim_cur, 1 << 20));
        const rlim_t childSoft = FdLimit::childSoftLimit();
        if (childSoft < rl.rlim_cur) {
            plan.nofile.rlim_cur = childSoft;
            plan.nofile.rlim_max = rl.rlim_max;
            plan.lowerNofile = true;
        }
    }
    exec.fill(plan);
    std::memset(&plan.defaultAction, 0, sizeof plan.defaultAction);
    plan.defaultAction.sa_handler = SIG_DFL;
    sigemptyset(&plan.defaultAction.sa_mask);
    sigemptyset(&plan.emptyMask);

    // Block every signal across fork so no handler of ours runs in the child
    // before its dispositions are reset.
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    const pid_t pid = ::fork();
    if (pid == 0)
        runChild(plan);
    const int forkErr = errno;
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);

    closeFd(pty->slave);
    ::close(errPipe[1]);
    if (pid < 0) {
        ::close(errPipe[0]);
        return giveUp(QStringLiteral("cannot fork: %1").arg(errnoText(forkErr)), forkErr);
    }

    ChildError ce{0, 0};
    const size_t got = readChildReport(errPipe[0], &ce);
    ::close(errPipe[0]);
    if (got > 0) {
        closeFd(pty->master);
        reapFailedChild(pid);
        *error = childError(ce, got, options);
        return -1;
    }
    return pid;
}

} // namespace Tether
