// SPDX-License-Identifier: GPL-2.0-or-later
#include "restartinplace.h"
#include "commandline.h"
#include "fdlimit.h"
#include "handover.h"
#include "logging.h"
#include "registry.h"
#include "server.h"
#include "upgradewatch.h"

#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>

#include <algorithm>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace Tether {

namespace {

QList<QByteArray> g_argv;
QString g_binary;

constexpr int kDrainPollMs = 10;
const char kBinaryOverrideEnv[] = "TETHER_RESTART_BINARY";

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

} // namespace

void RestartInPlace::recordStartup(int argc, char **argv)
{
    g_argv.clear();
    for (int i = 0; i < argc && argv && argv[i]; ++i)
        g_argv.append(QByteArray(argv[i]));
    g_binary = resolveArgv0(g_argv.value(0));
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
    return o;
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
    state.listenFd = m_server->listeningSocketDescriptor();
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
    for (const Handover::SessionRecord &r : std::as_const(state.sessions)) {
        if (r.pty.masterFd >= 0)
            kept.append(r.pty.masterFd);
        if (r.pty.pidfd >= 0)
            kept.append(r.pty.pidfd);
    }

    QList<QByteArray> env;
    const QList<QByteArray> ours{QByteArray(Handover::kStateEnv) + '=', QByteArray(Handover::kFdsEnv) + '=',
                                 QByteArray(Handover::kListenEnv) + '=', QByteArray(FdLimit::kOriginalSoftEnv) + '='};
    for (char **e = environ; e && *e; ++e) {
        const QByteArray entry(*e);
        if (!std::any_of(ours.begin(), ours.end(), [&](const QByteArray &p) { return entry.startsWith(p); }))
            env.append(entry);
    }
    env.append(ours.at(0) + QByteArray::number(memfd));
    env.append(ours.at(1) + Handover::fdList(state));
    if (state.listenFd >= 0)
        env.append(ours.at(2) + QByteArray::number(state.listenFd));
    // execve keeps our raised descriptor limit: the next image must still
    // give the sessions the one we were started with.
    env.append(FdLimit::handoverEnvEntry());
    std::vector<char *> envp;
    for (QByteArray &e : env)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    QList<QByteArray> args = g_argv;
    if (args.isEmpty())
        args.append(QFile::encodeName(bin));
    std::vector<char *> argv;
    for (QByteArray &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    const QByteArray path = QFile::encodeName(bin);

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

    ::execve(path.constData(), argv.data(), envp.data());

    const int err = errno;
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
    // The shells this image starts must not inherit them, nor a later restart.
    qunsetenv(Handover::kStateEnv);
    qunsetenv(Handover::kFdsEnv);
    qunsetenv(Handover::kListenEnv);
    if (stateVar.isEmpty() && fdsVar.isEmpty() && listenVar.isEmpty())
        return Adoption::None;
    if (!m_server || !m_registry)
        return Adoption::Failed;

    Adoption result = Adoption::Adopted;
    QStringList lines;
    bool ok = false;
    const int listenFd = listenVar.toInt(&ok);
    QString error;
    if (!ok || listenFd < 0 || !m_server->adoptListeningSocket(listenFd, &error)) {
        lines.append(error.isEmpty() ? QStringLiteral("no listening socket was handed over") : error);
        if (ok && listenFd >= 0)
            ::close(listenFd); // so that listen() can bind the port again
        result = Adoption::Failed;
    }

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
    QStringList problems;
    int adopted = 0;
    if (stateOk) {
        adopted = m_registry->adopt(state, &problems);
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
    const QString head = QStringLiteral("restarted in place (pid %1): %2 session%3 kept")
                             .arg(::getpid()).arg(adopted).arg(adopted == 1 ? QString() : QStringLiteral("s"));
    if (report)
        *report = lines.isEmpty() ? head : head + QStringLiteral("; ") + lines.join(QStringLiteral("; "));
    return result;
}

} // namespace Tether
