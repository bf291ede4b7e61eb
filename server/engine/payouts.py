"""Bets and payouts in integer minor units (GAME_RULES §3).

"X:1" pays X times the stake and returns the stake. Commission is taken on the win and
the win is rounded down to the minor unit: a winning Banker stake of 1000 returns
1000 + 950. Nothing here ever touches a float.

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from .coup import Coup

__all__ = [
    "AREAS",
    "Area",
    "Bet",
    "BetResult",
    "Paytable",
    "settle",
    "settle_bet",
    "winning_areas",
]


class Area(StrEnum):
    """A bet area on the layout."""

    PLAYER = "player"
    BANKER = "banker"
    TIE = "tie"
    PLAYER_PAIR = "player_pair"
    BANKER_PAIR = "banker_pair"
    SUPER6 = "super6"
    DRAGON_PLAYER = "dragon_player"
    DRAGON_BANKER = "dragon_banker"


AREAS: tuple[str, ...] = tuple(a.value for a in Area)

# Dragon Bonus, non-natural win by N points -> pays N:1 (§3); 1-3 points lose.
_DRAGON_MARGIN = {9: 30, 8: 10, 7: 6, 6: 4, 5: 2, 4: 1}


@dataclass(frozen=True, slots=True)
class Paytable:
    """What each bet pays. Defaults: a commission table with pairs, 5% commission."""

    commission: bool = True
    commission_percent: int = 5
    tie_pays: int = 8
    pair_pays: int = 11
    super6_pays: int = 12
    pairs: bool = True
    super6: bool = False
    dragon: bool = False

    def areas(self) -> tuple[Area, ...]:
        """The areas open on a table with this paytable."""
        out = [Area.PLAYER, Area.BANKER, Area.TIE]
        if self.pairs:
            out += [Area.PLAYER_PAIR, Area.BANKER_PAIR]
        if self.super6 and not self.commission:
            out.append(Area.SUPER6)
        if self.dragon:
            out += [Area.DRAGON_PLAYER, Area.DRAGON_BANKER]
        return tuple(out)

    def to_dict(self) -> dict[str, object]:
        return {
            "commission": self.commission,
            "commission_percent": self.commission_percent,
            "tie_pays": self.tie_pays,
            "pair_pays": self.pair_pays,
            "super6_pays": self.super6_pays,
            "pairs": self.pairs,
            "super6": self.super6,
            "dragon": self.dragon,
        }


@dataclass(frozen=True, slots=True)
class Bet:
    area: Area
    stake: int


@dataclass(frozen=True, slots=True)
class BetResult:
    """The settlement of one bet.

    ``returned`` is what goes back to the player (0 when lost, the stake on a push,
    stake + win when won); ``win`` is the amount won after commission; ``commission``
    what the house kept of the win. ``returned - stake`` is the player's net.
    """

    area: Area
    stake: int
    returned: int
    win: int
    commission: int

    @property
    def outcome(self) -> str:
        if self.returned == 0:
            return "lose"
        if self.returned == self.stake and self.win == 0 and self.commission == 0:
            return "push"
        return "win"

    @property
    def net(self) -> int:
        return self.returned - self.stake


def _won(area: Area, stake: int, pays_num: int, pays_den: int = 1) -> BetResult:
    win = stake * pays_num // pays_den
    return BetResult(area, stake, stake + win, win, 0)


def _lost(area: Area, stake: int) -> BetResult:
    return BetResult(area, stake, 0, 0, 0)


def _push(area: Area, stake: int) -> BetResult:
    return BetResult(area, stake, stake, 0, 0)


def _dragon(area: Area, stake: int, coup: Coup, side: str) -> BetResult:
    natural = coup.player_natural if side == "player" else coup.banker_natural
    if coup.outcome == "tie":
        return _push(area, stake) if coup.natural else _lost(area, stake)
    if coup.outcome != side:
        return _lost(area, stake)
    if natural:
        return _won(area, stake, 1)
    pays = _DRAGON_MARGIN.get(coup.margin)
    return _won(area, stake, pays) if pays else _lost(area, stake)


def settle_bet(area: Area | str, stake: int, coup: Coup, paytable: Paytable) -> BetResult:
    """Settle one bet of ``stake`` minor units on ``area`` against ``coup`` (§3)."""
    area = Area(area)
    if not isinstance(stake, int) or isinstance(stake, bool) or stake <= 0:
        raise ValueError(f"a stake is a positive whole number of minor units, not {stake!r}")
    outcome = coup.outcome
    if area is Area.PLAYER:
        if outcome == "tie":
            return _push(area, stake)
        return _won(area, stake, 1) if outcome == "player" else _lost(area, stake)
    if area is Area.BANKER:
        if outcome == "tie":
            return _push(area, stake)
        if outcome != "banker":
            return _lost(area, stake)
        if paytable.commission:
            # §3: commission on the win, the win rounded down to the minor unit.
            gross = stake
            win = gross * (100 - paytable.commission_percent) // 100
            return BetResult(area, stake, stake + win, win, gross - win)
        if coup.banker_total == 6:  # no-commission table: Banker winning with 6 pays 1:2
            return _won(area, stake, 1, 2)
        return _won(area, stake, 1)
    if area is Area.TIE:
        return _won(area, stake, paytable.tie_pays) if outcome == "tie" else _lost(area, stake)
    if area is Area.PLAYER_PAIR:
        return _won(area, stake, paytable.pair_pays) if coup.player_pair else _lost(area, stake)
    if area is Area.BANKER_PAIR:
        return _won(area, stake, paytable.pair_pays) if coup.banker_pair else _lost(area, stake)
    if area is Area.SUPER6:
        if outcome == "banker" and coup.banker_total == 6:
            return _won(area, stake, paytable.super6_pays)
        return _lost(area, stake)
    if area is Area.DRAGON_PLAYER:
        return _dragon(area, stake, coup, "player")
    return _dragon(area, stake, coup, "banker")


def settle(bets: Iterable[Bet], coup: Coup, paytable: Paytable) -> list[BetResult]:
    """Settle a list of bets; the sum of ``returned`` is what the house pays out."""
    return [settle_bet(b.area, b.stake, coup, paytable) for b in bets]


def winning_areas(coup: Coup, paytable: Paytable) -> list[Area]:
    """The table's areas that win ``coup``: a bet on them gets back more than its stake
    (a push is not a win). Derived from :func:`settle_bet`, the one place of each rule."""
    return [a for a in paytable.areas() if settle_bet(a, 100, coup, paytable).outcome == "win"]
