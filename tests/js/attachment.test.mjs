// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard's attachment (resources/dashboard/attachment.js) against the
// protocol constants of core/protocol/protocol.h and the vectors the C++
// viewers are tested with (tests/vectors/attach-stream.json): close codes and
// reasons that drift from the C++ side, or a stream accounted differently,
// fail here. Run by ctest as js/attachment (node --test, no browser).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (p) => readFile(path.join(root, p), 'utf8');

// attachment.js is the ES module served to the browser as it is (the
// dashboard's package.json says "type": "module", so node reads it as one).
const mod = await import('../../resources/dashboard/attachment.js');
const vectors = JSON.parse(await read('tests/vectors/attach-stream.json'));
const header = await read('core/protocol/protocol.h');

/** The enumerators of `enum CloseCode` in protocol.h: { GoingAway: 1001, ... }. */
function cppCloseCodes() {
  const body = header.match(/enum\s+CloseCode\s*:\s*int\s*\{([^}]*)\}/);
  assert.ok(body, 'enum CloseCode not found in protocol.h');
  const out = {};
  for (const m of body[1].matchAll(/(\w+)\s*=\s*(\d+)/g)) out[m[1]] = Number(m[2]);
  return out;
}

/** The strings of `namespace CloseReason` in protocol.h: { SessionKilled: 'session killed', ... }. */
function cppCloseReasons() {
  const body = header.match(/namespace\s+CloseReason\s*\{([\s\S]*?)\}\s*\/\/\s*namespace CloseReason/);
  assert.ok(body, 'namespace CloseReason not found in protocol.h');
  const out = {};
  for (const m of body[1].matchAll(/constexpr\s+char\s+(\w+)\[\]\s*=\s*"([^"]*)"/g)) out[m[1]] = m[2];
  return out;
}

/** 'TOO_MANY_VIEWERS' → 'TooManyViewers' */
const camel = (name) => name.toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c) => c.toUpperCase());

test('close codes are protocol.h\'s', () => {
  const cpp = cppCloseCodes();
  assert.ok(Object.keys(cpp).length >= 8);
  // Same set of values, both ways.
  assert.deepEqual(Object.values(mod.CloseCode).sort(), Object.values(cpp).sort());
  // And the names agree where they mean the same (JS names are older: a map).
  const names = { GOING_AWAY: 'GoingAway', TOO_BIG: 'TooBig', SERVICE_RESTART: 'ServiceRestart',
    TRY_AGAIN: 'TryAgainLater', BAD_MESSAGE: 'BadRequest', REVOKED: 'Unauthorized',
    NO_SESSION: 'NotFound', SUPERSEDED: 'Superseded', EXITED: 'Exited', ENDED: 'Ended',
    TOO_MANY_VIEWERS: 'TooManyViewers' };
  for (const [js, value] of Object.entries(mod.CloseCode)) {
    assert.ok(names[js], `CloseCode.${js} has no counterpart in protocol.h`);
    assert.equal(value, cpp[names[js]], `CloseCode.${js}`);
  }
});

test('close reasons are protocol.h\'s', () => {
  const cpp = cppCloseReasons();
  assert.ok(Object.keys(cpp).length >= 10);
  for (const [js, text] of Object.entries(mod.CloseReason))
    assert.equal(text, cpp[camel(js)], `CloseReason.${js}`);
  assert.deepEqual(Object.keys(mod.CloseReason).map(camel).sort(), Object.keys(cpp).sort());
});

/** A stand-in for xterm.js: records writes, runs write callbacks at once (all parsed). */
function fakeTerm() {
  return {
    writes: [],
    onData: () => ({ dispose() {} }),
    onBinary: () => ({ dispose() {} }),
    write(data, cb) {
      if (typeof data !== 'string' && data.length) this.writes.push(Uint8Array.from(data));
      if (cb) cb();
    },
  };
}

/** A vector's byte string (one character per byte) as bytes. */
const bytes = (s) => Uint8Array.from(s, (c) => c.charCodeAt(0));

function attachment() {
  const term = fakeTerm();
  let live = 0;
  const a = new mod.Attachment({ id: 'x', mode: 'control', term, onLive: () => { live++; } });
  a.ws = { readyState: 1, send() {}, close() {} }; // connected (no network here)
  a.setState = () => {};                           // no page to update
  return { a, term, live: () => live };
}

for (const v of vectors.close) {
  test(`close ${v.code} "${v.reason}"`, () => {
    assert.equal(mod.closeMeaning(v.code, v.reason), v.meaning);
    // What the dashboard does about it.
    const { a } = attachment();
    const actions = [];
    a.end = (reason) => actions.push(reason);
    a.probeThenRetry = (probe) => actions.push(probe ? 'probe' : 'retry');
    a.scheduleRetry = () => actions.push(a.shutdown ? 'shutdown' : 'retry');
    a.gotAttached = true;
    a.onClose({ code: v.code, reason: v.reason });
    assert.deepEqual(actions, [v.dashboard]);
  });
}

for (const s of vectors.streams) {
  test(`stream: ${s.name}`, () => {
    const { a, term, live } = attachment();
    s.steps.forEach((step, i) => {
      const where = `step ${i}`;
      const writesBefore = term.writes.length;
      const liveBefore = live();
      if (step.attached) {
        // Each `attached` comes on a new socket (connectNow()).
        a.ws = { readyState: 1, send() {}, close() {} };
        a.inputEnabled = false;
        a.onControl(step.attached);
        // The only thing written on attach is the client's own RIS (reset).
        for (const w of term.writes.slice(writesBefore)) assert.deepEqual(w, bytes('\x1bc'), where);
        term.writes.length = writesBefore;
      } else if (step.binary !== undefined) {
        a.onOutput(bytes(step.binary));
      } else if (step.fixup !== undefined) {
        a.onControl({ type: 'fixup', data: step.fixup });
      } else if (step.exit) {
        a.onControl(step.exit);
        assert.deepEqual(a.exit, step.expect.exit, where);
      } else {
        assert.fail(`unknown step ${where}`);
      }
      const e = step.expect;
      // Written in order, as received (the parts are the C++ test's concern:
      // the dashboard writes every part to xterm.js alike).
      const wrote = Buffer.concat(term.writes.slice(writesBefore)).toString('latin1');
      assert.equal(wrote, e.writes.map(([, data]) => data).join(''), `${where} writes`);
      assert.equal(a.offset, e.offset, `${where} offset`);
      assert.equal(a.pendingReplay(), e.pending, `${where} pending`);
      assert.equal(live() - liveBefore, e.replay_finished ? 1 : 0, `${where} replay finished`);
      assert.equal(a.inputEnabled, a.pendingReplay() === 0, `${where} input enabled after the replay only`);
    });
  });
}

test('dashboard replay rule: replay=screen&lines=200 above 256 KiB retained', () => {
  assert.equal(mod.screenReplayLines({ buffer_bytes: 0 }), null);
  assert.equal(mod.screenReplayLines({ buffer_bytes: 256 * 1024 }), null);
  assert.equal(mod.screenReplayLines({ buffer_bytes: 256 * 1024 + 1 }), 200);
  assert.equal(mod.screenReplayLines(null), null);
  const term = fakeTerm();
  const raw = new mod.Attachment({ id: 'x', mode: 'watch', term });
  assert.equal(raw.query(), 'mode=watch');
  const screen = new mod.Attachment({ id: 'x', mode: 'control', term, screenLines: 200 });
  assert.equal(screen.query(), 'mode=control&replay=screen&lines=200');
  screen.offset = 42; // a resume inside the buffer is not affected by replay=screen (server side)
  assert.equal(screen.query(), 'mode=control&resume=42&replay=screen&lines=200');
});

test('a control attach carries the pane\'s size (cols=C&rows=R), a watcher\'s none', () => {
  // docs/protocol.md "Attaching at the viewer's size": the server resizes the
  // session before it builds the replay. Asked for as each socket is made.
  const term = fakeTerm();
  let size = { cols: 100, rows: 30 };
  const c = new mod.Attachment({ id: 'x', mode: 'control', term, attachSize: () => size });
  assert.equal(c.query(), 'mode=control&cols=100&rows=30');
  c.offset = 7;
  size = { cols: 90, rows: 20 };
  assert.equal(c.query(), 'mode=control&resume=7&cols=90&rows=20');
  const screen = new mod.Attachment({ id: 'x', mode: 'control', term, screenLines: 200, attachSize: () => size });
  assert.equal(screen.query(), 'mode=control&replay=screen&lines=200&cols=90&rows=20');
  // No size it would not send as a resize: none measured (a hidden pane),
  // 0x0, a 1-column pane, beyond 1000, not integers.
  for (const bad of [null, { cols: 0, rows: 0 }, { cols: 1, rows: 24 }, { cols: 1001, rows: 24 },
    { cols: 80, rows: 1001 }, { cols: 80.5, rows: 24 }, { cols: NaN, rows: 24 }]) {
    size = bad;
    assert.equal(c.query(), 'mode=control&resume=7', JSON.stringify(bad));
  }
  size = { cols: 100, rows: 30 };
  const w = new mod.Attachment({ id: 'x', mode: 'watch', term, attachSize: () => size });
  assert.equal(w.query(), 'mode=watch');
});

/**
 * A page under a flood: an xterm.js stand-in whose write callbacks run only
 * when parse() is called (xterm.js falling behind), and a socket that
 * records what the page sends and whether it closed.
 */
function floodedPage(mode, attachedExtra, callbacks_ = {}) {
  // Node 20 has no WebSocket global; the page only reads WebSocket.OPEN.
  globalThis.WebSocket ??= { OPEN: 1 };
  const callbacks = [];
  const term = {
    onData: () => ({ dispose() {} }),
    onBinary: () => ({ dispose() {} }),
    write(data, cb) { if (cb) callbacks.push(cb); },
  };
  const parse = () => { while (callbacks.length) callbacks.shift()(); };
  const a = new mod.Attachment({ id: 'x', mode, term, ...callbacks_ });
  a.setState = () => {};
  let reconnects = 0;
  a.connectNow = () => { reconnects++; };
  const ws = { readyState: 1, sent: [], closed: null, send(m) { this.sent.push(m); }, close(code, reason) { this.closed = { code, reason }; } };
  a.ws = ws;
  a.pendingHighBytes = 1000;
  a.pendingLowBytes = 100;
  a.onControl({ type: 'attached', id: 'x', mode, reset: true, reason: 'initial', replay_from: 0, prelude_bytes: 0,
    replay_bytes: 0, offset: 0, snapshot_at: null, snapshot_bytes: 0, state: 'running', ...attachedExtra });
  parse(); // the (empty) replay is written: input enabled
  return { a, ws, parse, reconnects: () => reconnects };
}

const texts = (ws) => ws.sent.filter((m) => typeof m === 'string');

test('flow control: over the high mark the page pauses the session and keeps the socket', () => {
  const { a, ws, parse, reconnects } = floodedPage('control', { flow_control: true });
  assert.equal(a.inputEnabled, true);
  a.onOutput(new Uint8Array(600));
  assert.deepEqual(texts(ws), []);
  a.onOutput(new Uint8Array(600)); // 1200 unparsed > 1000
  assert.deepEqual(texts(ws), ['{"type":"pause"}']);
  assert.equal(ws.closed, null);
  assert.equal(a.ws, ws);
  // What was in flight still comes and is kept; no second pause.
  a.onOutput(new Uint8Array(5000));
  assert.equal(a.offset, 6200);
  assert.deepEqual(texts(ws), ['{"type":"pause"}']);
  // Typing while paused goes out at once.
  a.sendInput(new Uint8Array([0x03]));
  assert.deepEqual(ws.sent.filter((m) => typeof m !== 'string'), [new Uint8Array([0x03])]);
  // xterm.js catches up: resume, on the same socket.
  parse();
  assert.deepEqual(texts(ws), ['{"type":"pause"}', '{"type":"resume"}']);
  assert.equal(ws.closed, null);
  assert.equal(reconnects(), 0);
  assert.equal(a.attaches, 1);
  // And again at the next flood.
  a.onOutput(new Uint8Array(1500));
  assert.deepEqual(texts(ws).slice(2), ['{"type":"pause"}']);
});

test('flow control: an older server (no flow_control) gets the let-go, not a pause it would close 4400', () => {
  const { a, ws, parse, reconnects } = floodedPage('control', {});
  a.onOutput(new Uint8Array(1200));
  assert.deepEqual(texts(ws), []);
  assert.deepEqual(ws.closed, { code: 1000, reason: 'client catching up' });
  assert.equal(a.ws, null);
  parse();
  assert.equal(reconnects(), 1); // resumes from its offset
});

test('flow control: a watcher lets go (the server ignores a watcher\'s pause)', () => {
  const { a, ws, parse, reconnects } = floodedPage('watch', { flow_control: true });
  a.onOutput(new Uint8Array(1200));
  assert.deepEqual(texts(ws), []);
  assert.deepEqual(ws.closed, { code: 1000, reason: 'client catching up' });
  parse();
  assert.equal(reconnects(), 1);
});

test('server shutting down: offline with shutdown, retried; gone after it, the session ended with the server', async () => {
  // No page here: a hidden document keeps scheduleRetry from setting timers.
  globalThis.document ??= { visibilityState: 'hidden' };
  globalThis.navigator ??= { onLine: true };
  const run = async (after) => {
    const states = [];
    const { a } = attachment();
    delete a.setState; // the real one, reporting to onState
    a.cb.onState = (state, detail) => states.push({ state, ...detail });
    a.offset = 10;
    a.gotAttached = true;
    a.ws = null;
    a.onClose({ code: 1001, reason: 'server shutting down' });
    assert.deepEqual(states, [{ state: 'offline', retryInMs: states[0].retryInMs, shutdown: true }]);
    assert.equal(a.ended, false);
    // The next attempts: refused while nothing listens, then `after`.
    a.gotAttached = false;
    a.onClose({ code: 1006, reason: '' });
    await new Promise((r) => setImmediate(r));
    assert.equal(states.at(-1).state, 'offline');
    assert.equal(states.at(-1).shutdown, true);
    await after(a);
    return states.at(-1);
  };
  const realFetch = globalThis.fetch;
  try {
    let answer = null; // no server: fetch fails
    globalThis.fetch = async () => { if (!answer) throw new TypeError('fetch failed'); return answer; };
    // Back, and the socket is closed 4404 (accepted, then no such session).
    let last = await run(async (a) => { a.onClose({ code: 4404, reason: 'no such session' }); });
    assert.equal(last.state, 'ended');
    assert.equal(last.reason, 'shutdown');
    // Back, and the upgrade is refused before it; the probe says 404.
    last = await run(async (a) => {
      answer = { status: 404, ok: false };
      a.onClose({ code: 1006, reason: '' });
      await new Promise((r) => setImmediate(r));
    });
    assert.equal(last.state, 'ended');
    assert.equal(last.reason, 'shutdown');
    // A new attach (the server kept it after all) clears it.
    const { a } = attachment();
    a.shutdown = true;
    a.onControl({ type: 'attached', id: 'x', mode: 'control', reset: false, reason: 'resume', replay_from: 0, prelude_bytes: 0,
      replay_bytes: 0, offset: 0, snapshot_at: null, snapshot_bytes: 0, state: 'running' });
    assert.equal(a.shutdown, false);
  } finally {
    globalThis.fetch = realFetch;
  }
});

test('catching up: onCatchingUp on at the high mark, off under the low mark, and off when stopped', () => {
  for (const [mode, extra] of [['control', { flow_control: true }], ['control', {}], ['watch', { flow_control: true }]]) {
    const calls = [];
    const { a, parse } = floodedPage(mode, extra, { onCatchingUp: (on) => calls.push(on) });
    a.onOutput(new Uint8Array(600));
    assert.deepEqual(calls, [], mode);
    a.onOutput(new Uint8Array(600));
    assert.deepEqual(calls, [true], mode);
    assert.equal(a.catchingUp, true);
    a.onOutput(new Uint8Array(600)); // still behind: no second call
    assert.deepEqual(calls, [true], mode);
    parse();
    assert.deepEqual(calls, [true, false], mode);
    assert.equal(a.catchingUp, false);
    // The let-go ones connect again (connectNow is stubbed: a socket by hand).
    if (!a.ws) a.ws = { readyState: 1, send() {}, close() {} };
    a.onOutput(new Uint8Array(1200));
    assert.deepEqual(calls, [true, false, true], mode);
    a.stop();
    assert.deepEqual(calls, [true, false, true, false], mode);
  }
});
