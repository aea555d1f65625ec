// SPDX-License-Identifier: GPL-2.0-or-later
// The crash notice: the server that answers took its sessions over after a
// crash of the one before it (the session keeper held them;
// docs/protocol.md "Surviving a crash": the `server` event's
// `recovered_after_crash` and `crashed_at`). Shown until dismissed; a
// dismissal is remembered in this browser for that crash (the server's pid
// and `crashed_at`), so a reload or another tab does not show it again. A
// restart in place (no crash) reports 0 and hides it.

import { $ } from './dom.js';

const SEEN_KEY = 'tether.crashSeen';

/** What identifies one crash's recovery: "PID CRASHED_AT". */
export function crashKey(info) {
  return `${info.pid} ${info.crashed_at || ''}`;
}

function pad(n) {
  return String(n).padStart(2, '0');
}

/**
 * "Tether crashed at 14:05 and recovered 3 sessions" (local time; the date
 * too when it was not today; no time when the server does not know it).
 * @param {{recovered_after_crash: number, crashed_at: string|null}} info the `server` event
 * @param {Date} now
 */
export function crashText(info, now = new Date()) {
  const n = info.recovered_after_crash;
  const sessions = n === 1 ? '1 session' : `${n} sessions`;
  const at = info.crashed_at ? new Date(info.crashed_at) : null;
  if (!at || Number.isNaN(at.getTime())) return `Tether crashed and recovered ${sessions}`;
  const time = `${pad(at.getHours())}:${pad(at.getMinutes())}`;
  const sameDay = at.getFullYear() === now.getFullYear() && at.getMonth() === now.getMonth()
    && at.getDate() === now.getDate();
  const when = sameDay ? `at ${time}` : `on ${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} at ${time}`;
  return `Tether crashed ${when} and recovered ${sessions}`;
}

function seen() {
  try { return localStorage.getItem(SEEN_KEY); } catch { return null; }
}

/** @returns {{apply: (info: object|null) => void}} apply: shows a `server` event (docs/protocol.md) */
export function createCrashNotice() {
  let shown = null;

  function apply(info) {
    const bar = $('crash');
    if (!info || !(info.recovered_after_crash > 0) || seen() === crashKey(info)) {
      bar.hidden = true;
      shown = null;
      return;
    }
    shown = crashKey(info);
    $('crash-text').textContent = crashText(info);
    $('crash-text').title = info.crashed_at ? `Crashed at ${new Date(info.crashed_at).toString()}` : '';
    bar.hidden = false;
  }

  $('crash-dismiss').addEventListener('click', () => {
    $('crash').hidden = true;
    if (shown) {
      try { localStorage.setItem(SEEN_KEY, shown); } catch { /* storage off: this page only */ }
    }
  });
  // Dismissed in another tab of this browser: gone here too.
  window.addEventListener('storage', (e) => {
    if (e.key === SEEN_KEY && shown && e.newValue === shown) $('crash').hidden = true;
  });
  return { apply };
}
