// SPDX-License-Identifier: GPL-2.0-or-later
// The tools above the open terminal (#current): Rename, Share, and the font
// size (A− / A+, remembered per browser; storage.js). Search has its own
// module (search.js).

import { $ } from './dom.js';
import {
  FONT_MAX, FONT_MIN, fontSize, onFontSizeChanged, storeFontSize,
} from './storage.js';

function renderFontSize(v = fontSize()) {
  $('font-size').textContent = `${v}px`;
  // The number is hidden on narrow windows: the tooltips say it too.
  $('font-smaller').title = `Smaller text (now ${v}px)`;
  $('font-larger').title = `Larger text (now ${v}px)`;
  $('font-smaller').disabled = v <= FONT_MIN;
  $('font-larger').disabled = v >= FONT_MAX;
}

/**
 * Wires the toolbar.
 * @param {{
 *   onRename: () => void,
 *   onShare: () => void,
 *   onFontSize: (px: number) => void, // the size changed, here or in another tab
 * }} o
 * @returns {{setSize: (px: number) => void}} sets (and keeps) the font size, as A− / A+ do
 */
export function initToolbar(o) {
  $('rename').addEventListener('click', () => o.onRename());
  $('share').addEventListener('click', () => o.onShare());
  const setSize = (size) => {
    const v = storeFontSize(size);
    renderFontSize(v);
    o.onFontSize(v);
  };
  $('font-smaller').addEventListener('click', () => setSize(fontSize() - 1));
  $('font-larger').addEventListener('click', () => setSize(fontSize() + 1));
  renderFontSize();
  // Another tab of this browser changed it: follow.
  onFontSizeChanged(() => {
    renderFontSize();
    o.onFontSize(fontSize());
  });
  return { setSize };
}
