// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>
#include <QStringList>

#include <optional>

namespace Tether {

/**
 * The one grammar of command lines in Tether: the words of a POSIX shell
 * command line, with the shell's quoting and nothing else (POSIX.1-2017,
 * XCU 2.2 "Quoting" and the word rules of 2.3 "Token Recognition"). Used for
 * `--command`, the `sessions/command` setting, the Settings dialog's default
 * command and `tether list`'s COMMAND column; the dashboard's New field has
 * the same grammar in resources/dashboard/shellwords.js. Both are held to
 * tests/vectors/shellwords.json.
 *
 * The grammar changed in one place: QProcess::splitCommand (used before)
 * knows only double quotes, so `sh -c 'echo hi'` was four words there and
 * three in the dashboard.
 */
namespace ShellWords {

/**
 * Splits `line` into words as sh does before it expands anything:
 * - blanks (space, tab) and newlines separate words;
 * - a backslash outside quotes keeps the next character literally; a
 *   backslash-newline is removed (line continuation); a backslash at the very
 *   end is kept (as `sh -c 'echo a\'` prints `a\`);
 * - 'single quotes' keep everything up to the next ' literally;
 * - inside "double quotes" a backslash escapes only $ ` " \ and newline
 *   (backslash-newline is removed), otherwise it is kept;
 * - adjacent parts join into one word (`a"b c"'d'` is one word); '' and ""
 *   make an empty word.
 * Nothing is expanded or interpreted: $VAR, `cmd`, ~, *, |, ;, &&, < and #
 * are ordinary characters, since the words become an argv directly (no
 * shell runs them); type `sh -c '...'` for those.
 *
 * Returns the words (none for a blank line), or std::nullopt when a quote is
 * not closed, with `*error` (when not null) set to "unterminated single
 * quote" or "unterminated double quote".
 */
std::optional<QStringList> split(const QString &line, QString *error = nullptr);

/**
 * `argv` as one command line that sh, and split(), turn back into the same
 * words: a word of only ASCII letters, digits and % + , - . / : @ _ (and =
 * after the first word, where "x=1" would otherwise be an assignment) stays
 * as it is; any other word, the empty one included, is single-quoted, a '
 * inside written as '\''. Words are joined with one space. Shows commands to
 * people in `tether list` (["echo","a b"] used to show as "echo a b", as if it
 * were three words) and the dashboard.
 */
QString quote(const QStringList &argv);

} // namespace ShellWords

} // namespace Tether
