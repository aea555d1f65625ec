// SPDX-License-Identifier: GPL-2.0-or-later
#include "server.h"
#include "settingsapi.h"
#include "route.h"
#include "acceptor.h"
#include "accesskey.h"
#include "bindpolicy.h"
#include "httpconnection.h"
#include "lingeringclose.h"
#include "logging.h"
#include "protocol.h"
#include "registry.h"
#include "screen.h"
#include "repeatlimiter.h"
#include "runtimefile.h"
#include "serversocket.h"
#include "sessionjson.h"
#include "sessionrecordstore.h"
#include "sharestore.h"
#include "spawnrequest.h"
#include "tlscontext.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSettings>
#include <QNetworkInterface>
#include <QTcpServer>
#include <QTcpSocket>
#include <QWebSocket>
#include <QWebSocketCorsAuthenticator>
#include <QWebSocketServer>

#include <algorithm>
#include <cmath>
#include <fcntl.h>
#include <limits>
#include <unistd.h>

namespace Tether {

namespace {
// Limits of Qt's WebSocket handshake parser (qwebsockethandshakerequest.cpp).
constexpr int kMaxUpgradeHeaders = 100;
constexpr int kMaxUpgradeHeaderLine = 8000;
} // namespace


namespace {
constexpr int kEventCoalesceMs = 100;
/// At most one `output` event per this many ms (docs/protocol.md "Live list").
constexpr int kOutputEventMs = 1000;
const QByteArray kCookieName = QByteArrayLiteral("tether_key");
/// A read-only link's cookie is this + the session id (base64url, so a valid
/// cookie name): one per session, so links to several sessions coexist in
/// one browser.
const QByteArray kShareCookiePrefix = QByteArrayLiteral("tether_share_");

using Headers = HttpConnection::Headers;

Headers header(const char *name, const QByteArray &value)
{
    return Headers{qMakePair(QByteArray(name), value)};
}

QByteArray contentTypeFor(const QString &path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("html") || suffix == QLatin1String("htm"))
        return "text/html; charset=utf-8";
    if (suffix == QLatin1String("js") || suffix == QLatin1String("mjs"))
        return "text/javascript; charset=utf-8";
    if (suffix == QLatin1String("css"))
        return "text/css; charset=utf-8";
    if (suffix == QLatin1String("svg"))
        return "image/svg+xml";
    if (suffix == QLatin1String("png"))
        return "image/png";
    if (suffix == QLatin1String("ico"))
        return "image/x-icon";
    // The dashboard's web app manifest (W3C Web App Manifest, "Media type registration").
    if (suffix == QLatin1String("webmanifest"))
        return "application/manifest+json";
    if (suffix == QLatin1String("json") || suffix == QLatin1String("map"))
        return "application/json; charset=utf-8";
    if (suffix == QLatin1String("woff2"))
        return "font/woff2";
    if (suffix == QLatin1String("woff"))
        return "font/woff";
    if (suffix == QLatin1String("txt"))
        return "text/plain; charset=utf-8";
    if (suffix == QLatin1String("wasm"))
        return "application/wasm";
    return "application/octet-stream";
}

QString peerKey(const QHostAddress &address, quint16 port)
{
    return address.toString() + QLatin1Char('|') + QString::number(port);
}

QHostAddress normalized(const QHostAddress &a)
{
    bool isV4 = false;
    const quint32 v4 = a.toIPv4Address(&isV4);
    return isV4 ? QHostAddress(v4) : a;
}
} // namespace

Server::Server(SessionRegistry *registry, const Config &config, QObject *parent)
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

// --- HTTP -------------------------------------------------------------------

void Server::onAccepted(qintptr fd)
{
    // Parented to m_tcp, as QTcpServer's own would be (takeSocket() too).
    // Under TLS the same path runs on the decrypted stream: HttpConnection,
    // the Host/Origin/key checks and QWebSocketServer::handleConnection()
    // read and write a QSslSocket's plaintext (Qt 5.15 and 6.4).
    QTcpSocket *socket = m_tls ? static_cast<QTcpSocket *>(new TlsServerSocket(m_tcp))
                               : static_cast<QTcpSocket *>(new ServerSocket(m_tcp));
    if (!socket->setSocketDescriptor(fd)) {
        logLimited(lcServer(), QtWarningMsg,
                   QStringLiteral("cannot use an accepted connection: %1").arg(socket->errorString()));
        ::close(int(fd));
        delete socket;
        return;
    }
    // TCP_NODELAY (tcp(7)): a terminal sends small writes (an echo, then
    // the command's output) that Nagle's algorithm would hold until the
    // peer's delayed ACK, ~40 ms each (RFC 896; RFC 1122 4.2.3.2). Bulk output
    // is unaffected: Qt still writes whole buffers per syscall.
    socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
    // The bound is on connections still in their request/response:
    // authenticated event streams (one per open dashboard) do not count,
    // so open dashboards cannot lock new requests out.
    if (!m_closed && m_http.size() - m_eventStreams.size() >= kMaxHttpConnections) {
        // Connection pressure: every peer is 127.0.0.1, so a local process
        // without the key could hold every slot with idle sockets and lock
        // all new requests out for the whole request timeout, again and
        // again. Make room by dropping the oldest connection that holds a
        // slot without having shown the key; a real request needs its slot
        // for milliseconds, so the oldest such one is the attacker's.
        if (HttpConnection *victim = evictionCandidate()) {
            // Any peer can cause this: rate-limited (issue 10).
            logLimited(lcServer(), QtWarningMsg,
                       victim->isAwaitingHead()
                           ? QStringLiteral("too many HTTP connections: dropping the oldest idle one")
                           : QStringLiteral("too many HTTP connections: dropping the oldest one without the key"));
            victim->abort(); // finished(): leaves m_http at once
        }
    }
    if (m_closed || m_http.size() - m_eventStreams.size() >= kMaxHttpConnections) {
        logLimited(lcServer(), QtWarningMsg, QStringLiteral("too many HTTP connections: dropping the new one"));
        socket->abort();
        socket->deleteLater();
        return;
    }
    auto *c = new HttpConnection(socket, m_requestTimeoutMs, this);
    m_http.insert(c);
    if (auto *tls = qobject_cast<QSslSocket *>(socket)) { // a TlsServerSocket: m_tls is set
        // The handshake counts against the request timeout and the
        // connection bound like a slow request head (it is one, to us).
        tls->setSslConfiguration(m_tls->configuration());
        connect(tls, &QAbstractSocket::errorOccurred, this, [tls](QAbstractSocket::SocketError e) {
            // TLS 1.1, a client that distrusts the certificate, garbage
            // after a handshake byte: Qt aborts that connection only. Any peer can
            // cause it: rate-limited (issue 10).
            if (e == QAbstractSocket::SslHandshakeFailedError || e == QAbstractSocket::SslInternalError
                || e == QAbstractSocket::SslInvalidUserDataError)
                logLimited(lcServer(), QtInfoMsg,
                           QStringLiteral("TLS handshake failed: %1").arg(tls->errorString()));
        });
    }
    connect(c, &HttpConnection::headReceived, this, [this, c]() { onHead(c); });
    connect(c, &HttpConnection::requestReceived, this, [this, c]() { onRequest(c); });
    connect(c, &HttpConnection::finished, this, [this, c]() {
        m_http.remove(c);
        m_outputStreams.remove(c);
        if (m_eventStreams.remove(c) && m_eventStreams.isEmpty())
            m_eventKeepalive.stop();
    });
    // Under TLS the handshake starts on the client's first byte, unless that
    // byte shows a plain-HTTP request, which is answered 400 "use https://"
    // in clear text instead of a handshake failure the client reports as
    // "Connection closed".
    c->startTlsOnFirstByte();
    c->start();
}

HttpConnection *Server::evictionCandidate() const
{
    // First choice: the oldest connection whose request head is incomplete
    // (idle, or slow loris). Then: the oldest one whose request has not shown
    // the key (a static-file answer the client does not read, a lingering
    // 401, a body trickled to a static path). Trusted connections and event
    // streams are never chosen.
    HttpConnection *best = nullptr;
    for (HttpConnection *c : m_http) {
        if (c->isTrusted() || m_eventStreams.contains(c))
            continue;
        if (!best || (c->isAwaitingHead() && !best->isAwaitingHead())
            || (c->isAwaitingHead() == best->isAwaitingHead() && c->serial() < best->serial()))
            best = c;
    }
    return best;
}

bool Server::hostAllowed(const QByteArray &hostHeader, const QHostAddress &local, bool *viaAllowHost) const
{
    if (viaAllowHost)
        *viaAllowHost = false;
    const QByteArray host = hostHeader.trimmed().toLower();
    if (host.isEmpty())
        return false;
    // Only the characters of a name or IP literal with a port: no IPv6 zone
    // ids ("[::1%eth0]") or anything else; the validated Host is echoed into
    // the Content-Security-Policy header.
    for (const char ch : host)
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == ':'
              || ch == '[' || ch == ']'))
            return false;
    QByteArray name;
    QByteArray portPart;
    bool hasPort = false;
    if (host.startsWith('[')) {
        const int close = host.indexOf(']');
        if (close < 0)
            return false;
        name = host.mid(1, close - 1);
        const QByteArray rest = host.mid(close + 1);
        if (!rest.isEmpty()) {
            if (!rest.startsWith(':'))
                return false;
            hasPort = true;
            portPart = rest.mid(1);
        }
    } else {
        const int colon = host.lastIndexOf(':');
        if (colon >= 0) {
            if (host.indexOf(':') != colon)
                return false; // unbracketed IPv6 is not a valid Host
            name = host.left(colon);
            hasPort = true;
            portPart = host.mid(colon + 1);
        } else {
            name = host;
        }
    }
    // Without a port the scheme's default is meant (RFC 9110 §7.2): 80, or
    // 443 under TLS.
    const quint16 defaultPort = m_tls ? 443 : 80;
    const bool ourPort = hasPort ? portPart == QByteArray::number(port()) : port() == defaultPort;
    if (ourPort && (name == "localhost" || hostIsAddressOfOurs(name, host.startsWith('['), local)))
        return true;
    // Names given with --allow-host (NAME, or NAME:PORT for a reverse proxy
    // that forwards another port here), and the certificate's DNS names:
    // the user vouches for them, so DNS rebinding to them is not an attack.
    for (const QString &entry : m_config.allowHosts) {
        const QByteArray e = entry.trimmed().toLower().toLatin1();
        const int colon = e.lastIndexOf(':');
        if (colon > 0 && !e.endsWith(']')) {
            const QByteArray entryPort = e.mid(colon + 1);
            const bool portMatches = hasPort ? portPart == entryPort : (entryPort == "80" || entryPort == "443");
            if (portMatches && nameMatches(e.left(colon), name)) {
                if (viaAllowHost)
                    *viaAllowHost = true;
                return true;
            }
        } else if (ourPort && nameMatches(e, name)) {
            if (viaAllowHost)
                *viaAllowHost = true;
            return true;
        }
    }
    if (ourPort && m_tls) {
        for (const QString &dns : m_tls->dnsNames())
            if (nameMatches(dns.toLatin1(), name))
                return true;
    }
    return false;
}

bool Server::hostIsAddressOfOurs(const QByteArray &name, bool bracketed, const QHostAddress &local) const
{
    const QHostAddress addr(QString::fromLatin1(name));
    if (addr.isNull())
        return false; // any other name: DNS rebinding
    // Only the forms of RFC 3986's IP-literal and IPv4address: an IPv6
    // address in brackets, or an IPv4 address as four decimal octets.
    // QHostAddress also reads inet_aton(3)'s shorthands ("127.1",
    // "2130706433", "0x7f000001"), which protocol.md never listed (issue 29).
    if (bracketed != (addr.protocol() == QAbstractSocket::IPv6Protocol))
        return false;
    if (!bracketed && addr.toString().toLatin1() != name)
        return false; // not the canonical dotted quad (no leading zeros either)
    // Compared as an address from here (protocol.md §2, "Host check"): an
    // IPv6 literal in any RFC 4291 §2.2 form, an IPv4-mapped one as the IPv4
    // address it maps ("[::ffff:7f00:1]" is 127.0.0.1). QHostAddress reads
    // the IPv4 part of a mapped address as a dotted quad only.
    const QHostAddress a = normalized(addr);
    if (a == QHostAddress(QHostAddress::LocalHost) || a == QHostAddress(QHostAddress::LocalHostIPv6))
        return true;
    const QHostAddress bind = normalized(listenAddress());
    if (!bind.isNull() && a == bind && bind != QHostAddress(QHostAddress::AnyIPv4)
        && bind != QHostAddress(QHostAddress::AnyIPv6) && bind != QHostAddress(QHostAddress::Any))
        return true;
    // The literal address the client connected to (relevant for a wildcard
    // bind): an IP literal cannot be rebound by DNS.
    return !local.isNull() && a == normalized(local);
}

bool Server::nameMatches(const QByteArray &pattern, const QByteArray &name)
{
    if (pattern.isEmpty() || name.isEmpty())
        return false;
    // "*.example.org": exactly one more label, as certificates mean it
    // (RFC 6125 §6.4.3), never the bare domain.
    if (pattern.startsWith("*.")) {
        const int dot = name.indexOf('.');
        return dot > 0 && name.mid(dot) == pattern.mid(1);
    }
    return pattern == name;
}

bool Server::authorized(const HttpConnection *c) const
{
    const QByteArray key = m_key.toLatin1();
    // Every tether_key cookie counts: cookies do not separate ports, so a
    // browser may hold one per path or a stale one from another server.
    const QList<QByteArray> cookies = c->request().cookies(kCookieName);
    for (const QByteArray &cookie : cookies)
        if (constantTimeEquals(cookie, key))
            return true;
    const QByteArray auth = c->request().header("authorization");
    if (auth.size() > 7 && auth.left(7).toLower() == "bearer ")
        return constantTimeEquals(auth.mid(7).trimmed(), key);
    return false;
}

bool Server::checkHostOriginAuth(HttpConnection *c, bool apiOrWs, QByteArray *hostOut)
{
    const HttpRequest &r = c->request();
    // In absolute-form the target's authority is the host (RFC 9112 §3.2.2):
    // it is what QWebSocketServer uses too, so that is what must pass. A Host
    // field is still required (RFC 9112 §3.2), as in origin-form.
    const QByteArray host = r.host().trimmed();
    bool viaAllowHost = false;
    if (!r.hasHeader("host") || !hostAllowed(host, c->socket()->localAddress(), &viaAllowHost)) {
        logLimited(lcServer(), QtInfoMsg, QStringLiteral("refused: Host not allowed"));
        c->respondError(403, QStringLiteral("Host not allowed"));
        return false;
    }
    if (hostOut)
        *hostOut = host.toLower();
    if (!apiOrWs)
        return true;
    if (r.hasHeader("origin")) {
        // The scheme this server speaks; for a name given with --allow-host
        // either one (a reverse proxy in front may terminate TLS, making
        // the page https:// while Tether speaks http://, or the reverse).
        const QByteArray origin = r.header("origin").trimmed().toLower();
        const QByteArray ownScheme = m_tls ? "https://" : "http://";
        const bool sameOrigin = origin == ownScheme + host.toLower()
            || (viaAllowHost && (origin == "http://" + host.toLower() || origin == "https://" + host.toLower()));
        if (!sameOrigin) {
            logLimited(lcServer(), QtInfoMsg, QStringLiteral("refused: cross-origin request"));
            c->respondError(403, QStringLiteral("Origin not allowed"));
            return false;
        }
    }
    if (authorized(c)) {
        c->setTrusted(true);
        return true;
    }
    QString token, why;
    switch (shareAccess(c, &token, &why)) {
    case ShareAccess::Granted:
        c->setShareToken(token);
        return true;
    case ShareAccess::Forbidden:
        logLimited(lcServer(), QtInfoMsg, QStringLiteral("refused: beyond what a read-only link grants"));
        c->respondError(403, why);
        return false;
    case ShareAccess::Ended:
        c->respondError(401, why, header("WWW-Authenticate", "Bearer realm=\"tether\""));
        return false;
    case ShareAccess::None:
        break;
    }
    c->respondError(401, QStringLiteral("missing or wrong access key"),
                    header("WWW-Authenticate", "Bearer realm=\"tether\""));
    return false;
}

Server::ShareAccess Server::shareAccess(const HttpConnection *c, QString *token, QString *why) const
{
    // The credentials a link holder can present: the bearer token (scripts,
    // any WebSocket client) and the cookies links set. Each is looked up in
    // constant time against every live token, so a peer without the key
    // gets only kMaxCandidates lookups per request, however many cookies
    // it sends.
    const HttpRequest &r = c->request();
    bool shareCookie = false;
    const QList<QByteArray> candidates = shareCandidates(r, &shareCookie);
    QList<ShareStore::Share> grants;
    ShareStore::Ended ended = ShareStore::Ended::Unknown;
    for (const QByteArray &candidate : std::as_const(candidates)) {
        ShareStore::Share s;
        if (m_shares->find(candidate, &s))
            grants.append(s);
        else if (ended == ShareStore::Ended::Unknown)
            ended = m_shares->whyEnded(candidate);
    }
    if (grants.isEmpty()) {
        if (ended == ShareStore::Ended::Revoked) {
            *why = QStringLiteral("this read-only link was revoked");
            return ShareAccess::Ended;
        }
        if (ended == ShareStore::Ended::SessionEnded) {
            *why = QStringLiteral("this read-only link has ended: its session is gone");
            return ShareAccess::Ended;
        }
        if (shareCookie) {
            *why = QStringLiteral("this read-only link is not valid (any more): it was revoked, or its session ended");
            return ShareAccess::Ended;
        }
        return ShareAccess::None;
    }
    // What a link grants, and nothing else: its session's info and watching it.
    const Route route = routeRequest(r);
    for (const ShareStore::Share &s : std::as_const(grants)) {
        if (!shareCovers(s.sessionId, route.id))
            continue;
        if (route.kind == Route::Kind::GetSession) {
            *token = s.token;
            return ShareAccess::Granted;
        }
        if (route.kind == Route::Kind::Upgrade) {
            if (route.mode == ViewerMode::Watch && !route.badQuery) {
                *token = s.token;
                return ShareAccess::Granted;
            }
            *why = QStringLiteral("a read-only link can only watch (mode=watch)");
            return ShareAccess::Forbidden;
        }
    }
    *why = QStringLiteral("a read-only link can only watch its own session");
    return ShareAccess::Forbidden;
}

QList<QByteArray> Server::shareCandidates(const HttpRequest &r, bool *shareCookie)
{
    constexpr int kMaxCandidates = 8;
    QList<QByteArray> candidates;
    const QByteArray auth = r.header("authorization");
    if (auth.size() > 7 && auth.left(7).toLower() == "bearer ")
        candidates.append(auth.mid(7).trimmed());
    *shareCookie = false;
    for (const auto &h : r.headers()) {
        if (h.first != "cookie")
            continue;
        for (const QByteArray &part : h.second.split(';')) {
            const int eq = part.indexOf('=');
            if (eq > 0 && part.left(eq).trimmed().startsWith(kShareCookiePrefix) && candidates.size() < kMaxCandidates) {
                candidates.append(part.mid(eq + 1).trimmed());
                *shareCookie = true;
            }
        }
    }
    return candidates;
}

QString Server::sessionNamedByCarriedLink(const HttpConnection *c, const QString &segment) const
{
    // An id means its session, with the key as without (ids first).
    if (!m_registry || segment.isEmpty() || m_registry->find(segment))
        return QString();
    bool shareCookie = false;
    for (const QByteArray &candidate : shareCandidates(c->request(), &shareCookie)) {
        ShareStore::Share s;
        if (m_shares->find(candidate, &s) && shareCovers(s.sessionId, segment))
            return s.sessionId;
    }
    return QString();
}

bool Server::shareCovers(const QString &sessionId, const QString &segment) const
{
    if (segment == sessionId)
        return true;
    if (!m_registry || segment.isEmpty() || m_registry->find(segment))
        return false;
    const Session *own = m_registry->find(sessionId);
    return own && own->name() == segment;
}

void Server::onHead(HttpConnection *c)
{
    if (c->request().isWebSocketUpgrade()) {
        handleUpgrade(c);
        return;
    }
    // Refuse early, before reading any body from a client we will not serve.
    checkHostOriginAuth(c, needsKey(c->request().path()), nullptr);
}

void Server::onRequest(HttpConnection *c)
{
    const Route route = routeRequest(c->request());
    if (route.api) {
        serveApi(c, route);
        return;
    }
    switch (route.kind) {
    case Route::Kind::UpgradeRequired:
        c->respondError(400, QStringLiteral("WebSocket upgrade required"));
        return;
    case Route::Kind::MethodNotAllowed:
        c->respondError(405, QStringLiteral("method not allowed"), header("Allow", route.allow));
        return;
    case Route::Kind::ShareLink:
        serveShareLink(c);
        return;
    case Route::Kind::KeyLink:
    case Route::Kind::StaticFile:
        serveStatic(c, route, c->request().host().trimmed().toLower());
        return;
    default:
        c->respondError(404, QStringLiteral("not found"));
        return;
    }
}

void Server::serveStatic(HttpConnection *c, const Route &route, const QByteArray &host)
{
    const HttpRequest &r = c->request();
    const bool head = r.method() == "HEAD";
    if (route.kind == Route::Kind::KeyLink) {
        // The printed link: trade the key for a cookie and drop it from
        // the address bar (303 keeps the fragment, e.g. #/s/<id>). A wrong
        // key sets nothing; the dashboard then asks for the printed link.
        const QByteArray given = r.query().queryItemValue(QStringLiteral("key"), QUrl::FullyDecoded).toUtf8();
        Headers h = header("Location", "/");
        if (constantTimeEquals(given, m_key.toLatin1()))
            h.append(qMakePair(QByteArray("Set-Cookie"), keyCookie()));
        else
            logLimited(lcServer(), QtInfoMsg, QStringLiteral("wrong key in link: no cookie set"));
        c->respond(303, h, QByteArray());
        return;
    }
    const QString &file = route.file;
    const QFileInfo info(file);
    QFile f(file);
    if (!info.isFile() || !f.open(QIODevice::ReadOnly)) {
        c->respondError(404, QStringLiteral("not found"));
        return;
    }
    // Static files hold no secret and need no key. The policy allows only
    // this origin's scripts, and WebSockets to this very host (older browsers
    // do not match ws: or wss: with 'self'; behind a TLS-terminating proxy,
    // current browsers match wss: with 'self', CSP Level 3 §6.7.2.8).
    const QByteArray csp = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data:; font-src 'self' data:; connect-src 'self' "
        + QByteArray(m_tls ? "wss://" : "ws://") + host + "; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
    Headers h;
    h.append(qMakePair(QByteArray("Content-Type"), contentTypeFor(file)));
    h.append(qMakePair(QByteArray("Cache-Control"), QByteArray("no-cache")));
    h.append(qMakePair(QByteArray("Content-Security-Policy"), csp));
    h.append(qMakePair(QByteArray("X-Frame-Options"), QByteArray("DENY")));
    // The page itself, asked for with the key's cookie: the cookie again, so
    // that its Max-Age counts from the last visit (an installed app used
    // now and then never asks for the key again).
    if (r.path() == "/") {
        const QByteArray key = m_key.toLatin1();
        const QList<QByteArray> cookies = r.cookies(kCookieName);
        if (std::any_of(cookies.cbegin(), cookies.cend(),
                        [&key](const QByteArray &cookie) { return constantTimeEquals(cookie, key); }))
            h.append(qMakePair(QByteArray("Set-Cookie"), keyCookie()));
    }
    c->respond(200, h, f.readAll(), head);
}

QByteArray Server::keyCookie() const
{
    // Persistent (Max-Age), so that a browser restart or an installed app
    // does not ask for the key again; still HttpOnly and SameSite=Strict,
    // and Secure under TLS: the browser never sends it in clear text (RFC
    // 6265 §4.1.2.5). `tether key --rotate` ends every such cookie.
    return kCookieName + '=' + m_key.toLatin1() + "; HttpOnly; SameSite=Strict; Path=/; Max-Age="
        + QByteArray::number(kKeyCookieMaxAge) + (m_tls ? "; Secure" : "");
}

void Server::serveApi(HttpConnection *c, const Route &route)
{
    if (!m_registry) {
        c->respondError(503, QStringLiteral("server shutting down"));
        return;
    }
    if (!c->shareToken().isEmpty()) {
        // shareAccess() let only this through; checked again, so that no
        // later change of the routing can widen what a link grants.
        ShareStore::Share share;
        const bool found = m_shares->find(c->shareToken().toLatin1(), &share);
        Session *s = found ? m_registry->find(share.sessionId) : nullptr;
        if (route.kind != Route::Kind::GetSession || !s || !shareCovers(share.sessionId, route.id)) {
            c->respondError(403, QStringLiteral("a read-only link can only watch its own session"));
            return;
        }
        // What a watcher needs to show the session, not how it runs (the
        // command line, directory and processes may hold what the owner
        // did not mean to show).
        const QJsonObject full = sessionToJson(s, m_registry);
        QJsonObject o;
        for (const char *field : {"id", "name", "title", "created", "state", "exit_code", "exit_signal", "cols", "rows"})
            o.insert(QLatin1String(field), full.value(QLatin1String(field)));
        o.insert(QStringLiteral("read_only"), true);
        c->respondJson(200, o);
        return;
    }
    switch (route.kind) {
    case Route::Kind::ListShares:
    case Route::Kind::CreateShare:
    case Route::Kind::RevokeShare:
    case Route::Kind::RevokeSessionShares:
        serveShares(c, route);
        return;
    case Route::Kind::ListSessions:
        c->respondJson(200, listJson());
        return;
    case Route::Kind::CreateSession:
        createSession(c);
        return;
    case Route::Kind::GetSession:
        if (Session *s = m_registry->find(route.id))
            c->respondJson(200, sessionToJson(s, m_registry));
        else if (const SessionRecord *r = endedRecord(route.id))
            c->respondJson(200, m_records->toJson(*r));
        else if (Session *named = m_registry->find(sessionNamedByCarriedLink(c, route.id)))
            c->respondJson(200, sessionToJson(named, m_registry));
        else
            c->respondError(404, QStringLiteral("no such session"));
        return;
    case Route::Kind::DeleteSession:
        // An ended session's record is forgotten (docs/protocol.md, "Ended sessions").
        if (m_registry->kill(route.id) || (m_records && m_records->forget(route.id)))
            c->respond(204, Headers(), QByteArray());
        else
            c->respondError(404, QStringLiteral("no such session"));
        return;
    case Route::Kind::PatchSession:
        if (!refuseEnded(c, route.id))
            patchSession(c, route.id);
        return;
    case Route::Kind::SessionScreen:
        serveSavedScreen(c, route.id);
        return;
    case Route::Kind::ReviveSession:
        reviveSession(c, route.id);
        return;
    case Route::Kind::SessionCommands:
        if (Session *s = m_registry->find(route.id))
            c->respondJson(200, commandListJson(s));
        else
            c->respondError(404, QStringLiteral("no such session"));
        return;
    case Route::Kind::CommandOutput:
        serveCommandOutput(c, route.id, route.command);
        return;
    case Route::Kind::SessionInput:
        if (!refuseEnded(c, route.id))
            sessionInput(c, route.id);
        return;
    case Route::Kind::RotateKey: {
        QString error;
        if (!rotateAccessKey(&error)) {
            c->respondError(500, QStringLiteral("cannot store the new key: %1").arg(error));
            return;
        }
        QJsonObject o;
        o.insert(QStringLiteral("key"), m_key);
        o.insert(QStringLiteral("url"), keyedUrl());
        c->respondJson(200, o);
        return;
    }
    case Route::Kind::Restart:
        serveRestart(c);
        return;
    case Route::Kind::Events: {
        const QString output = c->request().query().queryItemValue(QStringLiteral("output"));
        if (!output.isEmpty() && output != QLatin1String("0") && output != QLatin1String("1")) {
            c->respondError(400, QStringLiteral("output must be 0 or 1"));
            return;
        }
        startEventStream(c);
        if (output == QLatin1String("1") && m_eventStreams.contains(c))
            m_outputStreams.insert(c);
        return;
    }
    case Route::Kind::Settings:
        serveSettings(c);
        return;
    case Route::Kind::MethodNotAllowed:
        c->respondError(405, QStringLiteral("method not allowed"), header("Allow", route.allow));
        return;
    default:
        c->respondError(404, QStringLiteral("not found"));
        return;
    }
}

namespace {
/// The HTTP status of a refused name.
int nameErrorStatus(SessionRegistry::CreateError error)
{
    // 409 Conflict: the request is fine but clashes with another session
    // (RFC 9110 section 15.5.10); a malformed name is the request's fault.
    return error == SessionRegistry::CreateError::NameTaken ? 409 : 400;
}
} // namespace

void Server::createSession(HttpConnection *c)
{
    const SpawnRequest request = parseSpawnRequest(c->request().body(), m_config.commandArgv());
    if (!request.ok()) {
        c->respondError(request.status, request.error);
        return;
    }
    const SpawnOptions &opts = request.options;
    if (m_registry->isShuttingDown()) {
        c->respondError(503, QStringLiteral("server shutting down"));
        return;
    }
    SessionRegistry::CreateError error = SessionRegistry::CreateError::None;
    QString errorText;
    QString evicted;
    Session *s = m_registry->create(opts, request.name, &error, &errorText, &evicted);
    if (!s) {
        if (error == SessionRegistry::CreateError::BadName || error == SessionRegistry::CreateError::NameTaken)
            c->respondError(nameErrorStatus(error), errorText);
        else if (error == SessionRegistry::CreateError::TooManySessions)
            c->respondError(503, errorText.isEmpty() ? QStringLiteral("too many sessions") : errorText);
        else if (error == SessionRegistry::CreateError::OutOfResources)
            // Not the command's fault (that is 422): the server is out of
            // file descriptors, PTYs, processes or memory; retrying later can
            // work (protocol.md, POST /api/sessions).
            c->respondError(503, QStringLiteral("out of resources, try again later: %1").arg(errorText));
        else
            c->respondError(422, errorText.isEmpty() ? QStringLiteral("command cannot start") : errorText);
        return;
    }
    qCInfo(lcServer) << "session created:" << s->id();
    QJsonObject j = sessionToJson(s, m_registry);
    // Which detached session was ended to make room (protocol.md, POST).
    j.insert(QStringLiteral("evicted"), evicted.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(evicted));
    c->respondJson(201, j, header("Location", "/api/sessions/" + QUrl::toPercentEncoding(s->id())));
}

void Server::patchSession(HttpConnection *c, const QString &id)
{
    Session *s = m_registry->find(id);
    if (!s) {
        c->respondError(404, QStringLiteral("no such session"));
        return;
    }
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(c->request().body().trimmed(), &err);
    if (err.error != QJsonParseError::NoError) {
        c->respondError(400, QStringLiteral("invalid JSON: %1").arg(err.errorString()));
        return;
    }
    if (!doc.isObject()) {
        c->respondError(400, QStringLiteral("body must be a JSON object"));
        return;
    }
    const QJsonObject body = doc.object();
    const QJsonValue name = body.value(QStringLiteral("name"));
    const QJsonValue notify = body.value(QStringLiteral("notify"));
    if (name.isUndefined() && notify.isUndefined()) {
        // A body with nothing known to change is a mistake, not a no-op.
        c->respondError(400, QStringLiteral("nothing to change: the body has no \"name\" and no \"notify\""));
        return;
    }
    if (!name.isUndefined() && !name.isString() && !name.isNull()) {
        c->respondError(400, QStringLiteral("name must be a string or null"));
        return;
    }
    // Every field is checked before anything changes: a bad body changes nothing.
    Session::NotifySettings settings = s->notifySettings();
    if (!notify.isUndefined()) {
        if (!notify.isObject()) {
            c->respondError(400, QStringLiteral("notify must be an object: {\"muted\": true|false, \"next\": true|false, "
                                                "\"activity\": true|false, \"silence\": SECONDS}"));
            return;
        }
        const QJsonObject n = notify.toObject();
        for (const QString &field : {QStringLiteral("muted"), QStringLiteral("next"), QStringLiteral("activity")}) {
            const QJsonValue v = n.value(field);
            if (!v.isUndefined() && !v.isBool()) {
                c->respondError(400, QStringLiteral("notify.%1 must be true or false").arg(field));
                return;
            }
        }
        const QJsonValue silence = n.value(QStringLiteral("silence"));
        if (!silence.isUndefined()
            && (!silence.isDouble() || silence.toDouble() != std::floor(silence.toDouble()) || silence.toDouble() < 0
                || silence.toDouble() > Session::kMaxSilenceSeconds)) {
            c->respondError(400, QStringLiteral("notify.silence must be an integer 0..%1 (seconds; 0: off)")
                                     .arg(Session::kMaxSilenceSeconds));
            return;
        }
        settings.muted = n.value(QStringLiteral("muted")).toBool(settings.muted);
        settings.next = n.value(QStringLiteral("next")).toBool(settings.next);
        settings.activity = n.value(QStringLiteral("activity")).toBool(settings.activity);
        if (!silence.isUndefined())
            settings.silence = int(silence.toDouble());
    }
    if (!name.isUndefined()) {
        SessionRegistry::CreateError error = SessionRegistry::CreateError::None;
        QString errorText;
        if (!m_registry->rename(s, name.toString(), &error, &errorText)) {
            c->respondError(nameErrorStatus(error), errorText);
            return;
        }
        qCInfo(lcServer) << "session renamed:" << s->id();
    }
    s->setNotifySettings(settings);
    c->respondJson(200, sessionToJson(s, m_registry));
}

// --- settings ------------------------------------------------------------------

void Server::setSettingsFile(const QString &path)
{
    m_settingsFile = path;
    if (path.isEmpty())
        return;
    QSettings file(path, QSettings::IniFormat);
    const Config saved = Config::load(file);
    m_startBind = saved.bind;
    m_startPort = saved.port;
}

void Server::serveSettings(HttpConnection *c)
{
    // What runs (limits, command) and, for the address, what the next start
    // uses.
    Config view = m_config;
    view.limits = m_registry->limits();
    if (m_records)
        view.savedScrollbackLines = m_records->lines();
    if (!m_settingsFile.isEmpty()) {
        QSettings file(m_settingsFile, QSettings::IniFormat);
        const Config saved = Config::load(file);
        view.bind = saved.bind;
        view.port = saved.port;
    }
    auto answer = [this](const Config &shown) {
        QJsonObject o = SettingsApi::toJson(shown);
        o.insert(QStringLiteral("saved"), !m_settingsFile.isEmpty());
        o.insert(QStringLiteral("serving"), QJsonObject{{QStringLiteral("bind"), m_config.bind},
                                                        {QStringLiteral("port"), int(port())}});
        o.insert(QStringLiteral("restart_needed"),
                 !m_settingsFile.isEmpty() && (shown.bind != m_startBind || shown.port != m_startPort));
        // The values this run has from its command line, not from the file.
        QJsonArray overridden;
        if (!m_settingsFile.isEmpty()) {
            QSettings file(m_settingsFile, QSettings::IniFormat);
            const QJsonObject saved = SettingsApi::toJson(Config::load(file));
            for (const char *name : {"ttl", "exited_ttl", "buffer_size", "max_sessions", "notify_after",
                                     "saved_scrollback_lines", "shell_integration", "command"})
                if (saved.value(QLatin1String(name)) != o.value(QLatin1String(name)))
                    overridden.append(QLatin1String(name));
        }
        o.insert(QStringLiteral("overridden"), overridden);
        return o;
    };
    if (c->request().method() != "PATCH") {
        c->respondJson(200, answer(view));
        return;
    }
    Config next = view;
    QString error;
    QStringList changed;
    if (!SettingsApi::applyPatch(c->request().body(), &next, &error, &changed)) {
        c->respondError(400, error);
        return;
    }
    if (!m_settingsFile.isEmpty() && !changed.isEmpty()) {
        // Only what changed replaces the file's values: a limit given on the
        // command line for this run (`--ttl 120`) is not saved by a change
        // of another field.
        QSettings file(m_settingsFile, QSettings::IniFormat);
        Config saved = Config::load(file);
        const QJsonObject fields = SettingsApi::toJson(next);
        QJsonObject patch;
        for (const QString &name : std::as_const(changed))
            patch.insert(name, fields.value(name));
        QString ignored;
        SettingsApi::applyPatch(QJsonDocument(patch).toJson(QJsonDocument::Compact), &saved, &ignored);
        saved.save(file);
        file.sync();
        if (file.status() != QSettings::NoError) {
            c->respondError(500, QStringLiteral("cannot save the settings to %1; nothing was changed").arg(m_settingsFile));
            return;
        }
    }
    // Live: the limits (a new buffer size applies to every session), the
    // default command of new sessions.
    // The address is used at the next start.
    if (!changed.isEmpty()) {
        m_registry->setLimits(next.limits);
        m_config.limits = next.limits;
        m_config.command = next.command;
        m_config.savedScrollbackLines = next.savedScrollbackLines;
        if (m_records)
            m_records->setLines(next.savedScrollbackLines);
        qCInfo(lcServer).noquote() << "settings changed:" << changed.join(QStringLiteral(", "));
    }
    c->respondJson(200, answer(next));
}

void Server::sessionInput(HttpConnection *c, const QString &id)
{
    Session *s = m_registry->find(id);
    if (!s) {
        c->respondError(404, QStringLiteral("no such session"));
        return;
    }
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(c->request().body().trimmed(), &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject()) {
        c->respondError(400, QStringLiteral("body must be a JSON object {\"data\": \"TEXT\"}"));
        return;
    }
    const QJsonValue data = doc.object().value(QStringLiteral("data"));
    if (!data.isString()) {
        c->respondError(400, QStringLiteral("\"data\" must be a string"));
        return;
    }
    if (s->state() != Session::State::Running) {
        c->respondError(409, QStringLiteral("the session has exited"));
        return;
    }
    if (!s->sendApiInput(data.toString().toUtf8())) {
        c->respondError(503, QStringLiteral("the program is not reading its input"));
        return;
    }
    c->respond(204, Headers(), QByteArray());
}

// --- restart in place ----------------------------------------------------------

void Server::serveRestart(HttpConnection *c)
{
    // GET or POST (routeRequest answers 405 to the others).
    const QByteArray method = c->request().method();
    if (!m_restartHooks.request || !m_restartHooks.status) {
        c->respondError(503, QStringLiteral("restart in place is not available in this server"));
        return;
    }
    if (method == "GET") {
        c->respondJson(200, m_restartHooks.status());
        return;
    }
    QString why;
    if (!m_restartHooks.request(&why)) {
        c->respondError(500, QStringLiteral("cannot restart: %1").arg(why));
        return;
    }
    c->respondJson(202, m_restartHooks.status());
}

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

// --- /api/events --------------------------------------------------------------

QByteArray Server::sessionsEvent() const
{
    return "event: sessions\ndata: "
        + QJsonDocument(listJson()).toJson(QJsonDocument::Compact) + "\n\n";
}

QByteArray Server::shutdownEvent()
{
    return "event: shutdown\ndata: {\"reason\":\"" + QByteArray(Protocol::CloseReason::ServerShutdown) + "\"}\n\n";
}

QByteArray Server::serverEvent() const
{
    if (!m_restartHooks.status)
        return QByteArray();
    return "event: server\ndata: " + QJsonDocument(m_restartHooks.status()).toJson(QJsonDocument::Compact) + "\n\n";
}

void Server::sendServerEvent()
{
    const QByteArray event = serverEvent();
    if (event.isEmpty() || m_restarting)
        return;
    const auto streams = m_eventStreams;
    for (HttpConnection *c : streams)
        c->writeStream(event);
}

void Server::writeEvent(const QByteArray &event)
{
    if (m_restarting)
        return;
    const auto streams = m_eventStreams;
    for (HttpConnection *c : streams)
        c->writeStream(event);
}

void Server::sendCommandEvent(Session *s, const CommandRecord &record, bool finished)
{
    if (m_eventStreams.isEmpty())
        return;
    QJsonObject o;
    o.insert(QStringLiteral("session"), s->id());
    o.insert(QStringLiteral("phase"), finished ? QStringLiteral("finished") : QStringLiteral("started"));
    o.insert(QStringLiteral("command"), commandToJson(record));
    writeEvent("event: command\ndata: " + QJsonDocument(o).toJson(QJsonDocument::Compact) + "\n\n");
}

void Server::sendNotifyEvent(Session *s, const QString &kind, const QString &text, bool watched, bool requested,
                             const CommandRecord &record)
{
    if (m_eventStreams.isEmpty())
        return;
    QJsonObject o;
    o.insert(QStringLiteral("session"), s->id());
    o.insert(QStringLiteral("name"), s->name());
    o.insert(QStringLiteral("kind"), kind);
    o.insert(QStringLiteral("text"), text);
    o.insert(QStringLiteral("watched"), watched);
    o.insert(QStringLiteral("requested"), requested);
    o.insert(QStringLiteral("command"), record.id ? QJsonValue(commandToJson(record)) : QJsonValue(QJsonValue::Null));
    writeEvent("event: notify\ndata: " + QJsonDocument(o).toJson(QJsonDocument::Compact) + "\n\n");
}

void Server::startEventStream(HttpConnection *c)
{
    Headers h;
    h.append(qMakePair(QByteArray("Content-Type"), QByteArray("text/event-stream; charset=utf-8")));
    h.append(qMakePair(QByteArray("Cache-Control"), QByteArray("no-cache")));
    c->startStream(200, h);
    m_eventStreams.insert(c);
    if (!m_eventKeepalive.isActive())
        m_eventKeepalive.start();
    c->writeStream(sessionsEvent());
    const QByteArray server = serverEvent(); // version and update; none without hooks
    if (!server.isEmpty())
        c->writeStream(server);
    if (m_restarting)
        c->endStream(); // EventSource reconnects, to the next process image
}

void Server::scheduleEvents()
{
    if (!m_eventStreams.isEmpty() && !m_eventTimer.isActive())
        m_eventTimer.start();
}

void Server::broadcastEvents()
{
    if (m_eventStreams.isEmpty() || !m_registry)
        return;
    const QByteArray event = sessionsEvent();
    const auto streams = m_eventStreams;
    for (HttpConnection *c : streams)
        c->writeStream(event);
}

void Server::watchOutput(Session *session)
{
    connect(session, &Session::outputArrived, this, &Server::scheduleOutputEvent, Qt::UniqueConnection);
}

void Server::scheduleOutputEvent()
{
    if (m_outputStreams.isEmpty() || m_outputTimer.isActive())
        return;
    // The first output after a quiet second soon; then one event a second.
    const qint64 since = m_outputSentAt.isValid() ? m_outputSentAt.elapsed() : kOutputEventMs;
    m_outputTimer.start(int(std::max<qint64>(kEventCoalesceMs, kOutputEventMs - since)));
}

void Server::sendOutputEvent()
{
    if (m_outputStreams.isEmpty() || !m_registry || m_restarting)
        return;
    QJsonObject moved;
    QHash<QString, quint64> now;
    const auto sessions = m_registry->sessions();
    now.reserve(sessions.size());
    for (const Session *s : sessions) {
        const quint64 offset = s->offset();
        now.insert(s->id(), offset);
        const auto was = m_outputSent.constFind(s->id());
        if (was == m_outputSent.cend() || was.value() != offset)
            moved.insert(s->id(), double(offset));
    }
    m_outputSent = now;
    m_outputSentAt.start();
    if (moved.isEmpty())
        return;
    QJsonObject o;
    o.insert(QStringLiteral("sessions"), moved);
    const QByteArray event = "event: output\ndata: " + QJsonDocument(o).toJson(QJsonDocument::Compact) + "\n\n";
    const auto streams = m_outputStreams;
    for (HttpConnection *c : streams)
        c->writeStream(event);
}

// --- WebSocket ----------------------------------------------------------------

void Server::handleUpgrade(HttpConnection *c)
{
    const HttpRequest &r = c->request();
    if (!checkHostOriginAuth(c, needsKey(r.path()), nullptr)) {
        qCDebug(lcServer).noquote() << "upgrade" << r.path() << "from port" << c->socket()->peerPort()
                                    << "refused: Host, Origin or credentials";
        return;
    }
    const Route route = routeRequest(r);
    if (route.kind == Route::Kind::MethodNotAllowed) {
        c->respondError(405, QStringLiteral("method not allowed"), header("Allow", route.allow));
        return;
    }
    if (route.kind != Route::Kind::Upgrade) {
        c->respondError(404, QStringLiteral("not found"));
        return;
    }
    if (!checkHandshake(c))
        return;
    // Qt's handshake parser (QWebSocketHandshakeRequest) drops, without an
    // answer, a head with a header line over 8 KiB or more than 100 headers;
    // a large Cookie header (cookies on 127.0.0.1 are shared by every local
    // port) then made attaching fail silently. Answer it plainly instead.
    const auto headers = r.headers();
    bool tooLarge = headers.size() > kMaxUpgradeHeaders;
    for (const auto &h : headers)
        tooLarge = tooLarge || h.first.size() + 2 + h.second.size() > kMaxUpgradeHeaderLine;
    if (tooLarge) {
        c->respondError(431, QStringLiteral("request header fields too large for a WebSocket upgrade "
                                            "(at most %1 headers of at most %2 bytes each)")
                                 .arg(kMaxUpgradeHeaders).arg(kMaxUpgradeHeaderLine));
        return;
    }
    if (!route.badRequest.isEmpty()) {
        c->respondError(400, route.badRequest);
        return;
    }
    PendingUpgrade p;
    p.id = route.id;
    p.mode = route.mode;
    p.replay.resume = route.resume;
    p.replay.screen = route.screen;
    p.replay.lines = route.lines;
    p.replay.cols = route.cols;
    p.replay.rows = route.rows;
    p.badQuery = route.badQuery;
    p.kind = r.hasHeader("origin") ? ViewerKind::Browser
        : route.desktopClient     ? ViewerKind::LocalWindow
                                  : ViewerKind::Cli;
    p.shareToken = c->shareToken();
    ShareStore::Share share;
    if (!p.shareToken.isEmpty() && m_shares->find(p.shareToken.toLatin1(), &share))
        p.id = share.sessionId; // the segment may be its name (shareCovers)
    else if (c->isTrusted())
        if (const QString viaLink = sessionNamedByCarriedLink(c, route.id); !viaLink.isEmpty())
            p.id = viaLink; // the key, and a link of the session of that name

    QTcpSocket *socket = c->socket();
    const QString key = peerKey(socket->peerAddress(), socket->peerPort());
    p.tcp = socket;
    m_pending.insert(key, p);
    m_http.remove(c);
    socket = c->takeSocket(m_tcp);
    // Handshake failed inside QWebSocketServer: forget the pending attach.
    connect(socket, &QObject::destroyed, this, [this, key]() { m_pending.remove(key); });
    // Names a client's invalid close code in the answer (issue 10); before
    // handleConnection(): its readyRead connection must come first.
    watchWebSocketClose(socket);
    m_ws->handleConnection(socket);
}

namespace {
/// The comma-separated elements of a list header (RFC 7230 §7), trimmed and
/// lower-cased, empty elements dropped.
QList<QByteArray> listTokens(const QByteArray &value)
{
    QList<QByteArray> out;
    const QList<QByteArray> parts = value.split(',');
    for (const QByteArray &p : parts) {
        const QByteArray t = p.trimmed().toLower();
        if (!t.isEmpty())
            out.append(t);
    }
    return out;
}

/// RFC 6455 §4.1/§4.2.1 item 5: base64 of 16 random bytes (24 characters
/// with padding). Anything else is not a WebSocket key.
bool validWebSocketKey(const QByteArray &key)
{
    if (key.size() != 24)
        return false;
    const auto decoded = QByteArray::fromBase64Encoding(key, QByteArray::AbortOnBase64DecodingErrors);
    return decoded.decodingStatus == QByteArray::Base64DecodingStatus::Ok && decoded.decoded.size() == 16;
}
} // namespace

bool Server::checkHandshake(HttpConnection *c)
{
    const HttpRequest &r = c->request();
    // RFC 6455 §4.2.1: a GET of HTTP/1.1 or later (the method was checked).
    if (r.httpMajor() < 1 || (r.httpMajor() == 1 && r.httpMinor() < 1)) {
        c->respondError(400, QStringLiteral("bad WebSocket handshake: HTTP/1.1 or later required"));
        return false;
    }
    // §4.2.1 items 3 and 4: Upgrade contains "websocket", Connection contains
    // "upgrade", both case-insensitive list tokens ("Connection: keep-alive,
    // Upgrade" is what Firefox sends). Qt's handshake parser reads a single
    // field of each (Qt 6 the first, Qt 5 the last) and wants Upgrade to be
    // exactly "websocket": a head it would read differently is refused here
    // with a reason instead of reaching it.
    if (r.headerCount("upgrade") != 1 || listTokens(r.header("upgrade")) != QList<QByteArray>{"websocket"}) {
        c->respondError(400, QStringLiteral("bad WebSocket handshake: Upgrade must be one field \"websocket\""));
        return false;
    }
    if (r.headerCount("connection") != 1 || !listTokens(r.header("connection")).contains("upgrade")) {
        c->respondError(400, QStringLiteral("bad WebSocket handshake: Connection must be one field listing \"Upgrade\""));
        return false;
    }
    // §4.2.1 item 6 and §4.4: version 13 only; otherwise 426 naming it.
    if (r.headerCount("sec-websocket-version") != 1 || r.header("sec-websocket-version").trimmed() != "13") {
        Headers h = header("Sec-WebSocket-Version", "13");
        h.append(qMakePair(QByteArray("Upgrade"), QByteArray("websocket")));
        c->respondError(426, QStringLiteral("unsupported WebSocket version: only 13 is supported"), h);
        return false;
    }
    // §4.2.1 item 5.
    if (r.headerCount("sec-websocket-key") != 1 || !validWebSocketKey(r.header("sec-websocket-key"))) {
        c->respondError(400, QStringLiteral("bad WebSocket handshake: Sec-WebSocket-Key must be base64 of 16 bytes"));
        return false;
    }
    // QWebSocketServer reads the head itself and needs CRLF line ends; check
    // here so it never waits on a head it cannot parse.
    if (!c->socket()->peek(r.headLength()).endsWith("\r\n\r\n")) {
        c->respondError(400, QStringLiteral("bad WebSocket handshake"));
        return false;
    }
    return true;
}

void Server::onWebSocket()
{
    while (m_ws->hasPendingConnections()) {
        QWebSocket *socket = m_ws->nextPendingConnection();
        const QString key = peerKey(socket->peerAddress(), socket->peerPort());
        const PendingUpgrade p = m_pending.take(key);
        auto *v = new WebSocketViewer(socket, p.kind, m_viewerOptions, this);
        v->setTcpSocket(p.tcp);
        m_viewers.insert(v);
        connect(v, &WebSocketViewer::finished, this, [this, v]() {
            m_viewers.remove(v);
            emit viewerDisconnected();
        });
        emit viewerConnected();
        if (m_restarting) {
            // Upgraded while the swap drains: this one resumes with the others.
            v->closeWith(Protocol::ServiceRestart, QString::fromLatin1(Protocol::CloseReason::ServiceRestart));
            continue;
        }
        Session *session = (m_registry && !p.id.isEmpty() && !m_closed) ? m_registry->find(p.id) : nullptr;
        if (!p.shareToken.isEmpty()) {
            // Revoked between the check and now: as if it had been open.
            if (!m_shares->find(p.shareToken.toLatin1(), nullptr)) {
                v->closeWith(Protocol::Unauthorized, QString::fromLatin1(Protocol::CloseReason::ShareRevoked));
                continue;
            }
            int sameSession = 0;
            for (auto it = m_shareViewers.cbegin(); it != m_shareViewers.cend(); ++it)
                sameSession += it.key()->session() == session && !it.key()->isClosing() ? 1 : 0;
            if (session && sameSession >= kMaxShareViewersPerSession) {
                v->closeWith(Protocol::TooManyViewers, QString::fromLatin1(Protocol::CloseReason::TooManyViewers));
                continue;
            }
            m_shareViewers.insert(v, p.shareToken);
            connect(v, &WebSocketViewer::finished, this, [this, v]() { m_shareViewers.remove(v); });
            v->start(session, ViewerMode::Watch, p.replay, false); // a link only ever watches
            continue;
        }
        if (!session && m_records && !m_closed) {
            if (const SessionRecord *r = m_records->findEnded(p.id)) {
                // An ended session (docs/protocol.md, "Ended sessions").
                const QString why = m_records->why(*r);
                const char *reason = why == QLatin1String("reboot") ? Protocol::CloseReason::SessionEndedByReboot
                    : why == QLatin1String("crash")                 ? Protocol::CloseReason::SessionEndedByCrash
                                                                    : Protocol::CloseReason::SessionEndedByShutdown;
                v->closeWith(Protocol::Ended, QString::fromLatin1(reason));
                continue;
            }
        }
        v->start(session, p.mode, p.replay, p.badQuery);
    }
}

// --- ended sessions (docs/protocol.md, "Ended sessions") -------------------------

void Server::setRecordStore(SessionRecordStore *store)
{
    if (m_records)
        m_records->disconnect(this);
    m_records = store;
    if (store)
        connect(store, &SessionRecordStore::endedChanged, this, &Server::scheduleEvents);
}

const SessionRecord *Server::endedRecord(const QString &id) const
{
    return m_records && !m_registry->find(id) ? m_records->findEnded(id) : nullptr;
}

QJsonObject Server::listJson() const
{
    QJsonObject o = sessionListJson(m_registry);
    if (!m_records || m_records->ended().isEmpty())
        return o;
    QJsonArray list = o.value(QStringLiteral("sessions")).toArray();
    for (const SessionRecord &r : m_records->ended())
        list.append(m_records->toJson(r));
    o.insert(QStringLiteral("sessions"), list);
    return o;
}

bool Server::refuseEnded(HttpConnection *c, const QString &id)
{
    const SessionRecord *r = endedRecord(id);
    if (!r)
        return false;
    c->respondError(409, QStringLiteral("session ended by %1: revive it (POST /api/sessions/%2/revive) or delete it")
                             .arg(m_records->why(*r), id));
    return true;
}

void Server::serveCommandOutput(HttpConnection *c, const QString &id, quint64 commandId)
{
    Session *s = m_registry->find(id);
    if (!s) {
        c->respondError(404, QStringLiteral("no such session"));
        return;
    }
    const QList<CommandRecord> &commands = s->commands().commands();
    const auto it = std::find_if(commands.cbegin(), commands.cend(),
                                 [commandId](const CommandRecord &r) { return commandId != 0 && r.id == commandId; });
    if (it == commands.cend()) {
        c->respondError(404, QStringLiteral("no such command"));
        return;
    }
    if (it->running()) {
        c->respondError(409, QStringLiteral("command %1 is still running").arg(it->id));
        return;
    }
    const RingBuffer &ring = s->buffer();
    const quint64 start = it->outputStart;
    const quint64 end = std::max(it->outputEnd, start);
    if (start < ring.startOffset() || end > ring.endOffset()) {
        c->respondError(410, QStringLiteral("the output of command %1 is no longer retained (the session keeps its "
                                            "last %2 bytes)")
                                 .arg(it->id)
                                 .arg(ring.capacity()));
        return;
    }
    QByteArray bytes(qsizetype(end - start), Qt::Uninitialized);
    if (!bytes.isEmpty())
        bytes.resize(ring.read(start, bytes.data(), bytes.size()));
    Headers h;
    h.append(qMakePair(QByteArray("Content-Type"), QByteArray("application/octet-stream")));
    h.append(qMakePair(QByteArray("Cache-Control"), QByteArray("no-store")));
    c->respond(200, h, bytes);
}

void Server::serveSavedScreen(HttpConnection *c, const QString &id)
{
    // ?lines=N: at most N lines of an ended session's saved scrollback (the
    // dashboard's miniatures ask for 0: they draw the screen only). A live
    // session's screen has no scrollback: N changes nothing there.
    int lines = -1;
    const QUrlQuery query = c->request().query();
    if (query.hasQueryItem(QStringLiteral("lines"))) {
        const std::optional<quint64> n = parseOffset(query.queryItemValue(QStringLiteral("lines"), QUrl::FullyDecoded));
        if (!n || *n > quint64(Screen::kMaxScrollbackLines)) {
            c->respondError(400, QStringLiteral("bad lines: an integer 0..%1").arg(Screen::kMaxScrollbackLines));
            return;
        }
        lines = int(*n);
    }
    if (const SessionRecord *r = endedRecord(id)) {
        Headers h;
        h.append(qMakePair(QByteArray("Content-Type"), QByteArray("application/octet-stream")));
        h.append(qMakePair(QByteArray("Cache-Control"), QByteArray("no-store")));
        c->respond(200, h, lines >= 0 ? SessionRecordStore::screenWithLines(*r, lines) : r->screen);
        return;
    }
    if (Session *s = m_registry->find(id)) {
        // A live session: its screen now (for a look without attaching).
        quint64 offset = 0;
        const QByteArray bytes = s->screenPreview(&offset);
        const Screen *screen = s->screen();
        if (!screen) {
            c->respondError(409, QStringLiteral("the session has no server screen (setting sessions/screen is off, "
                                                "or it is larger than %1 cells): attach to see it")
                                     .arg(Session::kMaxScreenCells));
            return;
        }
        Headers h;
        h.append(qMakePair(QByteArray("Content-Type"), QByteArray("application/octet-stream")));
        h.append(qMakePair(QByteArray("Cache-Control"), QByteArray("no-store")));
        h.append(qMakePair(QByteArray("X-Tether-Offset"), QByteArray::number(offset)));
        h.append(qMakePair(QByteArray("X-Tether-Size"),
                           QByteArray::number(screen->cols()) + 'x' + QByteArray::number(screen->rows())));
        c->respond(200, h, bytes);
        return;
    }
    c->respondError(404, QStringLiteral("no such session"));
}

void Server::reviveSession(HttpConnection *c, const QString &id)
{
    if (m_registry->find(id)) {
        c->respondError(409, QStringLiteral("the session is running: only an ended session can be revived"));
        return;
    }
    const SessionRecord *found = endedRecord(id);
    if (!found) {
        c->respondError(404, QStringLiteral("no such session"));
        return;
    }
    if (m_registry->isShuttingDown()) {
        c->respondError(503, QStringLiteral("server shutting down"));
        return;
    }
    const SessionRecord r = *found;
    SpawnOptions opts;
    opts.argv = r.command;
    opts.loginShell = r.loginShell; // a login shell comes back as one
    opts.cwd = r.cwd;
    opts.cols = r.cols;
    opts.rows = r.rows;
    SessionRegistry::CreateError error = SessionRegistry::CreateError::None;
    QString errorText;
    QString evicted;
    // Its name, unless a live session took it meanwhile, or it is not a
    // name a session can have (a record is read as it is on disk: written
    // by another version, or by hand; too long, say): a record listed as
    // ended is revivable, by its id and by its name, and comes back unnamed.
    QString name = r.name;
    if (m_registry->findByName(name)) {
        name.clear();
    } else if (const QString problem = SessionRegistry::nameProblem(name); !problem.isEmpty()) {
        qCInfo(lcServer).noquote() << "session" << id << "is revived unnamed: its recorded name is refused now:" << problem;
        name.clear();
    }
    Session *s = m_registry->create(opts, name, &error, &errorText, &evicted);
    if (!s) {
        if (error == SessionRegistry::CreateError::TooManySessions || error == SessionRegistry::CreateError::OutOfResources)
            c->respondError(503, errorText.isEmpty() ? QStringLiteral("too many sessions") : errorText);
        else
            c->respondError(422, errorText.isEmpty() ? QStringLiteral("command cannot start") : errorText);
        return;
    }
    // Before the event loop reads the program's first output.
    s->injectOutput(SessionRecordStore::revivePreamble(r, m_records->why(r)));
    m_records->forget(id);
    qCInfo(lcServer) << "session" << id << "revived as" << s->id();
    QJsonObject j = sessionToJson(s, m_registry);
    j.insert(QStringLiteral("revived_from"), id);
    j.insert(QStringLiteral("evicted"), evicted.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(evicted));
    c->respondJson(201, j, header("Location", "/api/sessions/" + QUrl::toPercentEncoding(s->id())));
}

} // namespace Tether

// --- read-only links ------------------------------------------------------------

namespace Tether {

QString Server::shareUrl(const QString &token) const
{
    return publicUrl() + QStringLiteral("?share=") + token;
}

int Server::shareViewerCount(const QString &token) const
{
    int n = 0;
    for (auto it = m_shareViewers.cbegin(); it != m_shareViewers.cend(); ++it)
        n += it.value() == token && !it.key()->isClosing() ? 1 : 0;
    return n;
}

QJsonObject Server::shareJson(const QString &token, const QString &sessionId, const QDateTime &created) const
{
    QJsonObject o;
    o.insert(QStringLiteral("token"), token);
    o.insert(QStringLiteral("session"), sessionId);
    o.insert(QStringLiteral("created"), created.toUTC().toString(Qt::ISODate));
    o.insert(QStringLiteral("url"), shareUrl(token));
    o.insert(QStringLiteral("viewers"), shareViewerCount(token));
    return o;
}

void Server::serveShares(HttpConnection *c, const Route &route)
{
    switch (route.kind) {
    case Route::Kind::ListShares: {
        QJsonArray list;
        for (const ShareStore::Share &s : m_shares->list())
            list.append(shareJson(s.token, s.sessionId, s.created));
        c->respondJson(200, QJsonObject{{QStringLiteral("shares"), list}});
        return;
    }
    case Route::Kind::CreateShare: {
        QJsonParseError err;
        const QJsonDocument doc = QJsonDocument::fromJson(c->request().body().trimmed(), &err);
        if (err.error != QJsonParseError::NoError || !doc.isObject()) {
            c->respondError(400, QStringLiteral("body must be a JSON object {\"session\": \"ID\"}"));
            return;
        }
        const QJsonValue id = doc.object().value(QStringLiteral("session"));
        if (!id.isString()) {
            c->respondError(400, QStringLiteral("session must be a string (the session's id)"));
            return;
        }
        Session *s = m_registry->find(id.toString());
        if (!s) {
            c->respondError(404, QStringLiteral("no such session"));
            return;
        }
        ShareStore::Share share;
        if (!m_shares->create(s->id(), &share)) {
            c->respondError(409, QStringLiteral("session %1 has %2 read-only links (the limit); revoke some with "
                                                "`tether share --revoke %1`")
                                     .arg(s->id()).arg(ShareStore::kMaxPerSession));
            return;
        }
        qCInfo(lcServer) << "read-only link made for session" << s->id();
        c->respondJson(201, shareJson(share.token, share.sessionId, share.created));
        return;
    }
    case Route::Kind::RevokeShare:
        if (m_shares->revoke(route.id)) {
            qCInfo(lcServer) << "read-only link revoked";
            c->respond(204, Headers(), QByteArray());
        } else {
            c->respondError(404, QStringLiteral("no such read-only link"));
        }
        return;
    case Route::Kind::RevokeSessionShares: {
        if (!m_registry->find(route.id)) {
            c->respondError(404, QStringLiteral("no such session"));
            return;
        }
        const int n = m_shares->revokeSession(route.id);
        qCInfo(lcServer) << "read-only links revoked for session" << route.id << n;
        c->respondJson(200, QJsonObject{{QStringLiteral("revoked"), n}});
        return;
    }
    default:
        c->respondError(404, QStringLiteral("not found"));
        return;
    }
}

void Server::serveShareLink(HttpConnection *c)
{
    // The link a share prints: trade the token for a cookie named after its
    // session and open the watch-only view (#/share/ID); as for the key link
    // the token leaves the address bar at once. A dead token sets nothing
    // and the page says the link is not valid.
    const QByteArray given = c->request().query().queryItemValue(QStringLiteral("share"), QUrl::FullyDecoded).toUtf8();
    ShareStore::Share s;
    if (!m_shares->find(given, &s)) {
        logLimited(lcServer(), QtInfoMsg, QStringLiteral("dead read-only link opened: no cookie set"));
        c->respond(303, header("Location", "/#/share"), QByteArray());
        return;
    }
    Headers h = header("Location", "/#/share/" + s.sessionId.toLatin1());
    h.append(qMakePair(QByteArray("Set-Cookie"),
                       kShareCookiePrefix + s.sessionId.toLatin1() + '=' + s.token.toLatin1()
                           + "; HttpOnly; SameSite=Strict; Path=/" + (m_tls ? "; Secure" : "")));
    c->respond(303, h, QByteArray());
}

} // namespace Tether
