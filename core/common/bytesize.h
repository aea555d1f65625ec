// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>
#include <QtGlobal>

#include <optional>

namespace Tether {

/**
 * Reads a byte count typed by a person: the one text-to-bytes parser of
 * Tether (`--buffer-size` of `tether serve` and `tether`, anything else that
 * takes a size as text).
 *
 * Grammar: optional blanks, a whole decimal number, optional blanks, an
 * optional unit, optional blanks. Units (any case) are binary, as the --help
 * text and the README have always said ("64K..64M", "64 KiB"):
 * K or KiB = 1024, M or MiB = 1024², G or GiB = 1024³ bytes. No unit means
 * bytes ("B" is accepted too).
 *
 * Rejected, with a sentence for the user in `*error` (when not null):
 * an empty text, a sign ("-1", "+1"), a fraction ("1.5M"), an unknown unit
 * ("1Q"), "KB"/"MB"/"GB" (dd and SI read those as powers of 1000: ambiguous),
 * and any value above 2^63 - 1 bytes, checked before it is computed: a
 * multiplication that wrapped let `--buffer-size 17592186044417M`
 * (2^64 + 2^20 bytes) through as 1 MiB. Ranges of a particular option
 * (64 KiB..64 MiB for the ring buffer) are the caller's to check.
 *
 * Returns the number of bytes (and clears `*error`), or std::nullopt on error.
 */
std::optional<qint64> parseByteSize(const QString &text, QString *error = nullptr);

} // namespace Tether
