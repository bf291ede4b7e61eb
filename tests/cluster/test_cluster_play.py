"""Many processes, one table: players connected to three different processes play a whole
shoe together (issue 11, "Three processes, players spread over them at the same
tables"). Every command a player sends goes to their own process, which relays it to
the table's owner; every process fans the table's events out to its own clients.

Checked: every coup against the rules oracle and every balance against the payouts
(tests.kit.checks), every client saw the same events in the same order (their private parts
aside) with no gap or duplicate (the recording client checks seq), and the ledger in
Redis afterwards: it sums to zero, matches every balance, and every hold has exactly
one outcome.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from server.store.redis import RedisStore
from tests.kit import Client, CoupLog, Game, open_guest, open_player, table_def
from tests.kit.checks import check_coup, check_public_views_agree, random_bets
from tests.kit.cluster import settle

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each


async def test_players_on_three_processes_play_a_whole_shoe(make_cluster: Any) -> None:
    cluster = make_cluster(3, [table_def("t1", decks=6, stop_offset=100)])
    await settle(lambda: len(cluster.owners()) == 1 and len(cluster.members()) == 3)
    nodes = cluster.nodes
    clients: dict[str, Client] = {}
    for n, node in enumerate(nodes):  # one player on each process
        client = await open_player(node.url, f"p{n + 1}", "msgpack" if n % 2 else "json")
        await client.join("t1")
        await client.call("sit", table="t1", seat=n + 1)
        clients[f"p{n + 1}"] = client
    spectator = await open_guest(nodes[1].url, "msgpack", name="Watcher")
    await spectator.join("t1")
    try:
        balances = {pid: c.hello_reply["balance"] for pid, c in clients.items()}  # type: ignore[index]
        rng = random.Random(20261130)
        game = Game("t1", clients, spectator, rng=rng)
        logs: list[CoupLog] = []
        while not spectator.events("t1", "shoe_ended"):
            log = await game.play_coup(random_bets(rng, list(clients)))
            check_coup(log, balances)
            logs.append(log)
        assert len(logs) >= (6 * 52 - 100 - 11) // 6
        for pid, client in clients.items():  # what the cashier says is what was paid
            reply = await client.call("balance")
            assert (reply["balance"], reply["available"]) == (balances[pid], balances[pid])
        check_public_views_agree(spectator, list(clients.values()), "t1")
        for client in [spectator, *clients.values()]:
            client.assert_clean()
    finally:
        for client in [spectator, *clients.values()]:
            await client.close()

    store = RedisStore(cluster.url)
    await store.open()
    try:
        audit = await store.audit()
        assert audit["sum"] == 0 and audit["ledger_matches"], audit
        assert audit["holds_ok"], audit["problems"]
        books = await store.balances(["held:t1", *(f"stake:t1:{p}" for p in clients)])
        assert set(books.values()) == {0}
    finally:
        await store.close()
