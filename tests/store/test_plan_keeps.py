"""What a store keeps beside a commit, decided once (server/store/plan.py and
server/ledger/rules.py) and applied by each store: a table's events, a player's days,
the retention. (A player's round index and the wallet calls inserted once are held by
the store contract suite, on both stores.)"""

from __future__ import annotations

import json

import pytest

from server.ledger.flows import FLOW_DAYS, flow_cutoff, pruned_days
from server.protocol.errors import StoreError
from server.store.base import HISTORY_LIMIT, TableRow
from server.store.plan import check_retention, first_event_kept, new_events, plan_commit
from server.store.records import check_row, dump_json, dump_state


def test_a_tables_new_events_and_the_oldest_kept() -> None:
    events = [(3, "c"), (4, "d"), (5, "e")]
    assert new_events(events, -1) == events
    assert new_events(events, 4) == [(5, "e")]  # a retried commit's are stored already
    assert new_events(events, 5) == []
    assert first_event_kept(5, 3) == 3  # seqs 3, 4, 5: the newest three
    assert first_event_kept(5, 1) == 5


def test_a_players_first_flow_of_a_day_drops_the_days_before_the_cutoff() -> None:
    cutoff = flow_cutoff("2026-03-10")
    assert cutoff == "2026-01-30"  # FLOW_DAYS days in all, the tenth of March included
    assert FLOW_DAYS == 40
    days = ["2026-01-29", "2026-01-30", "2026-03-09"]
    assert pruned_days(days, cutoff) == ["2026-01-29"]


@pytest.mark.parametrize(("events", "rounds"), [(0, HISTORY_LIMIT), (1, HISTORY_LIMIT - 1)])
def test_a_store_keeps_at_least_one_event_and_the_shown_rounds(events: int, rounds: int) -> None:
    with pytest.raises(StoreError):
        check_retention(events, rounds)
    assert check_retention(3, HISTORY_LIMIT) == (3, HISTORY_LIMIT)


def test_a_tables_config_is_dumped_once_while_it_is_the_same() -> None:
    """The croupier writes the same config at every step: its JSON is made once (issue
    36), and made again for another config, or the same one changed in place."""
    config = {"id": "row-config", "seats": 7, "limits": {"min_bet": 100}}
    state = {"seq": 1}
    first, _ = plan_commit(0.0, [], TableRow("row-config", config, state), [], [], [], []).row or (
        "",
        "",
    )
    again = check_row(TableRow("row-config", config, {"seq": 2}))[0]
    assert again is first and json.loads(first) == config
    config["limits"]["min_bet"] = 200  # changed in place: seen
    assert json.loads(check_row(TableRow("row-config", config, state))[0]) == config
    other = {**config, "seats": 5}
    assert json.loads(check_row(TableRow("row-config", other, state))[0])["seats"] == 5
    assert check_row(TableRow("row-config", config, state))[0] == first.replace("100", "200")


def test_a_state_is_the_same_json_with_string_keys_or_not() -> None:
    """The quick way (string keys only) and the one for other keys give the same text,
    the standard library's; keys not strings still serialize; what is not JSON-able is
    refused."""
    state = {"seq": 3, "players": [{"id": "ann", "bets": {"player": 500}}], "ok": True}
    assert dump_state(state) == dump_json(state)
    assert dump_state({1: "seat", "x": [None, 2.5]}) == '{"1":"seat","x":[null,2.5]}'
    with pytest.raises(StoreError, match="not JSON-able"):
        dump_state({"x": b"bytes"})
    with pytest.raises(StoreError, match="not JSON-able"):
        dump_state({"x": 2**70})
