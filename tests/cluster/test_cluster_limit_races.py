"""A player's own limits hold across the processes of a cluster (issue 33), over two real
``chemmy-server`` processes on one real Redis: one player at two tables owned by two
different processes bets the whole of her daily loss limit at both at the same instant,
and eight connections of another player, four on each process, deposit at once under a
daily deposit limit that takes one deposit. Each time exactly one is taken and the rest
refused ``limit_reached``: the limit is held by the store in the commit that places the
chips or the deposit (``server.store.base.LimitGuard``), not by a lock of one process.
The books balance after.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from tests.kit import Client, Game, open_player, table_def
from tests.kit.cluster import Cluster, check_books, settle

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60}
RACES = 20


async def test_limits_hold_across_two_processes(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster(
        2,
        [table_def("t1", timers=LONG), table_def("t2", timers=LONG)],
        deposits_per_day=0,  # (no count of deposits: the limit is what is raced)
    )
    await cluster.ready(tables=2)
    await settle(lambda: len(set(cluster.owners().values())) == 2)  # one table each
    owners = {t: cluster.owner(t) for t in ("t1", "t2")}
    assert owners["t1"] is not owners["t2"]
    ann: dict[str, Client] = {}
    cat: list[Client] = []
    try:
        for table, node in owners.items():
            assert node is not None
            ann[table] = client = await open_player(node.url, "ann", label=f"ann@{table}")
            await client.join(table)
            await client.call("sit", table=table)
            await Game(table, {"ann": client}, client).to_betting()
        await ann["t1"].call("set_limit", kind="loss_day", amount=1000)
        for race in range(RACES):
            order = ["t1", "t2"] if race % 2 else ["t2", "t1"]  # who sends first
            replies = await asyncio.gather(
                *(ann[t].rpc("bet", table=t, area="banker", amount=1000) for t in order)
            )
            taken = [t for t, reply in zip(order, replies, strict=True) if reply["type"] == "ok"]
            assert len(taken) == 1, (race, replies)
            refused = [reply for reply in replies if reply["type"] == "error"]
            assert refused[0]["code"] == "limit_reached", (race, refused)
            await ann[taken[0]].call("clear_bets", table=taken[0])

        nodes = [node for node in owners.values() if node is not None]
        for race in range(RACES // 4):
            pid = f"cat{race}"  # (a player's raised limit waits a day: a new one each race)
            cat = [await open_player(nodes[n % 2].url, pid, label=f"{pid}.{n}") for n in range(8)]
            await cat[0].call("set_limit", kind="deposit_day", amount=5100)
            replies = await asyncio.gather(
                *(c.rpc("deposit", amount=5000, msg_id=f"d{n}") for n, c in enumerate(cat))
            )
            assert sum(reply["type"] == "ok" for reply in replies) == 1, (race, replies)
            assert all(r["code"] == "limit_reached" for r in replies if r["type"] == "error")
            for client in cat:
                await client.close()
    finally:
        for client in [*ann.values(), *cat]:
            await client.close()
    # Conserved, every hold one outcome, nothing staked; ann's chips all came back.
    books = await check_books(cluster.url, tables=["t1", "t2"])
    assert books["balances"]["player:cat0"] == books["balances"]["player:cat1"]
