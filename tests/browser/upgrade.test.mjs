// SPDX-License-Identifier: GPL-2.0-or-later
// An upgrade noticed (issue 13): the running server's binary (a copy in a
// temporary directory) is replaced as a package upgrade does. The open
// dashboard shows "Tether was updated — restart to use version X (sessions
// are kept)" with a Restart button; the button restarts Tether in place,
// the terminal resumes, and the bar goes once the new version runs.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  api, closeAll, createSessionInPage, launchBrowser, networkErrorsAside, newPage, openDashboard,
  replaceBinary, startTether, tetherBinary, typeLine, until, waitForLine, waitForLive,
} from './lib.mjs';

describe('upgrade', { timeout: 120000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startTether({ copyBinary: true });
    browser = await launchBrowser();
  });

  after(() => closeAll(server, browser));

  test('a replaced binary shows the update bar, and its Restart runs the new version', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    await createSessionInPage(page);
    await typeLine(page, 'echo before-upgrade');
    await waitForLine(page, /^before-upgrade$/);
    await page.waitForFunction(() => window.tether.server !== null, null, { timeout: 10000 });
    const first = await page.evaluate(() => window.tether.server);
    assert.equal(first.update, null);
    // The running version is shown beside the name, as the API reports it.
    const running = (await api(server, 'GET', '/api/restart')).body.version;
    assert.match(running, /^\d+\.\d+\.\d+/);
    assert.equal(await page.locator('#version').textContent(), running);
    assert.equal(await page.locator('#update').isVisible(), false);

    // The "new version": answers --version with 9.9.9, and otherwise runs
    // the real binary, so that the restart works.
    replaceBinary(server.binary,
      '#!/bin/sh\nif [ "$1" = --version ]; then echo "tether 9.9.9"; exit 0; fi\n'
      + `exec '${tetherBinary()}' "$@"\n`);
    await page.locator('#update').waitFor({ state: 'visible', timeout: 15000 });
    assert.equal(await page.locator('#update-text').textContent(),
      'Tether was updated — restart to use version 9.9.9 (sessions are kept)');
    const status = (await api(server, 'GET', '/api/restart')).body;
    assert.deepEqual(status.update, { version: '9.9.9', binary: server.binary });

    const attaches = await page.evaluate(() => window.tether.attachment.attaches);
    await page.click('#update-restart');
    await until(async () => {
      const now = (await api(server, 'GET', '/api/restart')).body;
      return now && now.instance && now.instance !== status.instance;
    }, 15000, 'the new process image');
    const after = (await api(server, 'GET', '/api/restart')).body;
    assert.equal(after.pid, status.pid);
    assert.equal(after.restarts, 1);
    assert.equal(after.update, null);
    // The new image's `server` event hides the bar.
    await page.locator('#update').waitFor({ state: 'hidden', timeout: 15000 });
    await until(async () => (await page.evaluate(() => window.tether.attachment.attaches)) > attaches,
      15000, 'the page to attach again');
    await waitForLive(page);
    await typeLine(page, 'echo after-upgrade');
    await waitForLine(page, /^after-upgrade$/);
    assert.deepEqual(networkErrorsAside(page.errors), []);
    await page.context().close();
  });
});
