// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard's displayText() (resources/dashboard/util.js) against the
// vectors DisplayText::escape (core/common/displaytext.cpp) is held to: a
// session's name, title or command shows the same in the dashboard as in
// `tether list` (issue 29).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { displayText, sessionLabel, commandLine } from '../../resources/dashboard/util.js';

const vectors = JSON.parse(readFileSync(new URL('../vectors/displaytext.json', import.meta.url), 'utf8'));

test('the vector file is not empty', () => {
  assert.ok(vectors.escape.length >= 15);
});

for (const v of vectors.escape) {
  test(`displayText: ${v.note}`, () => {
    assert.equal(displayText(v.input), v.shown);
  });
}

test('the session label and the command line go through it', () => {
  assert.equal(sessionLabel({ name: 'ab\u202ecd' }), 'ab\\u202ecd');
  assert.equal(sessionLabel({ name: '', title: 'GH\u007fI' }), 'GH\\x7fI');
  assert.equal(sessionLabel({ command: ['/bin/z\u001b[2J'] }), '\'z\\e[2J\'');
  assert.equal(commandLine({ command: ['sleep', '\u200b'] }), 'sleep \'\\u200b\'');
});
