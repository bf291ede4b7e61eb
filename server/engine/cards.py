"""Cards and their values (GAME_RULES §1).

A card is a two-character string, rank then suit: ``As 9d Th Kc``. Ranks are
``A 2-9 T J Q K``, suits ``s h d c``. Strings keep every record, event and test
readable; the hot paths (odds, the simulator) work on values instead.

This module is pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "RANKS",
    "SUITS",
    "CardError",
    "burn_count",
    "card_value",
    "full_deck",
    "hand_total",
    "parse_card",
    "parse_cards",
    "rank_of",
    "shoe_cards",
]

RANKS = "A23456789TJQK"
SUITS = "shdc"

# Baccarat value of each rank: A = 1, 2-9 face, T J Q K = 0 (§1).
_VALUE = {r: (i + 1) % 10 if i < 9 else 0 for i, r in enumerate(RANKS)}
# Burn count of each rank: A = 1, 2-9 face, T J Q K = 10 (§4 "Burn").
_BURN = {r: i + 1 if i < 9 else 10 for i, r in enumerate(RANKS)}

_ALIASES = {"10": "T", "1": "A"}


class CardError(ValueError):
    """A string that is not a card (``"Xq"``), or a card list that cannot be used."""


def parse_card(text: str) -> str:
    """Return the canonical form of a card written as ``As``, ``as``, ``10h`` or ``Th``."""
    if not isinstance(text, str):
        raise CardError(f"not a card: {text!r}")
    s = text.strip()
    if len(s) < 2:
        raise CardError(f"not a card: {text!r}")
    rank, suit = s[:-1].upper(), s[-1].lower()
    rank = _ALIASES.get(rank, rank)
    if len(rank) != 1 or rank not in RANKS or suit not in SUITS:
        raise CardError(f"not a card: {text!r} (ranks A 2-9 T J Q K, suits s h d c)")
    return rank + suit


def parse_cards(text: str | Iterable[str]) -> list[str]:
    """Parse ``"As 9d Th"`` or an iterable of card strings."""
    items = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    return [parse_card(c) for c in items]


def rank_of(card: str) -> str:
    return card[0]


def card_value(card: str) -> int:
    """Baccarat value of a card (§1): A = 1, 2-9 face value, T J Q K = 0."""
    try:
        return _VALUE[card[0]]
    except (KeyError, IndexError, TypeError):
        raise CardError(f"not a card: {card!r}") from None


def burn_count(card: str) -> int:
    """How many cards a face-up burn card sends face down (§4): A = 1, T J Q K = 10."""
    try:
        return _BURN[card[0]]
    except (KeyError, IndexError, TypeError):
        raise CardError(f"not a card: {card!r}") from None


def hand_total(cards: Iterable[str]) -> int:
    """A hand's value: the card total modulo 10 (§1)."""
    return sum(card_value(c) for c in cards) % 10


def full_deck() -> list[str]:
    """One 52-card deck in the canonical order: suits s h d c, ranks A..K within each."""
    return [r + s for s in SUITS for r in RANKS]


def shoe_cards(decks: int) -> list[str]:
    """The unshuffled shoe: ``decks`` copies of :func:`full_deck`, deck after deck."""
    if decks < 1:
        raise CardError(f"a shoe needs at least one deck, not {decks}")
    return full_deck() * decks
