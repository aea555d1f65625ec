// SPDX-License-Identifier: GPL-2.0-or-later
// Notices over the terminal: the banner (#banner; close codes in plain
// words, each with its obvious next step) and the "Catching up…" note
// (#catchup).

import { $, el } from './dom.js';
import { exitText } from './util.js';

export function hideBanner() {
  $('banner').hidden = true;
  delete $('banner').dataset.reason;
  $('banner-actions').replaceChildren();
}

/**
 * Shows the banner; its first action gets the focus.
 * @param {'info'|'warn'|'error'} kind
 * @param {string} title
 * @param {string} detail
 * @param {{label: string, run: () => void}[]} actions buttons, the first one primary
 */
export function showBanner(kind, title, detail, actions) {
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

/**
 * Tether closed the connection with 1001 `server shutting down` (Quit in the
 * tray, SIGTERM, `systemctl --user stop`): say it in the server's words, as
 * the README's "What survives what" promises, while the attachment retries.
 */
export function showShutdownBanner() {
  if ($('banner').dataset.reason === 'shutdown' && !$('banner').hidden) return;
  showBanner('warn', 'Tether shut down',
    'The server said “server shutting down”: Tether was quit or stopped, and its sessions end with it. '
    + 'Retrying until it is back…', []);
  $('banner').dataset.reason = 'shutdown';
}

/**
 * The banner for an attachment that ended (attachment.js `ended` detail:
 * reason, exit, code, closeReason).
 * @param {object} detail
 * @param {boolean} share the page is a read-only link's view: nothing to offer but words
 * @param {{
 *   newSession: () => void, close: () => void, takeOver: () => void, watchHere: () => void,
 *   reconnect: () => void, unauthorized: () => void,
 *   shareEnded: (title: string, text: string) => void,
 * }} act what the buttons and the endings that are no banner do
 */
export function showEndBanner(detail, share, act) {
  if (share) {
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
        act.shareEnded('This read-only link was revoked', 'The person who shared this session ended the link.');
        return;
      case 'unauthorized':
        act.unauthorized();
        return;
      default:
        break;
    }
  }
  const newSession = { label: 'New session', run: act.newSession };
  const close = { label: 'Close', run: act.close };
  switch (detail.reason) {
    case 'superseded':
      showBanner('warn', 'Opened in another window',
        'This session is now controlled from another tab or window.',
        [{ label: 'Take over', run: act.takeOver }, { label: 'Watch here', run: act.watchHere }]);
      break;
    case 'exited':
      showBanner('info', exitText(detail.exit), 'Its output stays here until you close it.', [newSession, close]);
      break;
    case 'expired':
      showBanner('warn', 'Session expired', 'It was left detached longer than its time to live, or it was closed.',
        [newSession, close]);
      break;
    case 'closed':
      showBanner('warn', 'Session closed', 'It was killed from a list or the tray, or it expired.', [newSession, close]);
      break;
    case 'shutdown':
      showBanner('warn', 'Session ended', 'Tether was shut down (“server shutting down”), and the session ended with it.',
        [newSession, close]);
      break;
    case 'unauthorized':
    case 'revoked':
      act.unauthorized();
      break;
    default:
      showBanner('error', 'Connection error', detail.closeReason || `Closed with code ${detail.code}.`,
        [{ label: 'Reconnect', run: act.reconnect }]);
  }
}

// "Catching up": the page is behind the session's output and has paused it
// (flow control) or let go of its socket until xterm.js has parsed what it
// holds. Shown at once; hidden a second after the last catch-up ends, so a
// flood that pauses and resumes many times a second shows one steady note
// instead of a flicker.
const CATCHUP_LINGER_MS = 1000;

/** @returns {{show: () => void, done: () => void, hide: () => void}} the note's three moves */
export function createCatchupNote() {
  let timer = null;
  const note = () => $('catchup');
  return {
    /** Behind: shown at once. */
    show() {
      clearTimeout(timer);
      timer = null;
      note().hidden = false;
    },
    /** Caught up: hidden a second later unless shown again before. */
    done() {
      clearTimeout(timer);
      timer = setTimeout(() => { timer = null; note().hidden = true; }, CATCHUP_LINGER_MS);
    },
    /** Hidden now (the session is closed). */
    hide() {
      clearTimeout(timer);
      timer = null;
      note().hidden = true;
    },
  };
}
