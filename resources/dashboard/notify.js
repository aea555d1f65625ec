// SPDX-License-Identifier: GPL-2.0-or-later
// Notifications: a session that exits while the tab is in the background, as
// the tray says it (with the user's permission, asked for by a button: a
// browser asks only after a click).

import { $ } from './dom.js';
import { exitText, sessionLabel } from './util.js';
import { sessionHash } from './router.js';

function notificationsSupported() {
  return typeof window.Notification === 'function' && window.isSecureContext;
}

function renderNotifyButton() {
  $('notify-enable').hidden = !notificationsSupported() || Notification.permission !== 'default';
}

/**
 * Notifies the running sessions of `before` that `list` shows exited, when
 * the tab is hidden and the user allowed it. Clicking one opens the session.
 * @param {Map<string, {s: object}>} before the list as it was (id -> entry)
 * @param {object[]} list the new list (SESSION objects)
 */
export function notifyExits(before, list) {
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
      location.hash = sessionHash(s.id);
      n.close();
    };
  }
}

/** Shows the "Notify me" button while the browser has not been asked, and asks on its click. */
export function initNotifications() {
  renderNotifyButton();
  $('notify-enable').addEventListener('click', async () => {
    try { await Notification.requestPermission(); } catch { /* refused or unsupported */ }
    renderNotifyButton();
  });
}
