// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard's addresses (resources/dashboard/router.js): #/s/<id>,
// #/s/<id>/watch, #/share/<id>, and how an id in the address is resolved
// (the id, else a name, else a unique prefix, as `tether` resolves it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeAddressPart, parseHash, parseShareHash, resolveId, sessionHash,
} from '../../resources/dashboard/router.js';

test('a session address, in control or watch mode', () => {
  assert.deepEqual(parseHash('#/s/abc'), { id: 'abc', mode: 'control' });
  assert.deepEqual(parseHash('#/s/abc/watch'), { id: 'abc', mode: 'watch' });
  assert.deepEqual(parseHash('#/s/caf%C3%A9'), { id: 'café', mode: 'control' });
  assert.equal(parseHash('#/'), null);
  assert.equal(parseHash(''), null);
  assert.equal(parseHash('#/s/'), null);
  assert.equal(parseHash('#/s/a/b'), null);
});

test('a malformed escape is kept as it stands and never throws', () => {
  assert.equal(decodeAddressPart('caf%C3'), 'caf%C3');
  assert.deepEqual(parseHash('#/s/caf%C3'), { id: 'caf%C3', mode: 'control' });
  assert.deepEqual(parseShareHash('#/share/%E0%A4%A'), { id: '%E0%A4%A' });
});

test('a read-only link address, with or without its id', () => {
  assert.deepEqual(parseShareHash('#/share/abc'), { id: 'abc' });
  assert.deepEqual(parseShareHash('#/share/'), { id: '' });
  assert.deepEqual(parseShareHash('#/share'), { id: '' });
  assert.equal(parseShareHash('#/s/abc'), null);
  assert.equal(parseShareHash('#/share/a/b'), null);
});

test('the address of a session round-trips', () => {
  for (const id of ['abc', 'café', 'a b/c', '%41']) {
    assert.deepEqual(parseHash(sessionHash(id)), { id, mode: 'control' });
    assert.deepEqual(parseHash(sessionHash(id, 'watch')), { id, mode: 'watch' });
  }
});

test('an id resolves as tether resolves it: id, name, unique prefix', () => {
  const entry = (id, name = '') => [id, { s: { id, name } }];
  const sessions = new Map([entry('aaaa1111'), entry('aaaa2222'), entry('bbbb3333', 'build'),
    entry('cccc4444', 'twin'), entry('dddd5555', 'twin'), entry('build')]);
  assert.deepEqual(resolveId(sessions, 'build'), { id: 'build' }); // an id wins over a name
  assert.deepEqual(resolveId(sessions, 'bbbb'), { id: 'bbbb3333' });
  assert.deepEqual(resolveId(sessions, 'aaaa'), { ambiguous: ['aaaa1111', 'aaaa2222'] });
  assert.deepEqual(resolveId(sessions, 'twin'), { ambiguous: ['cccc4444', 'dddd5555'] });
  assert.deepEqual(resolveId(sessions, 'zzz'), { id: 'zzz' });
  sessions.delete('build');
  assert.deepEqual(resolveId(sessions, 'build'), { id: 'bbbb3333' });
});
