"""Redis with automatic failover (issue 22): real ``chemmy-server`` processes on
``redis+sentinel://``, over a primary, two replicas and three sentinels the test starts
(``tests/kit/redis.py``), with ``--redis-min-replicas 1``.

- ``kill -9`` the primary in betting, in a squeeze and at settlement: the sentinels
  promote a replica, every process finds it by itself, play goes on, every client (on
  every process: none reconnects) sees every event once, in order, the books balance,
  and every bet answered ok before the kill is in the store after it. The outage (the
  kill → the next event a client receives, with a command retried meanwhile) is printed
  next to the sentinels' ``down-after-milliseconds`` and to when the first of them named
  the new primary (``+switch-master``): the servers' part, from then on, is held within
  4 s; the whole outage also within the sentinels' own bound (down-after, and twice the
  failover timeout: one split vote's next election).
- ``SIGSTOP`` the primary past down-after: a replica is promoted; ``SIGCONT``: the old
  primary is made a replica of the new one, and a write to it (a process that still
  reached it) is refused (``READONLY``, or no replica acknowledges it: never answered
  ok); a commit with the epoch its owner had before the switch is refused by the new
  primary once a new owner claimed the table there (fencing holds across the switch).

The players are the crash tests' (``kit/crash.py``) at one table with long timers, as
in test_cluster_failures.py: alice and the spectator sam on one process, bob on a
second, carol on the table's owner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from server.ledger.accounts import Entry
from server.protocol.errors import StaleEpoch, StoreUnavailable
from server.store.base import TableRow
from server.store.redis import RedisStore
from tests.kit import Client, open_player, scaled, table_def
from tests.kit.checks import check_public_views_agree
from tests.kit.cluster import Cluster, check_books, retry, settle, stored_row
from tests.kit.crash import BETS, PLAYERS, STEP, TABLE, Table
from tests.kit.redis import RedisHA, RedisServer, role

pytestmark = pytest.mark.slow  # server subprocesses, five Redis processes: seconds each

LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60, "grace": 120}
DOWN_AFTER_MS = 1000


@pytest.fixture
def ha(tmp_path: Path) -> Iterator[RedisHA]:
    servers = RedisHA(tmp_path / "redis", replicas=2, down_after_ms=DOWN_AFTER_MS)
    servers.start()
    try:
        yield servers
    finally:
        servers.stop()


@pytest.fixture
def cluster(tmp_path: Path, ha: RedisHA) -> Iterator[Cluster]:
    made = Cluster(
        tmp_path / "cluster",
        0,
        [table_def(TABLE, name="Crash", timers=LONG)],
        url=ha.url(),
        args=["--redis-min-replicas", "1"],
        command_timeout=scaled(3),
    )
    try:
        for _ in range(3):
            made.add()
        yield made
    finally:
        made.stop()


async def seat(cluster: Cluster) -> tuple[Table, Client]:
    """The crash table's players spread over the processes; the table and sam."""
    await cluster.ready()
    owner = cluster.owner(TABLE)
    assert owner is not None
    first, second = cluster.others(owner)
    where = {"alice": first, "bob": second, "carol": owner, "sam": first}
    clients: dict[str, Client] = {}
    for name in (*PLAYERS, "sam"):
        client = await open_player(where[name].url, name, "msgpack", timeout=STEP)
        await client.join(TABLE)
        clients[name] = client
    for name in PLAYERS:
        await clients[name].call("sit", table=TABLE)
    sam = clients.pop("sam")
    for name in PLAYERS:
        await sam.wait_event("sat", lambda e, n=name: e["data"]["player"] == n, table=TABLE)
    return Table(clients, {}), sam


def outage(clients: list[Client], killed: float) -> tuple[float, float] | None:
    """Seconds from the kill to the first new event at any client, and to the first
    new event at every client (each has one by the time the round settled). New: after
    every event sent before the kill (events still on their way when Redis died arrive
    in the next milliseconds, and no event can be stored before the sentinels' down-after
    time has passed), so after the last seq any client had half that time after it."""
    cut = killed + DOWN_AFTER_MS / 2000
    before = [f.msg["seq"] for c in clients for f in c.frames if is_event(f.msg) and f.at < cut]
    baseline = max(before, default=-1)
    firsts = []
    for client in clients:
        found = [f.at for f in client.frames if is_event(f.msg) and f.msg["seq"] > baseline]
        if not found:
            return None  # nothing new yet (the last toss was stored before the kill)
        firsts.append(min(found) - killed)
    return min(firsts), max(firsts)


def is_event(msg: dict[str, Any]) -> bool:
    return msg.get("type") == "event" and msg.get("table") == TABLE


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
@pytest.mark.parametrize("when", ["betting", "squeeze", "settlement"])
async def test_kill_the_primary_and_play_goes_on(ha: RedisHA, cluster: Cluster, when: str) -> None:
    table, sam = await seat(cluster)
    clients = [sam, *table.players.values()]
    switch = None
    try:
        switch = ha.watch_switch()
        await table.to_betting()
        await table.place_bets()  # each answered ok: each on a replica too (WAIT 1)
        old = ha.primary()
        if when == "betting":
            for name in PLAYERS[:2]:
                await table[name].call("done", table=TABLE)
            killed = time.monotonic()
            old.kill()
            # carol's DONE, sent again with its id until the table answers it.
            await retry(table["carol"], "done", msg_id="carol-done", table=TABLE, timeout=20)
            closed = await table.wait_for("betting_closed")
            assert closed["data"]["bets"] == BETS  # every bet answered ok is there
            rid = str(closed["data"]["round_id"])
        elif when == "squeeze":
            rid = await table.press_done()
            assert await table.play_turns(stop_at_squeeze=True) is None
            killed = time.monotonic()
            old.kill()
            for index in (1, 2):  # bob turns the cards he squeezed
                await retry(
                    table["bob"],
                    "turn",
                    msg_id=f"bob-turn-{index}",
                    table=TABLE,
                    hand="player",
                    card=index,
                    timeout=20,
                )
        else:
            rid = await table.press_done()
            turner, last_hand = await table.to_last_toss()
            await turner.send_command("toss", msg_id="last-toss", table=TABLE, hand=last_hand)
            time.sleep(0.002)  # not asyncio: nothing more is read before the kill
            killed = time.monotonic()
            old.kill()
            await retry(turner, "toss", msg_id="last-toss", table=TABLE, hand=last_hand, timeout=20)
        new = ha.promoted(old)
        assert new is not old and role(new) == "master"
        # The owners may give the table up (their lease may have run out) and it moves:
        # a command answered "that table moved; try again" is sent again with its id.
        table.game.patience = 20.0
        settled = await table.play_turns()
        if settled is None or when == "settlement":
            settled = await sam.wait_event(
                "settled", lambda e: e["data"]["round_id"] == rid, table=TABLE
            )
        assert settled["data"]["round_id"] == rid
        for client in clients:  # everyone, on whichever process, saw it settle
            await client.wait_event("settled", lambda e: e["data"]["round_id"] == rid, table=TABLE)
        for client in clients:
            client.assert_clean()  # no event lost or doubled, in seq order
            assert client.conn_no == 0  # nobody had to reconnect
        check_public_views_agree(sam, list(table.players.values()), TABLE)
        measured = outage(clients, killed)
        if measured is None:  # the round settled before the kill: sam sits down
            await retry(sam, "sit", msg_id="sam-sits", table=TABLE)
            await settle(lambda: outage(clients, killed) is not None)
            measured = outage(clients, killed)
            for client in clients:
                client.assert_clean()
        assert measured is not None
        first, every = measured
        switched = switch.wait() - killed
        print(
            f"primary killed in {when}: next event after {first:.2f} s, at every client "
            f"after {every:.2f} s (down-after {DOWN_AFTER_MS} ms; the sentinels named the "
            f"new primary after {switched:.2f} s)"
        )
        # The servers' part: from the first sentinel naming the new primary to the next
        # event. The whole outage adds the sentinels' own: their down-after time and their
        # election (one split vote: tried again only after twice the failover timeout).
        assert first - switched <= scaled(4.0), (first, switched)
        sentinels = DOWN_AFTER_MS / 1000 + 2 * ha.failover_timeout_ms / 1000
        assert first <= scaled(sentinels + 4.0), (first, switched)
    finally:
        if switch is not None:
            switch.close()
        for client in clients:
            await client.close()
    books = await check_books(cluster.url, tables=[TABLE])
    assert rid in books["rounds"]
    # Every bet answered ok before the kill is in the round's stored record.
    (record,) = [r for r in await round_history(cluster.url, "bob") if r["round_id"] == rid]
    stakes: dict[str, dict[str, int]] = {}
    for pay in record["bets"]:
        stakes.setdefault(pay["player"], {})[pay["area"]] = pay["stake"]
    assert stakes == BETS, record["bets"]


async def round_history(url: str, player: str) -> list[dict[str, Any]]:
    store = RedisStore(url)
    await store.open()
    try:
        return await store.history(player)
    finally:
        await store.close()


async def stored_epoch(url: str) -> int:
    store = RedisStore(url)
    await store.open()
    try:
        (row,) = [r for r in await store.load_tables() if r.table_id == TABLE]
        return row.epoch
    finally:
        await store.close()


def replicates(server: RedisServer, primary: RedisServer) -> bool:
    """Whether ``server`` is a replica of ``primary``, its link up."""
    client = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=1)
    try:
        info = client.info("replication")
    except redis.RedisError:
        return False
    finally:
        client.close()
    return info.get("master_port") == primary.port and info.get("master_link_status") == "up"


async def test_a_paused_primary_is_replaced_and_its_stale_writes_refused(
    ha: RedisHA, cluster: Cluster
) -> None:
    table, sam = await seat(cluster)
    clients = [sam, *table.players.values()]
    old = ha.primary()
    # A process that still reaches the old primary directly, as one whose connection
    # was made before the switch would (and with the cluster's --redis-min-replicas).
    stale = RedisStore(old.url(), min_replicas=1)
    await stale.open()
    try:
        await table.to_betting()
        await table.place_bets()
        before = await stored_row(cluster.url, TABLE)
        old.pause()
        try:
            new = ha.promoted(old)
            other = next(s for s in ha.servers if s is not old and s is not new)
            await settle(lambda: replicates(other, new), timeout=20)
            # The table's owner lost its lease while Redis was away: it is claimed again
            # on the new primary, with a newer epoch.
            async with asyncio.timeout(scaled(20)):
                while await stored_epoch(cluster.url) <= before.epoch:
                    await asyncio.sleep(0.1)
        finally:
            old.resume()
        deposit = Entry("stale-deposit", "cashier", "player:alice", 5, "deposit", None)
        row = TableRow(TABLE, before.config, before.state, before.seq, False, before.epoch)
        # The old primary: demoted (READONLY), or still a primary nobody replicates
        # (NOREPLICAS: min-replicas-to-write; WAIT: 0 of 1). Never answered ok.
        with pytest.raises(StoreUnavailable, match=r"READONLY|NOREPLICAS|0 of 1 replicas"):
            await stale.commit(entries=[deposit], table=row)
        # The new primary: the old epoch is fenced off.
        current = RedisStore(cluster.url, min_replicas=1)
        await current.open()
        try:
            # (Until the new primary's replica acknowledges again, NOREPLICAS refuses every
            # write before any script runs: "not now", not the fence. A loaded run met it.)
            async with asyncio.timeout(scaled(20)):
                while True:
                    try:
                        with pytest.raises(StaleEpoch):
                            await current.commit(entries=[deposit], table=row)
                        break
                    except StoreUnavailable as exc:
                        assert "NOREPLICAS" in str(exc), exc
                        await asyncio.sleep(0.2)
            await settle(lambda: role(old) == "slave" and replicates(old, new), timeout=20)
            assert not await current.has_entry("stale-deposit")  # lost harmlessly
        finally:
            await current.close()
        # Play goes on, the bets where they were.
        for name in PLAYERS:
            await retry(table[name], "done", msg_id=f"{name}-done", table=TABLE, timeout=20)
        closed = await table.wait_for("betting_closed")
        assert closed["data"]["bets"] == BETS
        rid = str(closed["data"]["round_id"])
        settled = await table.play_turns()
        assert settled is not None and settled["data"]["round_id"] == rid
        for client in clients:
            await client.wait_event("settled", lambda e: e["data"]["round_id"] == rid, table=TABLE)
        try:
            for client in clients:
                client.assert_clean()
        except AssertionError:
            for node in cluster.nodes:
                print("=====", cluster.node_name(node) if node.running else "", node.log_text(80))
            for client in clients:
                print(client.label, [(e["seq"], e["kind"]) for e in client.events(TABLE)][:30])
            for server in ha.servers:
                r = redis.Redis(port=server.port)
                ids = [i for i, _ in r.xrange("chemmy:{c1}:events")]
                print(server.port, role(server), ids[:30])
            raise
        check_public_views_agree(sam, list(table.players.values()), TABLE)
        print(f"paused primary: epoch {before.epoch} -> {await stored_epoch(cluster.url)}")
    finally:
        await stale.close()
        for client in clients:
            await client.close()
    await check_books(cluster.url, tables=[TABLE])
