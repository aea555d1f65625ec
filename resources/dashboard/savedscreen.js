// SPDX-License-Identifier: GPL-2.0-or-later
// An ended session's saved screen (docs/protocol.md, "Ended sessions"): its
// processes are gone, and what is left is the screen its host saved. The
// page shows it read-only in the terminal, in place of an attachment: GET
// /api/sessions/{id}/screen (terminal bytes for a reset terminal of the
// session's cols x rows, the saved scrollback first) written into the view.
// A SavedScreen has the members of an Attachment that the page reads
// (state, connected, offset, ended, shutdown, start/stop/kick...), so the
// page treats it as an attachment that ended at once.

/**
 * @typedef {{
 *   id: string,                 // the ended session's id
 *   term: object,               // the view's xterm.js Terminal (watch mode: no input)
 *   cols: number, rows: number, // the size it was saved at
 *   onState: (state: string, detail: object) => void, // 'connecting', then 'ended' with
 *     // detail.reason 'saved' (shown), 'closed' (404: forgotten or revived meanwhile),
 *     // 'unauthorized' (401) or 'error' (closeReason: why)
 * }} SavedScreenOptions
 */
export class SavedScreen {
  /** @param {SavedScreenOptions} o */
  constructor(o) {
    this.id = o.id;
    this.term = o.term;
    this.cols = o.cols;
    this.rows = o.rows;
    this.onState = o.onState;
    this.state = 'idle';
    this.connected = false;
    this.offset = null;
    this.ended = false;
    this.shutdown = false;
    this.stopped = false;
    this.closes = [];
    /** Bytes of the saved screen shown (tests read it). */
    this.bytes = 0;
  }

  setState(st, detail = {}) {
    this.state = st;
    this.onState(st, detail);
  }

  async start() {
    this.ended = false;
    this.setState('connecting');
    let r;
    try {
      r = await fetch(`/api/sessions/${encodeURIComponent(this.id)}/screen`,
        { cache: 'no-store', credentials: 'same-origin' });
    } catch (err) {
      if (this.stopped) return;
      this.end('error', { closeReason: `Tether did not answer: ${err.message}` });
      return;
    }
    if (this.stopped) return;
    if (r.status === 401) { this.end('unauthorized'); return; }
    if (r.status === 404) { this.end('closed'); return; }
    if (!r.ok) {
      let why = `${r.status} ${r.statusText}`;
      try { why = (await r.json()).error || why; } catch { /* not JSON */ }
      if (!this.stopped) this.end('error', { closeReason: `Could not read the saved screen: ${why}` });
      return;
    }
    const bytes = new Uint8Array(await r.arrayBuffer());
    if (this.stopped) return;
    const { term } = this;
    term.reset();
    if (this.cols >= 1 && this.rows >= 1) term.resize(this.cols, this.rows);
    this.bytes = bytes.length;
    term.write(bytes, () => {
      if (this.stopped) return;
      term.scrollToBottom();
      this.end('saved');
    });
  }

  end(reason, detail = {}) {
    this.ended = true;
    this.setState('ended', { ...detail, reason });
  }

  stop() { this.stopped = true; }

  // An attachment's moves that mean nothing here.
  kick() {}
  resume() {}
  suspend() {}
  sendResize() { return false; }
}
