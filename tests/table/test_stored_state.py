"""What the croupier stores of a table (``to_state(spectators=False)``): everything of
the game and the money, nothing of the audience, so a step's cost does not grow with
the number of spectators. The full state (``to_state()``) keeps everyone, for replay."""

from __future__ import annotations

import json
from typing import Any

import pytest
from table_helpers import BANKER_WIN, TableHarness, check_stored_state, stack

from server.table import Table, TableOptions
from server.table.state import CoupState
from server.table.table import Phase
from server.vocabulary import commands as c


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


def test_a_step_shares_the_parts_of_the_row_it_did_not_change() -> None:
    """The options, the shoe, its coups and results, and each player's command ids are
    the same in the rows of two steps that did not change them (neither copied nor freed at each
    step, issue 36), and new lists once changed: the row taken before is as it was."""
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN, BANKER_WIN), holder="ann")
    h.play_coup({"bob": {"player": 500}})
    h.do(c.PlaceBet(player="ann", area="banker", amount=100, id="a1"))
    first = h.table.to_state(spectators=False)
    text = json.dumps(first)
    h.do(c.PlaceBet(player="bob", area="player", amount=100, id="b1"))
    second = h.table.to_state(spectators=False)
    assert second["results"] is first["results"] and len(first["results"]) == 1
    assert second["shoe_coups"] is first["shoe_coups"]
    assert second["options"] is first["options"] and second["shoe"] is first["shoe"]
    assert second["recent_ids"]["ann"] is first["recent_ids"]["ann"]
    assert second["recent_ids"]["bob"] == ["b1"] and "bob" not in first["recent_ids"]
    h.do(c.PlaceBet(player="ann", area="banker", amount=100, id="a2"))
    h.done_all()
    h.tick_to_deadline()
    while h.table.coup is not None:
        h.tick_to_deadline()
    third = h.table.to_state(spectators=False)
    assert len(third["results"]) == 2 and third["results"] is not first["results"]
    assert third["shoe"] is not first["shoe"]  # (cards drawn)
    assert third["recent_ids"]["ann"] == ["a1", "a2"]
    assert json.dumps(first) == text


def test_a_players_command_ids_are_a_new_list_at_each_id() -> None:
    """The row shares the table's lists of command ids (no copy at each step, issue 36),
    so the table never changes one in place: a new id makes a new list, and a row taken
    before keeps the ids it had."""
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    h.do(c.PlaceBet(player="ann", area="banker", amount=100, id="a1"))
    row = h.table.to_state(spectators=False)
    kept = h.table.recent_ids["ann"]
    assert row["recent_ids"]["ann"] is kept
    h.do(c.PlaceBet(player="ann", area="banker", amount=100, id="a2"))
    assert kept == ["a1"] and row["recent_ids"]["ann"] == ["a1"]
    assert h.table.recent_ids["ann"] == ["a1", "a2"] and h.table.recent_ids["ann"] is not kept
    for n in range(3, 80):  # (the oldest dropped, still never in place)
        before = h.table.recent_ids["ann"]
        h.do(
            c.RemoveBet(player="ann", area="banker", id=f"a{n}")
            if n % 2
            else c.PlaceBet(player="ann", area="banker", amount=100, id=f"a{n}")
        )
        assert h.table.recent_ids["ann"] is not before and before[-1] == f"a{n - 1}"
    assert h.table.recent_ids["ann"] == [f"a{n}" for n in range(16, 80)]


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


@pytest.mark.slow
def test_the_stored_state_is_copied_afresh_through_played_shoes() -> None:
    """to_state copies the cheap way and keeps some copies between steps (the shoe's,
    its coups', its results'): after every step of two seeded shoes played with bets
    placed and taken back, squeezes, a voided round, a restart and a spectator (a
    whole shoe, into the next), it is
    what copying everything afresh gives, and shares no list or dict with the table or
    with the state taken before but the shoe's coups and results while unchanged; no
    later step changes a state taken before (the actor keeps the last stored one)."""
    # The shortest shoe a table allows (some 40 coups, not some 75): the void at coup 7
    # and the restart at coup 20 still come in the first shoe.
    h = TableHarness(TableOptions(seats=6, decks=6, stop_offset=100))
    names = [f"p{i}" for i in range(1, 7)]
    h.seat(names, funds=10_000_000)
    h.join("watcher")
    stored = check_stored_state(h.table)
    taken: list[tuple[dict[str, Any], str]] = []
    shoes = 0
    voided = restored = False
    while shoes < 2 or h.table.coup_no < 3:
        t = h.table
        if t.wants_shoe:
            shoes += 1
            h.start(seed=bytes([shoes]) * 32)
        elif t.offer is not None:
            h.accept(t.offer.current)
        elif t.phase is Phase.CUT:
            assert t.cutter is not None
            h.do(c.Cut(player=t.cutter, position=100 + shoes))
        elif t.phase is Phase.BETTING:
            _bet_round(h, names)
        elif t.coup is not None:
            _turn(h, t.coup)
        else:
            raise AssertionError(t.phase)
        stored = check_stored_state(h.table, stored)
        taken.append((stored, json.dumps(stored)))
        if t.coup_no == 7 and t.coup is not None and t.coup.stage == "banker":
            h.do(c.VoidRound(round_id=t.round_id, reason="a test"))
            stored = check_stored_state(h.table, stored)
            voided = True
        if t.coup_no == 20 and t.phase is Phase.BETTING and shoes == 1:
            state = json.loads(json.dumps(h.table.to_state()))
            h.table = Table.from_state(state, h.wallet)
            stored = check_stored_state(h.table, stored)
            restored = True
    assert h.table.shoe_no == 2 and voided and restored
    assert all(json.dumps(state) == text for state, text in taken)


def _bet_round(h: TableHarness, names: list[str]) -> None:
    t = h.table
    k = t.coup_no
    for i, name in enumerate(names):
        area = "banker" if name == t.holder else ("player", "banker", "tie")[(i + k) % 3]
        # (ids of their shoe: a table remembers the ids of its last coups, and a bet of
        # the next shoe's coup k sent with one of them would be taken for a repeat)
        h.do(c.PlaceBet(player=name, area=area, amount=100 * (1 + i), id=f"b{t.shoe_no}-{k}-{i}"))
        check_stored_state(t)
        if i % 2:
            h.do(c.RemoveBet(player=name, area=area, amount=None))
            check_stored_state(t)
            h.do(
                c.SameBet(player=name)
                if t.players[name].last_bets
                else c.PlaceBet(player=name, area=area, amount=100)
            )
    for name in names:
        if t.phase is Phase.BETTING:
            h.do(c.Done(player=name), 1.0)
            check_stored_state(t)


def _turn(h: TableHarness, coup: CoupState) -> None:
    hand = coup.stage_hand
    turner = coup.turners[hand]
    if turner is None:
        h.tick_to_deadline()
        return
    if coup.coup_no % 2:
        h.toss(turner, hand)
        return
    h.do(c.Squeeze(player=turner, hand=hand, style="peek"))
    for card in coup.face_down():
        for pct in (20, 60, 90):
            h.do(c.Progress(player=turner, hand=hand, card=card, percent=pct), 0.3)
            check_stored_state(h.table)
        if h.table.coup is coup:
            h.do(c.TurnCard(player=turner, hand=hand, card=card))


def test_a_stored_coup_of_another_shape_is_copied_as_it_is() -> None:
    """A shoe's coups are copied the quick way when they have the table's own shape
    (``player`` then ``banker``, two lists); one restored in any other shape is copied
    key by key, beside the others, and the state is the same as copied afresh."""
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN, BANKER_WIN), holder="ann")
    h.play_coup({"bob": {"player": 500}})
    state = h.table.to_state()
    state["shoe_coups"].append({"banker": ["9s", "Kd"], "player": ("Ks", "Th"), "by": ["x"]})
    h.table = Table.from_state(state, h.wallet)
    stored = check_stored_state(h.table)
    assert stored["shoe_coups"][-1] == {
        "banker": ["9s", "Kd"],
        "player": ["Ks", "Th"],
        "by": ["x"],
    }
    h.play_coup({"bob": {"player": 500}})
    stored = check_stored_state(h.table, stored)
    assert len(stored["shoe_coups"]) == 3
