"""Time-out and self-exclusion (issue 21) over real servers on port 0.

A break refuses ``sit``, ``bet``, ``same_bet`` and ``accept_shoe`` with
``player_blocked`` and sends the chips already placed back (the books audited after); it
holds after a restart (the same SQLite file) and on another process sharing one Redis;
an operator sets and lifts one through the signed API; a player cannot shorten a
self-exclusion. A break (the player's or an operator's) while the player's wager is in a
coup stands them once it is settled, before the shoe is offered to anyone, also across a
restart in between (issue 33).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from server.gateway.server import ChemmyServer
from tests.kit import Client, CoupLog, Game, table_def
from tests.kit.inproc import Net
from tests.kit.operator import KEY, audited
from tests.kit.operator import SignedOperator as Operator

DAY = 86_400


@pytest.fixture
async def operator(server: ChemmyServer) -> AsyncIterator[Operator]:
    made = Operator(server.port)
    yield made
    await made.aclose()


@pytest.fixture
async def server(net: Net) -> ChemmyServer:
    return await net.start(operator_key=KEY)


async def test_a_break_refuses_sit_and_bet_and_returns_the_chips(
    net: Net, server: ChemmyServer
) -> None:
    ann, bob, game = await net.seated_pair(server)
    before = await ann.balance()
    await ann.call("bet", table="t1", area="banker", amount=300)
    assert (await ann.call("balance"))["available"] == before - 300
    assert (await ann.call("responsible"))["restriction"] is None

    reply = await ann.call("take_break", period="24h")
    kept = reply["restriction"]
    assert kept["kind"] == "break" and kept["by"] == "player"
    assert abs(kept["until"] - (time.time() + DAY)) < 60
    # Her chips go back, and she stands, as the other player sees.
    await bob.wait_event("bets", lambda m: m["data"]["player"] == "ann" and not m["data"]["bets"])
    await bob.wait_event("stood", lambda m: m["data"]["player"] == "ann")
    money = await ann.call("balance")
    assert money["available"] == money["balance"] == before
    refusal = await ann.refused("player_blocked", "bet", table="t1", area="banker", amount=100)
    assert "break" in refusal["message"] and "UTC" in refusal["message"]
    await ann.refused("player_blocked", "same_bet", table="t1")
    await ann.refused("player_blocked", "sit", table="t1")
    await ann.refused("bad_period", "take_break", period="forever")
    assert (await ann.call("responsible"))["restriction"] == kept
    del game.players["ann"]  # the others play on (the shoe may go round to them first)
    await game.to_betting()
    await bob.call("bet", table="t1", area="player", amount=100)
    await audited(server)


async def test_a_player_never_shortens_a_self_exclusion(net: Net, server: ChemmyServer) -> None:
    ann = await net.player(server, "ann")
    long = (await ann.call("take_break", period="exclude_6m"))["restriction"]
    assert long["kind"] == "exclusion" and long["until"] > time.time() + 180 * DAY
    assert (await ann.call("take_break", period="24h"))["restriction"] == long
    assert (await ann.call("responsible"))["restriction"] == long
    longer = (await ann.call("take_break", period="exclude_1y"))["restriction"]
    assert longer["until"] > long["until"]
    await ann.join("t1")
    refusal = await ann.refused("player_blocked", "sit", table="t1")
    assert "excluded yourself" in refusal["message"]


async def test_the_exclusion_survives_a_restart(net: Net) -> None:
    first = await net.start()
    ann = await net.player(first, "ann")
    await ann.call("take_break", period="exclude_5y")
    await ann.close()
    await net.stop(first)
    again = await net.start()  # the same SQLite file
    ann = await net.player(again, "ann")
    assert (await ann.call("responsible"))["restriction"]["kind"] == "exclusion"
    await ann.join("t1")
    await ann.refused("player_blocked", "sit", table="t1")


async def test_it_holds_on_another_process_of_a_cluster(net: Net, redis_url: str) -> None:
    one = await net.start(store=redis_url)
    two = await net.start(store=redis_url)
    ann_one = await net.player(one, "ann")
    ann_two = await net.player(two, "ann")
    await ann_two.join("t1")
    await ann_one.call("take_break", period="week")
    await ann_two.refused("player_blocked", "sit", table="t1")
    assert (await ann_two.call("responsible"))["restriction"]["kind"] == "break"


async def test_an_operator_sets_and_lifts_a_time_out(
    net: Net, server: ChemmyServer, operator: Operator
) -> None:
    path = "/operator/v1/players/ann/restriction"
    got = await operator.get(path)
    assert got.status_code == 200 and got.json() == {"player": "ann", "restriction": None}
    ann = await net.player(server, "ann")
    await ann.join("t1")
    await ann.call("sit", table="t1")
    await ann.call("stand", table="t1")
    set_ = await operator.post(path, {"period": "month"})
    assert set_.status_code == 200, set_.text
    kept = set_.json()["restriction"]
    assert kept["kind"] == "break" and kept["by"] == "operator:operator-key"
    assert (await operator.get(path)).json()["restriction"] == kept
    await ann.refused("player_blocked", "sit", table="t1")
    # The player may not shorten it; the operator lifts it.
    assert (await ann.call("take_break", period="24h"))["restriction"] == kept
    lifted = await operator.post(path, {"lift": True})
    assert lifted.status_code == 200 and lifted.json()["restriction"] is None
    await ann.call("sit", table="t1")
    until = time.time() + 183 * DAY
    excl = await operator.post(path, {"kind": "exclusion", "until": until})
    assert excl.json()["restriction"]["until"] == until
    for bad in ({"period": "nap"}, {"kind": "break"}, {"lift": False}, {}):
        refused = await operator.post(path, bad)
        assert refused.status_code == 400 and refused.json()["status"] == "bad_request"
    unsigned = await operator.http.get(path)
    assert unsigned.status_code == 401
    await audited(server)


async def test_a_bet_sent_just_before_the_break_is_cleared_too(
    net: Net, server: ChemmyServer
) -> None:
    ann = await net.player(server, "ann")
    await ann.join("t1")
    await ann.call("sit", table="t1")
    game = Game("t1", {"ann": ann}, ann)
    await game.to_betting()
    before = await ann.balance()
    await ann.send_command("bet", table="t1", area="player", amount=500)  # not waited for
    await ann.call("take_break", period="24h")
    await ann.wait_event("stood", lambda m: m["data"]["player"] == "ann")
    money = await ann.call("balance")
    assert money["available"] == money["balance"] == before
    await audited(server)


async def test_an_operator_on_one_process_returns_chips_placed_through_another(
    net: Net, redis_url: str
) -> None:
    one = await net.start(store=redis_url, operator_key=KEY)
    two = await net.start(store=redis_url, operator_key=KEY)
    ann = await net.player(two, "ann")
    await ann.join("t1")
    await ann.call("sit", table="t1")
    game = Game("t1", {"ann": ann}, ann)
    await game.to_betting()
    before = await ann.balance()
    await ann.call("bet", table="t1", area="banker", amount=400)
    operator = Operator(one.port)
    try:
        reply = await operator.post("/operator/v1/players/ann/restriction", {"period": "24h"})
        assert reply.status_code == 200, reply.text
    finally:
        await operator.aclose()
    await ann.wait_event("stood", lambda m: m["data"]["player"] == "ann")
    money = await ann.call("balance")
    assert money["available"] == money["balance"] == before
    await ann.refused("player_blocked", "sit", table="t1")
    await audited(two)


# -- a break while the player's wager is in a coup (issue 33 point 3) -------------------
#: Long enough that no timer fires while the test drives the table itself.
SLOW = {"betting": 30, "squeeze": 30, "third_card": 30, "shoe_offer": 30, "cut": 30}


async def _mid_coup(
    net: Net, server: ChemmyServer
) -> tuple[dict[str, Client], Client, Game, CoupLog, int]:
    """ann (seat 1), bob (2) and cat (3) seated at t1, cat holding the shoe (a Player win
    passes it to the seat after hers: ann's), dee watching; a coup dealt with ann's 500
    on Player (she turns it) and cat's 200 on Banker. Returns the players, the watcher,
    the game, the coup's log and the watcher's frame where it began."""
    dee = await net.player(server, "dee", "msgpack")
    await dee.join("t1")
    players = {}
    for seat, pid in enumerate(("ann", "bob", "cat"), start=1):
        players[pid] = client = await net.player(server, pid)
        await client.join("t1")
        await client.call("sit", table="t1", seat=seat)
    game = Game("t1", players, dee, accept=lambda pid: pid == "cat")
    opened = await game.to_betting()
    assert game.holder() == "cat"
    start = len(dee.frames)
    await game.act("ann", "bet", area="player", amount=500)
    await game.act("cat", "bet", area="banker", amount=200)
    for pid in players:
        await game.act(pid, "done")  # dealt
    await dee.wait_event("dealt", table="t1", start=start)
    log = CoupLog(opened["data"]["round_id"], opened["data"]["coup_no"], "cat", {})
    return players, dee, game, log, start


async def _stood_after_the_coup(
    players: dict[str, Client], dee: Client, game: Game, log: CoupLog, start: int, broke: int
) -> None:
    """The coup plays out (ann turns her cards); ann stands once it is settled, before
    any offer of the shoe, which is never made to her; her copy says why."""
    await game.settle(log, start)
    ann = players["ann"]
    stood = await dee.wait_event("stood", lambda m: m["data"]["player"] == "ann", table="t1")
    settled = dee.events("t1", "settled", start=start)[-1]
    assert stood["seq"] > settled["seq"] and stood["data"]["reason"] == "stood"  # everyone's
    mine = await ann.wait_event("stood", lambda m: m["data"]["player"] == "ann", table="t1")
    assert mine["data"]["reason"] == "break"  # hers
    await dee.wait_seq("t1", stood["seq"] + 1)  # the rest of the step: an offer, or betting
    offers = [e for e in dee.events("t1", "shoe_offered") if e["seq"] > broke]
    assert all(e["data"]["player"] != "ann" for e in offers), offers
    assert all(e["seq"] > stood["seq"] for e in offers)
    await ann.refused("player_blocked", "sit", table="t1")
    del game.players["ann"]
    await game.to_betting()  # the others play on


async def test_a_break_mid_coup_stands_the_player_once_it_is_settled(net: Net) -> None:
    server = await net.start(operator_key=KEY, tables=(table_def("t1", timers=SLOW),))
    players, dee, game, log, start = await _mid_coup(net, server)
    ann = players["ann"]
    await ann.refused("wager_in_play", "stand", table="t1")  # her own stand still waits
    await ann.call("take_break", period="24h")
    waits = await dee.wait_event("stand_after_coup", table="t1")
    assert waits["data"] == {"player": "ann", "seat": 1}
    mine = await ann.wait_event("stand_after_coup", table="t1")
    assert mine["data"] == {"player": "ann", "seat": 1, "reason": "break"}
    await ann.refused("player_blocked", "accept_shoe", table="t1")  # never hers on a break
    await _stood_after_the_coup(players, dee, game, log, start, waits["seq"])
    await audited(server)


async def test_an_operators_exclusion_mid_coup_waits_for_the_settlement(net: Net) -> None:
    server = await net.start(operator_key=KEY, tables=(table_def("t1", timers=SLOW),))
    players, dee, game, log, start = await _mid_coup(net, server)
    operator = Operator(server.port)
    try:
        reply = await operator.post(
            "/operator/v1/players/ann/restriction", {"period": "exclude_6m"}
        )
        assert reply.status_code == 200, reply.text
    finally:
        await operator.aclose()
    waits = await dee.wait_event("stand_after_coup", table="t1")
    await _stood_after_the_coup(players, dee, game, log, start, waits["seq"])
    await audited(server)


async def test_a_stand_after_the_coup_survives_a_restart(net: Net) -> None:
    config = {"operator_key": KEY, "tables": (table_def("t1", timers=SLOW),)}
    server = await net.start(**config)
    players, dee, game, log, start = await _mid_coup(net, server)
    await players["ann"].call("take_break", period="week")
    waits = await dee.wait_event("stand_after_coup", table="t1")
    await net.stop(server)  # the step was stored before it was sent: the table keeps it
    again = await net.start(**config)  # the same SQLite file
    for client in (*players.values(), dee):
        client.url = f"ws://127.0.0.1:{again.port}/"
        reply = await client.reconnect("t1")
        assert reply is not None and reply["resumed"] is True
    seats = (await dee.call("join", table="t1"))["snapshot"]["seats"]
    assert [s["player"] for s in seats] == ["ann", "bob", "cat"]  # still seated, mid-coup
    start = len(dee.frames)
    await _stood_after_the_coup(players, dee, game, log, start, waits["seq"])
    await audited(again)
