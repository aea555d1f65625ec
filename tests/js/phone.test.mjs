// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard on a phone, pure parts (issue 26): what the key bar's keys
// send (resources/dashboard/keys.js), as xterm and xterm.js send them, and
// the tiled view's addresses (router.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyModifiers, ctrlChar, keySequence } from '../../resources/dashboard/keys.js';
import { MAX_TILES, parseTilesHash, tilesHash } from '../../resources/dashboard/router.js';

const plain = { ctrl: false, alt: false, appCursor: false };

test('Ctrl with a character is its control character', () => {
  assert.equal(ctrlChar('c'), '\x03');
  assert.equal(ctrlChar('C'), '\x03');
  assert.equal(ctrlChar('a'), '\x01');
  assert.equal(ctrlChar('z'), '\x1a');
  assert.equal(ctrlChar('['), '\x1b');
  assert.equal(ctrlChar('@'), '\x00');
  assert.equal(ctrlChar(' '), '\x00');
  assert.equal(ctrlChar('\\'), '\x1c');
  assert.equal(ctrlChar(']'), '\x1d');
  assert.equal(ctrlChar('/'), '\x1f');
  assert.equal(ctrlChar('?'), '\x7f');
  assert.equal(ctrlChar('é'), 'é', 'no control character: unchanged');
});

test('the cursor keys in normal and application cursor mode (DECCKM)', () => {
  assert.equal(keySequence('ArrowUp', plain), '\x1b[A');
  assert.equal(keySequence('ArrowDown', plain), '\x1b[B');
  assert.equal(keySequence('ArrowRight', plain), '\x1b[C');
  assert.equal(keySequence('ArrowLeft', plain), '\x1b[D');
  assert.equal(keySequence('Home', plain), '\x1b[H');
  assert.equal(keySequence('End', plain), '\x1b[F');
  const app = { ...plain, appCursor: true };
  assert.equal(keySequence('ArrowUp', app), '\x1bOA');
  assert.equal(keySequence('ArrowLeft', app), '\x1bOD');
  assert.equal(keySequence('Home', app), '\x1bOH');
  assert.equal(keySequence('End', app), '\x1bOF');
  // With a modifier, CSI 1 ; m in either mode (m = 1 + Alt 2 + Ctrl 4).
  assert.equal(keySequence('ArrowUp', { ...app, ctrl: true }), '\x1b[1;5A');
  assert.equal(keySequence('ArrowLeft', { ...plain, alt: true }), '\x1b[1;3D');
  assert.equal(keySequence('Home', { ...plain, ctrl: true, alt: true }), '\x1b[1;7H');
});

test('PgUp, PgDn, Esc, Tab and characters', () => {
  assert.equal(keySequence('PageUp', plain), '\x1b[5~');
  assert.equal(keySequence('PageDown', plain), '\x1b[6~');
  assert.equal(keySequence('PageUp', { ...plain, ctrl: true }), '\x1b[5;5~');
  assert.equal(keySequence('Escape', plain), '\x1b');
  assert.equal(keySequence('Tab', plain), '\t');
  assert.equal(keySequence('|', plain), '|');
  assert.equal(keySequence('~', plain), '~');
  assert.equal(keySequence('-', { ...plain, ctrl: true }), '\x1f');
  assert.equal(keySequence('/', { ...plain, alt: true }), '\x1b/');
  assert.equal(keySequence('Escape', { ...plain, alt: true }), '\x1b\x1b');
});

test('sticky modifiers on what the keyboard typed', () => {
  assert.equal(applyModifiers('c', true, false), '\x03');
  assert.equal(applyModifiers('x', false, true), '\x1bx');
  assert.equal(applyModifiers('c', true, true), '\x1b\x03');
  // Not one character (a word from a soft keyboard, a paste): Ctrl does not apply.
  assert.equal(applyModifiers('hello', true, false), 'hello');
  assert.equal(applyModifiers('\x1b[A', false, true), '\x1b\x1b[A');
  // One character that is two UTF-16 units.
  assert.equal(applyModifiers('😀', true, false), '😀');
});

test('tiles addresses', () => {
  assert.deepEqual(parseTilesHash('#/tiles/a,b'), ['a', 'b']);
  assert.deepEqual(parseTilesHash('#/tiles/a'), ['a']);
  assert.deepEqual(parseTilesHash('#/tiles/a,a,b,'), ['a', 'b']);
  assert.deepEqual(parseTilesHash('#/tiles/caf%C3%A9,b%2Cc'), ['café', 'b,c']);
  assert.equal(parseTilesHash('#/tiles/a,b,c,d,e').length, MAX_TILES);
  assert.equal(parseTilesHash('#/tiles/'), null);
  assert.equal(parseTilesHash('#/tiles/,'), null);
  assert.equal(parseTilesHash('#/s/a'), null);
  assert.equal(tilesHash(['a', 'b,c', 'café']), '#/tiles/a,b%2Cc,caf%C3%A9');
  assert.deepEqual(parseTilesHash(tilesHash(['a', 'b,c'])), ['a', 'b,c']);
});
