// SPDX-License-Identifier: GPL-2.0-or-later
// Ended sessions in the dashboard (issue 24; docs/protocol.md, "Ended
// sessions"): a server that finds records of sessions its predecessor did
// not end (here written as a reboot would have left them) lists them as
// "ended by reboot"; Revive opens the revived session with the saved screen
// above the marker line, in the same directory; Forget asks, then removes it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  api, closeAll, launchBrowser, newPage, openDashboard, startTether, typeLine, until, waitForLine, waitForLive,
} from './lib.mjs';

/** A record as SessionRecordStore writes it, left by a boot that is not this one. */
function writeRecord(dir, id, name, cwd, screen) {
  const record = {
    version: 1, id, name, command: ['/bin/bash', '--norc', '--noprofile'], cwd, title: '',
    created: '2026-01-01T10:00:00Z', saved: '2026-01-01T11:00:00Z', boot_id: 'a-boot-before-this-one',
    shutdown: false, cols: 80, rows: 24, scrollback_lines: 0, screen: Buffer.from(screen).toString('base64'),
  };
  writeFileSync(path.join(dir, `${id}.json`), JSON.stringify(record), { mode: 0o600 });
}

describe('ended sessions', { timeout: 120000 }, () => {
  let server;
  let browser;
  let root;
  let work;

  before(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'tether-revive-'));
    const records = path.join(root, 'state', 'tether', 'sessions');
    mkdirSync(records, { recursive: true, mode: 0o700 });
    work = path.join(root, 'work dir');
    mkdirSync(work);
    writeRecord(records, 'endedSessionOne', 'build', work, '\x1b[1;1H$ make\r\nsaved-line-before-reboot\r\n$ ');
    writeRecord(records, 'endedSessionTwo', 'notes', work, 'other saved screen');
    writeRecord(records, 'endedSessionThree', 'logs', work,
      '\x1b[1;1Hthird saved screen\r\n\x1b[31mred line\x1b[m\r\n$ tail -f app.log');
    server = await startTether({ env: { XDG_STATE_HOME: path.join(root, 'state'), PS1: '$ ' } });
    browser = await launchBrowser();
  });

  after(async () => {
    await closeAll(server, browser);
    rmSync(root, { recursive: true, force: true });
  });

  test('an ended session is listed, revived in its directory under its saved screen, or forgotten', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const row = page.locator('.session[data-id="endedSessionOne"]');
    await row.waitFor();
    assert.equal(await row.locator('.state').textContent(), 'ended by reboot');
    assert.ok(await row.locator('button.revive').isVisible());
    assert.ok(await row.locator('.attach').isHidden());
    assert.equal(await row.locator('button.kill').textContent(), 'Forget');

    await row.locator('button.revive').click();
    await waitForLive(page);
    await waitForLine(page, /saved-line-before-reboot/);
    await waitForLine(page, /--- tether: session ended by reboot at 2026-01-01 11:00:00 UTC/);
    await typeLine(page, 'pwd');
    await waitForLine(page, /work dir$/);
    await row.waitFor({ state: 'detached' });
    assert.equal((await api(server, 'GET', '/api/sessions/endedSessionOne')).status, 404);
    const list = (await api(server, 'GET', '/api/sessions')).body.sessions;
    const revived = list.find((s) => s.name === 'build');
    assert.equal(revived.state, 'running');
    assert.equal(revived.cwd, work);

    const other = page.locator('.session[data-id="endedSessionTwo"]');
    let message = '';
    page.once('dialog', (d) => { message = d.message(); d.accept(); });
    await other.locator('button.kill').click();
    await other.waitFor({ state: 'detached' });
    assert.match(message, /^Forget "notes"/);
    await until(async () => (await api(server, 'GET', '/api/sessions/endedSessionTwo')).status === 404, 5000,
      'the record to be forgotten');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('an ended session opened shows its saved screen read-only, with Revive and Forget', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const row = page.locator('.session[data-id="endedSessionThree"]');
    await row.locator('.session-open').click();
    await waitForLine(page, /^third saved screen$/);
    await waitForLine(page, /^\$ tail -f app\.log$/);
    assert.equal(await page.evaluate(() => window.tether.term.options.disableStdin), true);
    const banner = page.locator('#banner');
    await banner.waitFor();
    assert.match(await page.locator('#banner-title').textContent(), /^Session ended by reboot at 2026-01-01 11:00:00 UTC$/);
    assert.deepEqual(await page.locator('#banner-actions button').allTextContents(), ['Revive', 'Forget']);
    assert.equal(await page.locator('#conn-text').textContent(), 'Connected');
    assert.ok(await row.locator('button.revive').isVisible());
    assert.ok(await page.locator('#rename').isHidden());
    // Read-only: keys reach nothing (there is no process), and nothing breaks.
    await page.locator('#terminal').click();
    await page.keyboard.type('x');
    // A reload of its address shows it again; Forget in the banner asks, then removes it.
    await page.reload();
    await waitForLine(page, /^third saved screen$/);
    let message = '';
    page.once('dialog', (d) => { message = d.message(); d.accept(); });
    await page.locator('#banner-actions button', { hasText: 'Forget' }).click();
    await row.waitFor({ state: 'detached' });
    assert.match(message, /^Forget "logs"/);
    assert.equal(await page.evaluate(() => location.hash), '#/');
    assert.equal((await api(server, 'GET', '/api/sessions/endedSessionThree')).status, 404);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
