"""Bettors without a seat survive the loss of the table's process (GAME_RULES §5, §8;
issue 37): real ``chemmy-server`` processes over a real ``redis-server``, real players
over real sockets.

Alice sits (she holds the shoe and turns the Banker hand) on one process; three
bettors without a seat bet beside her: Bob (the highest Player bet: he turns the
Player hand) on a second process, Dee on the table's owner, Eve on Alice's process.
Betting closes with every wager held; their wagers are in the bettors' stored parts,
never in the row. ``kill -9`` the owner: another process takes the table, the round goes
on with the same cards and the same held wagers (Dee comes back through another process
and finds hers), Bob turns his hand, each bettor's result reaches only them, and the
books balance with nothing held or staked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.kit import Client, Game, open_player, scaled, table_def
from tests.kit.cluster import Cluster, check_books, come_back, retry, stored_row

pytestmark = pytest.mark.slow  # server subprocesses: seconds

TABLE = "rail"
LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60, "grace": 120}
WAGERS = {
    "bob": {"player": 2_000},
    "dee": {"banker": 500, "tie": 100},
    "eve": {"player": 300, "banker_pair": 100},
}


async def test_kill_the_owner_with_bettors_wagers_held(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(
        3, [table_def(TABLE, name="Rail", timers=LONG)], command_timeout=scaled(3)
    )
    await cluster.ready()
    owner = cluster.owner(TABLE)
    assert owner is not None
    first, second = cluster.others(owner)
    where = {"alice": first, "bob": second, "dee": owner, "eve": first}
    clients: dict[str, Client] = {}
    for name, node in where.items():
        clients[name] = await open_player(node.url, name, "msgpack" if name == "bob" else "json")
        await clients[name].join(TABLE)
    alice = clients["alice"]
    try:
        await alice.call("sit", table=TABLE)
        game = Game(TABLE, {"alice": alice}, alice)
        await game.to_betting()
        for name, bets in WAGERS.items():  # bets without a seat, each at their process
            for area, amount in bets.items():
                await retry(clients[name], "bet", msg_id=f"{name}-{area}", table=TABLE,
                            area=area, amount=amount)  # fmt: skip
        await game.act("alice", "bet", area="banker", amount=100)
        reply = await game.act("alice", "done")  # the bettors are not waited for
        closed = await alice.wait_event("betting_closed", table=TABLE, after=reply["seq"] - 3)
        rid = str(closed["data"]["round_id"])
        assert closed["data"]["bettors"] == 3
        assert set(closed["data"]["bets"]) == {"alice", "bob"}  # bob turns: public
        dealt = await alice.wait_event("dealt", table=TABLE, after=closed["seq"] - 1)
        assert dealt["data"]["turners"] == {"player": "bob", "banker": "alice"}

        # Stored: the row holds Alice alone; each bettor's wager is in their part.
        row = await stored_row(cluster.url, TABLE)
        assert row.state is not None and row.state["phase"] == "turn"
        assert set(row.state["coup"]["held"]) == {"alice"}
        assert row.parts is not None and set(row.parts) == set(WAGERS)
        assert {p: part["held"] for p, part in row.parts.items()} == WAGERS

        # kill -9 the owner with every wager held; Dee was on it: she comes back.
        old = cluster.node_name(owner)
        owner.kill()
        new = await cluster.new_owner(TABLE, old)
        assert new is not owner
        reply = await come_back(clients["dee"], first.url, TABLE)
        assert reply["resumed"] is True
        snap = (await retry(clients["dee"], "join", msg_id="dee-join", table=TABLE))["snapshot"]
        assert snap["you"]["bets"] == WAGERS["dee"]  # her wager, held as it was
        assert snap["coup"]["round_id"] == rid and snap["felt"]["bettors"] == 3

        # Bob turns the Player hand, Alice the Banker hand: the coup settles.
        # (The turn events up to Bob's toss are done with; Alice's toss may start a third
        # card's turn, after them.)
        tossed = await retry(clients["bob"], "toss", msg_id="bob-toss", table=TABLE, hand="player")
        seen = tossed["seq"]
        await retry(alice, "toss", msg_id="alice-toss", table=TABLE, hand="banker")
        while True:  # third cards, tossed by their turners, until the coup settles
            # The last toss's reply can come before Alice (on another process) hears the
            # settlement: wait for whichever of the two comes next.
            turn = await alice.wait_frame(
                lambda m, seen=seen: (
                    m.get("type") == "event"
                    and m.get("table") == TABLE
                    and m.get("kind") in ("turn", "settled")
                    and m.get("seq", 0) > seen
                ),
                timeout=scaled(10),
                what="turn or settled",
            )
            if turn["kind"] == "settled":
                break
            seen = turn["seq"]
            who = clients[turn["data"]["turner"]]
            await retry(
                who, "toss", msg_id=f"t{turn['seq']}", table=TABLE, hand=turn["data"]["hand"]
            )
        settled = await alice.wait_event("settled", table=TABLE)
        assert settled["data"]["round_id"] == rid

        # Each bettor's result reaches only them; the others see the felt.
        for name, client in clients.items():
            mine = await client.wait_event(
                "settled", lambda e: e["data"]["round_id"] == rid, table=TABLE
            )
            if name == "alice":
                continue
            own = mine["data"]["own"]
            assert {(p["area"], p["stake"]) for p in own} == set(WAGERS[name].items())
            others = set(WAGERS) - {name, "bob"}  # bob turned: his payouts are public
            seen = json.dumps([f.msg for f in client.frames])
            assert not any(f'"{o}"' in seen for o in others), (name, others)
        record = await stored_row(cluster.url, TABLE)
        assert record.parts is None  # nothing of the bettors is in play any more
    finally:
        for client in clients.values():
            await client.close()
    books = await check_books(cluster.url, tables=[TABLE])
    assert rid in books["rounds"]
    balances: dict[str, Any] = books["balances"]
    assert not any(v for a, v in balances.items() if a.startswith("held:"))
