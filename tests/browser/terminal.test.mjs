// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard terminal's own features (issue 14). Copy and paste: Ctrl+C copies when
// there is a selection and is ^C without one; Ctrl+Shift+C copies; Ctrl+V,
// Ctrl+Shift+V and Shift+Insert paste, bracketed when the program asked for
// it (mode 2004). Real Chromium, real clipboard, real programs in a PTY.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  api, createSessionInPage, launchBrowser, newPage, openDashboard, startTether,
  typeLine, until, waitForLine, waitForLive, closeAll, artifactsDir,
} from './lib.mjs';
import { mkdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';

/** The program in front of the session's terminal (protocol.md: foreground). */
async function foreground(server, id) {
  const r = await api(server, 'GET', `/api/sessions/${id}`);
  return r.body && r.body.foreground ? r.body.foreground.name : null;
}

/** Selects the first buffer line equal to `text` (xterm.js's own selection). */
async function selectLine(page, text) {
  await page.evaluate((t) => {
    const term = window.tether.term;
    const b = term.buffer.active;
    for (let i = 0; i < b.length; i++) {
      if (b.getLine(i).translateToString(true) === t) { term.select(0, i, t.length); return; }
    }
    throw new Error(`no line ${t}`);
  }, text);
  assert.equal(await page.evaluate(() => window.tether.term.getSelection()), text);
}

async function clipboardPage(browser, server) {
  const page = await newPage(browser);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.base.replace(/\/$/, '') });
  await openDashboard(page, server);
  return page;
}

const readClipboard = (page) => page.evaluate(() => navigator.clipboard.readText());
const writeClipboard = (page, text) => page.evaluate((t) => navigator.clipboard.writeText(t), text);

describe('clipboard', { timeout: 180000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startTether();
    browser = await launchBrowser({ webgl: true });
  });

  after(() => closeAll(server, browser));

  test('Ctrl+C copies a selection (the program keeps running); without one it is ^C', async () => {
    const page = await clipboardPage(browser, server);
    const id = await createSessionInPage(page);
    await typeLine(page, 'echo copy-$((6*7))-me');
    await waitForLine(page, /^copy-42-me$/);
    await typeLine(page, 'sleep 300');
    await until(async () => (await foreground(server, id)) === 'sleep', 10000, 'sleep in front');
    await writeClipboard(page, 'before');

    await selectLine(page, 'copy-42-me');
    await page.keyboard.press('Control+C');
    await until(async () => (await readClipboard(page)) === 'copy-42-me', 5000, 'the selection on the clipboard');
    assert.equal(await page.evaluate(() => window.tether.term.hasSelection()), false, 'the copy clears the selection');
    // The copy sent nothing: sleep is still in front a while later.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await foreground(server, id), 'sleep');

    // Ctrl+Shift+C copies too (and is never ^C).
    await writeClipboard(page, 'before');
    await selectLine(page, 'copy-42-me');
    await page.keyboard.press('Control+Shift+C');
    await until(async () => (await readClipboard(page)) === 'copy-42-me', 5000, 'Ctrl+Shift+C copying');
    await page.keyboard.press('Control+Shift+C');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await foreground(server, id), 'sleep', 'Ctrl+Shift+C without a selection sends nothing');

    // No selection: ^C reaches the program and ends sleep.
    await page.keyboard.press('Control+C');
    await until(async () => (await foreground(server, id)) === 'bash', 10000, 'sleep ended by ^C');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('Ctrl+V, Ctrl+Shift+V and Shift+Insert paste, bracketed when the program enabled 2004', async () => {
    const page = await clipboardPage(browser, server);
    const id = await createSessionInPage(page);
    for (const key of ['Control+V', 'Control+Shift+V', 'Shift+Insert']) {
      // The program turns bracketed paste on and prints what it reads, in hex.
      // It says when its terminal is raw: a paste before that would be echoed.
      await page.evaluate(() => window.tether.term.clear());
      await typeLine(page, "printf '\\e[?2004h'; stty raw -echo; printf 'ready-%s\\r\\n' raw; head -c 18 | od -An -tx1 -w64 | tr -d ' ' | sed 's/^/got:/'; stty sane; printf '\\e[?2004l'");
      await waitForLine(page, /^ready-raw$/);
      await writeClipboard(page, 'pasted');
      await page.locator('.xterm-helper-textarea').focus();
      await page.keyboard.press(key);
      // ESC [ 2 0 0 ~  p a s t e d  ESC [ 2 0 1 ~
      await waitForLine(page, /^got:1b5b3230307e7061737465641b5b3230317e$/);
      await until(async () => (await foreground(server, id)) === 'bash', 10000, 'the reader to end');
    }
    // Without 2004 the text arrives as it is.
    await page.evaluate(() => window.tether.term.clear());
    await typeLine(page, "stty raw -echo; printf 'ready-%s\\r\\n' plain; head -c 6 | od -An -c | tr -d ' ' | sed 's/^/plain:/'; stty sane");
    await waitForLine(page, /^ready-plain$/);
    await page.keyboard.press('Control+V');
    await waitForLine(page, /^plain:pasted$/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a 3 MiB paste arrives whole (sent in pieces, taken at the program\'s pace)', async () => {
    // A paste over 1 MiB was one WebSocket message, which the server closes
    // 1009; and past 1 MiB of queued input it closed 1013 while the program
    // was still reading, losing the rest (a user's 1,470,000-byte paste into
    // `wc -c` gave 1,262,023). Now the page sends 64 KiB pieces and the server
    // reads them as the program takes them (protocol.md "Input flow control").
    const size = 3 * 1024 * 1024;
    let x = 2463534242;
    const chars = new Array(size);
    for (let i = 0; i < size; i++) {
      x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
      chars[i] = String.fromCharCode(0x20 + (x % 95));
    }
    const text = chars.join('');
    const md5 = createHash('md5').update(text, 'latin1').digest('hex');
    const page = await clipboardPage(browser, server);
    const id = await createSessionInPage(page);
    await typeLine(page, `stty raw -echo; printf 'ready-%s\\r\\n' big; head -c ${size} | md5sum | sed 's/^/sum:/'; stty sane`);
    await waitForLine(page, /^ready-big$/);
    await writeClipboard(page, text);
    await page.locator('.xterm-helper-textarea').focus();
    await page.keyboard.press('Control+V');
    await waitForLine(page, new RegExp(`^sum:${md5}  -$`), 120000);
    await until(async () => (await foreground(server, id)) === 'bash', 10000, 'the reader to end');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

describe('buffer meter', { timeout: 120000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startTether();
    browser = await launchBrowser({ webgl: true });
  });

  after(() => closeAll(server, browser));

  test('the open session\'s buffer meter follows its output live, without a reload', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    const text = page.locator(`.session[data-id="${id}"] .buffer-text`);
    await text.waitFor();
    // Output causes no list event: only the page's own count can move the meter.
    await typeLine(page, 'yes 0123456789abcdef | head -c 300000; echo; echo meter-$((6*7))');
    await waitForLine(page, /^meter-42$/, 30000);
    await new Promise((r) => setTimeout(r, 300)); // the prompt after it, too
    const kept = (await api(server, 'GET', `/api/sessions/${id}`)).body.buffer_bytes;
    assert.ok(kept > 300000, `buffer_bytes ${kept}`);
    const want = `${Math.round(kept / 1024)} KiB of 1 MiB`;
    await until(async () => (await text.textContent()) === want, 5000,
      `the meter to read "${want}" (it reads "${await text.textContent()}")`);
    const width = await page.locator(`.session[data-id="${id}"] .buffer-fill`).evaluate((e) => parseFloat(e.style.width));
    assert.ok(width > 25 && width < 35, `fill ${width}%`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

describe('search and font size', { timeout: 120000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startTether();
    browser = await launchBrowser({ webgl: true });
  });

  after(() => closeAll(server, browser));

  test('search finds a line in the scrollback and scrolls to it', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    await createSessionInPage(page);
    await typeLine(page, 'seq 1 100; echo needle-$((6*7)); seq 101 400; echo after-$((6*7))');
    await waitForLine(page, /^after-42$/);
    const at = await page.evaluate(() => {
      const b = window.tether.term.buffer.active;
      for (let i = 0; i < b.length; i++) if (b.getLine(i).translateToString(true) === 'needle-42') return i;
      return -1;
    });
    const view = () => page.evaluate(() => [window.tether.term.buffer.active.viewportY, window.tether.term.rows]);
    const [top] = await view();
    assert.ok(at >= 0 && at < top, `needle at ${at}, view from ${top}: it must be out of view`);

    await page.locator('.xterm-helper-textarea').focus();
    await page.keyboard.press('Control+Shift+F');
    await page.locator('#search-input').waitFor({ state: 'visible' });
    assert.equal(await page.evaluate(() => document.activeElement.id), 'search-input');
    await page.keyboard.type('needle-42');
    await page.keyboard.press('Enter');
    await until(async () => {
      const [y, rows] = await view();
      return at >= y && at < y + rows;
    }, 5000, 'the match in view');
    assert.equal(await page.evaluate(() => window.tether.term.getSelection()), 'needle-42');
    await until(async () => /1 of 1|1 match/.test(await page.locator('#search-count').textContent()), 5000, 'the count');
    mkdirSync(artifactsDir, { recursive: true });
    await page.screenshot({ path: path.join(artifactsDir, 'dashboard-search.png') });
    await page.fill('#search-input', 'no-such-text-anywhere');
    await until(async () => (await page.locator('#search-count').textContent()) === 'No match', 5000, 'No match');
    // Escape closes the box and gives the keys back to the terminal.
    await page.keyboard.press('Escape');
    await page.locator('#search').waitFor({ state: 'hidden' });
    assert.equal(await page.evaluate(() => document.activeElement.className), 'xterm-helper-textarea');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('the GPU renderer where WebGL2 exists, the DOM renderer without it', async () => {
    for (const webgl2 of [true, false]) {
      const page = await newPage(browser);
      if (!webgl2) {
        await page.addInitScript(() => {
          const get = HTMLCanvasElement.prototype.getContext;
          HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
            return kind === 'webgl2' ? null : get.call(this, kind, ...rest);
          };
        });
      }
      await openDashboard(page, server);
      const has = await page.evaluate(() => !!document.createElement('canvas').getContext('webgl2'));
      assert.equal(has || !webgl2, true, 'without the override this Chromium has WebGL2 (SwiftShader)');
      await createSessionInPage(page);
      await typeLine(page, `echo drawn-by-$((6*7))`);
      await waitForLine(page, /^drawn-by-42$/);
      assert.equal(await page.evaluate(() => window.tether.renderer), has ? 'webgl' : 'dom');
      // The DOM renderer draws rows as elements; the GPU one into a canvas.
      // waitForLine reads xterm.js's buffer; the DOM renderer paints it on
      // the next animation frame, so wait for the row to be drawn.
      if (!has)
        await page.waitForFunction(() => (document.querySelector('.xterm-rows')?.textContent || '').includes('drawn-by-42'));
      const rowsText = await page.evaluate(() => document.querySelector('.xterm-rows')?.textContent || '');
      assert.equal(rowsText.includes('drawn-by-42'), !has);
      assert.deepEqual(page.errors, []);
      await page.context().close();
    }
  });

  test('the font size is remembered by the browser', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    await createSessionInPage(page);
    const size = () => page.evaluate(() => window.tether.term.options.fontSize);
    const before = await size();
    const cols = await page.evaluate(() => window.tether.term.cols);
    await page.click('#font-larger');
    await page.click('#font-larger');
    assert.equal(await size(), before + 2);
    assert.equal(await page.locator('#font-size').textContent(), `${before + 2}px`);
    // The pane holds fewer columns at the larger size, and the session follows.
    await until(async () => (await page.evaluate(() => window.tether.term.cols)) < cols, 5000, 'fewer columns');
    await page.reload();
    await waitForLive(page);
    assert.equal(await size(), before + 2);
    await page.click('#font-smaller');
    assert.equal(await size(), before + 1);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

describe('session rows and notifications', { timeout: 120000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startTether();
    browser = await launchBrowser({ webgl: true });
  });

  after(() => closeAll(server, browser));

  test('Attach is an action of its own on a session row', async () => {
    const s = (await api(server, 'POST', '/api/sessions', { command: ['/bin/sh', '-c', 'echo attach-$((6*7)); exec sleep 300'] })).body;
    const page = await newPage(browser);
    await openDashboard(page, server);
    const attach = page.locator(`.session[data-id="${s.id}"] .attach`);
    await attach.waitFor();
    assert.equal(await attach.textContent(), 'Attach');
    await attach.click();
    await until(async () => (await page.evaluate(() => location.hash)) === `#/s/${s.id}`, 5000, 'the address');
    await waitForLive(page);
    await waitForLine(page, /^attach-42$/);
    assert.equal((await api(server, 'GET', `/api/sessions/${s.id}`)).body.viewer_kind, 'browser');
    // Attached here: the action is gone from its row.
    await attach.waitFor({ state: 'hidden' });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('Rename names the open session; a taken name is refused and asked again; renames elsewhere show live', async () => {
    const other = (await api(server, 'POST', '/api/sessions', { command: ['/bin/sh'], name: 'taken' })).body;
    assert.equal(other.name, 'taken');
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    // The answers to the page's dialogs, in order (prompt: a name, or null to cancel).
    const answers = [];
    const dialogs = [];
    page.on('dialog', async (d) => {
      dialogs.push({ type: d.type(), message: d.message() });
      const a = answers.shift();
      if (d.type() === 'prompt' && typeof a === 'string') await d.accept(a);
      else if (d.type() === 'alert') await d.accept();
      else await d.dismiss();
    });
    const title = page.locator(`.session[data-id="${id}"] .session-title`);

    answers.push('my build');
    await page.locator('#rename').click();
    await until(async () => (await title.textContent()) === 'my build', 5000, 'the row to show the name');
    assert.equal((await api(server, 'GET', `/api/sessions/${id}`)).body.name, 'my build');
    assert.equal(await page.locator('#current-title').textContent(), 'my build');
    assert.equal(await page.title(), 'my build · Tether');
    assert.equal(dialogs[0].type, 'prompt');

    // Taken: said (409), asked again with the name typed; cancelled: unchanged.
    answers.push('taken', null, null);
    await page.locator('#rename').click();
    await until(async () => dialogs.length >= 4, 5000, 'prompt, alert, prompt');
    assert.deepEqual(dialogs.slice(1, 4).map((d) => d.type), ['prompt', 'alert', 'prompt']);
    assert.match(dialogs[2].message, /name "taken" is taken by session/);
    assert.equal((await api(server, 'GET', `/api/sessions/${id}`)).body.name, 'my build');

    // Renamed through the API: the list follows (the event stream).
    const r = await api(server, 'PATCH', `/api/sessions/${other.id}`, { name: 'from the API' });
    assert.equal(r.status, 200);
    await until(async () => (await page.locator(`.session[data-id="${other.id}"] .session-title`).textContent())
      === 'from the API', 5000, 'the other row to follow');
    // Chromium logs the refused PATCH itself; nothing else went wrong.
    assert.deepEqual(page.errors.filter((e) => !/status of 409 \(Conflict\)/.test(e)), []);
    assert.equal(page.errors.length, 1, page.errors.join('\n'));
    await page.context().close();
  });

  test('a session that exits while the tab is hidden raises a notification (with permission)', async () => {
    const page = await newPage(browser);
    // The browser's Notification and the tab's visibility, under the test's
    // control: headless Chromium neither shows notifications nor hides tabs.
    await page.addInitScript(() => {
      window.__notes = [];
      window.__hidden = false;
      class FakeNotification {
        constructor(title, opts) { window.__notes.push({ title, body: opts && opts.body }); }
        close() {}
        static requestPermission() { FakeNotification.permission = 'granted'; return Promise.resolve('granted'); }
      }
      FakeNotification.permission = 'default';
      window.Notification = FakeNotification;
      Object.defineProperty(Document.prototype, 'visibilityState', {
        configurable: true, get() { return window.__hidden ? 'hidden' : 'visible'; },
      });
    });
    await openDashboard(page, server);
    const button = page.locator('#notify-enable');
    await button.waitFor();
    await button.click();
    await button.waitFor({ state: 'hidden' });

    // Visible tab: no notification.
    const seen = (await api(server, 'POST', '/api/sessions', { command: ['/bin/sh', '-c', 'sleep 1; exit 4'] })).body;
    await until(async () => (await page.locator(`.session[data-id="${seen.id}"] .state`).textContent()) === 'exited 4',
      10000, 'the first session to show as exited');
    // Hidden tab: one, saying how it ended.
    const s = (await api(server, 'POST', '/api/sessions', { command: ['/bin/sh', '-c', 'sleep 1; exit 3'] })).body;
    await page.locator(`.session[data-id="${s.id}"]`).waitFor();
    await page.evaluate(() => { window.__hidden = true; });
    await until(async () => (await page.evaluate(() => window.__notes.length)) > 0, 10000, 'a notification');
    const notes = await page.evaluate(() => window.__notes);
    assert.equal(notes.length, 1, JSON.stringify(notes));
    // The command keeps its quoting, as `tether list` shows it.
    assert.equal(notes[0].title, "sh -c 'sleep 1; exit 3' exited");
    assert.equal(notes[0].body, 'Process exited with code 3');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
