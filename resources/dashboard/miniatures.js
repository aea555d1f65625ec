// SPDX-License-Identifier: GPL-2.0-or-later
// Live miniatures in the session list: each row shows a small picture of
// its session's screen, as the server has it (GET /api/sessions/{id}/screen?lines=0,
// docs/protocol.md "Ended sessions" and "Live list"), so every session can
// be seen at a glance.
//
// Cost is bounded and follows events, never a timer on an idle session:
//  - only rows on screen are drawn (IntersectionObserver; a closed drawer,
//    a hidden page or rows scrolled away fetch nothing), and none of a
//    session the pane shows live (setShown(): the open one, the tiles);
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
  /**
   * id -> entry: { id, boxes (box -> on screen), visible (any box), want (offset known), have (offset
   * drawn, null: never), stale, drawnAt, inflight, behind, ended, cols, rows, unavailable, last (picture) }
   */
  const entries = new Map();
  let enabled = true;
  /** Sessions the pane shows live (the open one, the tiles): never fetched. */
  let shown = new Set();
  let fetching = 0;
  let timer = null;
  let parser = null;
  let chain = Promise.resolve();
  /** For tests: fetches per session id, and every fetch's id in order. */
  const counts = new Map();

  const observer = new IntersectionObserver((records) => {
    for (const r of records) {
      const e = entries.get(r.target.dataset.session);
      if (!e || !e.boxes.has(r.target)) continue;
      e.boxes.set(r.target, r.isIntersecting);
      e.visible = [...e.boxes.values()].some(Boolean);
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
    if (!enabled || !e.visible || e.inflight || e.unavailable || shown.has(e.id)) return false;
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
      // lines=0: the screen alone. An ended session's saved screen brings
      // its saved scrollback too (up to 1000 lines) unless asked not to,
      // which a picture of the screen never shows (protocol.md, Ended sessions).
      const r = await fetch(`/api/sessions/${encodeURIComponent(e.id)}/screen?lines=0`,
        { cache: 'no-store', credentials: 'same-origin' });
      if (r.status === 401) { o.onUnauthorized(); return; }
      if (r.status === 404) { e.unavailable = true; return; }
      if (!r.ok) { // 409: no server screen for it (switched off, too large)
        e.unavailable = true;
        for (const box of e.boxes.keys()) box.replaceChildren(el('span', 'mini-note', 'no preview'));
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
      e.last = { pre, cols, rows };
      let first = true;
      for (const box of e.boxes.keys()) {
        show(e, box, first ? pre : pre.cloneNode(true));
        first = false;
      }
    } catch {
      e.behind++;
    } finally {
      e.inflight = false;
      e.drawnAt = performance.now();
      fetching--;
      pump();
    }
  }

  /**
   * Puts `pre` in `box`, scaled to the box's width and at most its
   * data-max-height (px; MAX_HEIGHT_PX by default).
   */
  function show(e, box, pre) {
    const { cols, rows } = e.last;
    pre.style.fontSize = `${LAYOUT_FONT_PX}px`;
    // The terminal's width, not its longest line's: every picture of a
    // session has the same scale.
    pre.style.width = `${cols}ch`;
    box.replaceChildren(pre);
    const width = box.clientWidth;
    const naturalW = pre.scrollWidth || cols * LAYOUT_FONT_PX * 0.6;
    const naturalH = pre.scrollHeight || rows * LAYOUT_FONT_PX * 1.2;
    const maxH = Number(box.dataset.maxHeight) || MAX_HEIGHT_PX;
    const k = Math.min(width / naturalW, maxH / naturalH, 1);
    pre.style.transform = `scale(${k})`;
    box.style.height = `${Math.ceil(naturalH * k)}px`;
    box.dataset.offset = String(e.have);
    box.dataset.size = `${cols}x${rows}`;
  }

  return {
    /**
     * A box that shows session `id`'s miniature (a row of the list, a card
     * of the overview): drawn while it is on screen, with the last picture
     * at once when there is one.
     */
    add(id, box) {
      box.dataset.session = id;
      let e = entries.get(id);
      if (!e) {
        const s = o.session(id);
        e = {
          id, boxes: new Map(), visible: false, want: 0, have: null, stale: false, drawnAt: -Infinity,
          inflight: false, behind: 0, ended: !!s && s.state === 'ended', cols: s ? s.cols : 80,
          rows: s ? s.rows : 24, unavailable: false, last: null,
        };
        entries.set(id, e);
      }
      e.boxes.set(box, false);
      observer.observe(box);
      if (e.last) requestAnimationFrame(() => { if (e.boxes.has(box)) show(e, box, e.last.pre.cloneNode(true)); });
    },
    /** A box that no longer shows it (its card or row left the page). */
    remove(box) {
      const e = entries.get(box.dataset.session);
      observer.unobserve(box);
      if (!e) return;
      e.boxes.delete(box);
      e.visible = [...e.boxes.values()].some(Boolean);
    },
    /** The list changed: offsets and sizes as the sessions event has them; rows gone are dropped. */
    update(sessions) {
      for (const [id, e] of entries) {
        const entry = sessions.get(id);
        if (!entry) {
          for (const box of e.boxes.keys()) observer.unobserve(box);
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
    /** The boxes changed width (the window, the sidebar): the pictures are scaled again, not fetched. */
    relayout() {
      for (const e of entries.values()) {
        if (!e.last) continue;
        for (const box of e.boxes.keys()) {
          const pre = box.querySelector('.mini-screen');
          if (pre) show(e, box, pre);
        }
      }
    },
    /**
     * The sessions the pane shows live (`ids`: the open one, the tiles):
     * their rows hide the miniature (sessionlist.js) and nothing of them is
     * fetched, whatever the IntersectionObserver said last; one that leaves
     * the pane is drawn again when due.
     */
    setShown(ids) {
      shown = new Set(ids);
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
