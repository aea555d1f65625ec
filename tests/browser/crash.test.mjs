// SPDX-License-Identifier: GPL-2.0-or-later
// A crash of Tether said where the user looks (issue 24; docs/protocol.md
// "Surviving a crash"): `tether serve` is killed with SIGKILL while a
// dashboard is open on a session; the session keeper holds the session, and
// a new `tether serve` on the same port takes it over. The open page, once
// it is back, shows "Tether crashed at HH:MM and recovered 1 session" (the
// local time of the server's `crashed_at`); Dismiss hides it, and a reload
// of this browser does not show it again.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import {
  api, closeAll, createSessionInPage, launchBrowser, networkErrorsAside, newPage, openDashboard, startTether, typeLine,
  waitForLine, waitForLive,
} from './lib.mjs';

const pad = (n) => String(n).padStart(2, '0');

describe('crash notice', { timeout: 120000 }, () => {
  let first;
  let server;
  let browser;

  before(async () => {
    first = await startTether();
    browser = await launchBrowser();
  });

  after(async () => {
    await closeAll(server, browser);
    if (first) {
      await first.crash(); // when the test failed before the crash
      rmSync(first.root, { recursive: true, force: true });
    }
  });

  test('after a crash the page says when and how many sessions were recovered, until dismissed', async () => {
    const page = await newPage(browser);
    await openDashboard(page, first);
    await createSessionInPage(page);
    await typeLine(page, 'echo before-crash');
    await waitForLine(page, /^before-crash$/);
    await page.waitForFunction(() => window.tether.server !== null, null, { timeout: 10000 });
    assert.equal(await page.evaluate(() => window.tether.server.recovered_after_crash), 0);
    assert.equal(await page.locator('#crash').isVisible(), false);

    const killed = await first.crash();
    assert.equal(killed.signal, 'SIGKILL');
    server = await startTether({ root: first.root, args: ['--port', String(first.port)] });
    assert.equal(server.port, first.port);
    const status = (await api(server, 'GET', '/api/restart')).body;
    assert.equal(status.recovered_after_crash, 1, server.output());
    assert.match(status.crashed_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    // The open page finds the new server by itself and says what happened.
    await page.locator('#crash').waitFor({ state: 'visible', timeout: 20000 });
    const at = new Date(status.crashed_at);
    assert.equal(await page.locator('#crash-text').textContent(),
      `Tether crashed at ${pad(at.getHours())}:${pad(at.getMinutes())} and recovered 1 session`);
    // The session is the same one, and it works.
    await waitForLive(page, 20000);
    await typeLine(page, 'echo after-crash');
    await waitForLine(page, /^after-crash$/);

    await page.click('#crash-dismiss');
    assert.equal(await page.locator('#crash').isVisible(), false);
    await page.reload();
    await page.waitForFunction(() => window.tether.server !== null, null, { timeout: 10000 });
    assert.equal(await page.evaluate(() => window.tether.server.recovered_after_crash), 1);
    assert.equal(await page.locator('#crash').isVisible(), false);

    // Another browser profile has not dismissed it.
    const other = await newPage(browser);
    await openDashboard(other, server);
    await other.locator('#crash').waitFor({ state: 'visible', timeout: 10000 });
    // The text for a crash of another day, and one whose time is not known.
    const texts = await other.evaluate(async () => {
      const { crashText } = await import('./crashnotice.js');
      const crashed = new Date(2026, 0, 2, 9, 5);
      return [
        crashText({ recovered_after_crash: 3, crashed_at: crashed.toISOString() }, new Date(2026, 0, 3, 10, 0)),
        crashText({ recovered_after_crash: 2, crashed_at: null }),
      ];
    });
    assert.deepEqual(texts, ['Tether crashed on 2026-01-02 at 09:05 and recovered 3 sessions',
      'Tether crashed and recovered 2 sessions']);
    // The server was away a moment: refused connections, nothing else.
    assert.deepEqual(networkErrorsAside(page.errors).filter((e) => !/ERR_CONNECTION_REFUSED/.test(e)), []);
    assert.deepEqual(other.errors, []);
    await page.context().close();
    await other.context().close();
  });
});
