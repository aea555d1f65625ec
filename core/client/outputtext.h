// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QString>

namespace Tether {

/**
 * The text a command's output shows, from its raw terminal bytes (what
 * `GET /api/sessions/{id}/commands/{n}/output` returns): what copying the
 * command's output lines from a terminal gives, as the dashboard's "copy a
 * command's output" does (xterm.js selectLines() + getSelection()).
 *
 * - Escape sequences are dropped: CSI (`ESC [` ... final byte), OSC
 *   (`ESC ]` ... BEL or ST), DCS/SOS/PM/APC (`ESC P`, `ESC X`, `ESC ^`,
 *   `ESC _` ... ST), charset designations (`ESC (` and the like, with their
 *   one designator byte) and every other two-byte `ESC x`; CAN and SUB
 *   abort a sequence. C1 controls are not interpreted (UTF-8 is decoded
 *   first; U+0080..U+009F are dropped).
 * - Lines are rendered, not concatenated: CR returns to the line's start and
 *   what follows overwrites it (a progress bar leaves its last state), BS
 *   moves one column back, TAB moves to the next multiple of 8 columns
 *   (spaces), LF ends the line. Other C0 controls (BEL, ...) are dropped.
 *   Cursor movements other than these are not followed (their sequences are
 *   dropped).
 * - Each line loses its trailing spaces; lines are joined with "\n"; the
 *   empty line after a final line feed is not part of the result (so
 *   "red\r\nplain\r\n" gives "red\nplain").
 *
 * Invalid UTF-8 becomes U+FFFD (QString::fromUtf8). Never fails.
 */
QString outputText(const QByteArray &bytes);

} // namespace Tether
