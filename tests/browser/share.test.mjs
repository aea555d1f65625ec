// SPDX-License-Identifier: GPL-2.0-or-later
// Read-only links in a real Chromium (docs/protocol.md "Read-only links"):
// the owner's dashboard makes a link with Share (over the open session); a browser without the key
// opens it and gets the watch-only view of that one session (no list, says
// it is read-only), sees the output live, types and resizes without anything
// reaching the program; the owner's Revoke ends it on that page at once.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  api, closeAll, newPage, openDashboard, networkErrorsAside, startTetherAndBrowser, typeLine, until,
  waitForLine, waitForLive,
} from './lib.mjs';

/** Page errors a refused request causes by design (the revoked link's 401s). */
function expectedErrorsAside(errors) {
  return networkErrorsAside(errors).filter((e) => !/status of 401/.test(e));
}

describe('read-only links', { timeout: 180000 }, () => {
  let server;
  let browser;

  before(async () => ({ server, browser } = await startTetherAndBrowser()));

  after(() => closeAll(server, browser));

  test('a link watches one session, read-only, until it is revoked', async () => {
    // `cat` on a terminal: whatever reached it would be echoed and written
    // back, and the session's offset would grow.
    const made = await api(server, 'POST', '/api/sessions',
      { command: ['/bin/sh', '-c', 'echo READY-$((6*7)); exec cat'] });
    assert.equal(made.status, 201);
    const id = made.body.id;
    const other = await api(server, 'POST', '/api/sessions', { command: ['/bin/sh', '-c', 'echo OTHER; exec cat'] });
    assert.equal(other.status, 201);

    // The owner's dashboard: Share over the open session makes the link.
    const owner = await newPage(browser);
    await openDashboard(owner, server, `#/s/${id}/watch`);
    await waitForLine(owner, /^READY-42$/);
    await owner.click('#share');
    await owner.locator('#share-dialog[open]').waitFor();
    await until(async () => (await owner.inputValue('#share-url')) !== '', 10000, 'the link');
    const link = await owner.inputValue('#share-url');
    assert.match(link, new RegExp(`^${server.base.replace(/[./]/g, '\\$&')}\\?share=[A-Za-z0-9_-]{43}$`));
    assert.ok(!link.includes(server.key));
    await owner.click('#share-close');

    // Someone without the key opens it.
    const viewer = await newPage(browser);
    await viewer.goto(link);
    await viewer.waitForFunction(() => window.tether !== undefined);
    assert.equal(new URL(viewer.url()).hash, `#/share/${id}`);
    assert.ok(!viewer.url().includes('share='), 'the token left the address bar');
    await waitForLine(viewer, /^READY-42$/);
    await waitForLive(viewer);
    assert.equal(await viewer.evaluate(() => window.tether.attachment.mode), 'watch');
    // It says it is read-only, and shows no other session.
    assert.ok(await viewer.locator('#share-note').isVisible());
    assert.match(await viewer.locator('#share-note').innerText(), /read-only/i);
    assert.match(await viewer.locator('#conn-text').innerText(), /read-only/);
    assert.equal(await viewer.locator('#sidebar').isVisible(), false);
    assert.equal(await viewer.locator('#new-command').isVisible(), false);
    assert.equal(await viewer.locator('#rename').isVisible(), false);
    assert.deepEqual(await viewer.evaluate(() => window.tether.sessions.map((s) => s.id)), [id]);
    assert.equal(await viewer.locator('text=OTHER').count(), 0);

    // Typing and resizing reach nothing.
    const before = (await api(server, 'GET', `/api/sessions/${id}`)).body;
    await viewer.locator('#terminal').click();
    await viewer.keyboard.type('echo TYPED-BY-VIEWER');
    await viewer.keyboard.press('Enter');
    await viewer.keyboard.press('Control+C');
    await viewer.setViewportSize({ width: 700, height: 400 });
    await viewer.waitForTimeout(1000);
    const afterTyping = (await api(server, 'GET', `/api/sessions/${id}`)).body;
    assert.equal(afterTyping.offset, before.offset, 'nothing reached the program');
    assert.equal(afterTyping.state, 'running', 'no ^C reached it either');
    assert.equal(afterTyping.cols, before.cols);
    assert.equal(afterTyping.rows, before.rows);
    assert.ok(!(await viewer.evaluate(() => window.tether.term.buffer.active.getLine(1)?.translateToString(true) || ''))
      .includes('TYPED-BY-VIEWER'));

    // The owner's typing does, and the link shows it live.
    await owner.evaluate((sid) => { location.hash = `#/s/${sid}`; }, id);
    await waitForLive(owner);
    await typeLine(owner, 'from-the-owner');
    await waitForLine(viewer, /^from-the-owner$/);

    // Revoke (the owner's Share dialog): the link's page says so at once.
    await owner.click('#share');
    await owner.locator('#share-dialog[open]').waitFor();
    await until(async () => (await owner.inputValue('#share-url')) !== '', 10000, 'a second link');
    await owner.click('#share-revoke');
    await until(async () => /Revoked 2 links/.test(await owner.locator('#share-status').innerText()), 10000,
      'the revocation');
    await viewer.locator('#nokey').waitFor({ state: 'visible', timeout: 10000 });
    assert.equal(await viewer.locator('#nokey-title').innerText(), 'This read-only link was revoked');
    assert.equal(await viewer.evaluate(() => window.tether.term), null);
    // Opened again, the dead link says why.
    await viewer.reload();
    await viewer.locator('#nokey').waitFor({ state: 'visible', timeout: 10000 });
    assert.match(await viewer.locator('#nokey-text').innerText(), /revoked/);
    await viewer.goto(link);
    await viewer.locator('#nokey').waitFor({ state: 'visible', timeout: 10000 });
    assert.equal(await viewer.locator('#nokey-title').innerText(), 'This read-only link is not valid');
    // The session itself lives on, untouched.
    const end = (await api(server, 'GET', `/api/sessions/${id}`)).body;
    assert.equal(end.state, 'running');

    assert.deepEqual(expectedErrorsAside(viewer.errors), []);
    assert.deepEqual(networkErrorsAside(owner.errors), []);
    await viewer.context().close();
    await owner.context().close();
  });
});
