// SPDX-License-Identifier: GPL-2.0-or-later
// One browser attachment to a Tether session over protocol v1
// (docs/protocol.md): the WebSocket at /ws/<id>, the output offset the page
// holds, and lossless reconnection with `resume=`.
//
// Offsets: every output byte of a session has an offset. After the `attached`
// message the server sends `prelude_bytes` bytes of mode-restoring sequences
// (outside the offset space), then `replay_bytes` bytes (offsets
// replay_from ..< offset), then live output continuing the same offsets; when
// the `attached` message has a `snapshot_at` offset, `snapshot_bytes` bytes of
// the server's screen snapshot (no offsets either) come where the replay
// reaches it (docs/protocol.md, "Screen snapshot"). The
// page counts the offset of what it has *received* (all of it is queued into
// xterm.js in order), so after a blip it asks for exactly the bytes it misses:
// nothing lost, nothing shown twice.

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5000;
// xterm.js parses about 5-35 MB/s (headless Chromium here: under 3 MB/s) and
// throws away writes once 50 MB are pending; the browser keeps reading the
// socket meanwhile (a 79 MB `seq` flood left 24 MB queued in the page). Past
// this many received-but-unparsed bytes the page pauses the session and
// resumes it once xterm.js has caught up below the low mark: the watermarks
// and PAUSE/RESUME messages of xterm.js's own flow-control guide
// (xtermjs.org/docs/guides/flowcontrol; docs/protocol.md "Flow control").
// The server then stops reading the program's output (it blocks in write),
// the socket stays open, what the server had queued still comes (its queue is
// at most about 1 MiB, plus TCP buffers), typed keys still go, and nothing is
// lost. A server that does not say `"flow_control": true` in `attached` (an
// older one, which closes 4400 on an unknown message type), and watching
// (the server ignores a watcher's pause), get the fallback: the page lets go
// of the socket (the server then drains the program into its ring at full
// speed) and resumes from its offset below the low mark: lossless only when
// the ring still holds the gap, else a redraw from the ring (reason
// "rolled_out"), as tmux redraws a client that fell behind. Memory stays
// bounded either way.
export const PENDING_HIGH_BYTES = 4 * 1024 * 1024;
export const PENDING_LOW_BYTES = 256 * 1024;
/**
 * Largest input message sent (bytes). The server closes 1009 on a message
 * over 1 MiB (protocol.md), and a paste can be any size: it goes in pieces
 * this size, in order. The server takes them at the program's pace (input
 * flow control); the browser keeps what waits (WebSocket.bufferedAmount).
 */
export const INPUT_MESSAGE_BYTES = 64 * 1024;

/**
 * Close codes of protocol v1 (docs/protocol.md section 5 "Close codes"). The
 * same values as core/protocol/protocol.h (Protocol::CloseCode): the test
 * tests/js/attachment.test.mjs fails when they drift apart.
 */
export const CloseCode = Object.freeze({
  GOING_AWAY: 1001,   // session killed or server shutting down
  TOO_BIG: 1009,
  SERVICE_RESTART: 1012, // "server restarting": Tether restarts in place; resume
  TRY_AGAIN: 1013,    // input stalled / watcher too far behind
  BAD_MESSAGE: 4400,
  REVOKED: 4401,      // the read-only link this page watches with was revoked
  NO_SESSION: 4404,
  SUPERSEDED: 4409,
  EXITED: 4410,
  ENDED: 4411,        // an ended session (its host went away): revive or forget it
  TOO_MANY_VIEWERS: 4429,
});

/** Reason texts of the server's close frames (Protocol::CloseReason; checked likewise). */
export const CloseReason = Object.freeze({
  SESSION_KILLED: 'session killed',
  SERVER_SHUTDOWN: 'server shutting down',
  INPUT_STALLED: 'input stalled',
  TOO_FAR_BEHIND: 'too far behind',
  BAD_CONTROL_MESSAGE: 'bad control message',
  BAD_QUERY: 'bad query',
  NO_SUCH_SESSION: 'no such session',
  SUPERSEDED: 'superseded',
  PROCESS_EXITED: 'process exited',
  TOO_MANY_VIEWERS: 'too many viewers',
  SERVICE_RESTART: 'server restarting',
  SHARE_REVOKED: 'read-only link revoked',
  SESSION_ENDED_BY_REBOOT: 'session ended by reboot', // 4411
  SESSION_ENDED_BY_CRASH: 'session ended by crash',
  SESSION_ENDED_BY_SHUTDOWN: 'session ended by shutdown',
});

/**
 * What a close (code + reason text) says, in the names the C++ clients use
 * too (AttachStream::closeMeaning; shared vectors in
 * tests/vectors/attach-stream.json): 'taken_over', 'exited', 'not_found',
 * 'session_killed', 'server_shutdown', 'going_away' (1001 with another text),
 * 'too_many_viewers', 'bad_request', 'too_big', 'revoked', or 'retry' (no close frame,
 * 1012, 1013, anything else: resume).
 */
export function closeMeaning(code, reason) {
  switch (code) {
    case CloseCode.SUPERSEDED: return 'taken_over';
    case CloseCode.EXITED: return 'exited';
    case CloseCode.NO_SESSION: return 'not_found';
    case CloseCode.ENDED: return 'session_killed'; // its processes are gone: as a killed one
    case CloseCode.GOING_AWAY:
      if (reason === CloseReason.SESSION_KILLED) return 'session_killed';
      if (reason === CloseReason.SERVER_SHUTDOWN) return 'server_shutdown';
      return 'going_away';
    case CloseCode.TOO_MANY_VIEWERS: return 'too_many_viewers';
    case CloseCode.BAD_MESSAGE: return 'bad_request';
    case CloseCode.TOO_BIG: return 'too_big';
    case CloseCode.REVOKED: return 'revoked';
    default: return 'retry';
  }
}

/** Socket closes an Attachment remembers (its `closes`). */
export const CLOSE_TRAIL_LENGTH = 8;

/** Retained output above which the dashboard asks for the screen replay. */
export const SCREEN_REPLAY_ABOVE_BYTES = 256 * 1024;
/** Scrollback lines the dashboard asks for with the screen replay. */
export const SCREEN_REPLAY_LINES = 200;

/**
 * The dashboard's replay rule (docs/protocol.md section 5, "Screen replay"):
 * for a session retaining more than 256 KiB of output (`buffer_bytes` of its
 * SESSION object), attach with `replay=screen&lines=200` (the screen and 200
 * lines of scrollback instead of up to the whole buffer: a reattach over a
 * slow link and xterm.js's parsing stay short); else the raw replay, which
 * brings the whole retained scrollback. Returns the lines to ask for, or
 * null for the raw replay.
 */
export function screenReplayLines(session) {
  const retained = Number(session?.buffer_bytes) || 0;
  return retained > SCREEN_REPLAY_ABOVE_BYTES ? SCREEN_REPLAY_LINES : null;
}

/**
 * A size the page sends (resize, or with the attach): integers, 2..1000
 * columns and 1..1000 rows (the protocol's 1..1000; a 1-column pane is a
 * hidden one, which must not shrink the session).
 */
function validSize(cols, rows) {
  return Number.isInteger(cols) && Number.isInteger(rows) && cols >= 2 && rows >= 1 && cols <= 1000 && rows <= 1000;
}

/**
 * Connection states reported through `onState(state, detail)`:
 *  - 'connecting'    first connection attempt in flight
 *  - 'connected'     attached (replaying or live)
 *  - 'reconnecting'  connection lost; retrying with backoff (detail.retryInMs)
 *  - 'offline'       the server cannot be reached (or the browser is offline); retrying
 *  - 'ended'         no more automatic retries: detail.reason is one of
 *                    'superseded' | 'exited' | 'expired' | 'closed' | 'shutdown' | 'unauthorized' |
 *                    'revoked' | 'error', detail.closeReason the server's close reason text,
 *                    detail.exit for 'exited'; 'shutdown': the server quit (close 1001
 *                    `server shutting down`) and the session is gone after it
 * 'reconnecting' and 'offline' carry detail.shutdown: true while the last close
 * was the server's 1001 `server shutting down` (Tether quit: Quit in the tray,
 * SIGTERM) and no attach has succeeded since.
 */
export class Attachment {
  /**
   * @param {object} o
   * @param {string} o.id session id
   * @param {'control'|'watch'} o.mode
   * @param {import('./vendor/xterm.js').Terminal} o.term terminal the output is written to
   * @param {(state: string, detail: object) => void} [o.onState]
   * @param {(msg: object) => void} [o.onAttached] the `attached` message, before its replay is written
   * @param {() => void} [o.onLive] the replay of an attach has been written; input is enabled
   * @param {(title: string) => void} [o.onTitle]
   * @param {(exit: {code: ?number, signal: ?number}) => void} [o.onExit]
   * @param {(cols: number, rows: number) => void} [o.onSize] the session's size changed
   * @param {?number} [o.screenLines] ask reset replays for the server's screen
   *   with this many scrollback lines (`replay=screen`); null: the raw replay
   * @param {(catchingUp: boolean) => void} [o.onCatchingUp] true when the page
   *   falls behind (more than pendingHighBytes received and not yet parsed by
   *   xterm.js) and pauses the session or lets go of the socket; false once it
   *   is back under pendingLowBytes (or the attachment stopped)
   * @param {() => ?{cols: number, rows: number}} [o.attachSize] control mode:
   *   the terminal's size for each attach request (`cols=C&rows=R`: the
   *   server resizes the session before it builds the replay, so the replay
   *   is drawn at this size; docs/protocol.md "Attaching at the viewer's
   *   size"), called as the socket is made; null or a size out of range:
   *   none is sent (the page resizes after `attached`, as before)
   * @param {(data: string) => string} [o.filterInput] what xterm.js's onData
   *   gives goes through this before it is sent (the key bar's modifiers)
   */
  constructor(o) {
    this.id = o.id;
    this.mode = o.mode === 'watch' ? 'watch' : 'control';
    this.term = o.term;
    this.cb = o;
    this.screenLines = Number.isInteger(o.screenLines) ? o.screenLines : null;
    /** Offset of the next output byte expected; null until a first attach. */
    this.offset = null;
    this.exit = null;            // last `exit` message
    this.lastAttached = null;    // last `attached` message
    this.attaches = 0;           // `attached` messages received (1 + reconnections)
    /**
     * The last CLOSE_TRAIL_LENGTH socket closes, oldest first, for a report
     * of why an attachment ended or reconnected (browser tests print it):
     * { code, reason, attached (the socket had its `attached`), probe (the
     * status of the session probe that followed, 0 unreachable; absent when
     * none), ms (since the page loaded) }.
     */
    this.closes = [];
    this.state = 'idle';
    this.ws = null;
    this.attempt = 0;            // consecutive failed attempts, for the backoff
    this.retryTimer = null;
    this.ended = false;          // final close: no automatic retry
    this.stopped = false;        // stop() called: this object is finished
    this.suspended = false;      // page hidden in the back/forward cache
    this.inputEnabled = false;
    this.preludeLeft = 0;
    this.replayLeft = 0;
    this.snapshotAt = 0;         // offset where the snapshot goes ...
    this.snapshotLeft = 0;       // ... and its bytes still expected
    this.received = 0;           // bytes handed to xterm.js ...
    this.parsed = 0;             // ... and bytes it has parsed
    this.pausedForBacklog = false; // over the high mark, not yet under the low one
    this.flowControl = false;    // this socket's `attached` said "flow_control": true
    this.flowPaused = false;     // `pause` sent on this socket, no `resume` yet
    /** The last close was 1001 `server shutting down`, and no `attached` since. */
    this.shutdown = false;
    /** The marks (bytes received but not yet parsed by xterm.js); tests lower them. */
    this.pendingHighBytes = PENDING_HIGH_BYTES;
    this.pendingLowBytes = PENDING_LOW_BYTES;
    this.encoder = new TextEncoder();

    this.disposers = [
      this.term.onData((data) => {
        // The key bar's sticky Ctrl and Alt (keybar.js) apply to the next key typed.
        const d = this.cb.filterInput ? this.cb.filterInput(data) : data;
        this.sendInput(this.encoder.encode(d));
      }),
      // onBinary carries non-UTF-8 mouse reports as a string of byte values.
      this.term.onBinary((data) => {
        const bytes = new Uint8Array(data.length);
        for (let i = 0; i < data.length; i++) bytes[i] = data.charCodeAt(i) & 0xff;
        this.sendInput(bytes);
      }),
    ];
  }

  /** True while attached with a WebSocket that has received `attached`. */
  get connected() { return this.state === 'connected'; }

  /** True while the page is behind (paused for its backlog; see onCatchingUp). */
  get catchingUp() { return this.pausedForBacklog; }

  /** Sets pausedForBacklog and tells onCatchingUp when it changes. */
  setCatchingUp(on) {
    if (this.pausedForBacklog === on) return;
    this.pausedForBacklog = on;
    if (this.cb.onCatchingUp) this.cb.onCatchingUp(on);
  }

  /** Starts (or restarts after an end) connecting at once. */
  start() {
    if (this.stopped) return;
    this.ended = false;
    this.attempt = 0;
    this.connectNow();
  }

  /** Ends the attachment for good: closes the socket normally (1000), stops retries. */
  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.close(1000, 'closed by the page');
    }
    for (const d of this.disposers) d.dispose();
    this.disposers = [];
    this.setCatchingUp(false);
  }

  /**
   * Retry now if waiting to retry: called on `online`, on `visibilitychange`
   * to visible and on `pageshow` (the issue asks for an immediate attempt then).
   */
  kick() {
    if (this.stopped || this.ended || this.ws || this.suspended) return;
    if (document.visibilityState === 'hidden') return;
    this.attempt = 0;
    this.connectNow();
  }

  /** The page goes into the back/forward cache: let go of the socket, retry on pageshow. */
  suspend() {
    this.suspended = true;
    clearTimeout(this.retryTimer);
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.close(1000, 'page hidden');
    }
  }

  resume() {
    if (!this.suspended) return;
    this.suspended = false;
    this.kick();
  }

  /**
   * Sends a resize control message. Sizes come from the fit addon, which
   * yields 0 or tiny sizes for a hidden element: callers check, and so does
   * this (1..1000 is the protocol's range; a hidden tab must not shrink the
   * session). Watchers never resize.
   */
  sendResize(cols, rows) {
    if (this.mode !== 'control' || !this.connected || !this.ws) return false;
    if (!validSize(cols, rows)) return false;
    this.ws.send(JSON.stringify({ type: 'resize', cols, rows }));
    return true;
  }

  sendInput(bytes) {
    // While a replay is being written xterm.js answers the queries inside it
    // (cursor position, device attributes); those answers belong to a past
    // program state and would arrive as stray input (microsoft/vscode#123803). Input
    // is enabled once the last replay byte has been parsed.
    if (!this.inputEnabled || this.mode !== 'control' || !this.ws) return;
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (bytes.length <= INPUT_MESSAGE_BYTES) {
      this.ws.send(bytes);
      return;
    }
    // A large paste: a byte stream, so any cut is fine (the server never
    // decodes input).
    for (let at = 0; at < bytes.length; at += INPUT_MESSAGE_BYTES) {
      this.ws.send(bytes.subarray(at, at + INPUT_MESSAGE_BYTES));
    }
  }

  setState(state, detail = {}) {
    this.state = state;
    if (this.cb.onState) this.cb.onState(state, detail);
  }

  /**
   * The attach URL's query: mode, resume, replay=screen&lines=N if asked,
   * and in control mode the terminal's size (o.attachSize) when it has one
   * that sendResize() would send. A server before that ignores the keys.
   */
  query() {
    const params = new URLSearchParams({ mode: this.mode });
    if (this.offset !== null) params.set('resume', String(this.offset));
    if (this.screenLines !== null) {
      params.set('replay', 'screen');
      params.set('lines', String(this.screenLines));
    }
    if (this.mode === 'control' && this.cb.attachSize) {
      const d = this.cb.attachSize();
      if (d && validSize(d.cols, d.rows)) {
        params.set('cols', String(d.cols));
        params.set('rows', String(d.rows));
      }
    }
    return params.toString();
  }

  connectNow() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.stopped || this.ws) return;
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const url = `${scheme}//${location.host}/ws/${encodeURIComponent(this.id)}?${this.query()}`;
    const ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    this.gotAttached = false;
    this.flowControl = false;
    if (this.flowPaused) {
      // The pause died with its socket; the new one starts unpaused, and is
      // paused again if xterm.js is still behind when output comes.
      this.flowPaused = false;
      this.setCatchingUp(false);
    }
    this.inputEnabled = false;
    if (this.state !== 'reconnecting' && this.state !== 'offline')
      this.setState(this.offset === null ? 'connecting' : 'reconnecting', { retryInMs: 0, shutdown: this.shutdown });
    ws.onmessage = (ev) => { if (ws === this.ws) this.onMessage(ev); };
    ws.onclose = (ev) => { if (ws === this.ws) this.onClose(ev); };
  }

  onMessage(ev) {
    if (typeof ev.data === 'string') {
      let msg;
      try { msg = JSON.parse(ev.data); } catch { return; }
      this.onControl(msg);
      return;
    }
    this.onOutput(new Uint8Array(ev.data));
  }

  onControl(msg) {
    switch (msg.type) {
      case 'attached': {
        this.gotAttached = true;
        this.lastAttached = msg;
        this.flowControl = msg.flow_control === true && this.mode === 'control';
        this.attaches++;
        this.attempt = 0;
        this.exit = null;
        this.shutdown = false;
        if (msg.reset && this.offset !== null) {
          // Our copy does not continue the retained output (rolled out, or we
          // are ahead of a restarted server): start over. RIS goes through the
          // write queue, so bytes still queued from before are parsed first.
          this.write(new Uint8Array([0x1b, 0x63]));
        }
        this.offset = Number(msg.replay_from);
        this.preludeLeft = Number(msg.prelude_bytes) || 0;
        this.replayLeft = Number(msg.replay_bytes) || 0;
        // A snapshot outside the replay's offsets cannot be placed: ignored.
        const at = msg.snapshot_at;
        const placed = typeof at === 'number' && at >= this.offset && at <= this.offset + this.replayLeft;
        this.snapshotAt = placed ? at : 0;
        this.snapshotLeft = placed ? (Number(msg.snapshot_bytes) || 0) : 0;
        this.setState('connected', { msg });
        // Still behind from before this socket (the last one was lost while
        // paused): pause this one at once.
        if (this.flowControl) this.checkBacklog();
        if (this.cb.onAttached) this.cb.onAttached(msg);
        if (this.pendingReplay() === 0) this.goLive();
        break;
      }
      case 'title':
        if (this.cb.onTitle) this.cb.onTitle(String(msg.title ?? ''));
        break;
      case 'exit':
        this.exit = { code: msg.code ?? null, signal: msg.signal ?? null };
        if (this.cb.onExit) this.cb.onExit(this.exit);
        break;
      case 'size':
        if (this.cb.onSize) this.cb.onSize(msg.cols, msg.rows);
        break;
      case 'fixup':
        // What the terminal did here that the bytes cannot show (scroll
        // margins a resize reset): written in order, no offsets. Each
        // character is one byte (the server sends them as Latin-1).
        if (typeof msg.data === 'string' && msg.data.length) {
          const bytes = new Uint8Array(msg.data.length);
          for (let i = 0; i < msg.data.length; i++) bytes[i] = msg.data.charCodeAt(i) & 0xff;
          this.write(bytes);
        }
        break;
      default:
        break; // unknown server messages are ignored (forward compatibility)
    }
  }

  /** Prelude, replay and snapshot bytes of the current attach still expected. */
  pendingReplay() {
    return this.preludeLeft + this.replayLeft + this.snapshotLeft;
  }

  onOutput(bytes) {
    let n = bytes.length;
    // A prelude with nothing after it is a replay too: it must end in goLive()
    // (input stayed disabled after a prelude-only attach).
    const inReplay = this.pendingReplay() > 0;
    if (this.preludeLeft > 0) {
      // Mode-restoring sequences: written, but not part of the offset space.
      const take = Math.min(n, this.preludeLeft);
      this.preludeLeft -= take;
      n -= take;
    }
    // The replay, with the snapshot (no offsets) where it reaches snapshot_at.
    while (n > 0 && (this.replayLeft > 0 || this.snapshotLeft > 0)) {
      if (this.snapshotLeft > 0 && this.offset === this.snapshotAt) {
        const take = Math.min(n, this.snapshotLeft);
        this.snapshotLeft -= take;
        n -= take;
        continue;
      }
      let room = this.replayLeft;
      if (this.snapshotLeft > 0) room = Math.min(room, this.snapshotAt - this.offset);
      const take = Math.min(n, room);
      this.replayLeft -= take;
      this.offset += take;
      n -= take;
    }
    this.offset += n;
    this.write(bytes);
    if (inReplay && this.pendingReplay() === 0) this.goLive();
    this.checkBacklog();
  }

  /** Over the high mark: pause the session (flow control) or let go of the socket. */
  checkBacklog() {
    if (this.received - this.parsed > this.pendingHighBytes && !this.pausedForBacklog) {
      this.setCatchingUp(true);
      if (this.flowControl && this.ws && this.ws.readyState === WebSocket.OPEN) {
        // The server stops reading the program's output until `resume`
        // (sent by the callback in write() once parsed); the socket stays.
        this.flowPaused = true;
        this.ws.send(JSON.stringify({ type: 'pause' }));
        return;
      }
      // Let go of the socket; the callback in write() reconnects once parsed.
      const ws = this.ws;
      this.ws = null;
      this.inputEnabled = false;
      ws.close(1000, 'client catching up');
      this.setState('reconnecting', { retryInMs: 0, catchingUp: true });
    }
  }

  write(bytes) {
    const n = bytes.length;
    this.received += n;
    this.term.write(bytes, () => {
      this.parsed += n;
      if (this.pausedForBacklog && this.received - this.parsed < this.pendingLowBytes) {
        this.setCatchingUp(false);
        if (this.flowPaused) {
          this.flowPaused = false;
          if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: 'resume' }));
        } else if (!this.stopped && !this.ws) {
          this.connectNow();
        }
      }
    });
  }

  /** Enables input once everything queued so far (the replay) has been parsed. */
  goLive() {
    const ws = this.ws;
    this.term.write('', () => {
      if (ws !== this.ws || this.stopped) return;
      this.inputEnabled = true;
      if (this.cb.onLive) this.cb.onLive();
    });
  }

  onClose(ev) {
    this.ws = null;
    this.inputEnabled = false;
    const code = ev.code;
    const closeReason = ev.reason || '';
    this.closes.push({ code, reason: closeReason, attached: this.gotAttached, ms: Math.round(performance.now()) });
    if (this.closes.length > CLOSE_TRAIL_LENGTH) this.closes.shift();
    if (this.stopped || this.suspended) return;
    if (code === CloseCode.SERVICE_RESTART) {
      // Tether restarts in place: the next process image accepts on the
      // same socket and has every byte; resume from our offset at once.
      this.attempt = 0;
      this.probeThenRetry(false);
      return;
    }
    switch (closeMeaning(code, closeReason)) {
      case 'taken_over':
        return this.end('superseded', { closeReason });
      case 'exited':
        return this.end('exited', { exit: this.exit, closeReason });
      case 'not_found':
        // After a shutdown, the server that is back never had it.
        if (this.shutdown) return this.end('shutdown', { closeReason: CloseReason.SERVER_SHUTDOWN });
        return this.end('expired', { closeReason });
      case 'bad_request':
        return this.end('error', { code, closeReason });
      case 'revoked':
        // A read-only link that was revoked: retrying would meet 401.
        return this.end('revoked', { closeReason });
      case 'too_many_viewers':
        // Retrying would only be refused again while the others stay.
        return this.end('error', { code, closeReason: 'Too many viewers on this session' });
      case 'session_killed':
        // Deleted or expired: show the list.
        return this.end('closed', { closeReason });
      case 'server_shutdown':
        // Tether is quitting (tray Quit, SIGTERM; docs/protocol.md: retry
        // later). Say so, and retry until it is back. No probe now: a server
        // still closing could answer it 404 for the very session it is
        // ending, and the page would say "Session closed" instead.
        this.shutdown = true;
        this.scheduleRetry(true);
        return;
      case 'going_away':
        // Retry until the server is back; ask it first when the text is unclear.
        this.probeThenRetry(true);
        return;
      default: // 'retry', 'too_big'
        // A blip (1006 abnormal closure, 1013 try again, a proxy cut...).
        // When the socket never got as far as `attached`, find out why first:
        // an upgrade refused with 401/404 looks like a plain 1006 here.
        this.probeThenRetry(!this.gotAttached);
    }
  }

  end(reason, detail = {}) {
    this.ended = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.setState('ended', { ...detail, reason });
  }

  async probeThenRetry(probe) {
    if (probe) {
      let status = 0;
      try {
        const r = await fetch(`/api/sessions/${encodeURIComponent(this.id)}`,
          { cache: 'no-store', credentials: 'same-origin' });
        status = r.status;
        if (r.ok) {
          const s = await r.json();
          if (s && s.state === 'exited' && s.exit_code !== undefined && !this.exit)
            this.exit = { code: s.exit_code, signal: s.exit_signal ?? null };
        }
      } catch {
        status = 0; // server unreachable
      }
      const last = this.closes[this.closes.length - 1];
      if (last && last.probe === undefined) last.probe = status;
      if (this.stopped || this.ws || this.ended) return;
      if (status === 401) return this.end('unauthorized');
      if (status === 404) {
        // After a shutdown the session is gone with the old server.
        if (this.shutdown) return this.end('shutdown', { closeReason: CloseReason.SERVER_SHUTDOWN });
        return this.end(this.gotAttached || this.offset !== null ? 'closed' : 'expired');
      }
      if (status === 0) return this.scheduleRetry(true);
    }
    this.scheduleRetry(false);
  }

  /** Exponential backoff with jitter, 250 ms doubling to a 5 s cap, forever while visible. */
  scheduleRetry(unreachable) {
    if (this.stopped || this.ended || this.ws || this.suspended) return;
    const offline = unreachable || navigator.onLine === false;
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 16);
    // "Equal jitter": half fixed, half random, so retries from many tabs spread out.
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    this.setState(offline ? 'offline' : 'reconnecting', { retryInMs: delay, shutdown: this.shutdown });
    clearTimeout(this.retryTimer);
    // A hidden page does not retry on a timer; visibilitychange kicks it.
    if (document.visibilityState === 'hidden') return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (document.visibilityState === 'hidden') return;
      this.connectNow();
    }, delay);
  }
}
