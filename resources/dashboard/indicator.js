// SPDX-License-Identifier: GPL-2.0-or-later
// The connection indicator in the top bar (#conn), the dimming of a terminal
// that is not connected, and the note over a list that is out of date.

import { $ } from './dom.js';

const STATE_TEXT = {
  connecting: 'Connecting…',
  connected: 'Connected',
  reconnecting: 'Reconnecting…',
  offline: 'Offline',
  ended: 'Disconnected',
  unauthorized: 'No key',
};

const STATE_TITLE = {
  connected: 'Connected to Tether: output is live.',
  reconnecting: 'The connection dropped; retrying. Nothing is lost: output is buffered by Tether.',
  offline: 'Tether cannot be reached; retrying.',
};

const LIST_STALE_UNREACHABLE = 'Tether is not reachable: this list is from before it went away and may be out of date. Retrying…';
const LIST_STALE_SHUTDOWN = 'Tether shut down (“server shutting down”): this list is from before it quit, and its sessions '
  + 'ended with it. Retrying until it is back…';

/**
 * Draws the indicator from what the page knows.
 * @param {object} conn the connection state (connection.js)
 * @param {{mode: string, attachment: {state: string, shutdown: boolean}}|null} current the open session
 * @param {boolean} share the page is a read-only link's view
 */
export function renderIndicator(conn, current, share) {
  let state;
  let text;
  if (conn.unauthorized) {
    state = 'unauthorized';
    // The stream that told of the rotation ends next, and its drop counts as
    // lost contact: the rotation comes first, or the page says "Tether
    // restarted" under "Tether's access key was changed".
    if (conn.keyRotated) text = 'Key changed';
    else if (conn.authorized && conn.lostContact) text = 'Tether restarted';
  } else if (current) {
    state = current.attachment.state;
    if (state === 'idle') state = 'connecting';
    if (state === 'connected' && current.mode === 'watch') text = share ? 'Watching (read-only)' : 'Watching';
    if (state === 'offline' && conn.listState === 'connected') state = 'reconnecting';
    // The session ended (its program exited, it was closed, taken over):
    // the banner says so. The indicator is about Tether, which the list's
    // stream still reaches; "Disconnected" read as if Tether had gone. A
    // read-only link's page has no stream: it knows only that the session
    // ended.
    if (state === 'ended') {
      if (share) text = 'Session ended';
      else state = conn.listState;
    }
    // Tether said `server shutting down` (Quit, SIGTERM): say that, not just "Offline".
    if ((state === 'offline' || state === 'reconnecting') && (current.attachment.shutdown || conn.serverShutdown)) {
      text = 'Tether shut down';
    }
  } else {
    state = conn.listState;
    // The list alone heard it too: the event stream's `shutdown` event.
    if ((state === 'offline' || state === 'reconnecting') && conn.serverShutdown) text = 'Tether shut down';
  }
  const el = $('conn');
  el.dataset.state = state;
  if (state === 'unauthorized' && share) text = 'Link ended';
  $('conn-text').textContent = text || STATE_TEXT[state] || state;
  el.title = STATE_TITLE[state] || '';
  if (current && current.attachment.state === 'ended' && state === 'connected') {
    el.title = 'Connected to Tether. This terminal is no longer attached: the note above it says why.';
  }
  if (text === 'Tether shut down') el.title = 'Tether closed the connection: server shutting down. Retrying until it is back.';
  document.body.classList.toggle('disconnected', !!current && current.attachment.state !== 'connected');
  // While the event stream is down the list is a picture of the past: the
  // sessions in it may be gone (a restart ends them all). Say so instead of
  // showing "running · attached" as if it were live.
  const stale = !conn.unauthorized && conn.authorized
    && (conn.listState === 'offline' || conn.listState === 'reconnecting');
  $('sidebar').classList.toggle('stale', stale);
  $('list-stale').hidden = !stale;
  $('list-stale').textContent = conn.serverShutdown ? LIST_STALE_SHUTDOWN : LIST_STALE_UNREACHABLE;
}
