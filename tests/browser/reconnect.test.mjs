// SPDX-License-Identifier: GPL-2.0-or-later
// Network blips and reattach: a TCP proxy between Chromium and tether cuts
// the connections while the program keeps writing; the page must reconnect
// by itself with `resume=` and show every line exactly once. A full-screen
// program (less) must come back in the alternate screen after a reload, also
// when its ring buffer has rolled over (the replay then starts mid-stream and
// the server's prelude restores the modes).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  api, artifactsDir, assertDropResumes, networkErrorsAside, bufferLines, createSessionInPage, launchBrowser, newPage, openDashboard, screenLines,
  startProxy, startTether, typeLine, until, waitForLine, waitForLive,
  closeAll,
} from './lib.mjs';

describe('reconnect', { timeout: 240000 }, () => {
  let server;
  let browser;

  before(async () => {
    // Smallest ring (64 KiB) so the full-screen test rolls it over quickly.
    server = await startTether({ args: ['--buffer-size', '65536'] });
    browser = await launchBrowser();
  });

  after(() => closeAll(server, browser));

  test('a dropped connection resumes with nothing lost and nothing twice', async () => {
    const proxy = await startProxy(server.port);
    try {
      const page = await newPage(browser);
      await openDashboard(page, server, '', proxy.base);
      const id = await createSessionInPage(page);
      await assertDropResumes(page, server, proxy, id, 60);

      // Typing works after the resume.
      await typeLine(page, 'echo after-blip');
      await waitForLine(page, /^after-blip$/);
      assert.deepEqual(networkErrorsAside(page.errors), []);
      await page.context().close();
    } finally {
      await proxy.close();
    }
  });

  test('a restart in place (close 1012) resumes with nothing lost and nothing twice', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    const total = 60;
    await typeLine(page, `for i in $(seq 1 ${total}); do echo RST-$i; sleep 0.05; done; echo RST-DONE`);
    await waitForLine(page, /^RST-5$/);
    const before = (await api(server, 'GET', '/api/restart')).body;
    const attaches = await page.evaluate(() => window.tether.attachment.attaches);

    const r = await api(server, 'POST', '/api/restart');
    assert.equal(r.status, 202);
    await until(async () => {
      const now = (await api(server, 'GET', '/api/restart')).body;
      return now && now.instance && now.instance !== before.instance;
    }, 15000, 'the new process image');
    const after = (await api(server, 'GET', '/api/restart')).body;
    assert.equal(after.pid, before.pid);
    await until(async () => (await page.evaluate(() => window.tether.attachment.attaches)) > attaches,
      15000, 'the page to attach again');
    await waitForLive(page);
    const attached = await page.evaluate(() => window.tether.attachment.lastAttached);
    assert.equal(attached.reason, 'resume');
    assert.equal(attached.reset, false);
    await waitForLine(page, /^RST-DONE$/, 20000);

    const marks = (await bufferLines(page)).filter((l) => /^RST-\d+$/.test(l));
    assert.deepEqual(marks, Array.from({ length: total }, (_, i) => `RST-${i + 1}`));
    await until(async () => (await page.evaluate(() => window.tether.attachment.offset))
      === (await api(server, 'GET', `/api/sessions/${id}`)).body.offset, 10000, 'offsets to match');
    await typeLine(page, 'echo after-restart');
    await waitForLine(page, /^after-restart$/);
    assert.deepEqual(networkErrorsAside(page.errors), []);
    await page.context().close();
  });

  test('repeated cuts right after each reattach keep every line once', async () => {
    const proxy = await startProxy(server.port);
    try {
      const page = await newPage(browser);
      await openDashboard(page, server, '', proxy.base);
      const id = await createSessionInPage(page);
      await typeLine(page, 'for i in $(seq 1 400); do echo LINE-$i; done; echo LINES-DONE');
      await waitForLine(page, /^LINES-DONE$/);
      // Several cuts in a row, each right after the page came back.
      for (let round = 0; round < 3; round++) {
        const before = await page.evaluate(() => window.tether.attachment.attaches);
        proxy.cutAll();
        await page.waitForFunction((n) => window.tether.attachment.attaches > n
          && window.tether.state === 'connected', before, { timeout: 10000 });
      }
      await waitForLive(page);
      await typeLine(page, 'echo again-$((1+1))');
      await waitForLine(page, /^again-2$/);
      const lines = (await bufferLines(page)).filter((l) => /^LINE-\d+$/.test(l));
      assert.deepEqual(lines, Array.from({ length: 400 }, (_, i) => `LINE-${i + 1}`));
      assert.equal((await api(server, 'GET', `/api/sessions/${id}`)).body.attached, true);
      assert.deepEqual(networkErrorsAside(page.errors), []);
      await page.context().close();
    } finally {
      await proxy.close();
    }
  });

  test('a flood of output keeps the page responsive and ends in order', async () => {
    // About 11 MB as fast as seq can write it: faster than xterm.js parses.
    // The page pauses the session while xterm.js is over 4 MiB behind
    // (flow control; an older server: it lets go of the socket and resumes
    // from its offset), so xterm.js never reaches its 50 MB discard limit.
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    const started = Date.now();
    await typeLine(page, 'seq 1 1500000; echo FLOOD-DONE');
    await waitForLine(page, /^FLOOD-DONE$/, 60000);
    const elapsed = Date.now() - started;
    const lines = await bufferLines(page);
    const end = lines.indexOf('FLOOD-DONE');
    const tail = lines.slice(end - 200, end);
    assert.deepEqual(tail, Array.from({ length: 200 }, (_, i) => String(1500000 - 199 + i)));
    await until(async () => (await page.evaluate(() => window.tether.attachment.offset))
      === (await api(server, 'GET', `/api/sessions/${id}`)).body.offset, 10000, 'offsets to match');
    // Still interactive.
    await typeLine(page, 'echo after-flood');
    await waitForLine(page, /^after-flood$/);
    const attaches = await page.evaluate(() => window.tether.attachment.attaches);
    console.log(`flood: ${elapsed} ms, ${attaches} attach(es)`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a flood with a small ring loses no line: the page pauses the session (flow control)', async () => {
    // The page used to let go of its socket when xterm.js fell behind; the
    // session then drained into its 64 KiB ring at full speed and the page
    // came back to a redraw from the ring: the lines in between were gone.
    // Now it pauses the session. The page's marks are lowered (64/16 KiB)
    // so that a short flood passes the high mark several times.
    const page = await newPage(browser);
    await openDashboard(page, server);
    await createSessionInPage(page);
    const total = 150000; // about 1 MB
    const before = await page.evaluate(() => {
      const a = window.tether.attachment;
      a.pendingHighBytes = 64 * 1024;
      a.pendingLowBytes = 16 * 1024;
      // Everything the page receives, as text, the control messages it
      // sends, and whether "Catching up…" was on screen as each went.
      const flow = { text: '', sent: [], maxBehind: 0, noteShown: [] };
      window.flowTest = flow;
      const decoder = new TextDecoder();
      const onOutput = a.onOutput.bind(a);
      a.onOutput = (bytes) => {
        flow.text += decoder.decode(bytes, { stream: true });
        onOutput(bytes);
        flow.maxBehind = Math.max(flow.maxBehind, a.received - a.parsed);
      };
      const send = WebSocket.prototype.send;
      WebSocket.prototype.send = function (data) {
        if (typeof data === 'string') {
          flow.sent.push(data);
          const note = document.getElementById('catchup');
          flow.noteShown.push(!!note && !note.hidden && note.offsetParent !== null);
        }
        return send.call(this, data);
      };
      return { attaches: a.attaches, flowControl: a.flowControl };
    });
    assert.equal(before.flowControl, true);
    assert.ok(await page.locator('#catchup').isHidden(), 'no "Catching up" before the flood');
    await typeLine(page, `seq 1 ${total}; echo FLOOD-DONE`);
    // While paused the page says so (it showed nothing: a frozen terminal).
    await page.locator('#catchup').waitFor({ state: 'visible', timeout: 30000 });
    assert.equal((await page.locator('#catchup').textContent()).trim(), 'Catching up…');
    await page.screenshot({ path: path.join(artifactsDir, 'dashboard-catching-up.png') });
    await waitForLine(page, /^FLOOD-DONE$/, 60000);
    const after = await page.evaluate(() => {
      const a = window.tether.attachment;
      const flow = window.flowTest;
      return {
        attaches: a.attaches, sent: flow.sent, text: flow.text, maxBehind: flow.maxBehind, noteShown: flow.noteShown,
      };
    });
    const pauses = after.sent.filter((m) => m === '{"type":"pause"}').length;
    console.log(`flow-controlled flood: ${pauses} pauses, at most ${after.maxBehind} bytes behind`);
    assert.ok(pauses >= 1, 'the page paused the session');
    assert.equal(after.sent.filter((m) => m === '{"type":"resume"}').length, pauses);
    // On screen at every pause and every resume (it lingers a second after).
    after.sent.forEach((m, i) => {
      if (m === '{"type":"pause"}' || m === '{"type":"resume"}') assert.ok(after.noteShown[i], `"Catching up" shown at ${m} #${i}`);
    });
    // And gone once the page has caught up.
    await page.locator('#catchup').waitFor({ state: 'hidden', timeout: 5000 });
    assert.equal(after.attaches, before.attaches, 'never let go, no reset replay');
    // Every line exactly once, in order.
    const expected = Array.from({ length: total }, (_, i) => `${i + 1}\r\n`).join('') + 'FLOOD-DONE\r\n';
    const first = /(?<![0-9])1\r\n2\r\n3\r\n/.exec(after.text);
    assert.ok(first, 'the stream has the first lines');
    const at = first.index;
    assert.ok(after.text.slice(at, at + expected.length) === expected, 'every line once, in order');
    // Still interactive.
    await typeLine(page, 'echo after-flow');
    await waitForLine(page, /^after-flow$/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('scroll margins a resize reset stay reset after a reload (fixup)', async () => {
    // A program sets scroll margins for its size (as vim does), then the
    // window grows: the terminal resets the margins, the bytes do not say so.
    // Without the server's fixup, the replay after a reload would scroll in
    // those 5 rows again and lose the lines above them.
    const page = await newPage(browser, { viewport: { width: 1000, height: 500 } });
    await openDashboard(page, server);
    await createSessionInPage(page);
    await typeLine(page, "printf '\\033[1;5r'; clear; echo margins-set");
    await waitForLine(page, /^margins-set$/);
    await page.setViewportSize({ width: 1200, height: 700 });
    await page.waitForFunction(() => window.tether.attachment.lastAttached && window.tether.term.rows > 20,
      null, { timeout: 10000 });
    await page.reload();
    await waitForLive(page);
    // One command at a time: keys typed before the shell reads them are
    // echoed by the terminal into the previous command's output ("eline-5"
    // in a slow run, the shell integration's prompt hook being slower still
    // under the sanitizers).
    for (let i = 1; i <= 10; i++) {
      await typeLine(page, `echo line-${i}`);
      await waitForLine(page, new RegExp(`^line-${i}$`));
    }
    const screen = await screenLines(page);
    for (let i = 1; i <= 10; i++) assert.ok(screen.includes(`line-${i}`), `line-${i} is on the screen:\n${screen.join('\n')}`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('less survives a reload in the alternate screen, also after the ring rolled over', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    await typeLine(page, "seq -f 'row %05g ......................................................................' 1 5000 > big.txt && less big.txt");
    await page.waitForFunction(() => window.tether.term.buffer.active.type === 'alternate', null, { timeout: 10000 });
    await waitForLine(page, /^row 00001 /);

    // Page forward until well over the 64 KiB ring has been written.
    const rows = await page.evaluate(() => window.tether.term.rows);
    let pages = 0;
    while ((await api(server, 'GET', `/api/sessions/${id}`)).body.offset < 3 * 65536) {
      await page.keyboard.press('Space');
      pages++;
      await waitForLine(page, new RegExp(`^row ${String(1 + pages * (rows - 1)).padStart(5, '0')} `));
    }
    const s = (await api(server, 'GET', `/api/sessions/${id}`)).body;
    assert.ok(s.offset > s.buffer_capacity, 'the ring has rolled over');
    const before = await screenLines(page);
    assert.ok(before.some((l) => /^row \d{5} /.test(l)));

    await page.reload();
    await waitForLive(page);
    const attached = await page.evaluate(() => window.tether.attachment.lastAttached);
    assert.ok(attached.replay_from > 0, 'the replay starts mid-stream');
    assert.ok(attached.prelude_bytes > 0, 'the prelude restores the modes in force');
    await page.waitForFunction(() => window.tether.term.buffer.active.type === 'alternate', null, { timeout: 10000 });
    await until(async () => JSON.stringify(await screenLines(page)) === JSON.stringify(before), 10000,
      'the same screen after the reload');

    // The program is live: q leaves less, back to the normal screen and shell.
    await page.keyboard.press('q');
    await page.waitForFunction(() => window.tether.term.buffer.active.type === 'normal', null, { timeout: 10000 });
    await typeLine(page, 'echo back-from-less');
    await waitForLine(page, /^back-from-less$/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
