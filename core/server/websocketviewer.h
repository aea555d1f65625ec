// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "session.h"
#include "viewer.h"

#include <QElapsedTimer>
#include <QObject>
#include <QPointer>
#include <QTcpSocket>
#include <QTimer>
#include <optional>

class QTcpSocket;
class QWebSocket;

namespace Tether {

/**
 * A WebSocket client attached to a session: the server side of
 * `GET /ws/{id}` (docs/protocol.md, "WebSocket").
 *
 * Lifetime: owns its QWebSocket. Every way out (client close, TCP error,
 * keepalive timeout, close by the server, session killed, superseded, process
 * exited, server shutdown, destruction) detaches from the session exactly once
 * and ends with the socket disconnected and deleted, then this object deleted
 * (deleteLater) after emitting finished(). A client that drops in the middle
 * of its replay therefore leaves the session detached and reapable
 * (NousResearch/hermes-agent#110849); a reader that died never keeps the
 * PTY's fds (NousResearch/hermes-agent#54028).
 *
 * Output path: each output() becomes binary frames of at most kMaxSendChunk
 * bytes, framed here (RFC 6455 §5.2) and written to the TCP socket under the
 * QWebSocket, in order with everything QWebSocket writes there itself (text
 * messages, pings, close). When nothing is queued in that socket, a plain
 * TCP frame goes to the kernel at once with one sendmsg(2) (MSG_DONTWAIT),
 * header and payload straight from the caller's buffer; what the kernel
 * does not take is copied once into the socket's queue and leaves on its
 * write notifier, as everything does under TLS. Anything queued is flushed
 * (non-blocking) before output() returns. So a frame leaves in the
 * event-loop turn that produced it (a lone keystroke echo is not held for
 * another turn), in one segment train, without a copy while the client
 * keeps up. QWebSocket::sendBinaryMessage instead copied the payload twice
 * (it detaches its argument, the socket copies it again) and queued the
 * header as a block of its own: a separate 10-byte TCP segment under
 * TCP_NODELAY, and one more event-loop turn per frame (QAbstractSocket
 * writes one queued block per write notification). Figures in
 * docs/performance.md ("What each optimisation bought").
 *
 * Backpressure (control viewer): bytes queued in the socket
 * (QWebSocket::bytesToWrite) above the high watermark make the session pause
 * PTY reads (Session::setViewerBlocked), resumed below the low watermark, so a
 * fast producer cannot grow host memory through a slow client. A watcher never
 * pauses the session: once its queue exceeds the high watermark plus what is
 * left of its initial replay it is closed 1013 "too far behind".
 *
 * Client flow control (docs/protocol.md "Flow control"): a control viewer's
 * `{"type":"pause"}` holds PTY reads paused the same way until its
 * `{"type":"resume"}`, whatever the queue; what is queued is still sent. It
 * is for a client that reads its socket at once but cannot show the output
 * as fast (a slow terminal, xterm.js parsing): the consumer-side watermarks
 * of xterm.js's flow-control guide (xtermjs.org/docs/guides/flowcontrol).
 * Before it existed, such a client could only close its socket, and the
 * session then drained into the ring past the client's offset (lost output
 * for `tether attach` under `script`). Ignored from watchers (they never slow
 * a session). A pause dies with the attachment: the session forgets the
 * viewer's blocked state when it detaches (Session::detach), and a takeover
 * is a new viewer, unpaused. The `attached` message says `"flow_control":
 * true` so that clients know they may send these (an older server closes
 * 4400 on them).
 *
 * Input flow control (docs/protocol.md, "Input flow control"): a control
 * viewer's binary message after which more than inputHighWatermark bytes of
 * input wait for the program stops the socket from handing QWebSocket any
 * further message (WebSocketInputGate, in the ServerSocket under it: at the
 * message boundary, and the kernel stops being read, so TCP pushes back on
 * the client) until the session's write notifier brings the queue under
 * inputLowWatermark (Session::inputWritten: no timer polls). A pasting
 * client is slowed to the program's pace and loses nothing; before, a
 * paste over 1 MiB into a program that read, only slower than the network,
 * was cut with 1013 and its rest lost. Only a queue that makes no progress
 * for inputStallMs (the program does not read) still closes 1013 "input
 * stalled". While paused the keepalive gives no verdict (pongs wait unread
 * behind the input); the stall bound ends a pause that goes nowhere.
 *
 * Keepalive: a ping every pingIntervalMs; a client that has not answered a
 * ping with a pong for pingTimeoutMs is aborted without a close handshake, so
 * "attached" never lies about a dead client (NousResearch/hermes-agent#96418). The verdict is
 * never given on a ping tick that comes late because our own event loop
 * stalled (a pong may be waiting unread); the next tick judges.
 *
 * Session callbacks (Viewer methods) never detach synchronously from inside
 * the session's own loop; actions that must detach are deferred to the event
 * loop, after the callback returns.
 */
class WebSocketViewer : public QObject, public Viewer
{
    Q_OBJECT
public:
    struct Options {
        qint64 highWatermark = 1024 * 1024; ///< bytes queued → pause the session
        qint64 lowWatermark = 256 * 1024;   ///< bytes queued → resume
        int pingIntervalMs = 20000;
        int pingTimeoutMs = 60000;          ///< also the bound on a close that makes no progress
        /// Understand and advertise pause/resume (see the class comment).
        /// False: as a server before they existed (no `flow_control` in
        /// `attached`, both closed 4400 as unknown types): what the tests of
        /// the clients' fallback talk to.
        bool flowControl = true;
        /// Input flow control (docs/protocol.md, "Input flow control"):
        /// after a message that leaves more than this much input queued
        /// for the program (bytes), no further message is taken from the
        /// socket ...
        qint64 inputHighWatermark = 256 * 1024;
        /// ... until the queue is below this (bytes).
        qint64 inputLowWatermark = 64 * 1024;
        /// While input is paused, a queue that makes no progress for this
        /// long (ms: the program does not read) closes 1013 "input stalled".
        int inputStallMs = 10000;
    };
    /// Largest binary message sent (bytes): replay is split into frames this size.
    static constexpr qsizetype kMaxSendChunk = 64 * 1024;
    /// Largest header of a server frame (bytes): RFC 6455 §5.2, 2 bytes plus
    /// an 8-byte extended length; a server never masks.
    static constexpr int kMaxFrameHeader = 10;

    /**
     * Writes the header of one unfragmented, unmasked binary frame (FIN set,
     * opcode 2) carrying `payloadSize` bytes into `out` and returns its
     * length: 2 bytes for payloads up to 125 bytes, 4 up to 65,535, else 10
     * (RFC 6455 §5.2: the minimal length encoding is mandatory). A negative
     * size counts as 0.
     */
    static int binaryFrameHeader(qsizetype payloadSize, char out[kMaxFrameHeader]);
    /// Largest frame and message accepted from the client (bytes); bigger → 1009.
    static constexpr qint64 kMaxIncoming = 1024 * 1024;

    /// Takes ownership of `socket` (already upgraded). `kind`: Browser when
    /// the handshake carried an Origin header, else Cli.
    WebSocketViewer(QWebSocket *socket, ViewerKind kind, const Options &options,
                    QObject *parent = nullptr);
    ~WebSocketViewer() override;

    /// The TCP socket under the QWebSocket (for a graceful close: see
    /// LingeringClose). Optional; without it a close may end in a reset.
    void setTcpSocket(QTcpSocket *socket);

    /**
     * Attaches to `session` in `mode` with the client's replay request
     * (resume offset, `replay=screen`). A null session closes 4404;
     * `badQuery` closes 4400; a session without room
     * (Session::hasRoomFor) closes 4429.
     */
    void start(Session *session, ViewerMode mode, const ReplayRequest &request, bool badQuery);

    /// Detaches (if attached) and closes the socket with `code` and `reason`.
    void closeWith(int code, const QString &reason);
    /**
     * Closes 1012 "server restarting" for a restart in place. A control
     * viewer first makes its session hold the output from the first byte
     * its client may not get (Session::holdOutput): everything up to the
     * session's end was handed to this viewer, less what still waits in
     * the socket's queue (queuedBytes(), frame headers and text messages
     * included: a lower bound on what reached the kernel, which delivers
     * it before the close). As the queue drains the hold moves forward
     * (Session::advanceOutputHold); drained, it is the end exactly. The
     * session hands the hold to the next process image with its state.
     */
    void closeForRestart();

    Session *session() const { return m_session; }
    /// Bytes written to this viewer's socket that the kernel has not taken
    /// yet (what the watermarks compare; with TLS, ciphertext included).
    qint64 queuedBytes() const;
    bool isClosing() const { return m_closing; }

    // Viewer
    void attached(Session *session, const AttachInfo &info) override;
    void output(const char *data, qsizetype size) override;
    void titleChanged(const QString &title) override;
    void sizeChanged(int cols, int rows) override;
    void fixup(const QByteArray &sequence) override;
    void exited(const ExitStatus &status) override;
    void detached(DetachReason reason) override;
    ViewerKind kind() const override { return m_kind; }
    QString describe() const override { return m_describe; }

Q_SIGNALS:
    /// The socket is gone and this object is about to be deleted.
    void finished();

private:
    void onText(const QString &message);
    void onBinary(const QByteArray &message);
    void onBytesWritten(qint64 bytes);
    void onDisconnected();
    void onPingTimer();
    void sendText(const QJsonObject &o);
    void checkBackpressure();
    /// Tells the session the control viewer's blocked state (queue over the
    /// watermark or paused by the client) when it changed.
    void updateBlocked();
    void closeSocket(int code, const QString &reason);
    /// Keeps a duplicate of the TCP descriptor (m_lingerFd) before Qt closes
    /// its own, for LingeringClose: every close, ours and QWebSocket's own
    /// (1009 for a message over kMaxIncoming, 1002 for a protocol error).
    void keepDescriptorForClose();
    void closeLater(int code, const QString &reason);
    /// Input flow control (see the class comment).
    void setInputPaused(bool paused);
    void onInputWritten(qsizetype pending);
    void onInputStallTimer();

    QWebSocket *m_socket = nullptr;
    QPointer<QTcpSocket> m_tcp;
    int m_lingerFd = -1;         ///< dup of the TCP socket while we close it
    bool m_aborted = false;      ///< dropped without a graceful close
    QPointer<Session> m_session;
    ViewerKind m_kind;
    QString m_describe;
    Options m_options;
    ViewerMode m_mode = ViewerMode::Control;
    int m_inCallback = 0;        ///< > 0 while the session calls us
    bool m_blocked = false;      ///< we told the session we are blocked
    bool m_queueBlocked = false; ///< the queue passed the high watermark, not yet under the low one
    bool m_clientPaused = false; ///< the control viewer sent pause, not yet resume
    bool m_closing = false;
    bool m_finished = false;
    bool m_pendingClose = false;
    qint64 m_replayAllowance = 0; ///< watcher: replay bytes not yet written
    /// closeForRestart(): the session holding output for this client, and
    /// the offset of the end of what it was handed.
    QPointer<Session> m_heldSession;
    quint64 m_heldEnd = 0;
    /// Moves m_heldSession's hold to what has left the socket's queue.
    void advanceHold();
    /// The last output frame (or its unsent rest) queued in the socket,
    /// reused for the next one once the socket no longer shares it: no
    /// allocation per read.
    QByteArray m_frame;
    QElapsedTimer m_lastSeen;
    QElapsedTimer m_lastTick;    ///< last ping tick: detects our own stalls
    QTimer m_pingTimer;
    QTimer m_lingerTimer;
    bool m_inputPaused = false;      ///< the socket hands QWebSocket nothing
    QElapsedTimer m_inputProgress;   ///< since the input queue last moved, while paused
    QTimer m_inputStallTimer;        ///< single shot: judges m_inputProgress
};

} // namespace Tether
