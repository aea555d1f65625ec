// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "attachinfo.h"

#include <QByteArray>
#include <QObject>
#include <QString>

#include <array>
#include <optional>

class QJsonObject;

namespace Tether {

/**
 * The viewer side of one attachment's byte stream (docs/protocol.md §5), in
 * one place for every C++ viewer: AttachClient (over WebSocket, for
 * `tether attach` and the desktop's TerminalWindow) feeds it what it
 * receives and write what it tells them. Pure logic: no I/O,
 * no timers, no signals. (The dashboard, resources/dashboard/attachment.js,
 * keeps its own JavaScript copy, checked against the same vectors,
 * tests/vectors/attach-stream.json.)
 *
 * After begin() (the `attached` message) the output is, in order:
 * `preludeBytes` bytes of prelude (mode-restoring sequences, outside the
 * offset space), `replayBytes` bytes of replay (offsets replayFrom ..<
 * offset), then live output continuing the same offsets. When the
 * attached message has a `snapshot_at`, `snapshot_bytes` bytes of the
 * server's screen snapshot (outside the offset space too) come where the
 * replay reaches that offset (Part::Snapshot). output() splits each
 * received message into those parts and advances offset(); a `fixup`
 * message's sequence (terminal state a resize reset, no offsets) is written
 * in stream order where it arrives, as part of the replay or of the live
 * output (fixupPart()).
 *
 * The offset is what a viewer resumes from after a lost connection
 * (`resume=OFFSET`): the offset of the next byte expected, counting bytes
 * received (all of them are written, in order), prelude excluded.
 */
class AttachStream
{
    Q_GADGET
public:
    /// How an attachment ended (what AttachClient::finished() reports).
    enum class End {
        Detached,       ///< the viewer detached; the session lives on
        Exited,         ///< the process exited (4410)
        TakenOver,      ///< another control viewer attached (4409)
        NotFound,       ///< unknown or expired session (4404, or HTTP 404)
        SessionKilled,  ///< the session was deleted or expired (1001 "session killed")
        ServerShutdown, ///< the server is stopping (1001 "server shutting down")
        AuthFailed,     ///< the key was refused (HTTP 401)
        NotRunning,     ///< nothing listens at the server's address (first attempt)
        LostServer,     ///< the server went away and did not come back
        TooManyViewers, ///< the session has its 16 viewers (4429)
        ProtocolError,  ///< the server closed 4400/1009, or an unexpected answer
    };
    Q_ENUM(End)

    /// What a WebSocket close (code + reason text) says, per the table of
    /// docs/protocol.md §5 "Close codes" (constants of protocol.h only).
    /// Each client decides what to do about it (closeEnd() for C++ clients).
    enum class Close {
        Retry,          ///< no close frame (1000/1006 from Qt), 1012, 1013, Qt's 1002 for them, anything unknown
        TakenOver,      ///< 4409
        Exited,         ///< 4410
        NotFound,       ///< 4404
        SessionKilled,  ///< 1001 "session killed"; 4411 "session ended by ..." (an ended session)
        ServerShutdown, ///< 1001 "server shutting down"
        GoingAway,      ///< 1001 with another reason text
        TooManyViewers, ///< 4429
        BadRequest,     ///< 4400 ("bad control message", "bad query")
        TooBig,         ///< 1009 (a message over 1 MiB)
        Revoked,        ///< 4401: the read-only link attached with was revoked
    };
    Q_ENUM(Close)

    /// Which part of the stream bytes belong to.
    enum class Part { Prelude, Replay, Live, Snapshot };
    Q_ENUM(Part)

    /// Bytes [from, from + size) of one output message, all of one part.
    struct Piece {
        Part part = Part::Live;
        qsizetype from = 0;
        qsizetype size = 0;
    };
    /// One output message split into its parts, in order (at most: prelude,
    /// replay, snapshot, replay, live).
    struct Split {
        std::array<Piece, 5> pieces;
        int count = 0;
        /// The last prelude/replay byte of this attach is in this message:
        /// the replay is finished after piece replayEndsAfter.
        bool replayFinished = false;
        int replayEndsAfter = -1;
    };

    /// Starts an attach: the offset becomes info.replayFrom, prelude and
    /// replay bytes are expected. True when nothing is to be replayed
    /// (prelude + replay is 0: the replay is finished at once).
    bool begin(const AttachInfo &info);
    /// The connection is over: nothing more is expected of this attach
    /// (the offset is kept, to resume from).
    void stop();
    /// Forgets the offset too: the next attach starts over (no `resume=`).
    void forget();

    /// Accounts one output message of `size` bytes (see class doc). Output
    /// while not active (before begin(), after stop()) is all Live and
    /// changes nothing: callers drop it.
    Split output(qsizetype size);
    /// The part a fixup arriving now belongs to (Replay while replay bytes
    /// are still expected, else Live).
    Part fixupPart() const { return pendingReplay() > 0 ? Part::Replay : Part::Live; }
    /// Records the `exit` message.
    void setExit(const ExitStatus &status) { m_exit = status; }
    std::optional<ExitStatus> exitStatus() const { return m_exit; }

    /// Between begin() and stop().
    bool isActive() const { return m_active; }
    /// begin() was called since the last forget(): there is an offset to resume from.
    bool hasOffset() const { return m_hasOffset; }
    /// Offset of the next output byte expected.
    quint64 offset() const { return m_offset; }
    /// Prelude + replay + snapshot bytes of the current attach not yet received.
    qint64 pendingReplay() const { return m_preludeLeft + m_replayLeft + m_snapshotLeft; }
    /// True while replay (or prelude) bytes are still expected.
    bool isReplaying() const { return pendingReplay() > 0; }
    /// The current attach's information (as given to begin()).
    const AttachInfo &info() const { return m_info; }

    /// The `attached` message (protocol.md §5) as an AttachInfo. Missing or
    /// malformed numbers read as 0, a missing `reset` as false.
    static AttachInfo parseAttached(const QJsonObject &message);
    /// The `exit` message ({"type":"exit","code":N,"signal":null}); nullopt
    /// when it has neither a numeric code nor a numeric signal.
    static std::optional<ExitStatus> parseExit(const QJsonObject &message);
    /// The line a viewer prints when the process ended:
    /// "[process exited with code 3]", "[process killed by signal 9]", or
    /// "[process exited]" when no `exit` message was seen.
    static QString exitLine(const std::optional<ExitStatus> &status);

    /// What a close with `code` and `reason` says (docs/protocol.md §5).
    static Close closeMeaning(int code, const QString &reason);
    /**
     * A close in words, for the log: "1012 \"server restarting\"" as sent.
     * Qt 5.15 and 6.4 refuse the registered codes 1012-1014 and report such
     * a close as 1002 "Invalid close code 1002 detected." (protocol.md,
     * "Note for Qt clients"); that reads like a protocol error, so it is
     * said as what it is: "1012 or 1013 (the server restarts in place or
     * is busy; Qt reports them as 1002)". 1000 and 1006 without a close
     * frame are "no close frame".
     */
    static QString closeText(int code, const QString &reason);
    /// Whether `code` and `reason` are Qt's report of a close code it
    /// refused (1002 "Invalid close code ... detected."), which from
    /// Tether means 1012 or 1013 (see closeText()).
    static bool isQtRefusedCode(int code, const QString &reason);
    /// How a C++ client ends on such a close; nullopt: retry with resume=.
    /// GoingAway ends as SessionKilled (only "server shutting down" says
    /// the server is going); BadRequest and TooBig as ProtocolError.
    static std::optional<End> closeEnd(Close meaning);
    /// Stable names ("taken_over", "server_shutdown", ...) shared with the
    /// dashboard's closeMeaning() and tests/vectors/attach-stream.json.
    static const char *closeName(Close meaning);
    static const char *endName(End end);
    static const char *partName(Part part);

private:
    AttachInfo m_info;
    std::optional<ExitStatus> m_exit;
    quint64 m_offset = 0;
    qint64 m_preludeLeft = 0;
    qint64 m_replayLeft = 0;
    qint64 m_snapshotLeft = 0;
    quint64 m_snapshotAt = 0;
    bool m_active = false;
    bool m_hasOffset = false;
};

} // namespace Tether
