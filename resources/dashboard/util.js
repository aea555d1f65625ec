// SPDX-License-Identifier: GPL-2.0-or-later
// Small pure helpers of the dashboard: the human formats used by the session
// list. No DOM here. Command lines are split and quoted by shellwords.js.

import { quote } from './shellwords.js';
import { duration as formatDuration, exitStatus } from './sessiontext.js';

export { duration as formatDuration, bytes as formatBytes } from './sessiontext.js';

/**
 * A countdown: "4:59" below an hour (minutes:seconds), else as formatDuration.
 * @param {number} seconds
 */
export function formatCountdown(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s >= 3600) return formatDuration(s);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

// The characters displayText() escapes, as in core/common/displaytext.h (one
// rule, one list; tests/vectors/displaytext.json holds both to it).
const ESCAPED = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/g;
const NAMED = { '\u001b': '\\e', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * Text a session controls (its name, title, command line) as it is shown:
 * every control character and every invisible or direction-changing format
 * character replaced by a visible escape (`\e`, `\t`, `\n`, `\r`, `\x7f`,
 * `\u202e`), the rule of DisplayText::escape (core/common/displaytext.h), so
 * that a name with U+202E cannot read backwards here either.
 * @param {string} text
 */
export function displayText(text) {
  return String(text ?? '').replace(ESCAPED, (c) => {
    if (NAMED[c]) return NAMED[c];
    const code = c.charCodeAt(0);
    return code <= 0x9f ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * The name shown for a session: the name people gave it, else its terminal
 * title when the program set one, else its command line (the basename of
 * argv[0] plus the arguments, shell-quoted as `tether list` shows it:
 * `vim -c 'set number'`), through displayText().
 * @param {{name?: string, title?: string, command?: string[]}} s SESSION object of the protocol
 */
export function sessionLabel(s) {
  if (s.name) return displayText(s.name);
  if (s.title) return displayText(s.title);
  const argv = Array.isArray(s.command) ? s.command : [];
  if (!argv.length) return 'shell';
  const prog = argv[0].split('/').pop() || argv[0];
  return displayText(quote([prog, ...argv.slice(1)]));
}

/**
 * The full command line of a session, shell-quoted as `tether list` shows it,
 * for tooltips, through displayText().
 * @param {{command?: string[]}} s
 */
export function commandLine(s) {
  return displayText(quote(Array.isArray(s.command) ? s.command : []));
}

/**
 * How a process ended, in a sentence's words: "Process exited with code N",
 * "Process killed by signal N", else "Process exited" (SessionText).
 * @param {{code?: number|null, signal?: number|null}|null|undefined} exit
 */
export function exitText(exit) {
  return `Process ${exitStatus(exit)}`;
}
