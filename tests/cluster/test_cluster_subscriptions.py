"""Subscriptions where someone listens (issue 22), over real server processes on a real
Redis.

A process subscribes to a table's event channel (``chemmy:{<table>}:ev``, sharded
pub/sub) only while a client of its own watches it and another process owns it (the
owner's clients hear its steps from the owner itself, never back from Redis: issue 36):

- a process with no watcher at a busy table receives none of its events (counted by the
  bus, per table, on ``/metrics``), starts when a client of its own joins, and stops
  again when the last one leaves;
- a client that joins during a burst of events (the first watcher at its process: the
  subscription is made and confirmed before the join is sent) misses none and gets none
  twice: after its snapshot's seq, exactly seq+1, seq+2... in order;
- a step's events reach a client of another process before the reply to its command;
- a process whose pub/sub connection is cut (``CLIENT KILL``) subscribes again to
  exactly its tables, and its watchers miss nothing.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from tests.kit import Client, Game, open_guest, open_player, scaled, table_def
from tests.kit.client import http_get
from tests.kit.cluster import Cluster, settle
from tests.kit.launch import ServerProcess

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

TABLES = [table_def("t1", timers={"betting": 3600}), table_def("t2", timers={"betting": 3600})]


async def received(node: ServerProcess, table: str) -> float:
    """How many event messages of ``table`` the process received from Redis (its
    ``/metrics``, refreshed every second)."""
    status, _headers, body = await http_get(node.port, "/metrics")
    assert status == 200, status
    found = re.search(rf'^chemmy_bus_event_messages{{table="{table}"}} (\S+)$', body.decode(), re.M)
    return float(found.group(1)) if found else 0.0


async def two_processes(make_cluster: Any) -> tuple[Cluster, ServerProcess, ServerProcess]:
    """Two processes, t1 and t2 (one each); (cluster, t1's owner, the other)."""
    cluster = make_cluster(2, TABLES)
    await cluster.ready(tables=2)
    await settle(lambda: len(set(cluster.owners().values())) == 2)  # one table each
    owner = cluster.owner("t1")
    assert owner is not None
    (other,) = cluster.others(owner)
    return cluster, owner, other


async def seated(url: str, player: str, table: str = "t1") -> Client:
    """A player at ``table``, seated, with betting open."""
    client = await open_player(url, player)
    await client.join(table)
    await client.call("sit", table=table)
    await Game(table, {player: client}, client).to_betting()
    return client


async def flip(bot: Client, n: int, table: str = "t1") -> dict[str, Any]:
    """One step: a chip on Player, or taken back (the ok reply)."""
    if n % 2 == 0:
        return await bot.call("bet", table=table, area="player", amount=100)
    return await bot.call("remove_bet", table=table, area="player")


async def test_a_process_with_no_watcher_receives_none_of_a_busy_tables_events(
    make_cluster: Any,
) -> None:
    cluster, owner, other = await two_processes(make_cluster)
    bot = await seated(owner.url, "bot")
    try:
        await asyncio.sleep(scaled(1.5))  # /metrics is refreshed every second
        # (it may have owned t1 for a moment as the two processes started)
        before = await received(other, "t1")
        for n in range(60):
            await flip(bot, n)
        await asyncio.sleep(scaled(1.5))
        assert await received(other, "t1") == before
        # Nobody listens: the owner's own watcher (the bot) hears it from the owner.
        assert cluster.redis.execute_command("PUBSUB", "SHARDNUMSUB", "chemmy:{t1}:ev")[1] == 0
        assert await received(owner, "t1") == 0
        # A client of its own joins: it hears the table from now on...
        watcher = await open_guest(other.url)
        await watcher.join("t1")
        assert cluster.redis.execute_command("PUBSUB", "SHARDNUMSUB", "chemmy:{t1}:ev")[1] == 1
        for n in range(20):
            await flip(bot, n)
        await watcher.wait_seq("t1", bot.last_seq["t1"])
        await asyncio.sleep(scaled(1.5))
        heard = await received(other, "t1")
        assert heard >= before + 20
        # ...and when the last one leaves, not any more.
        await watcher.call("leave", table="t1")
        await settle(
            lambda: cluster.redis.execute_command("PUBSUB", "SHARDNUMSUB", "chemmy:{t1}:ev")[1] == 0
        )
        for n in range(40):
            await flip(bot, n)
        await asyncio.sleep(scaled(1.5))
        assert await received(other, "t1") == heard
        watcher.assert_clean()
        await watcher.close()
    finally:
        await bot.close()


async def test_a_watcher_joining_during_a_burst_misses_none_and_gets_none_twice(
    make_cluster: Any,
) -> None:
    """The table's owner takes a step every millisecond or so; clients of the other
    process join in the middle of it, each the only watcher there (so each join first
    subscribes), two at once in the last rounds: from each one's snapshot on, every
    event exactly once, in order."""
    _cluster, owner, other = await two_processes(make_cluster)
    bot = await seated(owner.url, "bot")
    stop = asyncio.Event()
    steps = {"n": 0}

    async def burst() -> None:
        while not stop.is_set():
            await flip(bot, steps["n"])
            steps["n"] += 1

    task = asyncio.create_task(burst())
    try:
        for round_no in range(8):
            watchers = [await open_guest(other.url) for _ in range(1 if round_no < 5 else 2)]
            await asyncio.sleep(0.02 * round_no)
            replies = await asyncio.gather(*(w.join("t1") for w in watchers))
            start = steps["n"]
            await settle(lambda start=start: steps["n"] >= start + 20)
            last = bot.last_seq["t1"]
            for watcher, reply in zip(watchers, replies, strict=True):
                await watcher.wait_seq("t1", last)
                seqs = [e["seq"] for e in watcher.events("t1")]
                first = int(reply["snapshot"]["seq"]) + 1
                assert seqs[: last - first + 1] == list(range(first, last + 1)), (round_no, seqs)
                watcher.assert_clean()
            for watcher in watchers:
                await watcher.close()
            await asyncio.sleep(0.3)  # the last watcher gone: the process unsubscribes
    finally:
        stop.set()
        await task
        await bot.close()
    assert steps["n"] > 100


async def test_a_steps_events_reach_another_process_before_its_reply(make_cluster: Any) -> None:
    """A player on the process that does not own the table: for every command, the event
    of its step (the reply's seq) is in before the reply."""
    _cluster, owner, other = await two_processes(make_cluster)
    player = await seated(other.url, "far")
    spectator = await open_guest(owner.url)
    await spectator.join("t1")
    try:
        for n in range(60):
            reply = await flip(player, n)
            # (the client handles frames in the order they come)
            assert player.last_seq["t1"] >= reply["seq"], (n, reply, player.last_seq)
        player.assert_clean()
    finally:
        await player.close()
        await spectator.close()


def bus_client(cluster: Cluster, node: ServerProcess) -> dict[str, str]:
    """The ``CLIENT LIST`` entry of ``node``'s bus subscription."""
    name = f"chemmy-bus-{cluster.node_name(node)}"
    found = [c for c in cluster.redis.client_list(_type="pubsub") if c["name"] == name]
    assert len(found) == 1, found
    return found[0]


async def test_a_process_that_loses_its_redis_connection_resubscribes_exactly_its_tables(
    make_cluster: Any,
) -> None:
    """Its pub/sub connection is cut (``CLIENT KILL``) while its client watches the other
    process's busy table: it connects again, subscribes to the watched one (``ssub`` 1;
    not its own table: issue 36) and to nothing else, and the watcher misses nothing."""
    cluster, owner, other = await two_processes(make_cluster)
    bot = await seated(owner.url, "bot")
    watcher = await open_guest(other.url)
    await watcher.join("t1")
    try:
        before = bus_client(cluster, other)
        assert before["ssub"] == "1"  # t1 (watched); not t2 (its own)
        assert cluster.redis.execute_command("PUBSUB", "SHARDNUMSUB", "chemmy:{t1}:ev")[1] == 1
        for n in range(10):
            await flip(bot, n)
        cluster.redis.execute_command("CLIENT", "KILL", "ID", before["id"])
        for n in range(10, 40):
            await flip(bot, n)

        def again() -> bool:
            found = [
                c for c in cluster.redis.client_list(_type="pubsub") if c["name"] == before["name"]
            ]
            return len(found) == 1 and found[0]["id"] != before["id"] and found[0]["ssub"] == "1"

        await settle(again)
        for n in range(40, 60):
            await flip(bot, n)
        await watcher.wait_seq("t1", bot.last_seq["t1"])
        watcher.assert_clean()
        channels = set(cluster.redis.execute_command("PUBSUB", "SHARDCHANNELS"))
        assert channels == {"chemmy:{t1}:ev"}
        assert cluster.redis.execute_command("PUBSUB", "SHARDNUMSUB", "chemmy:{t1}:ev")[1] == 1
    finally:
        await watcher.close()
        await bot.close()
