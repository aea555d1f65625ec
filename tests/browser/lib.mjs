// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers of the dashboard's browser tests: a real `tether serve` in a
// throw-away home, Debian's Chromium through playwright-core (never a
// downloaded browser), a TCP proxy that can cut connections, and readers of
// the xterm.js buffer the page exposes as window.tether.term.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  mkdtempSync, mkdirSync, rmSync, chmodSync, copyFileSync, renameSync, writeFileSync,
} from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..');
export const artifactsDir = path.join(repoRoot, 'test-artifacts');

/** Absolute path of the tether binary under test (run.sh passes it). */
export function tetherBinary() {
  const bin = process.env.TETHER_BIN;
  if (!bin) throw new Error('TETHER_BIN is not set: run the tests through tests/browser/run.sh <tether>');
  return bin;
}

/**
 * The servers startTether spawned and that were not stopped yet, one record
 * each ({ proc, port, stderr }), added at spawn: this process kills them when
 * it exits (they run in sessions of their own, out of reach of whatever
 * signals this process's group), and serverLogTails() prints their logs. A
 * server that exited by itself stays until stop(): its log is what explains
 * a failure; killing an exited ChildProcess does nothing.
 */
const liveServers = new Set();
function endLiveServers() {
  for (const { proc } of liveServers) {
    try { proc.kill('SIGKILL'); } catch { /* already gone */ }
  }
}
process.on('exit', endLiveServers);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => { endLiveServers(); process.exit(128 + os.constants.signals[sig]); });
}

/**
 * The last `lines` lines of what each running server wrote on stderr, for a
 * failure message; '' when none runs.
 */
export function serverLogTails(lines = 40) {
  let out = '';
  for (const s of liveServers) {
    const tail = s.stderr().split('\n').slice(-lines).join('\n');
    out += `\ntether serve on port ${s.port ?? '(not yet known)'} (last ${lines} lines of its log):\n${tail}`;
  }
  return out;
}

/**
 * Starts `tether serve --port 0` with a temporary HOME, XDG_RUNTIME_DIR and
 * XDG_CONFIG_HOME, and waits for its line
 * "Tether is serving http://127.0.0.1:PORT/?key=KEY" (https:// when `args`
 * give it a certificate; off loopback the name a remote user opens): `base`
 * is that address without the key.
 * @param {{command?: string, args?: string[], env?: object, homeFiles?: object, copyBinary?: boolean,
 *   ca?: string, root?: string}} [opts]
 *   command: the default session command line (default /bin/bash);
 *   ca: PEM certificate(s) api() trusts for an https:// server (its own
 *   self-signed certificate), and nothing else;
 *   homeFiles: { name: text } written into the temporary HOME (e.g. .bashrc);
 *   copyBinary: run a copy of the binary in the temporary directory
 *   (`binary` in the result), which a test may replace as an upgrade would
 *   (replaceBinary);
 *   root: the `root` of an earlier server (its HOME, runtime and config
 *   directories: the same user again), e.g. one started after that one
 *   crashed (crash()); stop() then leaves the directory to the caller.
 *   Every server starts in a session of its own (setsid(2), as the README
 *   tells scripts to: `setsid tether serve &`), out of this process's group.
 * @returns {Promise<{base: string, port: number, key: string, keyedUrl: string,
 *   proc: import('node:child_process').ChildProcess, output: () => string, stderr: () => string,
 *   root: string, stop: () => Promise<{code: ?number, signal: ?string}>,
 *   crash: (signal?: string) => Promise<{code: ?number, signal: ?string}>}>}
 *   crash: kills the server (default SIGKILL) and waits for its end, leaving
 *   its directories (and its session keeper) as a crash does.
 */
export async function startTether(opts = {}) {
  const root = opts.root || mkdtempSync(path.join(os.tmpdir(), 'tether-browser-'));
  const home = path.join(root, 'home');
  const runtime = path.join(root, 'runtime');
  const config = path.join(root, 'config');
  for (const d of [home, runtime, config]) mkdirSync(d, { recursive: true });
  chmodSync(runtime, 0o700);
  for (const [name, text] of Object.entries(opts.homeFiles || {})) writeFileSync(path.join(home, name), text);
  const args = ['serve', '--port', '0', '--command', opts.command || '/bin/bash', ...(opts.args || [])];
  const env = {
    PATH: process.env.PATH || '/usr/bin:/bin',
    LANG: 'C.UTF-8',
    HOME: home,
    USER: process.env.USER || 'tester',
    SHELL: '/bin/bash',
    XDG_RUNTIME_DIR: runtime,
    XDG_CONFIG_HOME: config,
    QT_QPA_PLATFORM: 'offscreen',
    // The server's debug lines (each viewer attached, closing and gone, with
    // its close code; request timeouts): waitForLine prints them on failure.
    QT_LOGGING_RULES: 'tether.server.debug=true',
    ...(opts.env || {}),
  };
  let binary = tetherBinary();
  if (opts.copyBinary) {
    mkdirSync(path.join(root, 'bin'));
    binary = path.join(root, 'bin', 'tether');
    copyFileSync(tetherBinary(), binary);
    chmodSync(binary, 0o755);
  }
  // In a session of its own (setsid, `detached`): a launcher that signals
  // the whole process group (ctest's timeout, a job runner) must not reach
  // the server in the middle of a test. In exchange this process ends the
  // servers it started when it exits (liveServers), however it exits.
  const proc = spawn(binary, args, { env, cwd: home, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  const record = { proc, port: null, stderr: () => err };
  liveServers.add(record);
  proc.stderr.on('data', (d) => { err += d; });
  const line = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`tether serve printed no URL in 20 s\nstdout: ${out}\nstderr: ${err}`)), 20000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /Tether is serving ((https?):\/\/([^:/\s]+):(\d+)\/\?key=([A-Za-z0-9_-]+))/.exec(out);
      if (m) { clearTimeout(timer); resolve(m); }
    });
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`tether serve exited (${code ?? signal}) before serving\nstdout: ${out}\nstderr: ${err}`));
    });
  }).catch((e) => {
    // Its output is in the error; nothing is left to kill.
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    liveServers.delete(record);
    throw e;
  });
  const port = Number(line[4]);
  record.port = port;
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const server = {
    base: `${line[2]}://${line[3]}:${port}/`,
    port,
    key: line[5],
    ca: opts.ca,
    keyedUrl: line[1],
    home,
    root,
    binary,
    proc,
    output: () => `stdout:\n${out}\nstderr:\n${err}`,
    stderr: () => err,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 15000);
      const r = await exited;
      clearTimeout(timer);
      liveServers.delete(record);
      if (!opts.root) rmSync(root, { recursive: true, force: true });
      return r;
    },
    async crash(signal = 'SIGKILL') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      const r = await exited;
      liveServers.delete(record);
      return r;
    },
  };
  return server;
}

/**
 * Replaces `file` as a package upgrade does: `text` is written to a new file
 * beside it (mode 0755) and renamed over it.
 */
export function replaceBinary(file, text) {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.new`);
  writeFileSync(tmp, text);
  chmodSync(tmp, 0o755);
  renameSync(tmp, file);
}

/**
 * REST call with the bearer key. Returns { status, body }. Over https:// it
 * trusts only `server.ca` (node's fetch takes no CA of its own).
 */
export async function api(server, method, urlPath, body) {
  const headers = { Authorization: `Bearer ${server.key}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const url = new URL(urlPath, server.base);
  let status;
  let text;
  if (url.protocol === 'https:') {
    ({ status, text } = await new Promise((resolve, reject) => {
      const req = https.request(url, { method, headers, ca: server.ca }, (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (d) => { data += d; });
        res.on('end', () => resolve({ status: res.statusCode, text: data }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    }));
  } else {
    const r = await fetch(url, { method, headers, body: payload });
    status = r.status;
    text = await r.text();
  }
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = text; }
  return { status, body: json };
}

/**
 * Debian's Chromium, headless, with the flags that keep it off the network.
 * Without a GPU its WebGL is SwiftShader, a software rasterizer: extra CPU
 * work on a shared 2-core test machine (the dashboard suite ran past ctest's
 * 300 s with it, under load). So the dashboard's GPU renderer
 * (@xterm/addon-webgl) is switched off unless `opts.webgl`, and the dashboard
 * falls back to xterm.js's DOM renderer, as on a machine without WebGL2.
 * terminal.test.mjs runs with it. `opts.args`: more command-line switches.
 */
export async function launchBrowser(opts = {}) {
  const args = ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', ...(opts.args || [])];
  if (!opts.webgl) args.push('--disable-webgl');
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args,
  });
}

/**
 * A new page in its own browser context (own cookies, own sessionStorage),
 * collecting page errors and console errors so tests can assert none.
 */
export async function newPage(browser, opts = {}) {
  const context = await browser.newContext({
    viewport: opts.viewport || { width: 1280, height: 720 },
    colorScheme: opts.colorScheme || 'light',
    deviceScaleFactor: opts.deviceScaleFactor || 1,
    // A phone: touch events and a mobile viewport (phone.test.mjs).
    hasTouch: !!opts.hasTouch,
    isMobile: !!opts.isMobile,
  });
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(`pageerror: ${e.message}`));
  // Console errors include Content-Security-Policy refusals: xterm.js keeps
  // its colours and cell sizes in <style> elements, which the server's policy
  // must allow (style-src 'unsafe-inline'; scripts stay 'self' only).
  // The message's location names the resource for "Failed to load
  // resource" (which request met a refused or empty connection).
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const url = m.location()?.url;
    page.errors.push(`console: ${m.text()}${url ? ` (${url})` : ''}`);
  });
  return page;
}

/**
 * Page errors minus the ones a cut connection causes by design (the browser
 * logs the reset of the event stream and of the WebSocket).
 */
export function networkErrorsAside(errors) {
  return errors.filter((e) => !/ERR_CONNECTION_RESET|ERR_CONNECTION_CLOSED|ERR_EMPTY_RESPONSE|WebSocket connection to .* failed/.test(e));
}

/**
 * Page errors minus the 404s of miniature fetches (GET
 * /api/sessions/{id}/screen) for sessions other than `keepIds`: a session
 * deleted while its miniature's fetch was on the way answers 404, which the
 * dashboard handles (miniatures.js) but Chromium logs as "Failed to load
 * resource". A test whose page lists sessions that other tests delete (rows
 * run concurrently) sets those aside; a 404 for a session of `keepIds`
 * stays an error.
 */
export function endedSessionScreensAside(errors, keepIds = []) {
  return errors.filter((e) => {
    const m = /status of 404 .*\/api\/sessions\/([^/?\s)]+)\/screen/.exec(e);
    return !m || keepIds.includes(decodeURIComponent(m[1]));
  });
}

/** Opens the dashboard with the key (the server sets the cookie and redirects to /). */
export async function openDashboard(page, server, hash = '', base = server.base) {
  const url = `${base}?key=${server.key}${hash}`;
  await page.goto(url);
  await page.waitForFunction(() => window.tether !== undefined);
}

/** The terminal's active buffer as lines of text (trailing blanks trimmed). */
export async function bufferLines(page) {
  return page.evaluate(() => {
    const t = window.tether.term;
    if (!t) return [];
    const b = t.buffer.active;
    const lines = [];
    for (let i = 0; i < b.length; i++) lines.push(b.getLine(i).translateToString(true));
    return lines;
  });
}

/** The visible screen only (the last `rows` lines of the active buffer). */
export async function screenLines(page) {
  return page.evaluate(() => {
    const t = window.tether.term;
    const b = t.buffer.active;
    const lines = [];
    for (let i = 0; i < t.rows; i++) lines.push(b.getLine(b.viewportY + i)?.translateToString(true) ?? '');
    return lines;
  });
}

/**
 * Waits until some buffer line satisfies `re` (a RegExp), up to `timeout` ms.
 * On timeout the error shows the end of the buffer.
 */
export async function waitForLine(page, re, timeout = 15000) {
  try {
    await page.waitForFunction((src) => {
      const t = window.tether && window.tether.term;
      if (!t) return false;
      const rx = new RegExp(src);
      const b = t.buffer.active;
      for (let i = 0; i < b.length; i++) if (rx.test(b.getLine(i).translateToString(true))) return true;
      return false;
    }, re.source ?? re, { timeout, polling: 50 });
  } catch (e) {
    const lines = await bufferLines(page).catch(() => []);
    const state = await page.evaluate(() => window.tether && window.tether.state).catch(() => '?');
    // Why an attachment ended is in the banner (close code in plain words).
    const banner = await page.evaluate(() => {
      const b = document.getElementById('banner');
      return b && !b.hidden ? `${b.dataset.kind}: ${document.getElementById('banner-title').textContent}`
        + ` (${document.getElementById('banner-detail').textContent})` : 'none';
    }).catch(() => '?');
    // How it got there: the socket closes the page saw (code, reason, after
    // `attached` or not, the probe's status), and the servers' own account
    // (tether.server debug lines: each viewer attached, closing, gone).
    const closes = await page.evaluate(() => JSON.stringify(window.tether?.attachment?.closes ?? null)).catch(() => '?');
    throw new Error(`no line matching ${re} within ${timeout} ms (state ${state}; banner ${banner}); buffer ends:\n`
      + lines.filter((l) => l !== '').slice(-15).join('\n')
      + `\nsocket closes seen by the page: ${closes}${serverLogTails()}`);
  }
}

/** Waits for the attachment state ('connected', 'reconnecting', 'ended', ...). */
export async function waitForState(page, state, timeout = 15000) {
  await page.waitForFunction((s) => window.tether && window.tether.state === s, state, { timeout, polling: 50 });
}

/** Waits until the page is attached and its replay is written (input enabled). */
export async function waitForLive(page, timeout = 15000) {
  await page.waitForFunction(() => {
    const a = window.tether && window.tether.attachment;
    return a && a.state === 'connected' && a.inputEnabled;
  }, null, { timeout, polling: 50 });
}

/** Types a line into the terminal as keystrokes and presses Enter. */
export async function typeLine(page, text) {
  await page.locator('.xterm-helper-textarea').focus();
  // Keys go where the focus is: a hidden terminal cannot take it, and the
  // line would be typed into whatever had it (the New session field once).
  const focused = await page.evaluate(() => document.activeElement?.id || document.activeElement?.className || '');
  if (focused !== 'xterm-helper-textarea') throw new Error(`typeLine: the terminal did not take the focus (it is on "${focused}")`);
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

/** Creates a session through the page's form; returns its id (from the address) once live. */
export async function createSessionInPage(page, command = '') {
  // Keyboard path: type the command and press Enter in the field.
  await page.fill('#new-command', command);
  await page.press('#new-command', 'Enter');
  await page.waitForFunction(() => /^#\/s\/[^/]+$/.test(location.hash), null, { timeout: 15000 });
  const id = await page.evaluate(() => decodeURIComponent(location.hash.slice(4)));
  await waitForLive(page);
  return id;
}

/**
 * Reloads `page` (open on session `id`, showing the line `line`) and checks
 * that it reattaches to the same session with that earlier output exactly
 * once, that typing works after, and that no session was created.
 */
export async function assertReloadReattaches(page, server, id, line) {
  const count = (await api(server, 'GET', '/api/sessions')).body.sessions.length;
  await page.reload();
  await waitForLive(page);
  assert.equal(await page.evaluate(() => location.hash), `#/s/${id}`);
  await waitForLine(page, new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
  const lines = await bufferLines(page);
  assert.equal(lines.filter((l) => l === line).length, 1, lines.join('\n'));

  await typeLine(page, 'echo after-reload');
  await waitForLine(page, /^after-reload$/);
  assert.equal((await api(server, 'GET', '/api/sessions')).body.sessions.length, count,
    'a reload must not create a session');
}

/**
 * A network drop under a page attached to session `id` through `proxy`
 * (startProxy): the session prints `total` numbered lines while every
 * connection is cut and new ones are held; once released, the page must
 * resume (`resume=` at its own offset, no reset) with every line exactly once
 * and end at the session's offset, attached.
 */
export async function assertDropResumes(page, server, proxy, id, total = 60) {
  await typeLine(page, `for i in $(seq 1 ${total}); do echo MARK-$i; sleep 0.05; done; echo MARKS-DONE`);
  await waitForLine(page, /^MARK-5$/);

  // The network goes down: every connection cut, new ones held.
  proxy.hold();
  proxy.cutAll();
  await page.waitForFunction(() => ['reconnecting', 'offline'].includes(window.tether.state), null, { timeout: 10000 });
  const indicator = await page.locator('#conn').getAttribute('data-state');
  assert.ok(['reconnecting', 'offline'].includes(indicator), indicator);
  // The program keeps writing while the page is away.
  const pageOffset = await page.evaluate(() => window.tether.attachment.offset);
  await until(async () => (await api(server, 'GET', `/api/sessions/${id}`)).body.offset > pageOffset + 100,
    10000, 'output while disconnected');
  // The page keeps trying (its attempts wait in the proxy).
  await until(() => proxy.heldCount > 0, 10000, 'a reconnection attempt');

  proxy.release();
  await waitForLive(page);
  const attached = await page.evaluate(() => window.tether.attachment.lastAttached);
  assert.equal(attached.reason, 'resume');
  assert.equal(attached.reset, false);
  assert.equal(attached.replay_from, pageOffset);
  await waitForLine(page, /^MARKS-DONE$/, 20000);

  const marks = (await bufferLines(page)).filter((l) => /^MARK-\d+$/.test(l));
  const expected = Array.from({ length: total }, (_, i) => `MARK-${i + 1}`);
  assert.deepEqual(marks, expected);
  // And the page's offset is exactly the session's.
  const s = (await api(server, 'GET', `/api/sessions/${id}`)).body;
  await until(async () => (await page.evaluate(() => window.tether.attachment.offset))
    === (await api(server, 'GET', `/api/sessions/${id}`)).body.offset, 10000, 'offsets to match');
  assert.equal(s.attached, true);
}

/** Polls fn() (async ok) until it returns a truthy value; throws after timeout ms. */
export async function until(fn, timeout = 15000, what = 'condition') {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A TCP proxy in front of tether. Browsers name the proxy's port in Host and
 * Origin; tether refuses any Host but its own (DNS rebinding), so the first
 * request head of each connection is rewritten to name tether's port. After
 * that bytes pass untouched (WebSocket frames). cutAll() destroys every proxied
 * connection on both sides, as a network drop would; hold() makes new
 * connections wait (the network stays down) until release().
 * `opts.passThrough`: no rewriting at all (TLS, whose bytes cannot be
 * rewritten: tether then accepts the proxy's port through
 * `--allow-host 127.0.0.1:PORT`, as for a reverse proxy). `targetPort` may be
 * set later through `proxy.target` (before the first connection), for a
 * tether started after the proxy with the proxy's port in its arguments.
 */
export async function startProxy(targetPort, opts = {}) {
  let target = targetPort;
  const conns = new Set();
  let held = [];
  let holding = false;
  let connections = 0;
  const server = net.createServer((client) => {
    connections++;
    const start = () => {
      const upstream = net.connect(target, '127.0.0.1');
      const pair = { client, upstream };
      conns.add(pair);
      let head = Buffer.alloc(0);
      let rewritten = !!opts.passThrough;
      client.on('data', (d) => {
        if (rewritten) { upstream.write(d); return; }
        head = Buffer.concat([head, d]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        const text = head.subarray(0, end).toString('latin1')
          .replace(/^(host:\s*[^:\r\n]+):\d+/im, `$1:${target}`)
          .replace(/^(origin:\s*http:\/\/[^:\r\n]+):\d+/im, `$1:${target}`);
        upstream.write(Buffer.concat([Buffer.from(text, 'latin1'), head.subarray(end)]));
        rewritten = true;
      });
      upstream.on('data', (d) => client.write(d));
      const done = () => { client.destroy(); upstream.destroy(); conns.delete(pair); };
      client.on('error', done);
      upstream.on('error', done);
      client.on('close', done);
      upstream.on('close', done);
    };
    client.pause();
    if (holding) {
      held.push(() => { start(); client.resume(); });
      client.on('error', () => {});
    } else {
      start();
      client.resume();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  return {
    port,
    base: `http://127.0.0.1:${port}/`,
    get target() { return target; },
    set target(p) { target = p; },
    get connections() { return connections; },
    get open() { return conns.size; },
    cutAll() {
      for (const { client, upstream } of conns) {
        client.resetAndDestroy ? client.resetAndDestroy() : client.destroy();
        upstream.resetAndDestroy ? upstream.resetAndDestroy() : upstream.destroy();
      }
      conns.clear();
    },
    hold() { holding = true; },
    release() {
      holding = false;
      const h = held;
      held = [];
      for (const f of h) f();
    },
    get heldCount() { return held.length; },
    close() {
      this.cutAll();
      for (const f of held) f();
      return new Promise((r) => server.close(r));
    },
  };
}

/**
 * The start-up the browser tests share: startTether(opts.tether), then
 * launchBrowser(opts.browser). When the browser cannot start, the server is
 * stopped before the error is thrown, so nothing is left running.
 * @returns {Promise<{server: object, browser: import('playwright-core').Browser}>}
 *   both to be stopped with closeAll(server, browser)
 */
export async function startTetherAndBrowser(opts = {}) {
  const server = await startTether(opts.tether);
  try {
    return { server, browser: await launchBrowser(opts.browser) };
  } catch (e) {
    await server.stop();
    throw e;
  }
}

/// Closes the browser, then stops `tether serve` with SIGTERM and checks it
/// exited 0 (a clean shutdown is part of every browser test).
export async function closeAll(server, browser) {
  await browser?.close();
  if (server) {
    const r = await server.stop();
    assert.equal(r.code, 0, `tether serve should exit 0 on SIGTERM\n${server.output()}`);
  }
}
