// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard in Debian's Chromium against a real `tether serve`: key
// cookie, sessions created and killed from the page, typing, reload with
// scrollback, takeover (4409), read-only watching, exit (4410), no key,
// replayed queries that must not be answered, id prefixes in the address, and
// a server restart under an open page.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  api, assertReloadReattaches, bufferLines, createSessionInPage, newPage, openDashboard, screenLines, startTether,
  startTetherAndBrowser,
  typeLine, until, waitForLine, waitForLive, waitForState,
  closeAll,
} from './lib.mjs';

describe('dashboard', { timeout: 240000 }, () => {
  let server;
  let browser;

  before(async () => ({ server, browser } = await startTetherAndBrowser()));

  after(() => closeAll(server, browser));

  test('a full list ends an exited session, never a running one, and says so', async () => {
    const small = await startTether({ args: ['--max-sessions', '1'] });
    try {
      // Only a running session: creating is refused with the server's words.
      const running = (await api(small, 'POST', '/api/sessions', { command: ['/bin/sh', '-c', 'exec sleep 300'] })).body;
      const page = await newPage(browser);
      await openDashboard(page, small);
      await page.locator(`.session[data-id="${running.id}"]`).waitFor();
      await page.fill('#new-command', '');
      await page.press('#new-command', 'Enter');
      const error = page.locator('#new-error');
      await error.waitFor({ state: 'visible' });
      assert.match(await error.textContent(), /limit.*--max-sessions/);
      assert.equal((await api(small, 'GET', `/api/sessions/${running.id}`)).status, 200);
      // Once it has exited it makes room, and the page says which it was.
      await api(small, 'DELETE', `/api/sessions/${running.id}`);
      const first = (await api(small, 'POST', '/api/sessions', { command: ['/bin/sh', '-c', 'echo sleep 300 done'] })).body;
      await until(async () => (await api(small, 'GET', `/api/sessions/${first.id}`)).body.state === 'exited',
        15000, 'the first session to exit');
      await page.locator(`.session[data-id="${first.id}"]`).waitFor();
      await createSessionInPage(page);
      const note = page.locator('#new-note');
      await note.waitFor({ state: 'visible' });
      assert.match(await note.textContent(), /Session limit reached: .*sleep 300 done.* was ended to make room/);
      assert.equal((await api(small, 'GET', `/api/sessions/${first.id}`)).status, 404);
      await page.context().close();
    } finally {
      await small.stop();
    }
  });

  test('opens with the key, creates a session and shows typed output', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    // The key became a cookie: the address no longer shows it.
    assert.equal(page.url(), server.base);
    await page.waitForSelector('#empty:not([hidden])');
    const id = await createSessionInPage(page);
    await typeLine(page, 'echo hello');
    await waitForLine(page, /^hello$/);

    const r = await api(server, 'GET', `/api/sessions/${id}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.attached, true);
    assert.equal(r.body.state, 'running');
    // The session starts at the pane's size, not a default 80×24.
    const size = await page.evaluate(() => [window.tether.term.cols, window.tether.term.rows]);
    assert.deepEqual([r.body.cols, r.body.rows], size);
    assert.ok(size[0] > 80 && size[1] > 24, `pane size ${size}`);

    // The list shows it as attached here; the indicator says connected.
    const item = page.locator(`.session[data-id="${id}"]`);
    await item.waitFor();
    await until(async () => (await item.locator('.viewer').textContent()) === 'attached here', 10000, 'attached here');
    assert.equal(await item.locator('.state').textContent(), 'running');
    assert.equal(await page.locator('#conn').getAttribute('data-state'), 'connected');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('reload reattaches to the same session with its scrollback, once', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    await typeLine(page, 'echo before-reload-$((6*7))');
    await waitForLine(page, /^before-reload-42$/);
    await assertReloadReattaches(page, server, id, 'before-reload-42');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a second page takes over (4409) and the first can take it back', async () => {
    const a = await newPage(browser);
    await openDashboard(a, server);
    const id = await createSessionInPage(a);
    await typeLine(a, 'echo from-a');
    await waitForLine(a, /^from-a$/);

    const b = await newPage(browser);
    await openDashboard(b, server, `#/s/${id}`);
    await waitForLive(b);
    await waitForLine(b, /^from-a$/);

    await waitForState(a, 'ended');
    await a.waitForSelector('#banner:not([hidden])');
    assert.equal(await a.locator('#banner-title').textContent(), 'Opened in another window');
    const takeOver = a.getByRole('button', { name: 'Take over' });
    assert.ok(await takeOver.isVisible());
    // The page gave up on its own: no reconnect loop fighting the other page
    // (the indicator speaks of Tether, still connected; the attachment ended).
    assert.equal(await a.evaluate(() => window.tether.state), 'ended');

    await typeLine(b, 'echo from-b');
    await waitForLine(b, /^from-b$/);

    await takeOver.click();
    await waitForLive(a);
    await waitForLine(a, /^from-b$/);
    await waitForState(b, 'ended');
    assert.equal(await b.locator('#banner-title').textContent(), 'Opened in another window');
    await typeLine(a, 'echo a-again');
    await waitForLine(a, /^a-again$/);
    const lines = await bufferLines(a);
    assert.equal(lines.filter((l) => l === 'from-b').length, 1, 'resume after takeover: no duplicate');

    // Another tab of the first window (same cookies, own sessionStorage)
    // starts on the list: tabs never collapse onto one session by themselves.
    const c = await a.context().newPage();
    await c.goto(server.base);
    await c.waitForFunction(() => window.tether !== undefined);
    await c.waitForSelector(`.session[data-id="${id}"]`);
    assert.equal(await c.evaluate(() => window.tether.term), null);
    assert.equal(await c.evaluate(() => location.hash), '');
    await waitForState(a, 'connected');
    assert.deepEqual([...a.errors, ...b.errors], []);
    await a.context().close();
    await b.context().close();
  });

  test('a tab smaller than the session attaches at its own size and shows the screen drawn for it', async () => {
    // docs/protocol.md "Attaching at the viewer's size": the attach carries
    // the pane's size, the server resizes the session before the replay,
    // and the replay's snapshot is drawn at that size. Before, the replay
    // was made for 160x50 and painted into the smaller pane: the long lines
    // wrapped and the rows above the prompt were the wrong ones.
    const long = 'x'.repeat(100);
    const script = `i=0; while [ $i -lt 30 ]; do i=$((i+1)); printf 'line %02d ${long}\\n' $i; done; printf 'READY> '; exec sleep 300`;
    const { id } = (await api(server, 'POST', '/api/sessions', { command: ['/bin/sh', '-c', script], cols: 160, rows: 50 })).body;
    await until(async () => (await api(server, 'GET', `/api/sessions/${id}`)).body.offset >= 30 * 110 + 7, 10000, 'the output');
    const page = await newPage(browser, { viewport: { width: 700, height: 500 } });
    await page.addInitScript(() => {
      window.wsUrls = [];
      window.sentControl = [];
      const Native = window.WebSocket;
      window.WebSocket = class extends Native {
        constructor(url, ...rest) { super(url, ...rest); window.wsUrls.push(String(url)); }
        send(data) {
          if (typeof data === 'string') window.sentControl.push(JSON.parse(data));
          return super.send(data);
        }
      };
    });
    await openDashboard(page, server, `#/s/${id}`);
    await waitForLive(page);
    const [cols, rows] = await page.evaluate(() => [window.tether.term.cols, window.tether.term.rows]);
    assert.ok(cols < 100 && rows < 30, `pane ${cols}x${rows}`);
    const urls = await page.evaluate(() => window.wsUrls);
    assert.equal(urls.length, 1);
    assert.match(urls[0], new RegExp(`[?&]cols=${cols}&rows=${rows}(&|$)`));
    const s = (await api(server, 'GET', `/api/sessions/${id}`)).body;
    assert.deepEqual([s.cols, s.rows], [cols, rows]);
    // The session had the size before `attached`: no resize was needed.
    assert.deepEqual((await page.evaluate(() => window.sentControl)).filter((m) => m.type === 'resize'), []);
    // The screen as a terminal without reflow shows 160x50 cut to the pane:
    // the prompt on the last row with the cursor after it, each row above
    // it the start of one line (cut, not wrapped), in order.
    const lines = await screenLines(page);
    const cursor = await page.evaluate(() => [window.tether.term.buffer.active.cursorY, window.tether.term.buffer.active.cursorX]);
    assert.deepEqual(cursor, [rows - 1, 'READY> '.length], lines.join('\n'));
    assert.equal(lines[rows - 1].trimEnd(), 'READY>');
    for (let r = 0; r < rows - 1; r++) {
      const n = 30 - (rows - 1) + r + 1;
      assert.equal(lines[r].trimEnd(), `line ${String(n).padStart(2, '0')} ${long}`.slice(0, cols), `row ${r}:\n${lines.join('\n')}`);
    }
    assert.deepEqual(page.errors, []);
    await page.context().close();
    await api(server, 'DELETE', `/api/sessions/${id}`);
  });

  test('resizing follows the pane, and a collapsed pane never shrinks the session', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    const get = async () => (await api(server, 'GET', `/api/sessions/${id}`)).body;
    const first = await get();

    // Smaller window: the session follows (the program gets SIGWINCH).
    await page.setViewportSize({ width: 900, height: 500 });
    try {
      await until(async () => (await get()).cols < first.cols, 10000, 'a smaller session');
    } catch (e) {
      const now = await get();
      const pageSide = await page.evaluate(() => ({
        term: [window.tether.term.cols, window.tether.term.rows],
        state: window.tether.attachment && window.tether.attachment.state,
        ws: window.tether.attachment && window.tether.attachment.ws && window.tether.attachment.ws.readyState,
        lastSent: window.tether.lastSentSize,
        visibility: document.visibilityState,
        wrap: [document.getElementById('terminal-wrap').clientWidth, document.getElementById('terminal-wrap').clientHeight],
        inner: [window.innerWidth, window.innerHeight],
      }));
      throw new Error(`${e.message}: first ${first.cols}x${first.rows}, now ${now.cols}x${now.rows}, page ${JSON.stringify(pageSide)}\n${server.output().slice(-800)}`);
    }
    const smaller = await get();
    assert.deepEqual(await page.evaluate(() => [window.tether.term.cols, window.tether.term.rows]),
      [smaller.cols, smaller.rows]);
    await typeLine(page, 'stty size');
    await waitForLine(page, new RegExp(`^${smaller.rows} ${smaller.cols}$`));

    // A window squeezed to almost nothing (as a hidden or collapsed pane
    // measures): no 0×0 or 2-column size may reach the session.
    await page.evaluate(() => {
      window.sentControl = [];
      const send = WebSocket.prototype.send;
      WebSocket.prototype.send = function (data) {
        if (typeof data === 'string') window.sentControl.push(JSON.parse(data));
        return send.call(this, data);
      };
    });
    await page.setViewportSize({ width: 60, height: 40 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const squeezed = await get();
    assert.deepEqual([squeezed.cols, squeezed.rows], [smaller.cols, smaller.rows]);
    await page.setViewportSize({ width: 900, height: 500 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    await typeLine(page, 'echo sized');
    await waitForLine(page, /^sized$/);
    const after = await get();
    assert.deepEqual([after.cols, after.rows], [smaller.cols, smaller.rows]);
    const tiny = (await page.evaluate(() => window.sentControl)).filter((m) => m.cols < 10 || m.rows < 3);
    assert.deepEqual(tiny, []);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('keyboard: Ctrl+Shift+S to the list, Enter attaches, Escape back to the terminal', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const first = await createSessionInPage(page);
    const second = (await api(server, 'POST', '/api/sessions', {})).body.id;
    await page.locator(`.session[data-id="${second}"]`).waitFor();
    const focused = () => page.evaluate(() => {
      const a = document.activeElement;
      return a.closest('.session') ? a.closest('.session').dataset.id
        : a.classList.contains('xterm-helper-textarea') ? 'terminal' : a.id || a.tagName;
    });
    assert.equal(await focused(), 'terminal');
    await page.keyboard.press('Control+Shift+S');
    assert.equal(await focused(), first);
    // Entry, Watch, Kill of the first session, then the second's entry.
    for (let i = 0; i < 3; i++) await page.keyboard.press('Tab');
    assert.equal(await focused(), second);
    await page.keyboard.press('Enter');
    await page.waitForFunction((id) => location.hash === `#/s/${id}`, second);
    await waitForLive(page);
    await page.keyboard.press('Control+Shift+S');
    assert.equal(await focused(), second);
    await page.keyboard.press('Escape');
    assert.equal(await focused(), 'terminal');
    await page.keyboard.type('echo by-keyboard');
    await page.keyboard.press('Enter');
    await waitForLine(page, /^by-keyboard$/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('names and titles show escaped: no bidi override, no invisible or control character (issue 29)', async () => {
    const named = await api(server, 'POST', '/api/sessions', { command: ['/bin/sh', '-c', 'sleep 600'], name: 'ab\u202ecd' });
    assert.equal(named.status, 201);
    const titled = await api(server, 'POST', '/api/sessions',
      { command: ['/bin/sh', '-c', "printf '\\033]2;GH\\177I\\342\\200\\213\\007'; exec sleep 600"] });
    assert.equal(titled.status, 201);
    const page = await newPage(browser);
    await openDashboard(page, server);
    const label = (id) => page.locator(`.session[data-id="${id}"] .session-title`);
    await label(named.body.id).waitFor();
    assert.equal(await label(named.body.id).textContent(), 'ab\\u202ecd');
    await until(async () => (await label(titled.body.id).textContent()) === 'GH\\x7fI\\u200b', 10000,
      `the escaped title (shown: ${JSON.stringify(await label(titled.body.id).textContent())})`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
    for (const id of [named.body.id, titled.body.id]) await api(server, 'DELETE', `/api/sessions/${id}`);
  });

  test('kill from the list asks first, then ends the session and its processes', async () => {
    const created = await api(server, 'POST', '/api/sessions', { command: ['/bin/sh', '-c', 'sleep 600'] });
    assert.equal(created.status, 201);
    const { id, pid } = created.body;
    const page = await newPage(browser);
    await openDashboard(page, server);
    const item = page.locator(`.session[data-id="${id}"]`);
    await item.waitFor();
    assert.match(await item.locator('.session-title').textContent(), /sh -c 'sleep 600'|sleep 600/);

    // Cancel: nothing happens.
    page.once('dialog', (d) => d.dismiss());
    await item.locator('button.kill').click();
    assert.equal((await api(server, 'GET', `/api/sessions/${id}`)).status, 200);
    assert.ok(await item.isVisible());

    // Confirm: the session leaves the list and its process goes away.
    let message = '';
    page.once('dialog', (d) => { message = d.message(); d.accept(); });
    await item.locator('button.kill').click();
    await item.waitFor({ state: 'detached' });
    assert.match(message, /^Kill /);
    assert.equal((await api(server, 'GET', `/api/sessions/${id}`)).status, 404);
    await until(() => { try { process.kill(pid, 0); return false; } catch { return true; } }, 10000, `pid ${pid} to end`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a session created before the first list arrives is shown, focused and typed into', async () => {
    // A slow server (ASan under load in CI) answered the page's first list
    // after the page had created a session; the late answer took the page
    // back to its welcome, hiding the live terminal and leaving the keys in
    // the New session field: typed lines became new sessions.
    const page = await newPage(browser);
    // The first list is held until the page has asked to create a session;
    // the answer to that is held until the list has been applied (the page
    // opens /api/events right after, then routes the address).
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    await page.route((url) => url.pathname === '/api/sessions', async (route) => {
      if (route.request().method() === 'GET') {
        await held;
      } else {
        const events = page.waitForRequest((r) => new URL(r.url()).pathname === '/api/events');
        release();
        await events;
      }
      await route.continue();
    });
    await openDashboard(page, server);
    const before = (await api(server, 'GET', '/api/sessions')).body.sessions.length;
    await page.fill('#new-command', '');
    await page.press('#new-command', 'Enter');
    await page.waitForFunction(() => /^#\/s\/[^/]+$/.test(location.hash), null, { timeout: 15000 });
    const id = await page.evaluate(() => decodeURIComponent(location.hash.slice(4)));
    await waitForLive(page);
    await page.locator(`.session[data-id="${id}"]`).waitFor();
    assert.ok(await page.locator('#terminal-wrap').isVisible(), 'the terminal is shown');
    assert.ok(!(await page.locator('#empty').isVisible()), 'the welcome is not');
    assert.equal(await page.evaluate(() => document.activeElement?.className), 'xterm-helper-textarea');
    await page.keyboard.type('echo made-early');
    await page.keyboard.press('Enter');
    await waitForLine(page, /^made-early$/);
    assert.equal((await api(server, 'GET', '/api/sessions')).body.sessions.length, before + 1);
    assert.deepEqual(page.errors, []);
    await page.context().close();
    await api(server, 'DELETE', `/api/sessions/${id}`);
  });

  test('watch is read-only and follows the controlling page', async () => {
    const control = await newPage(browser);
    await openDashboard(control, server);
    const id = await createSessionInPage(control);

    const watcher = await newPage(browser);
    await openDashboard(watcher, server, `#/s/${id}/watch`);
    await waitForLive(watcher);
    assert.equal(await watcher.locator('#conn-text').textContent(), 'Watching');
    assert.ok(await watcher.locator('#current-mode').isVisible());
    // Watchers do not supersede the controlling page.
    assert.equal(await control.evaluate(() => window.tether.state), 'connected');

    await typeLine(control, 'echo from-control');
    // The controlling page first: a failure then says which side lost it.
    await waitForLine(control, /^from-control$/);
    await waitForLine(watcher, /^from-control$/);
    // Keys typed in the watcher never reach the shell.
    await typeLine(watcher, 'echo typed-in-watcher');
    await typeLine(control, 'echo marker-after');
    await waitForLine(control, /^marker-after$/);
    const lines = await bufferLines(control);
    assert.ok(!lines.some((l) => l.includes('typed-in-watcher')), lines.join('\n'));
    // The watcher shows the session at the session's size.
    const s = (await api(server, 'GET', `/api/sessions/${id}`)).body;
    assert.deepEqual(await watcher.evaluate(() => [window.tether.term.cols, window.tether.term.rows]), [s.cols, s.rows]);
    assert.deepEqual([...control.errors, ...watcher.errors], []);
    await control.context().close();
    await watcher.context().close();
  });

  test('process exit shows its code (4410) with New session', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page, `sh -c 'echo ready; read x; exit 3'`);
    await waitForLine(page, /^ready$/);
    await typeLine(page, '');
    await waitForState(page, 'ended');
    await page.waitForSelector('#banner:not([hidden])');
    assert.equal(await page.locator('#banner-title').textContent(), 'Process exited with code 3');
    // The program ended, not the connection: Tether is still there (it said
    // "Disconnected" while the list was live).
    await until(async () => (await page.locator('#conn-text').textContent()) === 'Connected', 10000,
      'the indicator to say Tether is connected');
    const item = page.locator(`.session[data-id="${id}"]`);
    await until(async () => (await item.locator('.state').textContent()) === 'exited 3', 10000, 'exited in list');

    await page.getByRole('button', { name: 'New session' }).click();
    await page.waitForFunction((old) => /^#\/s\//.test(location.hash) && location.hash !== `#/s/${old}`, id);
    await waitForLive(page);
    await typeLine(page, 'echo new-one');
    await waitForLine(page, /^new-one$/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('an unknown session says it expired', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server, '#/s/no-such-session');
    await waitForState(page, 'ended');
    assert.equal(await page.locator('#banner-title').textContent(), 'Session expired');
    assert.ok(await page.getByRole('button', { name: 'New session' }).isVisible());
    await page.context().close();
  });

  test('an address with a malformed %-escape names no session, and the page works', async () => {
    // A link cut in the middle of a name's escape (#/s/caf%C3%A9 copied as
    // #/s/caf%C3): decodeURIComponent threw, the page stayed at
    // "Connecting…" with no list (a new user's tryout).
    const { id } = (await api(server, 'POST', '/api/sessions', {})).body;
    const page = await newPage(browser);
    await openDashboard(page, server, '#/s/caf%C3');
    await waitForState(page, 'ended');
    assert.equal(await page.locator('#banner-title').textContent(), 'Session expired');
    await page.waitForSelector(`#session-list li[data-id="${id}"]`);
    // From an open session, such an address leaves it too.
    await page.evaluate((x) => { location.hash = `#/s/${x}`; }, id);
    await waitForLive(page);
    await page.evaluate(() => { location.hash = '#/s/%E0%A4%A'; });
    await waitForState(page, 'ended');
    assert.equal(await page.evaluate(() => window.tether.attachment.id), '%E0%A4%A');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('an id prefix (as `tether list` shows it) opens that session under its full id', async () => {
    const { id } = (await api(server, 'POST', '/api/sessions', {})).body;
    const page = await newPage(browser);
    await openDashboard(page, server, `#/s/${id.slice(0, 8)}`);
    await waitForLive(page);
    assert.equal(await page.evaluate(() => location.hash), `#/s/${id}`);
    assert.equal(await page.evaluate(() => window.tether.attachment.id), id);
    // The watch address too.
    await page.evaluate((p) => { location.hash = `#/s/${p}/watch`; }, id.slice(0, 8));
    await page.waitForFunction(() => window.tether.attachment && window.tether.attachment.mode === 'watch');
    await waitForLive(page);
    assert.equal(await page.evaluate(() => location.hash), `#/s/${id}/watch`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a session name in the address opens that session under its id', async () => {
    // README: a session's name works wherever an ID does (a new user's
    // #/s/big said "Session expired" while big ran).
    const name = `named-${Date.now()}`;
    const { id } = (await api(server, 'POST', '/api/sessions', { name })).body;
    const page = await newPage(browser);
    await openDashboard(page, server, `#/s/${name}`);
    await waitForLive(page);
    assert.equal(await page.evaluate(() => window.tether.attachment.id), id);
    assert.equal(await page.evaluate(() => location.hash), `#/s/${id}`);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a prefix that several sessions share asks which, and attaches to none', async () => {
    // Exited sessions are cheap: make them until two ids share a first
    // character (at most 65 by the pigeonhole principle; about 10 typically).
    const made = [];
    const byFirst = new Map();
    let prefix = null;
    while (!prefix) {
      const { id } = (await api(server, 'POST', '/api/sessions', { command: ['/bin/true'] })).body;
      made.push(id);
      if (byFirst.has(id[0])) prefix = id[0];
      byFirst.set(id[0], id);
    }
    try {
      const page = await newPage(browser);
      await openDashboard(page, server, `#/s/${encodeURIComponent(prefix)}`);
      await page.waitForSelector('#banner:not([hidden])');
      assert.equal(await page.locator('#banner-title').textContent(), 'Which session?');
      assert.equal(await page.evaluate(() => window.tether.attachment), null);
      assert.deepEqual(page.errors, []);
      await page.context().close();
    } finally {
      for (const id of made) await api(server, 'DELETE', `/api/sessions/${id}`);
    }
  });

  test('after a takeover, a session that goes away is shown as gone, not offered to take over', async () => {
    const { id } = (await api(server, 'POST', '/api/sessions', {})).body;
    const a = await newPage(browser);
    await openDashboard(a, server, `#/s/${id}`);
    await waitForLive(a);
    const b = await newPage(browser);
    await openDashboard(b, server, `#/s/${id}`);
    await waitForLive(b);
    await waitForState(a, 'ended');
    await a.waitForSelector('#banner:not([hidden])');
    assert.equal(await a.locator('#banner-title').textContent(), 'Opened in another window');

    assert.equal((await api(server, 'DELETE', `/api/sessions/${id}`)).status, 204);
    await until(async () => (await a.locator('#banner-title').textContent()) === 'Session closed', 10000,
      `"Session closed" (banner: ${await a.locator('#banner-title').textContent()})`);
    assert.equal(await a.getByRole('button', { name: 'Take over' }).count(), 0);
    assert.ok(await a.getByRole('button', { name: 'New session' }).isVisible());
    assert.deepEqual([...a.errors, ...b.errors], []);
    await a.context().close();
    await b.context().close();
  });

  test('keys typed in a watcher do not scroll its view', async () => {
    // A session larger than the watcher's pane: the pane scrolls (watchers
    // show the session at its own size). Space, Page Down and the arrows in
    // xterm.js's readonly textarea used to scroll it away from what was shown.
    const { id } = (await api(server, 'POST', '/api/sessions', { cols: 97, rows: 39 })).body;
    const page = await newPage(browser, { viewport: { width: 700, height: 500 } });
    await openDashboard(page, server, `#/s/${id}/watch`);
    await waitForLive(page);
    const wrap = () => page.evaluate(() => {
      const w = document.getElementById('terminal-wrap');
      return { top: w.scrollTop, left: w.scrollLeft, scrollable: w.scrollHeight > w.clientHeight };
    });
    const before = await wrap();
    assert.ok(before.scrollable, 'the session is taller than the pane');
    await page.evaluate(() => {
      window.wrapScrolls = 0;
      document.getElementById('terminal-wrap').addEventListener('scroll', () => { window.wrapScrolls++; });
    });
    assert.equal(await page.evaluate(() => document.activeElement.className), 'xterm-helper-textarea');
    await page.keyboard.type('echo hello world');
    for (const key of ['Space', 'Shift+Space', 'PageDown', 'ArrowDown', 'End', 'Enter']) await page.keyboard.press(key);
    // A smooth scroll starts within a frame or two of the key.
    await page.evaluate(() => new Promise((r) => {
      let n = 0;
      const tick = () => (++n >= 12 ? r() : requestAnimationFrame(tick));
      requestAnimationFrame(tick);
    }));
    assert.deepEqual(await wrap(), before);
    assert.equal(await page.evaluate(() => window.wrapScrolls), 0);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('without the key the page says where to get it', async () => {
    const page = await newPage(browser);
    await page.goto(server.base);
    await page.waitForSelector('#nokey:not([hidden])');
    assert.match(await page.locator('#nokey').textContent(),
      /Open the link that Tether printed or use its tray menu/);
    assert.equal(await page.locator('#conn').getAttribute('data-state'), 'unauthorized');
    await page.context().close();
  });

  test('queries inside a replay are not answered to the program', async () => {
    // The program asks for the cursor position and device attributes while no
    // browser is attached, then reads a line. Answers produced by xterm.js
    // while replaying would arrive in that line (microsoft/vscode#123803).
    // ESC in what was read is shown as '~', or the terminal would swallow it.
    // With no viewer attached the server answers both queries at once
    // (docs/protocol.md, "Queries while detached"): the program reads those
    // answers first, as programs do.
    const script = `printf 'Q\\033[6n\\033[cQ\\n'; IFS= read -rsd R -t 5 a; IFS= read -rsd c -t 5 b; IFS= read -r line; `
      + `printf 'GOT[%s]\\n' "$(printf '%s' "$line" | tr '\\033' '~')"; exec sleep 600`;
    const created = await api(server, 'POST', '/api/sessions', { command: ['/bin/bash', '-c', script] });
    assert.equal(created.status, 201);
    const { id } = created.body;
    await until(async () => (await api(server, 'GET', `/api/sessions/${id}`)).body.offset >= 4, 10000, 'output');

    const page = await newPage(browser);
    await openDashboard(page, server, `#/s/${id}`);
    await waitForLive(page);
    await typeLine(page, 'typed');
    await waitForLine(page, /^GOT\[/);
    const got = (await bufferLines(page)).find((l) => l.startsWith('GOT['));
    assert.equal(got, 'GOT[typed]');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  // Last: it replaces the file's server.
  test('a rotated key: an open page says the key was changed', async () => {
    const own = await startTether();
    try {
      const page = await newPage(browser);
      await openDashboard(page, own);
      await page.waitForSelector('#empty:not([hidden])');
      // The `key` event reaches only event streams open at the rotation: a
      // rotation before the page's stream opened met a 401 that read as a
      // restart (failed once in Qt 6 under ctest).
      await page.waitForFunction(() => window.tether.state === 'connected');
      const r = await api(own, 'POST', '/api/key');
      assert.equal(r.status, 200);
      assert.notEqual(r.body.key, own.key);
      await page.waitForSelector('#nokey:not([hidden])', { timeout: 20000 });
      assert.equal(await page.locator('#nokey-title').textContent(), 'Tether\'s access key was changed');
      // Not "Tether restarted": the server never went away.
      assert.equal(await page.locator('#conn-text').textContent(), 'Key changed');
      assert.match(await page.locator('#nokey').textContent(), /tether key prints it again/);
      await page.context().close();
    } finally {
      await own.stop();
    }
  });

  test('a key rotated while the page is still connecting does not read as a restart', async () => {
    const own = await startTether();
    try {
      const page = await newPage(browser);
      // The page's event stream waits here until the key is rotated: the
      // page had its list (an answer with the key), its stream was still
      // connecting, so it never gets the `key` event and meets a 401.
      let release;
      const rotated = new Promise((r) => { release = r; });
      let held = 0;
      // By path: the page asks for /api/events?output=1 (the miniatures' `output` events).
      await page.route((url) => url.pathname === '/api/events', async (route) => {
        held++;
        await rotated;
        await route.continue();
      });
      await openDashboard(page, own);
      await until(() => held > 0, 10000, 'the event stream request');
      assert.equal(await page.evaluate(() => window.tether.state), 'connecting');
      const r = await api(own, 'POST', '/api/key');
      assert.equal(r.status, 200);
      release();
      await page.waitForSelector('#nokey:not([hidden])', { timeout: 20000 });
      // Before: "Tether was restarted ... the sessions that ran before the
      // restart are gone", though the server never went away.
      assert.equal(await page.locator('#nokey-title').textContent(), 'Tether\'s key changed');
      assert.match(await page.locator('#nokey-text').textContent(), /tether key --rotate/);
      assert.doesNotMatch(await page.locator('#nokey').textContent(), /restart/i);
      assert.equal(await page.locator('#conn-text').textContent(), 'No key');
      assert.match(await page.locator('#nokey').textContent(), /tether key prints it again/);
      await page.context().close();
    } finally {
      await own.stop();
    }
  });

  test('a restarted Tether: the list goes stale while it is away, then the page says it restarted', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    await page.locator(`.session[data-id="${id}"]`).waitFor();
    assert.ok(await page.locator('#list-stale').isHidden());

    const { port } = server;
    const stopped = await server.stop();
    server = null;
    assert.equal(stopped.code, 0);
    // Away: the old list is still there, marked as out of date, and why
    // (the event stream's `shutdown` event: it quit, SIGTERM).
    await page.waitForSelector('#list-stale:not([hidden])', { timeout: 15000 });
    assert.match(await page.locator('#list-stale').textContent(), /^Tether shut down/);
    assert.ok(await page.locator('#sidebar.stale').isVisible());
    assert.ok(['offline', 'reconnecting'].includes(await page.locator('#conn').getAttribute('data-state')));

    // Back on the same port, with a new key: the page says what happened.
    server = await startTether({ args: ['--port', String(port)] });
    await page.waitForSelector('#nokey:not([hidden])', { timeout: 20000 });
    assert.equal(await page.locator('#nokey-title').textContent(), 'Tether was restarted');
    const text = await page.locator('#nokey').textContent();
    assert.match(text, /sessions that ran before the restart are gone/);
    assert.match(text, /Open the new link that Tether printed .* or use its tray menu/);
    assert.equal(await page.locator('#conn').getAttribute('data-state'), 'unauthorized');
    assert.equal(await page.locator('#conn-text').textContent(), 'Tether restarted');
    // Only the refused connections of the outage and the 401s are logged,
    // and at most a 503: Chromium fetches the favicon (icon.svg) on every
    // change of the address, and a request still in flight when Tether quits
    // is answered 503 "server shutting down" (docs/protocol.md, section 1).
    // It got a connection closed with nothing on it (CI: ERR_EMPTY_RESPONSE).
    const unexpected = page.errors.filter((e) => !/ERR_CONNECTION_REFUSED|ERR_CONNECTION_RESET|status of 401|status of 503|WebSocket connection to .* failed/.test(e));
    assert.deepEqual(unexpected, []);
    await page.context().close();
  });
});
