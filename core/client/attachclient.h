// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "apiclient.h"
#include "attachinfo.h"
#include "attachstream.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QTimer>

class QWebSocket;

namespace Tether {

/**
 * A protocol client attached to one session over WebSocket
 * (docs/protocol.md section 5): the piece every non-browser viewer needs
 * (`tether attach`, or anything else that wants a session's byte stream).
 * Core only (no Widgets); runs on the event loop and never blocks.
 *
 * Offsets: an AttachStream counts every output byte received (prelude
 * bytes excluded) and, after an unexpected end of the connection (no close
 * frame, 1012 "server restarting" when Tether restarts in place, 1013, or
 * Qt's 1002 for a 1012 or 1013 close, see protocol.md "Note for Qt
 * clients"), reconnects
 * with `resume=OFFSET`: nothing lost, nothing twice. Reconnection backs off
 * exponentially from 250 ms to a 5 s cap, each delay drawn uniformly from
 * [d/2, d] (jitter: clients of one restarted server do not reconnect in
 * step). While the server refuses connections for longer than
 * lostServerAfterMs (default 10 s) the client gives up (LostServer): the
 * sessions lived in that server.
 *
 * When a connection fails before the `attached` message (a refused
 * handshake looks the same as a refused connection in QWebSocket), it asks
 * `GET /api/sessions/ID` why, as the dashboard does: 401 → AuthFailed,
 * 404 → NotFound, no listener → NotRunning (first attempt) or a retry.
 *
 * Backpressure: QWebSocket cannot stop reading its socket, so the holder
 * that cannot keep up (its terminal is slow) calls setPaused(true). When the
 * server's `attached` said `"flow_control": true` (control mode), that
 * sends `{"type":"pause"}`: the server stops reading the program's output
 * (the program blocks in write(2)) and setPaused(false) sends
 * `{"type":"resume"}` (docs/protocol.md "Flow control"; the watermarks and
 * PAUSE/RESUME of xterm.js's flow-control guide,
 * xtermjs.org/docs/guides/flowcontrol). The connection stays open: what the
 * server had queued and what is in the TCP buffers still arrives and is
 * delivered by output() (at most the server's 1 MiB queue plus the kernel's
 * socket buffers, a few MiB: the holder's memory stays bounded), input is
 * sent at once, and nothing is lost however small the session's ring.
 * Otherwise (an older server, which closes 4400 on an unknown message type,
 * e.g. an old server still running or during an upgrade; or a watcher,
 * whose pause the server ignores) setPaused(true) lets go of the connection
 * (close 1000; Qt discards frames still in flight, which were not counted)
 * and setPaused(false) reconnects with resume=OFFSET: memory stays bounded,
 * and the output is lossless only while the session's ring still holds the
 * gap (else the server sends a reset replay and the lines in between are
 * gone: with no control viewer the session drains at full speed).
 *
 * Close codes end the attachment (finished()) with a plain message, as
 * AttachStream::closeMeaning() and closeEnd() say: 4410 after `exit` →
 * Exited, "[process exited with code N]" (or "killed by signal N"); 4409 →
 * TakenOver; 4404 → NotFound; 1001 → SessionKilled or ServerShutdown by its
 * reason text; 4429 → TooManyViewers; 4400/1009 → ProtocolError.
 */
class AttachClient : public QObject
{
    Q_OBJECT
public:
    /// How an attachment ended (AttachStream::End).
    using End = AttachStream::End;

    AttachClient(const ServerEndpoint &endpoint, const QString &id, ViewerMode mode, QObject *parent = nullptr);
    ~AttachClient() override;

    /// Connects (first attach: no resume, a reset replay of all retained output).
    void open();
    /**
     * Connects again after finished() ended the attachment with TakenOver
     * (4409: the terminal window's "Take over"), Detached, or any other
     * end: resumes at offset() (`resume=OFFSET`: only the missing bytes are
     * replayed, or a reset replay when they rolled out), or without resume
     * when there never was an attach. Pause, reconnect count and the
     * `exit` message start over. Does nothing while not finished.
     */
    void reopen();
    /**
     * The server moved (a new host on another address, after the old one
     * went away: the desktop app's "Start Tether again" with `--port 0`):
     * every later connection and probe goes to `endpoint`, and one being
     * waited for is made at once, resuming at offset() as after a restart
     * in place. A connection that is open stays as it is; after finished(),
     * reopen() connects to `endpoint`.
     */
    void setEndpoint(const ServerEndpoint &endpoint);
    const ServerEndpoint &endpoint() const { return m_endpoint; }
    /**
     * Sends input bytes (one binary message) in control mode, at once also
     * while paused through flow control (the connection stays). While the
     * connection is let go (setPaused() with an older server) or
     * being made again (a restart in place, a dropped network), input is
     * kept, up to kMaxPendingInput bytes, and sent after the next
     * `attached` if the first kept key is at most kMaxPendingInputMs old
     * (a reset replay too: a pause under a flood lets the ring roll past
     * the client's offset, and the Ctrl-C typed then is the key that
     * matters). Older input is dropped: keys typed long ago at a screen
     * that has changed since would do harm. Late but bounded, as mosh
     * delivers keys typed while its link is down. Before, every such
     * key was dropped, Ctrl-C included (a user's `yes` ran on after Ctrl-C
     * pressed during the client's own backpressure pause). Watch mode
     * sends nothing.
     */
    void sendInput(const char *data, qsizetype size);
    /// Input kept while not connected (bytes); more is dropped.
    static constexpr qsizetype kMaxPendingInput = 64 * 1024;
    /**
     * Input (and anything else) written to the connection that the kernel
     * has not taken yet (bytes; 0 without a connection). The server takes
     * input at the program's pace (docs/protocol.md, "Input flow
     * control"), so after a large paste this waits; it is never given up
     * on. A holder that reads its input from somewhere stops reading above
     * kInputHighBytes and reads on at inputDrained().
     */
    qint64 inputQueued() const;
    static constexpr qint64 kInputHighBytes = 1024 * 1024;
    static constexpr qint64 kInputLowBytes = 256 * 1024;
    /// Oldest kept input still sent on a resume (ms, monotonic).
    static constexpr qint64 kMaxPendingInputMs = 5000;
    /// The window size in cells (1..1000 each). Sent now if attached in
    /// control mode, and with every (re)attach: as the attach request's
    /// `cols=C&rows=R` in control mode (the server resizes the session
    /// before it builds the replay, so the replay is drawn at this size;
    /// docs/protocol.md "Attaching at the viewer's size"), plus a `resize`
    /// once attached when `attached` names another size (a server before
    /// that ignores the keys). Set it before open() so the first attach
    /// carries it. Out-of-range sizes are ignored (the protocol would
    /// ignore them too).
    void setWindowSize(int cols, int rows);
    /// Closes cleanly (1000) and emits finished(Detached). The session lives on.
    void detach();
    /**
     * Backpressure (see the class comment): pause sends `{"type":"pause"}`
     * when the server advertised flow control and this connection is
     * attached in control mode, else lets go of the connection; resume
     * sends `{"type":"resume"}`, or reconnects with resume=OFFSET after a
     * let-go. A connection made while paused (the paused one was lost: a
     * restart in place, the network) is paused as soon as it is attached,
     * the same way. Idempotent.
     */
    void setPaused(bool paused);
    /// Starts over as open() does, for a holder whose screen no longer shows
    /// the session (`tether attach` resumed after SIGTSTP): lets go of the
    /// current connection (close 1000; output still in flight on it is
    /// dropped, uncounted) and connects again WITHOUT resume, so the server
    /// sends a reset replay of everything retained and offset() restarts from
    /// its replay_from. Also ends a pause (setPaused(false)) and a pending
    /// reconnect delay. No effect once finished() or during detach().
    void reattach();
    bool isPaused() const { return m_paused; }
    /// Paused with the connection kept (`pause` sent on it, no `resume` yet).
    bool isFlowPaused() const { return m_pauseSent; }
    /// Reset replays as the server's screen with `lines` scrollback lines
    /// (`replay=screen&lines=N`, docs/protocol.md §5 "Screen replay"),
    /// 0..1000; -1 (the default): the raw replay. For the next connection.
    void setScreenReplay(int lines) { m_screenLines = lines; }
    /// Says in every attach that this client is the desktop's terminal
    /// window (`client=desktop`, docs/protocol.md §5): the session lists
    /// its control viewer as "local". For the next connection.
    void setDesktopClient(bool desktop) { m_desktopClient = desktop; }

    /// Offset of the next output byte expected (bytes shown so far).
    quint64 offset() const { return m_stream.offset(); }
    /// True between `attached` and the end of that connection.
    bool isAttached() const { return m_attached; }
    /// Prelude + replay bytes of the current attach not yet received.
    qint64 pendingReplay() const { return m_stream.pendingReplay(); }
    QString id() const { return m_id; }
    /// The session's name, for the end line only: detaching says "[detached
    /// from NAME]" (shell-quoted), not the 22-character id, when it has one
    /// (issue 29). Empty (the default): the id.
    void setSessionName(const QString &name) { m_name = name; }
    ViewerMode mode() const { return m_mode; }
    /// Give-up time while connections are refused, ms (default 10000).
    void setLostServerAfter(int msec) { m_lostServerAfterMs = msec; }
    /// First and maximum reconnect delay, ms (defaults 250 and 5000).
    void setBackoff(int firstMs, int maxMs) { m_firstDelayMs = firstMs; m_maxDelayMs = maxMs; }

    /// The plain message for an end, e.g. "[taken over by another viewer]",
    /// "[process exited with code 3]" (from the `exit` message received).
    QString endMessage(End end) const;
    /// The `exit` message received ({"type":"exit","code":N,"signal":null}),
    /// empty if none.
    QJsonObject exitMessage() const { return m_exit; }

Q_SIGNALS:
    /// The `attached` message of each (re)attach. `reset` true: clear the
    /// screen before writing what follows.
    void attached(const QJsonObject &message, bool reset);
    /// Output bytes in stream order. `replay` is true for prelude and replay
    /// bytes of the current attach, false for live output. Also carries the
    /// "fixup" messages' sequences, in order (they have no offsets).
    void output(const QByteArray &data, bool replay);
    /// The last prelude/replay byte of this attach has been delivered by output().
    void replayFinished();
    void titleChanged(const QString &title);
    /// The session's window size changed (cells).
    void sizeChanged(int cols, int rows);
    /// The connection ended unexpectedly; a new one starts in `delayMs`.
    void reconnecting(int attempt, int delayMs);
    /// The attachment is over (emitted once); `message` is endMessage().
    void finished(Tether::AttachStream::End end, const QString &message);
    /// inputQueued() fell under kInputLowBytes (bytes left the queue, or the
    /// connection carrying them is gone).
    void inputDrained();

private:
    void connectSocket();
    /// Sets TCP_NODELAY (QAbstractSocket::LowDelayOption) on `ws`'s TCP
    /// socket as soon as it is connected, so keystrokes and resizes are not
    /// held by Nagle's algorithm until the server's delayed ACK (~40 ms;
    /// tcp(7), RFC 896). Call right after ws->open(). Without a
    /// QTcpSocket child (a QtWebSockets that no longer keeps one) it does
    /// nothing.
    static void setLowDelayWhenConnected(QWebSocket *ws);
    void onConnected();
    void onText(const QString &text);
    void onBinary(const QByteArray &data);
    void onSocketGone();
    void probeThenRetry();
    void scheduleRetry();
    void finish(End end);
    void sendSize();
    /// One JSON control message on m_socket (which must exist).
    void sendControl(const QJsonObject &message);
    /// The current connection takes pause/resume: attached in control mode
    /// to a server whose `attached` had `"flow_control": true`, connected.
    bool usesFlowControl() const;
    /// Pauses the attached connection: `pause` when it takes flow control,
    /// else lets it go (m_letGo: no connection until setPaused(false)).
    void pauseConnection();

    ServerEndpoint m_endpoint;
    QString m_id;
    QString m_name; ///< setSessionName()
    ViewerMode m_mode;
    int m_screenLines = -1;
    bool m_desktopClient = false;
    ApiClient *m_api = nullptr;
    QPointer<QWebSocket> m_socket;
    QTimer m_retryTimer;
    QElapsedTimer m_refusedSince; ///< valid while connections are refused in a row
    AttachStream m_stream;      ///< offsets, prelude/replay/live; hasOffset(): reconnects resume
    bool m_attached = false;
    bool m_everAttached = false;
    bool m_paused = false;
    bool m_flowControl = false; ///< this connection's `attached` advertised flow control
    bool m_pauseSent = false;   ///< `pause` sent on this connection, no `resume` yet
    bool m_serverFlowControl = false; ///< the last `attached` (of any connection) advertised it
    bool m_letGo = false;       ///< paused by letting go: no connection until setPaused(false)
    bool m_finished = false;
    bool m_closing = false;     ///< we closed the socket on purpose (detach/pause)
    bool m_detaching = false;   ///< detach() called; finished() once the close completes
    bool m_reattaching = false; ///< reattach() is closing m_socket: ignore what it still sends
    bool m_probing = false;
    int m_attempt = 0;
    int m_delayMs = 0;
    int m_firstDelayMs = 250;
    int m_maxDelayMs = 5000;
    int m_lostServerAfterMs = 10000;
    int m_cols = 0;
    int m_rows = 0;
    QJsonObject m_exit;
    QByteArray m_pendingInput;      ///< see sendInput()
    QElapsedTimer m_pendingSince;   ///< when m_pendingInput's first byte was kept
    QString m_closeReason;      ///< reason text of an unexpected close (ProtocolError)
    /// The reason of a 4411 close ("session ended by reboot"): the session is
    /// an ended one (docs/protocol.md, "Ended sessions"), which endMessage()
    /// says, with how to revive it, instead of "[session killed]".
    QString m_endedReason;
};

} // namespace Tether
