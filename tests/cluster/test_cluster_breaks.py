"""A break taken while the player's wager is in a coup, and the table's owner killed
before the coup is settled (issue 33 point 3): two real ``chemmy-server`` processes
over a real ``redis-server``.

The stand the gateway makes on the player's behalf waits for the coup's end
(``stand_after_coup``); the table keeps that in its stored state, so the process that
takes the table over after ``kill -9`` of its owner stands the player up once the coup
is settled, before the shoe is offered to anyone, and never offers it to them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.kit import Client, Game, open_player, scaled, table_def
from tests.kit.cluster import Cluster, check_books, retry

pytestmark = pytest.mark.slow  # server subprocesses: seconds each

LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60, "grace": 120}
TABLE = "t1"


async def test_a_stand_after_the_coup_survives_the_owners_death(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(2, [table_def(TABLE, timers=LONG)], command_timeout=scaled(3))
    await cluster.ready()
    owner = cluster.owner(TABLE)
    assert owner is not None
    (survivor,) = cluster.others(owner)
    old = cluster.node_name(owner)
    # Everyone is connected to the survivor: their commands go to the owner until it dies.
    clients: dict[str, Client] = {}
    for pid in ("ann", "bob", "cat", "dee"):
        clients[pid] = await open_player(survivor.url, pid)
        await clients[pid].join(TABLE)
    for seat, pid in enumerate(("ann", "bob", "cat"), start=1):
        await clients[pid].call("sit", table=TABLE, seat=seat)
    players = {pid: clients[pid] for pid in ("ann", "bob", "cat")}
    ann, dee = clients["ann"], clients["dee"]
    game = Game(TABLE, players, dee, accept=lambda pid: pid == "cat")  # cat holds the shoe
    await game.to_betting()
    await game.act("ann", "bet", area="player", amount=500)  # ann turns the Player hand
    await game.act("cat", "bet", area="banker", amount=200)
    for pid in players:
        await game.act(pid, "done")
    await ann.call("take_break", period="24h")
    waits = await dee.wait_event("stand_after_coup", table=TABLE)
    assert waits["data"] == {"player": "ann", "seat": 1}

    owner.kill()  # kill -9 mid-coup: the new owner has only the stored state
    assert await cluster.new_owner(TABLE, old) is survivor
    for n in range(10):  # the turners finish the coup through the new owner
        if dee.events(TABLE, "settled"):
            break
        turn = game.prompt()
        assert turn["kind"] == "turn", turn
        hand, turner = turn["data"]["hand"], turn["data"]["turner"]
        reply = await retry(players[turner], "toss", msg_id=f"toss-{n}", table=TABLE, hand=hand)
        await dee.wait_seq(TABLE, reply["seq"])
    settled = dee.events(TABLE, "settled")[-1]
    stood = await dee.wait_event("stood", lambda e: e["data"]["player"] == "ann", table=TABLE)
    assert stood["seq"] > settled["seq"] and stood["data"]["reason"] == "stood"
    mine = await ann.wait_event("stood", lambda e: e["data"]["player"] == "ann", table=TABLE)
    assert mine["data"]["reason"] == "break"
    await dee.wait_seq(TABLE, stood["seq"] + 1)  # the rest of its step: an offer, or betting
    offers = [e for e in dee.events(TABLE, "shoe_offered") if e["seq"] > waits["seq"]]
    assert all(e["data"]["player"] != "ann" for e in offers), offers
    await ann.refused("player_blocked", "sit", table=TABLE)
    for client in clients.values():
        await client.close()
    await check_books(cluster.url, tables=[TABLE])
