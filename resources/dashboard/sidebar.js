// SPDX-License-Identifier: GPL-2.0-or-later
// The sidebar with the session list: a column beside the terminal, a drawer
// over it below 760 px (NARROW).

import { $ } from './dom.js';

/**
 * @param {() => void} onToggle called after it opened or closed (the pane's width changed)
 * @returns {{set: (open: boolean) => void, isOpen: () => boolean, focusList: () => void}}
 */
export function createSidebar(onToggle) {
  function set(open) {
    document.body.classList.toggle('sidebar-open', open);
    document.body.classList.toggle('sidebar-closed', !open);
    $('sidebar-toggle').setAttribute('aria-expanded', String(open));
    onToggle();
  }

  function isOpen() {
    return document.body.classList.contains('sidebar-open');
  }

  /** Keyboard: opens the list and moves focus to it (the open session's entry first). */
  function focusList() {
    set(true);
    const target = document.querySelector('.session.is-current .session-open')
      || document.querySelector('.session-open') || $('new-command');
    target.focus();
  }

  return { set, isOpen, focusList };
}
