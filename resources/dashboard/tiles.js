// SPDX-License-Identifier: GPL-2.0-or-later
// The tiled view (issue 26): two to four sessions side by side in one tab,
// each a live terminal attached in control mode (as tmux panes: each session
// takes its tile's size), the one with the focus gets the keys. Address
// #/tiles/<id>,<id>[,...] (ids as in #/s/<id>: full ids, names or prefixes),
// so a reload or a bookmark brings the same tiles back. It has its own views
// and attachments and leaves the page's open session (app.js) alone.

import { Attachment } from './attachment.js';
import { $, el } from './dom.js';
import { createView, destroyView, measure } from './terminalview.js';
import { sessionHash, tilesHash } from './router.js';

/**
 * The tiled view in #tiles.
 * @param {{
 *   fontSize: () => number,
 *   label: (id: string) => string,     // a session's name for its tile's head
 *   filterInput: (data: string) => string, // the key bar's modifiers
 *   onListShortcut: () => void,
 *   onFocus: (term: object) => void,   // a tile's terminal took the focus (the key bar follows)
 *   onTileWrap?: (wrap: HTMLElement, term: () => object) => {stats: () => object}, // wires touch on a tile
 * }} o
 */
export function createTiles(o) {
  const box = $('tiles');
  /** The tiles shown: [{ id, view, attachment, head, fitQueued }]. */
  let tiles = [];
  let focused = null;

  function fit(t) {
    const d = measure(t.view);
    if (!d) return;
    if (d.cols !== t.view.term.cols || d.rows !== t.view.term.rows) t.view.term.resize(d.cols, d.rows);
    if (t.attachment.connected && (!t.sent || t.sent.cols !== d.cols || t.sent.rows !== d.rows)) {
      if (t.attachment.sendResize(d.cols, d.rows)) t.sent = d;
    }
  }

  function scheduleFit(t) {
    if (t.fitQueued) return;
    t.fitQueued = true;
    requestAnimationFrame(() => {
      t.fitQueued = false;
      if (tiles.includes(t)) fit(t);
    });
  }

  function state(t, text) {
    t.stateEl.textContent = text;
    t.tile.dataset.state = text;
  }

  function open(ids) {
    close();
    box.hidden = false;
    box.dataset.count = String(ids.length);
    for (const id of ids) {
      const tile = el('section', 'tile');
      const head = el('header', 'tile-head');
      const name = el('a', 'tile-name', o.label(id));
      name.href = sessionHash(id);
      name.title = 'Open this session alone';
      const stateEl = el('span', 'tile-state', 'connecting');
      const remove = el('button', 'small tile-close', '×');
      remove.type = 'button';
      remove.title = 'Remove this tile (the session keeps running)';
      remove.setAttribute('aria-label', `Remove the tile of ${o.label(id)}`);
      head.append(name, stateEl, remove);
      const wrap = el('div', 'terminal-wrap tile-wrap');
      const host = el('div', 'terminal tile-term');
      wrap.append(host);
      tile.append(head, wrap);
      box.append(tile);
      const t = {
        id, tile, name, stateEl, view: null, attachment: null, sent: null, fitQueued: false,
      };
      t.view = createView('control', {
        host,
        wrap,
        fontSize: o.fontSize(),
        onListShortcut: o.onListShortcut,
        onSearchShortcut: () => {},
        onSearchResults: () => {},
        onResize: () => scheduleFit(t),
      });
      // Touch as on the pane's terminal (touch.js): scroll, pinch, long press.
      t.touch = o.onTileWrap ? o.onTileWrap(wrap, () => t.view?.term ?? null) : null;
      t.view.term.textarea?.addEventListener('focus', () => {
        focused = t;
        for (const x of tiles) x.tile.classList.toggle('is-focused', x === t);
        o.onFocus(t.view.term);
      });
      t.attachment = new Attachment({
        id,
        mode: 'control',
        term: t.view.term,
        filterInput: o.filterInput,
        attachSize: () => {
          const d = measure(t.view);
          if (!d) return null;
          if (d.cols !== t.view.term.cols || d.rows !== t.view.term.rows) t.view.term.resize(d.cols, d.rows);
          return d;
        },
        onState: (st, detail) => {
          state(t, st === 'ended' ? `ended${detail && detail.reason ? ` (${detail.reason})` : ''}` : st);
        },
        onAttached: (msg) => {
          t.sent = { cols: msg.cols, rows: msg.rows };
          if (msg.title) t.name.title = msg.title;
          fit(t);
        },
        onSize: (cols, rows) => { t.sent = { cols, rows }; scheduleFit(t); },
      });
      remove.addEventListener('click', () => {
        const rest = tiles.filter((x) => x !== t).map((x) => x.id);
        location.hash = rest.length ? tilesHash(rest) : '#/';
      });
      tiles.push(t);
      t.attachment.start();
    }
    tiles[0]?.view.term.focus();
  }

  function close() {
    for (const t of tiles) {
      t.attachment.stop();
      destroyView(t.view);
    }
    tiles = [];
    focused = null;
    box.replaceChildren();
    box.hidden = true;
  }

  return {
    open,
    close,
    /** True while tiles are shown. */
    active: () => tiles.length > 0,
    /** The ids of the sessions in the tiles, in order. */
    ids: () => tiles.map((t) => t.id),
    /** The focused tile's terminal (the key bar's), else the first one's. */
    term: () => (focused || tiles[0])?.view.term ?? null,
    /** Names changed (the list): the heads follow. */
    relabel() { for (const t of tiles) t.name.textContent = o.label(t.id); },
    /** New font size. */
    setFontSize(px) {
      for (const t of tiles) {
        t.view.term.options.fontSize = px;
        scheduleFit(t);
      }
    },
    /** For tests: [{ id, term, attachment }]. */
    list: () => tiles.map((t) => ({
      id: t.id, term: t.view.term, attachment: t.attachment, touch: t.touch ? t.touch.stats() : null,
    })),
  };
}
