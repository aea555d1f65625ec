// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>

namespace Tether {

/**
 * The one rule for showing text that a session controls (its name, the
 * title its program sets, its command line, the name of its foreground
 * process, anything an error quotes back) to a person: on a terminal
 * (`tether list`, `tether share --list`, every error and end line of the
 * client), in a window title or a menu of the desktop application, and in
 * the dashboard (resources/dashboard/util.js, displayText(), held to the same
 * vectors: tests/vectors/displaytext.json). The API and the WebSocket
 * messages carry such text unchanged (docs/protocol.md, "Text a session
 * controls"); only what is shown is escaped.
 *
 * Why: such text is chosen by any program in the session (`cp /bin/sleep
 * "$(printf 'z\033[2J')"` names a process; OSC 2 sets a title), and printed
 * raw its escape sequences cleared the screen of whoever ran `tether list`,
 * and U+202E, U+2067 or U+200B made names read backwards or not at all
 * (issue 29).
 */
namespace DisplayText {

/**
 * `text` with every character that would act rather than show replaced by a
 * visible escape, everything else unchanged:
 * - ESC, TAB, LF, CR: `\e`, `\t`, `\n`, `\r`;
 * - the other C0 controls (U+0000..U+001F), DEL (U+007F) and the C1 controls
 *   (U+0080..U+009F): `\x` and two lower-case hex digits (`\x07`, `\x7f`,
 *   `\x9b`);
 * - the invisible and direction-changing format characters: U+00AD (soft
 *   hyphen), U+061C, U+180E, U+200B..U+200F (zero-width space, non-joiner,
 *   joiner, LRM, RLM), U+2028..U+202E (line and paragraph separators, the
 *   bidi embeddings and overrides), U+2060..U+2064, U+2066..U+206F (the bidi
 *   isolates and the deprecated format characters), U+FEFF (zero-width
 *   no-break space) and U+FFF9..U+FFFB: `\u` and four lower-case hex digits
 *   (`\u202e`).
 * An explicit list rather than a Unicode category, so that Qt's and the
 * browser's Unicode versions cannot make the two disagree. A backslash itself
 * is left as it is: the result is for reading, not for typing back (the id
 * always names a session).
 */
QString escape(const QString &text);

/// True when escape() would replace the UTF-16 code unit `c` (all the
/// characters above are in the Basic Multilingual Plane).
bool needsEscape(char16_t c);

} // namespace DisplayText

} // namespace Tether
