"""What a cluster process asks Redis, counted on a real ``redis-server`` (its ``INFO
commandstats``: a client's commands and a script's alike), for issue 36's target of a
cluster that costs what one process costs.

- A relayed command's owner lookup (``Leases.owner``) is answered from what the
  placement loop's tick read (every ``OWNERS_EVERY`` s) and what notices said: no
  ``GET`` of the lease between two ticks (it cost one in one relay in two).
- The placement loop renews its leases every other tick, not at every one (a ``GET``
  and a ``PEXPIRE`` per table per tick were a seventh of Redis's commands).
- A step's commit adds its events without reading the stream's last one first.
- An idle process's bus does not ``PING`` Redis while the placement loop's ticks are
  answered (the probe was half of an idle process's round trips).
- The tick's read of every owner comes back as one string, and placement hashes a table
  at a member once, not at every tick.
- Placement answers the same facts with its last answer, and the bus's pub/sub reader
  does not wake every second while nothing comes.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

import server.bus.redis
from server.bus.pubsub import PubSub
from server.bus.redis import RedisBus
from server.croupier import cluster
from server.croupier.cluster import EXPIRY_MARGIN, OWNERS_EVERY, Leases, Rebalancer, lease_key
from server.ledger.accounts import Entry
from server.protocol.errors import StaleEpoch
from server.store import TableRow, open_store
from tests.kit.client import http_get
from tests.kit.cluster import Cluster
from tests.kit.timing import scaled


async def calls(url: str) -> dict[str, int]:
    """Redis's calls so far, by command."""
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        stats: dict[str, Any] = await raw.info("commandstats")
    finally:
        await raw.aclose()
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


def spent(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The calls made between two counts (not the counts' own: a connection, INFO)."""
    own = {"hello", "info"}
    return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)} | {
        k: 0 for k in own
    }


async def test_an_owner_lookup_between_two_ticks_asks_redis_nothing(redis_url: str) -> None:
    ttl = 0.6  # a third of it (0.2 s) was how long a lookup was trusted
    owner = Leases(redis_url, "node-a", ttl=ttl)
    gateway = Leases(redis_url, "node-b", ttl=ttl)
    try:
        assert await owner.acquire("t1")
        await gateway.tick([], ["t1", "t2"])  # the placement loop's read of every owner
        await asyncio.sleep(ttl / 3 + 0.1)
        assert ttl / 3 + 0.1 < OWNERS_EVERY  # (still between two reads of the owners)
        before = await calls(redis_url)
        found = [await gateway.owner("t1") for _ in range(20)]
        found += [await gateway.owner("t2") for _ in range(20)]
        after = await calls(redis_url)
        assert found == ["node-a"] * 20 + [None] * 20
        assert not any(spent(before, after).values())
        # A notice of a new owner is believed at once, without Redis too.
        gateway.heard_owner("t1", "node-c")
        assert await gateway.owner("t1") == "node-c"
        assert not any(spent(after, await calls(redis_url)).values())
    finally:
        await gateway.close()
        await owner.close()


async def test_a_process_renews_its_leases_every_other_tick_and_keeps_them(
    redis_url: str,
) -> None:
    """The placement loop beats at every tick (lease/6 while anything changes) but renews
    its leases once a third of a lease has passed, every other such tick: a ``PEXPIRE``
    per table per two ticks, and the leases never lapse."""
    ttl = 0.6
    leases = Leases(redis_url, "node-a", ttl=ttl)
    owned: set[str] = set()

    async def own(table: str) -> None:
        owned.add(table)

    async def disown(table: str, why: str) -> None:
        owned.discard(table)

    async def tables() -> list[str]:
        return ["t1", "t2", "t3"]

    loop = Rebalancer(leases, tables=tables, owned=lambda: set(owned), own=own, disown=disown)
    try:
        await loop.step()  # takes the three
        assert owned == {"t1", "t2", "t3"}
        before = await calls(redis_url)
        ticks = 8
        for _ in range(ticks):
            await asyncio.sleep(loop.interval)
            await loop.step()
            assert owned == {"t1", "t2", "t3"}  # none lost, none lapsed
        used = spent(before, await calls(redis_url))
        assert used["evalsha"] == ticks  # one scripted call a tick (the beat)
        assert 3 * ticks / 3 <= used["pexpire"] <= 3 * (ticks // 2 + 1), used
        raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            for table in ("t1", "t2", "t3"):
                assert await raw.get(lease_key(table)) == "node-a"
                assert await raw.pttl(lease_key(table)) > ttl * 1000 / 3
        finally:
            await raw.aclose()
    finally:
        await leases.close()


async def test_a_tick_reads_every_lease_with_one_mget_and_renews_its_own(redis_url: str) -> None:
    """A tick reads the leases it renews and those whose owners it reads with one
    ``MGET`` each (issue 36: a ``GET`` per table, renewed or read, was a tenth of a
    cluster's Redis commands), then renews only the ones still its own (a ``PEXPIRE``
    each): a lease taken by another is reported lost and left as it is. The members and
    the draining are read with a ``ZRANGE`` each, the expired ones taken off by a
    ``ZREM`` only when there are some (a ``ZREMRANGEBYSCORE`` each at every tick)."""
    a = Leases(redis_url, "node-a", ttl=3.0)
    b = Leases(redis_url, "node-b", ttl=3.0)
    tables = [f"t{i}" for i in range(300)]  # (more than one chunk of the script's MGET)
    try:
        for t in tables[:280]:
            assert await a.acquire(t)
        assert await b.acquire(tables[280])
        await b.tick([], [])  # (a member)
        raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
        gone = int(time.time() * 1000) - 1  # (a member and a draining mark expired)
        await raw.zadd("chemmy:nodes", {"node-x": gone})
        await raw.zadd("chemmy:draining", {"node-x": gone})
        before = await calls(redis_url)
        lost, members, owners = await a.tick(tables[:281], tables)
        used = spent(before, await calls(redis_url))
        assert lost == {tables[280]} and members == ["node-a", "node-b"]
        assert sorted(await raw.zrange("chemmy:nodes", 0, -1)) == ["node-a", "node-b"]
        assert await raw.zrange("chemmy:draining", 0, -1) == []
        assert used["zrem"] == 2 and used["zrange"] == 2, used  # (the expired ones taken off)
        assert used.get("zremrangebyscore", 0) == 0, used
        assert owners == {t: "node-a" for t in tables[:280]} | {tables[280]: "node-b"} | (
            dict.fromkeys(tables[281:])
        )
        assert used.get("get", 0) == 0, used
        assert used["mget"] == 4, used  # (281 renewed and 300 read: two chunks each)
        assert used["pexpire"] == 280, used  # (not node-b's)
        try:
            assert await raw.get(lease_key(tables[280])) == "node-b"
        finally:
            await raw.aclose()
        before = await calls(redis_url)
        assert (await b.tick([], []))[1] == ["node-a", "node-b"]
        assert b.others_expire is not None  # (node-a's heartbeat, the first other)
        used = spent(before, await calls(redis_url))
        assert used.get("zrem", 0) == 0 and used["zrange"] == 2, used  # (none expired)
    finally:
        await a.close()
        await b.close()


async def test_a_steps_commit_adds_its_events_without_reading_the_stream(redis_url: str) -> None:
    """A step's commit adds its events to the table's stream without reading the stream's
    last one first (an ``XREVRANGE`` a commit): an event at or below it (a retried step)
    is refused by ``XADD`` itself and skipped, and the stream is as before."""
    store = await open_store(redis_url)
    try:
        row = TableRow("t1", {}, {"phase": "betting"}, 3)
        await store.commit(table=row, events=[event(1), event(2), event(3)])
        before = await calls(redis_url)
        row = TableRow("t1", {}, {"phase": "betting"}, 5)
        await store.commit(table=row, events=[event(4), event(5)])
        used = spent(before, await calls(redis_url))
        assert used["xadd"] == 2 and used.get("xrevrange", 0) == 0, used
        # A retried step (3 and 4 stored already): only 6 is added.
        await store.commit(table=row, events=[event(3, "again"), event(4, "again"), event(6)])
        assert await store.events_after("t1", 0) == [event(n) for n in range(1, 7)]
    finally:
        await store.close()


async def test_a_commit_writes_what_changed_and_looks_up_the_table_list_once_an_epoch(
    redis_url: str,
) -> None:
    """Issue 36: a step's commit does not look up the list of open tables once its
    writer found the table there in its epoch (a ``ZSCORE`` a commit), writes the
    balances it moved in one ``HSET`` (an ``HINCRBY`` an account), reports them as it
    wrote them (an ``HGET`` each), writes a player's flows of the day with an ``HMGET``
    and an ``HSET`` (an ``HEXISTS`` and an ``HINCRBY`` a field), and bumps the audit's
    counter only when it wrote what the audit reads and the ledger's seq did not move. A table closed is off the list; opened again in the same epoch, or
    after Redis lost its epoch and its list, it is listed again. Books exact."""
    store = await open_store(redis_url)
    raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        for name in ("ann", "bob"):
            await store.ensure_player(name, name.title(), 1000)
        epoch = await store.claim_table("t1")
        await store.commit(table=TableRow("t1", {}, {"n": 0}, 1, epoch=epoch))
        before = await calls(redis_url)
        for n in range(10):
            row = TableRow("t1", {}, {"n": n}, 2 + n, epoch=epoch)
            entries = [
                Entry(f"s{n}:{p}", f"player:{p}", f"stake:t1:{p}", 5, "stake", "r")
                for p in ("ann", "bob")
            ]
            found = await store.commit(entries=entries, table=row, events=[event(2 + n)])
            assert found.balances == {"player:ann": 995 - 5 * n, "player:bob": 995 - 5 * n}
        for n in range(5):  # steps without money
            await store.commit(table=TableRow("t1", {}, {"n": n}, 12 + n, epoch=epoch))
        used = spent(before, await calls(redis_url))
        # (the ZADDs: the ledger's and the four accounts' indexes)
        assert used.get("zscore", 0) == 0 and used.get("zadd", 0) == 50, used
        # (the audit's counter: not where the ledger's seq moved, the ten with money)
        assert used.get("incr", 0) == 0 and used["incrby"] == 10, used
        # Entries, balances, each player's day of flows: an HMGET each (the balances
        # reported are those the commit moved: not read again).
        assert used.get("hget", 0) == 0 and used["hmget"] == 4 * 10, used
        # Entries, balances, row, each player's day of flows; the row alone.
        assert used["hset"] == 5 * 10 + 5, used
        assert used.get("hincrby", 0) == used.get("hexists", 0) == 0, used
        balances = await raw.hgetall("chemmy:balances")
        assert balances["player:ann"] == balances["player:bob"] == "950"
        assert balances["stake:t1:ann"] == "50"
        day = await raw.hgetall("chemmy:flows:ann")
        assert sorted(day.values()) == ["-50", "50"], day  # (staked, net)
        assert await raw.zrange("chemmy:tables", 0, -1) == ["t1"]
        # Closed: off the list; opened again in the same epoch: on it again.
        await store.commit(table=TableRow("t1", {}, {"n": 1}, 20, closed=True, epoch=epoch))
        assert await raw.zrange("chemmy:tables", 0, -1) == []
        await store.commit(table=TableRow("t1", {}, {"n": 1}, 21, epoch=epoch))
        assert await raw.zrange("chemmy:tables", 0, -1) == ["t1"]
        # A Redis that lost the list lost the epoch too: the next commit lists it again.
        await raw.delete("chemmy:tables", "chemmy:{t1}:epoch")
        await store.commit(table=TableRow("t1", {}, {"n": 1}, 22, epoch=epoch))
        assert await raw.zrange("chemmy:tables", 0, -1) == ["t1"]
        # Closed again, then a close of an older epoch refused: opened again, listed again.
        await store.commit(table=TableRow("t1", {}, {"n": 1}, 23, closed=True, epoch=epoch))
        with pytest.raises(StaleEpoch):
            stale = TableRow("t1", {}, {"n": 1}, 24, closed=True, epoch=epoch - 1)
            await store.commit(table=stale)
        await store.commit(table=TableRow("t1", {}, {"n": 1}, 25, epoch=epoch))
        assert await raw.zrange("chemmy:tables", 0, -1) == ["t1"]
        report = await store.audit()
        assert report["sum"] == 0 and report["ledger_matches"], report
        assert report["entries"] == 22, report  # (two welcomes, twenty stakes)
    finally:
        await raw.aclose()
        await store.close()


async def test_an_audit_reads_again_after_a_commit_that_moved_only_the_ledgers_seq(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: a commit posting entries moves the ledger's seq and not the audit's
    counter (``commits``); the audit reads both, so a stake stored while it audits (after
    one whole read, before its check) makes it read again, and the books are exact. The same for round records alone (the counter)."""
    from server.store.redis.reads import RedisReads

    store = await open_store(redis_url)
    try:
        await store.ensure_player("ann", "Ann", 1000)
        once = RedisReads._audit_once
        runs: list[int] = []
        landing = [
            {"entries": [Entry("s1", "player:ann", "stake:t1:ann", 5, "stake", "r1")]},
            {"records": [{"kind": "shoe", "table": "t1", "shoe_no": 1, "seed": "s"}]},
        ]

        async def torn(self: Any, redis: Any) -> dict[str, Any]:
            balances_first = await once(self, redis)
            runs.append(len(runs))
            if len(runs) in (1, 3):  # a write lands between the audit's reads
                await store.commit(**landing[len(runs) // 2])  # type: ignore[arg-type]
            return balances_first

        monkeypatch.setattr(RedisReads, "_audit_once", torn)
        before = await calls(redis_url)
        report = await store.audit()
        assert len(runs) == 2, runs  # read again after the stake
        used = spent(before, await calls(redis_url))
        assert used.get("incr", 0) == 0, used
        report = await store.audit()
        assert len(runs) == 4, runs  # and after the shoe record
        assert report["sum"] == 0 and report["ledger_matches"], report
    finally:
        await store.close()


async def test_a_players_flows_written_in_one_hset_stay_exact_past_2_53(redis_url: str) -> None:
    """A day's flow past the range where a double is exact (deposits of 2**53 - 1, twice)
    is added by Redis (``HINCRBY``), not written from a sum in Lua: exact to the unit."""
    store = await open_store(redis_url)
    raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
    most = (1 << 53) - 1
    try:
        await store.ensure_player("ann", "Ann", 0)
        for n, amount in enumerate((most, most, 1)):
            deposit = Entry(f"d{n}", "operator", "player:ann", amount, "transfer_deposit")
            back = Entry(f"w{n}", "player:ann", "operator", amount, "withdrawal")
            await store.commit(entries=[deposit, back])
        flows = await raw.hgetall("chemmy:flows:ann")
        assert sorted(flows.values()) == ["0", str(2 * most + 1)], flows
    finally:
        await raw.aclose()
        await store.close()


def event(seq: int, kind: str = "bets") -> dict[str, Any]:
    return {"seq": seq, "kind": kind, "data": {"n": seq}}


@pytest.mark.slow
async def test_an_idle_process_does_not_ping_redis_while_its_ticks_are_answered(
    make_cluster: Callable[..., Cluster],
) -> None:
    """Idle, a cluster process's Redis round trips are its placement loop's ticks (one
    scripted call each, a third of a lease apart at rest): the bus's liveness probe takes a tick answered for
    Redis answering and sends no ``PING`` of its own (it sent two a second), and
    ``/readyz`` stays 200. (tests/cluster/test_cluster_readiness.py: a frozen Redis is
    still found not answering.)"""
    cluster = make_cluster(1)
    await cluster.ready()
    await asyncio.sleep(1.0)
    before = await calls(cluster.url)
    await asyncio.sleep(3.0)
    used = spent(before, await calls(cluster.url))
    assert used["evalsha"] >= 3, used  # the ticks went on (every 0.83 s)
    assert used.get("ping", 0) <= 1, used  # (the pub/sub connection's check, every 10 s)
    status, _headers, body = await http_get(cluster.nodes[0].port, "/readyz")
    assert status == 200, body


async def test_a_ticks_read_of_every_owner_comes_back_as_one_string(redis_url: str) -> None:
    """The tick reads every table's owner every ``OWNERS_EVERY`` s: Redis answers them as
    one string, an owner a line, not a reply per table (parsing 120 of those was most of
    an idle process's tick, issue 36); each table's owner is read right, none ('' in the
    string) for a table without a lease, and nothing for no tables."""
    a = Leases(redis_url, "node-a")
    b = Leases(redis_url, "node-b")
    tables = [f"t{i}" for i in range(120)]
    try:
        for t in tables[:40]:
            assert await a.acquire(t)
        for t in tables[40:80]:
            assert await b.acquire(t)
        lost, members, owners = await b.tick(tables[40:80], tables)
        assert lost == set() and members == ["node-b"]
        assert owners == {t: "node-a" for t in tables[:40]} | {
            t: "node-b" for t in tables[40:80]
        } | dict.fromkeys(tables[80:])
        assert await b.tick([], []) == (set(), ["node-b"], {})
        assert (await a.tick([], ["t0"]))[2] == {"t0": "node-a"}
        assert (await a.tick([], ["t119"]))[2] == {"t119": None}
        keys = ["chemmy:nodes", "chemmy:draining", "chemmy:watching"]
        keys += [lease_key(t) for t in tables]
        args = ["node-a", 3000, 0, "0", 0, 3500, ""]
        reply = await a._tick(keys=keys, args=args, client=a.redis)
        assert isinstance(reply[3], bytes), type(reply[3])  # one string, not 120 replies
        assert reply[3].decode().split("\n") == ["node-a"] * 40 + ["node-b"] * 40 + [""] * 40
    finally:
        await a.close()
        await b.close()


def test_placement_hashes_each_table_at_each_member_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every process places every table at every tick of its loop: a table's rendezvous
    hash at a member never changes, so it is computed once, not at every tick."""
    hashed: list[bytes] = []
    real = cluster.hashlib.blake2b

    def counting(data: bytes, **options: Any) -> Any:
        hashed.append(data)
        return real(data, **options)

    monkeypatch.setattr(cluster.hashlib, "blake2b", counting)
    tables = [f"placed{i}" for i in range(120)]  # (names no other test hashes)
    first = cluster.placement(tables, ["node-x", "node-y"])
    assert len(hashed) > 0
    hashed.clear()
    for _ in range(3):
        assert cluster.placement(tables, ["node-x", "node-y"], first) == first
    assert hashed == []


def test_placement_answers_the_same_facts_without_placing_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every tick of every process places every table, and idle the facts (tables,
    members, owners) are the same from tick to tick: the last answer is given again,
    and new facts are placed afresh."""
    scored: list[tuple[str, str]] = []
    real = cluster._score

    def counting(table: str, node: str) -> bytes:
        scored.append((table, node))
        return real(table, node)

    monkeypatch.setattr(cluster, "_score", counting)
    tables = [f"t{i}" for i in range(40)]
    first = cluster.placement(tables, ["a", "b"])
    current: dict[str, str | None] = dict(first)
    assert cluster.placement(tables, ["a", "b"], current) == first
    scored.clear()
    for _ in range(3):
        again = cluster.placement(tables, ["a", "b"], current)
        assert again == first
        again["t0"] = "elsewhere"  # (an answer given is the caller's own)
    assert scored == []
    moved = cluster.placement(tables, ["a", "b", "c"], current)
    assert scored and moved == cluster._place(tables, ["a", "b", "c"], current)
    assert sum(1 for n in moved.values() if n == "c") == 12  # (a and b keep 14 each)


@pytest.mark.slow
async def test_an_idle_bus_reader_does_not_wake_every_second(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bus's pub/sub reader waits for a message up to LISTEN_TIMEOUT (5 s), not a
    second: idle, a read of a second woke the process for nothing (a tenth of an idle
    cluster process's CPU). What comes is still read at once."""
    reads: list[float] = []
    real = PubSub.messages

    async def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append(asyncio.get_running_loop().time())
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(PubSub, "messages", counting)

    async def nothing_stored(table: str, seq: int) -> None:
        return None

    async def nobody(table: str) -> None:
        return None

    heard: list[dict[str, Any]] = []
    bus = RedisBus(redis_url, node="node-a", events_after=nothing_stored, owner_of=nobody)
    bus.on_control(heard.append)
    await bus.start()
    try:
        await asyncio.sleep(0.5)
        reads.clear()
        await asyncio.sleep(3.0)
        assert len(reads) <= 1, reads
        bus.control({"kind": "tables"})  # (heard by this process too)
        async with asyncio.timeout(1.0):
            while not heard:
                await asyncio.sleep(0.01)
        assert heard == [{"kind": "tables"}]
    finally:
        await bus.close()


class CountedLeases(Leases):
    """Leases that note when each of their process's ticks was asked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ticks: list[float] = []

    async def tick(self, *args: Any, **kwargs: Any) -> Any:
        self.ticks.append(time.monotonic())
        return await super().tick(*args, **kwargs)


@pytest.mark.slow  # (a few leases' time, on the clock)
@pytest.mark.xdist_group("elapsed")  # asserts how long things took: never beside another
async def test_at_rest_ticks_come_a_third_of_a_lease_apart_and_a_dead_members_tables_move(
    redis_url: str,
) -> None:
    """At rest (the same members, every table where placement says), the placement loop
    ticks once its renewal is due, a third of a lease apart, not every sixth (issue 36:
    those ticks were most of an idle cluster process's CPU): its leases and heartbeat
    still never lapse, and nothing moves. A member killed (its loop stopped, nothing
    released) is found gone once its heartbeat expires, as the survivor's tick read it,
    and its tables are taken no later than a tick every sixth of a lease would."""
    ttl = 1.5
    leases = {n: CountedLeases(redis_url, n, ttl=ttl) for n in ("node-a", "node-b")}
    owned: dict[str, set[str]] = {n: set() for n in leases}
    tables = [f"t{i}" for i in range(6)]

    def loop_of(node: str) -> Rebalancer:
        async def own(table: str) -> None:
            owned[node].add(table)

        async def disown(table: str, why: str) -> None:
            owned[node].discard(table)

        async def open_tables() -> list[str]:
            return list(tables)

        return Rebalancer(
            leases[node],
            tables=open_tables,
            owned=lambda: set(owned[node]),
            own=own,
            disown=disown,
        )

    async def until(done: Callable[[], bool], timeout: float) -> None:
        async with asyncio.timeout(scaled(timeout)):
            while not done():
                await asyncio.sleep(0.01)

    a, b = loop_of("node-a"), loop_of("node-b")
    runs = {"node-b": asyncio.create_task(b.run())}
    raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await until(lambda: owned["node-b"] == set(tables), 2)
        runs["node-a"] = asyncio.create_task(a.run())
        await until(lambda: len(owned["node-a"]) == len(owned["node-b"]) == 3, 3 * ttl)
        await asyncio.sleep(ttl / 3)  # (a last look after the last change: then at rest)
        before = {n: set(o) for n, o in owned.items()}
        window = 3.0
        leases["node-a"].ticks.clear()
        await asyncio.sleep(window)
        ticks = len(leases["node-a"].ticks)
        # A third of a lease apart (0.5 s: 6 in 3 s; every sixth, 0.25 s, was 12).
        assert window / (ttl / 3) - 2 <= ticks <= window / (ttl / 3) + 1, ticks
        assert owned == before  # nothing moved, nothing lapsed
        for node, held in owned.items():
            for table in held:
                assert await raw.get(lease_key(table)) == node
                assert await raw.pttl(lease_key(table)) > ttl * 1000 / 3

        runs.pop("node-b").cancel()  # killed: no release, no leaving
        killed = time.monotonic()
        await asyncio.sleep(0.05)  # (a tick in flight is answered or not)
        expires = float(await raw.zscore("chemmy:nodes", "node-b")) / 1000  # (wall clock)
        await until(lambda: owned["node-a"] == set(tables), 2 * ttl)
        took, after_expiry = time.monotonic() - killed, time.time() - expires
        assert after_expiry >= 0, after_expiry  # never before its heartbeat expired
        # Within the lease and a tick every sixth of it (what it was), on a busy machine.
        assert took <= ttl + a.interval + EXPIRY_MARGIN + scaled(0.3), (took, after_expiry)
        assert after_expiry <= EXPIRY_MARGIN + scaled(0.3), (took, after_expiry)
    finally:
        for run in runs.values():
            run.cancel()
        await asyncio.gather(*runs.values(), return_exceptions=True)
        await raw.aclose()
        for each in leases.values():
            await each.close()


@pytest.mark.slow
async def test_a_bus_probe_sleeps_while_the_ticks_answer_and_pings_once_they_stop(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While Redis answers the placement loop's ticks (at rest a third of a lease apart),
    the bus's probe neither pings nor asks for sentinels a plain Redis has not: it wakes
    about once a tick, not twice a second (issue 36: an idle cluster process's wakes).
    Once nothing else is answered, it pings in time: Redis is still found answering."""
    wakes: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float, *args: Any) -> Any:
        if sys._getframe(1).f_code.co_name == "_probe":
            wakes.append(delay)
        return await real_sleep(delay, *args)

    asked: list[object] = []

    async def follow_primary(client: object) -> None:
        asked.append(client)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    monkeypatch.setattr(server.bus.redis, "follow_primary", follow_primary)

    async def nothing_stored(table: str, seq: int) -> None:
        return None

    async def nobody(table: str) -> None:
        return None

    bus = RedisBus(redis_url, node="node-a", events_after=nothing_stored, owner_of=nobody)
    await bus.start()
    try:
        tick = 0.83  # (the tests' lease, 2.5 s, over 3)
        for _ in range(2):
            bus.heard()
            await real_sleep(tick)
        before, wakes[:] = await calls(redis_url), []
        for _ in range(4):  # 3.3 s of ticks answered
            bus.heard()
            await real_sleep(tick)
            assert bus.answering
        used = spent(before, await calls(redis_url))
        assert used.get("ping", 0) == 0, used
        assert asked == []  # (a plain Redis: no sentinels to ask)
        assert len(wakes) <= 5, wakes  # about one a tick (two a second were 7)
        before = await calls(redis_url)
        for _ in range(10):  # no more ticks: the probe's pings keep it answering
            await real_sleep(0.25)
            assert bus.answering
        assert spent(before, await calls(redis_url)).get("ping", 0) >= 1
    finally:
        await bus.close()
