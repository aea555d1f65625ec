// SPDX-License-Identifier: GPL-2.0-or-later
// The "Share (read-only link)" dialog (#share-dialog; docs/protocol.md
// "Read-only links"): Share makes a link and shows it (copied when the
// browser allows); Revoke ends every link to the session, and whoever
// watches through one is disconnected at once.

import { $ } from './dom.js';

/** Puts the dialog's link on the clipboard; true when that worked. */
async function copyShareLink() {
  const url = $('share-url').value;
  if (!url) return false;
  if (navigator.clipboard && window.isSecureContext) {
    try { await navigator.clipboard.writeText(url); return true; } catch { /* below */ }
  }
  // The Async Clipboard API needs a secure context (see terminalview.js copySelection).
  $('share-url').select();
  try { return document.execCommand('copy'); } catch { return false; }
}

/**
 * Wires the dialog.
 * @param {{
 *   api: (method: string, path: string, body?: object) => Promise<object>, // api.js
 *   unauthorized: () => boolean, // the page lost its key (the dialog then just closes)
 *   onClose: () => void,         // the dialog closed: give the keys back to the terminal
 * }} o
 * @returns {{open: (id: string, label: string) => Promise<void>}} opens it for a session and makes a link
 */
export function createShareDialog(o) {
  async function open(id, label) {
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
      const made = await o.api('POST', '/api/shares', { session: id });
      $('share-url').value = made.url;
      $('share-url').focus();
      $('share-url').select();
      $('share-status').textContent = (await copyShareLink()) ? 'Link copied to the clipboard.'
        : 'Copy the link above and send it to whoever should watch.';
    } catch (err) {
      if (o.unauthorized()) { dlg.close(); return; }
      $('share-status').textContent = '';
      $('share-error').textContent = `Could not make a link: ${err.message}`;
      $('share-error').hidden = false;
    }
  }

  async function revoke() {
    const id = $('share-dialog').dataset.id;
    $('share-error').hidden = true;
    try {
      const r = await o.api('DELETE', `/api/sessions/${encodeURIComponent(id)}/shares`);
      $('share-url').value = '';
      $('share-revoke').disabled = true;
      $('share-status').textContent = r.revoked === 1
        ? 'Revoked 1 link: whoever watched through it was disconnected.'
        : `Revoked ${r.revoked} links: whoever watched through them was disconnected.`;
    } catch (err) {
      if (o.unauthorized()) { $('share-dialog').close(); return; }
      $('share-error').textContent = `Could not revoke: ${err.message}`;
      $('share-error').hidden = false;
    }
  }

  $('share-copy').addEventListener('click', async () => {
    $('share-status').textContent = (await copyShareLink()) ? 'Link copied to the clipboard.'
      : 'The browser did not allow copying: select the link and copy it.';
  });
  $('share-revoke').addEventListener('click', revoke);
  $('share-close').addEventListener('click', () => $('share-dialog').close());
  $('share-dialog').addEventListener('close', () => o.onClose());
  return { open };
}
