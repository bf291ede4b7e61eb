"""The felt: the chips on each bet area, and who has chips there (GAME_RULES §5, §7).

What it is for: a table's running totals of the chips on the felt, seated players' and
bettors' without a seat alike, kept as chips are laid (:meth:`Felt.lay`, the one place a
player's bets change), so that what everyone sees of the felt (the totals per area and
how many bettors without a seat are in, never a list of them) costs nothing to say,
however many bettors there are.

What it must never do: move money (the stake follows in the caller:
:func:`server.table.settlement.move_stake`), or decide who may bet (the rules do).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .state import PlayerState

__all__ = ["Felt"]


class Felt:
    """The chips on the felt per area (``totals``), and the players who have some."""

    __slots__ = ("_counted", "totals", "with_chips")

    def __init__(self) -> None:
        self.totals: dict[str, int] = {}
        self.with_chips: set[str] = set()
        #: :meth:`bettors`' last count and the seated list it was made from, until chips
        #: are laid (:meth:`lay`: the one place a player's bets change) or that list is
        #: made again (a seat changed): a step asks it at least twice (``actions.watch``,
        #: before and after), and it walked every seat each time.
        self._counted: tuple[Iterable[PlayerState], int] | None = None

    def __bool__(self) -> bool:
        """Whether any chip is on the felt, a seated player's or a bettor's (§7)."""
        return bool(self.with_chips)

    def lay(self, p: PlayerState, bets: dict[str, int]) -> None:
        """``p``'s chips become ``bets``: the totals follow."""
        totals = self.totals
        for area, amount in p.bets.items():
            left = totals.get(area, 0) - amount
            if left:
                totals[area] = left
            else:
                totals.pop(area, None)
        for area, amount in bets.items():
            totals[area] = totals.get(area, 0) + amount
        p.bets = bets
        self._counted = None
        if bets:
            self.with_chips.add(p.id)
        else:
            self.with_chips.discard(p.id)

    def bettors(self, seated: Iterable[PlayerState]) -> int:
        """How many players without a seat have chips on the felt (or wagers in the coup
        being dealt, whose chips stay on the felt until it is settled). ``seated`` is
        the table's list of its seated players, made again whenever a seat changes
        (``Table.seated``): the count is kept until then, or until chips are laid."""
        counted = self._counted
        if counted is not None and counted[0] is seated:
            return counted[1]
        count = len(self.with_chips) - sum(1 for q in seated if q.bets)
        self._counted = (seated, count)
        return count

    def public(self, seated: Iterable[PlayerState]) -> dict[str, Any]:
        """What everyone sees: the chips on each area and how many bettors are in."""
        return {"totals": dict(sorted(self.totals.items())), "bettors": self.bettors(seated)}

    def rebuild(self, players: Iterable[PlayerState]) -> None:
        """The felt of a table rebuilt from its stored state: everyone's chips."""
        self.totals.clear()
        self.with_chips.clear()
        self._counted = None
        for q in players:
            if q.bets:
                bets, q.bets = q.bets, {}
                self.lay(q, bets)
