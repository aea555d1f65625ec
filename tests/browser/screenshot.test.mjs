// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard with live sessions in light and dark, at 1280×720 and in a
// narrow window: layout checks, plus screenshots saved to test-artifacts/
// (dashboard.png is the one the README shows, via docs/images/).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  api, artifactsDir, launchBrowser, newPage, openDashboard, startTether, typeLine, until,
  waitForLine, waitForLive,
  closeAll,
} from './lib.mjs';

// A prompt like a developer's: the title follows the directory.
const PS1 = '\\[\\e]0;\\W\\a\\]\\[\\e[1;32m\\]dev@tether\\[\\e[0m\\]:\\[\\e[1;34m\\]\\w\\[\\e[0m\\]$ ';

async function noHorizontalOverflow(page) {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
}

describe('screenshots', { timeout: 240000 }, () => {
  let server;
  let browser;
  let mainId;

  before(async () => {
    server = await startTether({ homeFiles: { '.bashrc': `PS1='${PS1}'\n` } });
    browser = await launchBrowser();
    mkdirSync(artifactsDir, { recursive: true });
    // A finished build and a background monitor, for a lived-in list.
    await api(server, 'POST', '/api/sessions', {
      command: ['/bin/sh', '-c', 'echo "compiling 42 files"; echo "error: 1 test failed"; exit 2'],
    });
    await api(server, 'POST', '/api/sessions', { command: ['/usr/bin/top', '-d', '5'], cols: 120, rows: 32 });
  });

  after(() => closeAll(server, browser));

  test('light, 1280×720', async () => {
    const page = await newPage(browser, { viewport: { width: 1280, height: 720 }, colorScheme: 'light' });
    await openDashboard(page, server);
    await page.fill('#new-command', '');
    await page.click('#new-button');
    await page.waitForFunction(() => /^#\/s\//.test(location.hash));
    mainId = await page.evaluate(() => decodeURIComponent(location.hash.slice(4)));
    await waitForLive(page);
    await typeLine(page, 'cd /usr/share && uname -sm');
    await waitForLine(page, /^Linux /);
    await typeLine(page, 'ls --color=always -F | head -n 18 | column -c 100');
    await waitForLine(page, /^dev@tether:\/usr\/share\$\s*$/);
    await page.waitForSelector('.session >> nth=2');
    await until(async () => (await page.locator('.session.is-current .viewer').textContent()) === 'attached here',
      10000, 'attached here');
    assert.ok(await noHorizontalOverflow(page));
    // The list shows what the issue asks for: state, attachment, idle, expiry, buffer.
    const exited = page.locator('.session', { hasText: 'exited 2' });
    assert.equal(await exited.count(), 1);
    assert.match(await exited.locator('.expiry').textContent(), /^expires in \d+:\d\d$/);
    assert.match(await page.locator('.session.is-current .buffer-text').textContent(), / of 64 MiB| of \d+ (KiB|MiB)/);
    await page.mouse.move(0, 719);
    await page.screenshot({ path: path.join(artifactsDir, 'dashboard.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('dark, 1280×720', async () => {
    const page = await newPage(browser, { viewport: { width: 1280, height: 720 }, colorScheme: 'dark' });
    await openDashboard(page, server, `#/s/${mainId}`);
    await waitForLive(page);
    await waitForLine(page, /^Linux /);
    // Dark theme reaches the terminal too.
    const bg = await page.evaluate(() => window.tether.term.options.theme.background);
    assert.equal(bg, '#12151b');
    await page.mouse.move(0, 719);
    await page.screenshot({ path: path.join(artifactsDir, 'dashboard-dark.png') });
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('narrow window: the list is a drawer, the terminal keeps the width', async () => {
    const page = await newPage(browser, { viewport: { width: 400, height: 760 }, colorScheme: 'light' });
    await openDashboard(page, server, `#/s/${mainId}`);
    await waitForLive(page);
    await waitForLine(page, /^Linux /);
    assert.ok(await noHorizontalOverflow(page));
    assert.equal(await page.locator('#sidebar').isVisible(), false);
    const cols = await page.evaluate(() => window.tether.term.cols);
    assert.ok(cols >= 38, `narrow terminal has ${cols} columns`);
    // The session follows the narrow pane.
    await until(async () => (await api(server, 'GET', `/api/sessions/${mainId}`)).body.cols === cols, 10000, 'resize');
    await page.screenshot({ path: path.join(artifactsDir, 'dashboard-narrow.png') });

    await page.click('#sidebar-toggle');
    assert.equal(await page.locator('#sidebar').isVisible(), true);
    assert.ok(await noHorizontalOverflow(page));
    await page.screenshot({ path: path.join(artifactsDir, 'dashboard-narrow-list.png') });
    // Escape from the list goes back to the terminal.
    await page.keyboard.press('Escape');
    assert.equal(await page.locator('#sidebar').isVisible(), false);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
