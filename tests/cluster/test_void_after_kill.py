"""A round voided after ``kill -9`` of its table's owner (issue 21, docs/operations.md §8):
two real ``chemmy-server`` processes over a real ``redis-server`` (AOF on), the crash
table's three players on real WebSocket connections.

The coup is dealt and under way (betting closed, every wager held, bob squeezing the
Player hand) when the owning process is killed. The other process takes the table over
(the lease runs out), bob and carol, whose process died, come back through it, and the
operator voids the round through it over HTTP with a reason. Then: every wager came back
exactly once (one ``hold`` and one ``void`` per bet, each balance exact to the minor unit),
the audit is exact (every hold has exactly one outcome), the round is void with its
reason in ``GET /operator/v1/rounds/{id}`` and in each player's ``history``, every player
was told (``voided``), and the table plays its next coup to settlement.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from server.wallet.signing import signature_header
from tests.kit import Client, open_player, scaled, table_def
from tests.kit.cluster import Cluster, check_books, come_back, stored_row
from tests.kit.crash import BETS, PLAYERS, STEP, TABLE, Table
from tests.server.test_operator_voids import KEY, Back

pytestmark = pytest.mark.slow  # server subprocesses: seconds each

LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60, "grace": 120}
REASON = "the owning process died mid-coup"


async def signed_get(back: Back, target: str) -> dict[str, Any]:
    """A signed ``GET`` of the operator API, answered 200; its JSON."""
    header = signature_header(back.key, time.time(), "GET", target, b"")
    answer = await back.http.get(target, headers={"Chemmy-Signature": header})
    assert answer.status_code == 200, (target, answer.status_code, answer.text)
    return dict(answer.json())


async def void_until_answered(back: Back, rid: str) -> tuple[httpx.Response, Counter[str]]:
    """The operator's void, tried again while the table is between owners: ``503`` (no
    owner to take it: nothing voided) or ``504`` (sent to the dead owner, whose bus
    channel nobody reads any more: nothing voided either). The answer, and the
    refusals before it."""
    deadline = time.monotonic() + scaled(60)
    tries: Counter[str] = Counter()
    while True:
        answer = await back.void(rid, REASON)
        if answer.status_code not in (503, 504) or time.monotonic() > deadline:
            print(f"the void: {answer.status_code} after {dict(tries) or 'no refusal'}")
            return answer, tries
        tries[f"{answer.status_code} {answer.json().get('status')}"] += 1
        await asyncio.sleep(0.1)


async def come_back_all(clients: dict[str, Client], url: str) -> None:
    """bob and carol, whose process died, resume the table through ``url``."""
    for name in ("bob", "carol"):
        reply = await come_back(clients[name], url, TABLE)
        assert reply["resumed"] is True, reply


@pytest.mark.parametrize("when", ["after_the_takeover", "before_the_takeover"])
async def test_a_coup_held_when_its_owner_is_killed_is_voided_through_the_survivor(
    make_cluster: Callable[..., Cluster], when: str
) -> None:
    """``after_the_takeover``: bob and carol are back (through the survivor, which
    now owns the table) when the operator voids, and are told live.
    ``before_the_takeover``: the operator voids at once, while the dead process still
    holds the lease (tried again until the survivor has the table); bob and carol come
    back afterwards and are told by the events they missed."""
    cluster = make_cluster(
        2,
        [table_def(TABLE, name="Crash", timers=LONG)],
        operator_key=KEY,
        command_timeout=scaled(3),
    )
    await cluster.ready()
    owner = cluster.owner(TABLE)
    assert owner is not None
    (survivor,) = cluster.others(owner)
    old = cluster.node_name(owner)
    # alice (whose stream drives the kit's table) is on the survivor; bob, who turns the
    # Player hand, and carol are on the process that will be killed.
    where = {"alice": survivor, "bob": owner, "carol": owner}
    clients: dict[str, Client] = {}
    for name in PLAYERS:
        clients[name] = await open_player(where[name].url, name, timeout=STEP)
        await clients[name].join(TABLE)
    for name in PLAYERS:
        await clients[name].call("sit", table=TABLE)
    table = Table(clients, {})
    back = Back(survivor.port)
    try:
        await table.to_betting()
        before = {name: await clients[name].balance() for name in PLAYERS}
        await table.place_bets()
        rid = await table.press_done()
        assert await table.play_turns(stop_at_squeeze=True) is None  # bob squeezes
        state = (await stored_row(cluster.url, TABLE)).state
        assert state is not None and state["phase"] == "turn"
        assert state["coup"]["round_id"] == rid  # betting closed: the wagers are held
        held = {name: sum(BETS[name].values()) for name in PLAYERS}
        for name in PLAYERS:
            assert await clients[name].balance() == before[name] - held[name]

        owner.kill()  # kill -9, mid-coup
        if when == "after_the_takeover":
            assert await cluster.new_owner(TABLE, old) is survivor
            await come_back_all(clients, survivor.url)
            # §8's procedure: pause first, so that no new coup starts once it is voided.
            paused = await back.post(f"/operator/v1/tables/{TABLE}/pause")
            assert paused.status_code == 200 and paused.json()["paused"] is True, paused.text
        answer, tries = await void_until_answered(back, rid)
        if when == "before_the_takeover":
            assert tries, "the void was answered before the table could have moved"
            assert cluster.owner(TABLE) is survivor
            await come_back_all(clients, survivor.url)
        assert answer.status_code == 200, answer.text
        assert answer.json() | {"seq": 0} == {
            "table": TABLE,
            "round_id": rid,
            "voided": True,
            "seq": 0,
            "by": "operator-key",
        }
        told: dict[str, int] = {}
        for name in PLAYERS:  # every player, reconnected or not, is told
            voided = await clients[name].wait_event("voided", table=TABLE)
            told[name] = voided["seq"]
            data = voided["data"]
            assert data["round_id"] == rid and data["reason"] == REASON, data
            assert data["refunded"] == held, data
            assert data["balance"] == data["available"] == before[name], (name, data)
            assert await clients[name].balance() == before[name]
        again = await back.void(rid, REASON)
        assert again.status_code == 409 and again.json()["status"] == "already_settled"

        # The books: one hold and one void per wager of the round, nothing else.
        books = await check_books(cluster.url, tables=[TABLE])
        moved = Counter(
            (e.kind, e.key, e.amount)
            for e in books["entries"]
            if e.round_id == rid and e.kind in ("hold", "void", "lose", "return", "win", "refund")
        )
        expected = Counter(
            (kind, f"{rid}:{name}:{area}:{kind}", stake)
            for name in PLAYERS
            for area, stake in BETS[name].items()
            for kind in ("hold", "void")
        )
        assert moved == expected, (moved, expected)
        assert books["audit"]["holds_ok"] and not books["audit"]["problems"]
        for name in PLAYERS:
            assert books["balances"][f"player:{name}"] == before[name]

        # The round is void with its reason for the operator and in every history.
        report = await signed_get(back, f"/operator/v1/rounds/{rid}")
        record = report["round"]
        assert record["void"] is True and record["reason"] == REASON, record
        assert record["voided_in"] == "turn" and record["currency"] is None  # play money
        assert report["currency"] is None
        assert report["money"] == {
            "staked": sum(held.values()),
            "returned": sum(held.values()),
            "commission": 0,
            "house_result": 0,
        }
        for name in PLAYERS:
            rounds = (await clients[name].call("history", limit=5))["rounds"]
            (mine,) = [r for r in rounds if r["round_id"] == rid]
            assert mine["void"] is True and mine["reason"] == REASON, mine
            returned = {b["area"]: b["returned"] for b in mine["bets"] if b["player"] == name}
            assert returned == BETS[name], (name, mine["bets"])

        # Play goes on: the next round opens under a new id (once resumed, if paused) and
        # is played to the end.
        alice = clients["alice"]
        if when == "after_the_takeover":
            # paused: the void opened no betting (it would have come in the void's step)
            early = [e for e in alice.events(TABLE, "betting_opened") if e["seq"] > told["alice"]]
            assert not early, early
            resumed = await back.post(f"/operator/v1/tables/{TABLE}/resume")
            assert resumed.status_code == 200 and resumed.json()["paused"] is False, resumed.text
        opened = await alice.wait_event("betting_opened", table=TABLE, after=told["alice"])
        assert opened["data"]["round_id"] != rid
        await table.to_betting()
        await table.place_bets()
        next_rid = await table.press_done()
        assert next_rid != rid
        settled = await table.play_turns()
        assert settled is not None and settled["data"]["round_id"] == next_rid
        for client in clients.values():
            client.assert_clean()
    finally:
        await back.http.aclose()
        for client in clients.values():
            await client.close()
    books = await check_books(cluster.url, tables=[TABLE])
    assert {rid, next_rid} <= set(books["rounds"])
