// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QString>

namespace Tether {

/// Whether readRegularFile() follows a symbolic link in the path's last
/// component.
enum class Symlinks { Follow, Refuse };

/**
 * Reads at most `maxBytes + 1` bytes of `path` into `*out` (one more than
 * the caller's bound, so that it can tell a file over the bound from one at
 * it), only when what was opened is a regular file. open(2) with
 * O_NONBLOCK, so a FIFO (or a link to one) is refused at once instead of
 * blocking the event loop until a writer comes; the check is fstat(2) of the
 * opened descriptor, so a name switched to something else in between
 * changes nothing. With Symlinks::Refuse, O_NOFOLLOW too (records Tether
 * wrote itself are never links; a TLS certificate path may well be one, as
 * certbot's live/ directory is).
 *
 * False with `*error` set, without the path (callers name the file their
 * way): strerror(3)'s text, "not a regular file", or "not a regular file (a
 * symbolic link), not followed". Used by the session records
 * (SessionRecordStore) and the TLS files (TlsContext), which had one copy
 * each (issue 28).
 */
bool readRegularFile(const QString &path, qint64 maxBytes, Symlinks symlinks, QByteArray *out, QString *error);

} // namespace Tether
