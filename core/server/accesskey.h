// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QString>

namespace Tether {

/**
 * The server's access key: 32 bytes (256 bits) from the system CSPRNG
 * (QRandomGenerator::system(), i.e. getrandom(2)), encoded base64url without
 * padding (RFC 4648 §5): 43 characters of [A-Za-z0-9_-], safe in URLs and
 * cookies without escaping. Never logged.
 */
QString generateAccessKey();

/// True when `key` has the form generateAccessKey() makes (43 characters of
/// [A-Za-z0-9_-]).
bool isWellFormedAccessKey(const QString &key);

/**
 * The key kept in `path` (one line, the key), so that bookmarks and open
 * dashboards survive a restart of Tether. A missing file is created with a
 * new key; a file that is not a regular file owned by this user with mode
 * 0600 (no access for group or others), or whose content is not a
 * well-formed key, is not trusted and replaced by a new key (a key others
 * could read is as good as public). Returns the key, or an empty string with
 * *error set when the file cannot be written (the caller then uses a key
 * that lives in memory only, and says so).
 */
QString loadOrCreateAccessKey(const QString &path, QString *error);

/**
 * Writes `key` to `path` atomically (a new file of mode 0600 created
 * exclusively beside it, written, fsync(2)ed, then rename(2)d over `path`),
 * creating the directory (mode 0700) if needed. False with *error (the errno
 * text and the path) on failure; the old file is then left as it was.
 */
bool storeAccessKey(const QString &path, const QString &key, QString *error);

/**
 * Compares two byte strings in time that depends only on their lengths, not on
 * where they differ, so a network attacker cannot find the key byte by byte by
 * timing 401 answers. Different lengths compare unequal (the key's length is
 * public: 43 characters).
 */
bool constantTimeEquals(const QByteArray &a, const QByteArray &b);

} // namespace Tether
