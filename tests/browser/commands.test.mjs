// SPDX-License-Identifier: GPL-2.0-or-later
// Commands and notifications in the dashboard (issue 25), in real Chromium
// against a real `tether serve` whose bash sessions load Tether's shell
// integration: a gutter mark per command coloured by its exit status with a
// tooltip, a click on it selects the command's output, Ctrl+Shift+Up/Down
// jump between prompts; the list shows each session's shell state; Notify
// next, Mute and Alerts (activity, silence); a browser notification (permission granted) at
// a command's end while nobody looks, none while the session is watched, an
// in-page toast on a visible page.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  api, closeAll, createSessionInPage, launchBrowser, newPage, openDashboard, startTether, typeLine,
  until, waitForLine,
} from './lib.mjs';

/** The session's shell state through the API ("prompt", "running", "unknown"). */
async function shellState(server, id) {
  return (await api(server, 'GET', `/api/sessions/${id}`)).body.shell.state;
}

/** Number of commands of session `id` that ended (the server's list). */
async function endedCommands(server, id) {
  return (await api(server, 'GET', `/api/sessions/${id}/commands`)).body.commands.filter((c) => !c.running).length;
}

/**
 * Records every Notification the page makes ({title, body, at: Date.now()})
 * in window.__notes, around the browser's own (with its permission), and
 * puts the tab's visibility under the test's control (window.__hidden):
 * headless Chromium neither shows notifications nor hides tabs.
 */
async function recordNotifications(page) {
  await page.addInitScript(() => {
    window.__notes = [];
    window.__hidden = false;
    const Real = window.Notification;
    class Recorded extends Real {
      constructor(title, opts) {
        super(title, opts);
        window.__notes.push({ title, body: opts && opts.body, at: Date.now() });
      }
    }
    window.Notification = Recorded;
    Object.defineProperty(Document.prototype, 'visibilityState', {
      configurable: true, get() { return window.__hidden ? 'hidden' : 'visible'; },
    });
  });
}

const notes = (page) => page.evaluate(() => window.__notes);

describe('commands and notifications', { timeout: 180000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startTether();
    browser = await launchBrowser();
  });

  after(() => closeAll(server, browser));

  test('a gutter mark per command by exit status, a click selects its output, Ctrl+Shift+Up/Down jump to prompts', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    await until(async () => (await shellState(server, id)) === 'prompt', 20000, 'the shell\'s first prompt');
    await typeLine(page, 'echo one-$((1))');
    await until(async () => (await endedCommands(server, id)) === 1, 15000, 'echo to end');
    await typeLine(page, 'false');
    await until(async () => (await endedCommands(server, id)) === 2, 15000, 'false to end');
    await typeLine(page, 'seq 1 80');
    await until(async () => (await endedCommands(server, id)) === 3, 15000, 'seq to end');
    await waitForLine(page, /^80$/);
    await until(async () => (await page.evaluate(() => window.tether.commands.filter((c) => c.ended).length)) === 3,
      5000, 'the page to see three commands end');
    const seen = await page.evaluate(() => window.tether.commands);
    assert.deepEqual(seen.map((c) => [c.commandLine, c.status]), [['echo one-$((1))', 0], ['false', 1], ['seq 1 80', 0]]);

    // The top of the scrollback, where echo and false are: their marks.
    await page.evaluate(() => window.tether.term.scrollToTop());
    const marks = page.locator('.xterm .cmd-mark');
    await until(async () => (await marks.count()) >= 2, 5000, 'the marks to be drawn');
    const drawn = await marks.evaluateAll((els) => els.map((e) => ({ kind: e.dataset.kind, title: e.title })));
    const echoTitle = 'echo one-$((1))\nexit 0 · click to select its output';
    assert.deepEqual(drawn.find((d) => d.title === echoTitle), { kind: 'ok', title: echoTitle }, JSON.stringify(drawn));
    assert.deepEqual(drawn.find((d) => d.title.startsWith('false\n')),
      { kind: 'bad', title: 'false\nexit 1 · click to select its output' }, JSON.stringify(drawn));
    // A click on echo's mark selects what it printed.
    const echoMark = marks.nth(drawn.findIndex((d) => d.title === echoTitle));
    await echoMark.click();
    assert.equal(await page.evaluate(() => window.tether.term.getSelection().trim()), 'one-1');

    // From the bottom, Ctrl+Shift+Up goes to seq's prompt, then false's;
    // Ctrl+Shift+Down back to seq's. The program gets none of those keys.
    await page.evaluate(() => { window.tether.term.clearSelection(); window.tether.term.scrollToBottom(); });
    await page.locator('.xterm-helper-textarea').focus();
    const top = () => page.evaluate(() => window.tether.term.buffer.active.viewportY);
    const offsetBefore = (await api(server, 'GET', `/api/sessions/${id}`)).body.offset;
    await page.keyboard.press('Control+Shift+ArrowUp');
    assert.equal(await top(), seen[2].line);
    await page.keyboard.press('Control+Shift+ArrowUp');
    assert.equal(await top(), seen[1].line);
    await page.keyboard.press('Control+Shift+ArrowDown');
    assert.equal(await top(), seen[2].line);
    assert.equal((await api(server, 'GET', `/api/sessions/${id}`)).body.offset, offsetBefore);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('the list shows each session\'s shell state; Notify next, Mute and Alerts set the session\'s notify', async () => {
    const s = (await api(server, 'POST', '/api/sessions', { command: ['/bin/bash'] })).body;
    await until(async () => (await shellState(server, s.id)) === 'prompt', 20000, 'the shell\'s first prompt');
    const page = await newPage(browser);
    await openDashboard(page, server);
    const row = page.locator(`.session[data-id="${s.id}"] .session-shell`);
    await api(server, 'POST', `/api/sessions/${s.id}/input`, { data: 'sh -c "exit 2"\r' });
    await until(async () => (await row.textContent()) === 'idle, last exit 2', 15000, 'the row to say the last exit');
    assert.equal(await row.getAttribute('data-kind'), 'bad');
    await api(server, 'POST', `/api/sessions/${s.id}/input`, { data: 'read line\r' });
    await until(async () => /^running `read line` for \d+s$/.test(await row.textContent()), 15000, 'the row to say what runs');

    // The open session's buttons.
    await page.goto(`${server.base}#/s/${s.id}`);
    await page.waitForFunction(() => window.tether && window.tether.attachment);
    const next = page.locator('#notify-next');
    const mute = page.locator('#notify-mute');
    await next.waitFor();
    assert.equal(await next.getAttribute('aria-pressed'), 'false');
    await next.click();
    await until(async () => (await api(server, 'GET', `/api/sessions/${s.id}`)).body.notify.next, 5000, 'next to be set');
    await until(async () => (await next.getAttribute('aria-pressed')) === 'true', 5000, 'the button to show it');
    await mute.click();
    await until(async () => (await api(server, 'GET', `/api/sessions/${s.id}`)).body.notify.muted, 5000, 'muted to be set');
    await until(async () => / · notify next, muted$/.test(await row.textContent()), 5000, 'the row to say so');
    // Alerts: the activity and silence alerts of the session, in a dialog.
    const alerts = page.locator('#notify-alerts');
    assert.equal(await alerts.getAttribute('aria-pressed'), 'false');
    await alerts.click();
    const dialog = page.locator('#alerts-dialog');
    await dialog.waitFor();
    assert.equal(await page.locator('#alerts-activity').isChecked(), false);
    assert.equal(await page.locator('#alerts-silence').inputValue(), '0');
    await page.locator('#alerts-activity').check();
    await until(async () => (await api(server, 'GET', `/api/sessions/${s.id}`)).body.notify.activity, 5000, 'activity to be set');
    await page.locator('#alerts-silence').selectOption('30');
    await until(async () => (await api(server, 'GET', `/api/sessions/${s.id}`)).body.notify.silence === 30, 5000,
      'silence to be set');
    await until(async () => / · notify next, muted, activity alert, silence alert 30s$/.test(await row.textContent()),
      5000, 'the row to say so');
    assert.equal(await alerts.getAttribute('aria-pressed'), 'true');
    assert.equal(await alerts.textContent(), 'Alerts on');
    // A threshold set elsewhere (tether, another tab) is shown as it is.
    await api(server, 'PATCH', `/api/sessions/${s.id}`, { notify: { silence: 45, activity: false } });
    await until(async () => (await page.locator('#alerts-silence').inputValue()) === '45', 5000, 'the dialog to follow');
    assert.equal(await page.locator('#alerts-silence option:checked').textContent(), '45 s');
    assert.equal(await page.locator('#alerts-activity').isChecked(), false);
    await page.locator('#alerts-silence').selectOption('0');
    await until(async () => (await api(server, 'GET', `/api/sessions/${s.id}`)).body.notify.silence === 0, 5000,
      'silence to be off');
    await until(async () => (await alerts.getAttribute('aria-pressed')) === 'false', 5000, 'the button to show it');
    await dialog.locator('button', { hasText: 'Close' }).click();
    await dialog.waitFor({ state: 'hidden' });
    // Narrower than 1000 px the top bar has no room: the pair under the list.
    await page.setViewportSize({ width: 800, height: 720 });
    await mute.waitFor({ state: 'hidden' });
    const sideMute = page.locator('.sidebar-notify .notify-mute');
    await sideMute.waitFor();
    assert.equal(await sideMute.getAttribute('aria-pressed'), 'true');
    await sideMute.click();
    await until(async () => !(await api(server, 'GET', `/api/sessions/${s.id}`)).body.notify.muted, 5000, 'muted to clear');
    await until(async () => (await sideMute.getAttribute('aria-pressed')) === 'false', 5000, 'the button to show it');
    // The command ends: the request is used up, and the button says so.
    await api(server, 'POST', `/api/sessions/${s.id}/input`, { data: 'x\r' });
    await until(async () => (await next.getAttribute('aria-pressed')) === 'false', 10000, 'Notify next to clear');
    assert.deepEqual(page.errors, []);
    await page.context().close();
    await api(server, 'DELETE', `/api/sessions/${s.id}`);
  });

  test('a browser notification at a command\'s end while nobody looks; none while watched; a toast on a visible page', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    await context.grantPermissions(['notifications'], { origin: server.base.replace(/\/$/, '') });
    const away = await context.newPage();
    away.errors = [];
    away.on('pageerror', (e) => away.errors.push(e.message));
    await recordNotifications(away);
    await openDashboard(away, server);
    assert.equal(await away.evaluate(() => Notification.permission), 'granted');
    await away.evaluate(() => { window.__hidden = true; }); // the tab is in the background

    const s = (await api(server, 'POST', '/api/sessions', { command: ['/bin/bash'], name: 'job' })).body;
    await until(async () => (await shellState(server, s.id)) === 'prompt', 20000, 'the shell\'s first prompt');
    await away.locator(`.session[data-id="${s.id}"]`).waitFor();

    // "Notify when the next command finishes", nobody attached: a command
    // far shorter than notify_after (10 s) ends...
    await api(server, 'POST', `/api/sessions/${s.id}/input`, { data: 'read line; (exit 3)\r' });
    await until(async () => (await shellState(server, s.id)) === 'running', 15000, 'read to run');
    assert.equal((await api(server, 'PATCH', `/api/sessions/${s.id}`, { notify: { next: true } })).status, 200);
    const endedAt = Date.now();
    await api(server, 'POST', `/api/sessions/${s.id}/input`, { data: '\r' });
    await until(async () => (await notes(away)).length === 1, 5000, 'the notification');
    const [first] = await notes(away);
    assert.equal(first.title, 'job: read line; (exit 3) finished');
    assert.match(first.body, /^exit 3 after \d+s$/);
    // The goal is 1 s; a time is not asserted here (a loaded or
    // sanitized run is slower, and speed goals belong in bench/): it is
    // printed, and the wait above is bounded.
    console.log(`# the notification came ${first.at - endedAt} ms after the command's end (goal: 1000 ms)`);

    // Every command notifies from now on (notify_after 0)...
    assert.equal((await api(server, 'PATCH', '/api/settings', { notify_after: 0 })).status, 200);
    // ...but not while someone watches it: a page attached to it, visible.
    const watcher = await newPage(browser);
    await recordNotifications(watcher);
    await openDashboard(watcher, server, `#/s/${s.id}`);
    await until(async () => (await api(server, 'GET', `/api/sessions/${s.id}`)).body.attached, 10000, 'the watcher to attach');
    const ended = await endedCommands(server, s.id);
    await api(server, 'POST', `/api/sessions/${s.id}/input`, { data: 'echo watched\r' });
    await until(async () => (await endedCommands(server, s.id)) === ended + 1, 15000, 'the watched command to end');
    // A visible page showing the list, not the session.
    const list = await newPage(browser);
    await recordNotifications(list);
    await openDashboard(list, server);
    await list.locator(`.session[data-id="${s.id}"]`).waitFor();

    // The watcher leaves; the next command ends with nobody looking: the
    // hidden page notifies, the visible list shows a toast. Events come in
    // order: had the watched command notified, it would be seen first.
    await watcher.context().close();
    await until(async () => !(await api(server, 'GET', `/api/sessions/${s.id}`)).body.attached, 10000, 'the watcher to leave');
    await api(server, 'POST', `/api/sessions/${s.id}/input`, { data: 'echo alone\r' });
    await until(async () => (await notes(away)).length === 2, 10000, 'the second notification');
    assert.equal((await notes(away))[1].title, 'job: echo alone finished');
    const toast = list.locator('.toast');
    await toast.waitFor();
    assert.match(await toast.textContent(), /job: echo alone finished/);
    assert.deepEqual(await notes(list), []); // a visible page: a toast, no system notification
    assert.equal(await list.evaluate(() => window.tether.notified.length), 1);
    assert.deepEqual(away.errors, []);
    assert.deepEqual(list.errors, []);
    await api(server, 'PATCH', '/api/settings', { notify_after: 10 });
    await context.close();
    await list.context().close();
  });
});
