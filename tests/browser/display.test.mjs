// SPDX-License-Identifier: GPL-2.0-or-later
// What the dashboard shows in the places a new user found wanting: the top
// bar at phone widths (320 px up), a watcher of a session wider than its
// pane, a Tether that quits under an open page, the empty list's note, and
// rows of unnamed sessions (issue 26). Run by ctest as
// browser/display, on its own (browser/dashboard is near ctest's timeout).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  api, artifactsDir, createSessionInPage, newPage, openDashboard, startTether, startTetherAndBrowser,
  until, waitForLine, waitForLive, waitForState,
  closeAll,
} from './lib.mjs';

async function noHorizontalOverflow(page) {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
}

/**
 * The boxes of the top bar's visible parts (toggle, icon, name, session
 * title, mode badge, each tool, the connection pill), pairs of them that
 * overlap, and parts that stick out of the window.
 */
async function topbarLayout(page) {
  return page.evaluate(() => {
    const parts = [...document.querySelectorAll(
      '#sidebar-toggle, .brand img, .brand > span, #current-title, #current-mode, .term-tools > *, #conn')]
      .map((e) => ({ e, r: e.getBoundingClientRect() }))
      .filter(({ e, r }) => r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden')
      .map(({ e, r }) => ({
        name: e.id || e.className || e.tagName, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
      }));
    const overlaps = [];
    for (let i = 0; i < parts.length; i++) {
      for (let j = i + 1; j < parts.length; j++) {
        const a = parts[i];
        const b = parts[j];
        const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (x > 0.5 && y > 0.5) overlaps.push(`${a.name} / ${b.name}`);
      }
    }
    const outside = parts.filter((p) => p.left < 0 || p.right > window.innerWidth + 0.5).map((p) => p.name);
    // The title may be cut (ellipsis), but keeps 40 px, or all of it when shorter.
    const t = document.getElementById('current-title');
    const titleCut = !t.closest('[hidden]') && t.getBoundingClientRect().width + 0.5 < Math.min(t.scrollWidth, 40);
    return { parts, overlaps, outside, titleCut };
  });
}

describe('display', { timeout: 240000 }, () => {
  let server;
  let browser;

  before(async () => ({ server, browser } = await startTetherAndBrowser()));

  after(() => closeAll(server, browser));

  test('the top bar\'s parts never overlap, from 320 px up', async () => {
    // At 320 px Rename, Share, Search, A− and A+ ran over the session's
    // title and the connection dot. Widths of small phones, phones, tablets
    // and desktops, with a session open (and watched: its badge too).
    const { id } = (await api(server, 'POST', '/api/sessions', { name: 'a-session-with-a-long-name' })).body;
    const page = await newPage(browser, { viewport: { width: 320, height: 640 }, colorScheme: 'light' });
    for (const mode of ['control', 'watch']) {
      await openDashboard(page, server, `#/s/${id}${mode === 'watch' ? '/watch' : ''}`);
      await waitForLive(page);
      for (const width of [320, 360, 375, 414, 480, 540, 600, 700, 768, 900, 1024, 1280]) {
        await page.setViewportSize({ width, height: 640 });
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        const layout = await topbarLayout(page);
        if (width === 320 || width === 414 || width === 768) {
          await page.screenshot({ path: path.join(artifactsDir, `topbar-${mode}-${width}.png`), clip: { x: 0, y: 0, width, height: 160 } });
        }
        const where = `${mode} at ${width} px: ${JSON.stringify(layout.parts)}`;
        assert.deepEqual(layout.overlaps, [], where);
        assert.deepEqual(layout.outside, [], where);
        assert.ok(!layout.titleCut, `the session's title keeps room, ${where}`);
        assert.ok(layout.parts.some((p) => p.name === 'conn'), `the connection state is shown, ${where}`);
        if (mode === 'watch') assert.ok(layout.parts.some((p) => p.name === 'current-mode'), `the watching badge, ${where}`);
        assert.ok(await noHorizontalOverflow(page), where);
      }
    }
    // With no session open: the bar holds the toggle, the icon and the dot.
    await openDashboard(page, server, '#/');
    await page.setViewportSize({ width: 320, height: 640 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const empty = await topbarLayout(page);
    assert.deepEqual(empty.overlaps, [], JSON.stringify(empty.parts));
    assert.deepEqual(empty.outside, [], JSON.stringify(empty.parts));
    assert.deepEqual(page.errors, []);
    await page.context().close();
    await api(server, 'DELETE', `/api/sessions/${id}`);
  });

  test('a watcher narrower than the session shrinks the text so whole lines show', async () => {
    // A 150-column session in a watcher whose pane holds about 110 columns
    // at 14 px: the lines were cut at the pane's edge. Now the font shrinks
    // until the session's width fits; past the smallest size (8 px) the pane
    // scrolls sideways.
    const marks = Array.from({ length: 15 }, (_, i) => `c${String(i * 10).padStart(3, '0')}.....`).join('');
    const wide = (await api(server, 'POST', '/api/sessions', {
      cols: 150, rows: 30, command: ['/bin/sh', '-c', `echo ${marks}END; exec sleep 600`],
    })).body;
    const page = await newPage(browser, { viewport: { width: 1280, height: 600 } });
    await openDashboard(page, server, `#/s/${wide.id}/watch`);
    await waitForLive(page);
    await waitForLine(page, /END$/);
    const fits = () => page.evaluate(() => {
      const wrap = document.getElementById('terminal-wrap');
      const screen = wrap.querySelector('.xterm-screen').getBoundingClientRect();
      const box = wrap.getBoundingClientRect();
      return {
        cols: window.tether.term.cols,
        font: window.tether.term.options.fontSize,
        inside: screen.right <= box.right - parseFloat(getComputedStyle(wrap).paddingRight) + 0.5,
        sideways: wrap.scrollWidth > wrap.clientWidth,
      };
    });
    try {
      await until(async () => (await fits()).inside, 10000, 'the session\'s width to fit the pane');
    } catch (e) {
      throw new Error(`${e.message}: ${JSON.stringify(await fits())} ${JSON.stringify(await page.evaluate(() => {
        const t = window.tether.term;
        const w = document.getElementById('terminal-wrap');
        return { cell: t._core._renderService.dimensions.css.cell.width, cw: w.clientWidth, hidden: w.hidden, vis: document.visibilityState };
      }))}`);
    }
    const fitted = await fits();
    assert.equal(fitted.cols, 150, 'the watcher keeps the session\'s size');
    assert.ok(fitted.font < 14 && fitted.font >= 8, `font ${fitted.font}`);
    assert.equal(fitted.sideways, false);
    await page.screenshot({ path: path.join(artifactsDir, "dashboard-watch-wide.png") });

    // A wider window: the text grows back, up to the chosen size.
    await page.setViewportSize({ width: 1600, height: 600 });
    await until(async () => (await fits()).font > fitted.font, 10000, 'a larger font in a wider window');
    assert.ok((await fits()).inside);

    // Too wide even at 8 px: the smallest size, and the pane scrolls sideways.
    await page.setViewportSize({ width: 800, height: 600 });
    await until(async () => (await fits()).font === 8, 10000, 'the smallest font');
    assert.equal((await fits()).sideways, true);
    assert.deepEqual(page.errors, []);
    await page.context().close();
    await api(server, 'DELETE', `/api/sessions/${wide.id}`);
  });

  test('a Tether that quits says "server shutting down", retries, and says the session ended with it', async () => {
    // README, "What survives what": viewers of a Tether that quits (tray
    // Quit, SIGTERM) are told "server shutting down" (close 1001 with that
    // text, docs/protocol.md). The page said only "Offline". Started with
    // setsid, as the README tells scripts to; both servers share one config
    // directory, so the second one keeps the key, as a Tether started again does.
    const config = mkdtempSync(path.join(os.tmpdir(), 'tether-browser-config-'));
    let own = await startTether({ env: { XDG_CONFIG_HOME: config } });
    try {
      const page = await newPage(browser);
      await openDashboard(page, own);
      const id = await createSessionInPage(page);
      await page.evaluate(() => {
        window.wsOpened = 0;
        const Native = window.WebSocket;
        window.WebSocket = class extends Native {
          constructor(...args) { super(...args); window.wsOpened++; }
        };
      });

      const { port } = own;
      const stopped = await own.stop(); // SIGTERM: the server closes its viewers 1001
      own = null;
      assert.equal(stopped.code, 0);
      await page.waitForSelector('#banner:not([hidden])', { timeout: 15000 });
      assert.equal(await page.locator('#banner-title').textContent(), 'Tether shut down');
      assert.match(await page.locator('#banner-detail').textContent(), /“server shutting down”.*Retrying/);
      assert.equal(await page.locator('#conn-text').textContent(), 'Tether shut down');
      // And it keeps retrying (the attempts are refused while nothing listens).
      const attempts = await page.evaluate(() => window.wsOpened);
      await until(async () => (await page.evaluate(() => window.wsOpened)) >= attempts + 2, 20000, 'two more attempts');
      assert.ok(['offline', 'reconnecting'].includes(await page.evaluate(() => window.tether.state)));
      assert.equal(await page.locator('#banner-title').textContent(), 'Tether shut down');

      // Back, with the same key: the session ended with the old server, and
      // the page says why rather than "Session closed" (killed or expired).
      own = await startTether({ env: { XDG_CONFIG_HOME: config }, args: ['--port', String(port)] });
      await waitForState(page, 'ended', 20000);
      assert.equal(await page.locator('#banner-title').textContent(), 'Session ended');
      assert.match(await page.locator('#banner-detail').textContent(), /shut down \(“server shutting down”\)/);
      assert.ok(await page.getByRole('button', { name: 'New session' }).isVisible());
      assert.equal((await api(own, 'GET', `/api/sessions/${id}`)).status, 404);
      // A 503: a request in flight when Tether quit (the favicon Chromium
      // fetches on every change of the address), answered "server shutting
      // down" (docs/protocol.md, section 1), never an empty close.
      const unexpected = page.errors.filter((e) => !/ERR_CONNECTION_REFUSED|ERR_CONNECTION_RESET|status of 404|status of 503|WebSocket connection to .* failed/.test(e));
      assert.deepEqual(unexpected, []);
      await page.context().close();
    } finally {
      if (own) await own.stop();
      rmSync(config, { recursive: true, force: true });
    }
  });

  test('a page showing only the list says "Tether shut down" when Tether quits, "not reachable" when it is gone', async () => {
    // The event stream's last event is `shutdown` (docs/protocol.md, "Live
    // list"): a page with no session open said only "Tether is not
    // reachable" after Quit, while an attached one said "Tether shut down".
    // Both servers share one config directory, so the second keeps the key.
    const config = mkdtempSync(path.join(os.tmpdir(), 'tether-browser-config-'));
    let own = await startTether({ env: { XDG_CONFIG_HOME: config } });
    try {
      const page = await newPage(browser);
      await openDashboard(page, own);
      const made = await api(own, 'POST', '/api/sessions', { command: ['/bin/sh'] });
      assert.equal(made.status, 201);
      await page.locator(`.session[data-id="${made.body.id}"]`).waitFor();
      await until(async () => (await page.locator('#conn-text').textContent()) === 'Connected', 10000, 'the list live');

      const { port } = own;
      const stopped = await own.stop(); // SIGTERM
      own = null;
      assert.equal(stopped.code, 0);
      await page.waitForSelector('#list-stale:not([hidden])', { timeout: 15000 });
      assert.equal(await page.locator('#conn-text').textContent(), 'Tether shut down');
      assert.match(await page.locator('#conn').getAttribute('title'), /server shutting down/);
      assert.match(await page.locator('#list-stale').textContent(),
        /^Tether shut down \(“server shutting down”\): .*its sessions ended with it/);
      assert.ok(['offline', 'reconnecting'].includes(await page.locator('#conn').getAttribute('data-state')));

      // Back, same key: the list is live again, without the session that ended.
      own = await startTether({ env: { XDG_CONFIG_HOME: config }, args: ['--port', String(port)] });
      await page.waitForSelector('#list-stale', { state: 'hidden', timeout: 20000 });
      await until(async () => (await page.locator('#conn-text').textContent()) === 'Connected', 10000, 'the list live again');
      assert.equal(await page.locator(`.session[data-id="${made.body.id}"]`).count(), 0);

      // Gone without a word (killed): no `shutdown` event, and the page does
      // not claim one.
      own.proc.kill('SIGKILL');
      await own.stop();
      own = null;
      await page.waitForSelector('#list-stale:not([hidden])', { timeout: 15000 });
      assert.match(await page.locator('#list-stale').textContent(), /^Tether is not reachable/);
      assert.notEqual(await page.locator('#conn-text').textContent(), 'Tether shut down');
      const unexpected = page.errors.filter((e) => !/ERR_CONNECTION_REFUSED|ERR_CONNECTION_RESET|status of 503/.test(e));
      assert.deepEqual(unexpected, []);
      await page.context().close();
    } finally {
      if (own) await own.stop();
      rmSync(config, { recursive: true, force: true });
    }
  });

  test('short session names show whole in the list, beside Attach, Watch and Kill', async () => {
    // A 5-letter name was cut to "pag…" at the default width: the row
    // kept room for its three buttons and the state badge on the name's line.
    const page = await newPage(browser);
    await openDashboard(page, server);
    const names = ['pager', 'build-server', 'a-session-name-much-longer-than-the-row-has-room-for'];
    const ids = [];
    for (const name of names) {
      const made = await api(server, 'POST', '/api/sessions', { command: ['/bin/sh'] });
      assert.equal(made.status, 201);
      assert.equal((await api(server, 'PATCH', `/api/sessions/${made.body.id}`, { name })).status, 200);
      ids.push(made.body.id);
    }
    try {
      const rows = async () => page.evaluate((want) => want.map((id) => {
        const li = document.querySelector(`.session[data-id="${id}"]`);
        const t = li && li.querySelector('.session-title');
        if (!t || t.textContent === '') return null;
        const actions = [...li.querySelectorAll('.session-actions > *')].filter((b) => !b.hidden);
        return {
          name: t.textContent,
          whole: t.scrollWidth <= t.clientWidth,
          attach: li.classList.contains('has-attach'),
          // The name's box ends before the first visible button starts.
          clear: t.getBoundingClientRect().right <= Math.min(...actions.map((b) => b.getBoundingClientRect().left)),
          buttons: actions.length,
        };
      }), ids);
      await until(async () => (await rows()).every((r) => r && names.includes(r.name)), 10000, 'the named rows');
      const got = await rows();
      for (const r of got) {
        assert.ok(r.attach, `${r.name}: Attach shown`);
        assert.equal(r.buttons, 3, r.name);
        assert.ok(r.clear, `${r.name}: the name runs under the buttons`);
      }
      assert.deepEqual(got.map((r) => r.whole), [true, true, false], JSON.stringify(got));
      // The badge is still there, on the row's status line.
      assert.equal(await page.locator(`.session[data-id="${ids[0]}"] .state`).textContent(), 'running');
      assert.deepEqual(page.errors, []);
    } finally {
      await page.context().close();
      for (const id of ids) await api(server, 'DELETE', `/api/sessions/${id}`);
    }
  });

  test('"No sessions yet" sits under the list\'s heading, not at the foot of the sidebar', async () => {
    // The note followed the list, which takes the sidebar's height: with no
    // sessions it sat at the bottom of the window, far from "Sessions".
    const own = await startTether();
    try {
      const page = await newPage(browser, { viewport: { width: 1280, height: 900 } });
      await openDashboard(page, own);
      await page.waitForSelector('#list-empty:not([hidden])');
      const box = await page.evaluate(() => {
        const head = document.querySelector('.list-head').getBoundingClientRect();
        const note = document.getElementById('list-empty').getBoundingClientRect();
        const side = document.getElementById('sidebar').getBoundingClientRect();
        return { gap: note.top - head.bottom, below: side.bottom - note.bottom };
      });
      assert.ok(box.gap >= 0 && box.gap < 24, JSON.stringify(box));
      assert.ok(box.below > 300, JSON.stringify(box));
      assert.deepEqual(page.errors, []);
      await page.context().close();
    } finally {
      await own.stop();
    }
  });

  test('unnamed sessions of the same program are told apart by their working directory', async () => {
    // Three login shells read "bash · detached" three times over.
    const dirs = ['one', 'two'].map((n) => mkdtempSync(path.join(os.tmpdir(), `tether-cwd-${n}-`)));
    const page = await newPage(browser);
    await openDashboard(page, server);
    const ids = [];
    try {
      for (const cwd of dirs) {
        const made = await api(server, 'POST', '/api/sessions', { command: ['/bin/sh'], cwd });
        assert.equal(made.status, 201);
        ids.push(made.body.id);
      }
      const rows = async () => page.evaluate((want) => want.map((id) => {
        const li = document.querySelector(`.session[data-id="${id}"]`);
        return li ? li.querySelector('.session-open').innerText : null;
      }), ids);
      await until(async () => (await rows()).every((r) => r), 10000, 'the rows');
      const got = await rows();
      for (const [i, dir] of dirs.entries()) assert.ok(got[i].includes(dir), `${dir} in ${JSON.stringify(got[i])}`);
      assert.deepEqual(page.errors, []);
    } finally {
      await page.context().close();
      for (const id of ids) await api(server, 'DELETE', `/api/sessions/${id}`);
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });
});
