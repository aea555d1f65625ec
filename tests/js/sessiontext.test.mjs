// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard's session wording (resources/dashboard/sessiontext.js)
// against the vectors SessionText (core/common/sessiontext.cpp) is held to:
// a session's state, exit, durations and sizes read the same in the
// dashboard as in `tether list` and the desktop app (issue 28).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { duration, bytes, exitStatus, state } from '../../resources/dashboard/sessiontext.js';
import { exitText, formatDuration, formatBytes } from '../../resources/dashboard/util.js';

const vectors = JSON.parse(readFileSync(new URL('../vectors/sessiontext.json', import.meta.url), 'utf8'));

test('the vector file has every kind', () => {
  for (const k of ['duration', 'bytes', 'exit', 'state']) assert.ok(vectors[k].length >= 5, k);
});

for (const v of vectors.duration) test(`duration ${v.seconds}`, () => assert.equal(duration(v.seconds), v.shown));
for (const v of vectors.bytes) test(`bytes ${v.bytes}`, () => assert.equal(bytes(v.bytes), v.shown));
for (const v of vectors.exit) test(`exit ${JSON.stringify(v.exit)}`, () => assert.equal(exitStatus(v.exit), v.shown));
for (const v of vectors.state) test(`state ${JSON.stringify(v.session)}`, () => assert.equal(state(v.session), v.shown));

test('the page\'s older names are the same functions', () => {
  assert.equal(formatDuration, duration);
  assert.equal(formatBytes, bytes);
  assert.equal(exitText({ code: 3 }), 'Process exited with code 3');
  assert.equal(exitText({ code: null, signal: 9 }), 'Process killed by signal 9');
  assert.equal(exitText(null), 'Process exited');
});
