// SPDX-License-Identifier: GPL-2.0-or-later
#include "serversocket.h"
#include "logging.h"

#include <QPointer>
#include <QtEndian>

namespace Tether {

namespace {
/// The reason QWebSocket sends for a close code it refuses (the start of
/// it: the number in it is always 1002, its own bug).
const QByteArray kQtReason = QByteArrayLiteral("Invalid close code ");
constexpr quint16 kProtocolError = 1002;
} // namespace

bool isSendableCloseCode(int code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

void CloseFrameWatch::watch(QIODevice *socket)
{
    if (m_socket)
        return;
    m_socket = socket;
    QObject::connect(socket, &QIODevice::readyRead, socket, [this]() { rememberUnread(); }, Qt::DirectConnection);
    rememberUnread(); // bytes that came with the handshake
}

void CloseFrameWatch::rememberUnread()
{
    m_unreadTotal = m_socket->bytesAvailable();
    m_unread = m_socket->peek(qMin(m_unreadTotal, kPeekBytes));
}

int CloseFrameWatch::consumedCloseCode() const
{
    // The close frame ended at `end` in the stream as last peeked.
    const qint64 end = m_unreadTotal - m_socket->bytesAvailable();
    if (end < 4 || end > m_unread.size())
        return -1;
    const auto *u = reinterpret_cast<const uchar *>(m_unread.constData());
    int found = -1;
    int matches = 0;
    // Payload length 2..125 (a close frame with a code), masked (6-byte
    // header: as clients must) or not (2 bytes: Tether accepts those too).
    for (int length = 2; length <= 125; ++length) {
        for (const bool masked : {true, false}) {
            const qint64 start = end - length - (masked ? 6 : 2);
            if (start < 0)
                continue;
            if (u[start] != 0x88 || u[start + 1] != ((masked ? 0x80 : 0x00) | length))
                continue;
            const uchar *payload = u + start + (masked ? 6 : 2);
            const uchar *mask = u + start + 2;
            const uchar hi = masked ? uchar(payload[0] ^ mask[0]) : payload[0];
            const uchar lo = masked ? uchar(payload[1] ^ mask[1]) : payload[1];
            found = (hi << 8) | lo;
            ++matches;
        }
    }
    return matches == 1 ? found : -1; // ambiguous: do not guess
}

QByteArray CloseFrameWatch::replacement(const char *data, qint64 size) const
{
    // QWebSocket's answer: one write of an unmasked, final close frame
    // with code 1002 and its reason.
    const auto *d = reinterpret_cast<const uchar *>(data);
    if (!m_socket || size < 4 + kQtReason.size() || size > 127 || d[0] != 0x88 || d[1] != size - 2
        || qFromBigEndian<quint16>(d + 2) != kProtocolError
        || !QByteArray::fromRawData(data + 4, int(size - 4)).startsWith(kQtReason)) {
        return QByteArray();
    }
    const int code = consumedCloseCode();
    quint16 answer = kProtocolError;
    QByteArray reason;
    if (code >= 0 && isSendableCloseCode(code)) {
        answer = quint16(code); // a code RFC 6455 allows and Qt does not know: echo it
    } else {
        reason = code >= 0 ? QByteArrayLiteral("invalid close code ") + QByteArray::number(code)
                           : QByteArrayLiteral("invalid close code");
    }
    QByteArray frame(4, '\0');
    frame[0] = char(0x88);
    frame[1] = char(2 + reason.size());
    qToBigEndian<quint16>(answer, reinterpret_cast<uchar *>(frame.data()) + 2);
    frame += reason;
    qCDebug(lcServer) << "client close code" << code << "answered" << answer << reason;
    return frame;
}

void WebSocketInputGate::setPaused(QTcpSocket *socket, bool paused)
{
    if (paused == m_paused)
        return;
    m_paused = paused;
    socket->setReadBufferSize(paused ? kPausedReadBuffer : 0); // 0: unbounded, Qt's default
    if (paused)
        return;
    // What was read while paused is in the socket's buffer; no readyRead
    // may come for it (the client may have sent everything already).
    // Queued: the holder resumes from inside the session's callbacks.
    QPointer<QTcpSocket> guard(socket);
    QMetaObject::invokeMethod(socket, [this, guard]() {
        if (!guard || m_paused || guard->state() != QAbstractSocket::ConnectedState)
            return;
        // QSslSocket decrypts what its inner socket holds only when asked
        // (its own buffer was full); a private slot in Qt 5.15 and 6.4,
        // harmless where absent.
        if (qobject_cast<QSslSocket *>(guard.data()))
            QMetaObject::invokeMethod(guard.data(), "_q_flushReadBuffer", Qt::DirectConnection);
        if (guard && guard->bytesAvailable() > 0)
            Q_EMIT guard->readyRead();
    }, Qt::QueuedConnection);
}

void watchWebSocketClose(QTcpSocket *socket)
{
    if (auto *gated = dynamic_cast<GatedSocketControl *>(socket))
        gated->watchWebSocketClose();
}

bool setWebSocketInputPaused(QTcpSocket *socket, bool paused)
{
    auto *gated = dynamic_cast<GatedSocketControl *>(socket);
    if (!gated)
        return false;
    gated->setInputPaused(paused);
    return true;
}

qint64 pendingWriteBytes(const QTcpSocket *socket)
{
    if (!socket)
        return 0;
    qint64 n = socket->bytesToWrite();
    if (const auto *ssl = qobject_cast<const QSslSocket *>(socket))
        n += ssl->encryptedBytesToWrite();
    return n;
}

} // namespace Tether
