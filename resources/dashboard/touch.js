// SPDX-License-Identifier: GPL-2.0-or-later
// Touch on the terminal (issue 26). xterm.js 6 does nothing with a finger
// drag, so on a phone the scrollback could not be scrolled. Here:
// - one finger up or down scrolls: the scrollback of a shell; a program that
//   asked for the mouse (htop, vim with mouse=a) gets mouse-wheel reports,
//   as from a wheel (xterm.js encodes them: a wheel event is handed to it);
//   in the alternate screen without the mouse (less, man) the arrow keys, as
//   xterm's alternateScroll sends them;
// - a tap focuses the terminal (the soft keyboard opens);
// - a long press selects the word under the finger, a drag after it extends
//   the selection, and a Copy button copies it;
// - two fingers pinch the font size (A− / A+ do the same);
// - the page takes the height the soft keyboard leaves (visualViewport, for
//   browsers without `interactive-widget=resizes-content`), and when the
//   keyboard opens the terminal scrolls to its cursor line.

import { $, el } from './dom.js';
import { clampFontSize } from './storage.js';

const MOVE_SLOP = 8;        // px a finger may wander and still tap or long-press
const LONG_PRESS_MS = 500;  // held this long without moving: select

/** One cell's height and width in CSS pixels, and the screen's box. */
function geometry(term) {
  const screen = term.element?.querySelector('.xterm-screen');
  if (!screen || !term.rows || !term.cols) return null;
  const r = screen.getBoundingClientRect();
  if (!r.height || !r.width) return null;
  return { screen, rect: r, cellH: r.height / term.rows, cellW: r.width / term.cols };
}

/** The buffer cell under a point: { col, row } (row in the whole buffer). */
function cellAt(term, g, x, y) {
  const col = Math.max(0, Math.min(term.cols - 1, Math.floor((x - g.rect.left) / g.cellW)));
  const row = Math.max(0, Math.min(term.rows - 1, Math.floor((y - g.rect.top) / g.cellH)));
  return { col, row: row + term.buffer.active.viewportY };
}

/** Puts `text` on the clipboard (the Async Clipboard API needs a secure context). */
function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).catch(() => {});
    return;
  }
  const t = el('textarea');
  t.value = text;
  t.setAttribute('readonly', '');
  t.className = 'offscreen-copy';
  document.body.append(t);
  t.select();
  try { document.execCommand('copy'); } catch { /* nothing more to try */ }
  t.remove();
}

/**
 * Wires touch on a terminal's box: the pane's (#terminal-wrap) by default,
 * or a tile's (`o.wrap`; its Copy button goes in the tile, and the soft
 * keyboard's handling, which is the page's, is left to the pane's).
 * @param {{
 *   wrap?: HTMLElement,                // the terminal's scrolling box; default #terminal-wrap
 *   term: () => ?import('./vendor/xterm.js').Terminal, // the open terminal, else null
 *   control: () => boolean,            // it may send input (not a watcher)
 *   previewFontSize: (px: number) => void, // while pinching: show, do not keep
 *   setFontSize: (px: number) => void, // the pinch ended: keep
 * }} o
 * @returns {{stats: () => object}} for tests: counts of what touch did
 */
export function initTouch(o) {
  const pane = !o.wrap;
  const wrap = o.wrap || $('terminal-wrap');
  const copyButton = el('button', 'small touch-copy', 'Copy');
  copyButton.type = 'button';
  if (pane) copyButton.id = 'touch-copy';
  copyButton.hidden = true;
  wrap.parentElement.append(copyButton);
  const stats = { scrolled: 0, wheel: 0, arrows: 0, taps: 0, pinches: 0, selections: 0 };

  /** The gesture under way: null, or { kind: 'one'|'scroll'|'select'|'pinch', ... }. */
  let g = null;
  let pressTimer = null;

  const clearPress = () => { clearTimeout(pressTimer); pressTimer = null; };

  /** Scrolls `lines` (negative: back into the scrollback) as a wheel would. */
  function scroll(term, lines, x, y) {
    if (lines === 0) return;
    if (term.modes.mouseTrackingMode !== 'none') {
      if (!o.control()) return;
      // xterm.js encodes the wheel as the program asked (X10, SGR...).
      const screen = term.element.querySelector('.xterm-screen');
      for (let i = 0; i < Math.abs(lines); i++) {
        screen.dispatchEvent(new WheelEvent('wheel', {
          deltaY: Math.sign(lines), deltaMode: WheelEvent.DOM_DELTA_LINE,
          clientX: x, clientY: y, bubbles: true, cancelable: true,
        }));
      }
      stats.wheel += Math.abs(lines);
    } else if (term.buffer.active.type === 'alternate') {
      if (!o.control()) return;
      const app = term.modes.applicationCursorKeysMode;
      const key = `\x1b${app ? 'O' : '['}${lines < 0 ? 'A' : 'B'}`;
      term.input(key.repeat(Math.abs(lines)), true);
      stats.arrows += Math.abs(lines);
    } else {
      term.scrollLines(lines);
      stats.scrolled += lines;
    }
  }

  function distance(t) {
    return Math.hypot(t[0].clientX - t[1].clientX, t[0].clientY - t[1].clientY);
  }

  wrap.addEventListener('touchstart', (e) => {
    const term = o.term();
    if (!term) return;
    if (e.target === copyButton) return;
    clearPress();
    if (e.touches.length === 2) {
      g = { kind: 'pinch', d0: distance(e.touches), f0: term.options.fontSize, f: term.options.fontSize };
      return;
    }
    if (e.touches.length !== 1) { g = null; return; }
    const t = e.touches[0];
    g = {
      kind: 'one', x0: t.clientX, y0: t.clientY, lastY: t.clientY, acc: 0, at: performance.now(),
    };
    const started = g;
    pressTimer = setTimeout(() => {
      pressTimer = null;
      if (g !== started || g.kind !== 'one') return;
      const geo = geometry(term);
      if (!geo) return;
      const c = cellAt(term, geo, g.x0, g.y0);
      // The word under the finger (a run of non-blank characters).
      const line = term.buffer.active.getLine(c.row);
      const text = line ? line.translateToString(false) : '';
      let a = c.col;
      let b = c.col;
      if (text[c.col] && text[c.col] !== ' ') {
        while (a > 0 && text[a - 1] && text[a - 1] !== ' ') a--;
        while (b < text.length - 1 && text[b + 1] && text[b + 1] !== ' ') b++;
      }
      term.select(a, c.row, b - a + 1);
      g = { kind: 'select', geo, anchor: { col: a, row: c.row }, end: { col: b, row: c.row } };
      stats.selections++;
    }, LONG_PRESS_MS);
  }, { passive: true });

  wrap.addEventListener('touchmove', (e) => {
    const term = o.term();
    if (!term || !g) return;
    if (g.kind === 'pinch') {
      if (e.touches.length !== 2) return;
      e.preventDefault();
      const f = clampFontSize(Math.round(g.f0 * (distance(e.touches) / g.d0)));
      if (f !== g.f) {
        g.f = f;
        o.previewFontSize(f);
      }
      return;
    }
    const t = e.touches[0];
    if (g.kind === 'select') {
      e.preventDefault();
      const c = cellAt(term, g.geo, t.clientX, t.clientY);
      const cols = term.cols;
      const ia = g.anchor.row * cols + g.anchor.col;
      const ic = c.row * cols + c.col;
      const from = Math.min(ia, ic);
      term.select(from % cols, Math.floor(from / cols), Math.abs(ic - ia) + 1);
      return;
    }
    if (g.kind === 'one') {
      if (Math.hypot(t.clientX - g.x0, t.clientY - g.y0) < MOVE_SLOP) return;
      clearPress();
      g.kind = 'scroll';
    }
    if (g.kind === 'scroll') {
      e.preventDefault();
      const geo = geometry(term);
      if (!geo) return;
      // The content follows the finger: down shows earlier lines.
      g.acc += t.clientY - g.lastY;
      g.lastY = t.clientY;
      const lines = Math.trunc(g.acc / geo.cellH);
      if (lines !== 0) {
        g.acc -= lines * geo.cellH;
        scroll(term, -lines, t.clientX, t.clientY);
      }
    }
  }, { passive: false });

  const end = (e) => {
    clearPress();
    const term = o.term();
    const done = g;
    if (e.touches.length > 0) {
      // A pinch that lost a finger ends; one finger left starts nothing.
      if (done && done.kind === 'pinch') { o.setFontSize(done.f); stats.pinches++; }
      g = null;
      return;
    }
    g = null;
    if (!term || !done) return;
    if (done.kind === 'pinch') {
      o.setFontSize(done.f);
      stats.pinches++;
    } else if (done.kind === 'select') {
      e.preventDefault(); // no click: it would clear the selection
      copyButton.hidden = !term.hasSelection();
    } else if (done.kind === 'one' && e.type === 'touchend') {
      stats.taps++;
      copyButton.hidden = true;
      // A tap: the keyboard's focus (and the soft keyboard).
      if (o.control()) term.focus();
    }
  };
  wrap.addEventListener('touchend', end, { passive: false });
  wrap.addEventListener('touchcancel', end, { passive: false });
  // The long press's own menu (Chromium's, on the hidden textarea) would
  // cover the selection.
  wrap.addEventListener('contextmenu', (e) => {
    if (g && g.kind === 'select') e.preventDefault();
  });

  copyButton.addEventListener('click', () => {
    const term = o.term();
    if (term && term.hasSelection()) {
      copyText(term.getSelection());
      term.clearSelection();
    }
    copyButton.hidden = true;
    if (term && o.control()) term.focus();
  });

  if (!pane) return { stats: () => ({ ...stats }) };

  // The soft keyboard: the page's height is what it leaves (browsers that
  // keep the layout viewport, such as Safari), and when it opens over a
  // focused terminal, the cursor line is brought into view, now and after
  // the fit to the shorter pane (xterm.js keeps the scrolled-back position).
  const vv = window.visualViewport;
  const height = () => (vv ? vv.height : window.innerHeight);
  let lastHeight = height();
  const viewportChanged = () => {
    const h = height();
    if (vv && Math.abs(vv.scale - 1) < 0.01) {
      // Not while zoomed in: the visual viewport is then a part of the page.
      document.documentElement.style.setProperty('--app-height', `${Math.round(h)}px`);
    }
    const term = o.term();
    if (h < lastHeight - 1 && term && document.activeElement === term.textarea) {
      term.scrollToBottom();
      const once = term.onResize(() => {
        once.dispose();
        term.scrollToBottom();
      });
      setTimeout(() => once.dispose(), 2000); // no resize came: nothing to follow
    }
    lastHeight = h;
  };
  if (vv) vv.addEventListener('resize', viewportChanged);
  else window.addEventListener('resize', viewportChanged);

  return { stats: () => ({ ...stats }) };
}
