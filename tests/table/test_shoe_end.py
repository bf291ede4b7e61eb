"""The end of a shoe at the table (GAME_RULES §4): the stop card at least 12 cards from
the end means the coup that brings it out and one more coup always have their cards, so
the table has no "shoe ran short" path. Proved here by property, on stacked shoes of any
cards and length the options allow, played through the real table."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from table_helpers import TableHarness, fast_timers

from server.engine.cards import shoe_cards
from server.engine.shoe import MIN_STOP_OFFSET
from server.table import TableOptions
from server.table.table import Phase


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
