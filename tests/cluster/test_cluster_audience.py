"""A routed cluster publishes a table's steps only while another process hears it
(``server.bus.audience``, placement by players; issue 36). Two real server processes over
a real Redis, two tables both run by one process P (their players are there):

- t1's clients are all on P: once P's mark from taking it is over, its steps stay home (a
  whole coup with no ``SPUBLISH``, ``chemmy_bus_unpublished_steps`` counting them);
- t2 has a spectator on the other process Q, and its game is driven from what that
  spectator sees: every step must reach Q live, first by the mark of its relayed join,
  then, once that is over, because Q's line of watchers lists t2.

The books hold after both.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest
import redis.asyncio as aioredis

from server.bus.audience import HOLD
from server.bus.channels import event_channel
from tests.kit import Client, Game, open_guest, open_player, table_def
from tests.kit.checks import check_coup, random_bets
from tests.kit.cluster import LEASE, check_books, metric, settle
from tests.kit.timing import scaled

UNPUBLISHED = "chemmy_bus_unpublished_steps"


def spublished(cluster_: Any) -> int:
    return int(cluster_.redis.info("commandstats").get("cmdstat_spublish", {}).get("calls", 0))


@pytest.mark.slow  # two server processes, coups until the marks are over
async def test_steps_go_out_only_to_a_process_that_hears_them_by_its_join_then_its_line(
    make_cluster: Any,
) -> None:
    tables = ["t1", "t2"]
    cluster_ = make_cluster(
        2, [table_def(t, decks=6, stop_offset=100) for t in tables], placement="players"
    )
    await cluster_.ready(tables=2)
    here = cluster_.owner("t1")
    assert here is not None
    there = cluster_.others(here)[0]
    players: dict[str, dict[str, Client]] = {"t1": {}, "t2": {}}
    for table, (one, two) in zip(tables, [(1, 2), (3, 4)], strict=True):
        for n in (one, two):
            client = await open_player(here.url, f"p{n}", "msgpack" if n % 2 else "json")
            await client.join(table)
            await client.call("sit", table=table, seat=n)
            players[table][f"p{n}"] = client
    home = await open_guest(here.url, "json", name="Home")
    await home.join("t1")
    await home.join("t2")
    away = await open_guest(there.url, "msgpack", name="Away")
    await away.join("t2")
    clients = [home, away, *players["t1"].values(), *players["t2"].values()]
    raw = aioredis.Redis.from_url(cluster_.url)
    heard = raw.pubsub()
    await heard.ssubscribe(event_channel("t1"))
    try:
        # Both tables run on ``here``, where their watchers are (t2's three to one).
        name = cluster_.node_name(here)
        await settle(lambda: cluster_.owners() == dict.fromkeys(tables, name), timeout=LEASE * 4)
        placed = time.monotonic()  # (the marks of the join, and of taking t2, from before)
        balances = {
            pid: c.hello_reply["balance"]  # type: ignore[index]
            for seated in players.values()
            for pid, c in seated.items()
        }
        rng = random.Random(20261208)
        games = {
            "t1": Game("t1", players["t1"], home, rng=rng),
            "t2": Game("t2", players["t2"], away, rng=rng),  # (waits on what Q shows)
        }

        async def carried() -> int:
            """The messages Redis carried on t1's channel since the last call (a PING's
            answer marks the end)."""
            await heard.ping()
            count = 0
            while (message := await heard.get_message(timeout=scaled(2.0))) is not None:
                if message["type"] == "pong":
                    return count
                count += message["type"] == "smessage"
            return count

        async def coup(table: str) -> int:
            """Play a coup of ``table``; the messages Redis carried meanwhile: on t1's
            own channel for t1, every SPUBLISH for t2."""
            before = spublished(cluster_) if table == "t2" else await carried()
            seated = list(players[table])
            check_coup(await games[table].play_coup(random_bets(rng, seated)), balances)
            return spublished(cluster_) - before if table == "t2" else await carried()

        home_only = 0  # t1's coups with nothing published
        until = time.monotonic() + scaled(HOLD * 4)
        while home_only == 0 or time.monotonic() - placed < HOLD + 2:
            assert time.monotonic() < until, "t1 published every step, or t2 stopped"
            if await coup("t1") == 0:
                home_only += 1
            assert await coup("t2") > 0  # (Q hears t2: by its join, then by its line)
            await asyncio.sleep(0.3)
        # The join's mark over: t2 still goes out (Q's line), and t1 stays home.
        assert await coup("t2") > 0 and await coup("t1") == 0
        assert await metric(here, UNPUBLISHED) > 0
        assert await metric(there, UNPUBLISHED) == 0  # (it runs no table with events)
        for client in clients:
            client.assert_clean()
    finally:
        for client in clients:
            await client.close()
        await heard.aclose()
        await raw.aclose()
    await check_books(cluster_.url, tables=tables)
