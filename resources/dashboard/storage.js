// SPDX-License-Identifier: GPL-2.0-or-later
// What the dashboard keeps in the browser. Per-tab state (the session open in
// this tab) lives in sessionStorage, never localStorage: two tabs sharing one
// key collapsed onto one PTY (NousResearch/hermes-agent#115304). The font
// size is a preference of the browser (localStorage, key tether.fontSize),
// followed by its other tabs. Storage that is off (a privacy mode) costs the
// memory and nothing else.

const TAB_KEY = 'tether.tab';
const FONT_KEY = 'tether.fontSize';
export const FONT_DEFAULT = 14;
export const FONT_MIN = 8;
export const FONT_MAX = 32;

/** Remembers the session open in this tab: { id, mode }. */
export function saveTab(id, mode) {
  sessionStorage.setItem(TAB_KEY, JSON.stringify({ id, mode }));
}

/** Forgets the session open in this tab. */
export function clearTab() {
  sessionStorage.removeItem(TAB_KEY);
}

/** The session this tab had open ({ id, mode }), or null. */
export function savedTab() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(TAB_KEY) || 'null');
    return saved && saved.id ? saved : null;
  } catch {
    return null;
  }
}

/** A font size (px) clamped to FONT_MIN..FONT_MAX. */
export function clampFontSize(v) {
  return Math.min(FONT_MAX, Math.max(FONT_MIN, v));
}

/** The remembered font size (px), within FONT_MIN..FONT_MAX. */
export function fontSize() {
  let v = FONT_DEFAULT;
  try { v = Number(localStorage.getItem(FONT_KEY)) || FONT_DEFAULT; } catch { /* storage off */ }
  return clampFontSize(Math.round(v));
}

/** Remembers a font size (clamped); returns the size kept. */
export function storeFontSize(size) {
  const v = clampFontSize(size);
  try { localStorage.setItem(FONT_KEY, String(v)); } catch { /* storage off: this page only */ }
  return v;
}

/** Calls `fn` when another tab of this browser changed the font size. */
export function onFontSizeChanged(fn) {
  window.addEventListener('storage', (e) => {
    if (e.key === FONT_KEY) fn();
  });
}

const PREVIEWS_KEY = 'tether.previews';

/** Whether the session list shows miniatures (a preference of the browser; on by default). */
export function previewsOn() {
  try { return localStorage.getItem(PREVIEWS_KEY) !== 'off'; } catch { return true; }
}

/** Remembers whether the session list shows miniatures. */
export function storePreviews(on) {
  try { localStorage.setItem(PREVIEWS_KEY, on ? 'on' : 'off'); } catch { /* storage off: this page only */ }
}
