// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard over https:// and wss:// in Debian's Chromium (docs/protocol.md
// section 7, "TLS and remote use"; issue 10): a self-signed certificate made
// with `openssl req -x509`, `tether serve --tls-cert --tls-key`, and a browser
// that trusts that one certificate the way a user pins a self-signed one:
// `--ignore-certificate-errors-spki-list` with the SHA-256 of its public key
// (not `ignoreHTTPSErrors`, which would accept any certificate and so could
// not notice the server presenting the wrong one). Checked: the key link's
// cookie is Secure, HttpOnly, SameSite=Strict (section 3), and so is a
// read-only link's; the page's policy and its WebSockets say wss://; a
// session made, typed into, reloaded and resumed after a network drop; plain
// HTTP on the TLS port gets no answer, and the open page carries on; off
// loopback, the printed https://NAME link (section 7, "The printed address")
// works as printed.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  api, assertDropResumes, assertReloadReattaches, closeAll, createSessionInPage, launchBrowser, networkErrorsAside,
  newPage, openDashboard, startProxy, startTether, typeLine, until, waitForLine, waitForLive,
} from './lib.mjs';

/**
 * A self-signed certificate (EC P-256: quick to make) for tether.test (the
 * name a remote user opens; the browser resolves it to 127.0.0.1), localhost
 * and 127.0.0.1, in `dir`/`name`-cert.pem and -key.pem; returns the file
 * names and the certificate's PEM text.
 */
function makeCertificate(dir, name) {
  const cert = path.join(dir, `${name}-cert.pem`);
  const key = path.join(dir, `${name}-key.pem`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
    '-sha256', '-days', '2', '-nodes', '-keyout', key, '-out', cert, '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:tether.test,DNS:localhost,IP:127.0.0.1'], { stdio: ['ignore', 'ignore', 'pipe'] });
  return { cert, key, pem: readFileSync(cert, 'utf8') };
}

/** Base64 of the SHA-256 of the certificate's SubjectPublicKeyInfo (DER): Chromium's pin format. */
function spkiHash(pem) {
  const spki = new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('base64');
}

/**
 * Sends `request` over plain TCP and collects whatever comes back until the
 * server closes; resolves { bytes, closedBy }, or rejects after 15 s open.
 */
function plainRequest(port, request) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    const s = net.connect(port, '127.0.0.1', () => s.write(request));
    const timer = setTimeout(() => { s.destroy(); reject(new Error('the TLS port kept a plain HTTP request open 15 s')); }, 15000);
    s.on('data', (d) => chunks.push(d));
    const done = (closedBy) => { clearTimeout(timer); resolve({ bytes: Buffer.concat(chunks), closedBy }); };
    s.on('error', (e) => done(e.code));
    s.on('close', () => done('close'));
  });
}

describe('dashboard over https', { timeout: 180000 }, () => {
  let dir;
  let tls;
  let server;
  let browser;
  let proxy;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tether-https-'));
    tls = makeCertificate(dir, 'tether');
    // A pass-through proxy (a network that can drop), known to tether as a
    // reverse proxy's name: the TLS bytes cannot be rewritten to name
    // tether's port as startProxy does for plain HTTP.
    proxy = await startProxy(0, { passThrough: true });
    server = await startTether({
      args: ['--tls-cert', tls.cert, '--tls-key', tls.key, '--allow-host', `127.0.0.1:${proxy.port}`],
      ca: tls.pem,
    });
    proxy.target = server.port;
    browser = await launchBrowser({
      args: [`--ignore-certificate-errors-spki-list=${spkiHash(tls.pem)}`, '--host-resolver-rules=MAP tether.test 127.0.0.1'],
    });
  });

  after(async () => {
    await proxy?.close();
    await closeAll(server, browser);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('serves https:// and the browser trusts exactly its certificate', async () => {
    assert.equal(server.base, `https://127.0.0.1:${server.port}/`);
    assert.match(server.keyedUrl, /^https:\/\/127\.0\.0\.1:\d+\/\?key=/);
    // Another self-signed certificate for the same names, served by node:
    // the same browser refuses it, so the pin (not a blanket "ignore
    // certificate errors") is what lets the dashboard load below.
    const other = makeCertificate(dir, 'other');
    const impostor = https.createServer({ cert: other.pem, key: readFileSync(other.key) }, (req, res) => res.end('impostor'));
    await new Promise((r) => impostor.listen(0, '127.0.0.1', r));
    try {
      const page = await newPage(browser);
      await assert.rejects(page.goto(`https://127.0.0.1:${impostor.address().port}/`), /ERR_CERT_AUTHORITY_INVALID/);
      await page.context().close();
    } finally {
      await new Promise((r) => impostor.close(r));
    }
  });

  test('the key link sets a Secure cookie; a session runs over wss:// and survives a reload', async () => {
    const page = await newPage(browser);
    const responses = [];
    const sockets = [];
    page.on('response', (r) => responses.push(r));
    page.on('websocket', (ws) => sockets.push(ws.url()));
    await openDashboard(page, server);
    assert.equal(page.url(), server.base, 'the key left the address bar');

    // Section 3: the cookie, exactly, with Secure at the end under TLS.
    const keyed = responses.find((r) => r.url() === server.keyedUrl);
    assert.ok(keyed, 'the key link was requested');
    assert.equal(keyed.status(), 303);
    assert.equal(await keyed.headerValue('set-cookie'),
      `tether_key=${server.key}; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000; Secure`);
    const cookies = await page.context().cookies();
    assert.equal(cookies.length, 1, JSON.stringify(cookies));
    assert.deepEqual(
      { name: cookies[0].name, value: cookies[0].value, path: cookies[0].path, secure: cookies[0].secure,
        httpOnly: cookies[0].httpOnly, sameSite: cookies[0].sameSite },
      { name: 'tether_key', value: server.key, path: '/', secure: true, httpOnly: true, sameSite: 'Strict' });
    assert.equal(await page.evaluate(() => document.cookie), '', 'HttpOnly: scripts cannot read the key');
    // The page's policy lets it connect to wss://HOST only (not ws://).
    const index = responses.find((r) => r.url() === server.base);
    const csp = await index.headerValue('content-security-policy');
    assert.match(csp, new RegExp(`connect-src 'self' wss://127\\.0\\.0\\.1:${server.port};`));
    assert.doesNotMatch(csp, /ws:\/\//);

    await page.waitForSelector('#empty:not([hidden])');
    const id = await createSessionInPage(page);
    await typeLine(page, 'echo over-tls-$((6*7))');
    await waitForLine(page, /^over-tls-42$/);
    const wsPrefix = `wss://127.0.0.1:${server.port}/ws/${encodeURIComponent(id)}?`;
    assert.ok(sockets.length >= 1 && sockets.every((u) => u.startsWith(wsPrefix)), sockets.join('\n'));
    const made = await api(server, 'GET', `/api/sessions/${id}`);
    assert.equal(made.status, 200);
    assert.equal(made.body.attached, true);
    assert.equal(made.body.state, 'running');

    // A reload: the cookie alone opens the page again, and it reattaches to
    // the same session with its earlier output, once, over wss:// again.
    const before = sockets.length;
    await assertReloadReattaches(page, server, id, 'over-tls-42');
    assert.ok(sockets.length > before && sockets.slice(before).every((u) => u.startsWith(wsPrefix)),
      sockets.join('\n'));
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a read-only link is https://, its cookie Secure, and it watches over wss://', async () => {
    const made = await api(server, 'POST', '/api/sessions',
      { command: ['/bin/sh', '-c', 'echo SHARED-$((6*7)); exec cat'] });
    assert.equal(made.status, 201);
    const id = made.body.id;
    const link = await api(server, 'POST', '/api/shares', { session: id });
    assert.equal(link.status, 201);
    assert.equal(link.body.url, `${server.base}?share=${link.body.token}`);

    const viewer = await newPage(browser);
    const sockets = [];
    viewer.on('websocket', (ws) => sockets.push(ws.url()));
    const shared = viewer.waitForResponse((r) => r.url() === link.body.url);
    await viewer.goto(link.body.url);
    // Section 3: one cookie per session, Secure under TLS.
    assert.equal(await (await shared).headerValue('set-cookie'),
      `tether_share_${id}=${link.body.token}; HttpOnly; SameSite=Strict; Path=/; Secure`);
    assert.deepEqual((await viewer.context().cookies()).map((c) => [c.name, c.secure, c.httpOnly, c.sameSite]),
      [[`tether_share_${id}`, true, true, 'Strict']]);
    await viewer.waitForFunction(() => window.tether !== undefined);
    await waitForLine(viewer, /^SHARED-42$/);
    await waitForLive(viewer);
    assert.equal(await viewer.evaluate(() => window.tether.attachment.mode), 'watch');
    assert.ok(sockets.length >= 1
      && sockets.every((u) => u.startsWith(`wss://127.0.0.1:${server.port}/ws/${encodeURIComponent(id)}?`)),
    sockets.join('\n'));
    assert.deepEqual(viewer.errors, []);
    await viewer.context().close();
  });

  test('plain http:// on the TLS port is answered "use https://", and the open page carries on', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server);
    const id = await createSessionInPage(page);
    await typeLine(page, 'echo first-$((6*7))');
    await waitForLine(page, /^first-42$/);

    // The key link typed with http://: not served (the key crossed the wire
    // in clear, but nothing is served for it), answered in clear text 400
    // saying to use https:// (as nginx does), then closed. It was a closed
    // connection without an answer, which clients showed as "Connection
    // closed" or an empty response.
    const r = await plainRequest(server.port,
      `GET /?key=${server.key} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nConnection: close\r\n\r\n`);
    const text = r.bytes.toString('latin1');
    assert.ok(text.startsWith('HTTP/1.1 400 '), `answered: ${text}`);
    assert.ok(text.includes('the plain HTTP request was sent to an HTTPS port') && text.includes('use https://'), text);
    assert.equal(/set-cookie/i.test(text), false, text);
    assert.equal(text.includes(server.key), false, 'the key is never echoed');
    assert.ok(['close', 'ECONNRESET'].includes(r.closedBy), r.closedBy);
    // The same from Chromium: the page says why, and keeps nothing.
    const plain = await newPage(browser);
    const response = await plain.goto(`http://127.0.0.1:${server.port}/?key=${server.key}`);
    assert.equal(response.status(), 400);
    assert.match(await plain.textContent('body'), /use https:\/\//);
    assert.deepEqual(await plain.context().cookies(), [], 'no cookie came over plain HTTP');
    await plain.context().close();
    await until(() => /plain HTTP request on the TLS port/.test(server.output()), 5000, 'the refusal in the log');

    // The wss:// page was not affected.
    assert.equal(await page.evaluate(() => window.tether.state), 'connected');
    await typeLine(page, 'echo still-here');
    await waitForLine(page, /^still-here$/);
    assert.equal((await api(server, 'GET', `/api/sessions/${id}`)).body.attached, true);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  test('a dropped wss:// connection resumes with nothing lost and nothing twice', async () => {
    const page = await newPage(browser);
    await openDashboard(page, server, '', `https://127.0.0.1:${proxy.port}/`);
    const id = await createSessionInPage(page);
    await assertDropResumes(page, server, proxy, id, 40);
    assert.deepEqual(networkErrorsAside(page.errors), []);
    await page.context().close();
  });

  test('off loopback, the printed https://NAME:PORT link opens a working dashboard', async () => {
    const remote = await startTether({ args: ['--bind', '0.0.0.0', '--tls-cert', tls.cert, '--tls-key', tls.key] });
    try {
      // The certificate's first DNS name that is not localhost.
      assert.equal(remote.base, `https://tether.test:${remote.port}/`);
      const page = await newPage(browser);
      const sockets = [];
      page.on('websocket', (ws) => sockets.push(ws.url()));
      await page.goto(remote.keyedUrl);
      await page.waitForFunction(() => window.tether !== undefined);
      assert.equal(page.url(), remote.base);
      // The name passes the Host and Origin checks (a certificate name),
      // and the cookie is the name's, Secure.
      const cookies = await page.context().cookies();
      assert.deepEqual(cookies.map((c) => [c.name, c.domain, c.secure, c.httpOnly, c.sameSite]),
        [['tether_key', 'tether.test', true, true, 'Strict']]);
      const id = await createSessionInPage(page);
      await typeLine(page, 'echo remote-$((6*7))');
      await waitForLine(page, /^remote-42$/);
      const wsPrefix = `wss://tether.test:${remote.port}/ws/${encodeURIComponent(id)}?`;
      assert.ok(sockets.length >= 1 && sockets.every((u) => u.startsWith(wsPrefix)), sockets.join('\n'));
      assert.deepEqual(page.errors, []);
      await page.context().close();
    } finally {
      const r = await remote.stop();
      assert.equal(r.code, 0, `tether serve should exit 0 on SIGTERM\n${remote.output()}`);
    }
  });
});
