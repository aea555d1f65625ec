// SPDX-License-Identifier: GPL-2.0-or-later
// Commands and notifications, the pure part (no DOM, no xterm.js; tested
// under node in tests/js/commands.test.mjs): a session's shell state in words
// for the list, the shell-integration marks as xterm.js's parser hands them
// over (OSC 133 / 633), and whether and how a `notify` event of /api/events
// is shown (docs/protocol.md, "Commands and notifications").

import { displayText, exitText, formatDuration } from './util.js';

/**
 * The shell state of a SESSION object in words, for its row in the list:
 * "running `make -j8` for 12m", "idle, last exit 2", "idle" at a first
 * prompt; '' without shell integration (state "unknown") or for an exited
 * session. `kind` is 'running', 'ok' (last exit 0 or unknown) or 'bad'.
 * @param {{state?: string, shell?: {state: string, command: object|null}}} s SESSION
 * @param {number} [elapsedMs] time since the object was received (a running
 *   command's duration counts on)
 * @returns {{text: string, kind: string}}
 */
export function shellStatus(s, elapsedMs = 0) {
  const shell = s && s.shell;
  if (!shell || s.state === 'exited' || (shell.state !== 'running' && shell.state !== 'prompt')) {
    return { text: '', kind: '' };
  }
  const c = shell.command;
  const line = c && c.command_line ? displayText(c.command_line) : '';
  if (shell.state === 'running') {
    if (!c || !c.running) return { text: 'running a command', kind: 'running' };
    const secs = ((Number(c.duration_ms) || 0) + Math.max(0, elapsedMs)) / 1000;
    return { text: `running ${line ? `\`${line}\` ` : ''}for ${formatDuration(secs)}`, kind: 'running' };
  }
  if (!c) return { text: 'idle', kind: 'ok' };
  if (c.exit_status === null || c.exit_status === undefined) return { text: 'idle', kind: 'ok' };
  return { text: `idle, last exit ${c.exit_status}`, kind: c.exit_status === 0 ? 'ok' : 'bad' };
}

/**
 * The session's notification settings in words ('' when none): "notify
 * next", "muted", "activity alert", "silence alert 30s".
 * @param {{notify?: {muted?: boolean, next?: boolean, activity?: boolean, silence?: number}}} s SESSION
 */
export function notifyStatus(s) {
  const n = (s && s.notify) || {};
  return [
    n.next ? 'notify next' : '',
    n.muted ? 'muted' : '',
    n.activity ? 'activity alert' : '',
    n.silence > 0 ? `silence alert ${formatDuration(n.silence)}` : '',
  ].filter(Boolean).join(', ');
}

/** VS Code's escaping of OSC 633 ; E: `\\` and `\xNN`. */
function unescape633(text) {
  return text.replace(/\\(\\|x([0-9a-fA-F]{2}))/g, (m, what, hex) => (hex ? String.fromCharCode(parseInt(hex, 16)) : '\\'));
}

/**
 * One shell-integration mark as xterm.js's OSC handler gets it: `ident` 133
 * or 633, `data` what follows "133;" ("A", "D;2", "E;make -j8"). Returns
 * {type: 'prompt'|'input'|'output'|'end'|'commandline', status?, commandLine?}
 * or null for anything else (633 P, unknown letters).
 * @param {number} ident
 * @param {string} data
 */
export function parseMark(ident, data) {
  if (ident !== 133 && ident !== 633) return null;
  const semi = data.indexOf(';');
  const letter = semi < 0 ? data : data.slice(0, semi);
  const rest = semi < 0 ? '' : data.slice(semi + 1);
  switch (letter) {
    case 'A': return { type: 'prompt' };
    case 'B': return { type: 'input' };
    case 'C': return { type: 'output' };
    case 'D': {
      // "D;STATUS" (0..255), else no status (the server's rule).
      const status = /^\d{1,3}(;|$)/.test(rest) ? parseInt(rest, 10) : null;
      return { type: 'end', status: status !== null && status <= 255 ? status : null };
    }
    case 'E':
      if (ident !== 633) return null;
      return { type: 'commandline', commandLine: unescape633(rest.split(';')[0]) };
    default: return null;
  }
}

/**
 * The tooltip of a command's gutter mark.
 * @param {{commandLine: string, status: number|null, ended: boolean}} c
 */
export function markTooltip(c) {
  const line = c.commandLine ? displayText(c.commandLine) : 'command';
  let status = 'running';
  if (c.ended) status = c.status === null || c.status === undefined ? 'ended' : `exit ${c.status}`;
  return `${line}\n${status}${c.ended ? ' · click to select its output' : ''}`;
}

/** 'ok' (exit 0), 'bad' (another status), 'unknown' (ended, no status) or 'running'. */
export function markKind(c) {
  if (!c.ended) return 'running';
  if (c.status === null || c.status === undefined) return 'unknown';
  return c.status === 0 ? 'ok' : 'bad';
}

/**
 * How a `notify` event is shown on this page: 'none', 'toast' (in the page)
 * or 'system' (a browser notification, else a toast). Nothing for the
 * session this page shows while the page is visible. Otherwise a
 * `requested` event ("notify when the next command finishes") always; any
 * other only when nobody else watches the session: the server's `watched`
 * is false, or the only viewer is this page's own (a hidden tab, or the
 * list shown over it). A visible page gets a toast, a hidden one a system
 * notification.
 * @param {{session: string, watched: boolean, requested?: boolean}} ev
 * @param {{visible: boolean, openId: string|null, attachedHere: boolean, viewers: number}} ctx
 *   `openId` the session the page shows (null: the list); `attachedHere`
 *   this page holds a viewer of ev.session; `viewers` the session's
 *   `viewers` in the last list
 */
export function notifyDecision(ev, ctx) {
  if (ctx.visible && ctx.openId === ev.session) return 'none';
  const othersWatch = ev.watched && !(ctx.attachedHere && ctx.viewers <= 1);
  if (!ev.requested && othersWatch) return 'none';
  return ctx.visible ? 'toast' : 'system';
}

/**
 * Title and body of the notification of a `notify` event, for a session
 * shown as `label` (already through displayText()).
 * @param {{kind: string, text: string, command: object|null}} ev
 * @param {string} label
 * @returns {{title: string, body: string}}
 */
export function notifyText(ev, label) {
  const text = displayText(ev.text || '');
  switch (ev.kind) {
    case 'command': {
      const c = ev.command || {};
      const status = c.exit_status === null || c.exit_status === undefined ? 'finished' : `exit ${c.exit_status}`;
      const took = typeof c.duration_ms === 'number' ? ` after ${formatDuration(c.duration_ms / 1000)}` : '';
      return { title: `${label}: ${text || 'command'} finished`, body: `${status}${took}` };
    }
    case 'exit': {
      const code = /^exited with code (-?\d+)$/.exec(ev.text || '');
      const signal = /^killed by signal (\d+)$/.exec(ev.text || '');
      return {
        title: `${label} exited`,
        body: exitText(code ? { code: Number(code[1]) } : signal ? { signal: Number(signal[1]) } : null),
      };
    }
    case 'bell': return { title: label, body: 'Bell' };
    case 'activity': return { title: `${label}: activity`, body: 'Output while nobody watched' };
    case 'silence': return { title: `${label}: silence`, body: text };
    default: return { title: label, body: text };
  }
}
