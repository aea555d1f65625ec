// SPDX-License-Identifier: GPL-2.0-or-later
#include "singleinstance.h"

#include "logging.h"
#include "runtimefile.h"

#include <QDir>
#include <QLocalServer>
#include <QLocalSocket>
#include <QFile>

#include <sys/stat.h>

namespace Tether {

namespace {
const QByteArray kRaise = QByteArrayLiteral("raise\n");
const QByteArray kOk = QByteArrayLiteral("ok\n");
constexpr int kMaxLine = 64; // bytes; anything longer is not ours
} // namespace

SingleInstance::SingleInstance(const QString &dir, QObject *parent)
    : QObject(parent)
{
    QString base = dir;
    if (base.isEmpty()) {
        base = RuntimeFile::baseDirectory();
        // 0700 like Qt's own fallback: the socket there answers "show".
        ::mkdir(QFile::encodeName(base).constData(), 0700);
    } else {
        QDir().mkpath(base);
    }
    m_socketPath = QDir(base).filePath(QStringLiteral("tether-desktop.sock"));
    m_lockPath = QDir(base).filePath(QStringLiteral("tether-desktop.lock"));

    m_retry.setInterval(100);
    connect(&m_retry, &QTimer::timeout, this, &SingleInstance::tryConnect);
    m_deadline.setSingleShot(true);
    m_deadline.setInterval(kHandOffTimeoutMs);
    connect(&m_deadline, &QTimer::timeout, this, [this] {
        qCWarning(lcUi) << "the running Tether did not answer within" << kHandOffTimeoutMs << "ms";
        finishHandOff(false);
    });
}

SingleInstance::~SingleInstance()
{
    if (m_server) {
        m_server->close(); // removes the socket file
        delete m_server;
    }
    // m_lock unlocks (and removes the lock file) in its destructor.
}

void SingleInstance::release()
{
    if (m_server) {
        m_server->close(); // removes the socket file
        delete m_server;
        m_server = nullptr;
    }
    m_lock.reset(); // unlocks and removes the lock file
    m_primary = false;
}

bool SingleInstance::claim(QString *error)
{
    m_lock = std::make_unique<QLockFile>(m_lockPath);
    // A lock whose owner died is stale: QLockFile checks the pid (and its
    // hostname/app name) and takes it over at once.
    m_lock->setStaleLockTime(0);
    if (!m_lock->tryLock(0)) {
        if (m_lock->error() == QLockFile::LockFailedError)
            return false;
        // Cannot create the lock file at all (permissions, full disk): run
        // anyway rather than refuse to start; hand-off is then best effort.
        qCWarning(lcUi) << "cannot create" << m_lockPath << "; single-instance check skipped";
    }
    m_primary = true;

    // We hold the lock, so any socket file left here is from a dead instance.
    QLocalServer::removeServer(m_socketPath);
    m_server = new QLocalServer(this);
    m_server->setSocketOptions(QLocalServer::UserAccessOption);
    connect(m_server, &QLocalServer::newConnection, this, &SingleInstance::onNewConnection);
    if (!m_server->listen(m_socketPath)) {
        if (error)
            *error = tr("cannot listen on %1: %2").arg(m_socketPath, m_server->errorString());
        qCWarning(lcUi) << "single-instance socket:" << m_server->errorString();
        return true;
    }
    return true;
}

qint64 SingleInstance::primaryPid() const
{
    qint64 pid = 0;
    QString host, app;
    if (m_lock && m_lock->getLockInfo(&pid, &host, &app))
        return pid;
    QLockFile probe(m_lockPath);
    if (probe.getLockInfo(&pid, &host, &app))
        return pid;
    return 0;
}

void SingleInstance::onNewConnection()
{
    while (QLocalSocket *s = m_server->nextPendingConnection()) {
        // A peer that never sends its line must not linger.
        auto *timeout = new QTimer(s);
        timeout->setSingleShot(true);
        connect(timeout, &QTimer::timeout, s, &QLocalSocket::abort);
        timeout->start(2000);
        connect(s, &QLocalSocket::disconnected, s, &QObject::deleteLater);
        connect(s, &QLocalSocket::readyRead, this, [this, s] {
            if (!s->canReadLine()) {
                if (s->bytesAvailable() > kMaxLine)
                    s->abort();
                return;
            }
            const QByteArray line = s->readLine(kMaxLine);
            if (line == kRaise) {
                qCInfo(lcUi) << "another launch asked to raise the Sessions window";
                Q_EMIT raiseRequested();
                s->write(kOk);
            }
            s->disconnectFromServer();
        });
    }
}

void SingleInstance::requestRaise()
{
    m_handOffDone = false;
    m_deadline.start();
    tryConnect();
}

void SingleInstance::tryConnect()
{
    m_retry.stop();
    if (m_client) {
        m_client->disconnect(this);
        m_client->abort();
        m_client->deleteLater();
    }
    m_client = new QLocalSocket(this);
    QLocalSocket *c = m_client;
    connect(c, &QLocalSocket::connected, this, [c] { c->write(kRaise); });
    connect(c, &QLocalSocket::readyRead, this, [this, c] {
        if (c->canReadLine())
            finishHandOff(c->readLine(kMaxLine) == kOk);
    });
#if QT_VERSION >= QT_VERSION_CHECK(5, 15, 0)
    connect(c, &QLocalSocket::errorOccurred, this, [this, c](QLocalSocket::LocalSocketError e) {
#else
    connect(c, QOverload<QLocalSocket::LocalSocketError>::of(&QLocalSocket::error), this,
            [this, c](QLocalSocket::LocalSocketError e) {
#endif
        if (m_handOffDone || c != m_client)
            return;
        if (e == QLocalSocket::PeerClosedError && c->canReadLine())
            return; // the answer is in; readyRead handles it
        // Not listening yet (still starting) or gone: try again shortly.
        m_retry.start();
    });
    c->connectToServer(m_socketPath);
}

void SingleInstance::finishHandOff(bool ok)
{
    if (m_handOffDone)
        return;
    m_handOffDone = true;
    m_retry.stop();
    m_deadline.stop();
    if (m_client)
        m_client->disconnectFromServer();
    Q_EMIT handOffFinished(ok);
}

} // namespace Tether
