// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

/// Constants of the wire protocol, shared by the server (websocketviewer,
/// server) and the client (attachclient), so the two cannot drift apart. The
/// contract is docs/protocol.md; this header must say the same.
namespace Tether::Protocol {

/// WebSocket close codes the server sends (docs/protocol.md §5 "Close codes").
/// 1001, 1009 and 1013 are registered codes (RFC 6455 §7.4.1, IANA registry);
/// the 4xxx codes are Tether's own, in the range RFC 6455 §7.4.2 leaves to
/// applications. Their numbers echo the HTTP statuses of the same meaning.
enum CloseCode : int {
    GoingAway = 1001,      ///< "session killed" or "server shutting down"
    TooBig = 1009,         ///< a frame or message over 1 MiB (sent by Qt)
    TryAgainLater = 1013,  ///< "input stalled" or "too far behind": resume later
    BadRequest = 4400,     ///< "bad control message" / "bad query"
    NotFound = 4404,       ///< "no such session": unknown or expired id
    Superseded = 4409,     ///< a newer control viewer attached
    Exited = 4410,         ///< "process exited", after the `exit` message
    TooManyViewers = 4429, ///< the session already has Session::kMaxViewers viewers
};

} // namespace Tether::Protocol
