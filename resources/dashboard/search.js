// SPDX-License-Identifier: GPL-2.0-or-later
// The search box over the scrollback (#search; @xterm/addon-search): matches
// highlighted as you type, Enter / Shift+Enter to the next / previous one,
// their count, Escape back to the terminal.

import { $ } from './dom.js';

const SEARCH_DECORATIONS = {
  matchBackground: '#f2cc60', matchOverviewRuler: '#d4a72c',
  activeMatchBackground: '#ff9632', activeMatchColorOverviewRuler: '#ff9632',
};

function searchOptions(incremental) {
  return { incremental, decorations: SEARCH_DECORATIONS };
}

/**
 * Wires the search box to the open terminal.
 * @param {{
 *   view: () => ({term: object, search: object}|null), // the open terminal view, if any
 *   scheduleFit: () => void,  // the box takes room from the pane
 * }} o
 * @returns {{open: () => void, close: (refocus?: boolean) => void,
 *            showCount: (r: {resultIndex: number, resultCount: number}) => void}}
 */
export function createSearchBox(o) {
  function open() {
    const view = o.view();
    if (!view) return;
    $('search').hidden = false;
    $('search-toggle').setAttribute('aria-expanded', 'true');
    const input = $('search-input');
    const sel = view.term.getSelection();
    if (sel && !sel.includes('\n')) input.value = sel;
    input.focus();
    input.select();
    o.scheduleFit();
  }

  /** Hides the box and its highlights; `refocus` gives the keys back to the terminal. */
  function close(refocus = true) {
    if ($('search').hidden) return;
    $('search').hidden = true;
    $('search-toggle').setAttribute('aria-expanded', 'false');
    $('search-count').textContent = '';
    const view = o.view();
    if (view) {
      view.search.clearDecorations();
      if (refocus) view.term.focus();
    }
    o.scheduleFit();
  }

  /** Finds the next (or previous) match of the box's text; the terminal scrolls to it. */
  function find(forward, incremental = false) {
    const view = o.view();
    const text = $('search-input').value;
    if (!view) return false;
    if (!text) {
      view.search.clearDecorations();
      $('search-count').textContent = '';
      return false;
    }
    const found = forward ? view.search.findNext(text, searchOptions(incremental))
      : view.search.findPrevious(text, searchOptions(false));
    if (!found) $('search-count').textContent = 'No match';
    return found;
  }

  function showCount({ resultIndex, resultCount }) {
    const el = $('search-count');
    if (!resultCount) el.textContent = $('search-input').value ? 'No match' : '';
    else el.textContent = resultIndex >= 0 ? `${resultIndex + 1} of ${resultCount}` : `${resultCount} matches`;
  }

  $('search-toggle').addEventListener('click', () => ($('search').hidden ? open() : close()));
  $('search').addEventListener('submit', (e) => { e.preventDefault(); find(true); });
  $('search-input').addEventListener('input', () => find(true, true));
  $('search-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      find(!e.shiftKey);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      close();
    }
  });
  $('search-next').addEventListener('click', () => find(true));
  $('search-prev').addEventListener('click', () => find(false));
  $('search-close').addEventListener('click', () => close());
  return { open, close, showCount };
}
