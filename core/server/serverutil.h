// SPDX-License-Identifier: GPL-2.0-or-later
// Small helpers that several of Server's files (server*.cpp) use. Internal to
// the server layer: only those files include it. What one file alone needs
// stays file-local there.
#pragma once

#include "httpconnection.h"

#include <QByteArray>
#include <QHostAddress>

namespace Tether {

/// The coalescing delay of `sessions` events and the shortest delay of an
/// `output` event, ms (Server's event timers; docs/protocol.md "Live list").
inline constexpr int kEventCoalesceMs = 100;
/// The key's cookie (docs/protocol.md section 3): set by the key link and the
/// dashboard's page, checked by Server::authorized().
inline const QByteArray kCookieName = QByteArrayLiteral("tether_key");

using Headers = HttpConnection::Headers;

/// One header field, as the `headers` of an HttpConnection answer.
inline Headers header(const char *name, const QByteArray &value)
{
    return Headers{qMakePair(QByteArray(name), value)};
}

/// `a` with an IPv4-mapped IPv6 address (::ffff:a.b.c.d) as plain IPv4, so
/// that addresses compare equal whichever way a socket reports them.
inline QHostAddress normalized(const QHostAddress &a)
{
    bool isV4 = false;
    const quint32 v4 = a.toIPv4Address(&isV4);
    return isV4 ? QHostAddress(v4) : a;
}

} // namespace Tether
