"""The server runs on either event loop (``--event-loop``, issue 36): uvloop by default,
asyncio's own when asked. Each, a real ``chemmy-server`` process: it says which loop it
runs, a guest plays a coup through it (sits, bets, the table deals and settles), the
books balance, and SIGTERM drains it to a clean exit; and a cluster of two over a real
Redis on each loop, a player on each process (the owner's commits and the relays on the
Redis connections' own protocols, on that loop's transports). (The in-process tests run on
pytest's asyncio loop; every other server process of the suite on the default.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from server.store import SQLiteStore
from tests.kit import Game
from tests.kit.client import open_guest
from tests.kit.cluster import Cluster, check_books, settle
from tests.kit.launch import ServerProcess
from tests.kit.redis import RedisServer
from tests.kit.tables import server_toml, table_def

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

LOOPS = {"uvloop": "uvloop.Loop", "asyncio": "asyncio.unix_events._UnixSelectorEventLoop"}


@pytest.mark.parametrize("loop", sorted(LOOPS))
async def test_a_coup_is_played_on_either_event_loop(tmp_path: Path, loop: str) -> None:
    tables = [table_def("t1", timers={"betting": 60})]
    server = ServerProcess(
        tmp_path, server_toml(tables, guest=True), "--event-loop", loop, "--log-level", "info"
    )
    server.start()
    try:
        assert any(f"event loop: {loop} ({LOOPS[loop]})" in line for line in server.log), list(
            server.log
        )
        ann = await open_guest(server.url, name="Ann")
        try:
            await ann.join("t1")
            await ann.call("sit", table="t1")
            game = Game("t1", {ann.player: ann}, ann, style=lambda *_: None)
            await game.to_betting()
            log = await game.play_coup({ann.player: {"banker": 100}})
            assert log.result["outcome"] and [p["stake"] for p in log.payouts] == [100]
        finally:
            await ann.close()
    finally:
        assert server.stop() == 0
    store = SQLiteStore(server.db)
    await store.open()
    try:
        audit = await store.audit()
    finally:
        await store.close()
    assert audit["sum"] == 0 and audit["ledger_matches"] and audit["holds_ok"], audit


@pytest.mark.parametrize("loop", sorted(LOOPS))
async def test_a_cluster_plays_a_coup_on_either_event_loop(
    tmp_path: Path, make_redis: Callable[..., RedisServer], loop: str
) -> None:
    cluster = Cluster(
        tmp_path, make_redis().port, [table_def("t1", timers={"betting": 60})],
        args=["--event-loop", loop, "--log-level", "info"], guest=True,
    )  # fmt: skip
    try:
        for _ in range(2):
            cluster.add()
        await settle(lambda: len(cluster.owners()) == 1 and len(cluster.members()) == 2)
        for node in cluster.nodes:
            assert any(f"event loop: {loop} ({LOOPS[loop]})" in line for line in node.log)
        players = {}
        for n, node in enumerate(cluster.nodes):  # (one of them relayed to the owner)
            client = await open_guest(node.url, name=f"P{n}")
            await client.join("t1")
            await client.call("sit", table="t1")
            players[client.player] = client
        try:
            game = Game("t1", players, next(iter(players.values())), style=lambda *_: None)
            await game.to_betting()
            log = await game.play_coup({pid: {"banker": 100} for pid in players})
            assert log.result["outcome"] and sorted(p["stake"] for p in log.payouts) == [100, 100]
        finally:
            for client in players.values():
                await client.close()
        await check_books(cluster.url, tables=["t1"])
    finally:
        cluster.stop()
