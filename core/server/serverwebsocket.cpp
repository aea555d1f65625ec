// SPDX-License-Identifier: GPL-2.0-or-later
// Server's WebSocket attach path (/ws/{id}): the upgrade checked (RFC 6455
// handshake, Qt's parser limits) and handed, head unread, to
// QWebSocketServer; each upgraded socket started as a WebSocketViewer of its
// session, or closed with the code that says why not.
#include "server.h"
#include "httpconnection.h"
#include "logging.h"
#include "protocol.h"
#include "registry.h"
#include "route.h"
#include "serversocket.h"
#include "serverutil.h"
#include "sessionrecordstore.h"
#include "sharestore.h"

#include <QTcpServer>
#include <QTcpSocket>
#include <QWebSocket>
#include <QWebSocketServer>

namespace Tether {

namespace {
// Limits of Qt's WebSocket handshake parser (qwebsockethandshakerequest.cpp).
constexpr int kMaxUpgradeHeaders = 100;
constexpr int kMaxUpgradeHeaderLine = 8000;

QString peerKey(const QHostAddress &address, quint16 port)
{
    return address.toString() + QLatin1Char('|') + QString::number(port);
}
} // namespace

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

} // namespace Tether
