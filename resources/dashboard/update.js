// SPDX-License-Identifier: GPL-2.0-or-later
// The running version beside the name in the top bar, and the update bar:
// the binary on disk is another Tether than the one serving (a package
// upgrade). A restart in place runs it and keeps every session; the next
// process image's `server` event (no update) hides the bar.

import { $ } from './dom.js';

/**
 * @param {(method: string, path: string, body?: object) => Promise<object>} api api.js
 * @returns {{apply: (info: object|null) => void}} apply: shows a `server` event (docs/protocol.md)
 */
export function createUpdateBar(api) {
  /** The bar's Restart was accepted (202); the next `server` event tells how it went. */
  let restarting = false;

  function apply(info) {
    // The running version, beside the name (the package's one version,
    // project(VERSION); `tether --version` prints the installed one).
    if (info && info.version) {
      $('version').textContent = info.version;
      $('version').parentElement.title = `Tether ${info.version}: session list`;
    }
    // After our restart, a server still reporting last_error is the old image
    // carrying on: the restart failed, and it says why.
    const failed = restarting && info && info.last_error;
    restarting = false;
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

  async function restart() {
    const btn = $('update-restart');
    btn.disabled = true;
    btn.textContent = 'Restarting…';
    $('update-error').hidden = true;
    try {
      await api('POST', '/api/restart');
      restarting = true;
      // The terminal reconnects by itself (1012); the event stream ends and
      // reconnects to the new image, whose `server` event updates the bar.
    } catch (e) {
      $('update-error').textContent = `Could not restart: ${e.message}`;
      $('update-error').hidden = false;
      btn.disabled = false;
      btn.textContent = 'Restart';
    }
  }

  $('update-restart').addEventListener('click', restart);
  return { apply };
}
