// SPDX-License-Identifier: GPL-2.0-or-later
// The session list in the sidebar (#session-list): one row per SESSION object
// of the live list, updated in place. expires_in and idle_seconds are as of
// the event that brought them: renderTimes() counts them on locally.

import { $, el } from './dom.js';
import {
  commandLine, displayText, formatBytes, formatCountdown, formatDuration, sessionLabel,
} from './util.js';
import { sessionHash } from './router.js';
import { state as sessionState } from './sessiontext.js';
import { notifyStatus, shellStatus } from './commands.js';

/**
 * The open session as the list needs it: { id, mode, attachment } (the
 * attachment's `connected` and `offset`), or null.
 * @typedef {{id: string, mode: string, attachment: {connected: boolean, offset: number|null}}|null} Current
 */

/**
 * Draws the list. `sessions` maps id -> { s: SESSION, at: performance.now()
 * when received }, in the server's order.
 * @param {Map<string, {s: object, at: number}>} sessions
 * @param {Current} current
 * @param {{onKill: (id: string) => void, onRevive: (id: string) => void,
 *   onRow?: (id: string, mini: HTMLElement) => void}} actions
 *   a row's Kill / Remove / Forget, and Revive (an ended session); a new
 *   row's miniature box
 * @param {Set<string>} [onScreen] the sessions the pane shows live (the
 *   open one, the tiles): their rows have no miniature (class is-shown)
 */
export function renderList(sessions, current, actions, onScreen = new Set()) {
  const ul = $('session-list');
  const existing = new Map([...ul.children].map((li) => [li.dataset.id, li]));
  let i = 0;
  for (const { s } of sessions.values()) {
    let li = existing.get(s.id);
    if (!li) li = createItem(s.id, actions);
    existing.delete(s.id);
    updateItem(li, s, current);
    li.classList.toggle('is-shown', onScreen.has(s.id));
    if (ul.children[i] !== li) ul.insertBefore(li, ul.children[i] || null);
    i++;
  }
  for (const li of existing.values()) li.remove();
  $('session-count').textContent = sessions.size ? String(sessions.size) : '';
  $('list-empty').hidden = sessions.size > 0;
  renderTimes(sessions, current);
}

/** Redraws the row of session `id` (its state seen from here changed). */
export function renderRow(id, sessions, current) {
  const e = sessions.get(id);
  const li = [...$('session-list').children].find((x) => x.dataset.id === id);
  if (e && li) updateItem(li, e.s, current);
}

function createItem(id, actions) {
  const li = el('li', 'session');
  li.dataset.id = id;
  const open = el('a', 'session-open');
  open.href = sessionHash(id);
  // The name has the first line to itself, beside the actions: with the
  // state badge there too, a row with Attach left the name 32 px ("pag…").
  const head = el('span', 'session-head');
  head.append(el('span', 'session-title'));
  const cmd = el('span', 'session-cmd');
  // The shell's state (commands.js): "running `make` for 12m", "idle, last exit 2".
  const shell = el('span', 'session-shell');
  const meta = el('span', 'session-meta');
  meta.append(el('span', 'badge state'), el('span', 'viewer'), el('span', 'idle'), el('span', 'expiry'));
  const buf = el('span', 'buffer');
  const bar = el('span', 'buffer-bar');
  bar.append(el('span', 'buffer-fill'));
  buf.append(bar, el('span', 'buffer-text'));
  // The live miniature of its screen (miniatures.js fills it): a picture, not text to read out.
  const mini = el('div', 'mini');
  mini.setAttribute('aria-hidden', 'true');
  open.append(head, cmd, shell, meta, buf, mini);

  const buttons = el('div', 'session-actions');
  // The row attaches too; an explicit action says so (issue 14).
  const attach = el('a', 'button small attach', 'Attach');
  attach.href = sessionHash(id);
  const watch = el('a', 'button small watch', 'Watch');
  watch.href = sessionHash(id, 'watch');
  const kill = el('button', 'small danger kill', 'Kill');
  kill.type = 'button';
  kill.addEventListener('click', () => actions.onKill(id));
  // An ended session (its host went away: protocol.md, Ended sessions).
  const revive = el('button', 'small revive', 'Revive');
  revive.type = 'button';
  revive.hidden = true;
  revive.addEventListener('click', () => actions.onRevive(id));
  buttons.append(attach, watch, revive, kill);
  li.append(open, buttons);
  actions.onRow?.(id, mini);
  return li;
}

function viewerText(s, current) {
  const here = current && current.id === s.id && current.attachment.connected;
  if (s.attached) {
    if (here && current.mode === 'control') return 'attached here';
    const kind = { browser: 'in a browser', local: 'in a window', cli: 'in a terminal' }[s.viewer_kind];
    return kind ? `attached ${kind}` : 'attached';
  }
  if (s.viewers > 0) return `${s.viewers} watching`;
  return 'detached';
}

function updateItem(li, s, current) {
  const label = sessionLabel(s);
  const cmd = commandLine(s);
  const isCurrent = current && current.id === s.id;
  li.classList.toggle('is-current', !!isCurrent);
  const ended = s.state === 'ended';
  li.classList.toggle('is-exited', s.state === 'exited' || ended);
  li.classList.toggle('is-attached', !!s.attached);
  const open = li.querySelector('.session-open');
  if (isCurrent && current.mode === 'control') open.setAttribute('aria-current', 'page');
  else open.removeAttribute('aria-current');
  open.title = `${cmd}${s.cwd ? `\nin ${displayText(s.cwd)}` : ''}${s.pid ? `\npid ${s.pid}` : ''}`;
  li.querySelector('.session-title').textContent = label;
  // The command line when the label is not it, and where the session was
  // started: three unnamed shells read "bash · detached" three times.
  const cmdEl = li.querySelector('.session-cmd');
  cmdEl.textContent = [cmd && cmd !== label ? cmd : '', s.cwd ? `in ${displayText(s.cwd)}` : ''].filter(Boolean).join(' ');
  cmdEl.hidden = !cmdEl.textContent;
  const state = li.querySelector('.state');
  if (ended) {
    state.textContent = sessionState(s);
    state.dataset.kind = 'bad';
  } else if (s.state === 'exited') {
    state.textContent = sessionState(s);
    state.dataset.kind = s.exit_code === 0 && !s.exit_signal ? 'ok' : 'bad';
  } else {
    state.textContent = 'running';
    state.dataset.kind = 'running';
  }
  const viewer = li.querySelector('.viewer');
  viewer.textContent = viewerText(s, current);
  viewer.dataset.attached = s.attached ? 'yes' : 'no';
  renderBuffer(li, s, current);
  li.querySelector('.buffer').title = 'Output kept for replay (the ring buffer): the oldest bytes give way when it is full.';
  const kill = li.querySelector('.kill');
  kill.textContent = ended ? 'Forget' : s.state === 'exited' ? 'Remove' : 'Kill';
  const revive = li.querySelector('.revive');
  revive.hidden = !ended;
  revive.setAttribute('aria-label', `Revive ${label}`);
  kill.setAttribute('aria-label', `${kill.textContent} ${label}`);
  li.querySelector('.watch').setAttribute('aria-label', `Watch ${label} read-only`);
  li.querySelector('.watch').hidden = s.state === 'exited' || ended;
  const attach = li.querySelector('.attach');
  attach.setAttribute('aria-label', `Attach to ${label}`);
  // Attached here already, or exited (the row still opens its output).
  attach.hidden = s.state === 'exited' || ended || (isCurrent && current.mode === 'control');
  li.classList.toggle('has-attach', !attach.hidden);
}

/** The shell's state and the notification settings, under the command line. */
function renderShell(li, s, elapsedMs) {
  const shellEl = li.querySelector('.session-shell');
  const { text, kind } = shellStatus(s, elapsedMs);
  const notify = s.state === 'exited' ? '' : notifyStatus(s);
  shellEl.textContent = [text, notify].filter(Boolean).join(' · ');
  shellEl.dataset.kind = kind;
  shellEl.hidden = !shellEl.textContent;
}

/**
 * The ring buffer meter. Output causes no list event (protocol.md, Live
 * list), so the `buffer_bytes` of an event is as of that event. For the
 * session open here, the bytes received since then (the attachment's offset
 * past the event's `offset`) went into the ring too: the meter follows them,
 * up to the capacity.
 */
function renderBuffer(li, s, current) {
  const cap = Number(s.buffer_capacity) || 0;
  let used = Number(s.buffer_bytes) || 0;
  if (current && current.id === s.id && current.attachment && current.attachment.offset !== null
      && typeof s.offset === 'number' && current.attachment.offset > s.offset) {
    used += current.attachment.offset - s.offset;
  }
  if (cap > 0) used = Math.min(used, cap);
  const frac = cap > 0 ? used / cap : 0;
  // CSSOM, not a style="" attribute: the CSP refuses inline style attributes.
  li.querySelector('.buffer-fill').style.width = `${(frac * 100).toFixed(1)}%`;
  li.querySelector('.buffer-text').textContent = cap ? `${formatBytes(used)} of ${formatBytes(cap)}` : '';
}

/** Updates the counting fields (idle, expiry) from the last event plus the time since. */
export function renderTimes(sessions, current) {
  const now = performance.now();
  for (const li of $('session-list').children) {
    const e = sessions.get(li.dataset.id);
    if (!e) continue;
    const { s } = e;
    const elapsed = (now - e.at) / 1000;
    if (current && current.id === s.id) renderBuffer(li, s, current);
    renderShell(li, s, now - e.at);
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
