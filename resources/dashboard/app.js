// SPDX-License-Identifier: GPL-2.0-or-later
// Tether dashboard: the page's state and what ties its parts together. The
// parts are modules that take what they need as arguments and callbacks:
//   connection.js  what the page knows about the server; the live list's event stream
//   api.js         REST calls
//   indicator.js   the connection indicator and the stale-list note
//   sessionlist.js the session list
//   terminalview.js the xterm.js view: addons, keys, theme, sizes
//   attachment.js  one WebSocket attachment (offsets, replay, reconnection)
//   search.js, toolbar.js, sharedialog.js, update.js, crashnotice.js,
//   sidebar.js, notify.js
//   commandui.js   command marks in the terminal, notifications, Notify next / Mute
//   banner.js      the banner and the "Catching up…" note
//   router.js      addresses; storage.js per-tab state and preferences
// Protocol: docs/protocol.md; the page's behaviour: docs/dashboard.md.
//
// Address: #/s/<id> attaches in control mode, #/s/<id>/watch read-only, so a
// reload or a bookmark reattaches. #/share/<id> is the watch-only view a
// read-only link opens (docs/protocol.md "Read-only links"): that one session,
// no list, no input, no resize.

import { Attachment, screenReplayLines } from './attachment.js';
import { SavedScreen } from './savedscreen.js';
import { commandLine as commandLineOf, displayText, sessionLabel } from './util.js';
import { split as splitCommand } from './shellwords.js';
import { $, NARROW } from './dom.js';
import { createApi } from './api.js';
import { createConnectionState, EventStream, noteAuthorized } from './connection.js';
import { renderIndicator } from './indicator.js';
import { renderList, renderRow, renderTimes } from './sessionlist.js';
import { initNotifications } from './notify.js';
import {
  commandsOf, createNotifier, createNotifyButtons, followMarks, handleMarkKey,
} from './commandui.js';
import {
  createFitScheduler, createView, destroyView, fitWatch, isListShortcut, isSearchShortcut, measure,
  onThemeChanged,
} from './terminalview.js';
import { createSearchBox } from './search.js';
import { initToolbar } from './toolbar.js';
import { createShareDialog } from './sharedialog.js';
import { createUpdateBar } from './update.js';
import { createCrashNotice } from './crashnotice.js';
import { createSidebar } from './sidebar.js';
import { createKeyBar } from './keybar.js';
import { initTouch } from './touch.js';
import { createTiles } from './tiles.js';
import { createMiniatures } from './miniatures.js';
import { renderOverview } from './overview.js';
import {
  createCatchupNote, hideBanner, showBanner, showEndBanner, showShutdownBanner,
} from './banner.js';
import {
  decodeAddressPart, parseHash, parseShareHash, MAX_TILES, parseTilesHash, resolveId, sessionHash, tilesHash,
} from './router.js';
import {
  clearTab, fontSize, previewsOn, saveTab, savedTab, storePreviews,
} from './storage.js';

/** The page's state. Only this module changes it (and connection.js its `conn`, given to it); the other parts get what they read as arguments. */
const state = {
  /** What the page knows about the server (connection.js). */
  conn: createConnectionState(),
  /** id -> { s: SESSION, at: performance.now() when received } */
  sessions: new Map(),
  /** The server's last `server` event: { version, update, pid, ... } or null. */
  server: null,
  /** The open session: { id, mode, view, attachment, endReason } or null. */
  current: null,
  /** Last size sent to (or confirmed by) the session. */
  lastSentSize: null,
  /** The page is the watch-only view of a read-only link: { id } (id may be ''), else null. */
  share: null,
  /**
   * A session is being created (the terminal is open, the POST not yet
   * answered). Routing waits for it: the page's first list can arrive in
   * that gap, and routing the old address then showed the welcome over the
   * new terminal. `routeWaiting` says a route was asked for meanwhile.
   */
  creating: false,
  routeWaiting: false,
};

const api = createApi({
  onNoAnswer: () => { state.conn.lostContact = true; },
  onUnauthorized: (why) => showUnauthorized(why),
  onAuthorized: () => noteAuthorized(state.conn),
});
const events = new EventStream(state.conn, {
  onSessions: (list) => applySessions(list),
  onServer: (info) => applyServer(info),
  onCommandEvent: (name, data) => notifier.onEvent(name, data),
  onOutput: (offsets) => minis.onOutput(offsets),
  onChange: () => indicate(),
  refresh: () => refreshList(),
});
/** The session list's live miniatures (miniatures.js). */
const minis = createMiniatures({
  session: (id) => state.sessions.get(id)?.s ?? null,
  onUnauthorized: () => showUnauthorized(),
});
const notifier = createNotifier({ sessions: () => state.sessions, current: () => state.current });
const scheduleFit = createFitScheduler(fitNow);
const search = createSearchBox({ view: () => state.current?.view ?? null, scheduleFit });
const sidebar = createSidebar(scheduleFit);
const catchup = createCatchupNote();
const updateBar = createUpdateBar(api);
const crashNotice = createCrashNotice();
/** Touch on the terminal (touch.js), wired by init(). */
let touch = null;
/** The tiled view (#/tiles/...; tiles.js) and the address it shows. */
const tiles = createTiles({
  fontSize,
  label: (id) => labelOf(id),
  // The key bar is made below (it asks the tiles for their terminal).
  filterInput: (data) => keybar.filter(data),
  onListShortcut: () => focusList(),
  onFocus: () => {},
  // Touch in a tile as on the pane's terminal; a pinch sizes every tile.
  onTileWrap: (wrap, term) => initTouch({
    wrap,
    term,
    control: () => true,
    previewFontSize: (px) => tiles.setFontSize(px),
    setFontSize: (px) => keepFontSize(px),
  }),
});
/** Keeps a font size as A− / A+ do (the toolbar, made by init()). */
let keepFontSize = () => {};
let tilesShown = '';
const keybar = createKeyBar({
  term: () => {
    if (state.current) return state.current.mode === 'control' && !state.current.saved ? state.current.view.term : null;
    return tiles.term();
  },
  onLayout: scheduleFit,
});
const shareDialog = createShareDialog({
  api,
  unauthorized: () => state.conn.unauthorized,
  onClose: () => state.current?.view.term.focus(),
});

// ---------------------------------------------------------------------------
// Test hook: the browser tests read the terminal's buffer through this.
window.tether = {
  get term() { return state.current ? state.current.view.term : null; },
  get attachment() { return state.current ? state.current.attachment : null; },
  get state() { return state.current ? state.current.attachment.state : state.conn.listState; },
  get sessions() { return [...state.sessions.values()].map((e) => e.s); },
  /** Last size sent to (or confirmed by) the session; tests read it to explain a failure. */
  get lastSentSize() { return state.lastSentSize; },
  /** The server's version and pending update (the `server` event). */
  get server() { return state.server; },
  /** The open terminal's search addon (tests read its results). */
  get search() { return state.current ? state.current.view.search : null; },
  /** 'webgl' (the GPU renderer) or 'dom' (its fallback). */
  get renderer() { return state.current ? state.current.view.renderer : null; },
  /** What touch did on the terminal (touch.js): counts of scrolls, wheel reports, taps... */
  get touch() { return touch ? touch.stats() : null; },
  /** The tiles shown (#/tiles/...): [{ id, term, attachment }]. */
  get tiles() { return tiles.list(); },
  /** The key bar's sticky modifiers: { Ctrl, Alt }, each 'off', 'once' or 'lock'. */
  get keyModifiers() { return keybar.modifiers(); },
  /** The read-only link's view: { id }, or null. */
  get share() { return state.share; },
  /** The commands the open terminal's marks told (commandui.js). */
  get commands() { return state.current ? commandsOf(state.current.view.term) : []; },
  /** The list's miniatures: { fetches: {id: count}, drawn: {id: offset drawn} }. */
  get miniatures() { return minis.stats(); },
  /** The notifications this page showed: [{how: 'system'|'toast', title, body, session}]. */
  get notified() { return notifier.shown; },
};

function indicate() {
  renderIndicator(state.conn, state.current, !!state.share);
}

/** The sessions the pane shows live: the open one (a saved screen too) and the tiles. */
function shownIds() {
  const ids = new Set(tiles.ids());
  if (state.current) ids.add(state.current.id);
  return ids;
}

function list() {
  const shown = shownIds();
  // Before the rows: a new row of a shown session never starts a fetch.
  minis.setShown(shown);
  renderList(state.sessions, state.current, {
    onKill: killSession, onRevive: reviveSession, onRow: (id, box) => minis.add(id, box),
  }, shown);
  renderOverview(state.sessions, minis);
  minis.update(state.sessions);
  updateNotifyButtons(state.current && !state.share ? state.sessions.get(state.current.id)?.s : null);
}

// ---------------------------------------------------------------------------
// No key

/**
 * 401. A page that never held the right key is told where to get it. A page
 * whose key was rotated (`tether key --rotate`: the event stream said so with
 * a `key` event) says that. A page that held the key and then lost the server
 * met a Tether restarted with another key (the key is kept across restarts,
 * protocol.md section 3, unless its file could not be kept). A page that held
 * the key and never lost the server either missed the `key` event (the key
 * was rotated before its event stream opened) or had its cookie replaced
 * (another Tether's link opened in this browser: cookies do not separate
 * ports); it cannot tell which, and says both.
 */
function showUnauthorized(why = '') {
  const { conn } = state;
  if (conn.unauthorized) return;
  if (state.share) {
    showShareEnded('This read-only link no longer works',
      why || 'It was revoked, or the session it showed has ended.');
    return;
  }
  conn.unauthorized = true;
  if (conn.keyRotated) {
    $('nokey-title').textContent = 'Tether\'s access key was changed';
    $('nokey-text').textContent = 'Someone ran tether key --rotate: the key this page held no longer works.';
  } else if (conn.authorized && conn.lostContact) {
    $('nokey-title').textContent = 'Tether was restarted';
    $('nokey-text').textContent = 'It has another key, and the sessions that ran before the restart are gone.';
  } else if (conn.authorized) {
    $('nokey-title').textContent = 'Tether\'s key changed';
    $('nokey-text').textContent = 'The key this page held no longer works: someone ran tether key --rotate, or another Tether\'s link was opened in this browser.';
  }
  $('nokey-text').hidden = !conn.authorized;
  if (conn.authorized) $('nokey-how').textContent = 'Open the new link that Tether printed (it ends in ?key=…; tether key prints it again) or use its tray menu: Open dashboard.';
  events.close();
  closeCurrent();
  document.body.classList.add('unauthorized');
  $('nokey').hidden = false;
  $('empty').hidden = true;
  $('sidebar').hidden = true;
  indicate();
}

// ---------------------------------------------------------------------------
// Session list

function applyServer(info) {
  state.server = info;
  updateBar.apply(info);
  crashNotice.apply(info);
}

async function refreshList() {
  try {
    const data = await api('GET', '/api/sessions');
    applySessions(data.sessions || []);
    return true;
  } catch {
    return false;
  }
}

function applySessions(sessions) {
  const now = performance.now();
  state.sessions = new Map(sessions.map((s) => [s.id, { s, at: now }]));
  list();
  tiles.relabel();
  const cur = state.current;
  if (cur) {
    const e = state.sessions.get(cur.id);
    if (e) setCurrentTitle(sessionLabel(e.s));
    // "Opened in another window" offers Take over only while the session
    // exists: once it left the list (killed or expired), say so instead of
    // letting the click find out.
    if (!e && cur.saved && cur.endReason === 'saved') {
      // Revived or forgotten elsewhere (another tab, the tray, tether revive).
      cur.endReason = 'closed';
      showBanner('warn', 'No longer listed', 'This ended session was revived or forgotten elsewhere.',
        [{ label: 'Close', run: () => { location.hash = '#/'; } }]);
    }
    if (!e && cur.attachment && cur.attachment.ended && cur.endReason === 'superseded') {
      cur.endReason = 'closed';
      endBanner(cur, { reason: 'closed' });
    }
  }
}

setInterval(() => {
  if (document.visibilityState === 'visible') renderTimes(state.sessions, state.current);
}, 1000);

function labelOf(id) {
  const e = state.sessions.get(id);
  return e ? sessionLabel(e.s) : id;
}

/** Revive of an ended session (protocol.md, Ended sessions): opens the new one. */
async function reviveSession(id) {
  try {
    const s = await api('POST', `/api/sessions/${encodeURIComponent(id)}/revive`);
    state.sessions.delete(id);
    state.sessions.set(s.id, { s, at: performance.now() });
    list();
    history.pushState(null, '', sessionHash(s.id));
    route();
  } catch (err) {
    if (err.status === 404) { refreshList(); return; }
    if (!state.conn.unauthorized) window.alert(`Could not revive the session: ${err.message}`);
  }
}

async function killSession(id) {
  const e = state.sessions.get(id);
  const label = labelOf(id);
  const running = !e || (e.s.state !== 'exited' && e.s.state !== 'ended');
  const question = running
    ? `Kill "${label}"?\n\nIts processes are ended and its output is discarded.`
    : e.s.state === 'ended' ? `Forget "${label}"?\n\nIts saved screen is deleted.`
    : `Remove "${label}" from the list?`;
  if (!window.confirm(question)) return;
  try {
    await api('DELETE', `/api/sessions/${encodeURIComponent(id)}`);
    state.sessions.delete(id);
    list();
    if (state.current && state.current.id === id) {
      closeCurrent();
      history.replaceState(null, '', '#/');
      route();
    }
  } catch (err) {
    if (err.status === 404) { refreshList(); return; }
    if (!state.conn.unauthorized) window.alert(`Could not kill the session: ${err.message}`);
  }
}

/**
 * Asks for a new name for session `id` and sets it (PATCH, protocol.md
 * "Session names"); an empty answer takes the name away. A refused name
 * (400 not allowed, 409 taken) is said, and asked again.
 */
async function renameSession(id) {
  const e = state.sessions.get(id);
  let name = e ? (e.s.name || '') : '';
  for (;;) {
    const answer = window.prompt('Name this session (empty: no name)', name);
    if (answer === null) return;
    name = answer.trim();
    try {
      const s = await api('PATCH', `/api/sessions/${encodeURIComponent(id)}`, { name });
      // The list event follows; show the name at once.
      if (e) { e.s = s; e.at = performance.now(); }
      list();
      if (state.current && state.current.id === id) setCurrentTitle(sessionLabel(s));
      return;
    } catch (err) {
      if (state.conn.unauthorized) return;
      if (err.status === 404) { refreshList(); return; }
      if (err.status !== 400 && err.status !== 409) {
        window.alert(`Could not rename the session: ${err.message}`);
        return;
      }
      window.alert(`Not renamed: ${err.message}`);
    }
  }
}

/** Notify next / Mute of session `id` (PATCH, protocol.md "Commands and notifications"). */
async function patchNotify(id, notify) {
  try {
    const s = await api('PATCH', `/api/sessions/${encodeURIComponent(id)}`, { notify });
    const e = state.sessions.get(id);
    if (e) { e.s = s; e.at = performance.now(); }
    list();
  } catch (err) {
    if (state.conn.unauthorized) return;
    if (err.status === 404) { refreshList(); return; }
    window.alert(`Could not change the notifications: ${err.message}`);
  }
}
const updateNotifyButtons = createNotifyButtons(patchNotify);

// ---------------------------------------------------------------------------
// A read-only link's page

/**
 * The page of a read-only link (#/share/ID; the server's link /?share=TOKEN
 * set the cookie and sent the browser here): that session, watched, and
 * nothing else. The server grants the link no more than that; the page
 * shows no list and sends no input or size either, and says it is read-only.
 */
async function initShare(id) {
  state.share = { id };
  document.body.classList.add('share-view');
  $('share-note').hidden = false;
  $('current-mode').textContent = 'read-only';
  $('empty').hidden = true;
  indicate();
  if (!id) {
    showShareEnded('This read-only link is not valid',
      'It was revoked, or the session it showed has ended. Ask whoever shared it for a new link.');
    return;
  }
  let s;
  try {
    s = await api('GET', `/api/sessions/${encodeURIComponent(id)}`);
  } catch (err) {
    if (!state.conn.unauthorized) showShareEnded('This read-only link does not work', err.message);
    return;
  }
  // A link is not told the command line (protocol.md): name or title, else this.
  if (!s.name && !s.title) s.name = 'Shared session';
  state.sessions.set(s.id, { s, at: performance.now() });
  openSession(s.id, 'watch');
}

/** The read-only link's page when there is nothing (more) to watch. */
function showShareEnded(title, text) {
  state.conn.unauthorized = true;
  closeCurrent();
  document.body.classList.add('unauthorized');
  $('share-note').hidden = true;
  $('nokey-title').textContent = title;
  $('nokey-text').textContent = text;
  $('nokey-text').hidden = false;
  $('nokey-how').textContent = 'Ask whoever shared it for a new link.';
  $('nokey').hidden = false;
  $('empty').hidden = true;
  indicate();
}

// ---------------------------------------------------------------------------
// The open session: its view and its attachment

function newView(mode) {
  let view = null;
  view = createView(mode, {
    fontSize: fontSize(),
    onListShortcut: focusList,
    onSearchShortcut: search.open,
    onSearchResults: search.showCount,
    onResize: scheduleFit,
    onKey: (e) => !!view && handleMarkKey(view.term, e),
  });
  followMarks(view.term);
  return view;
}

function dropView(view) {
  search.close(false);
  destroyView(view);
}

function fitNow() {
  const cur = state.current;
  if (cur && (cur.mode === 'watch' || cur.saved)) {
    fitWatch(cur.view, fontSize(), scheduleFit);
    return;
  }
  if (!cur || cur.mode !== 'control') return;
  const d = measure(cur.view);
  if (!d) return;
  if (d.cols !== cur.view.term.cols || d.rows !== cur.view.term.rows) cur.view.term.resize(d.cols, d.rows);
  const last = state.lastSentSize;
  if (cur.attachment.connected && (!last || last.cols !== d.cols || last.rows !== d.rows)) {
    if (cur.attachment.sendResize(d.cols, d.rows)) state.lastSentSize = d;
  }
}

onThemeChanged((theme) => {
  if (state.current) state.current.view.term.options.theme = theme;
  minis.refresh(true);
});

// The title a program sets (the WebSocket `title` message) or a session's
// label: shown through displayText(), the rule of `tether list` (issue 29:
// U+202E reversed it, U+200B hid it). displayText() of a label is the label.
function setCurrentTitle(raw) {
  const title = displayText(raw);
  $('current-title').textContent = title;
  document.title = title ? `${title} · Tether` : 'Tether';
}

function openSession(id, mode, preparedView) {
  if (state.conn.unauthorized) return;
  const cur = state.current;
  if (cur && cur.id === id && cur.mode === mode) {
    if (cur.attachment.ended && cur.endReason === 'superseded') return; // the banner offers Take over
    cur.view.term.focus();
    return;
  }
  closeTiles();
  closeCurrent();
  hideBanner();
  const e = state.sessions.get(id);
  if (e && e.s.state === 'ended') {
    openSaved(e.s, mode, preparedView);
    return;
  }
  const view = preparedView || newView(mode);
  const entry = { id, mode, view, attachment: null, endReason: null };
  state.current = entry;
  state.lastSentSize = null;
  // A link's view is not a session to reopen in this tab's dashboard.
  if (!state.share) saveTab(id, mode);
  setCurrentTitle(e ? sessionLabel(e.s) : id);
  $('current').hidden = false;
  $('current-mode').hidden = mode !== 'watch';
  document.body.classList.toggle('watching', mode === 'watch');
  if (NARROW.matches) sidebar.set(false);

  entry.attachment = new Attachment({
    id,
    mode,
    term: view.term,
    // A large buffer: the server's screen + 200 lines, not the whole ring.
    screenLines: screenReplayLines(e ? e.s : null),
    filterInput: keybar.filter,
    // The pane's size with each attach: the session takes it before its
    // replay is drawn (a reattach from a smaller window is not garbled).
    attachSize: () => {
      if (state.current !== entry) return null;
      const d = measure(view);
      if (!d) return null;
      if (d.cols !== view.term.cols || d.rows !== view.term.rows) view.term.resize(d.cols, d.rows);
      return d;
    },
    onState: (st, detail) => onAttachmentState(entry, st, detail),
    onAttached: (msg) => {
      if (state.current !== entry) return;
      hideBanner();
      if (msg.title) setCurrentTitle(msg.title);
      if (mode === 'watch') {
        // A watcher shows the session at its own size, scaled down to the
        // pane's width if need be (fitWatch).
        if (msg.cols >= 1 && msg.rows >= 1) view.term.resize(msg.cols, msg.rows);
        scheduleFit();
      } else {
        state.lastSentSize = { cols: msg.cols, rows: msg.rows };
        fitNow();
      }
    },
    onLive: () => {
      if (state.current === entry && mode === 'control' && document.activeElement === document.body) view.term.focus();
    },
    onTitle: (title) => { if (state.current === entry) setCurrentTitle(title); },
    onCatchingUp: (on) => {
      if (state.current !== entry) catchup.hide();
      else if (on) catchup.show();
      else catchup.done();
    },
    onSize: (cols, rows) => {
      if (state.current !== entry) return;
      if (mode === 'watch') {
        if (cols >= 1 && rows >= 1) view.term.resize(cols, rows);
        scheduleFit();
      } else {
        state.lastSentSize = { cols, rows };
        scheduleFit();
      }
    },
  });
  entry.attachment.start();
  keybar.update();
  list();
  indicate();
  view.term.focus();
}

/**
 * An ended session (protocol.md, Ended sessions) opened: its saved screen,
 * read-only, under a banner offering Revive and Forget. Nothing attaches (its
 * WebSocket would be closed 4411).
 */
function openSaved(s, mode, preparedView) {
  if (preparedView) dropView(preparedView);
  const view = newView('watch');
  const entry = { id: s.id, mode, view, attachment: null, endReason: null, saved: true };
  state.current = entry;
  state.lastSentSize = null;
  saveTab(s.id, mode);
  setCurrentTitle(sessionLabel(s));
  $('current').hidden = false;
  $('current-mode').hidden = true;
  document.body.classList.add('watching', 'saved-screen');
  if (NARROW.matches) sidebar.set(false);
  entry.attachment = new SavedScreen({
    id: s.id,
    term: view.term,
    cols: s.cols,
    rows: s.rows,
    onState: (st, detail) => {
      if (state.current !== entry) return;
      if (st === 'ended' && detail.reason === 'saved') {
        entry.endReason = 'saved';
        scheduleFit();
        savedBanner(entry);
        indicate();
        renderRow(entry.id, state.sessions, state.current);
        return;
      }
      onAttachmentState(entry, st, detail);
    },
  });
  entry.attachment.start();
  keybar.update();
  list();
  indicate();
}

/** The banner over an ended session's saved screen: what it is, Revive, Forget. */
function savedBanner(entry) {
  const e = state.sessions.get(entry.id);
  const s = e ? e.s : { id: entry.id };
  const when = s.ended_at ? ` at ${s.ended_at.replace('T', ' ').replace('Z', ' UTC')}` : '';
  const cmd = commandLineOf(s);
  showBanner('warn', `Session ended by ${s.ended || 'its host going away'}${when}`,
    `Its processes are gone: this is its screen as last saved, read-only. Revive runs ${cmd || 'its command'} again`
    + `${s.cwd ? ` in ${displayText(s.cwd)}` : ''}; Forget deletes the saved screen.`,
    [{ label: 'Revive', run: () => reviveSession(entry.id) },
      { label: 'Forget', run: () => killSession(entry.id) }]);
  $('banner').dataset.reason = 'saved';
}

function closeCurrent() {
  const cur = state.current;
  if (!cur) return;
  state.current = null;
  cur.attachment?.stop();
  dropView(cur.view);
  $('current').hidden = true;
  catchup.hide();
  document.body.classList.remove('watching', 'disconnected', 'saved-screen');
  setCurrentTitle('');
  hideBanner();
  keybar.update();
  clearTab();
  list();
  indicate();
}

function onAttachmentState(entry, st, detail) {
  if (state.current !== entry) return;
  if (st === 'offline') state.conn.lostContact = true;
  if ((st === 'offline' || st === 'reconnecting') && detail.shutdown) showShutdownBanner();
  if (st === 'ended' && !entry.saved && /^session ended by /.test(detail.closeReason || '')) {
    // 4411: the session is an ended one now (the host went away and a new
    // one found its record): show its saved screen.
    entry.endReason = detail.reason;
    refreshList().then(() => {
      if (state.current !== entry) return;
      closeCurrent();
      openSession(entry.id, entry.mode);
    });
    return;
  }
  if (st === 'ended') {
    entry.endReason = detail.reason;
    endBanner(entry, detail);
  }
  indicate();
  // "attached here" in the list follows our own state.
  renderRow(entry.id, state.sessions, state.current);
}

function endBanner(entry, detail) {
  const home = () => { location.hash = '#/'; };
  showEndBanner(detail, !!state.share, {
    newSession: () => createSession($('new-command').value),
    close: home,
    takeOver: () => { hideBanner(); entry.endReason = null; entry.attachment.start(); },
    watchHere: () => { location.hash = sessionHash(entry.id, 'watch'); },
    reconnect: () => { hideBanner(); entry.attachment.start(); },
    unauthorized: () => showUnauthorized(),
    shareEnded: showShareEnded,
  });
}

// ---------------------------------------------------------------------------
// New session

async function createSession(line) {
  const errEl = $('new-error');
  errEl.hidden = true;
  $('new-note').hidden = true;
  let argv;
  try {
    argv = splitCommand(line || '');
  } catch (e) {
    errEl.textContent = `Cannot read the command: ${e.message}.`;
    errEl.hidden = false;
    if (NARROW.matches) sidebar.set(true);
    $('new-command').focus();
    return;
  }
  // Open the terminal first so the session starts at the pane's real size.
  closeTiles();
  closeCurrent();
  hideBanner();
  const view = newView('control');
  const size = measure(view) || { cols: 80, rows: 24 };
  const body = { cols: size.cols, rows: size.rows };
  if (argv.length) body.command = argv;
  $('new-button').disabled = true;
  // The list as it was: the event that removes an evicted session may come
  // before the answer that names it.
  const listed = new Map(state.sessions);
  state.creating = true;
  let created = false;
  try {
    const s = await api('POST', '/api/sessions', body);
    if (s.evicted) {
      // The list was full: the server ended the exited session detached longest.
      const gone = listed.get(s.evicted);
      const name = gone ? sessionLabel(gone.s) : s.evicted.slice(0, 8);
      const note = $('new-note');
      note.textContent = `Session limit reached: “${name}” (exited, detached longest) was ended to make room.`;
      note.hidden = false;
    }
    state.sessions.set(s.id, { s, at: performance.now() });
    openSession(s.id, 'control', view);
    history.pushState(null, '', sessionHash(s.id));
    created = true;
    $('new-command').value = '';
    list();
  } catch (e) {
    dropView(view);
    showEmpty();
    if (!state.conn.unauthorized) {
      // 503 says which: the session limit (and how to raise it), or out of
      // resources (try again later); the server's words are the message.
      const why = e.status === 503 ? `Cannot create a session: ${e.message}`
        : e.status === 422 ? `Cannot start it: ${e.message}`
        : `Cannot create a session: ${e.message}`;
      errEl.textContent = why;
      errEl.hidden = false;
      if (NARROW.matches) sidebar.set(true);
    }
  } finally {
    $('new-button').disabled = false;
    state.creating = false;
    // Created: the address now names the new session, which is open. Not
    // created: what the address names (a saved tab, a link clicked
    // meanwhile) is opened now.
    const waiting = state.routeWaiting;
    state.routeWaiting = false;
    if (waiting && !created) route();
  }
}

function showEmpty() {
  $('empty').hidden = state.conn.unauthorized;
  $('terminal-wrap').hidden = true;
}

// ---------------------------------------------------------------------------
// Routing

function route() {
  if (state.share) return; // a link's page shows its one session only
  if (state.creating) {
    state.routeWaiting = true;
    return;
  }
  const tileIds = parseTilesHash(location.hash);
  if (tileIds) {
    openTiles(tileIds);
    return;
  }
  closeTiles();
  const target = parseHash(location.hash);
  if (target) {
    const r = resolveId(state.sessions, target.id);
    if (r.ambiguous) {
      closeCurrent();
      showEmpty();
      showBanner('warn', 'Which session?',
        `${r.ambiguous.length} sessions have ids that begin with "${target.id}": pick one from the list.`,
        [{ label: 'Close', run: () => { location.hash = '#/'; } }]);
      if (NARROW.matches) sidebar.set(true);
      return;
    }
    if (r.id !== target.id) {
      // Show the full id, so a reload or a bookmark names this very session.
      history.replaceState(null, '', sessionHash(r.id, target.mode));
    }
    openSession(r.id, target.mode);
  } else {
    closeCurrent();
    showEmpty();
    if (NARROW.matches) sidebar.set(true);
  }
}

/**
 * The tiled view of these sessions (ids, names or prefixes, resolved as in
 * #/s/): the open session closes; ambiguous ones are left out.
 */
function openTiles(ids) {
  const resolved = [...new Set(ids.map((id) => resolveId(state.sessions, id)).filter((r) => r.id).map((r) => r.id))];
  const hash = tilesHash(resolved);
  if (hash !== location.hash) history.replaceState(null, '', hash);
  if (tilesShown === hash) return;
  closeCurrent();
  hideBanner();
  $('empty').hidden = true;
  tilesShown = hash;
  tiles.open(resolved);
  list();
  keybar.update();
  if (NARROW.matches) sidebar.set(false);
}

function closeTiles() {
  if (!tilesShown) return;
  tilesShown = '';
  tiles.close();
  list();
  keybar.update();
}

/** Keyboard: moves focus to the session list (the open session's entry first). */
function focusList() {
  if (state.conn.unauthorized || state.share) return;
  sidebar.focusList();
}

// ---------------------------------------------------------------------------
// Start

function init() {
  const toolbar = initToolbar({
    onRename: () => { if (state.current) renameSession(state.current.id); },
    onShare: () => { if (state.current) shareDialog.open(state.current.id, labelOf(state.current.id)); },
    onFontSize: (px) => {
      tiles.setFontSize(px);
      if (state.current) {
        state.current.view.term.options.fontSize = px;
        scheduleFit();
      }
    },
  });
  keepFontSize = (px) => toolbar.setSize(px);
  touch = initTouch({
    term: () => state.current?.view.term ?? null,
    control: () => state.current?.mode === 'control' && !state.current.saved,
    previewFontSize: (px) => {
      if (!state.current) return;
      state.current.view.term.options.fontSize = px;
      scheduleFit();
    },
    setFontSize: (px) => toolbar.setSize(px),
  });
  initNotifications();
  $('new-form').addEventListener('submit', (e) => {
    e.preventDefault();
    createSession($('new-command').value);
  });
  // Tile: the running sessions side by side, the open one first.
  $('tile-view').addEventListener('click', () => {
    const running = [...state.sessions.values()].filter((e) => e.s.state !== 'exited').map((e) => e.s.id);
    const cur = state.current?.id;
    const ids = [...new Set([cur, ...running].filter(Boolean))].slice(0, MAX_TILES);
    if (ids.length) location.hash = tilesHash(ids);
  });
  // Previews: the list's miniatures on or off (kept in this browser).
  const showPreviews = (on) => {
    $('previews-toggle').setAttribute('aria-pressed', String(on));
    document.body.classList.toggle('no-previews', !on);
    minis.setEnabled(on);
  };
  showPreviews(previewsOn());
  $('previews-toggle').addEventListener('click', () => {
    const on = !minis.enabled;
    storePreviews(on);
    showPreviews(on);
  });
  $('empty-new').addEventListener('click', () => createSession($('new-command').value));
  $('sidebar-toggle').addEventListener('click', () => {
    sidebar.set(!sidebar.isOpen());
    // Not on a touch screen: the soft keyboard would open over the list.
    if (sidebar.isOpen() && !matchMedia('(pointer: coarse)').matches) $('new-command').focus();
  });
  document.addEventListener('keydown', (e) => {
    if (isListShortcut(e)) {
      e.preventDefault();
      focusList();
    } else if (isSearchShortcut(e) && state.current) {
      e.preventDefault();
      search.open();
    } else if (e.key === 'Escape' && state.current && $('sidebar').contains(document.activeElement)) {
      // Back from the list to the terminal.
      if (NARROW.matches) sidebar.set(false);
      state.current.view.term.focus();
    }
  });
  $('scrim').addEventListener('click', () => {
    sidebar.set(false);
    state.current?.view.term.focus();
  });
  $('session-list').addEventListener('click', (e) => {
    const a = e.target.closest('a.session-open, a.watch, a.attach');
    if (a && NARROW.matches) sidebar.set(false);
  });
  NARROW.addEventListener('change', () => sidebar.set(!state.share && (!NARROW.matches || !state.current)));
  window.addEventListener('hashchange', route);
  window.addEventListener('popstate', route);

  // Reconnect at once when the network or the page comes back.
  const kick = () => state.current?.attachment.kick();
  window.addEventListener('online', () => {
    kick();
    if (!events.active && !state.conn.unauthorized && !state.share) events.start();
  });
  // The pane's ResizeObserver is the main trigger; the window's own resize is
  // a second one (headless Chromium has been seen to deliver the observer's
  // callback late or not at all after a viewport change).
  window.addEventListener('resize', () => scheduleFit());
  // The miniatures follow the width of the list and of the overview's cards.
  let relayoutQueued = false;
  window.addEventListener('resize', () => {
    if (relayoutQueued) return;
    relayoutQueued = true;
    requestAnimationFrame(() => { relayoutQueued = false; minis.relayout(); });
  });
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') {
      kick();
      scheduleFit();
      minis.refresh();
      renderTimes(state.sessions, state.current);
    }
  });
  window.addEventListener('pageshow', (e) => {
    if (e.persisted) state.current?.attachment.resume();
    kick();
  });
  window.addEventListener('pagehide', (e) => {
    // Closing or reloading the page: close the socket normally so the session
    // shows as detached at once; from the back/forward cache, pageshow resumes.
    if (e.persisted) state.current?.attachment.suspend();
    else state.current?.attachment.stop();
  });

  const share = parseShareHash(location.hash);
  if (share) {
    // A read-only link's page: no list, no events, no routing (a changed
    // address is the dashboard again on the next load, and needs the key).
    sidebar.set(false);
    initShare(share.id);
    return;
  }
  sidebar.set(!NARROW.matches);
  // No address but this tab had a session open (same tab, e.g. after the key
  // redirect dropped the fragment): reopen it. A new tab starts empty.
  if (!parseHash(location.hash)) {
    const saved = savedTab();
    if (saved) history.replaceState(null, '', sessionHash(saved.id, saved.mode));
  }
  indicate();
  refreshList().then(() => {
    if (state.conn.unauthorized) return;
    events.start();
    route();
  });
}

init();
