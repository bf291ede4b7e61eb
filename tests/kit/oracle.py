"""An oracle of the rules, written from GAME_RULES.md and not from the engine, and what a
frame may never show.

- :func:`baccarat` checks the draws of §2 on two complete hands and returns the outcome;
  :func:`expected_payout` is what one bet returns at a commission table with pairs (§3).
- :data:`CARD`, :data:`BALANCE_KEYS` and :func:`walk` let a test look at every leaf of
  a decoded frame for a card or a balance that should not be there.

This module must never import the engine: an oracle that shares the code under test
checks nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

CARD = re.compile(r"[A2-9TJQK][shdc]")
BALANCE_KEYS = frozenset({"balance", "available", "net", "balances", "before", "after"})


def card_points(card: str) -> int:
    """§1: A = 1, 2-9 face value, T J Q K = 0."""
    rank = card[0]
    if rank == "A":
        return 1
    if rank in "TJQK":
        return 0
    return int(rank)


def total(cards: Iterable[str]) -> int:
    return sum(card_points(c) for c in cards) % 10


def baccarat(player: list[str], banker: list[str]) -> str:
    """Check the draws of §2 on two complete hands and return the outcome."""
    p2, b2 = total(player[:2]), total(banker[:2])
    if p2 >= 8 or b2 >= 8:
        assert len(player) == 2 and len(banker) == 2, (player, banker)
    else:
        assert len(player) == (3 if p2 <= 5 else 2), (player, banker)
        if len(player) == 2:
            assert len(banker) == (3 if b2 <= 5 else 2), (player, banker)
        else:
            p3 = card_points(player[2])
            draws = {
                0: True,
                1: True,
                2: True,
                3: p3 != 8,
                4: 2 <= p3 <= 7,
                5: 4 <= p3 <= 7,
                6: p3 in (6, 7),
                7: False,
            }
            assert len(banker) == (3 if draws[b2] else 2), (player, banker)
    pt, bt = total(player), total(banker)
    return "player" if pt > bt else "banker" if bt > pt else "tie"


def expected_payout(area: str, stake: int, player: list[str], banker: list[str]) -> tuple[int, int]:
    """(returned, commission) of one bet at a commission table with pairs (§3)."""
    outcome = baccarat(player, banker)
    if area == "player":
        return (2 * stake if outcome == "player" else stake if outcome == "tie" else 0), 0
    if area == "banker":
        if outcome == "tie":
            return stake, 0
        if outcome == "banker":
            win = stake * 95 // 100
            return stake + win, stake - win
        return 0, 0
    if area == "tie":
        return (9 * stake if outcome == "tie" else 0), 0
    if area == "player_pair":
        return (12 * stake if player[0][0] == player[1][0] else 0), 0
    if area == "banker_pair":
        return (12 * stake if banker[0][0] == banker[1][0] else 0), 0
    raise AssertionError(f"no oracle for {area}")


def without_actions(data: Mapping[str, Any]) -> dict[str, Any]:
    """An event's data less the ``actions`` overlay a seated player's copy may carry."""
    return {k: v for k, v in data.items() if k != "actions"}


def walk(value: Any, path: tuple[Any, ...] = ()) -> Iterable[tuple[tuple[Any, ...], Any]]:
    """Every (path, leaf or key) in a decoded frame; dict keys are yielded as leaves too."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, "<key>"), key
            yield from walk(item, (*path, key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from walk(item, (*path, i))
    else:
        yield path, value
