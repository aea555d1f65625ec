// SPDX-License-Identifier: GPL-2.0-or-later
// Live miniatures in the session list: each row shows a small picture of
// its session's screen, as the server has it (GET /api/sessions/{id}/screen,
// docs/protocol.md "Ended sessions" and "Live list"), so every session can
// be seen at a glance.
//
// Cost is bounded and follows events, never a timer on an idle session:
//  - only rows on screen are drawn (IntersectionObserver; a closed drawer,
//    a hidden page or rows scrolled away fetch nothing);
//  - a row is fetched again only when the event stream said its session
//    wrote (`output` events, at most one a second for all sessions) or the
//    list's `offset` moved past what was drawn, at most once a second per
//    session and MAX_FETCHES at a time;
//  - one hidden xterm.js Terminal (never opened, no renderer) parses every
//    screen in turn; the picture is text in a <pre> with coloured runs.

import { Terminal } from './vendor/xterm.js';
import { el } from './dom.js';
import { terminalTheme } from './terminalview.js';

/** Fetches in flight at most. */
const MAX_FETCHES = 2;
/** The same session is fetched at most this often (ms). */
const MIN_INTERVAL_MS = 1000;
/** Fetches in a row that did not get the screen further before waiting for more output. */
const MAX_BEHIND = 3;
/** The miniature's height at most (px); it is scaled to the row's width below that. */
const MAX_HEIGHT_PX = 132;
/** Font size the picture is laid out at before it is scaled (px). */
const LAYOUT_FONT_PX = 10;

const ANSI = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'];

/** CSS colour of palette index `n` (0..255) in `theme`. */
function paletteColor(n, theme) {
  if (n < 8) return theme[ANSI[n]];
  if (n < 16) return theme[`bright${ANSI[n - 8][0].toUpperCase()}${ANSI[n - 8].slice(1)}`];
  if (n < 232) {
    const i = n - 16;
    const v = (k) => (k ? 55 + k * 40 : 0);
    return `rgb(${v(Math.floor(i / 36))},${v(Math.floor(i / 6) % 6)},${v(i % 6)})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g},${g},${g})`;
}

function cellColor(cell, fg, theme) {
  const isDefault = fg ? cell.isFgDefault() : cell.isBgDefault();
  if (isDefault) return '';
  const c = fg ? cell.getFgColor() : cell.getBgColor();
  if (fg ? cell.isFgRGB() : cell.isBgRGB()) return `#${c.toString(16).padStart(6, '0')}`;
  return paletteColor(c, theme);
}

/**
 * Draws what `term` shows into a new <pre>: one text run per stretch of
 * cells with the same colours and weight.
 */
function drawScreen(term, theme) {
  const pre = el('pre', 'mini-screen');
  const buf = term.buffer.active;
  const cell = buf.getNullCell();
  for (let y = 0; y < term.rows; y++) {
    const line = buf.getLine(buf.viewportY + y);
    let text = '';
    let key = '';
    let style = null;
    const flush = () => {
      if (!text) return;
      if (!style) {
        pre.append(text);
      } else {
        const span = el('span', style.bold ? 'b' : '', text);
        if (style.fg) span.style.color = style.fg;
        if (style.bg) span.style.backgroundColor = style.bg;
        pre.append(span);
      }
      text = '';
    };
    for (let x = 0; line && x < term.cols; x++) {
      line.getCell(x, cell);
      if (cell.getWidth() === 0) continue;
      let fg = cellColor(cell, true, theme);
      let bg = cellColor(cell, false, theme);
      if (cell.isInverse()) [fg, bg] = [bg || theme.background, fg || theme.foreground];
      const bold = !!cell.isBold();
      const k = `${fg}|${bg}|${bold}`;
      if (k !== key) {
        flush();
        key = k;
        style = fg || bg || bold ? { fg, bg, bold } : null;
      }
      text += cell.getChars() || ' ';
    }
    if (!style) text = text.replace(/ +$/, '');
    flush();
    if (y < term.rows - 1) pre.append('\n');
  }
  return pre;
}

/**
 * The miniatures of the session list.
 * @param {{
 *   session: (id: string) => (object|null), // its SESSION (or ENDED SESSION) object, or null
 *   onUnauthorized: () => void,              // a 401: the page lost its key
 * }} o
 */
export function createMiniatures(o) {
  /** id -> entry: { id, box, visible, want, have, stale, drawnAt, inflight, behind, ended, cols, rows, unavailable } */
  const entries = new Map();
  let enabled = true;
  let fetching = 0;
  let timer = null;
  let parser = null;
  let chain = Promise.resolve();
  /** For tests: fetches per session id, and every fetch's id in order. */
  const counts = new Map();

  const observer = new IntersectionObserver((records) => {
    for (const r of records) {
      const e = entries.get(r.target.dataset.session);
      if (e) e.visible = r.isIntersecting;
    }
    pump();
  });

  function parse(bytes, cols, rows) {
    if (!parser) parser = new Terminal({ cols, rows, scrollback: 0, allowProposedApi: true });
    const term = parser;
    const done = chain.then(() => new Promise((resolve) => {
      term.reset();
      if (term.cols !== cols || term.rows !== rows) term.resize(cols, rows);
      term.write(bytes, () => resolve(drawScreen(term, terminalTheme())));
    }));
    chain = done.catch(() => {});
    return done;
  }

  function due(e) {
    if (!enabled || !e.visible || e.inflight || e.unavailable) return false;
    if (document.visibilityState === 'hidden') return false;
    if (e.have === null || e.stale) return true;
    return !e.ended && e.want > e.have && e.behind < MAX_BEHIND;
  }

  /** Starts what is due; a timer only for a row held back by MIN_INTERVAL_MS. */
  function pump() {
    clearTimeout(timer);
    timer = null;
    const now = performance.now();
    let wait = Infinity;
    for (const e of entries.values()) {
      if (fetching >= MAX_FETCHES) break;
      if (!due(e)) continue;
      const left = e.drawnAt + MIN_INTERVAL_MS - now;
      if (left > 0) { wait = Math.min(wait, left); continue; }
      load(e);
    }
    if (wait !== Infinity) timer = setTimeout(pump, wait);
  }

  async function load(e) {
    e.inflight = true;
    e.stale = false;
    fetching++;
    counts.set(e.id, (counts.get(e.id) || 0) + 1);
    const asked = e.want;
    try {
      const r = await fetch(`/api/sessions/${encodeURIComponent(e.id)}/screen`,
        { cache: 'no-store', credentials: 'same-origin' });
      if (r.status === 401) { o.onUnauthorized(); return; }
      if (r.status === 404) { e.unavailable = true; return; }
      if (!r.ok) { // 409: no server screen for it (switched off, too large)
        e.unavailable = true;
        e.box.replaceChildren(el('span', 'mini-note', 'no preview'));
        return;
      }
      const bytes = new Uint8Array(await r.arrayBuffer());
      const size = /^(\d+)x(\d+)$/.exec(r.headers.get('X-Tether-Size') || '');
      const cols = size ? Number(size[1]) : e.cols;
      const rows = size ? Number(size[2]) : e.rows;
      const at = Number(r.headers.get('X-Tether-Offset'));
      if (!(cols >= 1 && rows >= 1)) { e.unavailable = true; return; }
      const pre = await parse(bytes, Math.min(cols, 1000), Math.min(rows, 1000));
      if (!entries.has(e.id)) return;
      const got = Number.isFinite(at) && r.headers.has('X-Tether-Offset') ? at : asked;
      e.behind = e.have !== null && got <= e.have && got < e.want ? e.behind + 1 : 0;
      e.have = got;
      show(e, pre, cols, rows);
    } catch {
      e.behind++;
    } finally {
      e.inflight = false;
      e.drawnAt = performance.now();
      fetching--;
      pump();
    }
  }

  /** Puts `pre` in the row's box, scaled to its width (and MAX_HEIGHT_PX). */
  function show(e, pre, cols, rows) {
    pre.style.fontSize = `${LAYOUT_FONT_PX}px`;
    e.box.replaceChildren(pre);
    const width = e.box.clientWidth;
    const naturalW = pre.scrollWidth || cols * LAYOUT_FONT_PX * 0.6;
    const naturalH = pre.scrollHeight || rows * LAYOUT_FONT_PX * 1.2;
    const k = Math.min(width / naturalW, MAX_HEIGHT_PX / naturalH, 1);
    pre.style.transform = `scale(${k})`;
    e.box.style.height = `${Math.ceil(naturalH * k)}px`;
    e.box.dataset.offset = String(e.have);
    e.box.dataset.size = `${cols}x${rows}`;
  }

  return {
    /** A new row of the list: its miniature box (in the row) for session `id`. */
    add(id, box) {
      box.dataset.session = id;
      const s = o.session(id);
      entries.set(id, {
        id, box, visible: false, want: 0, have: null, stale: false, drawnAt: -Infinity, inflight: false, behind: 0,
        ended: !!s && s.state === 'ended', cols: s ? s.cols : 80, rows: s ? s.rows : 24, unavailable: false,
      });
      observer.observe(box);
    },
    /** The list changed: offsets and sizes as the sessions event has them; rows gone are dropped. */
    update(sessions) {
      for (const [id, e] of entries) {
        const entry = sessions.get(id);
        if (!entry) {
          observer.unobserve(e.box);
          entries.delete(id);
          continue;
        }
        const { s } = entry;
        e.ended = s.state === 'ended';
        if (typeof s.offset === 'number' && s.offset > e.want) {
          e.want = s.offset;
          e.behind = 0;
        }
        // A resize is a sessions event and no output: draw again at the new size.
        if (!e.ended && (s.cols !== e.cols || s.rows !== e.rows)) e.stale = true;
        e.cols = s.cols;
        e.rows = s.rows;
      }
      pump();
    },
    /** An `output` event: id -> the session's output offset. */
    onOutput(offsets) {
      for (const [id, off] of Object.entries(offsets)) {
        const e = entries.get(id);
        if (e && typeof off === 'number' && off > e.want) {
          e.want = off;
          e.behind = 0;
        }
      }
      pump();
    },
    /** The page became visible, or the theme changed (`redraw`: every picture again). */
    refresh(redraw = false) {
      if (redraw) for (const e of entries.values()) e.stale = true;
      pump();
    },
    setEnabled(on) {
      enabled = on;
      if (on) pump();
    },
    get enabled() { return enabled; },
    /** For tests: { fetches: {id: count}, drawn: {id: offset} }. */
    stats() {
      const drawn = {};
      for (const e of entries.values()) if (e.have !== null) drawn[e.id] = e.have;
      return { fetches: Object.fromEntries(counts), drawn };
    },
  };
}
