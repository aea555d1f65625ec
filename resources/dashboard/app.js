// SPDX-License-Identifier: GPL-2.0-or-later
// Tether dashboard: the live session list (Server-Sent Events at /api/events),
// creating and killing sessions (REST), and the terminal view (xterm.js) with
// its attachment (attachment.js). Protocol: docs/protocol.md.
//
// Address: #/s/<id> attaches in control mode, #/s/<id>/watch read-only, so a
// reload or a bookmark reattaches. #/share/<id> is the watch-only view a
// read-only link opens (docs/protocol.md "Read-only links"): that one session,
// no list, no input, no resize. Per-tab state lives in sessionStorage, never
// localStorage: two tabs sharing one key collapsed onto one PTY (NousResearch/hermes-agent#115304).

import { Terminal } from './vendor/xterm.js';
import { FitAddon } from './vendor/addon-fit.js';
import { SearchAddon } from './vendor/addon-search.js';
import { WebLinksAddon } from './vendor/addon-web-links.js';
import { Unicode11Addon } from './vendor/addon-unicode11.js';
import { WebglAddon } from './vendor/addon-webgl.js';
import { Attachment, screenReplayLines } from './attachment.js';
import {
  commandLine, displayText, formatBytes, formatCountdown, formatDuration, sessionLabel,
} from './util.js';
import { split as splitCommand } from './shellwords.js';

const $ = (id) => document.getElementById(id);
const TAB_KEY = 'tether.tab';
// A fit on a hidden or collapsed element yields 0 or a couple of cells; such a
// size must never reach the session (it would reflow the user's shell).
const MIN_COLS = 10;
const MIN_ROWS = 3;
/** Keys whose default action scrolls a scrollable box (see createView). */
const SCROLL_KEYS = new Set([' ', 'Spacebar', 'PageUp', 'PageDown', 'Home', 'End',
  'ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight']);
/** Font size of the terminal, per browser (localStorage: a preference, not per-tab state). */
const FONT_KEY = 'tether.fontSize';
const FONT_DEFAULT = 14;
const FONT_MIN = 8;
const FONT_MAX = 32;
const NARROW = window.matchMedia('(max-width: 760px)');
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

const app = {
  /** id -> { s: SESSION, at: performance.now() when received } */
  sessions: new Map(),
  listState: 'connecting',
  events: null,
  eventsRetry: 0,
  unauthorized: false,
  /** Some answer of this server was authorized (the page held the right key). */
  authorized: false,
  keyRotated: false,  // the event stream said the key was rotated (tether key --rotate)
  /** The server was out of reach since the last authorized answer. */
  lostContact: false,
  /** The event stream's last word was `shutdown` (Tether quit), and no answer since. */
  serverShutdown: false,
  /** The server's last `server` event: { version, update, pid, ... } or null. */
  server: null,
  /** The update bar's Restart was accepted (202); the next `server` event tells how it went. */
  updateRestarting: false,
  /** The open session: { id, mode, view, attachment, ended } or null. */
  current: null,
  lastSentSize: null,
  /** The page is the watch-only view of a read-only link: { id } (id may be ''), else null. */
  share: null,
};

// ---------------------------------------------------------------------------
// Test hook: the browser tests read the terminal's buffer through this.
window.tether = {
  get term() { return app.current ? app.current.view.term : null; },
  get attachment() { return app.current ? app.current.attachment : null; },
  get state() { return app.current ? app.current.attachment.state : app.listState; },
  get sessions() { return [...app.sessions.values()].map((e) => e.s); },
  /** Last size sent to (or confirmed by) the session; tests read it to explain a failure. */
  get lastSentSize() { return app.lastSentSize; },
  /** The server's version and pending update (the `server` event). */
  get server() { return app.server; },
  /** The open terminal's search addon (tests read its results). */
  get search() { return app.current ? app.current.view.search : null; },
  /** 'webgl' (the GPU renderer) or 'dom' (its fallback). */
  get renderer() { return app.current ? app.current.view.renderer : null; },
  /** The read-only link's view: { id }, or null. */
  get share() { return app.share; },
};

// ---------------------------------------------------------------------------
// Connection indicator

const STATE_TEXT = {
  connecting: 'Connecting…',
  connected: 'Connected',
  reconnecting: 'Reconnecting…',
  offline: 'Offline',
  ended: 'Disconnected',
  unauthorized: 'No key',
};

const LIST_STALE_UNREACHABLE = 'Tether is not reachable: this list is from before it went away and may be out of date. Retrying…';
const LIST_STALE_SHUTDOWN = 'Tether shut down (“server shutting down”): this list is from before it quit, and its sessions '
  + 'ended with it. Retrying until it is back…';

function renderIndicator() {
  let state;
  let text;
  if (app.unauthorized) {
    state = 'unauthorized';
    if (app.authorized && app.lostContact) text = 'Tether restarted';
  } else if (app.current) {
    state = app.current.attachment.state;
    if (state === 'idle') state = 'connecting';
    if (state === 'connected' && app.current.mode === 'watch') text = app.share ? 'Watching (read-only)' : 'Watching';
    if (state === 'offline' && app.listState === 'connected') state = 'reconnecting';
    // Tether said `server shutting down` (Quit, SIGTERM): say that, not just "Offline".
    if ((state === 'offline' || state === 'reconnecting') && (app.current.attachment.shutdown || app.serverShutdown)) {
      text = 'Tether shut down';
    }
  } else {
    state = app.listState;
    // The list alone heard it too: the event stream's `shutdown` event.
    if ((state === 'offline' || state === 'reconnecting') && app.serverShutdown) text = 'Tether shut down';
  }
  const el = $('conn');
  el.dataset.state = state;
  if (state === 'unauthorized' && app.share) text = 'Link ended';
  $('conn-text').textContent = text || STATE_TEXT[state] || state;
  el.title = {
    connected: 'Connected to Tether: output is live.',
    reconnecting: 'The connection dropped; retrying. Nothing is lost: output is buffered by Tether.',
    offline: 'Tether cannot be reached; retrying.',
  }[state] || '';
  if (text === 'Tether shut down') el.title = 'Tether closed the connection: server shutting down. Retrying until it is back.';
  document.body.classList.toggle('disconnected', !!app.current && state !== 'connected');
  // While the event stream is down the list is a picture of the past: the
  // sessions in it may be gone (a restart ends them all). Say so instead of
  // showing "running · attached" as if it were live.
  const stale = !app.unauthorized && app.authorized
    && (app.listState === 'offline' || app.listState === 'reconnecting');
  $('sidebar').classList.toggle('stale', stale);
  $('list-stale').hidden = !stale;
  $('list-stale').textContent = app.serverShutdown ? LIST_STALE_SHUTDOWN : LIST_STALE_UNREACHABLE;
}

// ---------------------------------------------------------------------------
// REST

async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', cache: 'no-store', headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let r;
  try {
    r = await fetch(path, init);
  } catch (e) {
    app.lostContact = true; // no answer at all: the server is out of reach
    throw e;
  }
  if (r.status === 401) {
    // The server says why (a read-only link: revoked, or its session ended).
    let why = '';
    try { why = (await r.json()).error || ''; } catch { why = ''; }
    showUnauthorized(why);
    throw new Error('no key');
  }
  noteAuthorized();
  let data = null;
  if (r.status !== 204) {
    try { data = await r.json(); } catch { data = null; }
  }
  if (!r.ok) {
    const err = new Error((data && data.error) || `${r.status} ${r.statusText}`);
    err.status = r.status;
    throw err;
  }
  return data;
}

/** An answer passed the key check: the server is there and knows our key. */
function noteAuthorized() {
  app.authorized = true;
  app.lostContact = false;
  app.serverShutdown = false;
}

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
  if (app.unauthorized) return;
  if (app.share) {
    showShareEnded('This read-only link no longer works',
      why || 'It was revoked, or the session it showed has ended.');
    return;
  }
  app.unauthorized = true;
  if (app.keyRotated) {
    $('nokey-title').textContent = 'Tether\'s access key was changed';
    $('nokey-text').textContent = 'Someone ran tether key --rotate: the key this page held no longer works.';
  } else if (app.authorized && app.lostContact) {
    $('nokey-title').textContent = 'Tether was restarted';
    $('nokey-text').textContent = 'It has another key, and the sessions that ran before the restart are gone.';
  } else if (app.authorized) {
    $('nokey-title').textContent = 'Tether\'s key changed';
    $('nokey-text').textContent = 'The key this page held no longer works: someone ran tether key --rotate, or another Tether\'s link was opened in this browser.';
  }
  $('nokey-text').hidden = !app.authorized;
  if (app.authorized) $('nokey-how').textContent = 'Open the new link that Tether printed (it ends in ?key=…; tether key prints it again) or use its tray menu: Open dashboard.';
  if (app.events) app.events.close();
  closeCurrent();
  document.body.classList.add('unauthorized');
  $('nokey').hidden = false;
  $('empty').hidden = true;
  $('sidebar').hidden = true;
  renderIndicator();
}

// ---------------------------------------------------------------------------
// Session list: Server-Sent Events, one `sessions` event with the whole list
// on connect and on every change. expires_in and idle_seconds are as of the
// event: counted on locally by a 1 s ticker.

function startEvents() {
  if (app.unauthorized) return;
  const es = new EventSource('/api/events');
  app.events = es;
  es.addEventListener('sessions', (e) => {
    app.eventsRetry = 0;
    app.serverShutdown = false;
    app.listState = 'connected';
    noteAuthorized();
    try { applySessions(JSON.parse(e.data).sessions || []); } catch { /* ignore a bad event */ }
    renderIndicator();
  });
  // The key was rotated: the server ends this stream next, and the retry
  // meets a 401 that showUnauthorized() then explains.
  es.addEventListener('key', () => { app.keyRotated = true; });
  // Tether is quitting (tray Quit, SIGTERM; protocol.md, `shutdown`): the
  // stream ends next. A page showing only the list says so, as an attached
  // one does from its socket's 1001 `server shutting down`.
  es.addEventListener('shutdown', () => {
    app.serverShutdown = true;
    renderIndicator();
  });
  // Version and update: once on connect, again when an upgrade is noticed.
  es.addEventListener('server', (e) => {
    try { applyServer(JSON.parse(e.data)); } catch { /* ignore a bad event */ }
  });
  es.onopen = () => { app.listState = 'connected'; renderIndicator(); };
  es.onerror = () => {
    if (es !== app.events) return;
    if (es.readyState === EventSource.CLOSED) {
      // The browser gave up (HTTP error such as 401): find out, then retry ourselves.
      // The server answered, so this is no lost contact: a 401 here, on a
      // stream still connecting when the key was rotated (it never got the
      // `key` event), read as "Tether was restarted".
      es.close();
      app.events = null;
      app.listState = 'offline';
      renderIndicator();
      refreshList().finally(() => {
        if (app.unauthorized) return;
        const delay = Math.min(5000, 250 * 2 ** app.eventsRetry++);
        setTimeout(() => { if (!app.events) startEvents(); }, delay / 2 + Math.random() * delay / 2);
      });
    } else {
      // The stream dropped or could not connect; the browser retries.
      app.lostContact = true;
      app.listState = navigator.onLine === false ? 'offline' : 'reconnecting';
      renderIndicator();
    }
  };
}

// ---------------------------------------------------------------------------
// Update bar: the binary on disk is another Tether than the one serving (a
// package upgrade). A restart in place runs it and keeps every session; the
// next process image's `server` event (no update) hides the bar.

function applyServer(info) {
  app.server = info;
  // The running version, beside the name (the package's one version,
  // project(VERSION); `tether --version` prints the installed one).
  if (info && info.version) {
    $('version').textContent = info.version;
    $('version').parentElement.title = `Tether ${info.version}: session list`;
  }
  // After our restart, a server still reporting last_error is the old image
  // carrying on: the restart failed, and it says why.
  const failed = app.updateRestarting && info && info.last_error;
  app.updateRestarting = false;
  const u = info && info.update;
  const bar = $('update');
  if (!u || !u.version) {
    bar.hidden = true;
    return;
  }
  $('update-text').textContent = `Tether was updated — restart to use version ${u.version} (sessions are kept)`;
  $('update-error').textContent = failed ? `Could not restart: ${info.last_error}` : '';
  $('update-error').hidden = !failed;
  const btn = $('update-restart');
  btn.disabled = false;
  btn.textContent = 'Restart';
  bar.hidden = false;
}

async function restartForUpdate() {
  const btn = $('update-restart');
  btn.disabled = true;
  btn.textContent = 'Restarting…';
  $('update-error').hidden = true;
  try {
    await api('POST', '/api/restart');
    app.updateRestarting = true;
    // The terminal reconnects by itself (1012); the event stream ends and
    // reconnects to the new image, whose `server` event updates the bar.
  } catch (e) {
    $('update-error').textContent = `Could not restart: ${e.message}`;
    $('update-error').hidden = false;
    btn.disabled = false;
    btn.textContent = 'Restart';
  }
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

function applySessions(list) {
  const now = performance.now();
  notifyExits(app.sessions, list);
  app.sessions = new Map(list.map((s) => [s.id, { s, at: now }]));
  renderList();
  const cur = app.current;
  if (cur) {
    const e = app.sessions.get(cur.id);
    if (e) setCurrentTitle(sessionLabel(e.s));
    // "Opened in another window" offers Take over only while the session
    // exists: once it left the list (killed or expired), say so instead of
    // letting the click find out.
    if (!e && cur.attachment && cur.attachment.ended && cur.endReason === 'superseded') {
      cur.endReason = 'closed';
      showEndBanner(cur, { reason: 'closed' });
    }
  }
}

// ---------------------------------------------------------------------------
// Notifications: a session that exits while the tab is in the background, as
// the tray says it (with the user's permission, asked for by a button: a
// browser asks only after a click).

function notificationsSupported() {
  return typeof window.Notification === 'function' && window.isSecureContext;
}

function renderNotifyButton() {
  $('notify-enable').hidden = !notificationsSupported() || Notification.permission !== 'default';
}

/** Running sessions of `before` (id -> entry) that `list` shows exited. */
function notifyExits(before, list) {
  if (!notificationsSupported() || Notification.permission !== 'granted') return;
  if (document.visibilityState !== 'hidden') return;
  for (const s of list) {
    const old = before.get(s.id);
    if (!old || old.s.state === 'exited' || s.state !== 'exited') continue;
    const n = new Notification(`${sessionLabel(s)} exited`, {
      body: exitText({ code: s.exit_code, signal: s.exit_signal }),
      tag: `tether-exit-${s.id}`,
      icon: 'icon.svg',
    });
    n.onclick = () => {
      window.focus();
      location.hash = `#/s/${encodeURIComponent(s.id)}`;
      n.close();
    };
  }
}

function initNotifications() {
  renderNotifyButton();
  $('notify-enable').addEventListener('click', async () => {
    try { await Notification.requestPermission(); } catch { /* refused or unsupported */ }
    renderNotifyButton();
  });
}

function renderList() {
  const ul = $('session-list');
  const existing = new Map([...ul.children].map((li) => [li.dataset.id, li]));
  let i = 0;
  for (const { s } of app.sessions.values()) {
    let li = existing.get(s.id);
    if (!li) li = createItem(s.id);
    existing.delete(s.id);
    updateItem(li, s);
    if (ul.children[i] !== li) ul.insertBefore(li, ul.children[i] || null);
    i++;
  }
  for (const li of existing.values()) li.remove();
  $('session-count').textContent = app.sessions.size ? String(app.sessions.size) : '';
  $('list-empty').hidden = app.sessions.size > 0;
  renderTimes();
}

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function createItem(id) {
  const li = el('li', 'session');
  li.dataset.id = id;
  const open = el('a', 'session-open');
  open.href = `#/s/${encodeURIComponent(id)}`;
  // The name has the first line to itself, beside the actions: with the
  // state badge there too, a row with Attach left the name 32 px ("pag…").
  const head = el('span', 'session-head');
  head.append(el('span', 'session-title'));
  const cmd = el('span', 'session-cmd');
  const meta = el('span', 'session-meta');
  meta.append(el('span', 'badge state'), el('span', 'viewer'), el('span', 'idle'), el('span', 'expiry'));
  const buf = el('span', 'buffer');
  const bar = el('span', 'buffer-bar');
  bar.append(el('span', 'buffer-fill'));
  buf.append(bar, el('span', 'buffer-text'));
  open.append(head, cmd, meta, buf);

  const actions = el('div', 'session-actions');
  // The row attaches too; an explicit action says so (issue 14).
  const attach = el('a', 'button small attach', 'Attach');
  attach.href = `#/s/${encodeURIComponent(id)}`;
  const watch = el('a', 'button small watch', 'Watch');
  watch.href = `#/s/${encodeURIComponent(id)}/watch`;
  const kill = el('button', 'small danger kill', 'Kill');
  kill.type = 'button';
  kill.addEventListener('click', () => killSession(id));
  actions.append(attach, watch, kill);
  li.append(open, actions);
  return li;
}

function viewerText(s) {
  const here = app.current && app.current.id === s.id && app.current.attachment.connected;
  if (s.attached) {
    if (here && app.current.mode === 'control') return 'attached here';
    const kind = { browser: 'in a browser', local: 'in a window', cli: 'in a terminal' }[s.viewer_kind];
    return kind ? `attached ${kind}` : 'attached';
  }
  if (s.viewers > 0) return `${s.viewers} watching`;
  return 'detached';
}

function updateItem(li, s) {
  const label = sessionLabel(s);
  const cmd = commandLine(s);
  const isCurrent = app.current && app.current.id === s.id;
  li.classList.toggle('is-current', !!isCurrent);
  li.classList.toggle('is-exited', s.state === 'exited');
  li.classList.toggle('is-attached', !!s.attached);
  const open = li.querySelector('.session-open');
  if (isCurrent && app.current.mode === 'control') open.setAttribute('aria-current', 'page');
  else open.removeAttribute('aria-current');
  open.title = `${cmd}${s.cwd ? `\nin ${displayText(s.cwd)}` : ''}${s.pid ? `\npid ${s.pid}` : ''}`;
  li.querySelector('.session-title').textContent = label;
  const cmdEl = li.querySelector('.session-cmd');
  cmdEl.textContent = cmd;
  cmdEl.hidden = !cmd || cmd === label;
  const state = li.querySelector('.state');
  if (s.state === 'exited') {
    state.textContent = s.exit_signal ? `signal ${s.exit_signal}` : `exited ${s.exit_code ?? ''}`.trim();
    state.dataset.kind = s.exit_code === 0 && !s.exit_signal ? 'ok' : 'bad';
  } else {
    state.textContent = 'running';
    state.dataset.kind = 'running';
  }
  const viewer = li.querySelector('.viewer');
  viewer.textContent = viewerText(s);
  viewer.dataset.attached = s.attached ? 'yes' : 'no';
  renderBuffer(li, s);
  li.querySelector('.buffer').title = 'Output kept for replay (the ring buffer): the oldest bytes give way when it is full.';
  const kill = li.querySelector('.kill');
  kill.textContent = s.state === 'exited' ? 'Remove' : 'Kill';
  kill.setAttribute('aria-label', `${kill.textContent} ${label}`);
  li.querySelector('.watch').setAttribute('aria-label', `Watch ${label} read-only`);
  li.querySelector('.watch').hidden = s.state === 'exited';
  const attach = li.querySelector('.attach');
  attach.setAttribute('aria-label', `Attach to ${label}`);
  // Attached here already, or exited (the row still opens its output).
  attach.hidden = s.state === 'exited' || (isCurrent && app.current.mode === 'control');
  li.classList.toggle('has-attach', !attach.hidden);
}

/**
 * The ring buffer meter. Output causes no list event (protocol.md, Live
 * list), so the `buffer_bytes` of an event is as of that event. For the
 * session open here, the bytes received since then (the attachment's offset
 * past the event's `offset`) went into the ring too: the meter follows them,
 * up to the capacity.
 */
function renderBuffer(li, s) {
  const cap = Number(s.buffer_capacity) || 0;
  let used = Number(s.buffer_bytes) || 0;
  const cur = app.current;
  if (cur && cur.id === s.id && cur.attachment && cur.attachment.offset !== null
      && typeof s.offset === 'number' && cur.attachment.offset > s.offset) {
    used += cur.attachment.offset - s.offset;
  }
  if (cap > 0) used = Math.min(used, cap);
  const frac = cap > 0 ? used / cap : 0;
  // CSSOM, not a style="" attribute: the CSP refuses inline style attributes.
  li.querySelector('.buffer-fill').style.width = `${(frac * 100).toFixed(1)}%`;
  li.querySelector('.buffer-text').textContent = cap ? `${formatBytes(used)} of ${formatBytes(cap)}` : '';
}

/** Updates the counting fields (idle, expiry) from the last event plus the time since. */
function renderTimes() {
  const now = performance.now();
  for (const li of $('session-list').children) {
    const e = app.sessions.get(li.dataset.id);
    if (!e) continue;
    const { s } = e;
    const elapsed = (now - e.at) / 1000;
    if (app.current && app.current.id === s.id) renderBuffer(li, s);
    const idle = li.querySelector('.idle');
    if (typeof s.idle_seconds === 'number' && s.state !== 'exited') {
      const secs = s.idle_seconds + elapsed;
      idle.textContent = secs < 10 ? 'active' : `idle ${formatDuration(secs)}`;
      idle.hidden = false;
    } else {
      idle.hidden = true;
    }
    const expiry = li.querySelector('.expiry');
    if (typeof s.expires_in === 'number') {
      const left = s.expires_in - elapsed;
      expiry.textContent = `expires in ${formatCountdown(left)}`;
      expiry.dataset.soon = left < 120 ? 'yes' : 'no';
      expiry.hidden = false;
    } else {
      expiry.hidden = true;
    }
  }
}

setInterval(() => { if (document.visibilityState === 'visible') renderTimes(); }, 1000);

async function killSession(id) {
  const e = app.sessions.get(id);
  const label = e ? sessionLabel(e.s) : id;
  const running = !e || e.s.state !== 'exited';
  const question = running
    ? `Kill "${label}"?\n\nIts processes are ended and its output is discarded.`
    : `Remove "${label}" from the list?`;
  if (!window.confirm(question)) return;
  try {
    await api('DELETE', `/api/sessions/${encodeURIComponent(id)}`);
    app.sessions.delete(id);
    renderList();
    if (app.current && app.current.id === id) {
      closeCurrent();
      history.replaceState(null, '', '#/');
      route();
    }
  } catch (err) {
    if (err.status === 404) { refreshList(); return; }
    if (!app.unauthorized) window.alert(`Could not kill the session: ${err.message}`);
  }
}

/**
 * Asks for a new name for session `id` and sets it (PATCH, protocol.md
 * "Session names"); an empty answer takes the name away. A refused name
 * (400 not allowed, 409 taken) is said, and asked again.
 */
async function renameSession(id) {
  const e = app.sessions.get(id);
  let name = e ? (e.s.name || '') : '';
  for (;;) {
    const answer = window.prompt('Name this session (empty: no name)', name);
    if (answer === null) return;
    name = answer.trim();
    try {
      const s = await api('PATCH', `/api/sessions/${encodeURIComponent(id)}`, { name });
      // The list event follows; show the name at once.
      if (e) { e.s = s; e.at = performance.now(); }
      renderList();
      if (app.current && app.current.id === id) setCurrentTitle(sessionLabel(s));
      return;
    } catch (err) {
      if (app.unauthorized) return;
      if (err.status === 404) { refreshList(); return; }
      if (err.status !== 400 && err.status !== 409) {
        window.alert(`Could not rename the session: ${err.message}`);
        return;
      }
      window.alert(`Not renamed: ${err.message}`);
    }
  }
}

// ---------------------------------------------------------------------------
// Read-only links (docs/protocol.md "Read-only links"): Share makes one and
// shows it (copied when the browser allows); Revoke ends every link to the
// session, and whoever watches through one is disconnected at once.

async function shareSession(id) {
  const e = app.sessions.get(id);
  const label = e ? sessionLabel(e.s) : id;
  const dlg = $('share-dialog');
  dlg.dataset.id = id;
  $('share-what').textContent = `Whoever opens this link can watch “${label}” live, and nothing else: `
    + 'no typing, no resizing, no other session, no key. It works until you revoke it, the session ends '
    + 'or the key is rotated.';
  $('share-url').value = '';
  $('share-status').textContent = 'Making a link…';
  $('share-error').hidden = true;
  $('share-revoke').disabled = false;
  if (!dlg.open) dlg.showModal();
  try {
    const made = await api('POST', '/api/shares', { session: id });
    $('share-url').value = made.url;
    $('share-url').focus();
    $('share-url').select();
    $('share-status').textContent = (await copyShareLink()) ? 'Link copied to the clipboard.'
      : 'Copy the link above and send it to whoever should watch.';
  } catch (err) {
    if (app.unauthorized) { dlg.close(); return; }
    $('share-status').textContent = '';
    $('share-error').textContent = `Could not make a link: ${err.message}`;
    $('share-error').hidden = false;
  }
}

/** Puts the dialog's link on the clipboard; true when that worked. */
async function copyShareLink() {
  const url = $('share-url').value;
  if (!url) return false;
  if (navigator.clipboard && window.isSecureContext) {
    try { await navigator.clipboard.writeText(url); return true; } catch { /* below */ }
  }
  // The Async Clipboard API needs a secure context (see copySelection).
  $('share-url').select();
  try { return document.execCommand('copy'); } catch { return false; }
}

async function revokeShares() {
  const id = $('share-dialog').dataset.id;
  $('share-error').hidden = true;
  try {
    const r = await api('DELETE', `/api/sessions/${encodeURIComponent(id)}/shares`);
    $('share-url').value = '';
    $('share-revoke').disabled = true;
    $('share-status').textContent = r.revoked === 1
      ? 'Revoked 1 link: whoever watched through it was disconnected.'
      : `Revoked ${r.revoked} links: whoever watched through them was disconnected.`;
  } catch (err) {
    if (app.unauthorized) { $('share-dialog').close(); return; }
    $('share-error').textContent = `Could not revoke: ${err.message}`;
    $('share-error').hidden = false;
  }
}

function initShareDialog() {
  $('share').addEventListener('click', () => { if (app.current) shareSession(app.current.id); });
  $('share-copy').addEventListener('click', async () => {
    $('share-status').textContent = (await copyShareLink()) ? 'Link copied to the clipboard.'
      : 'The browser did not allow copying: select the link and copy it.';
  });
  $('share-revoke').addEventListener('click', revokeShares);
  $('share-close').addEventListener('click', () => $('share-dialog').close());
  $('share-dialog').addEventListener('close', () => app.current?.view.term.focus());
}

/**
 * The page of a read-only link (#/share/ID; the server's link /?share=TOKEN
 * set the cookie and sent the browser here): that session, watched, and
 * nothing else. The server grants the link no more than that; the page
 * shows no list and sends no input or size either, and says it is read-only.
 */
async function initShare(id) {
  app.share = { id };
  document.body.classList.add('share-view');
  $('share-note').hidden = false;
  $('current-mode').textContent = 'read-only';
  $('empty').hidden = true;
  renderIndicator();
  if (!id) {
    showShareEnded('This read-only link is not valid',
      'It was revoked, or the session it showed has ended. Ask whoever shared it for a new link.');
    return;
  }
  let s;
  try {
    s = await api('GET', `/api/sessions/${encodeURIComponent(id)}`);
  } catch (err) {
    if (!app.unauthorized) showShareEnded('This read-only link does not work', err.message);
    return;
  }
  // A link is not told the command line (protocol.md): name or title, else this.
  if (!s.name && !s.title) s.name = 'Shared session';
  app.sessions.set(s.id, { s, at: performance.now() });
  openSession(s.id, 'watch');
}

/** The read-only link's page when there is nothing (more) to watch. */
function showShareEnded(title, text) {
  app.unauthorized = true;
  closeCurrent();
  document.body.classList.add('unauthorized');
  $('share-note').hidden = true;
  $('nokey-title').textContent = title;
  $('nokey-text').textContent = text;
  $('nokey-text').hidden = false;
  $('nokey-how').textContent = 'Ask whoever shared it for a new link.';
  $('nokey').hidden = false;
  $('empty').hidden = true;
  renderIndicator();
}

// ---------------------------------------------------------------------------
// Search in the scrollback (@xterm/addon-search) and font size

function isSearchShortcut(e) {
  return e.ctrlKey && e.shiftKey && !e.altKey && !e.metaKey && e.code === 'KeyF';
}

const SEARCH_DECORATIONS = {
  matchBackground: '#f2cc60', matchOverviewRuler: '#d4a72c',
  activeMatchBackground: '#ff9632', activeMatchColorOverviewRuler: '#ff9632',
};

function searchOptions(incremental) {
  return { incremental, decorations: SEARCH_DECORATIONS };
}

function openSearch() {
  if (!app.current) return;
  $('search').hidden = false;
  $('search-toggle').setAttribute('aria-expanded', 'true');
  const input = $('search-input');
  const sel = app.current.view.term.getSelection();
  if (sel && !sel.includes('\n')) input.value = sel;
  input.focus();
  input.select();
  scheduleFit();
}

/** Hides the search box and its highlights; `refocus` gives the keys back to the terminal. */
function closeSearch(refocus = true) {
  if ($('search').hidden) return;
  $('search').hidden = true;
  $('search-toggle').setAttribute('aria-expanded', 'false');
  $('search-count').textContent = '';
  const cur = app.current;
  if (cur) {
    cur.view.search.clearDecorations();
    if (refocus) cur.view.term.focus();
  }
  scheduleFit();
}

/** Finds the next (or previous) match of the box's text; the terminal scrolls to it. */
function findInScrollback(forward, incremental = false) {
  const cur = app.current;
  const text = $('search-input').value;
  if (!cur) return false;
  if (!text) {
    cur.view.search.clearDecorations();
    $('search-count').textContent = '';
    return false;
  }
  const found = forward ? cur.view.search.findNext(text, searchOptions(incremental))
    : cur.view.search.findPrevious(text, searchOptions(false));
  if (!found) $('search-count').textContent = 'No match';
  return found;
}

function showSearchCount({ resultIndex, resultCount }) {
  const el = $('search-count');
  if (!resultCount) el.textContent = $('search-input').value ? 'No match' : '';
  else el.textContent = resultIndex >= 0 ? `${resultIndex + 1} of ${resultCount}` : `${resultCount} matches`;
}

function initSearch() {
  $('search-toggle').addEventListener('click', () => ($('search').hidden ? openSearch() : closeSearch()));
  $('search').addEventListener('submit', (e) => { e.preventDefault(); findInScrollback(true); });
  $('search-input').addEventListener('input', () => findInScrollback(true, true));
  $('search-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      findInScrollback(!e.shiftKey);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      closeSearch();
    }
  });
  $('search-next').addEventListener('click', () => findInScrollback(true));
  $('search-prev').addEventListener('click', () => findInScrollback(false));
  $('search-close').addEventListener('click', () => closeSearch());
}

/** The remembered font size (px), within FONT_MIN..FONT_MAX. */
function fontSize() {
  let v = FONT_DEFAULT;
  try { v = Number(localStorage.getItem(FONT_KEY)) || FONT_DEFAULT; } catch { /* storage off */ }
  return Math.min(FONT_MAX, Math.max(FONT_MIN, Math.round(v)));
}

function setFontSize(size) {
  const v = Math.min(FONT_MAX, Math.max(FONT_MIN, size));
  try { localStorage.setItem(FONT_KEY, String(v)); } catch { /* storage off: this page only */ }
  renderFontSize(v);
  if (app.current) {
    app.current.view.term.options.fontSize = v;
    scheduleFit();
  }
}

function renderFontSize(v = fontSize()) {
  $('font-size').textContent = `${v}px`;
  // The number is hidden on narrow windows: the tooltips say it too.
  $('font-smaller').title = `Smaller text (now ${v}px)`;
  $('font-larger').title = `Larger text (now ${v}px)`;
  $('font-smaller').disabled = v <= FONT_MIN;
  $('font-larger').disabled = v >= FONT_MAX;
}

function initFontSize() {
  $('font-smaller').addEventListener('click', () => setFontSize(fontSize() - 1));
  $('font-larger').addEventListener('click', () => setFontSize(fontSize() + 1));
  renderFontSize();
  // Another tab of this browser changed it: follow.
  window.addEventListener('storage', (e) => {
    if (e.key !== FONT_KEY) return;
    renderFontSize();
    if (app.current) { app.current.view.term.options.fontSize = fontSize(); scheduleFit(); }
  });
}

// ---------------------------------------------------------------------------
// Clipboard

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

// ---------------------------------------------------------------------------
// Terminal view

function terminalTheme() { return DARK.matches ? THEMES.dark : THEMES.light; }

function createView(mode) {
  const wrap = $('terminal-wrap');
  const host = $('terminal');
  host.replaceChildren();
  wrap.hidden = false;
  $('empty').hidden = true;
  const term = new Terminal({
    fontFamily: '"DejaVu Sans Mono", "Cascadia Mono", "Menlo", "Consolas", "Liberation Mono", monospace',
    fontSize: fontSize(),
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
  search.onDidChangeResults((r) => showSearchCount(r));
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
    if (isListShortcut(e)) {
      if (e.type === 'keydown') focusList();
      return false;
    }
    if (isSearchShortcut(e)) {
      if (e.type === 'keydown') { e.preventDefault(); openSearch(); }
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
  const view = { term, fit, search, observer: null, renderer: 'dom' };
  useGpuRenderer(view);
  view.observer = new ResizeObserver(() => scheduleFit());
  view.observer.observe(wrap);
  return view;
}

/**
 * Draws with the GPU (@xterm/addon-webgl) where the browser has WebGL2,
 * else with xterm.js's DOM renderer; back to the DOM renderer when the GPU
 * context is lost (a driver reset, too many contexts). The addon throws
 * while loading when WebGL2 is missing.
 */
function useGpuRenderer(view) {
  let webgl;
  try {
    webgl = new WebglAddon();
    webgl.onContextLoss(() => {
      webgl.dispose();
      view.renderer = 'dom';
    });
    view.term.loadAddon(webgl);
    view.renderer = 'webgl';
  } catch {
    if (webgl) webgl.dispose();
    view.renderer = 'dom';
  }
}

function destroyView(view) {
  closeSearch(false);
  view.observer.disconnect();
  view.term.dispose();
  $('terminal').replaceChildren();
  $('terminal-wrap').hidden = true;
}

let fitQueued = false;
function scheduleFit() {
  if (fitQueued) return;
  fitQueued = true;
  requestAnimationFrame(() => { fitQueued = false; fitNow(); });
}

/** Proposed size of the pane in cells, or null when it cannot be trusted. */
function measure(view) {
  const wrap = $('terminal-wrap');
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
 */
function fitWatch(cur) {
  const { term } = cur.view;
  const wrap = $('terminal-wrap');
  if (wrap.hidden || document.visibilityState === 'hidden') return;
  const cs = getComputedStyle(wrap);
  const avail = wrap.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  // eslint-disable-next-line no-underscore-dangle
  const cell = term._core?._renderService?.dimensions?.css?.cell?.width;
  if (!cell || !(avail > 0)) return;
  const current = term.options.fontSize;
  const chosen = fontSize();
  const key = `${term.cols}/${Math.round(avail)}/${chosen}`;
  if (cur.view.watchKey !== key) {
    cur.view.watchKey = key;
    cur.view.watchCeiling = Infinity;
  }
  if (term.cols * cell > avail + 0.5) cur.view.watchCeiling = Math.min(cur.view.watchCeiling, current);
  let target = Math.floor((avail / (term.cols * (cell / current))) * 2) / 2; // in half pixels
  target = Math.min(chosen, target, cur.view.watchCeiling - 0.5);
  target = Math.max(FONT_MIN, target);
  if (target !== current) {
    term.options.fontSize = target;
    scheduleFit(); // measure again at the new size
  }
}

function fitNow() {
  const cur = app.current;
  if (cur && cur.mode === 'watch') {
    fitWatch(cur);
    return;
  }
  if (!cur || cur.mode !== 'control') return;
  const d = measure(cur.view);
  if (!d) return;
  if (d.cols !== cur.view.term.cols || d.rows !== cur.view.term.rows) cur.view.term.resize(d.cols, d.rows);
  const last = app.lastSentSize;
  if (cur.attachment.connected && (!last || last.cols !== d.cols || last.rows !== d.rows)) {
    if (cur.attachment.sendResize(d.cols, d.rows)) app.lastSentSize = d;
  }
}

DARK.addEventListener('change', () => {
  if (app.current) app.current.view.term.options.theme = terminalTheme();
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
  if (app.unauthorized) return;
  const cur = app.current;
  if (cur && cur.id === id && cur.mode === mode) {
    if (cur.attachment.ended && cur.endReason === 'superseded') return; // the banner offers Take over
    cur.view.term.focus();
    return;
  }
  closeCurrent();
  hideBanner();
  const view = preparedView || createView(mode);
  const entry = { id, mode, view, attachment: null, endReason: null };
  app.current = entry;
  app.lastSentSize = null;
  // A link's view is not a session to reopen in this tab's dashboard.
  if (!app.share) sessionStorage.setItem(TAB_KEY, JSON.stringify({ id, mode }));
  const e = app.sessions.get(id);
  setCurrentTitle(e ? sessionLabel(e.s) : id);
  $('current').hidden = false;
  $('current-mode').hidden = mode !== 'watch';
  document.body.classList.toggle('watching', mode === 'watch');
  if (NARROW.matches) setSidebar(false);

  entry.attachment = new Attachment({
    id,
    mode,
    term: view.term,
    // A large buffer: the server's screen + 200 lines, not the whole ring.
    screenLines: screenReplayLines(e ? e.s : null),
    // The pane's size with each attach: the session takes it before its
    // replay is drawn (a reattach from a smaller window is not garbled).
    attachSize: () => {
      if (app.current !== entry) return null;
      const d = measure(view);
      if (!d) return null;
      if (d.cols !== view.term.cols || d.rows !== view.term.rows) view.term.resize(d.cols, d.rows);
      return d;
    },
    onState: (state, detail) => onAttachmentState(entry, state, detail),
    onAttached: (msg) => {
      if (app.current !== entry) return;
      hideBanner();
      if (msg.title) setCurrentTitle(msg.title);
      if (mode === 'watch') {
        // A watcher shows the session at its own size, scaled down to the
        // pane's width if need be (fitWatch).
        if (msg.cols >= 1 && msg.rows >= 1) view.term.resize(msg.cols, msg.rows);
        scheduleFit();
      } else {
        app.lastSentSize = { cols: msg.cols, rows: msg.rows };
        fitNow();
      }
    },
    onLive: () => {
      if (app.current === entry && mode === 'control' && document.activeElement === document.body) view.term.focus();
    },
    onTitle: (title) => { if (app.current === entry) setCurrentTitle(title); },
    onCatchingUp: (on) => showCatchingUp(entry, on),
    onSize: (cols, rows) => {
      if (app.current !== entry) return;
      if (mode === 'watch') {
        if (cols >= 1 && rows >= 1) view.term.resize(cols, rows);
        scheduleFit();
      } else {
        app.lastSentSize = { cols, rows };
        scheduleFit();
      }
    },
  });
  entry.attachment.start();
  renderList();
  renderIndicator();
  view.term.focus();
}

function closeCurrent() {
  const cur = app.current;
  if (!cur) return;
  app.current = null;
  cur.attachment?.stop();
  destroyView(cur.view);
  $('current').hidden = true;
  showCatchingUp(null, false);
  document.body.classList.remove('watching', 'disconnected');
  setCurrentTitle('');
  hideBanner();
  sessionStorage.removeItem(TAB_KEY);
  renderList();
  renderIndicator();
}

function onAttachmentState(entry, state, detail) {
  if (app.current !== entry) return;
  if (state === 'offline') app.lostContact = true;
  if ((state === 'offline' || state === 'reconnecting') && detail.shutdown) showShutdownBanner();
  if (state === 'ended') {
    entry.endReason = detail.reason;
    showEndBanner(entry, detail);
  }
  renderIndicator();
  // "attached here" in the list follows our own state.
  const e = app.sessions.get(entry.id);
  const li = [...$('session-list').children].find((x) => x.dataset.id === entry.id);
  if (e && li) updateItem(li, e.s);
}

// ---------------------------------------------------------------------------
// "Catching up": the page is behind the session's output and has paused it
// (flow control) or let go of its socket until xterm.js has parsed what it
// holds. Shown at once; hidden a second after the last catch-up ends, so a
// flood that pauses and resumes many times a second shows one steady note
// instead of a flicker.

const CATCHUP_LINGER_MS = 1000;
let catchupTimer = null;

function showCatchingUp(entry, on) {
  clearTimeout(catchupTimer);
  catchupTimer = null;
  const note = $('catchup');
  if (on && entry && app.current === entry) {
    note.hidden = false;
  } else if (!entry || app.current !== entry) {
    note.hidden = true;
  } else {
    catchupTimer = setTimeout(() => { catchupTimer = null; note.hidden = true; }, CATCHUP_LINGER_MS);
  }
}

// ---------------------------------------------------------------------------
// Banner: close codes in plain words, each with its obvious next step.

function hideBanner() {
  $('banner').hidden = true;
  delete $('banner').dataset.reason;
  $('banner-actions').replaceChildren();
}

/**
 * Tether closed the connection with 1001 `server shutting down` (Quit in the
 * tray, SIGTERM, `systemctl --user stop`): say it in the server's words, as
 * the README's "What survives what" promises, while the attachment retries.
 */
function showShutdownBanner() {
  if ($('banner').dataset.reason === 'shutdown' && !$('banner').hidden) return;
  showBanner('warn', 'Tether shut down',
    'The server said “server shutting down”: Tether was quit or stopped, and its sessions end with it. '
    + 'Retrying until it is back…', []);
  $('banner').dataset.reason = 'shutdown';
}

function showBanner(kind, title, detail, actions) {
  const b = $('banner');
  delete b.dataset.reason;
  b.dataset.kind = kind;
  $('banner-title').textContent = title;
  $('banner-detail').textContent = detail || '';
  const box = $('banner-actions');
  box.replaceChildren();
  for (const [i, a] of actions.entries()) {
    const btn = el('button', i === 0 ? 'primary' : '', a.label);
    btn.type = 'button';
    btn.addEventListener('click', a.run);
    box.append(btn);
  }
  b.hidden = false;
  const first = box.querySelector('button');
  if (first) first.focus();
}

function exitText(exit) {
  if (!exit) return 'Process exited';
  if (exit.signal) return `Process exited (signal ${exit.signal})`;
  if (exit.code !== null && exit.code !== undefined) return `Process exited (code ${exit.code})`;
  return 'Process exited';
}

function showEndBanner(entry, detail) {
  if (app.share) {
    // A link's viewer can do nothing about an ending but read it.
    switch (detail.reason) {
      case 'exited':
        showBanner('info', exitText(detail.exit), 'The program ended; its output stays here.', []);
        return;
      case 'expired':
      case 'closed':
        showBanner('warn', 'Session ended', 'The session this link showed is gone.', []);
        return;
      case 'shutdown':
        showBanner('warn', 'Session ended', 'Tether was shut down (“server shutting down”), and the session ended with it.', []);
        return;
      case 'revoked':
        showShareEnded('This read-only link was revoked', 'The person who shared this session ended the link.');
        return;
      case 'unauthorized':
        showUnauthorized();
        return;
      default:
        break;
    }
  }
  const newSession = { label: 'New session', run: () => createSession($('new-command').value) };
  switch (detail.reason) {
    case 'superseded':
      showBanner('warn', 'Opened in another window',
        'This session is now controlled from another tab or window.',
        [
          { label: 'Take over', run: () => { hideBanner(); entry.endReason = null; entry.attachment.start(); } },
          { label: 'Watch here', run: () => { location.hash = `#/s/${encodeURIComponent(entry.id)}/watch`; } },
        ]);
      break;
    case 'exited':
      showBanner('info', exitText(detail.exit), 'Its output stays here until you close it.',
        [newSession, { label: 'Close', run: () => { location.hash = '#/'; } }]);
      break;
    case 'expired':
      showBanner('warn', 'Session expired', 'It was left detached longer than its time to live, or it was closed.',
        [newSession, { label: 'Close', run: () => { location.hash = '#/'; } }]);
      break;
    case 'closed':
      showBanner('warn', 'Session closed', 'It was killed from a list or the tray, or it expired.',
        [newSession, { label: 'Close', run: () => { location.hash = '#/'; } }]);
      break;
    case 'shutdown':
      showBanner('warn', 'Session ended', 'Tether was shut down (“server shutting down”), and the session ended with it.',
        [newSession, { label: 'Close', run: () => { location.hash = '#/'; } }]);
      break;
    case 'unauthorized':
    case 'revoked':
      showUnauthorized();
      break;
    default:
      showBanner('error', 'Connection error', detail.closeReason || `Closed with code ${detail.code}.`,
        [{ label: 'Reconnect', run: () => { hideBanner(); entry.attachment.start(); } }]);
  }
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
    if (NARROW.matches) setSidebar(true);
    $('new-command').focus();
    return;
  }
  // Open the terminal first so the session starts at the pane's real size.
  closeCurrent();
  hideBanner();
  const view = createView('control');
  const size = measure(view) || { cols: 80, rows: 24 };
  const body = { cols: size.cols, rows: size.rows };
  if (argv.length) body.command = argv;
  $('new-button').disabled = true;
  // The list as it was: the event that removes an evicted session may come
  // before the answer that names it.
  const listed = new Map(app.sessions);
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
    app.sessions.set(s.id, { s, at: performance.now() });
    openSession(s.id, 'control', view);
    history.pushState(null, '', `#/s/${encodeURIComponent(s.id)}`);
    $('new-command').value = '';
    renderList();
  } catch (e) {
    destroyView(view);
    showEmpty();
    if (!app.unauthorized) {
      // 503 says which: the session limit (and how to raise it), or out of
      // resources (try again later); the server's words are the message.
      const why = e.status === 503 ? `Cannot create a session: ${e.message}`
        : e.status === 422 ? `Cannot start it: ${e.message}`
        : `Cannot create a session: ${e.message}`;
      errEl.textContent = why;
      errEl.hidden = false;
      if (NARROW.matches) setSidebar(true);
    }
  } finally {
    $('new-button').disabled = false;
  }
}

function showEmpty() {
  $('empty').hidden = app.unauthorized;
  $('terminal-wrap').hidden = true;
}

// ---------------------------------------------------------------------------
// Routing

/**
 * decodeURIComponent that never throws: a malformed escape (an address cut
 * in the middle of a name's `%C3%A9`) is kept as it is, and then names no
 * session. The URIError left the page at "Connecting…" with no list when
 * opened with such an address, and a session open in the tab stayed there
 * under the new address (a new user's tryout).
 */
function decodeAddressPart(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function parseHash() {
  const m = /^#\/s\/([^/]+)(\/watch)?$/.exec(location.hash);
  if (!m) return null;
  return { id: decodeAddressPart(m[1]), mode: m[2] ? 'watch' : 'control' };
}

/**
 * What an id in the address names, in the order `tether` resolves it: itself
 * when it is a session's id, else the session with that name (`tether new -n
 * build` makes `#/s/build` work, as the README promises for names), else the
 * one session whose id starts with it (`tether list` shows 8-character
 * prefixes, and the CLI takes any unique prefix). Returns
 * { id } or { ambiguous: [ids] }; an unknown id is returned as it is and the
 * attach says it is gone (4404).
 */
function resolveId(id) {
  if (app.sessions.has(id)) return { id };
  const named = [...app.sessions.values()].filter((e) => e.s.name === id).map((e) => e.s.id);
  if (named.length === 1) return { id: named[0] };
  if (named.length > 1) return { ambiguous: named };
  const matches = [...app.sessions.keys()].filter((k) => k.startsWith(id));
  if (matches.length === 1) return { id: matches[0] };
  if (matches.length > 1) return { ambiguous: matches };
  return { id };
}

function route() {
  if (app.share) return; // a link's page shows its one session only
  const target = parseHash();
  if (target) {
    const r = resolveId(target.id);
    if (r.ambiguous) {
      closeCurrent();
      showEmpty();
      showBanner('warn', 'Which session?',
        `${r.ambiguous.length} sessions have ids that begin with "${target.id}": pick one from the list.`,
        [{ label: 'Close', run: () => { location.hash = '#/'; } }]);
      if (NARROW.matches) setSidebar(true);
      return;
    }
    if (r.id !== target.id) {
      // Show the full id, so a reload or a bookmark names this very session.
      history.replaceState(null, '',
        `#/s/${encodeURIComponent(r.id)}${target.mode === 'watch' ? '/watch' : ''}`);
    }
    openSession(r.id, target.mode);
  } else {
    closeCurrent();
    showEmpty();
    if (NARROW.matches) setSidebar(true);
  }
}

// ---------------------------------------------------------------------------
// Sidebar (a drawer on narrow windows)

function setSidebar(open) {
  document.body.classList.toggle('sidebar-open', open);
  document.body.classList.toggle('sidebar-closed', !open);
  $('sidebar-toggle').setAttribute('aria-expanded', String(open));
  scheduleFit();
}

function sidebarOpen() {
  return document.body.classList.contains('sidebar-open');
}

function isListShortcut(e) {
  return e.ctrlKey && e.shiftKey && !e.altKey && !e.metaKey && e.code === 'KeyS';
}

/** Keyboard: moves focus to the session list (the open session's entry first). */
function focusList() {
  if (app.unauthorized || app.share) return;
  setSidebar(true);
  const target = document.querySelector('.session.is-current .session-open')
    || document.querySelector('.session-open') || $('new-command');
  target.focus();
}

// ---------------------------------------------------------------------------
// Start

function init() {
  initSearch();
  initFontSize();
  initShareDialog();
  $('rename').addEventListener('click', () => { if (app.current) renameSession(app.current.id); });
  initNotifications();
  $('new-form').addEventListener('submit', (e) => {
    e.preventDefault();
    createSession($('new-command').value);
  });
  $('empty-new').addEventListener('click', () => createSession($('new-command').value));
  $('update-restart').addEventListener('click', restartForUpdate);
  $('sidebar-toggle').addEventListener('click', () => {
    setSidebar(!sidebarOpen());
    if (sidebarOpen()) $('new-command').focus();
  });
  document.addEventListener('keydown', (e) => {
    if (isListShortcut(e)) {
      e.preventDefault();
      focusList();
    } else if (isSearchShortcut(e) && app.current) {
      e.preventDefault();
      openSearch();
    } else if (e.key === 'Escape' && app.current && $('sidebar').contains(document.activeElement)) {
      // Back from the list to the terminal.
      if (NARROW.matches) setSidebar(false);
      app.current.view.term.focus();
    }
  });
  $('scrim').addEventListener('click', () => {
    setSidebar(false);
    app.current?.view.term.focus();
  });
  $('session-list').addEventListener('click', (e) => {
    const a = e.target.closest('a.session-open, a.watch, a.attach');
    if (a && NARROW.matches) setSidebar(false);
  });
  NARROW.addEventListener('change', () => setSidebar(!app.share && (!NARROW.matches || !app.current)));
  window.addEventListener('hashchange', route);
  window.addEventListener('popstate', route);

  // Reconnect at once when the network or the page comes back.
  const kick = () => app.current?.attachment.kick();
  window.addEventListener('online', () => {
    kick();
    if (!app.events && !app.unauthorized && !app.share) startEvents();
  });
  // The pane's ResizeObserver is the main trigger; the window's own resize is
  // a second one (headless Chromium has been seen to deliver the observer's
  // callback late or not at all after a viewport change).
  window.addEventListener('resize', () => scheduleFit());
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') { kick(); scheduleFit(); renderTimes(); }
  });
  window.addEventListener('pageshow', (e) => {
    if (e.persisted) app.current?.attachment.resume();
    kick();
  });
  window.addEventListener('pagehide', (e) => {
    // Closing or reloading the page: close the socket normally so the session
    // shows as detached at once; from the back/forward cache, pageshow resumes.
    if (e.persisted) app.current?.attachment.suspend();
    else app.current?.attachment.stop();
  });

  const share = /^#\/share(?:\/([^/]*))?$/.exec(location.hash);
  if (share) {
    // A read-only link's page: no list, no events, no routing (a changed
    // address is the dashboard again on the next load, and needs the key).
    setSidebar(false);
    initShare(share[1] ? decodeAddressPart(share[1]) : '');
    return;
  }
  setSidebar(!NARROW.matches);
  // No address but this tab had a session open (same tab, e.g. after the key
  // redirect dropped the fragment): reopen it. A new tab starts empty.
  if (!parseHash()) {
    try {
      const saved = JSON.parse(sessionStorage.getItem(TAB_KEY) || 'null');
      if (saved && saved.id) {
        history.replaceState(null, '',
          `#/s/${encodeURIComponent(saved.id)}${saved.mode === 'watch' ? '/watch' : ''}`);
      }
    } catch { /* ignore */ }
  }
  renderIndicator();
  refreshList().then(() => {
    if (app.unauthorized) return;
    startEvents();
    route();
  });
}

init();
