// SPDX-License-Identifier: GPL-2.0-or-later
#include "restartinplace.h"
#include "hostlock.h"
#include "keeperlink.h"
#include "sharestore.h"
#include "commandline.h"
#include "fdlimit.h"
#include "fdutil.h"
#include "handover.h"
#include "logging.h"
#include "ptyprocess.h"
#include "registry.h"
#include "server.h"
#include "systemdnotify.h"
#include "upgradewatch.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>

#include <algorithm>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace Tether {

namespace {

QList<QByteArray> g_argv;
QString g_binary;
/// Whether this image's main() calls guardIfAsked(), i.e. whether it can
/// act as a guardian when run again (a test program linking this code
/// cannot: it would run its tests instead).
bool g_canGuard = false;

constexpr int kDrainPollMs = 10;
const char kBinaryOverrideEnv[] = "TETHER_RESTART_BINARY";
/// Guardian mode: "FD:PID", the read end of the guardian pipe and the pid of
/// the process image being guarded (set only for the guardian).
const char kGuardEnv[] = "TETHER_HANDOVER_GUARD";
/// For the new image: "FD:PID", the write end of the guardian pipe and the
/// guardian's pid (our child, to reap once it has stood down).
const char kGuardianEnv[] = "TETHER_HANDOVER_GUARDIAN";
/// For the image a guardian starts when it takes over: "PID" of the new
/// image that ended before it adopted the sessions, or "PID:MS" of one that
/// had not adopted them within MS milliseconds and was killed.
const char kTakeoverEnv[] = "TETHER_HANDOVER_TAKEOVER";
/// What the new image writes to the guardian pipe once it holds the sessions.
constexpr char kAdopted = 'A';
/// How long a guardian waits for the new image's word: a new image that has
/// not adopted the sessions by then (it hangs; or it is a Tether older than
/// the pipe, which never says it) is killed, and the guardian takes over.
constexpr long kGuardianPatienceMs = 60000;
/// Test hook, read by the guardian: its deadline in ms instead of
/// kGuardianPatienceMs (100 to 3,600,000; anything else is ignored).
const char kDeadlineEnv[] = "TETHER_RESTART_DEADLINE_MS";
/// How long a guardian waits for a new image it killed to be gone, ms.
constexpr int kKilledExitWaitMs = 10000;

QString errnoText(int err)
{
    return QString::fromLocal8Bit(std::strerror(err));
}

bool isExecutableFile(const QByteArray &path)
{
    struct stat st;
    return ::stat(path.constData(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.constData(), X_OK) == 0;
}

/// argv[0] resolved as execvp(3) would have found it when we were started.
QString resolveArgv0(const QByteArray &argv0)
{
    if (argv0.isEmpty())
        return QString();
    if (argv0.contains('/'))
        return QFileInfo(QFile::decodeName(argv0)).absoluteFilePath();
    QByteArray path = qgetenv("PATH");
    if (path.isEmpty())
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const QByteArray &dir : path.split(':')) {
        const QByteArray candidate = (dir.isEmpty() ? QByteArray(".") : dir) + '/' + argv0;
        if (isExecutableFile(candidate))
            return QFileInfo(QFile::decodeName(candidate)).absoluteFilePath();
    }
    return QString();
}

bool checkBinary(const QString &binary, QString *why)
{
    if (binary.isEmpty()) {
        *why = QStringLiteral("the binary this process was started from is not known");
        return false;
    }
    const QByteArray path = QFile::encodeName(binary);
    struct stat st;
    if (::stat(path.constData(), &st) != 0) {
        *why = QStringLiteral("%1: %2").arg(binary, errnoText(errno));
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        *why = QStringLiteral("%1: not a regular file").arg(binary);
        return false;
    }
    if (::access(path.constData(), X_OK) != 0) {
        *why = QStringLiteral("%1: %2").arg(binary, errnoText(errno));
        return false;
    }
    return true;
}

void setCloexec(const QList<int> &fds, bool on)
{
    for (const int fd : fds)
        ::fcntl(fd, F_SETFD, on ? FD_CLOEXEC : 0);
}

/// One line to stderr with write(2) only (the guardian runs before anything
/// else of the program exists).
void guardianSays(const char *text)
{
    char line[512];
    const int n = std::snprintf(line, sizeof line, "tether: restart guardian (pid %d): %s\n", int(::getpid()), text);
    if (n > 0) {
        const ssize_t ignored = ::write(STDERR_FILENO, line, size_t(qMin(n, int(sizeof line) - 1)));
        Q_UNUSED(ignored);
    }
}

/// Under systemd, tells the manager that `pid` is the unit's main process
/// and, with `ready`, that the reload is over (the guardian, Qt-free), and
/// waits until it has read that (a barrier, sd_notify_barrier(3), 5 s at
/// most) before the guardian may exit. A manager that still took the
/// exited guardian for the main process when it next looks would stop the
/// unit and kill every shell: systemd checks that a main process which is
/// not its child is alive (a zombie is not) whenever it re-evaluates the
/// service, e.g. when ExecReload='s process ends (systemd/systemd
/// src/core/service.c, main_pid_good() from service_enter_running()); seen
/// here about once in twenty reloads under load before the barrier. A full
/// queue (EAGAIN) is retried for a second. Without NOTIFY_SOCKET, nothing.
void guardianTellsManager(long pid, bool ready)
{
    const char *address = ::getenv(SystemdNotify::kSocketEnv);
    char state[64];
    const int n = std::snprintf(state, sizeof state, "MAINPID=%ld%s", pid, ready ? "\nREADY=1" : "");
    int err = EINVAL;
    for (int tries = 0; tries < 100; ++tries) {
        err = SystemdNotify::sendDatagram(address, state, size_t(n));
        if (err != EAGAIN)
            break;
        ::usleep(10000);
    }
    if (err == 0)
        err = SystemdNotify::barrier(address, 5000);
    if (err != 0 && err != EINVAL) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "cannot tell the service manager %s: %s", state, std::strerror(err));
        guardianSays(msg);
    }
}

/// The guardian's deadline, ms: kDeadlineEnv when set and in range, else
/// kGuardianPatienceMs.
long guardianPatienceMs()
{
    const char *text = ::getenv(kDeadlineEnv);
    if (!text || !*text)
        return kGuardianPatienceMs;
    char *end = nullptr;
    errno = 0;
    const long ms = std::strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || ms < 100 || ms > 3600000) {
        guardianSays("ignoring a malformed TETHER_RESTART_DEADLINE_MS (100 to 3600000 ms)");
        return kGuardianPatienceMs;
    }
    return ms;
}

long monotonicMs()
{
    struct timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return long(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

/// Kills the new image `pid` (SIGKILL: a process that hangs may not end on
/// anything milder, and nothing of its state is worth keeping: the sessions'
/// state is the one it was handed, which we hold too) and waits, at most
/// kKilledExitWaitMs, until it is gone, so that nothing of it still holds a
/// PTY master or reads one when our image adopts them. It is our parent
/// (it spawned us before its exec): a pid that is no longer our parent has
/// ended already, and may be another process by now: it is left alone.
/// `guardFd`: the pipe whose write end it holds, to wait on for its end
/// when the kernel has no pidfd_open(2) (Linux < 5.3).
void killHungImage(pid_t pid, int guardFd)
{
    // The pidfd first, then the check that it is still our parent: a pidfd
    // names one process for good, so the kill cannot reach a reused pid.
    const int pidfd = pidfdOpen(pid);
    if (::getppid() != pid) {
        if (pidfd >= 0)
            ::close(pidfd);
        return;
    }
    bool sent = false;
#ifdef SYS_pidfd_send_signal
    if (pidfd >= 0)
        sent = ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0;
#endif
    if (!sent)
        sent = ::kill(pid, SIGKILL) == 0;
    if (!sent) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "cannot kill the new image (pid %ld): %s", long(pid), std::strerror(errno));
        guardianSays(msg);
    }
    // A pidfd is readable once the process has ended; the pipe says so only
    // if nothing the new image started holds a copy of its end.
    struct pollfd p = {pidfd >= 0 ? pidfd : guardFd, POLLIN, 0};
    const long until = monotonicMs() + kKilledExitWaitMs;
    for (long left = kKilledExitWaitMs; sent && left > 0; left = until - monotonicMs()) {
        const int r = ::poll(&p, 1, int(left));
        if (r > 0 && pidfd < 0) {
            char c;
            if (::read(guardFd, &c, 1) > 0)
                continue; // a late word: it is being killed all the same
        }
        if (r >= 0 || errno != EINTR)
            break;
    }
    if (pidfd >= 0)
        ::close(pidfd);
}

/// Tells the service manager (systemd, NOTIFY_SOCKET) `state`; a failure is
/// logged, never fatal: Tether serves the same without a manager.
void tellManager(const QByteArray &state)
{
    QString why;
    if (!SystemdNotify::notify(state, &why))
        qCWarning(lcServer).noquote() << "cannot tell the service manager" << QByteArray(state).replace('\n', ' ') << why;
}

/// Tells a guardian that the sessions are held (by the new image, or still
/// by us after a failed exec) and hands it to the reaper: it is our child.
void releaseGuardian(int fd, pid_t pid)
{
    if (fd >= 0) {
        const char c = kAdopted;
        const ssize_t ignored = ::write(fd, &c, 1);
        Q_UNUSED(ignored);
        ::close(fd);
    }
    if (pid > 0)
        reapChildLater(pid);
}

} // namespace

void RestartInPlace::recordStartup(int argc, char **argv)
{
    g_argv.clear();
    for (int i = 0; i < argc && argv && argv[i]; ++i)
        g_argv.append(QByteArray(argv[i]));
    g_binary = resolveArgv0(g_argv.value(0));
}

void RestartInPlace::guardIfAsked(char **argv)
{
    g_canGuard = true;
    const char *guard = ::getenv(kGuardEnv);
    if (!guard)
        return;
    int fd = -1;
    long guarded = 0;
    if (std::sscanf(guard, "%d:%ld", &fd, &guarded) != 2 || fd < 0 || ::fcntl(fd, F_GETFD) < 0) {
        // Nothing to guard with: the sessions are the new image's alone.
        guardianSays("malformed TETHER_HANDOVER_GUARD; not guarding");
        ::_exit(1);
    }
    ::unsetenv(kGuardEnv);
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    // The stderr we share may be a pipe whose reader went with the process
    // that died: a message must not kill us. (The next image ignores it too,
    // SignalPipe; sessions' children get the default back.)
    std::signal(SIGPIPE, SIG_IGN);
    char msg[200];
    const long patienceMs = guardianPatienceMs();
    const long deadline = monotonicMs() + patienceMs;
    bool hung = false;
    for (;;) {
        const long left = deadline - monotonicMs();
        if (left <= 0) {
            hung = true;
            break;
        }
        struct pollfd p = {fd, POLLIN, 0};
        const int r = ::poll(&p, 1, int(left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue; // the deadline, checked above
        char c = 0;
        const ssize_t n = r > 0 ? ::read(fd, &c, 1) : -1;
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 1 && c == kAdopted) {
            // The sessions are held (by the new image, or by the old one
            // after a failed exec; the same pid): under systemd it is the
            // main process again. Said by us, the main process until now, so
            // that even NotifyAccess=main would take it; the image says
            // READY=1 itself once it serves. We are its child: systemd does
            // not see us exit.
            guardianTellsManager(guarded, false);
            ::_exit(0);
        }
        break;          // the other end closed without the word: it died
    }
    char takeover[48];
    if (hung) {
        // A new image that has not adopted the sessions by now is taken to
        // be hung (or a Tether older than this pipe, which never says it):
        // while it lives it holds the listening socket without accepting,
        // so nothing is answered, and the sessions end with it. It goes;
        // we hold every master and the state, and carry on.
        std::snprintf(msg, sizeof msg,
                      "the new image (pid %ld) has not adopted the sessions within %g s; killing it and taking "
                      "them over with the previous binary", guarded, double(patienceMs) / 1000.0);
        guardianSays(msg);
        killHungImage(pid_t(guarded), fd);
        std::snprintf(takeover, sizeof takeover, "%ld:%ld", guarded, patienceMs);
    } else {
        std::snprintf(msg, sizeof msg,
                      "the new image (pid %ld) ended before it adopted the sessions; taking them over "
                      "with the previous binary", guarded);
        guardianSays(msg);
        std::snprintf(takeover, sizeof takeover, "%ld", guarded);
    }
    ::close(fd);
    ::setenv(kTakeoverEnv, takeover, 1);
    // Our own image is the previous binary (we were exec'd from it), even
    // when an upgrade has deleted or replaced its file since.
    ::execv("/proc/self/exe", argv);
    std::snprintf(msg, sizeof msg, "cannot run the previous binary again: %s; the sessions end",
                  std::strerror(errno));
    guardianSays(msg);
    ::_exit(1);
}

QString RestartInPlace::startupBinary()
{
    return g_binary;
}

QString RestartInPlace::binary()
{
    const QByteArray overridden = qgetenv(kBinaryOverrideEnv);
    return overridden.isEmpty() ? g_binary : QFile::decodeName(overridden);
}

RestartInPlace::RestartInPlace(SessionRegistry *registry, Server *server, QObject *parent)
    : QObject(parent)
    , m_registry(registry)
    , m_server(server)
{
    m_instance = QString::number(QRandomGenerator::system()->generate64(), 16);
    m_drainTimer.setInterval(kDrainPollMs);
    connect(&m_drainTimer, &QTimer::timeout, this, &RestartInPlace::drainStep);
    if (server) {
        Server::RestartHooks hooks;
        hooks.request = [this](QString *why) { return request(why); };
        hooks.status = [this]() { return status(); };
        server->setRestartHooks(hooks);
        connect(this, &RestartInPlace::statusChanged, server, &Server::sendServerEvent);
    }
    m_upgrades = new UpgradeWatch([]() { return binary(); }, this);
    connect(m_upgrades, &UpgradeWatch::updateChanged, this, &RestartInPlace::statusChanged);
    if (!g_binary.isEmpty()) {
        QString why;
        if (!m_upgrades->start(&why))
            qCInfo(lcServer).noquote() << "upgrades will not be noticed:" << why;
    }
}

RestartInPlace::~RestartInPlace()
{
    if (m_server)
        m_server->setRestartHooks(Server::RestartHooks());
}

QJsonObject RestartInPlace::status() const
{
    QJsonObject o;
    o.insert(QStringLiteral("version"), version());
    o.insert(QStringLiteral("update"), m_upgrades->updateJson());
    o.insert(QStringLiteral("pid"), qint64(::getpid()));
    o.insert(QStringLiteral("binary"), binary());
    o.insert(QStringLiteral("instance"), m_instance);
    o.insert(QStringLiteral("restarts"), qint64(m_restarts));
    o.insert(QStringLiteral("restarting"), m_restarting);
    o.insert(QStringLiteral("last_error"), m_lastError.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(m_lastError));
    o.insert(QStringLiteral("recovered_after_crash"), m_recovered);
    o.insert(QStringLiteral("crashed_at"),
             m_recovered > 0 && m_crashedAtMs > 0
                 ? QJsonValue(QDateTime::fromMSecsSinceEpoch(m_crashedAtMs).toUTC().toString(Qt::ISODate))
                 : QJsonValue(QJsonValue::Null));
    const qint64 keeper = m_keeper ? m_keeper->keeperPid() : 0;
    o.insert(QStringLiteral("keeper_pid"), keeper > 0 ? QJsonValue(keeper) : QJsonValue(QJsonValue::Null));
    return o;
}

void RestartInPlace::setKeeper(KeeperLink *keeper)
{
    if (m_keeper)
        disconnect(m_keeper, nullptr, this, nullptr);
    m_keeper = keeper;
    if (keeper)
        connect(keeper, &KeeperLink::keeperChanged, this, &RestartInPlace::statusChanged);
}

bool RestartInPlace::check(QString *why) const
{
    QString reason;
    bool ok = true;
    if (m_restarting) {
        reason = QStringLiteral("a restart is already in progress");
        ok = false;
    } else if (!m_registry || !m_server) {
        reason = QStringLiteral("no server to restart");
        ok = false;
    } else if (m_registry->isShuttingDown()) {
        reason = QStringLiteral("the server is shutting down");
        ok = false;
    } else {
        ok = checkBinary(binary(), &reason);
    }
    if (why)
        *why = reason;
    return ok;
}

bool RestartInPlace::request(QString *why)
{
    QString reason;
    if (!check(&reason)) {
        if (why)
            *why = reason;
        if (!m_restarting)
            m_lastError = reason;
        qCWarning(lcServer).noquote() << "cannot restart in place:" << reason;
        return false;
    }
    m_restarting = true;
    m_lastError.clear();
    qCInfo(lcServer).noquote() << "restart in place requested:" << binary();
    // systemd shows the unit "reloading" until the image that then holds
    // the sessions says READY=1 (sd_notify(3)).
    tellManager("RELOADING=1\n" + SystemdNotify::monotonicUsec());
    // On the next pass, so that the caller's answer (202) is queued first.
    QTimer::singleShot(0, this, [this]() {
        if (!m_server || !m_registry) {
            fail(QStringLiteral("no server to restart"));
            return;
        }
        m_server->beginRestart();
        m_drainClock.start();
        m_drainTimer.start();
    });
    return true;
}

void RestartInPlace::drainStep()
{
    if (!m_server) {
        fail(QStringLiteral("no server to restart"));
        return;
    }
    // Close frames, the 202 and event streams' ends must reach the kernel
    // (and better the peers) before the exec closes the descriptors.
    if (!m_server->isQuiet() && !m_drainClock.hasExpired(m_drainTimeoutMs))
        return;
    if (!m_server->isQuiet())
        qCInfo(lcServer) << "restart: connections still open after" << m_drainTimeoutMs << "ms; going on";
    m_drainTimer.stop();
    execNow();
}

void RestartInPlace::fail(const QString &why)
{
    m_drainTimer.stop();
    m_restarting = false;
    m_lastError = why;
    qCWarning(lcServer).noquote() << "restart in place failed, carrying on:" << why;
    if (m_server)
        m_server->cancelRestart();
    tellManager("READY=1"); // the reload is over: this image carries on
    Q_EMIT failed(why);
    Q_EMIT statusChanged(); // last_error, for open dashboards
}

void RestartInPlace::execNow()
{
    Q_EMIT aboutToExec();
    if (!m_server || !m_registry) {
        fail(QStringLiteral("no server to restart"));
        return;
    }
    const QString bin = binary();
    QString why;
    if (m_registry->isShuttingDown()) { // SIGTERM during the drain wins
        fail(QStringLiteral("the server is shutting down"));
        return;
    }
    if (!checkBinary(bin, &why)) { // it may have gone during the drain
        fail(why);
        return;
    }

    Handover::State state = m_registry->handover();
    state.key = m_server->accessKey();
    // Read-only links go with their sessions (open share viewers reconnect
    // with their cookies and resume, as every viewer does).
    for (Handover::SessionRecord &r : state.sessions)
        r.shares = r.dying ? QList<Handover::ShareRecord>() : m_server->shares()->records(r.id);
    state.listenFd = m_server->listeningSocketDescriptor();
    // The next image serves these if it cannot read the files (issue 10).
    state.tlsCertificatePem = m_server->tlsCertificatePem();
    state.tlsKeyPem = m_server->tlsKeyPem();
    state.restarts = m_restarts + 1;
    // A `--version` probe of a new binary still running would be our child
    // unknown to the next image: killed, and handed over to be reaped.
    if (const pid_t probe = m_upgrades->abandonProbe())
        state.reap.append(probe);
    const int memfd = Handover::writeMemfd(state, &why);
    if (memfd < 0) {
        fail(why);
        return;
    }

    // The fds the next image keeps: everything else is close-on-exec.
    QList<int> kept{memfd};
    if (state.listenFd >= 0)
        kept.append(state.listenFd);
    // The single-host lock (HostLock): held without a gap by the next image.
    const int lockFd = m_hostLock && m_hostLock->isHeld() ? m_hostLock->fd() : -1;
    if (lockFd >= 0)
        kept.append(lockFd);
    for (const Handover::SessionRecord &r : std::as_const(state.sessions)) {
        if (r.pty.masterFd >= 0)
            kept.append(r.pty.masterFd);
        if (r.pty.pidfd >= 0)
            kept.append(r.pty.pidfd);
    }

    QList<QByteArray> env;
    const QList<QByteArray> ours{QByteArray(Handover::kStateEnv) + '=', QByteArray(Handover::kFdsEnv) + '=',
                                 QByteArray(Handover::kListenEnv) + '=', QByteArray(FdLimit::kOriginalSoftEnv) + '=',
                                 QByteArray(kGuardEnv) + '=', QByteArray(kGuardianEnv) + '=',
                                 QByteArray(kTakeoverEnv) + '=', QByteArray(HostLock::kHandoverEnv) + '='};
    for (char **e = environ; e && *e; ++e) {
        const QByteArray entry(*e);
        if (!std::any_of(ours.begin(), ours.end(), [&](const QByteArray &p) { return entry.startsWith(p); }))
            env.append(entry);
    }
    env.append(ours.at(0) + QByteArray::number(memfd));
    env.append(ours.at(1) + Handover::fdList(state));
    if (state.listenFd >= 0)
        env.append(ours.at(2) + QByteArray::number(state.listenFd));
    if (lockFd >= 0)
        env.append(QByteArray(HostLock::kHandoverEnv) + '=' + QByteArray::number(lockFd));
    // execve keeps our raised descriptor limit: the next image must still
    // give the sessions the one we were started with.
    env.append(FdLimit::handoverEnvEntry());
    // The service manager's socket, taken out of our environment at start
    // (the shells must not see it), for the next image and the guardian.
    const QByteArray notifyEntry = SystemdNotify::environmentEntry();
    if (!notifyEntry.isEmpty()) {
        env.erase(std::remove_if(env.begin(), env.end(),
                                 [](const QByteArray &e) { return e.startsWith(QByteArray(SystemdNotify::kSocketEnv) + '='); }),
                  env.end());
        env.append(notifyEntry);
    }
    QList<QByteArray> args = g_argv;
    if (args.isEmpty())
        args.append(QFile::encodeName(bin));
    std::vector<char *> argv;
    for (QByteArray &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    const QByteArray path = QFile::encodeName(bin);
    // The guardian's pipe: the new image holds the write end across the
    // exec, the guardian the read end.
    int guardPipe[2] = {-1, -1};
    if (g_canGuard && ::pipe2(guardPipe, O_CLOEXEC) != 0)
        qCWarning(lcServer).noquote() << "restarting without a guardian: pipe2:" << errnoText(errno);
    QByteArray guardEntry = QByteArray(kGuardEnv) + '=' + QByteArray::number(guardPipe[0]) + ':'
        + QByteArray::number(::getpid());
    std::vector<char *> envp;
    for (QByteArray &e : env)
        envp.push_back(e.data());
    envp.push_back(guardEntry.data());
    envp.push_back(nullptr);

    qCInfo(lcServer).noquote() << "restarting in place:" << bin << "with" << state.sessions.size() << "sessions";
    setCloexec(kept, false);
    // Blocked signals stay blocked across execve and pending ones stay
    // pending: one sent during the swap reaches the next image's handler
    // (SignalPipe unblocks them) instead of killing us by its default action.
    sigset_t block, old;
    sigemptyset(&block);
    for (const int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR2})
        sigaddset(&block, s);
    ::pthread_sigmask(SIG_BLOCK, &block, &old);
    std::fflush(nullptr);

    // The guardian: our image again (/proc/self/exe, which names it even
    // when an upgrade replaced its file), in guardian mode, holding every fd
    // the new image gets (they are inheritable now) and the pipe's read end.
    // posix_spawn: nothing of ours runs in the child before its exec, and
    // it inherits the blocked signals. Failing that, the restart goes on
    // unguarded, as before guardians existed.
    pid_t guardian = 0;
    QByteArray guardianEntry;
    if (guardPipe[0] >= 0) {
        ::fcntl(guardPipe[0], F_SETFD, 0);
        const int rc = ::posix_spawn(&guardian, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data());
        ::close(guardPipe[0]);
        if (rc != 0) {
            guardian = 0;
            ::close(guardPipe[1]);
            guardPipe[1] = -1;
            qCWarning(lcServer).noquote() << "restarting without a guardian: posix_spawn:" << errnoText(rc);
        } else {
            ::fcntl(guardPipe[1], F_SETFD, 0);
            guardianEntry = QByteArray(kGuardianEnv) + '=' + QByteArray::number(guardPipe[1]) + ':'
                + QByteArray::number(guardian);
            // Under systemd the guardian is the unit's main process until the
            // new image has adopted the sessions (the guardian hands it back
            // then, guardIfAsked()): were we still the main process when the new
            // image dies, systemd would end the unit and kill the guardian
            // with it. Said before the exec, so that it is queued before any
            // death of the new image: systemd reads its notification socket
            // before it handles SIGCHLD. Needs NotifyAccess=all.
            tellManager("MAINPID=" + QByteArray::number(qint64(guardian)));
        }
    }
    envp.pop_back(); // the terminating null
    envp.pop_back(); // the guard entry: the guardian's alone
    if (!guardianEntry.isEmpty())
        envp.push_back(guardianEntry.data());
    envp.push_back(nullptr);

    ::execve(path.constData(), argv.data(), envp.data());

    const int err = errno;
    releaseGuardian(guardPipe[1], guardian); // we still hold the sessions
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    setCloexec(kept, true);
    ::close(memfd);
    fail(QStringLiteral("cannot execute %1: %2").arg(bin, errnoText(err)));
}

RestartInPlace::Adoption RestartInPlace::adoptHandover(QString *report)
{
    const QByteArray stateVar = qgetenv(Handover::kStateEnv);
    const QByteArray fdsVar = qgetenv(Handover::kFdsEnv);
    const QByteArray listenVar = qgetenv(Handover::kListenEnv);
    const QByteArray guardianVar = qgetenv(kGuardianEnv);
    const QByteArray takeoverVar = qgetenv(kTakeoverEnv);
    // The shells this image starts must not inherit them, nor a later restart.
    for (const char *name : {Handover::kStateEnv, Handover::kFdsEnv, Handover::kListenEnv, kGuardianEnv, kTakeoverEnv})
        qunsetenv(name);
    // The guardian stands down once everything below is ours, whatever
    // came of it: from then on a crash is a crash, not a failed restart.
    int guardianFd = -1;
    pid_t guardianPid = 0;
    if (!guardianVar.isEmpty()) {
        const QList<QByteArray> f = guardianVar.split(':');
        guardianFd = f.value(0).toInt();
        guardianPid = pid_t(f.value(1).toInt());
        if (f.size() != 2 || guardianFd < 0 || ::fcntl(guardianFd, F_GETFD) < 0)
            guardianFd = -1;
        else
            ::fcntl(guardianFd, F_SETFD, FD_CLOEXEC);
    }
    struct StandDown {
        int fd;
        pid_t pid;
        ~StandDown() { releaseGuardian(fd, pid); }
    } standDown{guardianFd, guardianPid};
    if (stateVar.isEmpty() && fdsVar.isEmpty() && listenVar.isEmpty())
        return Adoption::None;
    if (!m_server || !m_registry)
        return Adoption::Failed;

    // The state first: it holds the TLS pair to serve with when the files
    // cannot be read, needed as the listening socket is taken over.
    bool ok = false;
    bool stateOk = false;
    const int stateFd = stateVar.toInt(&ok);
    Handover::State state;
    QString why;
    if (!ok || stateFd < 0) {
        why = QStringLiteral("no state was handed over");
    } else {
        if (qgetenv(Handover::kIgnoreStateEnv) == "1")
            why = QStringLiteral("ignored (%1=1)").arg(QLatin1String(Handover::kIgnoreStateEnv));
        else
            stateOk = Handover::read(stateFd, &state, &why);
        ::close(stateFd);
    }
    if (stateOk)
        m_server->setHandedOverTls(state.tlsCertificatePem, state.tlsKeyPem);

    Adoption result = Adoption::Adopted;
    QStringList lines;
    const int listenFd = listenVar.toInt(&ok);
    QString error;
    if (!ok || listenFd < 0 || !m_server->adoptListeningSocket(listenFd, &error)) {
        lines.append(error.isEmpty() ? QStringLiteral("no listening socket was handed over") : error);
        if (ok && listenFd >= 0)
            ::close(listenFd); // so that listen() can bind the port again
        result = Adoption::Failed;
    }
    QStringList problems;
    int adopted = 0;
    if (stateOk) {
        adopted = m_registry->adopt(state, &problems);
        for (const Handover::SessionRecord &r : std::as_const(state.sessions)) {
            if (!r.dying && !r.shares.isEmpty() && m_registry->find(r.id))
                m_server->shares()->adopt(r.id, r.shares);
        }
        if (!m_server->adoptAccessKey(state.key))
            problems.append(QStringLiteral("the handed-over key is malformed; using the stored one"));
        m_restarts = state.restarts;
    } else {
        int skipped = 0;
        adopted = m_registry->adoptBare(Handover::parseFdList(fdsVar, &skipped), &problems);
        if (skipped)
            problems.append(QStringLiteral("%1 malformed entries in %2").arg(skipped).arg(QLatin1String(Handover::kFdsEnv)));
        lines.append(QStringLiteral("the restart state could not be read (%1): sessions kept, their earlier output lost")
                         .arg(why));
    }
    lines += problems;
    QString head = QStringLiteral("restarted in place (pid %1): %2 session%3 kept")
                       .arg(::getpid()).arg(adopted).arg(adopted == 1 ? QString() : QStringLiteral("s"));
    if (!takeoverVar.isEmpty()) {
        // Started by a guardian: another pid, and the shells were children
        // of the image that died or was killed (now of a subreaper or init).
        // "PID" when it died, "PID:MS" when it hung and was killed.
        const QList<QByteArray> f = takeoverVar.split(':');
        const QString was = QString::fromLatin1(f.value(0));
        if (f.size() >= 2)
            m_lastError = QStringLiteral("the new image (pid %1) had not adopted the sessions within %2 s and was killed; "
                                         "the restart guardian took them over with the previous binary")
                              .arg(was).arg(f.value(1).toDouble() / 1000.0);
        else
            m_lastError = QStringLiteral("the new image (pid %1) ended before it adopted the sessions; "
                                         "the restart guardian took them over with the previous binary")
                              .arg(was);
        head = QStringLiteral("taken over after a failed restart (pid %1, was %2): %3 session%4 kept; "
                              "their exit statuses will be unknown (not our children)")
                   .arg(::getpid()).arg(was).arg(adopted)
                   .arg(adopted == 1 ? QString() : QStringLiteral("s"));
    }
    if (report)
        *report = lines.isEmpty() ? head : head + QStringLiteral("; ") + lines.join(QStringLiteral("; "));
    return result;
}

} // namespace Tether
