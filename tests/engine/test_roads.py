"""Roads (GAME_RULES §9): worked examples and properties against a naive reading."""

from __future__ import annotations

import itertools
import json
import time

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.engine.coup import resolve_coup
from server.engine.roads import (
    DERIVED_ROADS,
    Result,
    Roads,
    bead_plate,
    big_road,
    derived_road,
    parse_results,
    roads,
)


def cells_of(road: object) -> list[tuple[int, int, str]]:
    out = []
    for c in road.cells:  # type: ignore[attr-defined]
        out.append((c.col, c.row, getattr(c, "outcome", None) or c.color))
    return out


def pos(road: object) -> list[tuple[int, int]]:
    return [(c.col, c.row) for c in road.cells]  # type: ignore[attr-defined]


# ------------------------------------------------------------------------ bead plate


def test_bead_plate_fills_columns_of_six_top_to_bottom_left_to_right() -> None:
    res = [
        *parse_results("B P T B B P"),
        Result("tie", player_pair=True, total=5),
        *parse_results("B"),
    ]
    plate = bead_plate(res)
    assert [(c.col, c.row) for c in plate] == [
        (0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 0), (1, 1),
    ]  # fmt: skip
    assert [c.outcome for c in plate] == [r.outcome for r in res]  # ties included
    assert plate[6].player_pair and not plate[6].banker_pair and plate[6].total == 5
    assert [(c.col, c.row) for c in bead_plate(res, rows=3)][:4] == [(0, 0), (0, 1), (0, 2), (1, 0)]


def test_rows_must_be_positive() -> None:
    with pytest.raises(ValueError):
        bead_plate(parse_results("B"), rows=0)
    with pytest.raises(ValueError):
        parse_results("BX")


# -------------------------------------------------------------------------- big road


def test_big_road_basic() -> None:
    br = big_road(parse_results("B B P P P B"))
    assert cells_of(br) == [
        (0, 0, "banker"), (0, 1, "banker"),
        (1, 0, "player"), (1, 1, "player"), (1, 2, "player"),
        (2, 0, "banker"),
    ]  # fmt: skip
    assert br.columns == (("banker", "banker"), ("player",) * 3, ("banker",))
    assert br.lengths == (2, 3, 1)
    assert [c.index for c in br.cells] == [0, 1, 2, 3, 4, 5]


def test_dragon_tail_at_row_six() -> None:
    br = big_road(parse_results("B" * 8 + "P"))
    assert pos(br) == [(0, r) for r in range(6)] + [(1, 5), (2, 5), (1, 0)]
    assert br.lengths == (8, 1)  # logical columns are before any dragon tail
    assert br.width == 3


def test_dragon_tail_turns_when_blocked_by_occupied_cell_below() -> None:
    # 8 B (tail along row 5 to col 2), then 7 P starting in col 1: row 5 of col 1 is
    # taken, so the P column turns along row 4 (cols 2, 3). Then 5 B in col 2: row 4 of
    # col 2 is taken by the P tail, so it turns along row 3.
    br = big_road(parse_results("B" * 8 + "P" * 7 + "B" * 5))
    b1 = [(0, r) for r in range(6)] + [(1, 5), (2, 5)]
    p = [(1, r) for r in range(5)] + [(2, 4), (3, 4)]
    b2 = [(2, r) for r in range(4)] + [(3, 3)]
    assert pos(br) == b1 + p + b2
    assert br.lengths == (8, 7, 5)


def test_ties_before_first_entry_counted_on_first_entry() -> None:
    br = big_road(parse_results("T T B P"))
    assert [c.ties for c in br.cells] == [2, 0]
    assert br.pending_ties == 0
    only_ties = big_road(parse_results("T T T"))
    assert only_ties.cells == () and only_ties.pending_ties == 3


def test_ties_counted_on_latest_entry_and_do_not_break_a_column() -> None:
    br = big_road(parse_results("B T T P T B T B"))
    assert cells_of(br) == [(0, 0, "banker"), (1, 0, "player"), (2, 0, "banker"), (2, 1, "banker")]
    assert [c.ties for c in br.cells] == [2, 1, 1, 0]
    assert [c.index for c in br.cells] == [0, 3, 5, 7]
    assert big_road(parse_results("T B T T")).cells[0].ties == 3


# --------------------------------------------------------------------- derived roads


def test_big_eye_boy_example_of_section_9() -> None:
    r = Roads.of(parse_results("B P P P B"))
    assert r.big_eye_boy.colors == ("blue", "red", "blue")
    assert cells_of(r.big_eye_boy) == [(0, 0, "blue"), (1, 0, "red"), (2, 0, "blue")]
    assert r.small_road.colors == () and r.cockroach_pig.colors == ()


def test_small_road_and_cockroach_pig_start_positions() -> None:
    # Small Road (k=2) starts at r>=1 with c>=2 ...
    r = Roads.of(parse_results("B P B B"))
    assert r.big_eye_boy.colors == ("red", "blue")  # (2,0): 1==1; (2,1): p=1=r
    assert r.small_road.colors == ("blue",)  # (2,1): p = len(col 0) = 1 = r
    assert Roads.of(parse_results("B P B")).small_road.colors == ()
    # ... or at r=0 with c>=3.
    assert Roads.of(parse_results("B P B P")).small_road.colors == ("red",)
    # Cockroach Pig (k=3): r>=1 with c>=3, or r=0 with c>=4.
    assert Roads.of(parse_results("B P B P")).cockroach_pig.colors == ()
    assert Roads.of(parse_results("B P B P P")).cockroach_pig.colors == ("blue",)
    assert Roads.of(parse_results("B P B P B")).cockroach_pig.colors == ("red",)
    assert Roads.of(parse_results("BB P B P B")).cockroach_pig.colors == ("blue",)


def test_derived_road_accepts_lengths_and_places_with_dragon_tail() -> None:
    # Ten columns of one entry: from c=2 on, columns c-1 and c-2 are equal -> 8 reds.
    d = derived_road([1] * 10, 1)
    assert d.colors == ("red",) * 8
    assert pos(d) == [(0, r) for r in range(6)] + [(1, 5), (2, 5)]
    assert d.columns == (("red",) * 8,)
    # Columns as sequences work too: (1,1) has p = len(col 0) = 1 = r -> blue.
    assert derived_road([["b"], ["p", "p"]], 1).colors == ("blue",)
    with pytest.raises(ValueError):
        derived_road([1], 0)


def test_predictions_ask_road() -> None:
    r = Roads.of(parse_results("B P P P"))
    pred = r.predictions()
    # Next B -> (2,0): cols 1 (3) and 0 (1) differ -> blue (the §9 example).
    assert pred["banker"]["big_eye_boy"] == "blue"
    # Next P -> (1,3): p = 1, r = 3 > p -> red.
    assert pred["player"]["big_eye_boy"] == "red"
    assert pred["banker"]["small_road"] is None
    for outcome in ("banker", "player"):
        nxt = r.add(Result(outcome))
        for name, _k in DERIVED_ROADS:
            road = getattr(nxt, name)
            expect = road.colors[-1] if len(road.colors) > len(getattr(r, name).colors) else None
            assert pred[outcome][name] == expect


# ------------------------------------------------------------------- Roads / to_dict


def test_from_coup_and_stats() -> None:
    coup = resolve_coup(["8s", "9d", "8h", "Kc"])  # P 8 8 = 6, B 9 K = 9 natural
    res = Result.from_coup(coup)
    assert res == Result("banker", player_pair=True, banker_pair=False, natural=True, total=9)
    r = Roads.from_coups([coup]).add(Result("tie")).add(coup)
    assert r.stats.to_dict() == {
        "coups": 3, "banker": 2, "player": 0, "tie": 1,
        "player_pair": 2, "banker_pair": 0, "natural": 2,
    }  # fmt: skip


def test_to_dict_is_json_and_msgpack_friendly() -> None:
    res = parse_results("T B P P P B B T P B B B B B B B B P")
    d = roads(res)
    assert set(d) == {
        "rows", "stats", "bead_plate", "big_road", "big_eye_boy", "small_road",
        "cockroach_pig", "predictions",
    }  # fmt: skip
    assert json.loads(json.dumps(d)) == d
    assert msgpack.unpackb(msgpack.packb(d)) == d
    big = d["big_road"]
    assert isinstance(big, dict)
    assert set(big) == {"cells", "columns", "pending_ties", "width"}
    assert set(big["cells"][0]) == {
        "col", "row", "outcome", "ties", "player_pair", "banker_pair", "natural", "total", "index",
    }  # fmt: skip
    beb = d["big_eye_boy"]
    assert isinstance(beb, dict)
    assert set(beb) == {"k", "colors", "cells", "columns", "width"}
    assert set(beb["cells"][0]) == {"col", "row", "color"}


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
def test_recompute_for_a_shoe_is_fast() -> None:
    res = parse_results(
        "BPPTBBBPBPTPPPPPPPPBPBBTBPBPBBBBPPBPBTPBBPBPPPBBBBBBBBBPPTPBPBPBPBBPPBBTPBPBPBPB"
    )
    assert len(res) == 80
    base = Roads.of(res[:79])
    n = 200
    t0 = time.process_time()  # (CPU time: a busy machine's other processes do not count)
    for _ in range(n):
        base.add(res[79])
    per = (time.process_time() - t0) / n
    assert per < 0.005  # ~0.4 ms measured; generous bound for slow CI machines


# ------------------------------------------------------------- naive §9 and properties


def naive_derived(outcomes: list[str], k: int) -> list[str]:
    """A direct reading of §9, entry by entry, using the columns as they were when the
    entry was added."""
    cols: list[list[str]] = []
    colors: list[str] = []
    started = False
    for o in outcomes:
        if o == "tie":
            continue
        if cols and cols[-1][-1] == o:
            cols[-1].append(o)
        else:
            cols.append([o])
        c = len(cols) - 1
        r = len(cols[-1]) - 1
        if not started and ((r >= 1 and c >= k) or (r == 0 and c >= k + 1)):
            started = True
        if not started:
            continue
        if r == 0:
            colors.append("red" if len(cols[c - 1]) == len(cols[c - 1 - k]) else "blue")
        else:
            p = len(cols[c - k])
            colors.append("red" if (r < p or r > p) else "blue")
    return colors


outcome_lists = st.lists(
    st.sampled_from(["banker", "player", "tie"]), max_size=90
) | st.lists(  # long streaks too, to exercise dragon tails
    st.tuples(st.sampled_from(["banker", "player", "tie"]), st.integers(1, 9)), max_size=20
).map(lambda runs: [o for o, n in runs for _ in range(n)])


@settings(max_examples=300, deadline=None)
@given(outcome_lists)
def test_derived_roads_match_naive_reading(outcomes: list[str]) -> None:
    r = Roads.of(Result(o) for o in outcomes)  # type: ignore[arg-type]
    for name, k in DERIVED_ROADS:
        road = getattr(r, name)
        assert list(road.colors) == naive_derived(outcomes, k)
        assert [c.color for c in road.cells] == list(road.colors)
        assert len(set(pos(road))) == len(road.cells)


@settings(max_examples=300, deadline=None)
@given(outcome_lists, st.integers(1, 7))
def test_big_road_grid_properties(outcomes: list[str], rows: int) -> None:
    res = [Result(o) for o in outcomes]  # type: ignore[arg-type]
    br = big_road(res, rows)
    non_ties = [o for o in outcomes if o != "tie"]
    assert len(br.cells) == len(non_ties)
    assert [c.outcome for c in br.cells] == non_ties
    assert len(set(pos(br))) == len(br.cells)  # never two entries in one cell
    assert all(0 <= c.row < rows and c.col >= 0 for c in br.cells)
    assert sum(len(c) for c in br.columns) == len(non_ties)
    ties = outcomes.count("tie")
    assert sum(c.ties for c in br.cells) + br.pending_ties == ties
    assert br.pending_ties == (ties if not non_ties else 0)
    # Within a logical column each entry is directly below or right of the previous.
    i = 0
    for col in br.columns:
        cells = br.cells[i : i + len(col)]
        assert cells[0].row == 0
        for a, b in itertools.pairwise(cells):
            assert (b.col, b.row) in ((a.col, a.row + 1), (a.col + 1, a.row))
        i += len(col)


@settings(max_examples=100, deadline=None)
@given(outcome_lists)
def test_incremental_add_equals_from_scratch(outcomes: list[str]) -> None:
    res = [Result(o) for o in outcomes]  # type: ignore[arg-type]
    r = Roads()
    for x in res:
        r = r.add(x)
    assert r == Roads.of(res)
    assert r.to_dict() == roads(res)


def test_cascade_of_tails_reaching_row_zero_pushes_the_next_column_right() -> None:
    # Eight columns of 12: each tail runs one row above the previous one; the 6th turns
    # at row 0, so the 7th column cannot start at col 6 and starts right of that tail.
    br = big_road(parse_results("".join(("B" if i % 2 == 0 else "P") * 12 for i in range(8))))
    assert len(set(pos(br))) == len(br.cells) == 96
    assert (br.cells[60].col, br.cells[60].row) == (5, 0)
    assert [(c.col, c.row) for c in br.cells[61:72]] == [(6 + i, 0) for i in range(11)]
    assert (br.cells[72].col, br.cells[72].row) == (17, 0)
