// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard's commands and notifications, pure part
// (resources/dashboard/commands.js, issue 25): the list's shell state in
// words, the OSC 133 / 633 marks as xterm.js hands them over, when a
// `notify` event is shown and what it says (docs/protocol.md, "Commands and
// notifications").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  markKind, markTooltip, notifyDecision, notifyStatus, notifyText, parseMark, shellStatus,
} from '../../resources/dashboard/commands.js';

const cmd = (over) => ({
  id: 1, command_line: 'make -j8', running: false, exit_status: 0, duration_ms: 1000, ...over,
});

test('shell state: running with its command and duration, counted on locally', () => {
  const s = { state: 'running', shell: { state: 'running', command: cmd({ running: true, exit_status: null, duration_ms: 11 * 60000 }) } };
  assert.deepEqual(shellStatus(s), { text: 'running `make -j8` for 11m', kind: 'running' });
  assert.equal(shellStatus(s, 60000).text, 'running `make -j8` for 12m');
  const noLine = { state: 'running', shell: { state: 'running', command: cmd({ command_line: '', running: true, duration_ms: 5000 }) } };
  assert.equal(shellStatus(noLine).text, 'running for 5s');
});

test('shell state: idle with the last exit status', () => {
  assert.deepEqual(shellStatus({ state: 'running', shell: { state: 'prompt', command: cmd({ exit_status: 2 }) } }),
    { text: 'idle, last exit 2', kind: 'bad' });
  assert.deepEqual(shellStatus({ state: 'running', shell: { state: 'prompt', command: cmd() } }),
    { text: 'idle, last exit 0', kind: 'ok' });
  assert.deepEqual(shellStatus({ state: 'running', shell: { state: 'prompt', command: null } }), { text: 'idle', kind: 'ok' });
  assert.equal(shellStatus({ state: 'running', shell: { state: 'prompt', command: cmd({ exit_status: null }) } }).text, 'idle');
});

test('shell state: nothing without integration, for an exited session or an older server', () => {
  assert.equal(shellStatus({ state: 'running', shell: { state: 'unknown', command: null } }).text, '');
  assert.equal(shellStatus({ state: 'exited', shell: { state: 'prompt', command: cmd() } }).text, '');
  assert.equal(shellStatus({ state: 'running' }).text, '');
});

test('a command line a session controls is shown escaped', () => {
  const s = { state: 'running', shell: { state: 'running', command: cmd({ command_line: 'a\u001b[2Jb\u202e', running: true }) } };
  assert.equal(shellStatus(s).text, 'running `a\\e[2Jb\\u202e` for 1s');
});

test('notify settings in words', () => {
  assert.equal(notifyStatus({ notify: { muted: false, next: false } }), '');
  assert.equal(notifyStatus({ notify: { muted: true, next: false } }), 'muted');
  assert.equal(notifyStatus({ notify: { muted: true, next: true } }), 'notify next, muted');
  assert.equal(notifyStatus({}), '');
  assert.equal(notifyStatus({ notify: { muted: false, next: false, activity: true, silence: 90 } }),
    'activity alert, silence alert 1m');
});

test('marks: OSC 133 and 633 letters, statuses, VS Code\'s escaping', () => {
  assert.deepEqual(parseMark(133, 'A'), { type: 'prompt' });
  assert.deepEqual(parseMark(133, 'B'), { type: 'input' });
  assert.deepEqual(parseMark(633, 'C'), { type: 'output' });
  assert.deepEqual(parseMark(133, 'D;2'), { type: 'end', status: 2 });
  assert.deepEqual(parseMark(133, 'D;0;aid=1'), { type: 'end', status: 0 });
  assert.deepEqual(parseMark(133, 'D'), { type: 'end', status: null });
  assert.deepEqual(parseMark(133, 'D;256'), { type: 'end', status: null });
  assert.deepEqual(parseMark(133, 'D;x'), { type: 'end', status: null });
  assert.deepEqual(parseMark(633, 'E;printf \'a\\x3bb\\\\n\''), { type: 'commandline', commandLine: 'printf \'a;b\\n\'' });
  assert.deepEqual(parseMark(633, 'E;ls;nonce'), { type: 'commandline', commandLine: 'ls' });
  assert.equal(parseMark(133, 'E;ls'), null);
  assert.equal(parseMark(633, 'P;Cwd=/tmp'), null);
  assert.equal(parseMark(7, 'A'), null);
});

test('a mark\'s colour and tooltip', () => {
  assert.equal(markKind({ ended: false }), 'running');
  assert.equal(markKind({ ended: true, status: 0 }), 'ok');
  assert.equal(markKind({ ended: true, status: 2 }), 'bad');
  assert.equal(markKind({ ended: true, status: null }), 'unknown');
  assert.equal(markTooltip({ commandLine: 'make', status: 2, ended: true }), 'make\nexit 2 · click to select its output');
  assert.equal(markTooltip({ commandLine: '', status: null, ended: false }), 'command\nrunning');
});

test('when a notify event is shown', () => {
  const ev = (over) => ({ session: 'A', watched: false, requested: false, ...over });
  const ctx = (over) => ({ visible: true, openId: null, attachedHere: false, viewers: 0, ...over });
  // Nobody watches: a toast on a visible page, a system notification on a hidden one.
  assert.equal(notifyDecision(ev(), ctx()), 'toast');
  assert.equal(notifyDecision(ev(), ctx({ visible: false })), 'system');
  // This page shows that session and is visible: nothing, requested or not.
  assert.equal(notifyDecision(ev({ watched: true }), ctx({ openId: 'A', attachedHere: true, viewers: 1 })), 'none');
  assert.equal(notifyDecision(ev({ watched: true, requested: true }), ctx({ openId: 'A', attachedHere: true, viewers: 1 })), 'none');
  // ...hidden: this page is the only viewer, and nobody looks.
  assert.equal(notifyDecision(ev({ watched: true }), ctx({ visible: false, openId: 'A', attachedHere: true, viewers: 1 })), 'system');
  // Watched by someone else: nothing, unless it was asked for.
  assert.equal(notifyDecision(ev({ watched: true }), ctx({ visible: false, viewers: 1 })), 'none');
  assert.equal(notifyDecision(ev({ watched: true }), ctx({ visible: false, openId: 'A', attachedHere: true, viewers: 2 })), 'none');
  assert.equal(notifyDecision(ev({ watched: true, requested: true }), ctx({ visible: false, viewers: 1 })), 'system');
  assert.equal(notifyDecision(ev({ watched: true, requested: true }), ctx({ openId: 'B' })), 'toast');
});

test('what a notification says', () => {
  assert.deepEqual(notifyText({ kind: 'command', text: 'make -j8', command: cmd({ exit_status: 2, duration_ms: 125000 }) }, 'build'),
    { title: 'build: make -j8 finished', body: 'exit 2 after 2m' });
  assert.deepEqual(notifyText({ kind: 'exit', text: 'exited with code 3', command: null }, 'sh'),
    { title: 'sh exited', body: 'Process exited with code 3' });
  assert.deepEqual(notifyText({ kind: 'exit', text: 'killed by signal 9', command: null }, 'sh'),
    { title: 'sh exited', body: 'Process killed by signal 9' });
  assert.deepEqual(notifyText({ kind: 'bell', text: '', command: null }, 'sh'), { title: 'sh', body: 'Bell' });
  assert.deepEqual(notifyText({ kind: 'activity', text: 'output while nobody watched', command: null }, 'sh'),
    { title: 'sh: activity', body: 'Output while nobody watched' });
  assert.deepEqual(notifyText({ kind: 'silence', text: 'no output for 30 s', command: null }, 'sh'),
    { title: 'sh: silence', body: 'no output for 30 s' });
  assert.deepEqual(notifyText({ kind: 'message', text: 'T: B\u001b', command: null }, 'sh'), { title: 'sh', body: 'T: B\\e' });
});
