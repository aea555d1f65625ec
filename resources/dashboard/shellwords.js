// SPDX-License-Identifier: GPL-2.0-or-later
// Command lines as POSIX shell words, quoting only (no expansion): the same
// grammar as core/common/shellwords.h, held to the same vectors
// (tests/vectors/shellwords.json, run by tests/js/shellwords.test.mjs).
// The REST API takes argv, not a shell string, so `vim "my file.txt"` typed in
// the New field must arrive as ["vim", "my file.txt"].

const SEPARATORS = ' \t\n';
const DOUBLE_QUOTE_ESCAPES = '$`"\\';

/**
 * Splits a command line into words as sh does before it expands anything
 * (POSIX.1-2017 XCU 2.2 "Quoting"): blanks and newlines separate words;
 * a backslash outside quotes keeps the next character (backslash-newline is
 * removed; a final backslash is kept); 'single quotes' keep everything;
 * inside "double quotes" a backslash escapes only $ ` " \ and newline;
 * adjacent parts join into one word. $VAR, `cmd`, ~, *, |, ;, && and # are
 * ordinary characters.
 * Throws Error("unterminated single quote" | "unterminated double quote").
 * @param {string} line
 * @returns {string[]}
 */
export function split(line) {
  const words = [];
  let word = '';
  let inWord = false; // a quote makes a word even when it adds nothing ('')
  const n = line.length;
  for (let i = 0; i < n; i++) {
    const c = line[i];
    if (c === '\'') {
      const end = line.indexOf('\'', i + 1);
      if (end < 0) throw new Error('unterminated single quote');
      word += line.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (c === '"') {
      inWord = true;
      let j = i + 1;
      for (; j < n && line[j] !== '"'; j++) {
        if (line[j] === '\\' && j + 1 < n) {
          const next = line[j + 1];
          if (next === '\n') { j++; continue; } // line continuation: both go
          if (DOUBLE_QUOTE_ESCAPES.includes(next)) { word += next; j++; continue; }
        }
        word += line[j];
      }
      if (j >= n) throw new Error('unterminated double quote');
      i = j;
    } else if (c === '\\') {
      if (i + 1 === n) {
        word += c; // nothing left to escape: sh keeps it
        inWord = true;
      } else if (line[i + 1] === '\n') {
        i++; // line continuation: removed, joins what surrounds it
      } else {
        word += line[++i];
        inWord = true;
      }
    } else if (SEPARATORS.includes(c)) {
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

const PLAIN = /^[A-Za-z0-9%+,\-./:@_]+$/;
const PLAIN_AFTER_FIRST = /^[A-Za-z0-9%+,\-./:@_=]+$/;

/**
 * argv as one command line that sh (and split) turn back into the same words:
 * a word of only ASCII letters, digits and % + , - . / : @ _ (and = after the
 * first word, where x=1 would be an assignment) stays as it is; any other,
 * the empty one included, is single-quoted, a ' inside written as '\''.
 * @param {string[]} argv
 * @returns {string}
 */
export function quote(argv) {
  return argv.map((a, i) => ((i ? PLAIN_AFTER_FIRST : PLAIN).test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`))
    .join(' ');
}
