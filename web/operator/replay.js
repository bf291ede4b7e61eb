/**
 * replay.js — a round's cards as they were turned, from its record's `turned_by` (each
 * hand's cards in the order turned, who turned each: docs/operator-api.md): the first
 * two cards of the Player, then the first two of the Banker, then a third card of the
 * Player, then of the Banker, as a coup is played. A record without `turned_by` falls
 * back to each hand's cards, turned by nobody known.
 */

const ORDER = [
  ["player", 0],
  ["player", 1],
  ["banker", 0],
  ["banker", 1],
  ["player", 2],
  ["banker", 2],
];

/** The round's steps: `{hand, index, card, by, on_behalf}`, one per card, in order. */
export function replaySteps(round) {
  const turned = round?.turned_by ?? {};
  const cards = (hand) =>
    Array.isArray(turned[hand]) && turned[hand].length
      ? turned[hand]
      : (round?.[hand] ?? []).map((card) => ({ card, by: null, on_behalf: null }));
  const hands = { player: cards("player"), banker: cards("banker") };
  return ORDER.filter(([hand, i]) => hands[hand][i]).map(([hand, i]) => ({
    hand,
    index: i,
    card: hands[hand][i].card,
    by: hands[hand][i].by ?? null,
    on_behalf: hands[hand][i].on_behalf ?? null,
  }));
}
