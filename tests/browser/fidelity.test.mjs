// SPDX-License-Identifier: GPL-2.0-or-later
// Reattach fidelity in the browser (issue 9): the corpus of
// tests/vectors/fidelity-corpus.json (the same rows as server/tst_fidelity)
// against a real `tether serve` with a 64 KiB ring. A reference viewer,
// attached (control) from the start, records the stream in a page and
// renders it in an xterm.js Terminal of its own as it arrives; the steps
// drive the program through it. Once the ring has rolled over, the program
// is frozen (SIGSTOP to the terminal's foreground process group, until every
// thread of it is stopped) and a barrier written to the session's terminal
// ends the stream at a known offset; the dashboard then opens the session as
// a watcher in another page. When both have parsed every byte up to the session's offset,
// their xterm.js buffers are compared cell by cell (characters, width,
// colours, attributes), with the cursor, the active buffer, the modes, the
// normal screen under the alternate one and the pen (one character written
// to both).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  closeSync, constants, openSync, readdirSync, readFileSync, readlinkSync, writeSync,
} from 'node:fs';
import path from 'node:path';
import {
  api, bufferLines, closeAll, endedSessionScreensAside, launchBrowser, newPage, openDashboard, repoRoot, startTether,
  until,
} from './lib.mjs';

const corpus = JSON.parse(readFileSync(path.join(repoRoot, 'tests/vectors/fidelity-corpus.json'), 'utf8'));
const capacity = corpus.buffer_capacity;

/** Bytes of `text` (UTF-8) as a Latin-1 string: one character per byte, as the page keeps the stream. */
const latin1 = (text) => Buffer.from(text, 'utf8').toString('latin1');

/**
 * In the reference page (one for every row, beside the dashboard it loaded):
 * a control WebSocket to session `id` that keeps the whole stream
 * (window.refs[id].text, one character per byte) and writes it, with the
 * fixups and resizes in stream order, to an xterm.js Terminal of its own.
 */
async function attachReference(page, id) {
  await page.evaluate(async (sid) => {
    const { Terminal } = await import('/vendor/xterm.js');
    const { Unicode11Addon } = await import('/vendor/addon-unicode11.js');
    const host = document.createElement('div');
    host.style.cssText = 'position:absolute;left:-4000px;top:0;width:3000px;height:3000px';
    document.body.append(host);
    // The same character widths as the dashboard's terminal (Unicode 11,
    // terminalview.js createView): with xterm.js's default (Unicode 6) an emoji took
    // one cell here and two in the dashboard. term.unicode is proposed API.
    const term = new Terminal({ cols: 80, rows: 24, scrollback: 10000, allowProposedApi: true });
    term.loadAddon(new Unicode11Addon());
    term.unicode.activeVersion = '11';
    term.open(host);
    const ref = { term, host, text: '', received: 0, parsed: 0, attached: null, ws: null, resizedInAlternate: false };
    window.refs = window.refs || {};
    window.refs[sid] = ref;
    // Resizes go through the write queue: xterm.js resizes at once, while
    // bytes written before may not be parsed yet.
    const later = (fn) => term.write(new Uint8Array(0), fn);
    await new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://${location.host}/ws/${sid}`);
      ws.binaryType = 'arraybuffer';
      ref.ws = ws;
      ws.onerror = () => reject(new Error('reference WebSocket failed'));
      ws.onmessage = (ev) => {
        if (typeof ev.data === 'string') {
          const m = JSON.parse(ev.data);
          if (m.type === 'attached') {
            ref.attached = m;
            term.resize(m.cols, m.rows);
            resolve();
          } else if (m.type === 'size') {
            later(() => {
              if (term.buffer.active.type === 'alternate') ref.resizedInAlternate = true;
              term.resize(m.cols, m.rows);
            });
          } else if (m.type === 'fixup') {
            term.write(Uint8Array.from(m.data, (c) => c.charCodeAt(0)));
          }
          return;
        }
        const b = new Uint8Array(ev.data);
        ref.received += b.length;
        let s = '';
        for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode.apply(null, b.subarray(i, i + 8192));
        ref.text += s;
        term.write(b, () => { ref.parsed += b.length; });
      };
    });
  }, id);
}

/** Runs the row's steps through session `id`'s reference (see tests/support/fidelity.h for their meaning). */
async function drive(page, id, steps) {
  let search = 0;
  let mark = 0;
  const received = () => page.evaluate((i) => window.refs[i].received, id);
  const send = (text) => page.evaluate(([i, t]) => window.refs[i].ws.send(new TextEncoder().encode(t)), [id, text]);
  // Waits in the page (no round trip per poll) until no output came for
  // `ms`; with `text`, sends it each time it is quiet until `target` bytes
  // were received. False when `timeout` ms passed first.
  const quietLoop = (ms, timeout, text = null, target = 0) => page.evaluate(([i, q, limit, t, goal]) => new Promise((resolve) => {
    const ref = window.refs[i];
    const deadline = Date.now() + limit;
    let seen = ref.received;
    let since = Date.now();
    const tick = () => {
      if (ref.received !== seen) { seen = ref.received; since = Date.now(); }
      if (t !== null && ref.received >= goal) return resolve(true);
      if (Date.now() - since >= q) {
        if (t === null) return resolve(true);
        ref.ws.send(new TextEncoder().encode(t));
        since = Date.now();
      }
      if (Date.now() > deadline) return resolve(false);
      setTimeout(tick, 5);
    };
    tick();
  }), [id, ms, timeout, text, target]);
  for (const [i, step] of steps.entries()) {
    const timeout = (step.timeout ?? 15) * 1000;
    const target = mark + capacity + (step.extra ?? 0);
    const what = `step ${i} ${JSON.stringify(step)}`;
    switch (step.op) {
      case 'type':
        await send(step.text);
        break;
      case 'resize':
        await page.evaluate(([i, s]) => window.refs[i].ws.send(JSON.stringify({ type: 'resize', cols: s.cols, rows: s.rows })), [id, step]);
        break;
      case 'wait':
      case 'start': {
        const at = await until(async () => {
          const p = await page.evaluate(([i, t, from]) => window.refs[i].text.indexOf(t, from), [id, latin1(step.text), search]);
          return p >= 0 ? p + 1 : 0;
        }, timeout, what) - 1;
        search = at + latin1(step.text).length;
        if (step.op === 'start') mark = at;
        break;
      }
      case 'rolled':
        await until(async () => (await received()) >= target, timeout, what);
        break;
      case 'repeat':
        // One batch at a time: the program answers it before the next.
        assert.ok(await quietLoop(30, timeout, step.text, target), `${what} timed out`);
        break;
      case 'quiet':
        assert.ok(await quietLoop(step.ms, timeout), `${what} timed out`);
        break;
      default:
        throw new Error(`unknown step ${step.op}`);
    }
  }
  return mark;
}

/**
 * True when every thread of every process of session `sid` in process group
 * `pgid` is stopped (state 'T' in /proc/PID/task/TID/stat, proc(5); zombies
 * aside) and there is one: none can write to the terminal any more.
 */
let groupSeen = []; // what groupStopped() last saw: "pid/tid state wchan", for a failure's message

function groupStopped(sid, pgid) {
  let seen = 0;
  groupSeen = [];
  for (const pid of readdirSync('/proc').filter((d) => /^[0-9]+$/.test(d))) {
    let tasks;
    try { tasks = readdirSync(`/proc/${pid}/task`); } catch { continue; }
    for (const tid of tasks) {
      let stat;
      try { stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'latin1'); } catch { continue; }
      // "pid (comm) state ppid pgrp session ...": comm may hold spaces and ')'.
      const [state, , pgrp, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(session) !== sid || Number(pgrp) !== pgid) break;
      let wchan = '';
      try { wchan = readFileSync(`/proc/${pid}/task/${tid}/wchan`, 'latin1'); } catch { /* gone */ }
      groupSeen.push(`${pid}/${tid} ${state} ${wchan}`);
      // A zombie (watch's last child, not reaped when watch stopped) writes nothing.
      if (state === 'Z' || state === 'X') continue;
      if (state !== 'T') return false;
      seen++;
    }
  }
  return seen > 0;
}

/**
 * With the program stopped, writes a barrier (an OSC 2 title unique to the
 * row) to the session's terminal (the PTY slave that the session's leader
 * `pid` has as standard input) and returns the offset where the stream then
 * ends: just after the barrier, as the reference page received it.
 */
async function writeBarrier(page, id, pid, name) {
  const barrier = `\x1b]2;tether-fidelity-barrier-${name}\x07`;
  const tty = readlinkSync(`/proc/${pid}/fd/0`);
  assert.match(tty, /^\/dev\/pts\/[0-9]+$/);
  const fd = openSync(tty, constants.O_WRONLY | constants.O_NOCTTY);
  try { writeSync(fd, barrier); } finally { closeSync(fd); }
  return await until(async () => {
    const at = await page.evaluate(([i, b]) => window.refs[i].text.lastIndexOf(b), [id, latin1(barrier)]);
    return at >= 0 ? at + latin1(barrier).length : 0;
  }, 20000, 'the barrier in the stream');
}

/**
 * What a terminal shows (`which`: a session id, that reference's Terminal, or
 * 'late', the dashboard's), read from its xterm.js buffers: size, active buffer
 * type, cursor, modes, and every cell of the screen of the active buffer and
 * of the normal one (under the alternate screen), as strings
 * "chars|width|fg mode:colour|bg mode:colour|attributes".
 */
function readTerminal(page, which) {
  return page.evaluate((w) => {
    const t = w === 'late' ? window.tether.term : window.refs[w].term;
    const attrs = (c) => [c.isBold(), c.isItalic(), c.isDim(), c.isUnderline(), c.isBlink(), c.isInverse(),
      c.isInvisible(), c.isStrikethrough(), c.isOverline ? c.isOverline() : 0].map((x) => (x ? 1 : 0)).join('');
    // A blank shows only its background (with inverse, its foreground), its
    // underline, strike-out and overline: the rest of its attributes is left
    // out, so a blank written with a pen and one erased compare equal
    // (terminals differ in what an erase keeps; the server's snapshot paints
    // what its libvterm screen has).
    const blankAttrs = (c) => (c.isInverse() ? attrs(c)
      : ['0', '0', '0', c.isUnderline() ? 1 : 0, '0', '0', '0', c.isStrikethrough() ? 1 : 0,
        c.isOverline && c.isOverline() ? 1 : 0].join(''));
    const screen = (b) => {
      const rows = [];
      for (let y = 0; y < t.rows; y++) {
        const line = b.getLine(b.baseY + y);
        const cells = [];
        for (let x = 0; x < t.cols; x++) {
          const c = line && line.getCell(x);
          // A cell never written ('') and a written space show alike (blank).
          const blank = c && (c.getChars() || ' ') === ' ';
          cells.push(c ? `${c.getChars() || ' '}|${c.getWidth()}|`
            + `${blank && !c.isInverse() ? '' : `${c.getFgColorMode()}:${c.getFgColor()}`}|`
            + `${c.getBgColorMode()}:${c.getBgColor()}|${blank ? blankAttrs(c) : attrs(c)}` : '');
        }
        rows.push({ text: line ? line.translateToString(true) : '', cells, wrapped: line ? line.isWrapped : false });
      }
      return { rows, cursor: [b.cursorY, b.cursorX] };
    };
    return {
      size: `${t.cols}x${t.rows}`,
      type: t.buffer.active.type,
      cursorHidden: t._core?.coreService?.isCursorHidden ?? null,
      modes: { ...t.modes },
      active: screen(t.buffer.active),
      normal: t.buffer.active.type === 'alternate' ? screen(t.buffer.normal) : null,
    };
  }, which);
}

/**
 * A readable description of how `late` differs from `ref` (empty when equal).
 * `normal`: compare the normal screen under the alternate one too.
 */
function screenDiff(ref, late, normal = true) {
  const out = [];
  for (const k of ['size', 'type', 'cursorHidden']) {
    if (ref[k] !== late[k]) out.push(`${k}: ${ref[k]} vs ${late[k]}`);
  }
  if (JSON.stringify(ref.modes) !== JSON.stringify(late.modes)) {
    out.push(`modes: ${JSON.stringify(ref.modes)} vs ${JSON.stringify(late.modes)}`);
  }
  for (const which of normal ? ['active', 'normal'] : ['active']) {
    const a = ref[which];
    const b = late[which];
    if (!a && !b) continue;
    if (!a || !b) { out.push(`${which} buffer missing`); continue; }
    if (a.cursor.join() !== b.cursor.join()) out.push(`${which} cursor (row,col) ${a.cursor} vs ${b.cursor}`);
    let cells = 0;
    const shown = [];
    a.rows.forEach((row, y) => {
      row.cells.forEach((cell, x) => {
        if (cell !== b.rows[y]?.cells[x]) {
          cells++;
          if (shown.length < 8) shown.push(`  ${which} cell (${y},${x}): ${JSON.stringify(cell)} vs ${JSON.stringify(b.rows[y]?.cells[x])}`);
        }
      });
    });
    if (cells) {
      out.push(`${which}: ${cells} cells differ`, ...shown,
        `--- reference ${which} screen:`, ...a.rows.map((r) => `|${r.text}`),
        `--- late viewer ${which} screen:`, ...b.rows.map((r) => `|${r.text}`));
    }
  }
  return out.join('\n');
}

describe('reattach fidelity (dashboard, xterm.js)', { timeout: 280000, concurrency: 3 }, () => {
  let server;
  let browser;
  let refPage; // the reference terminals of every row, beside one dashboard

  before(async () => {
    server = await startTether({
      args: ['--buffer-size', String(capacity)],
      env: { LC_ALL: 'C.UTF-8', LESSHISTFILE: '-' },
      homeFiles: { '.bashrc': 'PS1="$ "\n' },
    });
    browser = await launchBrowser();
    refPage = await newPage(browser);
    await openDashboard(refPage, server);
  });

  after(() => closeAll(server, browser));

  for (const row of corpus.rows) {
    test(row.name, { timeout: 150000 }, async () => {
      const created = await api(server, 'POST', '/api/sessions',
        { command: ['/bin/bash'], cwd: server.home, cols: row.cols, rows: row.rows });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const id = created.body.id;
      // The late viewer's dashboard, loaded (its session list) while the row
      // runs: loading it takes seconds on a busy machine. It opens the
      // session later as a user would, by following its link (#/s/ID/watch).
      const latePage = await newPage(browser);
      const lateLoaded = openDashboard(latePage, server);
      lateLoaded.catch(() => {}); // handled: awaited below
      let frozen = 0;
      try {
        const t0 = Date.now();
        await attachReference(refPage, id);
        const refAttached = await refPage.evaluate((i) => window.refs[i].attached, id);
        assert.equal(refAttached.replay_from, 0);
        assert.equal(refAttached.prelude_bytes, 0);
        const t1 = Date.now();
        const mark = await drive(refPage, id, row.steps);
        const t2 = Date.now();

        // Freeze the program: SIGSTOP to its process group, then every thread
        // of it stopped (SIGSTOP is asynchronous); a barrier written to the
        // session's terminal then ends the stream at a known offset.
        const info = (await api(server, 'GET', `/api/sessions/${id}`)).body;
        assert.ok(info.foreground && info.foreground.pid > 0, 'a foreground process group');
        frozen = info.foreground.pid;
        process.kill(-frozen, 'SIGSTOP');
        await until(() => groupStopped(info.pid, frozen), 10000, 'the program to stop')
          .catch((e) => { throw new Error(`${e.message}; its process group: ${groupSeen.join(', ')}`); });
        const offset = await writeBarrier(refPage, id, info.pid, row.name);
        const s = (await api(server, 'GET', `/api/sessions/${id}`)).body;
        assert.equal(s.offset, offset, 'nothing after the barrier');
        assert.ok(offset - s.buffer_bytes > mark, `the program's first paint is gone from the ring (mark ${mark}, offset ${offset})`);
        await until(() => refPage.evaluate(([i, o]) => window.refs[i].parsed === o, [id, offset]), 20000, 'the reference to parse everything');

        // The late viewer: the dashboard, watching.
        const t3 = Date.now();
        await lateLoaded;
        const t4 = Date.now();
        await latePage.evaluate((h) => { location.hash = h; }, `#/s/${encodeURIComponent(id)}/watch`);
        await until(() => latePage.evaluate((o) => {
          const a = window.tether.attachment;
          return a && a.state === 'connected' && a.offset === o && a.parsed === a.received && a.received > 0;
        }, offset), 20000, 'the late viewer to parse its replay');
        const attached = await latePage.evaluate(() => window.tether.attachment.lastAttached);
        const how = `late viewer: ${JSON.stringify(attached)}; server screen: ${JSON.stringify(s.screen)}`;

        console.log(`${row.name}: reference ready ${t1 - t0} ms, steps ${t2 - t1} ms, stop and barrier ${t3 - t2} ms, late viewer: page ${t4 - t3} ms, replay ${Date.now() - t4} ms`);
        const ref = await readTerminal(refPage, id);
        const late = await readTerminal(latePage, 'late');
        // xterm.js reflows the normal buffer when it is resized (wrapped
        // lines are joined again at the new width), also while the
        // alternate screen is shown; the server's screen (libvterm 0.1.4)
        // does not reflow, so its normal screen keeps the old line breaks.
        // After such a resize the normal screen cannot match: it is left out,
        // and the test says so.
        const resizedInAlternate = await refPage.evaluate((i) => window.refs[i].resizedInAlternate, id);
        if (resizedInAlternate) console.log(`${row.name}: resized in the alternate screen: the normal screen under it is not compared (xterm.js reflows it)`);
        let diff = screenDiff(ref, late, !resizedInAlternate);
        if (!diff) {
          // The pen and the pending wrap: the same character written to both.
          const probe = (p, w) => p.evaluate((x) => new Promise((r) => (x === 'late' ? window.tether.term : window.refs[x].term).write('@', r)), w);
          await probe(refPage, id);
          await probe(latePage, 'late');
          const d = screenDiff(await readTerminal(refPage, id), await readTerminal(latePage, 'late'), !resizedInAlternate);
          if (d) diff = `after writing one character (pen, pending wrap):\n${d}`;
        }
        if (diff) assert.fail(`${row.name}: the late viewer differs from the reference\n${how}\n${diff}`);
        // Other rows' sessions end while this page lists them (rows run
        // three at a time): their miniatures' fetches may meet a 404.
        assert.deepEqual(endedSessionScreensAside(latePage.errors, [id]), []);
      } finally {
        if (frozen) process.kill(-frozen, 'SIGCONT');
        await refPage.evaluate((i) => {
          const r = window.refs && window.refs[i];
          if (!r) return;
          if (r.ws) r.ws.close();
          r.term.dispose();
          r.host.remove();
          delete window.refs[i];
        }, id);
        await lateLoaded.catch(() => {});
        await latePage.context().close();
        await api(server, 'DELETE', `/api/sessions/${id}`);
      }
    });
  }

  // Reattach at another size (issue 29, the corpus's size_rows): the row's
  // program runs at its size, typed through a control WebSocket; then the
  // dashboard opens the session (control) in a 1400x900 page, whose terminal
  // is taller: it attaches at its size, and every line of the program's
  // output must be in its buffer (scrollback + screen).
  for (const row of corpus.size_rows) {
    test(`${row.name} (reattach at another size)`, { timeout: 60000 }, async () => {
      const created = await api(server, 'POST', '/api/sessions',
        { command: ['/bin/bash'], cwd: server.home, cols: row.cols, rows: row.rows });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const id = created.body.id;
      const page = await newPage(browser, { viewport: { width: 1400, height: 900 } });
      try {
        await openDashboard(page, server);
        await page.evaluate(([sid, type, untilText]) => new Promise((resolve, reject) => {
          const ws = new WebSocket(`ws://${location.host}/ws/${sid}`);
          ws.binaryType = 'arraybuffer';
          let text = '';
          let typed = false;
          ws.onerror = () => reject(new Error('typist WebSocket failed'));
          ws.onmessage = (ev) => {
            if (typeof ev.data === 'string') return;
            text += String.fromCharCode(...new Uint8Array(ev.data));
            if (!typed && text.includes('$ ')) {
              typed = true;
              ws.send(new TextEncoder().encode(type));
            }
            const at = text.indexOf(untilText);
            if (at >= 0 && text.indexOf('$ ', at) > 0) {
              ws.close();
              resolve();
            }
          };
        }), [id, row.type, row.until]);
        const offset = (await api(server, 'GET', `/api/sessions/${id}`)).body.offset;
        await page.evaluate((h) => { location.hash = h; }, `#/s/${encodeURIComponent(id)}`);
        await until(() => page.evaluate((o) => {
          const a = window.tether.attachment;
          return a && a.state === 'connected' && a.offset >= o && a.parsed === a.received && a.received > 0;
        }, offset), 20000, 'the dashboard to parse its replay');
        const size = await page.evaluate(() => [window.tether.term.cols, window.tether.term.rows]);
        assert.ok(size[1] > row.rows, `the dashboard's terminal (${size}) is taller than the row's`);
        const lines = await bufferLines(page);
        const { prefix, from, to } = row.lines;
        const missing = [];
        for (let i = from; i <= to; i++) if (!lines.includes(`${prefix}${i}`)) missing.push(i);
        assert.deepEqual(missing, [], `lines missing from the dashboard's buffer at ${size}: ${missing.join(' ')}\n${lines.slice(-60).join('\n')}`);
        assert.equal(lines.filter((l) => l === `${prefix}${to}`).length, 1, 'the last line once');
        assert.deepEqual(page.errors, []);
      } finally {
        await page.context().close();
        await api(server, 'DELETE', `/api/sessions/${id}`);
      }
    });
  }
});
