// SPDX-License-Identifier: GPL-2.0-or-later
#include "attachclient.h"
#include "displaytext.h"
#include "protocol.h"
#include "shellwords.h"

#include <QJsonDocument>
#include <QLoggingCategory>
#include <QNetworkProxy>
#include <QNetworkRequest>
#include <QRandomGenerator>
#include <QSslError>
#include <QTcpSocket>
#include <QUrlQuery>
#include <QWebSocket>

namespace Tether {

Q_LOGGING_CATEGORY(lcClient, "tether.client", QtWarningMsg)


AttachClient::AttachClient(const ServerEndpoint &endpoint, const QString &id, ViewerMode mode, QObject *parent)
    : QObject(parent)
    , m_endpoint(endpoint)
    , m_id(id)
    , m_mode(mode)
    , m_api(new ApiClient(endpoint, this))
{
    m_retryTimer.setSingleShot(true);
    connect(&m_retryTimer, &QTimer::timeout, this, [this]() {
        if (!m_letGo && !m_finished && !m_socket)
            connectSocket();
    });
}

AttachClient::~AttachClient()
{
    if (m_socket) {
        m_socket->disconnect(this);
        m_socket->abort();
        delete m_socket.data();
    }
}

void AttachClient::open()
{
    if (!m_socket && !m_finished)
        connectSocket();
}

void AttachClient::reopen()
{
    if (!m_finished)
        return;
    if (m_socket) {
        // Still closing (finish() while the close completes): forget it.
        QWebSocket *ws = m_socket;
        m_socket = nullptr;
        ws->disconnect(this);
        ws->abort();
        ws->deleteLater();
    }
    m_finished = false;
    m_detaching = false;
    m_closing = false;
    m_reattaching = false;
    m_attached = false;
    m_paused = false;
    m_letGo = false;
    m_pauseSent = false;
    m_attempt = 0;
    m_delayMs = 0;
    m_refusedSince.invalidate();
    m_exit = QJsonObject();
    m_closeReason.clear();
    m_endedReason.clear();
    m_pendingInput.clear();
    m_stream.stop();
    connectSocket();
}

void AttachClient::connectSocket()
{
    auto *ws = new QWebSocket(QString(), QWebSocketProtocol::VersionLatest, this);
    m_socket = ws;
    if (m_endpoint.isLoopback())
        ws->setProxy(QNetworkProxy::NoProxy);
    if (m_endpoint.url.scheme() == QLatin1String("https")) {
        ws->setSslConfiguration(m_endpoint.sslConfiguration());
        // The local server's own certificate (runtime file), whatever it names.
        connect(ws, &QWebSocket::sslErrors, this, [this, ws](const QList<QSslError> &errors) {
            if (m_endpoint.isPinned(ws->sslConfiguration().peerCertificate()))
                ws->ignoreSslErrors();
            else if (!errors.isEmpty())
                qCWarning(lcClient).noquote() << "TLS:" << errors.first().errorString();
        });
    }
    connect(ws, &QWebSocket::textMessageReceived, this, &AttachClient::onText);
    connect(ws, &QWebSocket::binaryMessageReceived, this, &AttachClient::onBinary);
    connect(ws, &QWebSocket::bytesWritten, this, [this, ws]() {
        if (ws == m_socket && ws->bytesToWrite() < kInputLowBytes)
            Q_EMIT inputDrained();
    });
    connect(ws, &QWebSocket::stateChanged, this, [this, ws](QAbstractSocket::SocketState state) {
        if (state == QAbstractSocket::UnconnectedState && ws == m_socket)
            onSocketGone();
    });
    // No Origin header (empty origin): the server then treats us as a CLI
    // viewer and checks Host and key only (protocol.md section 2).
    QUrl url = m_endpoint.webSocketUrl(m_id, m_mode, m_stream.hasOffset() ? qint64(m_stream.offset()) : -1);
    QUrlQuery q(url);
    if (m_screenLines >= 0) {
        q.addQueryItem(QStringLiteral("replay"), QStringLiteral("screen"));
        q.addQueryItem(QStringLiteral("lines"), QString::number(m_screenLines));
    }
    if (m_desktopClient)
        q.addQueryItem(QStringLiteral("client"), QStringLiteral("desktop"));
    if (m_mode == ViewerMode::Control && m_cols > 0 && m_rows > 0) {
        // Our size with the attach: the server resizes the session before
        // it builds the replay (protocol.md "Attaching at the viewer's
        // size"); a server before that ignores the keys, and onText()
        // sends a resize when `attached` names another size.
        q.addQueryItem(QStringLiteral("cols"), QString::number(m_cols));
        q.addQueryItem(QStringLiteral("rows"), QString::number(m_rows));
    }
    url.setQuery(q);
    QNetworkRequest req(url);
    req.setRawHeader("Authorization", "Bearer " + m_endpoint.key.toUtf8());
    qCDebug(lcClient) << "connecting" << req.url().toString();
    ws->open(req);
    setLowDelayWhenConnected(ws);
}

void AttachClient::setLowDelayWhenConnected(QWebSocket *ws)
{
    // QWebSocket asks for LowDelayOption before it connects its QTcpSocket,
    // when QAbstractSocket has no socket engine to apply it to: Qt 5.15 drops
    // the request, so the socket kept Nagle's algorithm (Qt 6.4 sets it).
    // QWebSocket does not expose that socket; it is its child, created in
    // open() (qwebsocket_p.cpp). Set it once connected, before any frame.
    auto *tcp = ws->findChild<QTcpSocket *>(QString(), Qt::FindDirectChildrenOnly);
    if (!tcp) {
        qCDebug(lcClient) << "no TCP socket under QWebSocket: TCP_NODELAY not set";
        return;
    }
    auto apply = [tcp]() { tcp->setSocketOption(QAbstractSocket::LowDelayOption, 1); };
    if (tcp->state() == QAbstractSocket::ConnectedState)
        apply();
    else
        connect(tcp, &QAbstractSocket::connected, tcp, apply);
}

void AttachClient::onText(const QString &text)
{
    if (sender() != m_socket || m_reattaching)
        return;
    const QJsonObject m = QJsonDocument::fromJson(text.toUtf8()).object();
    const QString type = m.value(QStringLiteral("type")).toString();
    if (type == QLatin1String("attached")) {
        m_attached = true;
        m_everAttached = true;
        // Only a server that says so takes pause/resume: an older one closes
        // 4400 on an unknown type (protocol.md "Flow control").
        m_flowControl = m.value(QStringLiteral("flow_control")).toBool();
        m_serverFlowControl = m_flowControl;
        m_pauseSent = false;
        m_refusedSince.invalidate();
        m_attempt = 0;
        m_delayMs = 0;
        const AttachInfo info = AttachStream::parseAttached(m);
        const bool nothingToReplay = m_stream.begin(info);
        Q_EMIT attached(m, info.reset);
        if (m_finished || !m_attached)
            return;
        // The attach carried our size: nothing to send when the session has
        // it (an older server, or a size changed since, gets a resize).
        if (info.cols != m_cols || info.rows != m_rows)
            sendSize();
        if (!m_pendingInput.isEmpty()) {
            // Keys typed while the connection was let go or made again.
            if (m_pendingSince.elapsed() <= kMaxPendingInputMs)
                m_socket->sendBinaryMessage(m_pendingInput);
            else
                qCDebug(lcClient) << "input typed while reconnecting dropped (too old):" << m_pendingInput.size() << "bytes";
            m_pendingInput.clear();
        }
        if (m_paused) {
            // Still paused from before this connection (it was lost, or
            // made while paused): pause this one at once, or let it go.
            pauseConnection();
            if (m_finished || !m_attached || m_closing)
                return;
        }
        if (nothingToReplay)
            Q_EMIT replayFinished();
    } else if (type == QLatin1String("title")) {
        Q_EMIT titleChanged(m.value(QStringLiteral("title")).toString());
    } else if (type == QLatin1String("size")) {
        Q_EMIT sizeChanged(m.value(QStringLiteral("cols")).toInt(), m.value(QStringLiteral("rows")).toInt());
    } else if (type == QLatin1String("fixup")) {
        // Terminal state the bytes cannot show (margins a resize reset):
        // written in stream order, outside the offsets (protocol.md "fixup").
        if (m_attached && !m_finished)
            Q_EMIT output(m.value(QStringLiteral("data")).toString().toLatin1(),
                          m_stream.fixupPart() != AttachStream::Part::Live);
    } else if (type == QLatin1String("exit")) {
        m_exit = m;
        if (const auto status = AttachStream::parseExit(m))
            m_stream.setExit(*status);
    }
}

void AttachClient::onBinary(const QByteArray &data)
{
    if (sender() != m_socket || !m_attached || m_finished)
        return;
    const QPointer<AttachClient> self(this);
    QWebSocket *ws = m_socket;
    auto stillHere = [&]() { return self && !m_finished && m_socket == ws && m_attached; };
    const AttachStream::Split split = m_stream.output(data.size());
    for (int i = 0; i < split.count; ++i) {
        const AttachStream::Piece &p = split.pieces[size_t(i)];
        Q_EMIT output(p.size == data.size() ? data : data.mid(p.from, p.size), p.part != AttachStream::Part::Live);
        if (!stillHere())
            return;
        if (split.replayFinished && split.replayEndsAfter == i) {
            Q_EMIT replayFinished();
            if (!stillHere())
                return;
        }
    }
}

void AttachClient::sendInput(const char *data, qsizetype size)
{
    if (m_mode != ViewerMode::Control || m_finished || m_detaching || size <= 0)
        return;
    // Paused through flow control the connection stays: input goes at once.
    if (m_attached && m_socket && !m_closing) {
        m_socket->sendBinaryMessage(QByteArray(data, int(size)));
        return;
    }
    // Let go or reconnecting: kept for the next attach (see the header).
    if (m_pendingInput.isEmpty())
        m_pendingSince.start();
    const qsizetype room = kMaxPendingInput - m_pendingInput.size();
    if (room < size)
        qCDebug(lcClient) << "input kept while reconnecting is full:" << (size - std::max<qsizetype>(room, 0)) << "bytes dropped";
    if (room > 0)
        m_pendingInput.append(data, int(std::min(room, size)));
}

qint64 AttachClient::inputQueued() const
{
    return m_socket ? m_socket->bytesToWrite() : 0;
}

void AttachClient::setWindowSize(int cols, int rows)
{
    if (cols < 1 || cols > 1000 || rows < 1 || rows > 1000)
        return;
    if (cols == m_cols && rows == m_rows)
        return;
    m_cols = cols;
    m_rows = rows;
    sendSize();
}

void AttachClient::sendSize()
{
    if (!m_attached || m_mode != ViewerMode::Control || !m_socket || m_cols <= 0)
        return;
    sendControl(QJsonObject{{QStringLiteral("type"), QStringLiteral("resize")},
                            {QStringLiteral("cols"), m_cols},
                            {QStringLiteral("rows"), m_rows}});
}

void AttachClient::sendControl(const QJsonObject &message)
{
    m_socket->sendTextMessage(QString::fromUtf8(QJsonDocument(message).toJson(QJsonDocument::Compact)));
}

bool AttachClient::usesFlowControl() const
{
    return m_flowControl && m_mode == ViewerMode::Control && m_attached && !m_closing && m_socket
        && m_socket->state() == QAbstractSocket::ConnectedState;
}

void AttachClient::detach()
{
    if (m_finished || m_detaching)
        return;
    m_detaching = true;
    m_closing = true;
    m_retryTimer.stop();
    if (m_socket && m_socket->state() != QAbstractSocket::UnconnectedState) {
        // Wait for the server's close frame (one round trip) so ours is not
        // lost when the process exits right after; bounded by a timer.
        m_socket->close(QWebSocketProtocol::CloseCodeNormal, QStringLiteral("detached"));
        QTimer::singleShot(1000, this, [this]() {
            if (!m_finished)
                finish(End::Detached);
        });
    } else {
        finish(End::Detached);
    }
}

void AttachClient::setPaused(bool paused)
{
    if (m_finished || paused == m_paused)
        return;
    m_paused = paused;
    if (paused) {
        // Not attached (connecting, or waiting to reconnect) to a server that
        // had flow control: the next `attached` decides (pauseConnection()).
        if (m_attached || !m_serverFlowControl)
            pauseConnection();
        return;
    }
    if (m_pauseSent) {
        m_pauseSent = false;
        if (usesFlowControl())
            sendControl(QJsonObject{{QStringLiteral("type"), QStringLiteral("resume")}});
    }
    if (m_letGo) {
        m_letGo = false;
        if (!m_socket)
            connectSocket();
        // else: the socket is still closing; onSocketGone() reconnects.
    }
}

void AttachClient::pauseConnection()
{
    if (usesFlowControl()) {
        // The server stops reading the program's output (it blocks in
        // write); what it had queued still comes and is delivered.
        m_pauseSent = true;
        sendControl(QJsonObject{{QStringLiteral("type"), QStringLiteral("pause")}});
        // Now, not on the socket's next write notification: everything the
        // server reads from the program until the pause arrives still comes.
        m_socket->flush();
        return;
    }
    // An older server (no flow_control), or a watcher: let go.
    m_letGo = true;
    m_retryTimer.stop();
    if (m_socket && m_socket->state() != QAbstractSocket::UnconnectedState) {
        m_closing = true;
        m_socket->close(QWebSocketProtocol::CloseCodeNormal, QStringLiteral("paused"));
    }
}

void AttachClient::reattach()
{
    if (m_finished || m_detaching)
        return;
    m_paused = false;
    m_letGo = false;
    m_pauseSent = false; // the next connection starts unpaused (a new viewer)
    m_stream.forget();  // the next URL carries no resume=: a reset replay
    m_attached = false; // from now on this connection's output and input are dropped
    m_retryTimer.stop();
    m_attempt = 0;
    m_delayMs = 0;
    m_refusedSince.invalidate();
    if (m_socket && m_socket->state() != QAbstractSocket::UnconnectedState) {
        // onSocketGone() connects again once this close completes; until
        // then nothing from this connection counts (not even an `attached`).
        m_closing = true;
        m_reattaching = true;
        m_socket->close(QWebSocketProtocol::CloseCodeNormal, QStringLiteral("reattach"));
    } else if (!m_socket) {
        connectSocket();
    }
}

void AttachClient::onSocketGone()
{
    QWebSocket *ws = m_socket;
    const int code = int(ws->closeCode());
    const QString reason = ws->closeReason();
    const QString error = ws->errorString();
    const bool wasAttached = m_attached;
    m_attached = false;
    m_flowControl = false;
    // A pause dies with its connection (the server forgets it): while still
    // paused the next connection is paused as soon as it is attached
    // (pauseConnection()), so a restart in place does not let the session
    // drain past us.
    m_pauseSent = false;
    m_stream.stop();
    m_reattaching = false;
    m_socket = nullptr;
    ws->disconnect(this);
    ws->deleteLater();
    Q_EMIT inputDrained(); // what it held is gone with it
    if (m_finished)
        return;
    if (m_detaching) {
        finish(End::Detached);
        return;
    }
    if (m_closing) {
        m_closing = false;
        if (!m_letGo)
            connectSocket();
        return;
    }
    // In words: a restart in place (1012) reaches Qt clients as 1002
    // "Invalid close code 1002 detected.", which is no protocol error.
    qCDebug(lcClient).noquote() << "connection ended:" << AttachStream::closeText(code, reason) << "-" << error;
    const AttachStream::Close meaning = AttachStream::closeMeaning(code, reason);
    if (const std::optional<End> end = AttachStream::closeEnd(meaning)) {
        if (*end == End::ProtocolError)
            m_closeReason = QStringLiteral("%1 %2").arg(code).arg(reason);
        if (code == Protocol::Ended)
            m_endedReason = reason.startsWith(QLatin1String("session ended by ")) ? reason
                                                                                : QStringLiteral("session ended");
        finish(*end);
        return;
    }
    // No close frame (Qt reports 1000 or 1006), 1012, 1013, or Qt's 1002
    // for them: retry with resume=OFFSET, silently (a restart in place
    // loses nothing: the server holds the output for us, protocol.md).
    if (m_stream.hasOffset())
        qCDebug(lcClient) << "resuming at" << m_stream.offset();
    if (wasAttached)
        scheduleRetry();
    else
        probeThenRetry();
}

void AttachClient::setEndpoint(const ServerEndpoint &endpoint)
{
    m_endpoint = endpoint;
    // A probe of the old address in flight goes with its ApiClient.
    delete m_api;
    m_api = new ApiClient(endpoint, this);
    m_probing = false;
    m_refusedSince.invalidate();
    if (m_finished || m_letGo || m_socket)
        return;
    // Waiting to connect again: to the new address, now.
    m_retryTimer.stop();
    m_delayMs = 0;
    connectSocket();
}

void AttachClient::probeThenRetry()
{
    if (m_probing)
        return;
    m_probing = true;
    m_api->get(QStringLiteral("api/sessions/") + m_id, [this](const ApiReply &r) {
        m_probing = false;
        if (m_finished)
            return;
        if (r.status == 401) {
            finish(End::AuthFailed);
            return;
        }
        if (r.status == 404) {
            finish(End::NotFound);
            return;
        }
        if (r.connectionRefused) {
            if (!m_everAttached && m_attempt == 0) {
                finish(End::NotRunning);
                return;
            }
            if (!m_refusedSince.isValid())
                m_refusedSince.start();
            else if (m_refusedSince.elapsed() >= m_lostServerAfterMs) {
                finish(End::LostServer);
                return;
            }
        } else {
            m_refusedSince.invalidate();
        }
        scheduleRetry();
    });
}

void AttachClient::scheduleRetry()
{
    if (m_finished || m_letGo)
        return;
    ++m_attempt;
    m_delayMs = m_delayMs == 0 ? m_firstDelayMs : qMin(m_maxDelayMs, m_delayMs * 2);
    const int half = m_delayMs / 2;
    const int delay = half + int(QRandomGenerator::system()->bounded(quint32(m_delayMs - half + 1)));
    Q_EMIT reconnecting(m_attempt, delay);
    if (m_finished)
        return;
    m_retryTimer.start(delay);
}

void AttachClient::finish(End end)
{
    if (m_finished)
        return;
    m_finished = true;
    m_detaching = false;
    m_retryTimer.stop();
    if (m_socket && m_socket->state() == QAbstractSocket::UnconnectedState) {
        m_socket->disconnect(this);
        m_socket->deleteLater();
        m_socket = nullptr;
    }
    Q_EMIT finished(end, endMessage(end));
}

QString AttachClient::endMessage(End end) const
{
    switch (end) {
    case End::Detached:
        return QStringLiteral("[detached from %1]").arg(m_name.isEmpty() ? m_id : ShellWords::quote({m_name}));
    case End::Exited:
        return AttachStream::exitLine(AttachStream::parseExit(m_exit));
    case End::TakenOver:
        return QStringLiteral("[taken over by another viewer]");
    case End::NotFound:
        return QStringLiteral("[session not found or expired]");
    case End::SessionKilled:
        if (!m_endedReason.isEmpty())
            // Its processes are gone (a reboot, a crash, Tether stopped
            // under it); only its record is left, which can be revived.
            return QStringLiteral("[%1: its programs are gone; `tether revive %2` starts it again]")
                .arg(DisplayText::escape(m_endedReason),
                     m_name.isEmpty() ? m_id : ShellWords::quote({m_name}));
        return QStringLiteral("[session killed]");
    case End::ServerShutdown:
        return QStringLiteral("[server shutting down]");
    case End::AuthFailed:
        return QStringLiteral("[access key refused: is TETHER_KEY or --key from another server?]");
    case End::NotRunning:
        return QStringLiteral("Tether is not running: start it with `tether` or `tether serve`");
    case End::LostServer:
        return QStringLiteral("[lost the connection to the server]");
    case End::TooManyViewers:
        return QStringLiteral("[too many viewers on this session]");
    case End::ProtocolError:
        return QStringLiteral("[protocol error: %1]").arg(m_closeReason);
    }
    return QString();
}

} // namespace Tether
