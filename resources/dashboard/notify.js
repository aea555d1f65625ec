// SPDX-License-Identifier: GPL-2.0-or-later
// Notifications: the button that asks for the browser's permission (a
// browser asks only after a click). What is notified, and when (a command
// finished, a bell or a program's message, a session exited, while nobody
// looks), is commandui.js's, from the `notify` events of /api/events.

import { $ } from './dom.js';

function notificationsSupported() {
  return typeof window.Notification === 'function' && window.isSecureContext;
}

function renderNotifyButton() {
  $('notify-enable').hidden = !notificationsSupported() || Notification.permission !== 'default';
}

/**
 * Asks for the browser's permission, once: nothing when it was asked before
 * (granted or denied). Call it from a click.
 */
export async function askNotificationPermission() {
  if (!notificationsSupported() || Notification.permission !== 'default') return;
  try { await Notification.requestPermission(); } catch { /* refused or unsupported */ }
  renderNotifyButton();
}

/** Shows the "Notify me" button while the browser has not been asked, and asks on its click. */
export function initNotifications() {
  renderNotifyButton();
  $('notify-enable').addEventListener('click', askNotificationPermission);
}
