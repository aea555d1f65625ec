// SPDX-License-Identifier: GPL-2.0-or-later
// The page's connection to Tether: what it knows about the server (reachable,
// authorized, quitting, key rotated) and the live list's event stream
// (Server-Sent Events at /api/events: one `sessions` event with the whole
// list on connect and on every change; `key`, `shutdown` and `server` events;
// docs/protocol.md "Live list").

/**
 * What the page knows about the server, shared by the REST calls, the event
 * stream and the indicator. One per page; the parts that change it take it
 * as an argument.
 */
export function createConnectionState() {
  return {
    /** The event stream's state: 'connecting', 'connected', 'reconnecting' or 'offline'. */
    listState: 'connecting',
    /** The page has no (more) key: the "no key" page is shown. */
    unauthorized: false,
    /** Some answer of this server was authorized (the page held the right key). */
    authorized: false,
    /** The event stream said the key was rotated (tether key --rotate). */
    keyRotated: false,
    /** The server was out of reach since the last authorized answer. */
    lostContact: false,
    /** The event stream's last word was `shutdown` (Tether quit), and no answer since. */
    serverShutdown: false,
  };
}

/** An answer passed the key check: the server is there and knows our key. */
export function noteAuthorized(conn) {
  conn.authorized = true;
  conn.lostContact = false;
  conn.serverShutdown = false;
}

/**
 * The live list. Reconnects by itself: the browser retries a dropped stream;
 * a stream the browser gave up on (an HTTP error such as 401) is retried here
 * with backoff after `hooks.refresh()` (GET /api/sessions) has found out why.
 */
export class EventStream {
  /**
   * @param {ReturnType<createConnectionState>} conn updated as events come
   * @param {{
   *   onSessions: (list: object[]) => void, // the whole list (SESSION objects)
   *   onServer: (info: object) => void,     // the `server` event
   *   onCommandEvent?: (name: string, data: object) => void, // a `command` or `notify` event
   *   onOutput?: (offsets: Object<string, number>) => void, // an `output` event: id -> output offset
   *   onChange: () => void,                 // conn changed: redraw the indicator
   *   refresh: () => Promise<unknown>,      // fetch the list once (REST)
   * }} hooks
   */
  constructor(conn, hooks) {
    this.conn = conn;
    this.hooks = hooks;
    /** The EventSource, or null once the browser gave up on it. */
    this.es = null;
    this.retry = 0;
  }

  /** There is a stream, open or being retried by the browser. */
  get active() { return this.es !== null; }

  /** Closes the stream for good (no key any more). */
  close() {
    if (this.es) this.es.close();
  }

  start() {
    const { conn, hooks } = this;
    if (conn.unauthorized) return;
    // output=1: `output` events too (the offsets of sessions that wrote), for the miniatures.
    const es = new EventSource('/api/events?output=1');
    this.es = es;
    es.addEventListener('sessions', (e) => {
      this.retry = 0;
      conn.serverShutdown = false;
      conn.listState = 'connected';
      noteAuthorized(conn);
      try { hooks.onSessions(JSON.parse(e.data).sessions || []); } catch { /* ignore a bad event */ }
      hooks.onChange();
    });
    // The key was rotated: the server ends this stream next, and the retry
    // meets a 401 that the page then explains.
    es.addEventListener('key', () => { conn.keyRotated = true; });
    // Tether is quitting (tray Quit, SIGTERM; protocol.md, `shutdown`): the
    // stream ends next. A page showing only the list says so, as an attached
    // one does from its socket's 1001 `server shutting down`.
    es.addEventListener('shutdown', () => {
      conn.serverShutdown = true;
      hooks.onChange();
    });
    // Commands and notifications (docs/protocol.md): commandui.js's.
    for (const name of ['command', 'notify']) {
      es.addEventListener(name, (e) => {
        try { hooks.onCommandEvent?.(name, JSON.parse(e.data)); } catch { /* ignore a bad event */ }
      });
    }
    // Which sessions wrote output (at most once a second): miniatures.js's.
    es.addEventListener('output', (e) => {
      try { hooks.onOutput?.(JSON.parse(e.data).sessions || {}); } catch { /* ignore a bad event */ }
    });
    // Version and update: once on connect, again when an upgrade is noticed.
    es.addEventListener('server', (e) => {
      try { hooks.onServer(JSON.parse(e.data)); } catch { /* ignore a bad event */ }
    });
    es.onopen = () => { conn.listState = 'connected'; hooks.onChange(); };
    es.onerror = () => {
      if (es !== this.es) return;
      if (es.readyState === EventSource.CLOSED) {
        // The browser gave up (HTTP error such as 401): find out, then retry ourselves.
        // The server answered, so this is no lost contact: a 401 here, on a
        // stream still connecting when the key was rotated (it never got the
        // `key` event), read as "Tether was restarted".
        es.close();
        this.es = null;
        conn.listState = 'offline';
        hooks.onChange();
        hooks.refresh().finally(() => {
          if (conn.unauthorized) return;
          const delay = Math.min(5000, 250 * 2 ** this.retry++);
          setTimeout(() => { if (!this.es) this.start(); }, delay / 2 + Math.random() * delay / 2);
        });
      } else {
        // The stream dropped or could not connect; the browser retries.
        conn.lostContact = true;
        conn.listState = navigator.onLine === false ? 'offline' : 'reconnecting';
        hooks.onChange();
      }
    };
  }
}
