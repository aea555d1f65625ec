// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>

namespace Tether {

/**
 * The one loopback predicate of Tether (issue 28: the server's bind policy,
 * the client's proxy choice and the Settings dialog's question each had
 * their own, and they disagreed): true for the name "localhost" (any case,
 * RFC 6761 §6.3: it resolves to loopback only), an IPv4 address in
 * 127.0.0.0/8 (RFC 1122 §3.2.1.3), the IPv6 address ::1 and an IPv4-mapped
 * IPv6 address of 127.0.0.0/8 (RFC 4291 §2.5.3, §2.5.5.2), in any textual
 * form inet_pton(3) reads, with or without the brackets of a URL's host.
 * White space around it is ignored. Anything else is not loopback: other
 * names (nothing is resolved), wildcards ("0.0.0.0", "::"), the empty
 * string (callers that give it a meaning, such as the default bind, say so
 * themselves) and what inet_pton refuses (e.g. the short form "127.1").
 * Core only (no QtNetwork): the client and server layers and the ui share it.
 */
bool isLoopbackHost(const QString &host);

} // namespace Tether
