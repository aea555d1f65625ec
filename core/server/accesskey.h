// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QString>

namespace Tether {

/**
 * The server's access key: 32 bytes (256 bits) from the system CSPRNG
 * (QRandomGenerator::system(), i.e. getrandom(2)), encoded base64url without
 * padding (RFC 4648 §5): 43 characters of [A-Za-z0-9_-], safe in URLs and
 * cookies without escaping. A fresh key is made at every server start; it is
 * never logged.
 */
QString generateAccessKey();

/**
 * Compares two byte strings in time that depends only on their lengths, not on
 * where they differ, so a network attacker cannot find the key byte by byte by
 * timing 401 answers. Different lengths compare unequal (the key's length is
 * public: 43 characters).
 */
bool constantTimeEquals(const QByteArray &a, const QByteArray &b);

} // namespace Tether
