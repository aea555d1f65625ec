// SPDX-License-Identifier: GPL-2.0-or-later
// The key bar (#keybar): the keys a phone's soft keyboard lacks, in a row
// under the terminal, as Termux has: Esc, Tab, Ctrl and Alt (sticky: tap
// once for the next key, twice to lock, once more to release), the arrows,
// Home/End, PgUp/PgDn and | ~ / -. Each sends what a real keyboard sends to
// xterm.js's terminal (the arrows and Home/End follow the program's
// application cursor mode, DECCKM). Shown on touch devices by default; the
// Keys button above the terminal shows or hides it anywhere (a preference of
// the browser, localStorage key tether.keybar).

import { $, el } from './dom.js';

const PREF_KEY = 'tether.keybar';
const COARSE = window.matchMedia('(pointer: coarse)');

/**
 * The keys, in order: [label, name, title]. Names of special keys are
 * handled by keySequence(); a one-character name is that character.
 */
const KEYS = [
  // Two rows of eight on a phone (phone.css), the arrows as an inverted T.
  ['Esc', 'Escape', 'Escape'],
  ['/', '/', '/'],
  ['-', '-', '-'],
  ['|', '|', '|'],
  ['~', '~', '~'],
  ['Home', 'Home', 'Home'],
  ['↑', 'ArrowUp', 'Up'],
  ['End', 'End', 'End'],
  ['Tab', 'Tab', 'Tab'],
  ['Ctrl', 'Ctrl', 'Ctrl: tap once for the next key, twice to lock'],
  ['Alt', 'Alt', 'Alt: tap once for the next key, twice to lock'],
  ['PgUp', 'PageUp', 'Page Up'],
  ['PgDn', 'PageDown', 'Page Down'],
  ['←', 'ArrowLeft', 'Left'],
  ['↓', 'ArrowDown', 'Down'],
  ['→', 'ArrowRight', 'Right'],
];

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

/** The preference: shown (true), hidden (false); by default on touch devices. */
function wanted() {
  let v = null;
  try { v = localStorage.getItem(PREF_KEY); } catch { /* storage off */ }
  if (v === '1') return true;
  if (v === '0') return false;
  return COARSE.matches || navigator.maxTouchPoints > 0;
}

/**
 * Builds the key bar into #keybar and wires the Keys toggle (#keys-toggle).
 * @param {{
 *   term: () => ?import('./vendor/xterm.js').Terminal, // the open terminal in control mode, else null
 *   onLayout: () => void, // shown or hidden: the pane changed size
 * }} o
 * @returns {{filter: (data: string) => string, update: () => void, modifiers: () => object}}
 *   filter: xterm.js's onData through the sticky modifiers (Attachment's
 *   filterInput); update: show or hide for the open terminal
 */
export function createKeyBar(o) {
  const bar = $('keybar');
  const toggle = $('keys-toggle');
  /** Sticky modifiers: 'off', 'once' (the next key) or 'lock'. */
  const mods = { Ctrl: 'off', Alt: 'off' };
  const buttons = {};
  let passing = false; // the bar's own key going through onData as it is

  function renderMods() {
    for (const name of ['Ctrl', 'Alt']) {
      buttons[name].dataset.state = mods[name];
      buttons[name].setAttribute('aria-pressed', String(mods[name] !== 'off'));
    }
  }

  /** A key was sent: a modifier tapped once lets go. */
  function used() {
    for (const name of ['Ctrl', 'Alt']) if (mods[name] === 'once') mods[name] = 'off';
    renderMods();
  }

  function press(name) {
    if (name === 'Ctrl' || name === 'Alt') {
      mods[name] = { off: 'once', once: 'lock', lock: 'off' }[mods[name]];
      renderMods();
      return;
    }
    const term = o.term();
    if (!term) return;
    const seq = keySequence(name, {
      ctrl: mods.Ctrl !== 'off',
      alt: mods.Alt !== 'off',
      appCursor: term.modes.applicationCursorKeysMode,
    });
    used();
    // As typed: xterm.js scrolls to the bottom and clears the selection,
    // and the attachment sends it (or holds it back during a replay).
    passing = true;
    try { term.input(seq, true); } finally { passing = false; }
  }

  for (const [label, name, title] of KEYS) {
    const b = el('button', 'key', label);
    b.type = 'button';
    b.tabIndex = -1;
    b.title = title;
    b.dataset.key = name;
    if (name === 'Ctrl' || name === 'Alt') b.classList.add('modifier');
    buttons[name] = b;
    bar.append(b);
  }
  renderMods();
  // Taps must not take the focus from the terminal: the soft keyboard
  // would close. The click does the work.
  bar.addEventListener('mousedown', (e) => e.preventDefault());
  bar.addEventListener('click', (e) => {
    const b = e.target.closest('button.key');
    if (b) press(b.dataset.key);
  });

  function update() {
    const on = wanted() && !!o.term();
    toggle.setAttribute('aria-pressed', String(wanted()));
    if (bar.hidden === !on) return;
    bar.hidden = !on;
    o.onLayout();
  }

  toggle.addEventListener('click', () => {
    try { localStorage.setItem(PREF_KEY, wanted() ? '0' : '1'); } catch { /* storage off */ }
    update();
  });
  window.addEventListener('storage', (e) => { if (e.key === PREF_KEY) update(); });
  COARSE.addEventListener('change', update);
  update();

  return {
    filter(data) {
      if (passing) return data;
      const ctrl = mods.Ctrl !== 'off';
      const alt = mods.Alt !== 'off';
      if (!ctrl && !alt) return data;
      used();
      return applyModifiers(data, ctrl, alt);
    },
    update,
    /** For tests: { Ctrl, Alt } each 'off', 'once' or 'lock'. */
    modifiers: () => ({ ...mods }),
  };
}
