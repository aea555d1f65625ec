// SPDX-License-Identifier: GPL-2.0-or-later
#include "httpconnection.h"
#include "logging.h"
#include "repeatlimiter.h"
#include "serversocket.h"

#include <QHostAddress>
#include <QJsonDocument>
#include <QTcpSocket>

#include <atomic>
#include <sys/socket.h>

namespace Tether {

namespace {
constexpr int kResponseTimeoutMs = 30000;  ///< to write an answer to a client that reads
constexpr int kLingerMs = 2000;            ///< discard late request bytes this long
constexpr qint64 kMaxDiscard = 1024 * 1024;
constexpr qint64 kMaxStreamBacklog = 1024 * 1024;
constexpr qint64 kReadBuffer = 64 * 1024;
/// The first byte of a TLS record of type handshake (RFC 8446 §5.1,
/// ContentType handshake(22)): every TLS client opens with one, a
/// ClientHello. An HTTP request starts with a method's capital letter.
constexpr char kTlsHandshakeRecord = 0x16;
std::atomic<quint64> g_nextSerial{0};
} // namespace

HttpConnection::HttpConnection(QTcpSocket *socket, int requestTimeoutMs, QObject *parent)
    : QObject(parent)
    , m_socket(socket)
    , m_serial(++g_nextSerial)
{
    socket->setParent(this);
    // Bound what Qt reads from the kernel for us while we parse HTTP.
    socket->setReadBufferSize(kReadBuffer);
    connect(socket, &QTcpSocket::readyRead, this, &HttpConnection::onReadyRead);
    // Under TLS, bytesWritten means "encrypted", and QSslSocket emits it
    // before the ciphertext leaves OpenSSL for the TCP socket (Qt 5.15 and
    // 6.4, transmit()): shutting the write side down then lost the answer.
    // encryptedBytesWritten comes once the TCP socket wrote it.
    if (auto *ssl = qobject_cast<QSslSocket *>(socket))
        connect(ssl, &QSslSocket::encryptedBytesWritten, this, &HttpConnection::onBytesWritten);
    else
        connect(socket, &QTcpSocket::bytesWritten, this, &HttpConnection::onBytesWritten);
    connect(socket, &QTcpSocket::disconnected, this, &HttpConnection::onDisconnected);
    m_timer.setSingleShot(true);
    connect(&m_timer, &QTimer::timeout, this, &HttpConnection::onTimeout);
    m_timer.start(qMax(1, requestTimeoutMs));
}

HttpConnection::~HttpConnection() = default;

void HttpConnection::start()
{
    if (m_socket->state() != QAbstractSocket::ConnectedState) {
        onDisconnected();
        return;
    }
    if (m_socket->bytesAvailable() > 0)
        onReadyRead();
}

void HttpConnection::startTlsOnFirstByte()
{
    if (qobject_cast<QSslSocket *>(m_socket))
        m_awaitingFirstByte = true;
}

QString HttpConnection::plainHttpOnTlsPortText()
{
    return QStringLiteral("the plain HTTP request was sent to an HTTPS port: this Tether server serves HTTPS only; "
                          "use https:// instead of http://");
}

bool HttpConnection::onFirstByte()
{
    auto *ssl = qobject_cast<QSslSocket *>(m_socket);
    char first = 0;
    if (!ssl || ssl->peek(&first, 1) != 1)
        return false;
    m_awaitingFirstByte = false;
    if (first == kTlsHandshakeRecord) {
        // Decrypted bytes come with later readyRead signals.
        ssl->startServerEncryption();
        return true;
    }
    // In UnencryptedMode QSslSocket emits bytesWritten, not
    // encryptedBytesWritten, for what it writes in clear.
    connect(ssl, &QTcpSocket::bytesWritten, this, &HttpConnection::onBytesWritten);
    // Any peer can cause it: rate-limited, as the handshake failures are.
    logLimited(lcServer(), QtInfoMsg, QStringLiteral("plain HTTP request on the TLS port: answered 400 (use https://)"));
    respondError(400, plainHttpOnTlsPortText());
    return false;
}

QByteArray HttpConnection::statusText(int status)
{
    switch (status) {
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 303: return "See Other";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 422: return "Unprocessable Entity";
    case 426: return "Upgrade Required";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    }
    return "Unknown";
}

void HttpConnection::onReadyRead()
{
    if (!m_socket)
        return;
    if (m_awaitingFirstByte && m_state == State::Reading) {
        onFirstByte();
        return;
    }
    if (m_state != State::Reading) {
        // Answer sent (or streaming): what the client still sends is dropped.
        m_discarded += m_socket->skip(m_socket->bytesAvailable());
        if (m_discarded > kMaxDiscard)
            abort();
        return;
    }
    if (m_request.phase() == HttpRequest::Phase::Head) {
        const qint64 want = qMin<qint64>(m_socket->bytesAvailable(), HttpRequest::kMaxHeadBytes + 1);
        const QByteArray peeked = m_socket->peek(want);
        const qsizetype fed = m_request.headBytesFed();
        if (peeked.size() > fed)
            m_request.feedHead(peeked.constData() + fed, peeked.size() - fed);
        if (m_request.phase() == HttpRequest::Phase::Error) {
            respondError(m_request.errorStatus(), m_request.errorText());
            return;
        }
        if (m_request.phase() == HttpRequest::Phase::Head)
            return;
    }
    if (!m_headSignalled) {
        m_headSignalled = true;
        emit headReceived();
        if (!m_socket || m_state != State::Reading)
            return; // answered or taken over
    }
    if (!m_headConsumed) {
        m_headConsumed = true;
        m_socket->skip(m_request.headLength());
        // curl sends "Expect: 100-continue" for bodies over 1 KiB and waits a
        // second for this interim answer (RFC 7231 §5.1.1) before sending.
        if (m_request.phase() == HttpRequest::Phase::Body
            && m_request.header("expect").toLower() == "100-continue")
            m_socket->write("HTTP/1.1 100 Continue\r\n\r\n");
    }
    if (m_request.phase() == HttpRequest::Phase::Body && m_socket->bytesAvailable() > 0) {
        const QByteArray data = m_socket->read(m_socket->bytesAvailable());
        m_request.feedBody(data.constData(), data.size());
        if (m_request.phase() == HttpRequest::Phase::Error) {
            respondError(m_request.errorStatus(), m_request.errorText());
            return;
        }
    }
    if (m_request.phase() == HttpRequest::Phase::Complete) {
        m_timer.stop();
        emit requestReceived();
        if (m_socket && m_state == State::Reading) {
            // The slot must answer; a request nobody answered is an error.
            respondError(500, QStringLiteral("unhandled request"));
        }
    }
}

QByteArray HttpConnection::responseHead(int status, const Headers &headers, qsizetype contentLength) const
{
    QByteArray head;
    head.reserve(512);
    head += "HTTP/1.1 " + QByteArray::number(status) + ' ' + statusText(status) + "\r\n";
    bool cacheControl = false;
    for (const auto &h : headers) {
        if (h.first.compare("cache-control", Qt::CaseInsensitive) == 0)
            cacheControl = true;
        head += h.first + ": " + h.second + "\r\n";
    }
    if (!cacheControl)
        head += "Cache-Control: no-store\r\n";
    head += "X-Content-Type-Options: nosniff\r\n"
            "Referrer-Policy: no-referrer\r\n"
            "Connection: close\r\n";
    if (contentLength >= 0 && status != 204)
        head += "Content-Length: " + QByteArray::number(contentLength) + "\r\n";
    head += "\r\n";
    return head;
}

void HttpConnection::respond(int status, const Headers &headers, const QByteArray &body, bool headOnly)
{
    if (!m_socket || m_state != State::Reading)
        return;
    m_state = State::Responding;
    m_timer.start(kResponseTimeoutMs);
    QByteArray out = responseHead(status, headers, body.size());
    if (!headOnly && status != 204)
        out += body;
    m_socket->write(out);
    // Anything still unread belongs to this request or a pipelined one: drop it.
    m_discarded += m_socket->skip(m_socket->bytesAvailable());
}

void HttpConnection::respondJson(int status, const QJsonObject &body, const Headers &headers)
{
    Headers h = headers;
    h.append(qMakePair(QByteArray("Content-Type"), QByteArray("application/json; charset=utf-8")));
    respond(status, h, QJsonDocument(body).toJson(QJsonDocument::Compact));
}

void HttpConnection::respondError(int status, const QString &message, const Headers &headers)
{
    QJsonObject o;
    o.insert(QStringLiteral("error"), message);
    respondJson(status, o, headers);
}

void HttpConnection::startStream(int status, const Headers &headers)
{
    if (!m_socket || m_state != State::Reading)
        return;
    m_state = State::Streaming;
    m_timer.stop();
    m_socket->write(responseHead(status, headers, -1));
}

bool HttpConnection::writeStream(const QByteArray &data)
{
    if (!m_socket || m_state != State::Streaming)
        return false;
    if (pendingWriteBytes(m_socket) > kMaxStreamBacklog) {
        qCDebug(lcServer) << "event stream client not reading: dropping";
        abort();
        return false;
    }
    m_socket->write(data);
    return true;
}

void HttpConnection::onBytesWritten()
{
    if (!m_socket || m_state != State::Responding || pendingWriteBytes(m_socket) > 0)
        return;
    // Answer fully handed to the kernel: half-close so the client sees the
    // end, and keep reading (discarding) until it closes too. Under TLS no
    // close_notify alert precedes the FIN (QSslSocket sends one only when it
    // closes the socket, which would reset unread request bytes); every
    // answer has a Content-Length, so a truncation is still detectable
    // (RFC 8446 §6.1, RFC 9112 §9.8).
    m_state = State::Lingering;
    ::shutdown(int(m_socket->socketDescriptor()), SHUT_WR);
    m_timer.start(kLingerMs);
}

void HttpConnection::onTimeout()
{
    if (!m_socket)
        return;
    if (m_state == State::Reading) {
        qCDebug(lcServer) << "request timeout from" << m_socket->peerAddress().toString();
        respondError(408, QStringLiteral("request timeout"));
        // A slow-loris client may not read either; bound the answer too.
        m_timer.start(kLingerMs);
        return;
    }
    abort();
}

void HttpConnection::endStream()
{
    if (!m_socket || m_state != State::Streaming)
        return;
    // QAbstractSocket::disconnectFromHost writes what is still buffered
    // before it closes; disconnected() then finishes this connection.
    m_socket->disconnectFromHost();
}

void HttpConnection::closeForShutdown(const QByteArray &streamTail)
{
    if (!m_socket)
        return;
    auto *ssl = qobject_cast<QSslSocket *>(m_socket);
    switch (m_state) {
    case State::Reading:
        // Before its first byte or within the handshake a TLS client can
        // read nothing we could write: clear text would be garbage to it.
        if (ssl && !ssl->isEncrypted()) {
            abort();
            return;
        }
        respondError(503, QStringLiteral("server shutting down"));
        break;
    case State::Streaming:
        if (!streamTail.isEmpty())
            writeStream(streamTail);
        break;
    case State::Responding:
    case State::Lingering:
    case State::Done:
        break;
    }
    if (!m_socket)
        return; // writeStream() dropped a client that did not read
    // Qt writes its buffer on a later pass of the event loop, which may not
    // come: write now what the kernel takes. bytesWritten follows, and with
    // it the half-close of an answer (onBytesWritten).
    m_socket->flush();
    if (m_socket && m_state == State::Streaming)
        endStream();
}

void HttpConnection::abort()
{
    if (!m_socket)
        return;
    m_state = State::Done;
    m_socket->abort(); // emits disconnected() when connected
    onDisconnected();
}

void HttpConnection::onDisconnected()
{
    if (m_state == State::Done && !m_socket)
        return;
    m_state = State::Done;
    m_timer.stop();
    if (m_socket) {
        m_socket->disconnect(this);
        m_socket = nullptr; // deleted with us (child)
        emit finished();
        deleteLater();
    }
}

QTcpSocket *HttpConnection::takeSocket(QObject *newParent)
{
    QTcpSocket *s = m_socket;
    if (!s)
        return nullptr;
    m_timer.stop();
    s->disconnect(this);
    if (auto *ssl = qobject_cast<QSslSocket *>(s))
        ssl->disconnect(this); // encryptedBytesWritten
    s->setReadBufferSize(0); // QWebSocket reads frames as they come; no cap
    s->setParent(newParent);
    m_socket = nullptr;
    m_state = State::Done;
    deleteLater();
    return s;
}

} // namespace Tether
