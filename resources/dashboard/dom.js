// SPDX-License-Identifier: GPL-2.0-or-later
// The two DOM helpers every part of the dashboard uses. No state.

/** The element with this id (index.html's ids are the dashboard's handles). */
export const $ = (id) => document.getElementById(id);

/**
 * A new element.
 * @param {string} tag
 * @param {string} [className]
 * @param {string} [text] its textContent
 */
export function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Below this width (index.html's style.css) the list is a drawer over the pane. */
export const NARROW = window.matchMedia('(max-width: 760px)');
