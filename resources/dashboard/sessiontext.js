// SPDX-License-Identifier: GPL-2.0-or-later
// How a session's facts read to a person, one wording for every client
// (issue 28): the rules of core/common/sessiontext.h (SessionText), which
// `tether list` and the desktop app use; tests/vectors/sessiontext.json
// holds both to them (tests/js/sessiontext.test.mjs,
// tests/common/tst_sessiontext.cpp). No DOM here.

/**
 * A duration in whole seconds, at most two units: "0s", "59s", "1m", "2h 5m",
 * "2h", "3d 4h". Less than a unit rounds down; below zero counts as 0.
 * @param {number} seconds
 */
export function duration(seconds) {
  const s = Math.max(0, Math.floor(Number(seconds) || 0));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  const two = (big, bigUnit, small, smallUnit) => (small ? `${big}${bigUnit} ${small}${smallUnit}` : `${big}${bigUnit}`);
  if (s < 86400) return two(Math.floor(s / 3600), 'h', Math.floor((s % 3600) / 60), 'm');
  return two(Math.floor(s / 86400), 'd', Math.floor((s % 86400) / 3600), 'h');
}

/**
 * A size in binary units: "0 B", "1023 B", "1 KiB", "1.5 KiB", "12 KiB",
 * "1 MiB", "1.5 GiB". Below 10 units one decimal unless whole, from 10 on
 * whole units. Below zero counts as 0.
 * @param {number} n
 */
export function bytes(n) {
  const b = Math.max(0, Math.floor(Number(n) || 0));
  if (b < 1024) return `${b} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let v = b / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${v >= 10 || Number.isInteger(v) ? Math.round(v) : v.toFixed(1)} ${units[u]}`;
}

/**
 * How a process ended, as the server's texts say it: "exited with code 2",
 * "killed by signal 9", else "exited". A signal wins over a code.
 * @param {{code?: number|null, signal?: number|null}|null|undefined} exit
 */
export function exitStatus(exit) {
  if (exit && exit.signal > 0) return `killed by signal ${exit.signal}`;
  if (exit && typeof exit.code === 'number' && exit.code >= 0) return `exited with code ${exit.code}`;
  return 'exited';
}

/**
 * A SESSION object's state in a word or three: "running", "exited 2",
 * "killed by signal 9", "exited", "ended by reboot".
 * @param {{state?: string, ended?: string, exit_code?: number|null, exit_signal?: number|null}} s
 */
export function state(s) {
  if (s.state === 'ended') return `ended by ${s.ended}`;
  if (s.state !== 'exited') return 'running';
  if (s.exit_signal > 0) return `killed by signal ${s.exit_signal}`;
  if (typeof s.exit_code === 'number') return `exited ${s.exit_code}`;
  return 'exited';
}
