// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard's session label (resources/dashboard/util.js): the name,
// else the title, else the command line quoted as `tether list` quotes it
// (issue 14: the list showed `vim -c set number` for `vim -c 'set number'`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sessionLabel, commandLine, exitText } from '../../resources/dashboard/util.js';

test('a name wins over the title and the command', () => {
  assert.equal(sessionLabel({ name: 'build', title: 'vim', command: ['/usr/bin/vim'] }), 'build');
});

test('without a name: the title', () => {
  assert.equal(sessionLabel({ name: '', title: 'vim notes', command: ['/usr/bin/vim'] }), 'vim notes');
});

test('without a name or title: the command, quoted, argv[0] by its basename', () => {
  assert.equal(sessionLabel({ name: '', title: '', command: ['/usr/bin/vim', '-c', 'set number', 'it\'s'] }),
    'vim -c \'set number\' \'it\'\\\'\'s\'');
  assert.equal(sessionLabel({ command: ['/bin/bash'] }), 'bash');
  assert.equal(sessionLabel({}), 'shell');
});

test('the full command line for tooltips keeps its path and quoting', () => {
  assert.equal(commandLine({ command: ['/usr/bin/vim', '-c', 'set number'] }), '/usr/bin/vim -c \'set number\'');
});

test('how a process ended, in words', () => {
  assert.equal(exitText({ code: 0 }), 'Process exited with code 0');
  assert.equal(exitText({ code: 2, signal: null }), 'Process exited with code 2');
  assert.equal(exitText({ code: null, signal: 9 }), 'Process killed by signal 9');
  assert.equal(exitText({}), 'Process exited');
  assert.equal(exitText(null), 'Process exited');
});
