"""The roads (scoreboards) as data a client can draw (GAME_RULES §9).

* :func:`bead_plate` -- one bead per coup, columns of ``rows`` top to bottom, left to right.
* :func:`big_road` -- Player and Banker only, with dragon tails and tie counts.
* :func:`derived_road` -- Big Eye Boy (k = 1), Small Road (k = 2), Cockroach Pig (k = 3),
  computed on the big road's *logical* columns (before any dragon tail).
* :class:`Roads` -- all of the above plus statistics and "ask road" predictions, built
  from a sequence of :class:`Result` and extended one coup at a time with
  :meth:`Roads.add`.

Everything is a frozen dataclass with a ``to_dict()`` made of JSON/msgpack-friendly
plain data (dicts, lists, str, int, bool, None). Coordinates are 0-based: ``col`` counts
from the left, ``row`` from the top.

Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Sized
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from .coup import Coup

__all__ = [
    "DERIVED_ROADS",
    "BeadCell",
    "BigRoad",
    "BigRoadCell",
    "Color",
    "DerivedCell",
    "DerivedRoad",
    "Result",
    "RoadOutcome",
    "Roads",
    "Stats",
    "bead_plate",
    "big_road",
    "derived_color",
    "derived_road",
    "parse_results",
    "roads",
]

RoadOutcome = Literal["player", "banker", "tie"]
Color = Literal["red", "blue"]

DEFAULT_ROWS = 6

# §9: the derived roads and their k.
DERIVED_ROADS: tuple[tuple[str, int], ...] = (
    ("big_eye_boy", 1),
    ("small_road", 2),
    ("cockroach_pig", 3),
)

_T = TypeVar("_T")

_OUTCOMES: frozenset[str] = frozenset({"player", "banker", "tie"})


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class Result:
    """What the roads need to know of one coup (§9)."""

    outcome: RoadOutcome
    player_pair: bool = False
    banker_pair: bool = False
    natural: bool = False
    total: int | None = None  # the winning total (either total on a tie), if known

    def __post_init__(self) -> None:
        if self.outcome not in _OUTCOMES:
            raise ValueError(f"bad outcome {self.outcome!r}")

    @classmethod
    def from_coup(cls, coup: Coup) -> Result:
        return cls(
            outcome=coup.outcome,
            player_pair=coup.player_pair,
            banker_pair=coup.banker_pair,
            natural=coup.natural,
            total=coup.winner_total,
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "outcome": self.outcome,
            "player_pair": self.player_pair,
            "banker_pair": self.banker_pair,
            "natural": self.natural,
            "total": self.total,
        }


_LETTERS: dict[str, RoadOutcome] = {"B": "banker", "P": "player", "T": "tie"}


def parse_results(text: str) -> tuple[Result, ...]:
    """``"B P P T B"`` (or ``"BPPTB"``) -> results; whitespace and commas are ignored.

    For tests, fixtures and the terminal client; no pairs, naturals or totals.
    """
    out: list[Result] = []
    for ch in text.upper():
        if ch in " ,\t\n":
            continue
        if ch not in _LETTERS:
            raise ValueError(f"bad result letter {ch!r} (use B, P, T)")
        out.append(Result(_LETTERS[ch]))
    return tuple(out)


def _check_rows(rows: int) -> None:
    if rows < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")


# ------------------------------------------------------------------------ bead plate


@dataclass(frozen=True, slots=True)
class BeadCell:
    col: int
    row: int
    outcome: RoadOutcome
    player_pair: bool
    banker_pair: bool
    natural: bool
    total: int | None

    def to_dict(self) -> dict[str, object]:
        return {
            "col": self.col,
            "row": self.row,
            "outcome": self.outcome,
            "player_pair": self.player_pair,
            "banker_pair": self.banker_pair,
            "natural": self.natural,
            "total": self.total,
        }


def bead_plate(results: Sequence[Result], rows: int = DEFAULT_ROWS) -> list[BeadCell]:
    """§9 bead plate: one bead per coup (ties included), filling columns of ``rows``
    top to bottom, left to right. Cell ``i`` is coup ``i``."""
    _check_rows(rows)
    return [
        BeadCell(
            col=i // rows,
            row=i % rows,
            outcome=r.outcome,
            player_pair=r.player_pair,
            banker_pair=r.banker_pair,
            natural=r.natural,
            total=r.total,
        )
        for i, r in enumerate(results)
    ]


# ------------------------------------------------------------------------- placement


def _place(lengths: Sequence[int], rows: int) -> list[tuple[int, int]]:
    """Grid positions, in entry order, of logical columns of the given lengths (§9).

    A logical column starts at the top of the grid column right of where the previous
    logical column started (further right if that cell is taken by an earlier tail).
    Each next entry goes below the previous one; when that would pass the last row or
    the cell below is occupied, the column turns right along its row (dragon tail) and
    stays on that row.
    """
    occupied: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []
    start = -1
    for length in lengths:
        start += 1
        while (start, 0) in occupied:  # only under a cascade of tails reaching row 0
            start += 1
        col, row = start, 0
        turned = False
        for i in range(length):
            if i > 0:
                if not turned and row + 1 < rows and (col, row + 1) not in occupied:
                    row += 1
                else:
                    turned = True
                    col += 1
                    # Never triggers (an earlier tail on this row ends left of the
                    # turn), kept so two entries can never share a cell.
                    while (col, row) in occupied:
                        col += 1
            occupied.add((col, row))
            out.append((col, row))
    return out


# -------------------------------------------------------------------------- big road


@dataclass(frozen=True, slots=True)
class BigRoadCell:
    col: int
    row: int
    outcome: RoadOutcome  # "player" or "banker"
    ties: int  # ties marked on this entry (§9)
    player_pair: bool
    banker_pair: bool
    natural: bool
    total: int | None
    index: int  # index of the coup in the results

    def to_dict(self) -> dict[str, object]:
        return {
            "col": self.col,
            "row": self.row,
            "outcome": self.outcome,
            "ties": self.ties,
            "player_pair": self.player_pair,
            "banker_pair": self.banker_pair,
            "natural": self.natural,
            "total": self.total,
            "index": self.index,
        }


@dataclass(frozen=True, slots=True)
class BigRoad:
    cells: tuple[BigRoadCell, ...]  # in entry order
    # Logical columns (before any dragon tail): each a run of one outcome.
    columns: tuple[tuple[RoadOutcome, ...], ...]
    # Ties not yet markable: only non-zero while there is no entry at all (§9: ties
    # before the first entry are counted on the first entry once it comes).
    pending_ties: int = 0

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(len(c) for c in self.columns)

    @property
    def width(self) -> int:
        return max((c.col for c in self.cells), default=-1) + 1

    def to_dict(self) -> dict[str, object]:
        return {
            "cells": [c.to_dict() for c in self.cells],
            "columns": [list(c) for c in self.columns],
            "pending_ties": self.pending_ties,
            "width": self.width,
        }


def _logical_columns(items: Iterable[_T]) -> list[list[_T]]:
    """Runs of equal items: a change of item starts a new column (§9)."""
    cols: list[list[_T]] = []
    for o in items:
        if cols and cols[-1][0] == o:
            cols[-1].append(o)
        else:
            cols.append([o])
    return cols


def big_road(results: Sequence[Result], rows: int = DEFAULT_ROWS) -> BigRoad:
    """§9 big road: Player and Banker only; the same winner goes below, a change of
    winner starts a new column; dragon tail at ``rows`` or on an occupied cell below. A
    tie is a count on the latest entry; ties before the first entry go on the first."""
    _check_rows(rows)
    entries: list[int] = []  # indices into results of the non-tie coups
    ties: list[int] = []
    pending = 0
    for i, r in enumerate(results):
        if r.outcome == "tie":
            if entries:
                ties[-1] += 1
            else:
                pending += 1
        else:
            entries.append(i)
            ties.append(pending)
            pending = 0
    columns = _logical_columns(results[i].outcome for i in entries)
    positions = _place([len(c) for c in columns], rows)
    cells = tuple(
        BigRoadCell(
            col=col,
            row=row,
            outcome=results[i].outcome,
            ties=t,
            player_pair=results[i].player_pair,
            banker_pair=results[i].banker_pair,
            natural=results[i].natural,
            total=results[i].total,
            index=i,
        )
        for (col, row), i, t in zip(positions, entries, ties, strict=True)
    )
    return BigRoad(cells=cells, columns=tuple(tuple(c) for c in columns), pending_ties=pending)


# ----------------------------------------------------------------------- derived roads


def derived_color(lengths: Sequence[int], c: int, r: int, k: int) -> Color | None:
    """§9 colour of the big-road entry at logical column ``c``, row ``r`` (0-based) for
    the derived road ``k``, or None when the road has not started there.

    ``lengths`` are the logical column lengths; only columns before ``c`` are read, and
    those are complete once column ``c`` exists, so the final lengths give the same
    colour as the lengths at the time the entry was added.
    """
    if r == 0:
        if c < k + 1:  # §9: starts at r = 0 only with c >= k+1
            return None
        # §9 r = 0: red when columns c-1 and c-1-k have the same length.
        return "red" if lengths[c - 1] == lengths[c - 1 - k] else "blue"
    if c < k:  # §9: starts at r >= 1 only with c >= k
        return None
    # §9 r >= 1: p = length of column c-k; red when r < p or r > p, blue when r = p.
    p = lengths[c - k]
    return "blue" if r == p else "red"


@dataclass(frozen=True, slots=True)
class DerivedCell:
    col: int
    row: int
    color: Color

    def to_dict(self) -> dict[str, object]:
        return {"col": self.col, "row": self.row, "color": self.color}


@dataclass(frozen=True, slots=True)
class DerivedRoad:
    k: int
    colors: tuple[Color, ...]  # one per big-road entry from the road's start on
    cells: tuple[DerivedCell, ...]  # the colours placed like the big road
    columns: tuple[tuple[Color, ...], ...]  # logical columns of colours

    @property
    def width(self) -> int:
        return max((c.col for c in self.cells), default=-1) + 1

    def to_dict(self) -> dict[str, object]:
        return {
            "k": self.k,
            "colors": list(self.colors),
            "cells": [c.to_dict() for c in self.cells],
            "columns": [list(c) for c in self.columns],
            "width": self.width,
        }


def _lengths(columns: Sequence[Sized | int]) -> list[int]:
    return [c if isinstance(c, int) else len(c) for c in columns]


def derived_road(
    big_road_columns: Sequence[Sized | int], k: int, rows: int = DEFAULT_ROWS
) -> DerivedRoad:
    """§9 derived road ``k`` (1 Big Eye Boy, 2 Small Road, 3 Cockroach Pig) from the big
    road's logical columns (each a sequence of entries, or just its length).

    Colours are placed like the big road: a change of colour starts a new column,
    dragon tail at ``rows`` or on an occupied cell below.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    _check_rows(rows)
    lengths = _lengths(big_road_columns)
    colors: list[Color] = []
    for c, n in enumerate(lengths):
        for r in range(n):
            color = derived_color(lengths, c, r, k)
            if color is not None:
                colors.append(color)
    columns = _logical_columns(colors)
    positions = _place([len(c) for c in columns], rows)
    return DerivedRoad(
        k=k,
        colors=tuple(colors),
        cells=tuple(
            DerivedCell(col, row, color)
            for (col, row), color in zip(positions, colors, strict=True)
        ),
        columns=tuple(tuple(c) for c in columns),
    )


def _next_colors(
    columns: Sequence[Sequence[RoadOutcome]], outcome: RoadOutcome
) -> dict[str, Color | None]:
    """Derived colours the next entry would get if it were ``outcome`` ("ask road")."""
    lengths = [len(c) for c in columns]
    if columns and columns[-1][0] == outcome:
        c, r = len(columns) - 1, lengths[-1]
        lengths[-1] += 1
    else:
        c, r = len(columns), 0
        lengths.append(1)
    return {name: derived_color(lengths, c, r, k) for name, k in DERIVED_ROADS}


# ----------------------------------------------------------------------------- stats


@dataclass(frozen=True, slots=True)
class Stats:
    coups: int = 0
    banker: int = 0
    player: int = 0
    tie: int = 0
    player_pair: int = 0
    banker_pair: int = 0
    natural: int = 0

    @classmethod
    def of(cls, results: Iterable[Result]) -> Stats:
        s = cls()
        for r in results:
            s = s.add(r)
        return s

    def add(self, r: Result) -> Stats:
        return Stats(
            coups=self.coups + 1,
            banker=self.banker + (r.outcome == "banker"),
            player=self.player + (r.outcome == "player"),
            tie=self.tie + (r.outcome == "tie"),
            player_pair=self.player_pair + r.player_pair,
            banker_pair=self.banker_pair + r.banker_pair,
            natural=self.natural + r.natural,
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "coups": self.coups,
            "banker": self.banker,
            "player": self.player,
            "tie": self.tie,
            "player_pair": self.player_pair,
            "banker_pair": self.banker_pair,
            "natural": self.natural,
        }


# ----------------------------------------------------------------------------- roads


@dataclass(frozen=True, slots=True)
class Roads:
    """Every road of a shoe at once. Immutable: :meth:`add` returns a new one.

    Built with :meth:`of` (or :func:`roads`); ``Roads()`` is the empty board.
    """

    results: tuple[Result, ...] = ()
    rows: int = DEFAULT_ROWS
    bead_plate: tuple[BeadCell, ...] = ()
    big_road: BigRoad = field(default_factory=lambda: BigRoad((), ()))
    big_eye_boy: DerivedRoad = field(default_factory=lambda: DerivedRoad(1, (), (), ()))
    small_road: DerivedRoad = field(default_factory=lambda: DerivedRoad(2, (), (), ()))
    cockroach_pig: DerivedRoad = field(default_factory=lambda: DerivedRoad(3, (), (), ()))
    stats: Stats = field(default_factory=Stats)

    @classmethod
    def of(cls, results: Iterable[Result], rows: int = DEFAULT_ROWS) -> Roads:
        res = tuple(results)
        big = big_road(res, rows)
        return cls(
            results=res,
            rows=rows,
            bead_plate=tuple(bead_plate(res, rows)),
            big_road=big,
            big_eye_boy=derived_road(big.columns, 1, rows),
            small_road=derived_road(big.columns, 2, rows),
            cockroach_pig=derived_road(big.columns, 3, rows),
            stats=Stats.of(res),
        )

    @classmethod
    def from_coups(cls, coups: Iterable[Coup], rows: int = DEFAULT_ROWS) -> Roads:
        return cls.of((Result.from_coup(c) for c in coups), rows)

    def add(self, result: Result | Coup) -> Roads:
        """The roads with one more coup (recomputed; well under 1 ms for a shoe)."""
        r = Result.from_coup(result) if isinstance(result, Coup) else result
        return Roads.of((*self.results, r), self.rows)

    def predictions(self) -> dict[str, dict[str, Color | None]]:
        """Ask road: the derived colours the next entry would get if Banker / Player won
        (None where that road would not have started)."""
        cols = self.big_road.columns
        return {"banker": _next_colors(cols, "banker"), "player": _next_colors(cols, "player")}

    def to_dict(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "stats": self.stats.to_dict(),
            "bead_plate": [c.to_dict() for c in self.bead_plate],
            "big_road": self.big_road.to_dict(),
            "big_eye_boy": self.big_eye_boy.to_dict(),
            "small_road": self.small_road.to_dict(),
            "cockroach_pig": self.cockroach_pig.to_dict(),
            "predictions": self.predictions(),
        }


def roads(results: Iterable[Result], rows: int = DEFAULT_ROWS) -> dict[str, object]:
    """Everything at once as plain data: ``Roads.of(results, rows).to_dict()``."""
    return Roads.of(results, rows).to_dict()
