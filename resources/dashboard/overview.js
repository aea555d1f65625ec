// SPDX-License-Identifier: GPL-2.0-or-later
// Every session at a glance: while no session is open, the pane shows a card
// per session (#overview) with its name, its state and a live miniature of
// its screen (miniatures.js draws it, on the same terms as the list's: only
// cards on screen, fetched again on the session's output). A card opens its
// session (an ended one: its saved screen).

import { $, el } from './dom.js';
import { sessionHash } from './router.js';
import { displayText, sessionLabel } from './util.js';
import { state as sessionState } from './sessiontext.js';

/** Height of a card's miniature at most (px). */
const CARD_MINI_PX = 180;

function stateText(s) {
  if (s.state === 'ended' || s.state === 'exited') return sessionState(s);
  return s.attached ? 'running · attached' : 'running';
}

/**
 * Draws the overview's cards for `sessions` (id -> { s }), in the list's
 * order, updating cards in place.
 * @param {Map<string, {s: object}>} sessions
 * @param {{add: (id: string, box: HTMLElement) => void, remove: (box: HTMLElement) => void}} minis
 */
export function renderOverview(sessions, minis) {
  const grid = $('overview');
  if (!grid) return;
  const existing = new Map([...grid.children].map((a) => [a.dataset.id, a]));
  let i = 0;
  for (const { s } of sessions.values()) {
    let card = existing.get(s.id);
    if (!card) {
      card = el('a', 'overview-card');
      card.dataset.id = s.id;
      card.href = sessionHash(s.id);
      const head = el('span', 'overview-head');
      head.append(el('span', 'overview-title'), el('span', 'badge overview-state'));
      const mini = el('div', 'mini overview-mini');
      mini.setAttribute('aria-hidden', 'true');
      mini.dataset.maxHeight = String(CARD_MINI_PX);
      card.append(head, mini);
      minis.add(s.id, mini);
    }
    existing.delete(s.id);
    const label = sessionLabel(s);
    card.querySelector('.overview-title').textContent = label;
    const state = card.querySelector('.overview-state');
    state.textContent = stateText(s);
    state.dataset.kind = s.state === 'running' ? 'running' : s.state === 'exited' && s.exit_code === 0 ? 'ok' : 'bad';
    card.title = `Open ${label}${s.cwd ? ` (in ${displayText(s.cwd)})` : ''}`;
    card.setAttribute('aria-label', `Open ${label}, ${state.textContent}`);
    if (grid.children[i] !== card) grid.insertBefore(card, grid.children[i] || null);
    i++;
  }
  for (const card of existing.values()) {
    minis.remove(card.querySelector('.mini'));
    card.remove();
  }
  $('empty').classList.toggle('has-sessions', sessions.size > 0);
}
