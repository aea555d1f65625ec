// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QTcpSocket>

namespace Tether {

/// True for a close code a peer may send (RFC 6455 §7.4.1 and §7.4.2, and
/// the IANA "WebSocket Close Code Number Registry"): 1000–1003, 1007–1014
/// and 3000–4999. 1004 is reserved; 1005, 1006 and 1015 must never be sent
/// in a close frame; the rest below 3000 is unassigned, 5000 and up invalid.
bool isSendableCloseCode(int code);

/**
 * The TCP socket of every accepted connection (HTTP first, then maybe a
 * WebSocket handed to QWebSocketServer): a QTcpSocket that, once
 * watchWebSocketClose() was called, corrects the close frame QWebSocket
 * answers a client's close code with.
 *
 * Why: QWebSocket (Qt 5.15 and 6.4, QWebSocketDataProcessor::
 * processControlFrame) takes only 1000–1011 and 3000–4999 as valid. For
 * anything else it answers 1002 with the reason "Invalid close code 1002
 * detected." (it overwrites the client's code before putting it into the
 * text), which names neither the problem nor the code; and it answers 1002
 * to 1012–1014 too, codes RFC 6455 and the IANA registry allow. QWebSocket
 * offers no hook before it answers, so the answer is corrected on its way
 * out: writeData() recognises that frame (unmasked, opcode close, code 1002,
 * Qt's reason) and replaces it by 1002 "invalid close code 999" when the
 * client's code is not sendable (isSendableCloseCode()), or by an echo of
 * the client's code when it is (RFC 6455 §5.5.1: the endpoint "typically
 * echos the status code it received").
 *
 * The client's code is read back from the bytes QWebSocket consumed: on
 * every readyRead (connected before QWebSocket's own connection, so it runs
 * first) the unread bytes are peeked (at most kPeekBytes); when QWebSocket
 * writes its answer it has just read the close frame, which therefore ends
 * where the unread bytes now begin. A close frame not wholly inside the last
 * peek (split across reads, or more than kPeekBytes behind) yields 1002
 * "invalid close code" without the number. Costs one peek copy per read
 * while a WebSocket is open (client input is small: keystrokes, pastes).
 */
class ServerSocket : public QTcpSocket
{
    Q_OBJECT
public:
    /// Most unread bytes kept from one read (bytes).
    static constexpr qint64 kPeekBytes = 64 * 1024;

    explicit ServerSocket(QObject *parent = nullptr);

    /// Starts correcting QWebSocket's answer to a client close code. Call
    /// before QWebSocketServer::handleConnection() (the order of readyRead
    /// connections matters).
    void watchWebSocketClose();

protected:
    qint64 writeData(const char *data, qint64 size) override;

private:
    void rememberUnread();
    /// The close code of the client frame that ended where the unread bytes
    /// begin now; -1 when it cannot be told.
    int consumedCloseCode() const;

    bool m_watching = false;
    QByteArray m_unread;      ///< the first kPeekBytes unread bytes at the last read
    qint64 m_unreadTotal = 0; ///< all unread bytes at the last read
};

} // namespace Tether
