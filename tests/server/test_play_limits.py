"""A player's own limits and the reality check (issue 21), over real servers on port 0.

Limits at their edges (exactly at a limit, one minor unit over), a raise that waits 24
hours while a lowering applies at once (mid-session), chips at another table counted,
deposit limits at the cashier and at the operator's transfer API, the session's time
limit, the operator's route, a limit that holds on another process of a cluster; the
reality check that holds bets until answered, both ways; and the restriction reported
at hello. The books are audited after play.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from server.gateway.server import ChemmyServer
from server.protection import play_session
from tests.kit import Game
from tests.kit.client import Client
from tests.kit.inproc import Net
from tests.kit.operator import KEY, audited
from tests.kit.operator import SignedOperator as Operator
from tests.kit.tables import table_def

DAY = 86_400


@pytest.fixture
async def server(net: Net) -> ChemmyServer:
    return await net.start(operator_key=KEY, tables=(table_def("t1"), table_def("t2")))


@pytest.fixture
async def operator(server: ChemmyServer) -> AsyncIterator[Operator]:
    made = Operator(server.port)
    yield made
    await made.aclose()


async def seated(net: Net, server: ChemmyServer, *tables: str) -> tuple[Client, Client, Game]:
    """Ann and Bob seated at ``tables`` (the first in a game, in betting)."""
    ann = await net.player(server, "ann", name="Ann")
    bob = await net.player(server, "bob", name="Bob")
    for table in tables:
        for client in (ann, bob):
            await client.join(table)
            await client.call("sit", table=table)
    game = Game(tables[0], {"ann": ann, "bob": bob}, bob)
    await game.to_betting()
    return ann, bob, game


def later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The play sessions' clock (``server.protection.play_session.now``) ``seconds`` ahead."""
    monkeypatch.setattr(play_session, "now", lambda: time.time() + seconds)


def limit(reply: dict[str, Any], kind: str) -> dict[str, Any]:
    line = reply["limits"][kind]
    assert isinstance(line, dict)
    return line


async def test_a_loss_limit_at_its_edge_and_one_unit_over(net: Net, server: ChemmyServer) -> None:
    ann, _bob, game = await seated(net, server, "t1")
    reply = await ann.call("set_limit", kind="loss_day", amount=1000)
    line = limit(reply, "loss_day")
    assert line["amount"] == 1000 and line["by"] == "player" and "pending" not in line
    assert line["used"] == 0 and line["remaining"] == 1000
    before = await ann.call("balance")
    await ann.call("bet", table="t1", area="banker", amount=600)
    over = await ann.refused("limit_reached", "bet", table="t1", area="player", amount=401)
    assert over["limit"] == {"kind": "loss_day", "amount": 1000, "remaining": 400}
    assert "daily loss limit of 10.00" in over["message"] and "4.00 remains" in over["message"]
    after = await ann.call("balance")
    assert (after["balance"], after["available"]) == (before["balance"], before["available"] - 600)
    await ann.call("clear_bets", table="t1")
    # Placed again in the coup, the last 400 exactly at the limit.
    log = await game.play_coup({"ann": {"banker": 600, "player": 400}, "bob": {"player": 100}})
    lost = -sum(p["returned"] - p["stake"] for p in log.payouts if p["player"] == "ann")
    line = limit(await ann.call("limits"), "loss_day")
    # What she lost (never less than nothing) is used; what is left is the edge.
    assert line["used"] == max(0, lost) == max(0, before["balance"] - await ann.balance())
    assert line["remaining"] == 1000 - line["used"]
    await game.to_betting()
    left = line["remaining"]
    if left >= 100:
        await ann.call("bet", table="t1", area="banker", amount=left)
        await ann.call("clear_bets", table="t1")
    over = await ann.refused("limit_reached", "bet", table="t1", area="banker", amount=left + 1)
    assert over["limit"]["remaining"] == left
    await audited(server)


async def test_a_raise_waits_a_day_and_a_lowering_applies_at_once(
    net: Net, server: ChemmyServer
) -> None:
    ann, _bob, _game = await seated(net, server, "t1")
    await ann.call("set_limit", kind="wager_day", amount=1000)
    raised = limit(await ann.call("set_limit", kind="wager_day", amount=5000), "wager_day")
    assert raised["amount"] == 1000
    assert raised["pending"]["amount"] == 5000
    assert abs(raised["pending"]["from"] - (time.time() + DAY)) < 60
    await ann.refused("limit_reached", "bet", table="t1", area="banker", amount=1001)
    await ann.call("bet", table="t1", area="banker", amount=700)
    # Lowered mid-session below what is on the felt: it holds at once, chips stay.
    lowered = limit(await ann.call("set_limit", kind="wager_day", amount=500), "wager_day")
    assert lowered["amount"] == 500 and "pending" not in lowered
    assert lowered["used"] == 700 and lowered["remaining"] == 0
    over = await ann.refused("limit_reached", "bet", table="t1", area="banker", amount=100)
    assert over["limit"] == {"kind": "wager_day", "amount": 500, "remaining": 0}
    removed = limit(await ann.call("remove_limit", kind="wager_day"), "wager_day")
    assert removed["amount"] == 500 and removed["pending"]["amount"] is None
    await ann.refused("bad_limit", "set_limit", kind="loss_forever", amount=10)
    await ann.refused("bad_limit", "set_limit", kind="loss_day", amount=0)
    await ann.refused("bad_limit", "set_limit", kind="session", amount=1441)
    assert limit(await ann.call("limits"), "wager_day")["amount"] == 500
    await audited(server)


async def test_chips_at_another_table_count_against_a_wager_limit(
    net: Net, server: ChemmyServer
) -> None:
    ann, bob, _game = await seated(net, server, "t1", "t2")
    other = Game("t2", {"ann": ann, "bob": bob}, bob)
    await other.to_betting()
    await ann.call("bet", table="t1", area="banker", amount=600)
    await ann.call("set_limit", kind="wager_week", amount=1000)
    over = await ann.refused("limit_reached", "bet", table="t2", area="banker", amount=500)
    assert over["limit"] == {"kind": "wager_week", "amount": 1000, "remaining": 400}
    await ann.call("bet", table="t2", area="banker", amount=400)
    assert limit(await ann.call("limits"), "wager_week")["used"] == 1000
    await audited(server)


async def test_deposit_limits_at_the_cashier(net: Net, server: ChemmyServer) -> None:
    ann = await net.player(server, "ann")
    await ann.call("set_limit", kind="deposit_day", amount=5000)
    await ann.call("deposit", amount=3000, msg_id="d1")
    over = await ann.refused("limit_reached", "deposit", amount=2001, msg_id="d2")
    assert over["limit"] == {"kind": "deposit_day", "amount": 5000, "remaining": 2000}
    assert "daily deposit limit of 50.00" in over["message"]
    again = await ann.call("deposit", amount=3000, msg_id="d1")  # a retry: not a new one
    assert again["duplicate"] is True
    await ann.call("deposit", amount=2000, msg_id="d3")
    await ann.refused("limit_reached", "deposit", amount=1, msg_id="d4")
    assert limit(await ann.call("limits"), "deposit_day")["used"] == 5000
    await audited(server)


async def test_deposit_limits_at_the_transfer_api(net: Net) -> None:
    server = await net.start(wallet="transfer", operator_key=KEY)
    operator = Operator(server.port)
    try:
        body = {"transaction_id": "op-1", "player": "ann", "amount": 3000, "currency": "EUR"}
        assert (await operator.post("/operator/v1/transfers/deposit", body)).status_code == 200
        ann = await net.player(server, "ann", currency="EUR")
        await ann.call("set_limit", kind="deposit_month", amount=5000)
        over = await operator.post(
            "/operator/v1/transfers/deposit", {**body, "transaction_id": "op-2", "amount": 2001}
        )
        assert over.status_code == 409, over.text
        refused = over.json()
        assert refused["status"] == "limit_reached"
        assert refused["limit"] == {"kind": "deposit_month", "amount": 5000, "remaining": 2000}
        retry = await operator.post("/operator/v1/transfers/deposit", body)
        assert retry.status_code == 200 and retry.json()["duplicate"] is True
        ok = {**body, "transaction_id": "op-3", "amount": 2000}
        assert (await operator.post("/operator/v1/transfers/deposit", ok)).status_code == 200
        assert (await ann.balance()) == 5000
        await audited(server)
    finally:
        await operator.aclose()


async def test_the_session_time_limit_stops_bets(
    net: Net, server: ChemmyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann, _bob, _game = await seated(net, server, "t1")
    line = limit(await ann.call("set_limit", kind="session", amount=1), "session")
    assert line["amount"] == 1 and line["used"] == 0
    await ann.call("bet", table="t1", area="banker", amount=100)
    later(monkeypatch, 61)  # (a minute of play, without waiting one)
    over = await ann.refused("limit_reached", "bet", table="t1", area="banker", amount=100)
    assert over["limit"] == {"kind": "session", "amount": 1, "remaining": 0}
    assert "session time limit of 1 minutes" in over["message"]
    await ann.refused("limit_reached", "same_bet", table="t1")
    assert limit(await ann.call("limits"), "session")["remaining"] == 0
    await ann.call("clear_bets", table="t1")  # taking chips back stays allowed
    await audited(server)


@pytest.mark.slow
async def test_the_reality_check_holds_bets_until_answered(net: Net) -> None:
    server = await net.start(reality_check=0.04)  # every 2.4 s
    ann = await net.player(server, "ann", name="Ann")
    bob = await net.player(server, "bob", name="Bob")
    assert ann.hello_reply["reality_check"] == 0.04
    for client in (ann, bob):
        await client.join("t1")
        await client.call("sit", table="t1")
    game = Game("t1", {"ann": ann, "bob": bob}, bob)
    await game.to_betting()
    await ann.call("bet", table="t1", area="banker", amount=100)
    first = await ann.next_frame(lambda m: m.get("type") == "reality_check", timeout=10)
    check = first.msg
    assert check["every"] == 0.04 and check["session_seconds"] >= 2
    # The chip on the felt counts from the moment it is placed (docs/protocol.md).
    assert check["net"] == -100 and check["staked"] == 100
    refusal = await ann.refused("reality_check_due", "bet", table="t1", area="banker", amount=100)
    assert "reality check" in refusal["message"]
    assert (await ann.call("limits"))["session"]["reality_check_due"] is True
    await ann.refused("bad_choice", "reality_ack", choice="maybe")
    assert (await ann.call("reality_ack", choice="continue"))["choice"] == "continue"
    await ann.refused("no_reality_check", "reality_ack", choice="continue")
    await ann.call("bet", table="t1", area="banker", amount=100)
    await ann.wait_frame(
        lambda m: m.get("type") == "reality_check", start=first.index + 1, timeout=10
    )
    await ann.call("reality_ack", choice="leave")
    await bob.wait_event("stood", lambda m: m["data"]["player"] == "ann")
    money = await ann.call("balance")
    assert money["available"] == money["balance"]  # every chip came back
    await audited(server)


async def test_the_restriction_is_told_at_hello(net: Net, server: ChemmyServer) -> None:
    ann = await net.player(server, "ann")
    assert ann.hello_reply["restriction"] is None
    kept = (await ann.call("take_break", period="week"))["restriction"]
    again = await net.player(server, "ann")
    assert again.hello_reply["restriction"] == kept


async def test_the_operator_sets_limits_at_once(
    net: Net, server: ChemmyServer, operator: Operator
) -> None:
    ann = await net.player(server, "ann")
    await ann.call("set_limit", kind="loss_week", amount=1000)
    path = "/operator/v1/players/ann/limits"
    raised = await operator.post(path, {"changes": {"loss_week": 9000, "wager_day": 4000}})
    assert raised.status_code == 200, raised.text
    body = raised.json()
    assert body["player"] == "ann"
    assert body["limits"]["loss_week"]["amount"] == 9000  # an operator's raise: at once
    assert body["limits"]["loss_week"]["by"].startswith("operator:")
    assert "pending" not in body["limits"]["loss_week"]
    assert limit(await ann.call("limits"), "wager_day")["amount"] == 4000
    got = await operator.get(path)
    assert got.status_code == 200 and got.json()["limits"].keys() == {"loss_week", "wager_day"}
    bad = await operator.post(path, {"changes": {"loss_week": -5}})
    assert bad.status_code == 400 and bad.json()["status"] == "bad_limit"
    bad = await operator.post(path, {"limits": {}})
    assert bad.status_code == 400
    assert limit(await ann.call("limits"), "loss_week")["amount"] == 9000  # unchanged
    gone = await operator.post(path, {"changes": {"loss_week": None}})
    assert "loss_week" not in gone.json()["limits"]


async def test_the_operator_sees_the_players_play_session_while_it_goes_on(
    net: Net, server: ChemmyServer, operator: Operator
) -> None:
    """The session is the player's (server.protection.play_session): the operator reads it as
    the player's ``limits`` reply says it; one that ended (no connection of theirs for
    more than ``--session-gap``) is ``null``, and so is none at all."""
    path = "/operator/v1/players/ann/limits"
    assert (await operator.get(path)).json()["session"] is None  # never connected
    ann = await net.player(server, "ann")
    theirs = (await ann.call("limits"))["session"]
    seen = (await operator.get(path)).json()["session"]
    assert seen is not None and seen["started"] == theirs["started"]
    assert seen.keys() == theirs.keys() and seen["reality_check_due"] is False
    await ann.close()
    await asyncio.sleep(0.1)  # (its process touches the session as it closes)
    stored = await server.store.play_session("ann")
    assert stored is not None
    gap = server.config.session_gap * 60
    real = play_session.now
    try:
        play_session.now = lambda: stored["seen"] + gap + 1  # type: ignore[assignment]
        assert (await operator.get(path)).json()["session"] is None  # it ended
        play_session.now = lambda: stored["seen"] + gap - 1  # type: ignore[assignment]
        assert (await operator.get(path)).json()["session"]["started"] == theirs["started"]
    finally:
        play_session.now = real  # type: ignore[assignment]


async def test_a_limit_holds_on_another_process_of_a_cluster(net: Net, redis_url: str) -> None:
    one = await net.start(store=redis_url)
    two = await net.start(store=redis_url)
    ann_one = await net.player(one, "ann")
    ann_two = await net.player(two, "ann")
    await ann_one.call("set_limit", kind="deposit_day", amount=1000)
    await ann_two.refused("limit_reached", "deposit", amount=1001, msg_id="d1")
    assert limit(await ann_two.call("limits"), "deposit_day")["amount"] == 1000
    await asyncio.sleep(0)
