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
 * Input flow control below a QWebSocket (docs/protocol.md, "Input flow
 * control"): while paused, the socket tells QWebSocket that no bytes are
 * available and stops reading from the kernel, so the client's bytes wait
 * in the TCP buffers and TCP pushes back on the client.
 *
 * Why here: QWebSocket (Qt 5.15 and 6.4) reads every frame its socket has
 * on each readyRead, and a frame it has begun must be completed within 5 s
 * (else it closes 1001 "Timeout when reading data from socket."): a holder
 * cannot stop taking messages above it, and stopping the bytes at an
 * arbitrary place would cut a frame. QWebSocket asks bytesAvailable()
 * (virtual) before every read of a header, length, mask or payload and
 * loops only while it is non-zero, so a pause that starts at a message
 * boundary stops it there exactly. The holder pauses from its
 * binaryMessageReceived/textMessageReceived slot, which QWebSocket calls
 * once the message's last frame is consumed: the next unread byte is the
 * first of a frame, and no frame is ever half read while paused.
 *
 * Kernel reads: while paused the read buffer is bounded (kPausedReadBuffer,
 * QAbstractSocket::setReadBufferSize): once the socket's buffer holds that
 * much, Qt turns its read notifier off (no wakeups) and the client's bytes
 * stay in the kernel. What the socket had read before the pause stays in
 * its buffer, in order (at most what the kernel had queued for it).
 * Resuming lifts the bound and re-emits readyRead (queued) so that
 * QWebSocket takes what is buffered even when nothing new arrives.
 */
class WebSocketInputGate
{
public:
    /// The read buffer bound while paused (bytes).
    static constexpr qint64 kPausedReadBuffer = 64 * 1024;

    /// Pauses (true) or resumes (false) what `socket` (its owner) hands to
    /// QWebSocket; idempotent.
    void setPaused(QTcpSocket *socket, bool paused);
    bool isPaused() const { return m_paused; }

private:
    bool m_paused = false;
};

/**
 * What the server needs of an accepted socket beyond QTcpSocket's API,
 * reached with dynamic_cast (the socket classes below are one template, which
 * cannot carry Q_OBJECT, so qobject_cast does not see them).
 */
class GatedSocketControl
{
public:
    virtual ~GatedSocketControl() = default;
    /// CloseFrameWatch::watch() on this socket.
    virtual void watchWebSocketClose() = 0;
    /// WebSocketInputGate::setPaused() on this socket.
    virtual void setInputPaused(bool paused) = 0;
};

/**
 * The socket of every accepted connection (HTTP first, then maybe a
 * WebSocket handed to QWebSocketServer), with a CloseFrameWatch and a
 * WebSocketInputGate: `Base` is QTcpSocket for plain connections and
 * QSslSocket when the server serves TLS (a QSslSocket in server mode with
 * TlsContext's configuration; the watch and the gate then see the decrypted
 * bytes, and the gate's bound applies to both of QSslSocket's buffers). One
 * body for both: a plain connection does not pay for QSslSocket's second
 * buffer.
 */
template<class Base>
class GatedSocket : public Base, public GatedSocketControl
{
public:
    explicit GatedSocket(QObject *parent = nullptr)
        : Base(parent)
    {
    }
    void watchWebSocketClose() override { m_watch.watch(this); }
    void setInputPaused(bool paused) override { m_gate.setPaused(this, paused); }
    /// 0 while the input gate is paused.
    qint64 bytesAvailable() const override { return m_gate.isPaused() ? 0 : Base::bytesAvailable(); }

protected:
    qint64 writeData(const char *data, qint64 size) override
    {
        const QByteArray frame = m_watch.replacement(data, size);
        if (frame.isEmpty())
            return Base::writeData(data, size);
        const qint64 written = Base::writeData(frame.constData(), frame.size());
        // The caller counts what it asked to write.
        return written == frame.size() ? size : written;
    }

private:
    CloseFrameWatch m_watch;
    WebSocketInputGate m_gate;
};

/// A plain accepted connection.
using ServerSocket = GatedSocket<QTcpSocket>;
/// An accepted connection of a server that serves TLS.
using TlsServerSocket = GatedSocket<QSslSocket>;

/// Starts the CloseFrameWatch of `socket` when it is one of the classes above.
void watchWebSocketClose(QTcpSocket *socket);
/// WebSocketInputGate::setPaused() of `socket` when it is one of the classes
/// above; false (nothing paused) for any other socket.
bool setWebSocketInputPaused(QTcpSocket *socket, bool paused);

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
