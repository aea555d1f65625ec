// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard's command-line grammar (resources/dashboard/shellwords.js)
// against the vectors the C++ one (core/common/shellwords.cpp) is held to:
// the New field and the Settings dialog must split a line into the same words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { split, quote } from '../../resources/dashboard/shellwords.js';

const vectors = JSON.parse(readFileSync(new URL('../vectors/shellwords.json', import.meta.url), 'utf8'));

test('the vector file is not empty', () => {
  assert.ok(vectors.split.length >= 30);
  assert.ok(vectors.quote.length >= 5);
});

for (const v of vectors.split) {
  test(`split ${JSON.stringify(v.input)}`, () => {
    if ('error' in v)
      assert.throws(() => split(v.input), { message: v.error });
    else
      assert.deepEqual(split(v.input), v.words);
  });
}

for (const v of vectors.quote) {
  test(`quote ${JSON.stringify(v.argv)}`, () => {
    assert.equal(quote(v.argv), v.quoted);
    assert.deepEqual(split(v.quoted), v.argv);
  });
}
