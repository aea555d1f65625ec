// SPDX-License-Identifier: GPL-2.0-or-later
// Server's HTTP connections: accepting one (TCP_NODELAY, TLS, the bound on
// connections in progress and whom it evicts), the request head and the
// dispatch of a whole request, and what needs no API: the dashboard's static
// files, the key link and the key's cookie. The checks every request passes
// first are in serverauth.cpp; the REST API in serverapi.cpp.
#include "server.h"
#include "accesskey.h"
#include "httpconnection.h"
#include "logging.h"
#include "repeatlimiter.h"
#include "route.h"
#include "serversocket.h"
#include "serverutil.h"
#include "tlscontext.h"

#include <QFile>
#include <QFileInfo>
#include <QTcpServer>

#include <algorithm>
#include <unistd.h>

namespace Tether {

namespace {
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
} // namespace

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

} // namespace Tether
