"""What the croupier stores of a table (``to_state(spectators=False)``): everything of
the game and the money, nothing of the audience, so a step's cost does not grow with
the number of spectators. The full state (``to_state()``) keeps everyone, for replay."""

from __future__ import annotations

import json

from table_helpers import BANKER_WIN, TableHarness, stack

from server.table import Table


def test_stored_state_leaves_out_spectators_but_keeps_the_game() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    for n in range(50):
        h.join(f"watcher{n}")
    h.bet("bob", "player", 500)
    full, stored = h.table.to_state(), h.table.to_state(spectators=False)
    assert len(full["players"]) == 52
    assert sorted(p["id"] for p in stored["players"]) == ["ann", "bob"]
    assert len(json.dumps(stored)) < len(json.dumps(full)) / 2
    balances = dict(h.wallet.balances)
    back = Table.from_state(stored, h.wallet)
    assert back.to_state() == stored  # the game itself is all there
    assert back.players["bob"].bets == {"player": 500}
    assert h.wallet.balances == balances  # the chips are a stake already; nothing moves
    assert h.stake("bob") == 500 and back.money("bob") == {
        "balance": h.balance("bob"),
        "available": h.balance("bob") - 500,
    }


def test_the_state_is_a_copy() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    h.bet("bob", "player", 500)
    h.done_all()
    state = h.table.to_state()
    before = json.dumps(state, sort_keys=True)
    state["players"][1]["bets"]["player"] = 1
    state["coup"]["held"]["bob"]["player"] = 1
    state["shoe"]["cards"] = ""
    assert json.dumps(h.table.to_state(), sort_keys=True) == before


def test_a_version_1_state_is_brought_up_to_date() -> None:
    """Stored before stakes: placed chips were only reservations (never moved in the
    ledger), so they come off the layout; an offer in the old shape goes on."""
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    h.bet("bob", "player", 500)
    state = h.table.to_state()
    state["version"] = 1
    for key in ("draining", "sent_actions"):
        del state[key]
    state["offer"] = {"queue": ["bob"], "current": "ann", "deadline": 5.0}
    balances = dict(h.wallet.balances)
    back = Table.from_state(state, h.wallet)
    assert back.players["bob"].bets == {} and h.wallet.balances == balances
    assert back.offer is not None and (back.offer.current, back.offer.seat) == ("ann", 1)
    assert back.to_state()["version"] == 2


def test_a_state_stored_before_currencies_loads_as_play_money() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    state = h.table.to_state()
    del state["options"]["currency"]
    back = Table.from_state(state, h.wallet)
    assert back.options.currency is None and back.options.decimals == 2
