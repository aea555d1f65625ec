// SPDX-License-Identifier: GPL-2.0-or-later
// The terminal view: one xterm.js Terminal in the pane (#terminal) with its
// addons (fit, search, web links, Unicode 11, WebGL), its keys (clipboard,
// the dashboard's shortcuts, a watcher's keys that must not scroll), its
// theme, and the sizes it measures. It knows nothing of sessions or sockets:
// the caller connects it to an attachment (attachment.js).

import { Terminal } from './vendor/xterm.js';
import { FitAddon } from './vendor/addon-fit.js';
import { SearchAddon } from './vendor/addon-search.js';
import { WebLinksAddon } from './vendor/addon-web-links.js';
import { Unicode11Addon } from './vendor/addon-unicode11.js';
import { WebglAddon } from './vendor/addon-webgl.js';
import { $ } from './dom.js';
import { FONT_MIN } from './storage.js';

// A fit on a hidden or collapsed element yields 0 or a couple of cells; such a
// size must never reach the session (it would reflow the user's shell).
const MIN_COLS = 10;
const MIN_ROWS = 3;
/** Keys whose default action scrolls a scrollable box (see createView). */
const SCROLL_KEYS = new Set([' ', 'Spacebar', 'PageUp', 'PageDown', 'Home', 'End',
  'ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight']);
const DARK = window.matchMedia('(prefers-color-scheme: dark)');

const THEMES = {
  light: {
    background: '#fbfbf9', foreground: '#1f2328', cursor: '#1f2328', cursorAccent: '#fbfbf9',
    selectionBackground: '#b6d3f7', selectionForeground: '#1f2328',
    black: '#24292f', red: '#c62f37', green: '#1f7a34', yellow: '#8a6100',
    blue: '#0a58ca', magenta: '#8250df', cyan: '#117a8b', white: '#6e7781',
    brightBlack: '#57606a', brightRed: '#d93b42', brightGreen: '#268f3f', brightYellow: '#a77300',
    brightBlue: '#2672e0', brightMagenta: '#a371f7', brightCyan: '#1896a8', brightWhite: '#8c959f',
    scrollbarSliderBackground: 'rgba(31,35,40,0.18)',
    scrollbarSliderHoverBackground: 'rgba(31,35,40,0.30)',
    scrollbarSliderActiveBackground: 'rgba(31,35,40,0.40)',
  },
  dark: {
    background: '#12151b', foreground: '#d7dce3', cursor: '#e6e9ee', cursorAccent: '#12151b',
    selectionBackground: '#2f4a73', selectionForeground: '#ffffff',
    black: '#1c2027', red: '#f0707a', green: '#7ccf8a', yellow: '#e5c07b',
    blue: '#6cb0ff', magenta: '#c99bf2', cyan: '#5fd0dc', white: '#c5cbd3',
    brightBlack: '#5c6672', brightRed: '#ff8f97', brightGreen: '#98e0a4', brightYellow: '#f2d398',
    brightBlue: '#8ec3ff', brightMagenta: '#dbb6ff', brightCyan: '#86e1ea', brightWhite: '#f4f6f8',
    scrollbarSliderBackground: 'rgba(215,220,227,0.16)',
    scrollbarSliderHoverBackground: 'rgba(215,220,227,0.28)',
    scrollbarSliderActiveBackground: 'rgba(215,220,227,0.38)',
  },
};

/** The terminal's colours for the browser's light or dark scheme. */
export function terminalTheme() { return DARK.matches ? THEMES.dark : THEMES.light; }

/** Calls `fn(theme)` when the browser switches between light and dark. */
export function onThemeChanged(fn) {
  DARK.addEventListener('change', () => fn(terminalTheme()));
}

/** Ctrl+Shift+S: from the terminal to the session list. */
export function isListShortcut(e) {
  return e.ctrlKey && e.shiftKey && !e.altKey && !e.metaKey && e.code === 'KeyS';
}

/** Ctrl+Shift+F: search the scrollback. */
export function isSearchShortcut(e) {
  return e.ctrlKey && e.shiftKey && !e.altKey && !e.metaKey && e.code === 'KeyF';
}

/**
 * 'copy' for Ctrl+C and Ctrl+Shift+C, 'paste' for Ctrl+V, Ctrl+Shift+V and
 * Shift+Insert, else null. By e.code so that other keyboard layouts match the
 * same keys.
 */
function clipboardKey(e) {
  if (e.altKey || e.metaKey) return null;
  if (e.ctrlKey && e.code === 'KeyC') return 'copy';
  if (e.ctrlKey && e.code === 'KeyV') return 'paste';
  if (!e.ctrlKey && e.shiftKey && e.code === 'Insert') return 'paste';
  return null;
}

/**
 * Puts the terminal's selection on the clipboard and clears the selection.
 * The Async Clipboard API needs a secure context (127.0.0.1 is one; a LAN
 * address over http is not): there, the `copy` command is used, whose event
 * xterm.js answers with its selection.
 */
function copySelection(term) {
  const text = term.getSelection();
  let copied = false;
  try { copied = document.execCommand('copy'); } catch { copied = false; }
  if (!copied && navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).catch(() => {});
  }
  term.clearSelection();
}

/**
 * A view: { term, fit, search, observer, renderer: 'webgl' | 'dom', host,
 * wrap, webgl (the addon while it draws), gpuLost, unwatchPixelRatio },
 * plus watchKey / watchCeiling kept by fitWatch().
 * @typedef {object} View
 */

/**
 * Opens a terminal in `host` inside the scrolling box `wrap` (which it
 * shows; by default the pane's #terminal in #terminal-wrap) for `mode`
 * 'control' or 'watch' (no input).
 * @param {string} mode
 * @param {{
 *   host?: HTMLElement, wrap?: HTMLElement,
 *   fontSize: number,                 // px
 *   onListShortcut: () => void,       // Ctrl+Shift+S pressed in the terminal
 *   onSearchShortcut: () => void,     // Ctrl+Shift+F pressed in the terminal
 *   onSearchResults: (r: {resultIndex: number, resultCount: number}) => void,
 *   onResize: () => void,             // the pane changed size: fit again
 *   onKey?: (e: KeyboardEvent) => boolean, // true: the dashboard took the key (commandui.js)
 * }} o
 * @returns {View}
 */
export function createView(mode, o) {
  const wrap = o.wrap || $('terminal-wrap');
  const host = o.host || $('terminal');
  host.replaceChildren();
  wrap.hidden = false;
  if (!o.host) $('empty').hidden = true; // the pane's terminal replaces its welcome
  const term = new Terminal({
    fontFamily: '"DejaVu Sans Mono", "Cascadia Mono", "Menlo", "Consolas", "Liberation Mono", monospace',
    fontSize: o.fontSize,
    lineHeight: 1.15,
    cursorBlink: mode === 'control',
    cursorStyle: 'block',
    scrollback: 10000,
    disableStdin: mode === 'watch',
    theme: terminalTheme(),
    // term.unicode (Unicode 11 widths) and the search addon's match
    // decorations are xterm.js "proposed" API.
    allowProposedApi: true,
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  const search = new SearchAddon();
  term.loadAddon(search);
  search.onDidChangeResults((r) => o.onSearchResults(r));
  // Links open in a new tab, without this page as its opener.
  term.loadAddon(new WebLinksAddon((event, uri) => {
    const w = window.open(uri, '_blank', 'noopener');
    if (w) w.opener = null;
  }));
  // Emoji and CJK take two cells as the programs (wcwidth of Unicode 11+) count them.
  term.loadAddon(new Unicode11Addon());
  term.unicode.activeVersion = '11';
  // Tab belongs to the shell; Ctrl+Shift+S leads out of the terminal to the
  // list. Terminals send the same byte for Ctrl+S and Ctrl+Shift+S, so no
  // program can tell them apart: taking the shifted one costs nothing.
  term.attachCustomKeyEventHandler((e) => {
    if (o.onKey && o.onKey(e)) return false;
    if (isListShortcut(e)) {
      if (e.type === 'keydown') o.onListShortcut();
      return false;
    }
    if (isSearchShortcut(e)) {
      if (e.type === 'keydown') { e.preventDefault(); o.onSearchShortcut(); }
      return false;
    }
    const clip = clipboardKey(e);
    if (clip === 'copy') {
      // Ctrl+C copies only when there is a selection (VS Code, Windows
      // Terminal); without one it stays ^C for the program. Ctrl+Shift+C
      // always copies (Chromium would open its inspector otherwise).
      if (!term.hasSelection()) {
        if (e.shiftKey && e.type === 'keydown') e.preventDefault();
        return !e.shiftKey;
      }
      if (e.type === 'keydown') {
        e.preventDefault();
        copySelection(term);
      }
      return false;
    }
    if (clip === 'paste') {
      // Not handled by xterm.js (it would send ^V): the browser's own paste
      // runs, and xterm.js's paste handler writes it as the program asked
      // (bracketed paste, mode 2004, when the program enabled it). A watcher
      // sends nothing: its input is off.
      return false;
    }
    // A watcher's input textarea is readonly (disableStdin), so the browser
    // runs a key's default action: Space, Page Down, the arrows... scroll the
    // pane (#terminal-wrap scrolls in watch mode), smoothly, and the part of
    // the session in view slid away as the user typed. Keys do nothing in a
    // watcher; keep the view where it is. Modified keys stay the browser's
    // (Ctrl+C copies the selection).
    if (mode === 'watch' && e.type === 'keydown' && SCROLL_KEYS.has(e.key)
        && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
    }
    return true;
  });
  term.open(host);
  const view = {
    term, fit, search, observer: null, renderer: 'dom', host, wrap, webgl: null, gpuLost: false,
  };
  followPixelRatio(view, o.onResize);
  view.observer = new ResizeObserver(() => o.onResize());
  view.observer.observe(wrap);
  return view;
}

/**
 * The renderer for the device pixel ratio (DPR): the GPU (@xterm/addon-webgl)
 * at DPR 1 only, xterm.js's DOM renderer at any other ratio, switching when
 * the ratio changes (the window moves to another screen, the page is zoomed).
 * At DPR 2 and 3 (phones, HiDPI screens; measured in headless Chromium with
 * @xterm/xterm 6.0 and addon-webgl 0.19) the WebGL renderer drew every glyph
 * 2 to 3 times too large, so only the top-left corner of the terminal
 * showed; the DOM renderer is right at every ratio. Upstream:
 * xtermjs/xterm.js#4728 ("Font does not scale correctly with DPR higher than
 * 1", open) and PR #6115 (the GL viewport is not updated when the ratio
 * changes, open). `onChange` is called after a switch (cells may measure
 * differently: fit again).
 */
function followPixelRatio(view, onChange) {
  let query = null;
  const apply = () => {
    const gpu = window.devicePixelRatio === 1 && !view.gpuLost;
    if (gpu && !view.webgl) useGpuRenderer(view);
    else if (!gpu && view.webgl) {
      view.webgl.dispose(); // xterm.js goes back to its DOM renderer
      view.webgl = null;
      view.renderer = 'dom';
    }
  };
  const changed = () => {
    apply();
    watch();
    onChange();
  };
  // A resolution query matches one ratio: it fires once when the ratio
  // leaves it, and is then replaced by one for the new ratio.
  const watch = () => {
    query = window.matchMedia(`(resolution: ${window.devicePixelRatio}dppx)`);
    query.addEventListener('change', changed, { once: true });
  };
  apply();
  watch();
  view.unwatchPixelRatio = () => query.removeEventListener('change', changed);
}

/**
 * Draws with the GPU (@xterm/addon-webgl) where the browser has WebGL2,
 * else with xterm.js's DOM renderer; back to the DOM renderer for good when
 * the GPU context is lost (a driver reset, too many contexts). The addon
 * throws while loading when WebGL2 is missing.
 */
function useGpuRenderer(view) {
  let webgl;
  try {
    webgl = new WebglAddon();
    webgl.onContextLoss(() => {
      webgl.dispose();
      if (view.webgl === webgl) view.webgl = null;
      view.gpuLost = true;
      view.renderer = 'dom';
    });
    view.term.loadAddon(webgl);
    view.webgl = webgl;
    view.renderer = 'webgl';
  } catch {
    if (webgl) webgl.dispose();
    view.gpuLost = true;
    view.renderer = 'dom';
  }
}

/** Disposes of the terminal and hides the pane's terminal. */
export function destroyView(view) {
  view.observer.disconnect();
  view.unwatchPixelRatio();
  view.term.dispose();
  view.host.replaceChildren();
  view.wrap.hidden = true;
}

/**
 * A scheduler that runs `fitNow` once in the next animation frame, however
 * often it is asked before then.
 * @param {() => void} fitNow
 * @returns {() => void}
 */
export function createFitScheduler(fitNow) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; fitNow(); });
  };
}

/** Proposed size of the pane in cells, or null when it cannot be trusted. */
export function measure(view) {
  const { wrap } = view;
  if (document.visibilityState === 'hidden' || wrap.hidden) return null;
  if (wrap.clientWidth === 0 || wrap.clientHeight === 0) return null;
  const d = view.fit.proposeDimensions();
  if (!d || !Number.isFinite(d.cols) || !Number.isFinite(d.rows)) return null;
  if (d.cols < MIN_COLS || d.rows < MIN_ROWS) return null;
  return { cols: Math.min(d.cols, 1000), rows: Math.min(d.rows, 1000) };
}

/**
 * A watcher shows the session at the session's size (it never resizes it).
 * When that is wider than the pane, the lines were cut at the pane's edge
 * (the pane scrolled sideways, but the wheel scrolls xterm.js's scrollback,
 * so nobody found the rest). Now the font shrinks until whole lines fit, as a
 * screen-sharing viewer scales a larger screen down: never above the chosen
 * font size, never below FONT_MIN px, and the pane scrolls sideways past
 * that. The cell width per pixel of font is measured at the current size
 * (xterm.js's render dimensions, as the fit addon reads them); a size that
 * still overflowed (cells are rounded) is not tried again for this width.
 * @param {View} view
 * @param {number} chosen the font size the user chose (px)
 * @param {() => void} scheduleFit asked again after a change of size
 */
export function fitWatch(view, chosen, scheduleFit) {
  const { term, wrap } = view;
  if (wrap.hidden || document.visibilityState === 'hidden') return;
  const cs = getComputedStyle(wrap);
  const avail = wrap.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  // eslint-disable-next-line no-underscore-dangle
  const cell = term._core?._renderService?.dimensions?.css?.cell?.width;
  if (!cell || !(avail > 0)) return;
  const current = term.options.fontSize;
  const key = `${term.cols}/${Math.round(avail)}/${chosen}`;
  if (view.watchKey !== key) {
    view.watchKey = key;
    view.watchCeiling = Infinity;
  }
  if (term.cols * cell > avail + 0.5) view.watchCeiling = Math.min(view.watchCeiling, current);
  let target = Math.floor((avail / (term.cols * (cell / current))) * 2) / 2; // in half pixels
  target = Math.min(chosen, target, view.watchCeiling - 0.5);
  target = Math.max(FONT_MIN, target);
  if (target !== current) {
    term.options.fontSize = target;
    scheduleFit(); // measure again at the new size
  }
}
