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
import { applyModifiers, keySequence } from './keys.js';

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
