// SPDX-License-Identifier: GPL-2.0-or-later
// Server's life: construction, the listening socket and its transport (bind
// policy, TLS), the addresses it is reached at, the runtime file, the access
// key, close(), and the restart in place (handing the socket and the TLS pair
// over, draining). What a connection goes through is in the other server*.cpp
// files (server.h's class comment lists them).
#include "server.h"
#include "acceptor.h"
#include "accesskey.h"
#include "bindpolicy.h"
#include "httpconnection.h"
#include "lingeringclose.h"
#include "logging.h"
#include "protocol.h"
#include "registry.h"
#include "runtimefile.h"
#include "serverutil.h"
#include "sharestore.h"
#include "tlscontext.h"

#include <QNetworkInterface>
#include <QSslSocket>
#include <QTcpServer>
#include <QWebSocketCorsAuthenticator>
#include <QWebSocketServer>

#include <fcntl.h>
#include <unistd.h>

namespace Tether {

Server::Server(SessionRegistry *registry, const HostConfig &config, QObject *parent)
    : QObject(parent)
    , m_registry(registry)
    , m_config(config)
{
    if (!config.accessKeyFile.isEmpty()) {
        QString error;
        m_key = loadOrCreateAccessKey(config.accessKeyFile, &error);
        if (m_key.isEmpty())
            qCWarning(lcServer).noquote().nospace() << "cannot keep the access key (" << error
                                                    << "): using a new key for this run only";
    }
    if (m_key.isEmpty())
        m_key = generateAccessKey();
    m_viewerOptions.pingIntervalMs = config.pingIntervalSec * 1000;
    m_viewerOptions.pingTimeoutMs = config.pingTimeoutSec * 1000;

    // Listens only: Acceptor takes the connections (see listen()).
    m_tcp = new QTcpServer(this);

    m_ws = new QWebSocketServer(QStringLiteral("Tether"), QWebSocketServer::NonSecureMode, this);
    // Origin is checked (with Host and the key) before the upgrade is handed
    // over. Without a slot here every origin would be accepted anyway; the
    // explicit accept documents that the decision was already made.
    connect(m_ws, &QWebSocketServer::originAuthenticationRequired, this,
            [](QWebSocketCorsAuthenticator *auth) { auth->setAllowed(true); });
    connect(m_ws, &QWebSocketServer::newConnection, this, &Server::onWebSocket);

    m_eventTimer.setSingleShot(true);
    m_eventTimer.setInterval(kEventCoalesceMs);
    connect(&m_eventTimer, &QTimer::timeout, this, &Server::broadcastEvents);
    m_eventKeepalive.setInterval(20000);
    connect(&m_eventKeepalive, &QTimer::timeout, this, [this]() {
        const auto streams = m_eventStreams;
        for (HttpConnection *c : streams)
            c->writeStream(QByteArrayLiteral(": keepalive\n\n"));
    });

    m_outputTimer.setSingleShot(true);
    connect(&m_outputTimer, &QTimer::timeout, this, &Server::sendOutputEvent);

    m_shares = new ShareStore(this);
    // Revoked: its viewers are closed at once (their sessions live on).
    connect(m_shares, &ShareStore::revoked, this, [this](const QStringList &tokens) {
        const auto viewers = m_shareViewers; // each close may leave the hash
        for (auto it = viewers.cbegin(); it != viewers.cend(); ++it) {
            if (tokens.contains(it.value()))
                it.key()->closeWith(Protocol::Unauthorized, QString::fromLatin1(Protocol::CloseReason::ShareRevoked));
        }
    });

    if (registry) {
        // A share ends with its session (its viewers get the session's 1001).
        connect(registry, &SessionRegistry::sessionRemoved, m_shares,
                [this](Session *s) { m_shares->sessionEnded(s->id()); });
        connect(registry, &SessionRegistry::sessionAdded, this, &Server::scheduleEvents);
        connect(registry, &SessionRegistry::sessionRemoved, this, &Server::scheduleEvents);
        connect(registry, &SessionRegistry::sessionChanged, this, &Server::scheduleEvents);
        connect(registry, &SessionRegistry::sessionCommand, this, &Server::sendCommandEvent);
        connect(registry, &SessionRegistry::sessionNotify, this, &Server::sendNotifyEvent);
        connect(registry, &SessionRegistry::sessionAdded, this, &Server::watchOutput);
        const auto sessions = registry->sessions();
        for (Session *s : sessions)
            watchOutput(s);
    }
}

Server::~Server()
{
    close();
    const auto viewers = m_viewers;
    m_viewers.clear();
    for (WebSocketViewer *v : viewers) {
        v->disconnect(this);
        delete v;
    }
    delete m_ws;
    m_ws = nullptr;
    delete m_tcp;
    m_tcp = nullptr;
}

QHostAddress Server::listenAddress() const
{
    const QString bind = m_config.bind.trimmed();
    if (bind.isEmpty() || bind.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0)
        return QHostAddress(QHostAddress::LocalHost);
    return QHostAddress(bind);
}

bool Server::prepareTransport(QString *error, bool *badValue)
{
    QString why;
    // Which failures are the user's values (not the machine's, not policy).
    bool valueAtFault = false;
    if (m_config.tlsCert.isEmpty() != m_config.tlsKey.isEmpty()) {
        valueAtFault = true;
        why = QStringLiteral("TLS needs both a certificate and a key (--tls-cert and --tls-key, or the settings "
                             "server/tlsCert and server/tlsKey); only the %1 is set")
                  .arg(m_config.tlsCert.isEmpty() ? QStringLiteral("key") : QStringLiteral("certificate"));
    } else if (BindPolicy::decide(m_config.bind, m_config.tlsEnabled(), m_config.insecureBind)
               == BindPolicy::Decision::Refused) {
        why = BindPolicy::refusal(m_config.bind, m_config.port);
    } else if (m_config.tlsEnabled() && !m_tls) {
        auto *tls = new TlsContext(m_config.tlsCert, m_config.tlsKey, this);
        bool loaded = tls->load(&why);
        QString handedOverWhy;
        if (!loaded && !m_handedOverCert.isEmpty()) {
            // A restart in place while the files are unreadable or damaged:
            // keep serving what the previous image served rather than stop
            // serving HTTPS (issue 10); the watch set up below, or a SIGHUP,
            // picks up good files later.
            loaded = tls->loadPem(m_handedOverCert, m_handedOverKey, &handedOverWhy);
            if (loaded)
                qCWarning(lcServer).noquote()
                    << "cannot use the TLS files (" + why
                        + "); serving the certificate the previous process image had loaded until they can be "
                          "read (SIGHUP or a change of the files reloads them)";
            else
                why += QStringLiteral("; the handed-over pair is not usable either: ") + handedOverWhy;
        }
        m_handedOverCert.clear();
        m_handedOverKey.clear();
        if (!loaded) {
            delete tls;
            valueAtFault = QSslSocket::supportsSsl(); // else no OpenSSL library: not the files
        } else {
            why.clear();
            m_tls = tls;
            m_tls->watchFiles();
            // server.json names the certificate local clients trust.
            connect(m_tls, &TlsContext::reloaded, this, [this]() {
                QString ignored;
                if (m_wroteRuntimeFile && !writeRuntimeFile(&ignored))
                    qCWarning(lcServer).noquote() << "cannot rewrite the runtime file:" << ignored;
            });
        }
    }
    if (!why.isEmpty()) {
        if (error)
            *error = why;
        if (badValue)
            *badValue = valueAtFault;
        return false;
    }
    m_startWarning = BindPolicy::decide(m_config.bind, m_config.tlsEnabled(), m_config.insecureBind)
            == BindPolicy::Decision::Insecure
        ? BindPolicy::insecureWarning(m_config.bind)
        : QString();
    return true;
}

bool Server::reloadTls()
{
    return m_tls && m_tls->reload();
}

bool Server::listen(QString *error, bool *badValue)
{
    if (badValue)
        *badValue = false;
    if (!prepareTransport(error, badValue))
        return false;
    const QHostAddress address = listenAddress();
    if (address.isNull()) {
        if (error)
            *error = QStringLiteral("invalid bind address \"%1\"").arg(m_config.bind);
        if (badValue)
            *badValue = true;
        return false;
    }
    m_portInUse = false;
    if (!m_tcp->listen(address, m_config.port)) {
        m_portInUse = m_tcp->serverError() == QAbstractSocket::AddressInUseError;
        if (error)
            *error = QStringLiteral("cannot listen on %1:%2: %3")
                         .arg(address.toString()).arg(m_config.port).arg(m_tcp->errorString());
        return false;
    }
    startAccepting();
    m_closed = false;
    qCInfo(lcServer) << "listening on" << address.toString() << m_tcp->serverPort();
    return true;
}

void Server::startAccepting()
{
    // QTcpServer's accept loop spins at 100 % CPU when the process is out
    // of file descriptors (see Acceptor): it never runs; Acceptor accepts.
    m_tcp->pauseAccepting();
    delete m_acceptor;
    m_acceptor = new Acceptor(m_tcp->socketDescriptor(), this);
    connect(m_acceptor, &Acceptor::accepted, this, &Server::onAccepted);
}

bool Server::isListening() const
{
    return m_tcp && m_tcp->isListening();
}

quint16 Server::port() const
{
    return m_tcp ? m_tcp->serverPort() : 0;
}

QString Server::url() const
{
    QHostAddress a = listenAddress();
    if (a == QHostAddress(QHostAddress::Any) || a == QHostAddress(QHostAddress::AnyIPv4) || a.isNull())
        a = QHostAddress(QHostAddress::LocalHost);
    else if (a == QHostAddress(QHostAddress::AnyIPv6))
        a = QHostAddress(QHostAddress::LocalHostIPv6);
    QString host = a.toString();
    if (a.protocol() == QAbstractSocket::IPv6Protocol)
        host = QLatin1Char('[') + host + QLatin1Char(']');
    return QStringLiteral("%1://%2:%3/").arg(scheme(), host).arg(port());
}

QString Server::scheme() const
{
    return m_tls ? QStringLiteral("https") : QStringLiteral("http");
}

QString Server::publicUrl() const
{
    if (BindPolicy::isLoopback(m_config.bind))
        return url();
    // The name a remote user types: one the Host check accepts, first the
    // names given for that (--allow-host), then the certificate's (which a
    // browser checks against the address), then the bind address itself.
    QString host;
    for (const QString &entry : m_config.allowHosts) {
        if (!entry.contains(QLatin1Char(':')) && !entry.startsWith(QLatin1Char('*'))) {
            host = entry.toLower();
            break;
        }
    }
    if (host.isEmpty() && m_tls) {
        for (const QString &name : m_tls->dnsNames()) {
            if (!name.startsWith(QLatin1Char('*')) && name != QLatin1String("localhost")) {
                host = name;
                break;
            }
        }
    }
    if (host.isEmpty()) {
        QHostAddress a = normalized(listenAddress());
        if (a == QHostAddress(QHostAddress::AnyIPv4) || a == QHostAddress(QHostAddress::AnyIPv6)
            || a == QHostAddress(QHostAddress::Any)) {
            // A wildcard: the first address of this machine others can reach
            // (an IP literal passes the Host check: it is the local address
            // the connection arrives on).
            a = QHostAddress();
            const auto all = QNetworkInterface::allAddresses();
            for (const QHostAddress &candidate : all) {
                if (!candidate.isLoopback() && !candidate.isLinkLocal()
                    && candidate.protocol() == QAbstractSocket::IPv4Protocol) {
                    a = candidate;
                    break;
                }
            }
            if (a.isNull())
                return url();
        }
        host = a.toString();
        if (a.protocol() == QAbstractSocket::IPv6Protocol)
            host = QLatin1Char('[') + host + QLatin1Char(']');
    }
    return QStringLiteral("%1://%2:%3/").arg(scheme(), host).arg(port());
}

QString Server::keyedUrl() const
{
    return publicUrl() + QStringLiteral("?key=") + m_key;
}

QString Server::sessionUrl(const QString &id) const
{
    return keyedUrl() + QStringLiteral("#/s/") + QString::fromLatin1(QUrl::toPercentEncoding(id));
}

QJsonObject Server::runtimeContents() const
{
    QJsonObject o;
    o.insert(QStringLiteral("url"), url());
    o.insert(QStringLiteral("port"), int(port()));
    o.insert(QStringLiteral("pid"), qint64(::getpid()));
    o.insert(QStringLiteral("key"), m_key);
    // Local clients connect to url() by address, which a certificate made
    // for a name does not cover: they trust exactly this certificate (the
    // file is the user's, mode 0600). Rewritten when the certificate is.
    if (m_tls)
        o.insert(QStringLiteral("cert_sha256"), QString::fromLatin1(m_tls->leafSha256()));
    if (publicUrl() != url())
        o.insert(QStringLiteral("public_url"), publicUrl());
    return o;
}

bool Server::writeRuntimeFile(QString *error, QJsonObject *other)
{
    QJsonObject another;
    const bool ok = RuntimeFile::write(runtimeContents(), error, &another);
    m_wroteRuntimeFile = ok && another.isEmpty();
    if (other)
        *other = another;
    return ok;
}

bool Server::rotateAccessKey(QString *error)
{
    const QString key = generateAccessKey();
    if (!m_config.accessKeyFile.isEmpty() && !storeAccessKey(m_config.accessKeyFile, key, error))
        return false;
    m_key = key;
    qCInfo(lcServer) << "access key rotated";
    // A rotation is what one does when the key may have leaked: the links
    // made with it go too (whoever held the key could have made some).
    m_shares->revokeAll();
    if (m_wroteRuntimeFile) {
        QString ignored;
        if (!writeRuntimeFile(&ignored))
            qCWarning(lcServer).noquote() << "cannot rewrite the runtime file:" << ignored;
    }
    const auto streams = m_eventStreams;
    for (HttpConnection *c : streams) {
        c->writeStream(QByteArrayLiteral("event: key\ndata: {}\n\n"));
        c->endStream();
    }
    Q_EMIT accessKeyChanged(m_key);
    return true;
}

bool Server::runtimeFileLeadsHere() const
{
    return RuntimeFile::sameServer(RuntimeFile::read(), runtimeContents());
}

void Server::removeRuntimeFile()
{
    RuntimeFile::removeIfOwned(::getpid());
}

void Server::setKeepalive(int pingIntervalMs, int timeoutMs)
{
    m_viewerOptions.pingIntervalMs = pingIntervalMs;
    m_viewerOptions.pingTimeoutMs = timeoutMs;
}

void Server::setFlowWatermarks(qint64 highBytes, qint64 lowBytes)
{
    m_viewerOptions.highWatermark = highBytes;
    m_viewerOptions.lowWatermark = qMin(lowBytes, highBytes);
}

void Server::setEventKeepalive(int msec)
{
    m_eventKeepalive.setInterval(msec);
}

void Server::close()
{
    m_closed = true;
    // Before the listening socket closes: its notifier watches that fd.
    delete m_acceptor;
    m_acceptor = nullptr;
    if (m_tcp)
        m_tcp->close();
    closeViewers(Protocol::GoingAway, Protocol::CloseReason::ServerShutdown);
    // Every connection gets a clear end, not a close with nothing on it
    // (Chromium: net::ERR_EMPTY_RESPONSE): the event streams a `shutdown`
    // event, so that a dashboard showing only the list can say "Tether shut
    // down" as an attached one does (1001 above); a request taken in but
    // not answered yet a 503 "server shutting down"; an answer being written
    // the rest of it. docs/protocol.md, "/api/events" and "Shutdown".
    const auto streams = m_eventStreams;
    m_eventStreams.clear();
    m_outputStreams.clear();
    m_outputTimer.stop();
    for (HttpConnection *c : streams)
        c->closeForShutdown(shutdownEvent());
    const auto http = m_http;
    for (HttpConnection *c : http)
        c->closeForShutdown();
    m_pending.clear();
    m_eventTimer.stop();
    m_eventKeepalive.stop();
}

// --- restart in place ----------------------------------------------------------

bool Server::adoptListeningSocket(int fd, QString *error)
{
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (!prepareTransport(error))
        return false;
    if (!m_tcp->setSocketDescriptor(fd) || !m_tcp->isListening()) {
        if (error)
            *error = QStringLiteral("cannot take over the listening socket (fd %1): %2").arg(fd).arg(m_tcp->errorString());
        return false;
    }
    startAccepting();
    m_closed = false;
    qCInfo(lcServer) << "listening on the handed-over socket, port" << m_tcp->serverPort();
    return true;
}

int Server::listeningSocketDescriptor() const
{
    return m_tcp && m_tcp->isListening() ? int(m_tcp->socketDescriptor()) : -1;
}

void Server::setHandedOverTls(const QByteArray &certificatePem, const QByteArray &keyPem)
{
    m_handedOverCert = certificatePem;
    m_handedOverKey = keyPem;
}

QByteArray Server::tlsCertificatePem() const
{
    return m_tls ? m_tls->certificatePem() : QByteArray();
}

QByteArray Server::tlsKeyPem() const
{
    return m_tls ? m_tls->keyPem() : QByteArray();
}

bool Server::adoptAccessKey(const QString &key)
{
    if (!isWellFormedAccessKey(key))
        return false;
    m_key = key;
    return true;
}

void Server::beginRestart()
{
    m_restarting = true;
    // Not accepted any more: the kernel queues them for the next image.
    delete m_acceptor;
    m_acceptor = nullptr;
    // Each control viewer's session keeps its client's bytes until it
    // comes back with resume= (WebSocketViewer::closeForRestart).
    const auto viewers = m_viewers; // each close may leave the set
    for (WebSocketViewer *v : viewers)
        v->closeForRestart();
    const auto streams = m_eventStreams;
    for (HttpConnection *c : streams)
        c->endStream();
    m_eventTimer.stop();
    m_eventKeepalive.stop();
}

void Server::closeViewers(int code, const char *reason)
{
    const auto viewers = m_viewers; // each close may leave the set
    for (WebSocketViewer *v : viewers)
        v->closeWith(code, QString::fromLatin1(reason));
}

bool Server::isQuiet() const
{
    return m_viewers.isEmpty() && m_http.isEmpty() && LingeringClose::pending() == 0;
}

void Server::cancelRestart()
{
    m_restarting = false;
    if (m_tcp && m_tcp->isListening() && !m_closed && !m_acceptor)
        startAccepting();
}

} // namespace Tether
