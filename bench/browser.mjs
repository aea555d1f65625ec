// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard's figures for `make bench` (issue 27: "the browser is
// unmeasured"): the dashboard's own page in Debian's Chromium (headless,
// playwright-core from tests/browser), attached to a session of a running
// `tether serve`, driven through the page's test hook (window.tether.term,
// the xterm.js Terminal). Prints one JSON object on stdout:
//   throughput: MB/s of `cat FILE` from the command's Enter until the marker
//               printed after it has been parsed and painted (the next
//               animation frame after xterm.js parsed it);
//   keys:       keystroke to paint, ms: term.input(key) (what a keypress
//               sends, through the page's WebSocket) until the echo of a
//               `stty raw -echo; cat` is parsed and the next frame is painted;
//   interrupt:  Ctrl-C during a flood (`yes`) until the prompt is back on
//               screen, ms;
//   renderer:   'webgl' or 'dom', as the dashboard chose.
// Usage: node bench/browser.mjs URL KEY FILE RUNS KEYS
// The times are taken in the page (performance.now()), so no process
// boundary is inside them. Every wait is bounded (a stuck run fails).
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'tests', 'browser', 'package.json'));
const { chromium } = require('playwright-core');

const [url, key, file, runsArg, keysArg] = process.argv.slice(2);
if (!url || !key || !file) {
  console.error('usage: node bench/browser.mjs URL KEY FILE [RUNS] [KEYS]');
  process.exit(2);
}
const runs = Number(runsArg || 3);
const keyCount = Number(keysArg || 200);
const size = fs.statSync(file).size;
const base = url.endsWith('/') ? url : `${url}/`;

async function api(method, p, body) {
  const r = await fetch(base + p, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
  return r.status === 204 ? null : r.json();
}

/** A session running `command` (sh -c), opened in `page`; resolves once live. */
async function openSession(page, command) {
  const s = await api('POST', 'api/sessions', { command: ['sh', '-c', command], cols: 120, rows: 40 });
  await page.goto(`${base}?key=${key}#/s/${encodeURIComponent(s.id)}`);
  await page.waitForFunction(() => {
    const a = window.tether?.attachment;
    return a && a.state === 'connected' && a.inputEnabled;
  }, null, { timeout: 30000, polling: 50 });
  return s.id;
}

/**
 * In the page: sends `data` as typed, resolves with the ms until `done()`
 * (a function of the buffer's last lines, as source text) holds after a
 * parse, plus the next animation frame (the paint).
 */
function timedInput(page, data, doneSource, timeoutMs) {
  return page.evaluate(([d, src, limit]) => new Promise((resolve, reject) => {
    const term = window.tether.term;
    // eslint-disable-next-line no-new-func
    const done = new Function('lines', src);
    const tail = () => {
      const b = term.buffer.active;
      const out = [];
      // trimEnd: a space the program wrote (the prompt's) is a cell, which
      // translateToString(true) keeps.
      for (let i = Math.max(0, b.length - 6); i < b.length; i++) out.push(b.getLine(i).translateToString(true).trimEnd());
      return out;
    };
    const t0 = performance.now();
    let parses = 0;
    const timer = setTimeout(() => {
      sub.dispose();
      reject(new Error(`no result in ${limit} ms after ${parses} parses: ${JSON.stringify(tail())}; done now: ${done(tail())}`));
    }, limit);
    const sub = term.onWriteParsed(() => {
      ++parses;
      if (!done(tail())) return;
      sub.dispose();
      clearTimeout(timer);
      requestAnimationFrame(() => resolve(performance.now() - t0));
    });
    term.input(d, true);
  }), [data, doneSource, timeoutMs]);
}

function summary(values) {
  const s = [...values].sort((a, b) => a - b);
  const at = (p) => s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
  return { median: at(0.5), p99: at(0.99), min: s[0], max: s[s.length - 1], n: s.length };
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run',
    ...(process.env.BENCH_BROWSER_ARGS ? process.env.BENCH_BROWSER_ARGS.split(' ') : [])],
});
const result = { size, runs, renderer: null, throughput: [], keys: null, interrupt: [] };
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();

  // Throughput: a shell with a known prompt; `cat FILE` then a marker the
  // command line itself does not show (the quotes split it there).
  const shell = await openSession(page, "PS1='bench$ ' exec sh -i");
  result.renderer = await page.evaluate(() => window.tether.renderer);
  for (let r = 0; r < runs; r++) {
    const mark = `BENCH${r}DONE`;
    const ms = await timedInput(page, `cat '${file}'; echo; echo BENCH${r}""DONE\r`,
      `return lines.some((l) => l === '${mark}');`, 600000);
    result.throughput.push(size / (ms / 1000) / 1e6);
    console.error(`browser bench: cat ${size} bytes in ${ms.toFixed(0)} ms`);
    await timedInput(page, 'clear\r', "return lines.every((l) => l === '' || l === 'bench$');", 30000);
  }

  // Ctrl-C during a flood, until the prompt shows again.
  for (let r = 0; r < runs; r++) {
    await timedInput(page, 'yes flood-line-of-the-bench\r', "return lines.filter((l) => l === 'flood-line-of-the-bench').length >= 3;", 30000);
    // Let the flood run a second: the page is busy as a user would see it.
    await page.waitForTimeout(1000);
    const ms = await timedInput(page, '\x03', "return lines.some((l) => l === 'bench$') && lines[lines.length - 1] !== 'flood-line-of-the-bench';", 120000);
    result.interrupt.push(ms);
    console.error(`browser bench: Ctrl-C to prompt ${ms.toFixed(0)} ms`);
  }
  await api('DELETE', `api/sessions/${encodeURIComponent(shell)}`);

  // Keystroke to paint: `cat` in raw mode echoes each byte itself.
  const echo = await openSession(page, "stty raw -echo; printf 'keys-ready\\r\\n'; exec cat");
  await page.waitForFunction(() => {
    const b = window.tether.term.buffer.active;
    for (let i = 0; i < b.length; i++) if (b.getLine(i).translateToString(true) === 'keys-ready') return true;
    return false;
  }, null, { timeout: 30000 });
  const times = [];
  for (let i = 0; i < keyCount; i++) {
    const n = (i % 60) + 1; // characters on the line after this key
    if (n === 1 && i > 0) await timedInput(page, '\r', 'return window.tether.term.buffer.active.cursorX === 0;', 30000);
    times.push(await timedInput(page, 'k', `const b = window.tether.term.buffer.active; return b.cursorX === ${n};`, 30000));
  }
  result.keys = summary(times);
  await api('DELETE', `api/sessions/${encodeURIComponent(echo)}`);
} finally {
  await browser.close();
}
result.throughput_summary = summary(result.throughput);
result.interrupt_summary = summary(result.interrupt);
process.stdout.write(`${JSON.stringify(result)}\n`);
