// SPDX-License-Identifier: GPL-2.0-or-later
#include "websocketviewer.h"
#include "controlmessage.h"
#include "serversocket.h"
#include "lingeringclose.h"
#include "logging.h"
#include "protocol.h"
#include "session.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QSslSocket>
#include <QTcpSocket>
#include <QWebSocket>
#include <QtEndian>

#include <cstring>

#include <cerrno>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace Tether {

namespace {
/// Marks "the session is calling us": detaching now would modify the
/// session's viewer list while it iterates over it.
struct CallbackGuard {
    explicit CallbackGuard(int &depth) : m_depth(depth) { ++m_depth; }
    ~CallbackGuard() { --m_depth; }
    int &m_depth;
};
/// sendmsg(2) of a frame's header and payload, MSG_DONTWAIT: the bytes the
/// kernel took, 0 when it took none (EAGAIN) or on an error, which the
/// socket's own next write then reports through Qt as usual. MSG_NOSIGNAL:
/// a peer that went away is EPIPE here, never SIGPIPE.
qint64 sendNoWait(int fd, const char *head, int headSize, const char *body, qsizetype bodySize)
{
    iovec iov[2] = {{const_cast<char *>(head), size_t(headSize)}, {const_cast<char *>(body), size_t(bodySize)}};
    msghdr msg = {};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    for (;;) {
        const ssize_t n = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n >= 0)
            return n;
        if (errno != EINTR)
            return 0;
    }
}
} // namespace

WebSocketViewer::WebSocketViewer(QWebSocket *socket, ViewerKind kind, const Options &options,
                                 QObject *parent)
    : QObject(parent)
    , m_socket(socket)
    , m_kind(kind)
    , m_options(options)
{
    socket->setParent(this);
    m_describe = QStringLiteral("%1 %2:%3")
                     .arg(kind == ViewerKind::Browser ? QStringLiteral("browser") : QStringLiteral("client"),
                          socket->peerAddress().toString())
                     .arg(socket->peerPort());
    // RFC 6455 §10.4: bound what a client may make us buffer. Qt closes with
    // 1009 (CloseCodeTooMuchData) when a frame or message is larger.
    socket->setMaxAllowedIncomingFrameSize(quint64(kMaxIncoming));
    socket->setMaxAllowedIncomingMessageSize(quint64(kMaxIncoming));

    connect(socket, &QWebSocket::textMessageReceived, this, &WebSocketViewer::onText);
    connect(socket, &QWebSocket::binaryMessageReceived, this, &WebSocketViewer::onBinary);
    connect(socket, &QWebSocket::pong, this, [this]() { m_lastSeen.restart(); });
    connect(socket, &QWebSocket::bytesWritten, this, &WebSocketViewer::onBytesWritten);
    connect(socket, &QWebSocket::disconnected, this, &WebSocketViewer::onDisconnected);
    // Emitted by QWebSocket::close() after it queued the close frame and
    // before it closes the TCP socket (under TLS, before QSslSocket closes
    // its inner socket): every close, the ones Qt starts itself included.
    connect(socket, &QWebSocket::aboutToClose, this, &WebSocketViewer::keepDescriptorForClose);

    m_pingTimer.setInterval(qMax(1, m_options.pingIntervalMs));
    connect(&m_pingTimer, &QTimer::timeout, this, &WebSocketViewer::onPingTimer);
    // A close that makes no write progress for this long (the client stopped
    // reading) is cut: the close handshake must not hold the fd forever.
    m_lingerTimer.setSingleShot(true);
    m_lingerTimer.setInterval(qMax(1, m_options.pingTimeoutMs));
    m_inputStallTimer.setSingleShot(true);
    connect(&m_inputStallTimer, &QTimer::timeout, this, &WebSocketViewer::onInputStallTimer);
    connect(&m_lingerTimer, &QTimer::timeout, this, [this]() {
        qCDebug(lcServer) << m_describe << "close made no progress: aborting";
        m_aborted = true;
        m_socket->abort();
    });
}

WebSocketViewer::~WebSocketViewer()
{
    if (m_session) {
        Session *s = m_session;
        m_session = nullptr;
        s->detach(this);
    }
    if (m_socket) {
        m_socket->disconnect(this);
        // Abort rather than let ~QWebSocket start a close handshake it then
        // abandons: an aborted TCP socket is released at once.
        if (m_socket->state() != QAbstractSocket::UnconnectedState)
            m_socket->abort();
    }
    if (m_lingerFd >= 0)
        ::close(m_lingerFd);
}

void WebSocketViewer::start(Session *session, ViewerMode mode, const ReplayRequest &request, bool badQuery)
{
    m_mode = mode;
    m_lastSeen.start();
    m_lastTick.start();
    m_pingTimer.start();
    if (m_socket->state() != QAbstractSocket::ConnectedState) {
        onDisconnected();
        return;
    }
    if (!session) {
        closeSocket(Protocol::NotFound, QString::fromLatin1(Protocol::CloseReason::NoSuchSession));
        return;
    }
    if (badQuery) {
        closeSocket(Protocol::BadRequest, QString::fromLatin1(Protocol::CloseReason::BadQuery));
        return;
    }
    // Checked here, after the upgrade, like 4404: the count can change while
    // the handshake is in flight, and attach() below runs in the same turn.
    if (!session->hasRoomFor(mode)) {
        qCInfo(lcServer) << m_describe << "refused: too many viewers on" << session->id();
        closeSocket(Protocol::TooManyViewers, QString::fromLatin1(Protocol::CloseReason::TooManyViewers));
        return;
    }
    {
        CallbackGuard guard(m_inCallback);
        session->attach(this, mode, request);
    }
    qCDebug(lcServer) << m_describe << "attached to" << session->id()
                      << (mode == ViewerMode::Control ? "control" : "watch");
    checkBackpressure();
}

void WebSocketViewer::attached(Session *session, const AttachInfo &info)
{
    m_session = session;
    m_mode = info.mode;
    if (info.mode == ViewerMode::Control)
        connect(session, &Session::inputWritten, this, &WebSocketViewer::onInputWritten, Qt::UniqueConnection);
    m_replayAllowance = qint64(info.preludeBytes) + qint64(info.replayBytes) + qint64(info.snapshotBytes);
    QJsonObject o;
    o.insert(QStringLiteral("type"), QStringLiteral("attached"));
    o.insert(QStringLiteral("id"), session->id());
    o.insert(QStringLiteral("mode"), info.mode == ViewerMode::Control ? QStringLiteral("control") : QStringLiteral("watch"));
    o.insert(QStringLiteral("reset"), info.reset);
    o.insert(QStringLiteral("reason"), QString::fromLatin1(Protocol::replayReasonName(info.reason)));
    o.insert(QStringLiteral("replay_from"), double(info.replayFrom));
    o.insert(QStringLiteral("prelude_bytes"), double(info.preludeBytes));
    o.insert(QStringLiteral("replay_bytes"), double(info.replayBytes));
    o.insert(QStringLiteral("offset"), double(info.offset));
    o.insert(QStringLiteral("snapshot_at"), info.snapshotAt ? QJsonValue(double(*info.snapshotAt))
                                                            : QJsonValue(QJsonValue::Null));
    o.insert(QStringLiteral("snapshot_bytes"), double(info.snapshotBytes));
    o.insert(QStringLiteral("replay_mode"), info.screenReplay ? QStringLiteral("screen") : QStringLiteral("raw"));
    o.insert(QStringLiteral("state"), info.exited ? QStringLiteral("exited") : QStringLiteral("running"));
    o.insert(QStringLiteral("cols"), info.cols);
    o.insert(QStringLiteral("rows"), info.rows);
    o.insert(QStringLiteral("title"), session->title());
    if (m_options.flowControl)
        o.insert(QStringLiteral("flow_control"), true);
    sendText(o);
}

int WebSocketViewer::binaryFrameHeader(qsizetype payloadSize, char out[kMaxFrameHeader])
{
    const quint64 n = quint64(qMax<qsizetype>(0, payloadSize));
    out[0] = char(0x82); // FIN, opcode 2 (binary)
    if (n <= 125) {
        out[1] = char(n);
        return 2;
    }
    if (n <= 0xFFFF) {
        out[1] = char(126);
        qToBigEndian<quint16>(quint16(n), reinterpret_cast<uchar *>(out) + 2);
        return 4;
    }
    out[1] = char(127);
    qToBigEndian<quint64>(n, reinterpret_cast<uchar *>(out) + 2);
    return 10;
}

void WebSocketViewer::output(const char *data, qsizetype size)
{
    if (m_closing || m_pendingClose || m_finished || size <= 0)
        return;
    CallbackGuard guard(m_inCallback);
    // Without the TCP socket (or once QWebSocket no longer sends: it refuses
    // data frames outside ConnectedState, e.g. after a close frame) the
    // QWebSocket path keeps its own checks.
    const bool framed = m_tcp && m_socket->state() == QAbstractSocket::ConnectedState;
    // Straight to the kernel only on a plain TCP socket (TLS must encrypt).
    const int fd = framed && !qobject_cast<QSslSocket *>(m_tcp.data()) ? int(m_tcp->socketDescriptor()) : -1;
    qint64 sentNow = 0;
    // What is queued ahead (before a replay: the upgrade reply and the
    // `attached` message) goes to the kernel first, so that the frames after
    // it can go there directly too, rather than each be copied into the
    // queue behind it (up to what the kernel takes, ~0.5-1 MiB of a replay:
    // issue 11).
    if (fd >= 0 && m_tcp->bytesToWrite() > 0)
        m_tcp->flush();
    // Large spans (replay) go in bounded frames so a client can start
    // rendering before the whole replay has arrived.
    for (qsizetype off = 0; off < size; off += kMaxSendChunk) {
        const qsizetype n = qMin(kMaxSendChunk, size - off);
        if (!framed) {
            m_socket->sendBinaryMessage(QByteArray::fromRawData(data + off, int(n)));
            continue;
        }
        char header[kMaxFrameHeader];
        const int h = binaryFrameHeader(n, header);
        // Nothing queued ahead: the kernel takes what it can from where the
        // bytes are, without a copy and without blocking.
        qint64 sent = 0;
        if (fd >= 0 && m_tcp->bytesToWrite() == 0)
            sent = sendNoWait(fd, header, h, data + off, n);
        sentNow += sent;
        if (sent == h + n)
            continue;
        // The rest goes behind whatever is queued, for the write notifier.
        // Reuse the last buffer unless the socket still holds it (Qt 6
        // queues a written QByteArray by reference, not by copy).
        const qsizetype headLeft = qMax<qint64>(0, h - sent);
        const qsizetype bodyFrom = qMax<qint64>(0, sent - h);
        if (!m_frame.isDetached())
            m_frame = QByteArray();
        m_frame.resize(int(headLeft + n - bodyFrom));
        std::memcpy(m_frame.data(), header + (h - headLeft), size_t(headLeft));
        std::memcpy(m_frame.data() + headLeft, data + off + bodyFrom, size_t(n - bodyFrom));
        m_tcp->write(m_frame);
    }
    // What QWebSocket queued ahead of these frames (a text message), or
    // what was queued above, leaves now as far as the kernel takes it.
    if (framed && m_tcp->bytesToWrite() > 0)
        m_tcp->flush();
    // The socket's bytesWritten never hears of the bytes sent directly.
    m_replayAllowance = qMax<qint64>(0, m_replayAllowance - sentNow);
    checkBackpressure();
}

void WebSocketViewer::titleChanged(const QString &title)
{
    if (m_closing || m_pendingClose)
        return;
    QJsonObject o;
    o.insert(QStringLiteral("type"), QStringLiteral("title"));
    o.insert(QStringLiteral("title"), title);
    sendText(o);
}

void WebSocketViewer::sizeChanged(int cols, int rows)
{
    if (m_closing || m_pendingClose)
        return;
    QJsonObject o;
    o.insert(QStringLiteral("type"), QStringLiteral("size"));
    o.insert(QStringLiteral("cols"), cols);
    o.insert(QStringLiteral("rows"), rows);
    sendText(o);
}

void WebSocketViewer::fixup(const QByteArray &sequence)
{
    if (m_closing || m_pendingClose || m_finished)
        return;
    // In order with the binary frames around it (protocol.md, "fixup").
    QJsonObject o;
    o.insert(QStringLiteral("type"), QStringLiteral("fixup"));
    o.insert(QStringLiteral("data"), QString::fromLatin1(sequence));
    sendText(o);
}

void WebSocketViewer::exited(const ExitStatus &status)
{
    if (m_closing || m_pendingClose)
        return;
    QJsonObject o;
    o.insert(QStringLiteral("type"), QStringLiteral("exit"));
    o.insert(QStringLiteral("code"), status.signaled ? QJsonValue(QJsonValue::Null) : QJsonValue(status.code));
    o.insert(QStringLiteral("signal"), status.signaled ? QJsonValue(status.signal) : QJsonValue(QJsonValue::Null));
    sendText(o);
    // The exit message follows the last output byte in the socket's queue;
    // the close frame follows it. Detaching waits until the session's
    // callback has returned.
    closeLater(Protocol::Exited, QString::fromLatin1(Protocol::CloseReason::ProcessExited));
}

void WebSocketViewer::detached(DetachReason reason)
{
    m_session = nullptr;
    m_blocked = false;
    switch (reason) {
    case DetachReason::Superseded:
        closeSocket(Protocol::Superseded, QString::fromLatin1(Protocol::CloseReason::Superseded));
        break;
    case DetachReason::Killed:
        closeSocket(Protocol::GoingAway, QString::fromLatin1(Protocol::CloseReason::SessionKilled));
        break;
    case DetachReason::Shutdown:
        closeSocket(Protocol::GoingAway, QString::fromLatin1(Protocol::CloseReason::ServerShutdown));
        break;
    case DetachReason::InputStalled:
        closeSocket(Protocol::TryAgainLater, QString::fromLatin1(Protocol::CloseReason::InputStalled));
        break;
    }
}

void WebSocketViewer::closeWith(int code, const QString &reason)
{
    if (m_session) {
        Session *s = m_session;
        m_session = nullptr;
        m_blocked = false;
        s->detach(this);
    }
    closeSocket(code, reason);
}

void WebSocketViewer::closeForRestart()
{
    // Only a control viewer holds output, and only one that was handed
    // everything up to the end (none is dropped before the close begins).
    if (m_session && m_mode == ViewerMode::Control && !m_closing && !m_pendingClose && !m_finished) {
        m_heldSession = m_session;
        m_heldEnd = m_session->offset();
        const quint64 queued = quint64(qMax<qint64>(0, queuedBytes()));
        m_session->holdOutput(m_heldEnd - qMin(queued, m_heldEnd));
    }
    closeWith(Protocol::ServiceRestart, QString::fromLatin1(Protocol::CloseReason::ServiceRestart));
}

void WebSocketViewer::advanceHold()
{
    if (!m_heldSession)
        return;
    const quint64 queued = quint64(qMax<qint64>(0, queuedBytes()));
    m_heldSession->advanceOutputHold(m_heldEnd - qMin(queued, m_heldEnd));
}

void WebSocketViewer::closeLater(int code, const QString &reason)
{
    if (m_pendingClose || m_closing)
        return;
    m_pendingClose = true;
    QMetaObject::invokeMethod(this, [this, code, reason]() { closeWith(code, reason); }, Qt::QueuedConnection);
}

void WebSocketViewer::closeSocket(int code, const QString &reason)
{
    if (m_closing || m_finished)
        return;
    m_closing = true;
    m_pingTimer.stop();
    // QWebSocket must read on to find the client's close frame (the input
    // behind the gate is discarded: onBinary ignores it while closing).
    setInputPaused(false);
    qCDebug(lcServer) << m_describe << "closing" << code << reason;
    m_lingerTimer.start();
    m_socket->close(QWebSocketProtocol::CloseCode(code), reason); // aboutToClose: keepDescriptorForClose()
}

void WebSocketViewer::keepDescriptorForClose()
{
    // QWebSocket closes the descriptor right after the close frame; unread
    // client bytes would then turn the close into a reset that destroys the
    // frame. Keep a duplicate so the connection outlives Qt's close, and
    // finish it gracefully once Qt has flushed (onDisconnected). Qt also
    // closes on its own, without closeSocket(): 1009 for a message over
    // kMaxIncoming, whose unread rest is exactly such bytes (the client saw
    // 1006 in most tries before this ran on QWebSocket's aboutToClose too).
    if (m_finished || m_lingerFd >= 0 || !m_tcp || m_tcp->socketDescriptor() < 0)
        return;
    m_lingerFd = ::fcntl(int(m_tcp->socketDescriptor()), F_DUPFD_CLOEXEC, 0);
}

void WebSocketViewer::sendText(const QJsonObject &o)
{
    m_socket->sendTextMessage(QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)));
}

void WebSocketViewer::setTcpSocket(QTcpSocket *socket)
{
    m_tcp = socket;
    // Whatever a client sends can make us queue answers (pongs to its pings,
    // size messages to its resizes). A client that sends but never reads
    // would grow our memory without bound, so re-check the queue whenever it
    // sends anything (this runs beside QWebSocket's own reader).
    if (socket)
        connect(socket, &QTcpSocket::readyRead, this, &WebSocketViewer::checkBackpressure);
    // (Under TLS, QWebSocket's bytesWritten is QSslSocket's
    // encryptedBytesWritten, Qt 5.15 and 6.4: the replay allowance and the
    // re-checks below follow the ciphertext actually sent.)
}

qint64 WebSocketViewer::queuedBytes() const
{
    // With TLS, also the ciphertext waiting in the inner socket.
    return m_tcp ? pendingWriteBytes(m_tcp) : m_socket->bytesToWrite();
}

void WebSocketViewer::checkBackpressure()
{
    if (!m_session || m_closing || m_pendingClose)
        return;
    const qint64 queued = queuedBytes();
    // Hard bound for every viewer: output alone stays near the high watermark
    // (a control viewer pauses the PTY there, a watcher is dropped there), so
    // a queue far past it is client-induced: the client does not read.
    if (queued > 4 * m_options.highWatermark + m_replayAllowance) {
        closeLater(Protocol::TryAgainLater, QString::fromLatin1(Protocol::CloseReason::TooFarBehind));
        return;
    }
    if (m_mode == ViewerMode::Watch) {
        // Watchers never slow the session down; one that cannot keep up goes.
        if (queued > m_options.highWatermark + m_replayAllowance)
            closeLater(Protocol::TryAgainLater, QString::fromLatin1(Protocol::CloseReason::TooFarBehind));
        return;
    }
    if (!m_queueBlocked && queued > m_options.highWatermark)
        m_queueBlocked = true;
    else if (m_queueBlocked && queued < m_options.lowWatermark)
        m_queueBlocked = false;
    updateBlocked();
}

void WebSocketViewer::updateBlocked()
{
    if (!m_session || m_mode != ViewerMode::Control)
        return;
    const bool blocked = m_queueBlocked || m_clientPaused;
    if (blocked == m_blocked)
        return;
    m_blocked = blocked;
    if (m_inCallback > 0) {
        QMetaObject::invokeMethod(this, [this]() {
            if (m_session)
                m_session->setViewerBlocked(this, m_blocked);
        }, Qt::QueuedConnection);
    } else {
        m_session->setViewerBlocked(this, m_blocked);
    }
}

void WebSocketViewer::onText(const QString &message)
{
    if (m_closing || m_pendingClose || !m_session)
        return;
    const ControlMessage m = parseControlMessage(message.toUtf8());
    if (m.type == ControlMessage::Type::Invalid) {
        closeWith(Protocol::BadRequest, QString::fromLatin1(Protocol::CloseReason::BadControlMessage));
        return;
    }
    if (m.type == ControlMessage::Type::Pause || m.type == ControlMessage::Type::Resume) {
        if (!m_options.flowControl) {
            closeWith(Protocol::BadRequest, QString::fromLatin1(Protocol::CloseReason::BadControlMessage));
            return;
        }
        // A watcher's is ignored: watchers never slow the session down.
        if (m_mode != ViewerMode::Control)
            return;
        m_clientPaused = m.type == ControlMessage::Type::Pause;
        qCDebug(lcServer) << m_describe << (m_clientPaused ? "paused by the client" : "resumed by the client");
        updateBlocked();
        return;
    }
    // Resize: out-of-range sizes are ignored (see ControlMessage::sizeInRange),
    // and so is a watcher's.
    if (m_mode == ViewerMode::Control && m.sizeInRange)
        m_session->resize(this, m.cols, m.rows);
}

void WebSocketViewer::onBinary(const QByteArray &message)
{
    if (m_closing || m_pendingClose || !m_session || m_mode != ViewerMode::Control)
        return;
    // False: the input queue is full because the program does not read
    // (jupyter/terminado#189). The session may already have detached us with
    // InputStalled (then the socket is closing); otherwise close 1013 here.
    if (!m_session->sendInput(this, message)) {
        if (!m_closing)
            closeWith(Protocol::TryAgainLater, QString::fromLatin1(Protocol::CloseReason::InputStalled));
        return;
    }
    // Input flow control: QWebSocket has just consumed this message's last
    // frame, so the socket's next byte starts a frame: pausing here stops it
    // at a message boundary (WebSocketInputGate).
    if (m_session && m_session->pendingInput() > m_options.inputHighWatermark)
        setInputPaused(true);
}

void WebSocketViewer::setInputPaused(bool paused)
{
    if (paused == m_inputPaused)
        return;
    if (paused && !setWebSocketInputPaused(m_tcp, true))
        return; // no gate under this socket (a test without one): no flow control
    m_inputPaused = paused;
    if (paused) {
        qCDebug(lcServer) << m_describe << "input paused:" << (m_session ? m_session->pendingInput() : 0)
                          << "bytes wait for the program";
        m_inputProgress.start();
        m_inputStallTimer.start(qMax(1, m_options.inputStallMs));
    } else {
        qCDebug(lcServer) << m_describe << "input resumed";
        m_inputStallTimer.stop();
        setWebSocketInputPaused(m_tcp, false);
        // The keepalive gave no verdict while we did not read: count from now.
        m_lastSeen.restart();
    }
}

void WebSocketViewer::onInputWritten(qsizetype pending)
{
    if (!m_inputPaused || sender() != m_session.data())
        return;
    m_inputProgress.restart();
    if (pending < m_options.inputLowWatermark)
        setInputPaused(false);
}

void WebSocketViewer::onInputStallTimer()
{
    if (!m_inputPaused || m_closing || m_pendingClose)
        return;
    const qint64 quiet = m_inputProgress.elapsed();
    if (quiet < m_options.inputStallMs) {
        // Progress since the timer was armed: judge again when the bound
        // would be reached counting from the last progress (no periodic
        // wakeup while the queue moves).
        m_inputStallTimer.start(int(qMax<qint64>(1, m_options.inputStallMs - quiet)));
        return;
    }
    qCInfo(lcServer) << m_describe << "input made no progress for" << quiet << "ms:"
                     << (m_session ? m_session->pendingInput() : 0) << "bytes wait; closing 1013";
    closeWith(Protocol::TryAgainLater, QString::fromLatin1(Protocol::CloseReason::InputStalled));
}

void WebSocketViewer::onBytesWritten(qint64 bytes)
{
    m_replayAllowance = qMax<qint64>(0, m_replayAllowance - bytes);
    if (m_closing) {
        m_lingerTimer.start(); // progress: restart the no-progress bound
        advanceHold();         // the client will have these bytes
        return;
    }
    checkBackpressure();
}

void WebSocketViewer::onPingTimer()
{
    // A tick far later than scheduled means our own event loop stalled (the
    // process was not scheduled, or a long synchronous step ran): a pong
    // that arrived meanwhile is still unread in the socket, so silence
    // measured across the stall says nothing about the client. Judge on the
    // next tick, once the loop has read what came in. (Seen on a loaded
    // single-CPU run: an answering client dropped right after a stall.) A
    // false drop needs a stall of at least timeout - interval, hence the bound.
    const qint64 sinceTick = m_lastTick.restart();
    const qint64 interval = qMax(1, m_options.pingIntervalMs);
    const qint64 stallBound = qMax<qint64>(interval, qMin<qint64>(2 * interval, m_options.pingTimeoutMs - interval));
    const bool stalled = sinceTick > stallBound;
    if (stalled)
        qCDebug(lcServer) << m_describe << "ping tick" << sinceTick << "ms late: liveness judged next tick";
    // While input is paused we read nothing, pongs included: no verdict
    // (the input stall bound ends a pause that goes nowhere).
    if (m_inputPaused)
        m_lastSeen.restart();
    if (!stalled && m_lastSeen.elapsed() >= m_options.pingTimeoutMs) {
        qCInfo(lcServer) << m_describe << "no answer for" << m_lastSeen.elapsed() << "ms: dropping";
        m_pingTimer.stop();
        if (m_session) {
            Session *s = m_session;
            m_session = nullptr;
            s->detach(this);
        }
        m_aborted = true;
        m_socket->abort();
        return;
    }
    m_socket->ping();
}

void WebSocketViewer::onDisconnected()
{
    if (m_finished)
        return;
    m_finished = true;
    m_pingTimer.stop();
    m_lingerTimer.stop();
    if (m_lingerFd >= 0) {
        if (m_aborted)
            ::close(m_lingerFd);
        else
            // Owned by our owner (the server), which outlives us: freed with
            // it if the process exits before the peer closes.
            LingeringClose::start(m_lingerFd, parent(), qMin(5000, qMax(1, m_options.pingTimeoutMs)));
        m_lingerFd = -1;
    }
    // Inside a session callback the detach is left to the destructor
    // (deleteLater below), which runs once the session's loop has returned.
    if (m_session && m_inCallback == 0) {
        Session *s = m_session;
        m_session = nullptr;
        s->detach(this);
    }
    // How it ended, for a test that reports why a page's attachment ended
    // (tests/browser/lib.mjs prints these lines): the close code and reason
    // sent or received (1005 and none when no close frame came) and the
    // socket's last error. Built as one string: QDebug puts a space after
    // every item, an empty one (no reason, not aborted) included.
    if (lcServer().isDebugEnabled()) {
        QString line = m_describe + QStringLiteral(" disconnected: close ") + QString::number(int(m_socket->closeCode()));
        if (!m_socket->closeReason().isEmpty())
            line += QLatin1Char(' ') + m_socket->closeReason();
        if (m_aborted)
            line += QStringLiteral(" (aborted)");
        qCDebug(lcServer).noquote() << line << "- socket:" << m_socket->errorString();
    }
    emit finished();
    deleteLater();
}

} // namespace Tether
