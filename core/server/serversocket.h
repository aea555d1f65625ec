// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QSslSocket>
#include <QTcpSocket>

namespace Tether {

/// True for a close code a peer may send (RFC 6455 §7.4.1 and §7.4.2, and
/// the IANA "WebSocket Close Code Number Registry"): 1000–1003, 1007–1014
/// and 3000–4999. 1004 is reserved; 1005, 1006 and 1015 must never be sent
/// in a close frame; the rest below 3000 is unassigned, 5000 and up invalid.
bool isSendableCloseCode(int code);

/**
 * Corrects the close frame QWebSocket answers a client's close code with;
 * used by the socket classes below, once watch() was called.
 *
 * Why: QWebSocket (Qt 5.15 and 6.4, QWebSocketDataProcessor::
 * processControlFrame) takes only 1000–1011 and 3000–4999 as valid. For
 * anything else it answers 1002 with the reason "Invalid close code 1002
 * detected." (it overwrites the client's code before putting it into the
 * text), which names neither the problem nor the code; and it answers 1002
 * to 1012–1014 too, codes RFC 6455 and the IANA registry allow. QWebSocket
 * offers no hook before it answers, so the answer is corrected on its way
 * out: the socket's writeData() asks replacement() whether the bytes are
 * that frame (unmasked, opcode close, code 1002, Qt's reason) and writes
 * 1002 "invalid close code 999" instead when the client's code is not
 * sendable (isSendableCloseCode()), or an echo of the client's code when it
 * is (RFC 6455 §5.5.1: the endpoint "typically echos the status code it
 * received").
 *
 * The client's code is read back from the bytes QWebSocket consumed: on
 * every readyRead (connected before QWebSocket's own connection, so it runs
 * first) the unread bytes are peeked (at most kPeekBytes); when QWebSocket
 * writes its answer it has just read the close frame, which therefore ends
 * where the unread bytes now begin. A close frame not wholly inside the last
 * peek (split across reads, or more than kPeekBytes behind) yields 1002
 * "invalid close code" without the number. Costs one peek copy per read
 * while a WebSocket is open (client input is small: keystrokes, pastes).
 * Under TLS the same holds for the decrypted bytes (QSslSocket's peek and
 * writeData are the plaintext's).
 */
class CloseFrameWatch
{
public:
    /// Most unread bytes kept from one read (bytes).
    static constexpr qint64 kPeekBytes = 64 * 1024;

    /// Starts watching `socket` (the socket that owns this watch). Call
    /// before QWebSocketServer::handleConnection() (the order of readyRead
    /// connections matters).
    void watch(QIODevice *socket);
    /// When `data` is QWebSocket's answer to a bad close code: the frame to
    /// write instead. Empty otherwise (write `data` as it is).
    QByteArray replacement(const char *data, qint64 size) const;

private:
    void rememberUnread();
    /// The close code of the client frame that ended where the unread bytes
    /// begin now; -1 when it cannot be told.
    int consumedCloseCode() const;

    QIODevice *m_socket = nullptr; ///< set by watch()
    QByteArray m_unread;      ///< the first kPeekBytes unread bytes at the last read
    qint64 m_unreadTotal = 0; ///< all unread bytes at the last read
};

/**
 * The TCP socket of every accepted plain connection (HTTP first, then maybe
 * a WebSocket handed to QWebSocketServer), with a CloseFrameWatch.
 */
class ServerSocket : public QTcpSocket
{
    Q_OBJECT
public:
    explicit ServerSocket(QObject *parent = nullptr);
    /// CloseFrameWatch::watch().
    void watchWebSocketClose() { m_watch.watch(this); }

protected:
    qint64 writeData(const char *data, qint64 size) override;

private:
    CloseFrameWatch m_watch;
};

/**
 * The socket of every accepted connection when the server serves TLS: a
 * QSslSocket in server mode (TlsContext's configuration), with the same
 * CloseFrameWatch on the plaintext.
 */
class TlsServerSocket : public QSslSocket
{
    Q_OBJECT
public:
    explicit TlsServerSocket(QObject *parent = nullptr);
    /// CloseFrameWatch::watch().
    void watchWebSocketClose() { m_watch.watch(this); }

protected:
    qint64 writeData(const char *data, qint64 size) override;

private:
    CloseFrameWatch m_watch;
};

/// Starts the CloseFrameWatch of `socket` when it is one of the classes above.
void watchWebSocketClose(QTcpSocket *socket);

/**
 * Bytes written to `socket` that the kernel has not taken yet. For a
 * QSslSocket, bytesToWrite() counts only plaintext not yet encrypted:
 * QSslSocket encrypts everything at once and queues the ciphertext in its
 * inner TCP socket (encryptedBytesToWrite()), so that must be added, or
 * flow control and "answer fully sent" would see an empty queue while
 * megabytes wait.
 */
qint64 pendingWriteBytes(const QTcpSocket *socket);

} // namespace Tether
