"""Exact odds of a coup for any shoe composition, by enumeration over card values.

What it is for: the table's odds display, the house edge of every bet area, and the
reference figures of GAME_RULES §10. The answer is exact (rational, card removal
counted), not simulated.

How: a coup is decided by the *values* of at most six cards taken from the shoe in
dealing order P, B, P, B, P3, B3 (§2). :func:`coup_table` classifies once, with numpy,
every one of the 10^6 six-tuples of values (v1..v6) by the tableau of §2. The tableau
itself is not written again here: its lookup arrays are filled by calling
:func:`server.engine.coup.player_draws`, :func:`~server.engine.coup.banker_draws` and
:func:`~server.engine.coup.is_natural`, the scalar reference. For a composition with
``c[v]`` cards of value ``v`` and ``N`` cards in all, an ordered draw of values
``v1..vk`` without replacement has weight ``prod_i (c[v_i] - #{j < i: v_j = v_i})`` over
``N (N-1) ... (N-k+1)``; summing integer weights per category gives exact fractions.
Only the cards a coup actually uses are enumerated (4, 5 or 6; about 340,000 prefixes);
the unused tail of a six-card draw contributes the falling factorial of what remains.

The pair bets depend on *ranks* (K Q is no pair, §3), not values: the chance that two
given shoe positions hold the same rank is ``sum_r n_r (n_r - 1) / (N (N - 1))``, the
same for Player's positions 1 and 3 as for Banker's 2 and 4.

Pure: no I/O, no clock, no randomness. The one-time table is cached in the module.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .cards import RANKS, CardError, card_value, parse_card
from .coup import banker_draws, is_natural, player_draws
from .payouts import AREAS, Paytable

__all__ = [
    "TABLE_SIZE",
    "CoupCode",
    "code_of",
    "counts_after",
    "coup_table",
    "decode",
    "exact_odds",
    "full_counts",
]

#: Number of six-tuples of card values: the length of :func:`coup_table`.
TABLE_SIZE = 10**6

# Rank -> baccarat value (§1): A = 1, 2-9 face, T J Q K = 0.
_RANK_VALUE: dict[str, int] = {r: card_value(r + "s") for r in RANKS}

# Dragon Bonus, non-natural win by N points pays N:1; 1-3 points lose (§3).
_DRAGON_MARGIN: dict[int, int] = {9: 30, 8: 10, 7: 6, 6: 4, 5: 2, 4: 1}

# Largest int64: above this a weight sum could overflow, and Python ints are used.
_INT64_MAX = int(np.iinfo(np.int64).max)


# -- the coup code --------------------------------------------------------------------
#
# One small integer per coup, readable in decimal:
#     code = cards_used * 1000 + natural * 100 + player_total * 10 + banker_total
# e.g. 4183: four cards, a natural, Player 8 against Banker 3. ``natural`` means a
# natural stopped the drawing (§2); a side then has a natural exactly when its total is
# 8 or 9. Outcome, margin, Banker's final total (Super 6, no-commission 6) and the
# Dragon Bonus all follow from the code (§3).


@dataclass(frozen=True, slots=True)
class CoupCode:
    """A decoded coup code: what the odds and the simulator need to know of a coup."""

    cards_used: int
    natural: bool
    player_total: int
    banker_total: int

    @property
    def outcome(self) -> str:
        """``"player"``, ``"banker"`` or ``"tie"``: the higher total wins (§2)."""
        if self.player_total > self.banker_total:
            return "player"
        if self.banker_total > self.player_total:
            return "banker"
        return "tie"

    @property
    def margin(self) -> int:
        return abs(self.player_total - self.banker_total)


def code_of(cards_used: int, natural: bool, player_total: int, banker_total: int) -> int:
    """The coup code of a coup (see the layout above)."""
    return cards_used * 1000 + int(natural) * 100 + player_total * 10 + banker_total


def decode(code: int) -> CoupCode:
    """Split a coup code into its parts."""
    code = int(code)
    return CoupCode(code // 1000, bool(code // 100 % 10), code // 10 % 10, code % 10)


# -- the table ------------------------------------------------------------------------


def _tableau_arrays() -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
    """The §2 tableau as lookup arrays, filled from the scalar rules in coup.py.

    Returns ``natural[t]``, ``player_draws[pt]`` and ``banker_draws[bt, p3]`` where
    ``p3`` is the value of Player's third card, or 10 when Player stood.
    """
    natural = np.array([is_natural(t) for t in range(10)], dtype=np.bool_)
    p_draw = np.array([player_draws(t) for t in range(10)], dtype=np.bool_)
    b_draw = np.array(
        [[banker_draws(bt, p3 if p3 < 10 else None) for p3 in range(11)] for bt in range(10)],
        dtype=np.bool_,
    )
    return natural, p_draw, b_draw


@cache
def _digits() -> NDArray[np.int8]:
    """All six-tuples of values, shape (6, 10^6); tuple index = v1*10^5 + ... + v6."""
    d = np.indices((10,) * 6, dtype=np.int8).reshape(6, TABLE_SIZE)
    d.flags.writeable = False
    return d


@cache
def _build_table() -> NDArray[np.int16]:
    v1, v2, v3, v4, v5, v6 = (x.astype(np.int16) for x in _digits())
    natural, p_draw, b_draw = _tableau_arrays()
    pt0 = (v1 + v3) % 10  # Player: first and third cards out of the shoe (§2)
    bt0 = (v2 + v4) % 10  # Banker: second and fourth
    nat = natural[pt0] | natural[bt0]  # a natural on either side: both stand (§2)
    pd = ~nat & p_draw[pt0]
    p3 = np.where(pd, v5, 10)  # 10: Player stood
    bd = ~nat & b_draw[bt0, p3]
    b3 = np.where(pd, v6, v5)  # Banker's third card is the next card out (§2)
    pt = np.where(pd, (pt0 + v5) % 10, pt0)
    bt = np.where(bd, (bt0 + b3) % 10, bt0)
    used = 4 + pd.astype(np.int16) + bd.astype(np.int16)
    table: NDArray[np.int16] = (used * 1000 + nat.astype(np.int16) * 100 + pt * 10 + bt).astype(
        np.int16
    )
    table.flags.writeable = False
    return table


def coup_table() -> NDArray[np.int16]:
    """The coup code of every six-tuple of card values, indexed by v1*10^5 + ... + v6.

    Values are in dealing order P, B, P, B, then the next two cards (Player's third if
    Player draws, Banker's third if Banker draws; §2). Built once, read-only.
    """
    return _build_table()


@dataclass(frozen=True, slots=True)
class _Prefixes:
    """The coups as their shortest value prefixes, grouped by coup code.

    ``slots[i]`` (6 rows) indexes the per-composition factor table: ``v * 6 + k`` for a
    used card of value ``v`` that is the ``k``-th earlier card of that value, or one of
    the tail entries ``_TAIL4`` / ``_TAIL5`` / ``_ONE`` for the unused positions.
    ``starts`` are the first rows of each code in ``codes``.
    """

    slots: NDArray[np.int8]
    codes: tuple[int, ...]
    starts: NDArray[np.intp]


_TAIL4 = 60  # factor (N-4)(N-5): a 4-card coup's two unused positions
_TAIL5 = 61  # factor (N-5): a 5-card coup's unused sixth position
_ONE = 62  # factor 1


@cache
def _prefixes() -> _Prefixes:
    table = coup_table()
    digits = _digits()
    used = table // 1000
    v5, v6 = digits[4], digits[5]
    # A coup is listed once, with its unused trailing values set to 0.
    keep = ((used == 4) & (v5 == 0) & (v6 == 0)) | ((used == 5) & (v6 == 0)) | (used == 6)
    idx = np.flatnonzero(keep)
    idx = idx[np.argsort(table[idx], kind="stable")]
    codes = table[idx]
    d = digits[:, idx].astype(np.int8)
    u = used[idx]
    slots = np.empty_like(d)
    for i in range(6):
        earlier = np.zeros(idx.size, dtype=np.int8)
        for j in range(i):
            earlier += d[j] == d[i]
        slots[i] = d[i] * 6 + earlier
    slots[4] = np.where(u >= 5, slots[4], _TAIL4)
    slots[5] = np.where(u == 6, slots[5], np.where(u == 5, _TAIL5, _ONE))
    change = np.flatnonzero(np.diff(codes)) + 1
    starts = np.concatenate(([0], change)).astype(np.intp)
    slots.flags.writeable = False
    return _Prefixes(slots, tuple(int(c) for c in codes[starts]), starts)


def _code_weights(values: list[int], n: int) -> dict[int, int]:
    """Integer weight of each coup code; the weights sum to N (N-1) ... (N-5)."""
    pre = _prefixes()
    factors = [max(values[v] - k, 0) for v in range(10) for k in range(6)]
    factors += [(n - 4) * (n - 5), n - 5, 1]
    falling = n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5)
    if falling <= _INT64_MAX:
        f = np.array(factors, dtype=np.int64)
        w = f[pre.slots[0]]
        for i in range(1, 6):
            w *= f[pre.slots[i]]
        sums = np.add.reduceat(w, pre.starts)
    else:  # a shoe of more than ~27 decks: exact with Python ints, slower
        fo = np.array(factors, dtype=object)
        wo = fo[pre.slots[0]]
        for i in range(1, 6):
            wo = wo * fo[pre.slots[i]]
        sums = np.add.reduceat(wo, pre.starts)
    out = {code: int(s) for code, s in zip(pre.codes, sums, strict=True)}
    assert sum(out.values()) == falling, "coup weights must cover every draw"
    return out


# -- compositions ---------------------------------------------------------------------


def full_counts(decks: int = 8) -> dict[str, int]:
    """Rank counts of a full shoe: ``4 * decks`` of each rank (§4)."""
    if not isinstance(decks, int) or isinstance(decks, bool) or decks < 1:
        raise CardError(f"a shoe needs at least one deck, not {decks!r}")
    return dict.fromkeys(RANKS, 4 * decks)


def counts_after(decks: int, dealt: Iterable[str]) -> dict[str, int]:
    """Rank counts left in a shoe of ``decks`` decks after ``dealt`` cards came out.

    Raises :class:`CardError` on a bad card, or when a card (rank and suit) comes out
    more often than the shoe holds it (``decks`` times).
    """
    counts = full_counts(decks)
    seen: Counter[str] = Counter()
    for text in dealt:
        card = parse_card(text)
        seen[card] += 1
        if seen[card] > decks:
            raise CardError(f"{card} came out {seen[card]} times from a {decks}-deck shoe")
        counts[card[0]] -= 1
    return counts


def _checked_counts(counts: Mapping[str, int]) -> dict[str, int]:
    out = dict.fromkeys(RANKS, 0)
    for rank, n in counts.items():
        if rank not in out:
            raise CardError(f"not a rank: {rank!r} (ranks A 2-9 T J Q K)")
        if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 0:
            raise CardError(f"a rank count is a whole number >= 0, not {n!r} for {rank}")
        out[rank] = int(n)
    return out


# -- the odds -------------------------------------------------------------------------


def _edges(p: Mapping[str, Fraction], paytable: Paytable) -> dict[str, Fraction]:
    """House edge of each area: expected loss per unit staked, ties included (§3)."""
    player, banker, tie = p["player"], p["banker"], p["tie"]
    if paytable.commission:
        banker_return = banker * Fraction(100 - paytable.commission_percent, 100)
    else:  # no-commission table: Banker winning with 6 pays 1:2 (§3)
        six = p["banker_six"]
        banker_return = (banker - six) + six / 2
    edges = {
        "player": banker - player,  # Player pays 1:1, pushes on a tie
        "banker": player - banker_return,
        "tie": 1 - tie * (paytable.tie_pays + 1),
        "player_pair": 1 - p["player_pair"] * (paytable.pair_pays + 1),
        "banker_pair": 1 - p["banker_pair"] * (paytable.pair_pays + 1),
        "super6": 1 - p["banker_six"] * (paytable.super6_pays + 1),
        "dragon_player": -p["dragon_player_ev"],
        "dragon_banker": -p["dragon_banker_ev"],
    }
    assert set(edges) == set(AREAS)
    return {area: edges[area] for area in AREAS}


def _dragon_net(coup: CoupCode, side: str) -> int:
    """Net win per unit staked on the Dragon Bonus of ``side`` (§3)."""
    if coup.outcome == "tie":
        return 0 if coup.natural else -1  # a natural tie pushes
    if coup.outcome != side:
        return -1
    if coup.natural:  # the winner of a natural coup has 8 or 9: a natural
        return 1
    return _DRAGON_MARGIN.get(coup.margin, -1)


def exact_odds(
    decks: int = 8,
    *,
    counts: Mapping[str, int] | None = None,
    paytable: Paytable | None = None,
) -> dict[str, Any]:
    """Exact probabilities and house edges of the next coup dealt from a shoe.

    ``counts`` maps rank (``"A"``, ``"2"`` .. ``"9"``, ``"T"``, ``"J"``, ``"Q"``,
    ``"K"``) to how many of it remain (missing ranks: none); without it, a full shoe of
    ``decks`` decks. At least 6 cards must remain.

    Returns floats ``banker``, ``player``, ``tie``, ``player_pair``, ``banker_pair``,
    ``banker_six`` (Banker wins with 6), ``natural``; ``cards`` (cards remaining);
    ``edges`` (area -> house edge, positive = the house's advantage) for every area
    in :data:`~server.engine.payouts.AREAS`; ``exact`` and ``exact_edges``, the same as
    ``(numerator, denominator)`` pairs of Python ints in lowest terms. Player and
    Banker edges follow ``paytable`` (default :class:`Paytable`); Super 6 and Dragon
    Bonus edges are given whether or not the paytable opens those areas (§3).
    """
    paytable = paytable if paytable is not None else Paytable()
    ranks = _checked_counts(counts) if counts is not None else full_counts(decks)
    n = sum(ranks.values())
    if n < 6:
        raise CardError(f"the odds need at least 6 cards in the shoe, not {n}")
    values = [0] * 10
    for rank, k in ranks.items():
        values[_RANK_VALUE[rank]] += k

    weights = _code_weights(values, n)
    total = sum(weights.values())
    keys = ("player", "banker", "tie", "banker_six", "natural")
    sums = dict.fromkeys((*keys, "dragon_player_ev", "dragon_banker_ev"), 0)
    for code, w in weights.items():
        coup = decode(code)
        sums[coup.outcome] += w
        if coup.outcome == "banker" and coup.banker_total == 6:
            sums["banker_six"] += w
        if coup.natural:
            sums["natural"] += w
        sums["dragon_player_ev"] += w * _dragon_net(coup, "player")
        sums["dragon_banker_ev"] += w * _dragon_net(coup, "banker")
    probs: dict[str, Fraction] = {k: Fraction(s, total) for k, s in sums.items()}
    pair = Fraction(sum(k * (k - 1) for k in ranks.values()), n * (n - 1))
    probs["player_pair"] = probs["banker_pair"] = pair

    edges = _edges(probs, paytable)
    shown = ("banker", "player", "tie", "player_pair", "banker_pair", "banker_six", "natural")
    result: dict[str, Any] = {k: float(probs[k]) for k in shown}
    result["cards"] = n
    result["edges"] = {a: float(e) for a, e in edges.items()}
    result["exact"] = {k: (probs[k].numerator, probs[k].denominator) for k in shown}
    result["exact_edges"] = {a: (e.numerator, e.denominator) for a, e in edges.items()}
    return result
