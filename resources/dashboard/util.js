// SPDX-License-Identifier: GPL-2.0-or-later
// Small pure helpers of the dashboard: command-line splitting and the
// human formats used by the session list. No DOM here.

/**
 * Splits a command line into argv the way a POSIX shell splits words, without
 * expansions: blanks separate words, 'single quotes' keep everything literal,
 * "double quotes" keep blanks and honour \" \\ \$ \`, a backslash outside quotes
 * escapes the next character. The REST API takes argv, not a shell string, so
 * `vim "my file.txt"` must arrive as ["vim", "my file.txt"].
 * Throws Error("unterminated quote") for an open quote.
 * @param {string} line
 * @returns {string[]}
 */
export function splitCommand(line) {
  const words = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '\'') {
      const end = line.indexOf('\'', i + 1);
      if (end < 0) throw new Error('unterminated quote');
      word += line.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (c === '"') {
      inWord = true;
      let j = i + 1;
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\' && j + 1 < line.length && '"\\$`'.includes(line[j + 1]))
          j++;
        word += line[j];
      }
      if (j >= line.length) throw new Error('unterminated quote');
      i = j;
    } else if (c === '\\') {
      if (i + 1 < line.length) word += line[++i];
      inWord = true;
    } else if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/**
 * A short duration: "12s", "5m", "2h 5m", "3d 4h". Seconds below zero count as 0.
 * @param {number} seconds
 */
export function formatDuration(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h}h ${m % 60}m` : `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d}d ${h % 24}h` : `${d}d`;
}

/**
 * A countdown: "4:59" below an hour (minutes:seconds), else as formatDuration.
 * @param {number} seconds
 */
export function formatCountdown(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s >= 3600) return formatDuration(s);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/**
 * Bytes in binary units: "512 B", "12 KiB", "1.5 MiB".
 * @param {number} bytes
 */
export function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let v = bytes / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${v >= 10 || Number.isInteger(v) ? Math.round(v) : v.toFixed(1)} ${units[u]}`;
}

/**
 * The name shown for a session: its terminal title when the program set one,
 * else its command line (the basename of argv[0] plus the arguments).
 * @param {{title?: string, command?: string[]}} s SESSION object of the protocol
 */
export function sessionLabel(s) {
  if (s.title) return s.title;
  const argv = Array.isArray(s.command) ? s.command : [];
  if (!argv.length) return 'shell';
  const prog = argv[0].split('/').pop() || argv[0];
  return [prog, ...argv.slice(1)].join(' ');
}

/**
 * The full command line of a session, quoted where needed, for tooltips.
 * @param {{command?: string[]}} s
 */
export function commandLine(s) {
  const argv = Array.isArray(s.command) ? s.command : [];
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}
