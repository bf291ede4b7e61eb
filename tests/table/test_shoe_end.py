"""The end of a shoe at the table (GAME_RULES §4): the stop card at least 12 cards from
the end means the coup that brings it out and one more coup always have their cards, so
the table has no "shoe ran short" path. Proved here by property, on stacked shoes of any
cards and length the options allow, played through the real table."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from table_helpers import BANKER_WIN, TableHarness, fast_timers, stack

from server.engine.cards import shoe_cards
from server.engine.shoe import MIN_STOP_OFFSET
from server.table import TableOptions
from server.table.table import Phase
from server.table.views import summary
from server.table.views import view as snapshot


@settings(max_examples=60, deadline=None)
@given(
    cards=st.lists(st.sampled_from(shoe_cards(1)), min_size=MIN_STOP_OFFSET + 1, max_size=70),
    data=st.data(),
)
def test_every_stacked_shoe_plays_to_one_coup_after_its_stop_card(
    cards: list[str], data: st.DataObject
) -> None:
    offset = data.draw(st.integers(MIN_STOP_OFFSET, min(100, len(cards) - 1)), label="offset")
    h = TableHarness(TableOptions(stop_offset=offset, timers=fast_timers(grace=3600.0)))
    h.setup({"ann": 1, "bob": 2}, cards, holder="ann")
    coups = 0
    stop_at = None
    while h.table.shoe is not None:
        if h.table.offer is not None:  # a Player win passed the shoe (§5): take it
            h.accept(h.table.offer.current)
        assert h.phase is Phase.BETTING
        evs = h.play_coup({"bob": {"banker": 100}})
        coups += 1
        if h.find("stop_card", evs):
            assert stop_at is None
            stop_at = coups
    assert stop_at is not None and coups == stop_at + 1  # §4: exactly one more coup
    ended = h.one("shoe_ended")
    assert ended.data["complete"] is True and len(ended.data["coups"]) == coups
    used = sum(len(x["player"]) + len(x["banker"]) for x in ended.data["coups"])
    assert used <= len(cards)
    assert h.wallet.total() == 0


def test_coups_are_numbered_per_shoe() -> None:
    """docs/protocol.md: ``coup_no`` is the coup's number in this shoe, as on every
    scoreboard. It used to run on across shoes (the first coup of shoe 2 was 56)."""
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, pad=20), holder="ann")
    h.play_coup({"bob": {"banker": 100}})
    h.play_coup({"bob": {"banker": 100}})
    assert h.table.coup_no == 3  # betting for the third coup of shoe 1
    while h.table.shoe is not None:
        h.play_coup({"bob": {"banker": 100}})
    records = [r for r in h.table.drain_records() if r["kind"] == "round"]
    assert [r["coup_no"] for r in records] == list(range(1, len(records) + 1))
    evs = h.start(stack(BANKER_WIN))
    opened = h.one("betting_opened", evs).data
    assert (opened["coup_no"], opened["round_id"]) == (1, "t1-2-1")
    assert snapshot(h.table, None)["coup_no"] == 1 and summary(h.table)["coup_no"] == 1
    evs = h.play_coup({"bob": {"banker": 100}})
    assert h.one("result", evs).data["coup_no"] == 1
    (record,) = h.table.drain_records()
    assert (record["round_id"], record["shoe_no"], record["coup_no"]) == ("t1-2-1", 2, 1)
