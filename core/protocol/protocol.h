// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "attachinfo.h"

#include <QString>

/// Constants of the wire protocol, shared by the server (websocketviewer,
/// server), the client (attachclient, attachstream) and the ui, so they cannot
/// drift apart. The contract is docs/protocol.md; this header must say the
/// same. The dashboard's copy (resources/dashboard/attachment.js) is checked
/// against this header by tests/js/attachment.test.mjs (ctest js/attachment).
namespace Tether::Protocol {

/// WebSocket close codes the server sends (docs/protocol.md §5 "Close codes").
/// 1001, 1009 and 1013 are registered codes (RFC 6455 §7.4.1, IANA registry);
/// the 4xxx codes are Tether's own, in the range RFC 6455 §7.4.2 leaves to
/// applications. Their numbers echo the HTTP statuses of the same meaning.
enum CloseCode : int {
    GoingAway = 1001,      ///< "session killed" or "server shutting down"
    TooBig = 1009,         ///< a frame or message over 1 MiB (sent by Qt)
    /// "server restarting": Tether restarts in place (RFC 6455 §7.4.1 and the
    /// IANA registry: 1012 Service Restart); reconnect with resume=OFFSET.
    /// QWebSocket (Qt 5, Qt 6.4) reports it as 1002, as it does 1013.
    ServiceRestart = 1012,
    TryAgainLater = 1013,  ///< "input stalled" or "too far behind": resume later
    BadRequest = 4400,     ///< "bad control message" / "bad query"
    /// "read-only link revoked": the share token this watcher attached with
    /// was revoked (or the key rotated); its later uses are answered 401.
    Unauthorized = 4401,
    NotFound = 4404,       ///< "no such session": unknown or expired id
    Superseded = 4409,     ///< a newer control viewer attached
    Exited = 4410,         ///< "process exited", after the `exit` message
    /// "session ended by reboot" / "... by crash" / "... by shutdown": the
    /// id is an ended session, kept as a record (docs/protocol.md, "Ended
    /// sessions"); revive it or read its saved screen.
    Ended = 4411,
    TooManyViewers = 4429, ///< the session already has Session::kMaxViewers viewers
};

/// Reason texts of the close frames (docs/protocol.md §5 "Close codes"). Two
/// codes carry more than one meaning and clients tell them apart by these
/// texts: 1001 (SessionKilled / ServerShutdown) and 1013 (InputStalled /
/// TooFarBehind). UTF-8, at most 123 bytes (RFC 6455 §5.5: a control frame's
/// payload is at most 125 bytes, two of them the code).
namespace CloseReason {
inline constexpr char SessionKilled[] = "session killed";
inline constexpr char ServerShutdown[] = "server shutting down";
inline constexpr char ServiceRestart[] = "server restarting";
inline constexpr char InputStalled[] = "input stalled";
inline constexpr char TooFarBehind[] = "too far behind";
inline constexpr char BadControlMessage[] = "bad control message";
inline constexpr char BadQuery[] = "bad query";
inline constexpr char NoSuchSession[] = "no such session";
inline constexpr char Superseded[] = "superseded";
inline constexpr char ProcessExited[] = "process exited";
inline constexpr char TooManyViewers[] = "too many viewers";
inline constexpr char ShareRevoked[] = "read-only link revoked";
/// 4411 (Ended): the ended session's `ended` (docs/protocol.md, "Ended sessions").
inline constexpr char SessionEndedByReboot[] = "session ended by reboot";
inline constexpr char SessionEndedByCrash[] = "session ended by crash";
inline constexpr char SessionEndedByShutdown[] = "session ended by shutdown";
} // namespace CloseReason

/// The protocol field "reason" of the `attached` message for `reason`
/// ("initial", "resume", "rolled_out", "ahead").
const char *replayReasonName(ReplayReason reason);

/// How the process ended, in words for a terminal line or a notification:
/// "exited with code 3" or "killed by signal 9". Not translated.
QString exitStatusText(const ExitStatus &status);

} // namespace Tether::Protocol
