// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard on a phone (issue 26): real Chromium with mobile emulation
// (390×844, device pixel ratio 3, touch). Rendering right at every device
// pixel ratio (the WebGL renderer drew glyphs 2–3× too large at ratios
// above 1); the key bar (Esc, Tab, sticky Ctrl and Alt, the arrows in either
// cursor mode) driving vim, cat -v and a sleep; touch (scroll, wheel
// reports, pinch, tap, long press and Copy; the cursor line in view when the
// soft keyboard opens); the web app manifest (installable); and, at desktop
// size, the tiled view (two live sessions, keys only to the focused one)
// and the session list's live miniatures, which the phone's drawer shows too.
// Run by ctest as browser/phone, on its own.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  api, artifactsDir, bufferLines, createSessionInPage, launchBrowser, newPage, openDashboard, screenLines,
  startTether, typeLine, until, waitForLine, waitForLive, closeAll,
} from './lib.mjs';

const PHONE = { width: 390, height: 844 };

/** A page emulating a phone at device pixel ratio `dpr` (touch, mobile viewport). */
function phonePage(browser, dpr = 3, viewport = PHONE) {
  return newPage(browser, {
    viewport, deviceScaleFactor: dpr, hasTouch: true, isMobile: true,
  });
}

/** The program in front of the session's terminal (protocol.md: foreground). */
async function foreground(server, id) {
  const r = await api(server, 'GET', `/api/sessions/${id}`);
  return r.body && r.body.foreground ? r.body.foreground.name : null;
}

/** Taps a key of the key bar (a touch tap, as a finger). */
function tapKey(page, name) {
  return page.locator(`#keybar [data-key="${name}"]`).tap();
}

/**
 * A finger (or two) on the screen through the DevTools protocol (trusted
 * touch events, as from a touch screen): each step is a list of points.
 */
async function touchPath(page, steps, holdMs = 0) {
  const cdp = await page.context().newCDPSession(page);
  const pts = (ps) => ps.map(([x, y], id) => ({ x, y, id }));
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: pts(steps[0]) });
  if (holdMs) await new Promise((r) => setTimeout(r, holdMs));
  for (const s of steps.slice(1)) await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: pts(s) });
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await cdp.detach();
}

/** A one-finger drag from (x, y) by dy CSS pixels, in 10 steps. */
async function drag(page, dy) {
  const box = await page.locator('.xterm-screen').boundingBox();
  const x = box.x + box.width / 2;
  const y = box.y + box.height / 2 - dy / 2;
  const steps = [];
  for (let i = 0; i <= 10; i++) steps.push([[x, y + (dy * i) / 10]]);
  await touchPath(page, steps);
}

/** Waits for two animation frames: what the buffer holds is drawn. */
function drawn(page) {
  return page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/**
 * Where ink is in a PNG screenshot of the terminal's screen, decoded by the
 * page itself (a canvas): for each text row (cell height `cellH` CSS pixels
 * at `dpr`), the rightmost and leftmost device pixel that differs from the
 * background colour (sampled at the bottom-right corner, away from text).
 */
function inkByRow(page, png, cellH, dpr, rows) {
  return page.evaluate(async ({ b64, cellH: h, dpr: d, rows: n }) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const bmp = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
    const c = new OffscreenCanvas(bmp.width, bmp.height);
    const g = c.getContext('2d');
    g.drawImage(bmp, 0, 0);
    const { data, width, height } = g.getImageData(0, 0, bmp.width, bmp.height);
    const at = (x, y) => (y * width + x) * 4;
    const bg = at(width - 2, height - 2);
    const out = [];
    for (let r = 0; r < n; r++) {
      let min = Infinity;
      let max = -1;
      // A device pixel's margin at each edge: the cursor's box may reach
      // over the row's rounded edge.
      for (let y = Math.round(r * h * d) + d; y < Math.min(height, Math.round((r + 1) * h * d) - d); y++) {
        for (let x = 0; x < width; x++) {
          const i = at(x, y);
          const diff = Math.abs(data[i] - data[bg]) + Math.abs(data[i + 1] - data[bg + 1]) + Math.abs(data[i + 2] - data[bg + 2]);
          if (diff > 96) { min = Math.min(min, x); max = Math.max(max, x); }
        }
      }
      out.push(max < 0 ? null : { min, max });
    }
    return { width, height, rows: out };
  }, { b64: png.toString('base64'), cellH, dpr, rows });
}

describe('phone', { timeout: 280000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startTether({ homeFiles: { '.bashrc': "PS1='$ '\n" } });
    // The GPU renderer on (SwiftShader): the point is which one draws.
    browser = await launchBrowser({ webgl: true });
  });

  after(() => closeAll(server, browser));

  test('at device pixel ratio 1, 2 and 3 the prompt is at the top left at the cell size', async () => {
    mkdirSync(artifactsDir, { recursive: true });
    for (const dpr of [1, 2, 3]) {
      const page = await phonePage(browser, dpr);
      await openDashboard(page, server);
      await createSessionInPage(page);
      await typeLine(page, 'clear; echo MMMMMMMMMM');
      await until(async () => {
        const l = await screenLines(page);
        return l[0] === 'MMMMMMMMMM' && l[1].trim() === '$';
      }, 10000, 'MMMMMMMMMM then the prompt on the cleared screen');
      // WebGL at ratio 1 only (terminalview.js, followPixelRatio).
      assert.equal(await page.evaluate(() => window.tether.renderer), dpr === 1 ? 'webgl' : 'dom', `renderer at ${dpr}`);
      const { cellW, cellH, fontSize } = await page.evaluate(() => {
        // eslint-disable-next-line no-underscore-dangle
        const cell = window.tether.term._core._renderService.dimensions.css.cell;
        return { cellW: cell.width, cellH: cell.height, fontSize: window.tether.term.options.fontSize };
      });
      // DejaVu Sans Mono: 0.6 em wide; line height 1.15.
      assert.ok(cellW > 0.5 * fontSize && cellW < 0.7 * fontSize, `cell width ${cellW} at ${fontSize}px`);
      assert.ok(cellH > 1.0 * fontSize && cellH < 1.5 * fontSize, `cell height ${cellH} at ${fontSize}px`);
      if (dpr !== 1) await page.waitForFunction(() => (document.querySelector('.xterm-rows')?.textContent || '').includes('MMMMMMMMMM'));
      await drawn(page);
      const png = await page.locator('.xterm-screen').screenshot();
      writeFileSync(path.join(artifactsDir, `phone-dpr${dpr}.png`), png);
      const ink = await inkByRow(page, png, cellH, dpr, 3);
      const px = cellW * dpr; // one cell in device pixels
      const where = `at DPR ${dpr}: cell ${cellW.toFixed(2)}×${cellH.toFixed(2)} CSS px, ink ${JSON.stringify(ink.rows)}`;
      // Row 0: ten Ms from the first cell to the tenth, no further.
      assert.ok(ink.rows[0], `no ink in the first row ${where}`);
      assert.ok(ink.rows[0].min < px, `the first row starts in the first cell ${where}`);
      assert.ok(ink.rows[0].max > 9 * px && ink.rows[0].max < 10.5 * px, `ten cells of M ${where}`);
      // Row 1: the prompt "$ " and the cursor after it (three cells).
      assert.ok(ink.rows[1] && ink.rows[1].min < px && ink.rows[1].max < 3.5 * px, `the prompt in row 2 ${where}`);
      // Row 2: nothing (glyphs 2–3× too large spilled into it).
      assert.equal(ink.rows[2], null, `nothing in row 3 ${where}`);
      assert.deepEqual(page.errors, []);
      await page.context().close();
    }
  });

  test('the renderer follows a change of the device pixel ratio', async () => {
    const page = await phonePage(browser, 1);
    await openDashboard(page, server);
    await createSessionInPage(page);
    assert.equal(await page.evaluate(() => window.tether.renderer), 'webgl');
    const cdp = await page.context().newCDPSession(page);
    // Headless Chromium evaluates media queries again only when the
    // viewport changes too: the width changes by a pixel each time.
    let width = PHONE.width;
    const setRatio = (deviceScaleFactor) => cdp.send('Emulation.setDeviceMetricsOverride', {
      width: ++width, height: PHONE.height, deviceScaleFactor, mobile: true,
    });
    await setRatio(3);
    await page.waitForFunction(() => window.tether.renderer === 'dom', null, { timeout: 5000 });
    await setRatio(1);
    await page.waitForFunction(() => window.tether.renderer === 'webgl', null, { timeout: 5000 });
    await typeLine(page, 'echo still-$((6*7))');
    await until(async () => (await screenLines(page)).includes('still-42'), 10000, 'output after the switches');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('the key bar drives vim: text, Esc, :wq', async () => {
    const page = await phonePage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    // Shown on a touch device, under the terminal, as wide as the window.
    await page.locator('#keybar').waitFor({ state: 'visible' });
    await typeLine(page, 'vim -u NONE -N keybar.txt');
    await until(async () => (await foreground(server, id)) === 'vim', 10000, 'vim in front');
    await page.keyboard.type('ihello from a phone');
    await tapKey(page, 'Escape');
    await page.keyboard.type(':wq');
    await page.keyboard.press('Enter');
    await until(async () => (await foreground(server, id)) === 'bash', 10000, 'vim gone after :wq');
    await typeLine(page, 'cat keybar.txt');
    await waitForLine(page, /^hello from a phone$/);
    await page.screenshot({ path: path.join(artifactsDir, 'phone-keybar.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('Ctrl then c interrupts sleep; Ctrl twice locks; Alt; Tab', async () => {
    const page = await phonePage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    await typeLine(page, 'sleep 300');
    await until(async () => (await foreground(server, id)) === 'sleep', 10000, 'sleep in front');
    await tapKey(page, 'Ctrl');
    assert.equal((await page.evaluate(() => window.tether.keyModifiers)).Ctrl, 'once');
    await page.keyboard.type('c');
    await until(async () => (await foreground(server, id)) === 'bash', 10000, 'sleep interrupted');
    assert.equal((await page.evaluate(() => window.tether.keyModifiers)).Ctrl, 'off', 'once: for one key');

    // Locked: every key until it is tapped again. Alt: ESC before the key.
    await typeLine(page, 'cat -v');
    await until(async () => (await foreground(server, id)) === 'cat', 10000, 'cat in front');
    await tapKey(page, 'Ctrl');
    await tapKey(page, 'Ctrl');
    assert.equal((await page.evaluate(() => window.tether.keyModifiers)).Ctrl, 'lock');
    await page.keyboard.type('ab');
    await tapKey(page, 'Ctrl');
    await tapKey(page, 'Alt');
    await page.keyboard.type('x');
    await tapKey(page, 'Tab');
    await page.keyboard.type('|');
    await tapKey(page, '~');
    await page.keyboard.press('Enter');
    // cat -v shows control characters as ^X (and Tab as itself).
    await waitForLine(page, /^\^A\^B\^\[x\t?\s*\|~$/);
    assert.deepEqual(await page.evaluate(() => window.tether.keyModifiers), { Ctrl: 'off', Alt: 'off' });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('the arrows follow the application cursor mode (DECCKM)', async () => {
    const page = await phonePage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    // Normal mode: CSI D; after ESC [ ? 1 h: SS3 D; Home and PgUp too.
    await typeLine(page, "printf '\\033[?1l'; cat -v");
    await until(async () => (await foreground(server, id)) === 'cat', 10000, 'cat in front');
    assert.equal(await page.evaluate(() => window.tether.term.modes.applicationCursorKeysMode), false);
    await tapKey(page, 'ArrowLeft');
    await tapKey(page, 'Home');
    await tapKey(page, 'PageUp');
    await page.keyboard.press('Enter');
    await waitForLine(page, /^\^\[\[D\^\[\[H\^\[\[5~$/);
    await page.keyboard.press('Control+C');
    await until(async () => (await foreground(server, id)) === 'bash', 10000, 'bash in front');
    await typeLine(page, "printf '\\033[?1h'; cat -v");
    await until(async () => (await foreground(server, id)) === 'cat', 10000, 'cat in front');
    // cat in front (the server's /proc) says nothing of the page: the mode's
    // bytes may still be on their way to its terminal.
    await until(() => page.evaluate(() => window.tether.term.modes.applicationCursorKeysMode), 10000,
      'the page in application cursor mode');
    await tapKey(page, 'ArrowLeft');
    await tapKey(page, 'End');
    await tapKey(page, 'PageDown');
    // With Ctrl: xterm's modifier parameter, in either mode.
    await tapKey(page, 'Ctrl');
    await tapKey(page, 'ArrowUp');
    await page.keyboard.press('Enter');
    await waitForLine(page, /^\^\[OD\^\[OF\^\[\[6~\^\[\[1;5A$/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('Keys hides the key bar and shows it again; the terminal takes the room', async () => {
    const page = await phonePage(browser);
    await openDashboard(page, server);
    await createSessionInPage(page);
    await page.locator('#keybar').waitFor({ state: 'visible' });
    const rows = () => page.evaluate(() => window.tether.term.rows);
    const withBar = await rows();
    await page.locator('#keys-toggle').tap();
    await page.locator('#keybar').waitFor({ state: 'hidden' });
    assert.equal(await page.locator('#keys-toggle').getAttribute('aria-pressed'), 'false');
    await until(async () => (await rows()) > withBar, 5000, 'more rows without the bar');
    // Remembered by the browser.
    await page.reload();
    await until(async () => page.evaluate(() => window.tether.term && window.tether.state === 'connected'), 10000, 'reattached');
    assert.equal(await page.locator('#keybar').isHidden(), true);
    await page.locator('#keys-toggle').tap();
    await page.locator('#keybar').waitFor({ state: 'visible' });
    await until(async () => (await rows()) === withBar, 5000, 'the rows with the bar again');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('one finger scrolls the scrollback; programs get wheel reports or arrows', async () => {
    const page = await phonePage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    await typeLine(page, 'seq 1 300');
    await waitForLine(page, /^300$/);
    const pos = () => page.evaluate(() => {
      const b = window.tether.term.buffer.active;
      return { viewportY: b.viewportY, baseY: b.baseY };
    });
    const start = await pos();
    assert.equal(start.viewportY, start.baseY, 'at the bottom');
    // Down: earlier lines come into view, as on any phone.
    await drag(page, 300);
    await until(async () => (await pos()).viewportY < start.baseY - 5, 5000, 'scrolled back');
    const back = await pos();
    assert.ok(!(await screenLines(page)).includes('300'), 'the last line left the screen');
    // Up again: back to the bottom.
    await drag(page, -400);
    await until(async () => (await pos()).viewportY === start.baseY, 5000, 'at the bottom again');
    assert.ok(back.viewportY < start.baseY);

    // A program that asked for the mouse (SGR encoding) gets the wheel.
    await typeLine(page, "printf '\\033[?1000h\\033[?1006h'; cat -v");
    await until(async () => (await foreground(server, id)) === 'cat', 10000, 'cat in front');
    await drag(page, 150);
    await page.keyboard.press('Enter');
    // Wheel up: button 64 (SGR: CSI < 64 ; col ; row M).
    await waitForLine(page, /^\^\[\[<64;\d+;\d+M/);
    await page.keyboard.press('Control+C');
    await until(async () => (await foreground(server, id)) === 'bash', 10000, 'bash in front');

    // The alternate screen without the mouse (less, man): arrow keys.
    await typeLine(page, "printf '\\033[?1000l\\033[?1006l\\033[?1049h'; cat -v");
    await until(async () => (await foreground(server, id)) === 'cat', 10000, 'cat in front');
    await drag(page, 150);
    await page.keyboard.press('Enter');
    await waitForLine(page, /^(\^\[\[A)+$/);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('two fingers pinch the font size; a tap focuses the terminal', async () => {
    const page = await phonePage(browser);
    await openDashboard(page, server);
    await createSessionInPage(page);
    const size = () => page.evaluate(() => window.tether.term.options.fontSize);
    const before = await size();
    const cols = await page.evaluate(() => window.tether.term.cols);
    const box = await page.locator('.xterm-screen').boundingBox();
    const cx = box.x + box.width / 2;
    const cy = box.y + box.height / 2;
    const steps = [];
    for (let i = 0; i <= 10; i++) {
      const d = 40 + i * 8; // apart from 80 to 240 px: three times
      steps.push([[cx - d, cy], [cx + d, cy]]);
    }
    await touchPath(page, steps);
    await until(async () => (await size()) > before * 2, 5000, 'a larger font');
    assert.equal(await page.locator('#font-size').textContent(), `${await size()}px`, 'kept as A+ keeps it');
    await until(async () => (await page.evaluate(() => window.tether.term.cols)) < cols, 5000, 'fewer columns');
    // Together again: smaller.
    const larger = await size();
    await touchPath(page, steps.slice().reverse());
    await until(async () => (await size()) < larger, 5000, 'a smaller font');

    // A tap on the terminal gives it the keyboard.
    await page.evaluate(() => document.activeElement.blur());
    await page.touchscreen.tap(cx, cy);
    await until(async () => (await page.evaluate(() => document.activeElement?.className)) === 'xterm-helper-textarea',
      5000, 'the terminal focused');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a long press selects a word and Copy copies it', async () => {
    const page = await phonePage(browser);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.base.replace(/\/$/, '') });
    await openDashboard(page, server);
    await createSessionInPage(page);
    await typeLine(page, 'clear; echo pick-me-42 other');
    await until(async () => (await screenLines(page))[0] === 'pick-me-42 other', 10000, 'the line at the top');
    const box = await page.locator('.xterm-screen').boundingBox();
    const cell = await page.evaluate(() => {
      const s = document.querySelector('.xterm-screen').getBoundingClientRect();
      return { w: s.width / window.tether.term.cols, h: s.height / window.tether.term.rows };
    });
    // Held on the third cell of the first row.
    const at = [box.x + cell.w * 2.5, box.y + cell.h * 0.5];
    await touchPath(page, [[at]], 900);
    assert.equal(await page.evaluate(() => window.tether.term.getSelection()), 'pick-me-42');
    await page.locator('#touch-copy').waitFor({ state: 'visible' });
    await page.locator('#touch-copy').tap();
    await until(async () => (await page.evaluate(() => navigator.clipboard.readText())) === 'pick-me-42', 5000, 'copied');
    await page.locator('#touch-copy').waitFor({ state: 'hidden' });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('the cursor line stays in view when the soft keyboard opens', async () => {
    const page = await phonePage(browser);
    await openDashboard(page, server);
    await createSessionInPage(page);
    await typeLine(page, 'seq 1 200');
    await waitForLine(page, /^200$/);
    await drag(page, 300); // reading the scrollback
    const rows = await page.evaluate(() => window.tether.term.rows);
    // The soft keyboard takes the lower half: the page gets shorter.
    await page.setViewportSize({ width: PHONE.width, height: 420 });
    await until(async () => (await page.evaluate(() => window.tether.term.rows)) < rows, 5000, 'fewer rows');
    await until(async () => page.evaluate(() => {
      const t = window.tether.term;
      const b = t.buffer.active;
      if (b.viewportY !== b.baseY) return false;
      // The cursor's row is on the screen, above the key bar, inside the window.
      const s = document.querySelector('.xterm-screen').getBoundingClientRect();
      const bottom = s.top + ((b.cursorY + 1) * s.height) / t.rows;
      const bar = document.getElementById('keybar').getBoundingClientRect();
      return bottom <= bar.top + 1 && bottom <= window.innerHeight;
    }), 5000, 'the cursor line in view').catch(async (e) => {
      throw new Error(`${e.message}: ${await page.evaluate(() => {
        const t = window.tether.term;
        const b = t.buffer.active;
        const s = document.querySelector('.xterm-screen').getBoundingClientRect();
        const bar = document.getElementById('keybar').getBoundingClientRect();
        return JSON.stringify({
          viewportY: b.viewportY, baseY: b.baseY, cursorY: b.cursorY, rows: t.rows, screenTop: s.top,
          screenH: s.height, barTop: bar.top, inner: window.innerHeight, active: document.activeElement?.className,
        });
      })}`);
    });
    await page.screenshot({ path: path.join(artifactsDir, 'phone-keyboard-open.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('the web app manifest is served, valid, and makes the page installable', async () => {
    const page = await phonePage(browser);
    await openDashboard(page, server);
    const served = await page.evaluate(async () => {
      const link = document.querySelector('link[rel="manifest"]');
      const r = await fetch(link.href);
      const m = await r.json();
      const icons = [];
      for (const i of m.icons) {
        const ir = await fetch(new URL(i.src, link.href));
        icons.push({ src: i.src, status: ir.status, type: ir.headers.get('Content-Type'), said: i.type });
      }
      return { status: r.status, type: r.headers.get('Content-Type'), m, icons };
    });
    assert.equal(served.status, 200);
    assert.equal(served.type, 'application/manifest+json');
    assert.equal(served.m.display, 'standalone');
    assert.equal(served.m.start_url, '/');
    for (const i of served.icons) {
      assert.equal(i.status, 200, i.src);
      assert.equal(i.type, i.said, i.src);
    }
    // Chromium's own reading: no manifest errors, and nothing against
    // installing but the private context playwright makes.
    const cdp = await page.context().newCDPSession(page);
    const m = await cdp.send('Page.getAppManifest');
    assert.match(m.url, /\/manifest\.webmanifest$/);
    assert.deepEqual(m.errors, []);
    const inst = await cdp.send('Page.getInstallabilityErrors');
    assert.deepEqual(inst.installabilityErrors.map((e) => e.errorId).filter((id) => id !== 'in-incognito'), []);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('two tiles show two live sessions and keys go only to the focused one', async () => {
    const ids = [];
    for (const name of ['left', 'right']) {
      const r = await api(server, 'POST', '/api/sessions', { command: ['/bin/bash'], cols: 80, rows: 24, name });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      ids.push(r.body.id);
    }
    const page = await newPage(browser, { viewport: { width: 1280, height: 720 } });
    await openDashboard(page, server, '#/tiles/left,right');
    // Names in the address resolve to ids, as in #/s/NAME.
    await page.waitForFunction((want) => location.hash === want, `#/tiles/${ids.join(',')}`, { timeout: 15000 })
      .catch(async (e) => { throw new Error(`${e.message}: address ${await page.evaluate(() => location.hash)}, errors ${page.errors}`); });
    await page.waitForFunction(() => window.tether.tiles.length === 2
      && window.tether.tiles.every((t) => t.attachment.state === 'connected' && t.attachment.inputEnabled),
    null, { timeout: 15000 }).catch(async (e) => {
      throw new Error(`${e.message}: tiles ${await page.evaluate(() => JSON.stringify(window.tether.tiles.map(
        (t) => ({ id: t.id, state: t.attachment.state, input: t.attachment.inputEnabled, closes: t.attachment.closes }))))}`);
    });
    assert.deepEqual(await page.locator('.tile-name').allTextContents(), ['left', 'right']);
    const tileHas = (i, text) => page.evaluate(({ i: n, text: t }) => {
      const b = window.tether.tiles[n].term.buffer.active;
      for (let y = 0; y < b.length; y++) if (b.getLine(y).translateToString(true) === t) return true;
      return false;
    }, { i, text });

    for (const [i, other, word] of [[0, 1, 'in-left'], [1, 0, 'in-right']]) {
      await page.locator('.tile .xterm-screen').nth(i).click();
      await page.keyboard.type(`echo ${word}-$((40+2))`);
      await page.keyboard.press('Enter');
      await until(() => tileHas(i, `${word}-42`), 10000, `${word}-42 in tile ${i}`);
      assert.equal(await tileHas(other, `${word}-42`), false, `keys of tile ${i} reached tile ${other}`);
      assert.equal(await page.locator('.tile.is-focused .tile-name').textContent(), i === 0 ? 'left' : 'right');
    }
    // Each session is attached (here), each at its tile's size.
    for (const id of ids) {
      const s = (await api(server, 'GET', `/api/sessions/${id}`)).body;
      assert.equal(s.attached, true);
    }
    await page.screenshot({ path: path.join(artifactsDir, 'dashboard-tiles.png') });
    // × leaves one tile; the session keeps running.
    await page.locator('.tile-close').first().click();
    await page.waitForFunction((want) => location.hash === want, `#/tiles/${ids[1]}`);
    await page.waitForFunction(() => window.tether.tiles.length === 1);
    assert.equal((await api(server, 'GET', `/api/sessions/${ids[0]}`)).body.state, 'running');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('one finger scrolls a tile\'s scrollback, and only that tile\'s', async () => {
    const ids = [];
    for (const name of ['touch-a', 'touch-b']) {
      const r = await api(server, 'POST', '/api/sessions', {
        command: ['/bin/sh', '-c', 'seq 1 200; exec cat'], cols: 80, rows: 24, name,
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      ids.push(r.body.id);
    }
    const page = await newPage(browser, { viewport: { width: 1024, height: 700 }, hasTouch: true });
    await openDashboard(page, server, `#/tiles/${ids.join(',')}`);
    await page.waitForFunction(() => window.tether.tiles.length === 2
      && window.tether.tiles.every((t) => t.attachment.state === 'connected'
        && t.term.buffer.active.baseY > 20), null, { timeout: 15000 });
    const pos = () => page.evaluate(() => window.tether.tiles.map((t) => {
      const b = t.term.buffer.active;
      return { viewportY: b.viewportY, baseY: b.baseY };
    }));
    const start = await pos();
    const box = await page.locator('.tile .xterm-screen').first().boundingBox();
    const x = box.x + box.width / 2;
    const y = box.y + box.height / 4;
    const steps = [];
    for (let i = 0; i <= 10; i++) steps.push([[x, y + (200 * i) / 10]]);
    await touchPath(page, steps);
    await until(async () => (await pos())[0].viewportY < start[0].baseY - 5, 5000, 'the first tile scrolled back');
    assert.deepEqual((await pos())[1], start[1], 'the other tile did not move');
    assert.ok((await page.evaluate(() => window.tether.tiles[0].touch.scrolled)) < 0);
    assert.deepEqual(page.errors, []);
    await page.context().close();
    for (const id of ids) await api(server, 'DELETE', `/api/sessions/${id}`);
  });

  test('the list\'s miniatures follow each session\'s screen, fetched on its output only', async () => {
    // Only the two sessions of this test in the list (all rows on screen).
    for (const s of (await api(server, 'GET', '/api/sessions')).body.sessions) {
      await api(server, 'DELETE', `/api/sessions/${s.id}`);
    }
    const ids = [];
    for (const name of ['mini-a', 'mini-b']) {
      const r = await api(server, 'POST', '/api/sessions', { command: ['/bin/bash'], cols: 80, rows: 24, name });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      ids.push(r.body.id);
    }
    const [a, b] = ids;
    await api(server, 'POST', `/api/sessions/${b}/input`, { data: 'echo b-$((6*7))\r' });
    const page = await newPage(browser, { viewport: { width: 1280, height: 720 } });
    await openDashboard(page, server);
    const mini = (id) => page.locator(`.session[data-id="${id}"] .mini`);
    const stats = () => page.evaluate(() => window.tether.miniatures);
    await until(async () => /^b-42$/m.test(await mini(b).textContent()), 10000, 'b-42 in mini-b\'s miniature');
    await until(async () => /^\$ ?$/m.test(await mini(a).textContent()), 10000, 'the prompt in mini-a\'s miniature');
    // Output in a: its miniature follows (an `output` event), b's is not fetched again.
    const before = (await stats()).fetches[b];
    for (const word of ['first', 'second']) {
      await api(server, 'POST', `/api/sessions/${a}/input`, { data: `echo ${word}-$((40+2))\r` });
      await until(async () => new RegExp(`^${word}-42$`, 'm').test(await mini(a).textContent()), 10000,
        `${word}-42 in mini-a's miniature`);
    }
    assert.equal((await stats()).fetches[b], before, JSON.stringify(await stats()));
    // Colours come through: red text is drawn red.
    await api(server, 'POST', `/api/sessions/${a}/input`, { data: 'printf "\\033[31mred-$((1+1))\\033[m\\n"\r' });
    const red = mini(a).locator('span', { hasText: 'red-2' });
    await red.waitFor({ timeout: 10000 });
    assert.match(await red.evaluate((e) => getComputedStyle(e).color), /^rgb\(\d+, \d+, \d+\)$/);
    await page.screenshot({ path: path.join(artifactsDir, 'dashboard-miniatures.png') });
    // The pane's overview (no session open): a card per session, its miniature live too.
    const card = page.locator(`#overview .overview-card[data-id="${a}"]`);
    await card.waitFor();
    assert.deepEqual(await page.locator('#overview .overview-title').allTextContents(), ['mini-a', 'mini-b']);
    await api(server, 'POST', `/api/sessions/${a}/input`, { data: 'echo card-$((2*3))\r' });
    await until(async () => /^card-6$/m.test(await card.locator('.mini').textContent()), 10000, 'card-6 in the card');
    await until(async () => /^card-6$/m.test(await mini(a).textContent()), 10000, 'card-6 in the row');
    await page.screenshot({ path: path.join(artifactsDir, 'dashboard-overview.png') });
    // A narrower window: the cards' pictures are scaled again to their new width.
    const scale = () => card.locator('.mini-screen').evaluate((e) => e.style.transform);
    const wide = await scale();
    await page.setViewportSize({ width: 1000, height: 720 });
    await until(async () => (await scale()) !== wide, 5000, `the card's picture to be scaled again (${wide})`);
    await page.setViewportSize({ width: 1280, height: 720 });
    await card.click();
    await page.waitForFunction((want) => location.hash === want, `#/s/${a}`);
    await mini(a).waitFor({ state: 'hidden' }); // open in the pane: no miniature in its row
    await page.goto(`${server.base}#/`);
    await page.waitForFunction(() => window.tether !== undefined);
    // Previews off: no miniature and no fetch; on again (kept in the browser).
    await page.locator('#previews-toggle').click();
    assert.equal(await page.locator('#previews-toggle').getAttribute('aria-pressed'), 'false');
    await mini(a).waitFor({ state: 'hidden' });
    const off = (await stats()).fetches[a];
    await api(server, 'POST', `/api/sessions/${a}/input`, { data: 'echo while-off\r' });
    await until(async () => String((await api(server, 'GET', `/api/sessions/${a}/screen`)).body).includes('while-off'),
      10000, 'the output');
    assert.equal((await stats()).fetches[a], off);
    await page.reload();
    await page.waitForFunction(() => window.tether !== undefined);
    assert.equal(await page.locator('#previews-toggle').getAttribute('aria-pressed'), 'false');
    await page.locator('#previews-toggle').click();
    await until(async () => /^while-off$/m.test(await mini(a).textContent()), 10000, 'while-off in the miniature');
    assert.ok(off >= 1);
    assert.deepEqual(page.errors, []);
    await page.context().close();
    for (const id of ids) await api(server, 'DELETE', `/api/sessions/${id}`);
  });

  test('on a phone the drawer\'s rows show miniatures that follow their sessions\' screens', async () => {
    for (const s of (await api(server, 'GET', '/api/sessions')).body.sessions) {
      await api(server, 'DELETE', `/api/sessions/${s.id}`);
    }
    const ids = [];
    for (const name of ['drawer-a', 'drawer-b', 'drawer-c']) {
      const r = await api(server, 'POST', '/api/sessions', { command: ['/bin/bash'], cols: 80, rows: 24, name });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      ids.push(r.body.id);
    }
    const [a, b, c] = ids;
    await api(server, 'POST', `/api/sessions/${b}/input`, { data: 'echo b-$((6*7))\r' });
    const page = await phonePage(browser);
    // Session a open: it fills the screen, the list is a closed drawer.
    await openDashboard(page, server, `#/s/${a}`);
    await waitForLive(page);
    const mini = (id) => page.locator(`.session[data-id="${id}"] .mini`);
    const stats = () => page.evaluate(() => window.tether.miniatures);
    const drawer = page.locator('#sidebar');
    assert.equal(await page.locator('#sidebar-toggle').getAttribute('aria-expanded'), 'false');
    // A closed drawer fetches nothing.
    assert.deepEqual((await stats()).fetches, {});
    await page.locator('#sidebar-toggle').tap();
    assert.equal(await page.locator('#sidebar-toggle').getAttribute('aria-expanded'), 'true');
    await until(async () => /^b-42$/m.test(await mini(b).textContent()), 10000, 'b-42 in drawer-b\'s miniature');
    // The open session's row has none: its screen is the page behind the drawer.
    assert.ok(await mini(a).isHidden());
    assert.equal((await stats()).fetches[a], undefined, JSON.stringify(await stats()));
    // The drawer and the picture fit the phone's width; the picture its row.
    const inside = async (id) => {
      const listBox = await drawer.boundingBox();
      assert.ok(listBox.x >= -1 && listBox.x + listBox.width <= PHONE.width + 1, JSON.stringify(listBox));
      const row = await page.locator(`.session[data-id="${id}"]`).boundingBox();
      const pic = await mini(id).locator('.mini-screen').boundingBox();
      assert.ok(pic.width > 100 && pic.height > 20, `a picture of some size: ${JSON.stringify(pic)}`);
      assert.ok(pic.x >= row.x - 1 && pic.x + pic.width <= row.x + row.width + 1,
        `the picture inside its row: ${JSON.stringify({ row, pic })}`);
    };
    await inside(b);
    // Output in b: its picture in the open drawer follows.
    for (const word of ['first', 'second']) {
      await api(server, 'POST', `/api/sessions/${b}/input`, { data: `echo ${word}-$((40+2))\r` });
      await until(async () => new RegExp(`^${word}-42$`, 'm').test(await mini(b).textContent()), 10000,
        `${word}-42 in drawer-b's miniature`);
    }
    await page.screenshot({ path: path.join(artifactsDir, 'phone-drawer-miniatures.png') });
    // c writes while its row is below the drawer's fold (or not): scrolled
    // to, its picture shows what it wrote; then it follows c's output, and
    // b, which wrote nothing, is not fetched again.
    await api(server, 'POST', `/api/sessions/${c}/input`, { data: 'echo c-$((2*7))\r' });
    await until(async () => String((await api(server, 'GET', `/api/sessions/${c}/screen`)).body).includes('c-14'),
      10000, 'c-14 on c\'s screen');
    await mini(c).scrollIntoViewIfNeeded();
    await until(async () => /^c-14$/m.test(await mini(c).textContent()), 10000, 'c-14 in drawer-c\'s miniature');
    await inside(c);
    const before = (await stats()).fetches[b];
    await api(server, 'POST', `/api/sessions/${c}/input`, { data: 'echo c-$((3*7))\r' });
    await until(async () => /^c-21$/m.test(await mini(c).textContent()), 10000, 'c-21 in drawer-c\'s miniature');
    assert.equal((await stats()).fetches[b], before, JSON.stringify(await stats()));
    // One tap on a row opens that session and closes the drawer; opened again,
    // the drawer shows a's picture (with what a wrote meanwhile), not b's.
    await page.locator(`.session[data-id="${b}"] .session-open`).tap();
    await page.waitForFunction((want) => location.hash === want, `#/s/${b}`);
    await waitForLive(page);
    assert.equal(await page.locator('#sidebar-toggle').getAttribute('aria-expanded'), 'false');
    await api(server, 'POST', `/api/sessions/${a}/input`, { data: 'echo a-$((3*5))\r' });
    await until(async () => String((await api(server, 'GET', `/api/sessions/${a}/screen`)).body).includes('a-15'),
      10000, 'a-15 on a\'s screen');
    await page.locator('#sidebar-toggle').tap();
    await until(async () => /^a-15$/m.test(await mini(a).textContent()), 10000, 'a-15 in drawer-a\'s miniature');
    await mini(b).waitFor({ state: 'hidden' });
    assert.deepEqual(page.errors, []);
    await page.context().close();
    for (const id of ids) await api(server, 'DELETE', `/api/sessions/${id}`);
  });

  test('the rows of the sessions open in the pane (tiles, the open one) show and fetch no miniature', async () => {
    for (const s of (await api(server, 'GET', '/api/sessions')).body.sessions) {
      await api(server, 'DELETE', `/api/sessions/${s.id}`);
    }
    const ids = [];
    for (const name of ['shown-a', 'shown-b', 'shown-c']) {
      const r = await api(server, 'POST', '/api/sessions', { command: ['/bin/bash'], cols: 80, rows: 24, name });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      ids.push(r.body.id);
    }
    const [a, b, c] = ids;
    await api(server, 'POST', `/api/sessions/${c}/input`, { data: 'echo c-$((6*7))\r' });
    for (const phone of [false, true]) {
      const where = phone ? 'on a phone' : 'at desktop size';
      const page = phone ? await phonePage(browser) : await newPage(browser, { viewport: { width: 1280, height: 720 } });
      const mini = (id) => page.locator(`.session[data-id="${id}"] .mini`);
      const stats = () => page.evaluate(() => window.tether.miniatures);
      const openList = async () => {
        if (phone) await page.locator('#sidebar-toggle').tap();
        assert.equal(await page.locator('#sidebar-toggle').getAttribute('aria-expanded'), 'true');
      };
      // a and b in tiles: their rows show no picture of what the tiles show
      // live, and fetch none; c's row does.
      await openDashboard(page, server, `#/tiles/${a},${b}`);
      await page.locator('.tile').nth(1).waitFor();
      await openList();
      await until(async () => /^c-42$/m.test(await mini(c).textContent()), 10000, `c-42 in shown-c's miniature ${where}`);
      assert.ok(await mini(a).isHidden(), `no miniature in a tile's row ${where}`);
      assert.ok(await mini(b).isHidden(), `no miniature in a tile's row ${where}`);
      let { fetches } = await stats();
      assert.equal(fetches[a], undefined, `${where}: ${JSON.stringify(fetches)}`);
      assert.equal(fetches[b], undefined, `${where}: ${JSON.stringify(fetches)}`);
      // Output in a tile's session: still nothing fetched for it.
      await api(server, 'POST', `/api/sessions/${a}/input`, { data: 'echo tile-$((2*4))\r' });
      const firstTile = () => page.evaluate(() => {
        const buf = window.tether.tiles[0].term.buffer.active;
        const out = [];
        for (let i = 0; i < buf.length; i++) out.push(buf.getLine(i).translateToString(true));
        return out;
      });
      await until(async () => (await firstTile()).includes('tile-8'), 10000, `tile-8 in the first tile ${where}`);
      // c writes: its picture follows (the output events came), a's is still not fetched.
      await api(server, 'POST', `/api/sessions/${c}/input`, { data: 'echo after-$((5*5))\r' });
      await until(async () => /^after-25$/m.test(await mini(c).textContent()), 10000, `after-25 in c's miniature ${where}`);
      ({ fetches } = await stats());
      assert.equal(fetches[a], undefined, `${where}: ${JSON.stringify(fetches)}`);
      assert.equal(fetches[b], undefined, `${where}: ${JSON.stringify(fetches)}`);
      // The tiles closed, a alone open: b's row has its picture again, a's none.
      await page.evaluate((h) => { location.hash = h; }, `#/s/${a}`);
      await waitForLive(page);
      await openList();
      await until(async () => /^\$ ?$/m.test(await mini(b).textContent()), 10000, `the prompt in b's miniature ${where}`);
      assert.ok(await mini(a).isHidden(), `no miniature in the open session's row ${where}`);
      assert.equal((await stats()).fetches[a], undefined, `${where}: ${JSON.stringify(await stats())}`);
      if (phone) await page.screenshot({ path: path.join(artifactsDir, 'phone-drawer-open-session.png') });
      assert.deepEqual(page.errors, []);
      await page.context().close();
    }
    for (const id of ids) await api(server, 'DELETE', `/api/sessions/${id}`);
  });
});
