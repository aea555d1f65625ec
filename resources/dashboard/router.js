// SPDX-License-Identifier: GPL-2.0-or-later
// The dashboard's addresses, as pure functions (no DOM, tested under node):
// #/s/<id> attaches in control mode, #/s/<id>/watch read-only, so a reload or
// a bookmark reattaches; #/share/<id> is the watch-only view a read-only link
// opens (docs/protocol.md "Read-only links"); #/tiles/<id>,<id> the tiled
// view (tiles.js).

/**
 * decodeURIComponent that never throws: a malformed escape (an address cut
 * in the middle of a name's `%C3%A9`) is kept as it is, and then names no
 * session. The URIError left the page at "Connecting…" with no list when
 * opened with such an address, and a session open in the tab stayed there
 * under the new address (a new user's tryout).
 * @param {string} text
 */
export function decodeAddressPart(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * The session an address names: { id, mode: 'control' | 'watch' }, or null.
 * @param {string} hash location.hash
 */
export function parseHash(hash) {
  const m = /^#\/s\/([^/]+)(\/watch)?$/.exec(hash);
  if (!m) return null;
  return { id: decodeAddressPart(m[1]), mode: m[2] ? 'watch' : 'control' };
}

/**
 * A read-only link's address: { id } (id '' when the address has none), or
 * null for any other address.
 * @param {string} hash location.hash
 */
export function parseShareHash(hash) {
  const m = /^#\/share(?:\/([^/]*))?$/.exec(hash);
  if (!m) return null;
  return { id: m[1] ? decodeAddressPart(m[1]) : '' };
}

/**
 * The address of a session: `#/s/<id>`, `#/s/<id>/watch` for mode 'watch'.
 * @param {string} id
 * @param {string} [mode]
 */
export function sessionHash(id, mode = 'control') {
  return `#/s/${encodeURIComponent(id)}${mode === 'watch' ? '/watch' : ''}`;
}

/**
 * What an id in the address names, in the order `tether` resolves it: itself
 * when it is a session's id, else the session with that name (`tether new -n
 * build` makes `#/s/build` work, as the README promises for names), else the
 * one session whose id starts with it (`tether list` shows 8-character
 * prefixes, and the CLI takes any unique prefix). Returns
 * { id } or { ambiguous: [ids] }; an unknown id is returned as it is and the
 * attach says it is gone (4404).
 * @param {Map<string, {s: object}>} sessions id -> list entry
 * @param {string} id
 */
export function resolveId(sessions, id) {
  if (sessions.has(id)) return { id };
  const named = [...sessions.values()].filter((e) => e.s.name === id).map((e) => e.s.id);
  if (named.length === 1) return { id: named[0] };
  if (named.length > 1) return { ambiguous: named };
  const matches = [...sessions.keys()].filter((k) => k.startsWith(id));
  if (matches.length === 1) return { id: matches[0] };
  if (matches.length > 1) return { ambiguous: matches };
  return { id };
}

/** At most this many tiles in the tiled view (tiles.js). */
export const MAX_TILES = 4;

/**
 * The sessions a tiles address names (1 to MAX_TILES ids, duplicates
 * dropped), or null for any other address.
 * @param {string} hash location.hash
 * @returns {?string[]}
 */
export function parseTilesHash(hash) {
  const m = /^#\/tiles\/([^/]+)$/.exec(hash);
  if (!m) return null;
  const ids = [...new Set(m[1].split(',').filter(Boolean).map(decodeAddressPart))];
  return ids.length ? ids.slice(0, MAX_TILES) : null;
}

/** The address of tiles of these sessions. */
export function tilesHash(ids) {
  return `#/tiles/${ids.map(encodeURIComponent).join(',')}`;
}
