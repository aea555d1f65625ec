// SPDX-License-Identifier: GPL-2.0-or-later
#include "hostlauncher.h"
#include "runtimefile.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QLoggingCategory>
#include <QProcess>
#include <QSocketNotifier>

#include <cerrno>
#include <csignal>
#include <limits>
#include <sys/syscall.h>
#include <unistd.h>

namespace Tether {

namespace {
Q_LOGGING_CATEGORY(lcLauncher, "tether.client", QtWarningMsg)

int pidfdOpen(qint64 pid)
{
#ifdef SYS_pidfd_open
    return int(::syscall(SYS_pidfd_open, pid_t(pid), 0));
#else
    errno = ENOSYS;
    return -1;
#endif
}

/// The runtime file names a process that is alive (not a zombie). Whether
/// it is a Tether that serves is for the API to say (probe()): its
/// /proc/PID/comm is whatever the binary is called.
bool namesLiveProcess(const QJsonObject &rt)
{
    const qint64 pid = qint64(rt.value(QStringLiteral("pid")).toDouble(-1));
    if (pid <= 0 || pid > std::numeric_limits<pid_t>::max())
        return false;
    if (::kill(pid_t(pid), 0) != 0 && errno != EPERM)
        return false;
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (stat.open(QIODevice::ReadOnly)) {
        const QByteArray st = stat.readAll();
        const int close = st.lastIndexOf(')');
        if (close >= 0 && st.mid(close + 2, 1) == "Z")
            return false;
    }
    return true;
}
} // namespace

HostLauncher::HostLauncher(QObject *parent)
    : QObject(parent)
{
    m_timeout.setSingleShot(true);
    connect(&m_timeout, &QTimer::timeout, this, [this] {
        const QString log = newLogText().trimmed();
        finish(false, ServerEndpoint(), false,
               tr("no Tether host answered within %1 s (its log: %2)%3")
                   .arg(m_timeoutMs / 1000)
                   .arg(logPath(), log.isEmpty() ? QString() : QStringLiteral(": ") + log));
    });
}

HostLauncher::~HostLauncher()
{
    if (m_pidfd >= 0)
        ::close(m_pidfd);
}

QString HostLauncher::logPath()
{
    QString state = qEnvironmentVariable("XDG_STATE_HOME");
    if (state.isEmpty() || !QDir::isAbsolutePath(state))
        state = QDir::homePath() + QStringLiteral("/.local/state");
    return state + QStringLiteral("/tether/host.log");
}

void HostLauncher::start()
{
    m_timeout.start(m_timeoutMs);
    probe();
}

void HostLauncher::probe()
{
    if (m_done)
        return;
    if (m_probing) {
        m_probeAgain = true; // the file changed again while we asked
        return;
    }
    const QJsonObject rt = RuntimeFile::read();
    ServerEndpoint endpoint;
    QString error;
    const bool live = namesLiveProcess(rt)
        && ServerEndpoint::resolve(rt.value(QStringLiteral("url")).toString(), rt.value(QStringLiteral("key")).toString(),
                                   &endpoint, &error);
    if (!live) {
        if (!m_spawned)
            spawn();
        else if (m_hostExited)
            onHostExited(); // nothing serves, and ours is gone: decide now
        return;
    }
    m_probing = true;
    const bool ours = m_startedPid > 0 && qint64(rt.value(QStringLiteral("pid")).toDouble()) == m_startedPid;
    delete m_api.data();
    m_api = new ApiClient(endpoint, this);
    m_api->setTimeout(m_timeoutMs);
    m_api->get(QStringLiteral("api/restart"), [this, endpoint, ours](const ApiReply &reply) {
        m_probing = false;
        if (reply.status == 200) {
            finish(true, endpoint, ours, QString());
            return;
        }
        qCDebug(lcLauncher).noquote() << "host probe:" << reply.errorText();
        if (m_probeAgain) {
            m_probeAgain = false;
            probe();
        } else if (!m_spawned) {
            spawn();
        } else if (m_hostExited) {
            onHostExited(); // it exited while we asked
        }
    });
}

void HostLauncher::spawn()
{
    if (m_spawned || m_done)
        return;
    m_spawned = true;
    QString why;
    if (!RuntimeFile::ensureDirectory(&why)) {
        finish(false, ServerEndpoint(), false, tr("cannot start a Tether host: %1").arg(why));
        return;
    }
    // Watch before starting: a host fast enough to write its file first is
    // still seen.
    m_watcher = new QFileSystemWatcher(QStringList{RuntimeFile::directory()}, this);
    connect(m_watcher, &QFileSystemWatcher::directoryChanged, this, [this] { probe(); });

    const QString log = logPath();
    QDir().mkpath(QFileInfo(log).path());
    m_logStart = QFileInfo(log).size();
    QProcess p;
    p.setProgram(m_program.isEmpty() ? QCoreApplication::applicationFilePath() : m_program);
    p.setArguments(QStringList{QStringLiteral("serve")} + m_arguments);
    p.setStandardInputFile(QProcess::nullDevice());
    p.setStandardOutputFile(log, QIODevice::Append);
    p.setStandardErrorFile(log, QIODevice::Append);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    // The host finds itself; a client's overrides are not its business.
    for (const char *name : {"TETHER_URL", "TETHER_KEY", "TETHER_CACERT"})
        env.remove(QLatin1String(name));
    p.setProcessEnvironment(env);
    qint64 pid = 0;
    if (!p.startDetached(&pid)) {
        finish(false, ServerEndpoint(), false, tr("cannot start %1 serve: %2").arg(p.program(), p.errorString()));
        return;
    }
    m_startedPid = pid;
    qCInfo(lcLauncher) << "started a Tether host, pid" << pid << "log" << log;
    m_pidfd = pidfdOpen(pid);
    if (m_pidfd >= 0) {
        m_exitNotifier = new QSocketNotifier(m_pidfd, QSocketNotifier::Read, this);
        connect(m_exitNotifier, &QSocketNotifier::activated, this, [this] {
            m_exitNotifier->setEnabled(false);
            m_hostExited = true;
            onHostExited();
        });
    } else if (errno == ESRCH) {
        m_hostExited = true;
        QMetaObject::invokeMethod(this, [this] { onHostExited(); }, Qt::QueuedConnection);
    }
    // Without a pidfd (Linux < 5.3) the timeout covers a host that dies.
    probe();
}

void HostLauncher::onHostExited()
{
    if (m_done || m_probing)
        return; // a probe under way decides
    // Lost the race to another host (the lock): that one's runtime file
    // comes; the watcher and the timeout go on. Anything else: it failed.
    const QString log = newLogText();
    if (log.contains(QLatin1String("Tether is already running"))) {
        const QJsonObject rt = RuntimeFile::read();
        if (namesLiveProcess(rt))
            probe();
        return;
    }
    const QJsonObject rt = RuntimeFile::read();
    if (namesLiveProcess(rt)) {
        probe();
        return;
    }
    finish(false, ServerEndpoint(), false,
           tr("the Tether host (pid %1) exited without serving (its log: %2)%3")
               .arg(m_startedPid)
               .arg(logPath(), log.trimmed().isEmpty() ? QString() : QStringLiteral(": ") + log.trimmed()));
}

QString HostLauncher::newLogText() const
{
    QFile f(logPath());
    if (!f.open(QIODevice::ReadOnly) || !f.seek(m_logStart))
        return QString();
    return QString::fromUtf8(f.read(64 * 1024));
}

void HostLauncher::finish(bool ok, const ServerEndpoint &endpoint, bool started, const QString &why)
{
    if (m_done)
        return;
    m_done = true;
    m_timeout.stop();
    delete m_watcher;
    m_watcher = nullptr;
    if (m_exitNotifier)
        m_exitNotifier->setEnabled(false);
    if (ok)
        Q_EMIT ready(endpoint, started);
    else
        Q_EMIT failed(why);
}

} // namespace Tether
