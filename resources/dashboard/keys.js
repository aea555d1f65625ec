// SPDX-License-Identifier: GPL-2.0-or-later
// What a real keyboard sends through xterm.js for the key bar's keys
// (keybar.js), as pure functions (no DOM; tested under node,
// tests/js/keys.test.mjs): control characters, the cursor keys in normal
// and application cursor mode (DECCKM), xterm's modifier parameter, Alt as
// an ESC prefix.

/** Final bytes of the cursor keys (CSI / SS3 A..D, H, F). */
const CURSOR = {
  ArrowUp: 'A', ArrowDown: 'B', ArrowRight: 'C', ArrowLeft: 'D', Home: 'H', End: 'F',
};

/**
 * The control character a terminal sends for Ctrl with `ch`, as xterm (and
 * xterm.js) does: Ctrl+A..Z (either case) 0x01..0x1a, Ctrl+@ / Space / 2
 * 0x00, Ctrl+[ / 3 ESC, Ctrl+\ / 4 0x1c, Ctrl+] / 5 0x1d, Ctrl+^ / 6 / ~
 * 0x1e, Ctrl+_ / 7 / / / - 0x1f, Ctrl+? / 8 DEL; anything else unchanged.
 * @param {string} ch one character
 * @returns {string}
 */
export function ctrlChar(ch) {
  const c = ch.charCodeAt(0);
  if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)) return String.fromCharCode(c & 0x1f);
  const table = {
    '@': '\x00', ' ': '\x00', 2: '\x00', '[': '\x1b', 3: '\x1b', '\\': '\x1c', 4: '\x1c',
    ']': '\x1d', 5: '\x1d', '^': '\x1e', 6: '\x1e', '~': '\x1e', _: '\x1f', 7: '\x1f',
    '/': '\x1f', '-': '\x1f', '?': '\x7f', 8: '\x7f',
  };
  return table[ch] ?? ch;
}

/**
 * The bytes a real keyboard's key sends through xterm.js.
 * @param {string} name a KEYS name (not Ctrl or Alt)
 * @param {{ctrl: boolean, alt: boolean, appCursor: boolean}} m the
 *   modifiers and the terminal's application cursor mode (DECCKM)
 * @returns {string}
 */
export function keySequence(name, m) {
  // xterm's modifier parameter: 1 + Shift 1 + Alt 2 + Ctrl 4.
  const mod = 1 + (m.alt ? 2 : 0) + (m.ctrl ? 4 : 0);
  if (name in CURSOR) {
    const f = CURSOR[name];
    if (mod > 1) return `\x1b[1;${mod}${f}`;
    return m.appCursor ? `\x1bO${f}` : `\x1b[${f}`;
  }
  if (name === 'PageUp' || name === 'PageDown') {
    const n = name === 'PageUp' ? 5 : 6;
    return mod > 1 ? `\x1b[${n};${mod}~` : `\x1b[${n}~`;
  }
  let s;
  if (name === 'Escape') s = '\x1b';
  else if (name === 'Tab') s = '\t';
  else s = m.ctrl ? ctrlChar(name) : name;
  return m.alt ? `\x1b${s}` : s;
}

/**
 * Applies sticky modifiers to what the keyboard typed (xterm.js's onData):
 * Ctrl to a single character, Alt as an ESC prefix; other data (an escape
 * sequence, a paste, a word of a soft keyboard) gets Alt's prefix only.
 */
export function applyModifiers(data, ctrl, alt) {
  let s = data;
  if (ctrl && [...data].length === 1) s = ctrlChar(data);
  return alt ? `\x1b${s}` : s;
}
