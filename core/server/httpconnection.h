// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "httprequest.h"

#include <QJsonObject>
#include <QObject>
#include <QTimer>

class QTcpSocket;

namespace Tether {

/**
 * One HTTP connection of the Server, from accept to close: reads one request
 * (head by peeking, see HttpRequest), lets the server answer it, writes the
 * answer and closes. Every response carries `Connection: close`; pipelined
 * requests are not served.
 *
 * Bounds (denial of service): the whole request must arrive within the
 * request timeout (slow loris; default 10 s) or it is answered 408; a head
 * over 16 KiB → 431, malformed → 400, body over 64 KiB → 413. After an answer
 * the write side is shut down and whatever the client still sends is read and
 * discarded for at most 2 s / 1 MiB ("lingering close"), so the client reads
 * the answer instead of a TCP reset caused by unread request bytes.
 *
 * Owns the socket (deleted with the connection) until takeSocket() hands it
 * to the WebSocket server. Deletes itself (deleteLater) after finished().
 */
class HttpConnection : public QObject
{
    Q_OBJECT
public:
    using Headers = QList<QPair<QByteArray, QByteArray>>;

    HttpConnection(QTcpSocket *socket, int requestTimeoutMs, QObject *parent = nullptr);
    ~HttpConnection() override;

    /// Starts reading (also handles bytes already buffered).
    void start();

    /**
     * For a TLS server: the socket is a QSslSocket still in UnencryptedMode,
     * and the first byte the client sends decides, before start(). A TLS
     * record of type handshake (0x16, the ClientHello: RFC 8446 §5.1)
     * starts the server handshake (QSslSocket::startServerEncryption()) and
     * the request is then read decrypted, as usual. Anything else is a
     * plain-HTTP request sent to the HTTPS port (`--url http://...` against
     * a TLS server): it is never served (nor its key looked at); it is
     * answered in clear text `400` with {"error": "... use https:// ..."}
     * and closed, as nginx answers "The plain HTTP request was sent to HTTPS
     * port", so that the client shows why instead of "Connection closed".
     * The byte is peeked, not read (QSslSocket::peek does not consume in
     * UnencryptedMode, Qt 5.15 and 6.4), so the handshake sees the whole
     * ClientHello. Waiting for that byte counts against the request
     * timeout, like a slow request head.
     */
    void startTlsOnFirstByte();
    /// The text of the 400 answer to plain HTTP on the TLS port.
    static QString plainHttpOnTlsPortText();

    const HttpRequest &request() const { return m_request; }
    QTcpSocket *socket() const { return m_socket; }

    /**
     * Writes a complete response and closes afterwards. Adds Content-Length
     * (except 204), Connection: close, X-Content-Type-Options: nosniff,
     * Referrer-Policy: no-referrer, and Cache-Control: no-store unless
     * `headers` sets Cache-Control. `headOnly`: a HEAD answer (no body bytes).
     * Ignored when a response was already started.
     */
    void respond(int status, const Headers &headers, const QByteArray &body, bool headOnly = false);
    /// respond() with a JSON body (application/json; charset=utf-8).
    void respondJson(int status, const QJsonObject &body, const Headers &headers = Headers());
    /// respond() with {"error": message}.
    void respondError(int status, const QString &message, const Headers &headers = Headers());

    /// Starts an open-ended response (Server-Sent Events): head only, body
    /// written with writeStream() until the connection closes.
    void startStream(int status, const Headers &headers);
    /// Appends to a stream. A client that lets more than 1 MiB pile up is
    /// dropped (returns false; the connection is aborted).
    bool writeStream(const QByteArray &data);
    bool isStreaming() const { return m_state == State::Streaming; }
    bool hasResponded() const { return m_state != State::Reading; }
    /// The request head has not fully arrived yet (nothing is known about the
    /// request: an idle or slow-loris connection looks exactly like this).
    bool isAwaitingHead() const
    {
        return m_state == State::Reading && m_request.phase() == HttpRequest::Phase::Head;
    }

    /**
     * Marks the connection as carrying a request that passed the access-key
     * check. The server's connection bound never evicts a trusted connection
     * (see Server, "connection pressure"); only a key holder can make one.
     */
    void setTrusted(bool trusted) { m_trusted = trusted; }
    bool isTrusted() const { return m_trusted; }
    /**
     * Marks the request as authenticated by a read-only link (a share token)
     * instead of the key: the server then grants only what such a link may
     * (docs/protocol.md, "Read-only links"). Not trusted (setTrusted): the
     * connection bound protects key holders, and a link holder is not one.
     */
    void setShareToken(const QString &token) { m_shareToken = token; }
    /// The share token the request was authenticated with; empty for the key.
    QString shareToken() const { return m_shareToken; }
    /// Order of acceptance (strictly increasing per process): smaller = older.
    quint64 serial() const { return m_serial; }

    /**
     * Hands the socket over (for QWebSocketServer::handleConnection) with the
     * request head still unread in it: stops timers, disconnects, gives it
     * `newParent`, and deletes this connection later. No finished() signal.
     */
    QTcpSocket *takeSocket(QObject *newParent);

    /// Ends a stream gracefully: what writeStream() queued is sent, then the
    /// connection closes (finished() follows). No effect unless streaming.
    void endStream();
    /**
     * The server is shutting down (Server::close()): every client gets a
     * clear end instead of a connection closed with nothing on it (Chromium's
     * net::ERR_EMPTY_RESPONSE). A request still being read, even one whose
     * head has not arrived yet, is answered `503 {"error": "server shutting
     * down"}` (with Connection: close, as every answer); an answer being
     * written is finished; a stream gets `streamTail` (its last event) and
     * ends. What the kernel takes without blocking is handed to it at once,
     * since the process may exit right after, and the write side is then
     * shut down as after any answer. A TLS connection whose handshake has
     * not finished cannot be answered: it is dropped.
     */
    void closeForShutdown(const QByteArray &streamTail = QByteArray());
    /// Drops the connection at once.
    void abort();

    static QByteArray statusText(int status);

Q_SIGNALS:
    /// The head is complete (phase Body or Complete). The slot may answer,
    /// take the socket, or do nothing (the body is then read).
    void headReceived();
    /// The whole request (head and body) has arrived.
    void requestReceived();
    /// The connection is closed; the object is deleted later.
    void finished();

private:
    enum class State { Reading, Responding, Lingering, Streaming, Done };
    void onReadyRead();
    /// startTlsOnFirstByte(): false while the first byte has not come (or
    /// when it was plain HTTP, answered); true once encryption started.
    bool onFirstByte();
    void onBytesWritten();
    void onDisconnected();
    void onTimeout();
    QByteArray responseHead(int status, const Headers &headers, qsizetype contentLength) const;

    QTcpSocket *m_socket;
    HttpRequest m_request;
    State m_state = State::Reading;
    QTimer m_timer;
    bool m_headSignalled = false;
    bool m_headConsumed = false;
    qint64 m_discarded = 0;
    bool m_trusted = false;
    bool m_awaitingFirstByte = false; ///< startTlsOnFirstByte(), before that byte came
    QString m_shareToken;
    quint64 m_serial = 0;
};

} // namespace Tether
