"""The coup: from the cards as they leave the shoe to the result (GAME_RULES §2).

Dealing order: Player, Banker, Player, Banker, then Player's third card if drawn, then
Banker's third card if drawn. A natural (8 or 9 on two cards, either side) stops all
drawing. :func:`player_draws` and :func:`banker_draws` are the tableau; the table state
machine uses them step by step, :func:`resolve_coup` all at once.

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .cards import CardError, card_value, hand_total, parse_card, rank_of

__all__ = ["Coup", "Outcome", "banker_draws", "is_natural", "player_draws", "resolve_coup"]

Outcome = Literal["player", "banker", "tie"]


def is_natural(total: int) -> bool:
    """8 or 9 on the first two cards (§2 "Natural")."""
    return total >= 8


def player_draws(player_total: int) -> bool:
    """Player, no natural on either side: 0-5 draws, 6-7 stands (§2)."""
    return player_total <= 5


# §2 tableau: Banker total -> the values of Player's third card on which Banker draws.
_BANKER_DRAWS_ON: dict[int, frozenset[int]] = {
    0: frozenset(range(10)),
    1: frozenset(range(10)),
    2: frozenset(range(10)),
    3: frozenset({0, 1, 2, 3, 4, 5, 6, 7, 9}),
    4: frozenset({2, 3, 4, 5, 6, 7}),
    5: frozenset({4, 5, 6, 7}),
    6: frozenset({6, 7}),
    7: frozenset(),
}


def banker_draws(banker_total: int, player_third: int | None) -> bool:
    """Whether Banker draws, no natural on either side (§2).

    ``player_third`` is the value of Player's third card, or None when Player stood
    (then Banker draws on 0-5 and stands on 6-7).
    """
    if banker_total >= 8:
        return False
    if player_third is None:
        return banker_total <= 5
    return player_third in _BANKER_DRAWS_ON[banker_total]


@dataclass(frozen=True, slots=True)
class Coup:
    """One resolved coup. Cards are strings in the order each hand received them."""

    player: tuple[str, ...]
    banker: tuple[str, ...]
    player_total: int
    banker_total: int
    outcome: Outcome
    natural: bool
    player_natural: bool
    banker_natural: bool
    player_pair: bool
    banker_pair: bool
    cards_used: int

    @property
    def player_drew(self) -> bool:
        return len(self.player) == 3

    @property
    def banker_drew(self) -> bool:
        return len(self.banker) == 3

    @property
    def winner_total(self) -> int:
        return max(self.player_total, self.banker_total)

    @property
    def margin(self) -> int:
        """How many points the winner won by (0 on a tie)."""
        return abs(self.player_total - self.banker_total)

    @property
    def cards(self) -> tuple[str, ...]:
        """The cards in the order they left the shoe."""
        p, b = self.player, self.banker
        out = [p[0], b[0], p[1], b[1]]
        if len(p) == 3:
            out.append(p[2])
        if len(b) == 3:
            out.append(b[2])
        return tuple(out)

    def to_dict(self) -> dict[str, object]:
        return {
            "player": list(self.player),
            "banker": list(self.banker),
            "player_total": self.player_total,
            "banker_total": self.banker_total,
            "outcome": self.outcome,
            "natural": self.natural,
            "player_pair": self.player_pair,
            "banker_pair": self.banker_pair,
        }


def finish_coup(player: Sequence[str], banker: Sequence[str]) -> Coup:
    """Build the :class:`Coup` of two complete hands (their drawing already decided)."""
    pt, bt = hand_total(player), hand_total(banker)
    p_nat = len(player) == 2 and is_natural(hand_total(player[:2]))
    b_nat = len(banker) == 2 and is_natural(hand_total(banker[:2]))
    outcome: Outcome = "player" if pt > bt else "banker" if bt > pt else "tie"
    return Coup(
        player=tuple(player),
        banker=tuple(banker),
        player_total=pt,
        banker_total=bt,
        outcome=outcome,
        natural=p_nat or b_nat,
        player_natural=p_nat,
        banker_natural=b_nat,
        player_pair=rank_of(player[0]) == rank_of(player[1]),
        banker_pair=rank_of(banker[0]) == rank_of(banker[1]),
        cards_used=len(player) + len(banker),
    )


def resolve_coup(cards: Sequence[str]) -> Coup:
    """Resolve a coup from the cards in the order they leave the shoe (§2).

    At least 4 cards are needed, and as many as the draws use (at most 6); pass 6 to be
    safe: extra cards are not used. Raises :class:`CardError` on a bad card or when the
    draws need more cards than were given.
    """
    seq = [parse_card(c) for c in cards[:6]]
    if len(seq) < 4:
        raise CardError(f"a coup needs at least 4 cards, got {len(seq)}")
    player = [seq[0], seq[2]]
    banker = [seq[1], seq[3]]
    pt, bt = hand_total(player), hand_total(banker)
    pos = 4

    def take() -> str:
        nonlocal pos
        if pos >= len(seq):
            raise CardError(f"this coup needs more than {len(seq)} cards")
        card = seq[pos]
        pos += 1
        return card

    if not (is_natural(pt) or is_natural(bt)):
        p3: int | None = None
        if player_draws(pt):
            card = take()
            player.append(card)
            p3 = card_value(card)
        if banker_draws(bt, p3):
            banker.append(take())
    return finish_coup(player, banker)
