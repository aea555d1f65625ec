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
  api, bufferLines, closeAll, launchBrowser, newPage, openDashboard, startTether, typeLine, until, waitForLine,
  waitForLive,
} from './lib.mjs';

/** A record as SessionRecordStore writes it, left by a boot that is not this one. */
function writeRecord(dir, id, name, cwd, screen, scrollbackLines = 0) {
  const record = {
    version: 1, id, name, command: ['/bin/bash', '--norc', '--noprofile'], cwd, title: '',
    created: '2026-01-01T10:00:00Z', saved: '2026-01-01T11:00:00Z', boot_id: 'a-boot-before-this-one',
    shutdown: false, cols: 80, rows: 24, scrollback_lines: scrollbackLines,
    screen: Buffer.from(screen).toString('base64'),
  };
  writeFileSync(path.join(dir, `${id}.json`), JSON.stringify(record), { mode: 0o600 });
}

/** Scrollback lines in endedSessionLong's record. */
const LONG_LINES = 300;

/**
 * A saved screen laid out as SessionRecordStore writes one (Screen::snapshot
 * from a reset terminal with scrollback lines): LONG_LINES lines, each erased
 * to its end, then rows - 1 line feeds push them all into the scrollback,
 * then the screen painted from its top.
 */
function longScreen() {
  let s = '\x1b[?1047l\x1b[0m\x1b[?6l\x1b[r\x1b[4l\x1b(B\x0f\x1b[?7h';
  for (let i = 1; i <= LONG_LINES; i++) s += `old-line-${i} ${'.'.repeat(60)}\x1b[K\r\n`;
  s += '\n'.repeat(23);
  s += '\x1b[1;1Hvisible-top-line\r\n$ make\r\nvisible-last-line\r\n$ ';
  return s;
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
    writeRecord(records, 'endedSessionLong', 'long', work, longScreen(), LONG_LINES);
    // Laid out otherwise (plain output): 50 lines, 27 of them scrolled off a 24-row screen.
    writeRecord(records, 'endedSessionPlain', 'plain', work,
      Array.from({ length: 50 }, (_, i) => `plain-${i + 1}\r\n`).join('') + '$ ', 50);
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

  test('an ended session\'s miniature fetches its screen only, not its saved scrollback', async () => {
    const base = '/api/sessions/endedSessionLong/screen';
    // The server: lines=N keeps the last N saved lines; without it, all of them.
    const full = String((await api(server, 'GET', base)).body);
    assert.match(full, /old-line-1 /);
    const none = await api(server, 'GET', `${base}?lines=0`);
    assert.equal(none.status, 200);
    assert.doesNotMatch(String(none.body), /old-line-/);
    assert.match(String(none.body), /visible-top-line/);
    assert.match(String(none.body), /visible-last-line/);
    assert.ok(String(none.body).length < full.length / 4, `${String(none.body).length} of ${full.length}`);
    const five = String((await api(server, 'GET', `${base}?lines=5`)).body);
    assert.deepEqual([...five.matchAll(/old-line-(\d+) /g)].map((m) => Number(m[1])), [296, 297, 298, 299, 300]);
    assert.equal(String((await api(server, 'GET', `${base}?lines=${LONG_LINES}`)).body), full);
    const plain = async (q) => [...String((await api(server, 'GET', `/api/sessions/endedSessionPlain/screen${q}`)).body)
      .matchAll(/plain-(\d+)\b/g)].map((m) => Number(m[1]));
    assert.deepEqual(await plain('?lines=0'), Array.from({ length: 23 }, (_, i) => 28 + i));
    assert.deepEqual(await plain('?lines=2'), Array.from({ length: 25 }, (_, i) => 26 + i));
    for (const bad of ['-1', 'x', '1001', '']) {
      const r = await api(server, 'GET', `${base}?lines=${bad}`);
      assert.equal(r.status, 400, `lines=${bad}`);
      assert.equal(r.body.error, 'bad lines: an integer 0..1000');
    }
    // The dashboard's miniature, at desktop size and on a phone (the drawer
    // opens by itself when no session is open): what it fetched is the screen.
    for (const phone of [false, true]) {
      const page = await newPage(browser, phone
        ? { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, hasTouch: true, isMobile: true }
        : { viewport: { width: 1280, height: 720 } });
      const fetched = [];
      page.on('response', async (r) => {
        if (!r.url().includes('/api/sessions/endedSessionLong/screen')) return;
        fetched.push({ url: r.url(), body: (await r.body()).toString('latin1') });
      });
      await openDashboard(page, server);
      const mini = page.locator('.session[data-id="endedSessionLong"] .mini');
      await until(async () => /^visible-last-line$/m.test(await mini.textContent()), 10000, 'the saved screen in the miniature');
      assert.match(await mini.textContent(), /^visible-top-line$/m);
      await until(async () => fetched.length > 0 && fetched.every((f) => f.body), 5000, 'the responses');
      for (const f of fetched) {
        assert.match(new URL(f.url).search, /^\?lines=0$/, f.url);
        assert.doesNotMatch(f.body, /old-line-/, 'no saved scrollback in a miniature\'s fetch');
      }
      // Opened, it shows all of its saved screen, scrollback included.
      await page.locator('.session[data-id="endedSessionLong"] .session-open').click();
      await waitForLine(page, /^visible-last-line$/);
      await until(async () => (await bufferLines(page)).some((l) => l.startsWith('old-line-1 ')), 10000,
        'the saved scrollback in the opened saved screen');
      assert.deepEqual(page.errors, []);
      await page.context().close();
    }
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
