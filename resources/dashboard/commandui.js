// SPDX-License-Identifier: GPL-2.0-or-later
// Commands and notifications in the page (issue 25; docs/dashboard.md):
//  - in the terminal, from the shell-integration marks in the session's own
//    output (OSC 133 / 633, read by xterm.js's parser as they are drawn): a
//    gutter mark per command coloured by its exit status, with a tooltip,
//    that selects the command's output when clicked; Ctrl+Shift+Up/Down jump
//    to the previous/next prompt;
//  - `notify` events of /api/events shown as browser notifications
//    (Notification API, with the user's permission) or in-page toasts, as
//    commands.js notifyDecision() rules;
//  - Notify next and Mute for the open session, over the terminal
//    (PATCH /api/sessions/{id} {"notify": ...}).
// The decisions and texts are commands.js's (pure, tested under node).

import { $, el } from './dom.js';
import {
  markKind, markTooltip, notifyDecision, notifyText, parseMark,
} from './commands.js';
import { askNotificationPermission } from './notify.js';
import { sessionHash } from './router.js';
import { sessionLabel } from './util.js';

// ---------------------------------------------------------------------------
// Marks in the terminal

/** term -> { prompts: IMarker[], commands: [...], pending } */
const marksOf = new WeakMap();

/**
 * Follows the marks in `term`'s output from now on. Each command is
 * { prompt: IMarker|null, output: IMarker|null, end: IMarker|null,
 *   endAtLineStart, commandLine, status, ended, decoration }.
 * @param {import('./vendor/xterm.js').Terminal} term
 */
export function followMarks(term) {
  const st = { prompts: [], commands: [], prompt: null, commandLine: '', running: null };
  marksOf.set(term, st);
  const marker = () => term.registerMarker(0);
  const handler = (ident) => (data) => {
    const m = parseMark(ident, data);
    if (!m) return false;
    switch (m.type) {
      case 'prompt':
        // A prompt while a command runs ends it without a status (the server's rule).
        if (st.running) finish(term, st, null);
        st.prompt = marker();
        st.commandLine = '';
        if (st.prompt) st.prompts.push(st.prompt);
        trim(st.prompts);
        break;
      case 'commandline':
        st.commandLine = m.commandLine;
        break;
      case 'output': {
        if (st.running) finish(term, st, null);
        const c = {
          prompt: st.prompt, output: marker(), end: null, endAtLineStart: false,
          commandLine: st.commandLine, status: null, ended: false, decoration: null,
        };
        st.running = c;
        st.commands.push(c);
        trim(st.commands);
        decorate(term, c);
        break;
      }
      case 'end':
        if (st.running) finish(term, st, m.status);
        break;
      default:
        break;
    }
    return false; // xterm.js's own handlers (none for these) may run too
  };
  term.parser.registerOscHandler(133, handler(133));
  term.parser.registerOscHandler(633, handler(633));
}

/** Keeps at most 1000 entries (xterm.js's scrollback is 10,000 lines). */
function trim(list) {
  while (list.length > 1000) {
    const old = list.shift();
    if (old && old.decoration) old.decoration.dispose();
  }
}

function finish(term, st, status) {
  const c = st.running;
  st.running = null;
  c.ended = true;
  c.status = status;
  c.end = term.registerMarker(0);
  c.endAtLineStart = term.buffer.active.cursorX === 0;
  decorate(term, c);
}

/** The gutter mark of command `c` on its prompt's line (else its output's). */
function decorate(term, c) {
  const anchor = c.prompt && !c.prompt.isDisposed ? c.prompt : c.output;
  if (!anchor || anchor.isDisposed) return;
  if (c.decoration) c.decoration.dispose();
  const kind = markKind(c);
  const colour = { ok: '#2e9e4f', bad: '#d93b42', unknown: '#8a929c', running: '#2f6feb' }[kind];
  const d = term.registerDecoration({
    marker: anchor, x: 0, width: 1, layer: 'top', overviewRulerOptions: { color: colour, position: 'left' },
  });
  c.decoration = d || null;
  if (!d) return;
  d.onRender((elt) => {
    elt.classList.add('cmd-mark');
    elt.dataset.kind = kind;
    elt.title = markTooltip(c);
    if (elt.dataset.wired) return;
    elt.dataset.wired = 'yes';
    elt.addEventListener('mousedown', (e) => {
      // The terminal below would start a selection of its own.
      e.preventDefault();
      e.stopPropagation();
      if (c.ended) selectOutput(term, c);
    });
  });
}

/**
 * Selects the lines of command `c`'s output: from its output mark's line to
 * its end mark's (the line before it when the end came at a line's start).
 * False when there is none (no output, or it left the scrollback).
 */
export function selectOutput(term, c) {
  if (!c.output || !c.end || c.output.isDisposed || c.end.isDisposed) return false;
  const first = c.output.line;
  const last = c.end.line - (c.endAtLineStart ? 1 : 0);
  if (first < 0 || last < first) return false;
  term.selectLines(first, last);
  return true;
}

/**
 * Ctrl+Shift+Up / Ctrl+Shift+Down in the terminal: scrolls to the previous
 * or next prompt. True when the key was one of them (the caller keeps it
 * from the program: terminals send the same bytes as Ctrl+Up / Ctrl+Down).
 * @param {import('./vendor/xterm.js').Terminal} term
 * @param {KeyboardEvent} e
 */
export function handleMarkKey(term, e) {
  if (!term || !e.ctrlKey || !e.shiftKey || e.altKey || e.metaKey) return false;
  if (e.key !== 'ArrowUp' && e.key !== 'ArrowDown') return false;
  if (e.type === 'keydown') {
    e.preventDefault();
    jumpToPrompt(term, e.key === 'ArrowUp' ? -1 : 1);
  }
  return true;
}

/**
 * Scrolls so that the previous (`dir` -1) or next (+1) prompt above or below
 * the top of the view is the view's first line. False when there is none.
 */
export function jumpToPrompt(term, dir) {
  const st = marksOf.get(term);
  if (!st) return false;
  const top = term.buffer.active.viewportY;
  const lines = st.prompts.filter((m) => !m.isDisposed && m.line >= 0).map((m) => m.line);
  const target = dir < 0 ? lines.filter((l) => l < top).pop() : lines.find((l) => l > top);
  if (target === undefined) return false;
  term.scrollToLine(target);
  return true;
}

/** The commands the page saw in `term` (for tests): [{commandLine, status, ended, line}]. */
export function commandsOf(term) {
  const st = marksOf.get(term);
  if (!st) return [];
  return st.commands.map((c) => ({
    commandLine: c.commandLine,
    status: c.status,
    ended: c.ended,
    line: c.prompt && !c.prompt.isDisposed ? c.prompt.line : (c.output ? c.output.line : -1),
  }));
}

// ---------------------------------------------------------------------------
// Notifications

function canNotify() {
  return typeof window.Notification === 'function' && window.isSecureContext
    && Notification.permission === 'granted';
}

function toastBox() {
  let box = $('toasts');
  if (!box) {
    box = el('div', 'toasts');
    box.id = 'toasts';
    box.setAttribute('role', 'status');
    box.setAttribute('aria-live', 'polite');
    document.body.append(box);
  }
  return box;
}

/** An in-page note: title, body, Open (the session) and ✕; gone after 15 s of being seen. */
function showToast(title, body, id) {
  const t = el('div', 'toast');
  const text = el('div', 'toast-text');
  text.append(el('strong', '', title), el('span', '', body));
  const open = el('a', 'button small', 'Open');
  open.href = sessionHash(id);
  const close = el('button', 'small', '✕');
  close.type = 'button';
  close.setAttribute('aria-label', 'Dismiss');
  const remove = () => t.remove();
  open.addEventListener('click', remove);
  close.addEventListener('click', remove);
  t.append(text, open, close);
  const box = toastBox();
  box.append(t);
  while (box.children.length > 4) box.firstChild.remove();
  const later = () => setTimeout(remove, 15000);
  if (document.visibilityState === 'visible') later();
  else document.addEventListener('visibilitychange', later, { once: true });
}

/**
 * The notifications of this page: `notify` events shown or not as
 * notifyDecision() says.
 * @param {{
 *   sessions: () => Map<string, {s: object}>,   // the list (id -> entry)
 *   current: () => ({id: string, attachment: {connected: boolean}}|null),
 * }} o
 */
export function createNotifier(o) {
  /** What was shown, newest last (tests read it): {how, title, body, session}. */
  const shown = [];
  return {
    shown,
    /** A `command` or `notify` event of /api/events. */
    onEvent(name, ev) {
      if (name !== 'notify' || !ev || typeof ev.session !== 'string') return;
      const e = o.sessions().get(ev.session);
      const cur = o.current();
      const here = !!(cur && cur.id === ev.session && cur.attachment && cur.attachment.connected);
      const how = notifyDecision(ev, {
        visible: document.visibilityState === 'visible',
        openId: cur ? cur.id : null,
        attachedHere: here,
        viewers: e ? Number(e.s.viewers) || 0 : 0,
      });
      if (how === 'none') return;
      const label = e ? sessionLabel(e.s) : sessionLabel({ name: ev.name || ev.session.slice(0, 8) });
      const { title, body } = notifyText(ev, label);
      if (how === 'system' && canNotify()) {
        const n = new Notification(title, {
          body,
          // One per session and kind: a new one replaces the last.
          tag: `tether-${ev.kind}-${ev.session}`,
          icon: 'icon.svg',
        });
        n.onclick = () => {
          window.focus();
          location.hash = sessionHash(ev.session);
          n.close();
        };
        shown.push({ how: 'system', title, body, session: ev.session });
      } else {
        showToast(title, body, ev.session);
        shown.push({ how: 'toast', title, body, session: ev.session });
      }
      while (shown.length > 50) shown.shift();
    },
  };
}

// ---------------------------------------------------------------------------
// Notify next and Mute for the open session

/**
 * Adds Notify next and Mute to the terminal's tools (over the terminal,
 * beside Rename; from 1000 px) and, for narrower windows, under the session
 * list ("This session:", commands.css shows one pair or the other), and
 * returns update(session): shows them for `session` (a SESSION, or null for
 * none) and its `notify` (aria-pressed).
 * @param {(id: string, notify: {muted?: boolean, next?: boolean}) => Promise<void>} patch
 */
export function createNotifyButtons(patch) {
  let shown = null;
  const pressed = (b) => b.getAttribute('aria-pressed') === 'true';
  const pair = () => {
    const next = el('button', 'small notify-next', 'Notify next');
    next.type = 'button';
    next.title = 'Notify me when the next command in this session finishes (or the session exits), even if it is quick';
    const mute = el('button', 'small notify-mute', 'Mute');
    mute.type = 'button';
    mute.title = 'No notifications from this session (but the one Notify next asks for)';
    next.addEventListener('click', async () => {
      if (!shown) return;
      const on = !pressed(next);
      if (on) await askNotificationPermission(); // once: a click is when a browser may ask
      await patch(shown.id, { next: on });
    });
    mute.addEventListener('click', async () => {
      if (!shown) return;
      await patch(shown.id, { muted: !pressed(mute) });
    });
    const alerts = el('button', 'small notify-alerts', 'Alerts');
    alerts.type = 'button';
    alerts.title = 'Activity and silence alerts for this session (tmux\'s monitor-activity and monitor-silence)';
    alerts.setAttribute('aria-haspopup', 'dialog');
    alerts.addEventListener('click', () => { if (shown) dialog.open(shown); });
    return { next, mute, alerts };
  };
  const dialog = createAlertsDialog(patch);
  const top = pair();
  top.next.id = 'notify-next';
  top.mute.id = 'notify-mute';
  top.alerts.id = 'notify-alerts';
  const tools = document.querySelector('.term-tools');
  if (tools) tools.prepend(top.next, top.mute, top.alerts);
  const side = pair();
  const box = el('div', 'sidebar-notify');
  box.append(el('span', '', 'This session:'), side.next, side.mute, side.alerts);
  const list = $('session-list');
  if (list) list.after(box);
  return (s) => {
    shown = s && s.state !== 'exited' && s.notify ? s : null;
    box.hidden = !shown;
    dialog.update(shown);
    for (const { next, mute, alerts } of [top, side]) {
      next.hidden = !shown;
      mute.hidden = !shown;
      alerts.hidden = !shown;
      if (!shown) continue;
      next.setAttribute('aria-pressed', String(!!s.notify.next));
      mute.setAttribute('aria-pressed', String(!!s.notify.muted));
      next.textContent = s.notify.next ? 'Notifying next' : 'Notify next';
      mute.textContent = s.notify.muted ? 'Muted' : 'Mute';
      const on = !!s.notify.activity || Number(s.notify.silence) > 0;
      alerts.setAttribute('aria-pressed', String(on));
      alerts.textContent = on ? 'Alerts on' : 'Alerts';
    }
  };
}

/** Silence thresholds the dialog offers, in seconds (0: off). Another value set elsewhere is added to them. */
export const SILENCE_CHOICES = [0, 10, 30, 60, 300, 900, 3600];

function silenceLabel(secs) {
  if (!secs) return 'Off';
  if (secs % 3600 === 0) return `${secs / 3600} h`;
  if (secs % 60 === 0) return `${secs / 60} min`;
  return `${secs} s`;
}

/**
 * The Alerts dialog (#alerts-dialog) of the open session: its activity alert
 * (a checkbox) and silence alert (a threshold), as the SESSION's
 * `notify.activity` and `notify.silence` (protocol.md, "Commands and
 * notifications"). A change is sent at once (PATCH); the dialog then shows
 * the session as the server answered.
 * @param {(id: string, notify: object) => Promise<void>} patch
 * @returns {{open: (s: object) => void, update: (s: object|null) => void}}
 */
function createAlertsDialog(patch) {
  const dlg = el('dialog', 'alerts-dialog');
  dlg.id = 'alerts-dialog';
  dlg.setAttribute('aria-labelledby', 'alerts-title');
  const title = el('h2', '', 'Alerts');
  title.id = 'alerts-title';
  const what = el('p', '', '');
  const activityRow = el('label', 'alerts-row');
  const activity = el('input');
  activity.type = 'checkbox';
  activity.id = 'alerts-activity';
  activityRow.append(activity, el('span', '', 'Activity: notify when it prints something while nobody watches it '
    + '(once, until someone has looked)'));
  const silenceRow = el('label', 'alerts-row');
  const silence = el('select');
  silence.id = 'alerts-silence';
  silenceRow.append(el('span', '', 'Silence: notify when it has printed nothing for'), silence);
  const note = el('p', 'alerts-note', 'Alerts come as browser notifications (or a note in this page) and '
    + 'from the tray; Mute silences them too.');
  const actions = el('div', 'alerts-actions');
  const close = el('button', '', 'Close');
  close.type = 'button';
  close.addEventListener('click', () => dlg.close());
  actions.append(close);
  dlg.append(title, what, activityRow, silenceRow, note, actions);
  document.body.append(dlg);
  let session = null;
  let busy = false;

  function fillSilence(current) {
    const values = SILENCE_CHOICES.includes(current) ? SILENCE_CHOICES
      : [...SILENCE_CHOICES, current].sort((a, b) => a - b);
    silence.replaceChildren(...values.map((v) => {
      const o = el('option', '', silenceLabel(v));
      o.value = String(v);
      return o;
    }));
    silence.value = String(current);
  }
  function update(s) {
    session = s;
    if (!s) {
      if (dlg.open) dlg.close();
      return;
    }
    if (!dlg.open || busy) return;
    what.textContent = `For “${sessionLabel(s)}”, while no one is attached to it.`;
    activity.checked = !!s.notify.activity;
    fillSilence(Number(s.notify.silence) || 0);
  }
  async function send(notify) {
    if (!session) return;
    busy = true;
    activity.disabled = true;
    silence.disabled = true;
    try {
      await patch(session.id, notify);
    } finally {
      busy = false;
      activity.disabled = false;
      silence.disabled = false;
      update(session);
    }
  }
  // Turning one on is when a browser may ask for the notification permission (once).
  activity.addEventListener('change', async () => {
    const on = activity.checked;
    if (on) await askNotificationPermission();
    await send({ activity: on });
  });
  silence.addEventListener('change', async () => {
    const secs = Number(silence.value);
    if (secs > 0) await askNotificationPermission();
    await send({ silence: secs });
  });
  return {
    open(s) {
      if (!dlg.open) dlg.showModal();
      update(s);
      activity.focus();
    },
    update,
  };
}
