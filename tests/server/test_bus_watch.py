"""The Redis bus listens only where someone does (issue 22), over two real buses on a
real ``redis-server``: a table's channel (``chemmy:{<table>}:ev``, sharded pub/sub) is
subscribed while the process watches the table and another owns it, and not otherwise
(an owner delivers its own steps as it publishes them: issue 36); once
``watch`` returns, the next step reaches it; a reply that overtakes its step's events
(as it could on a Redis Cluster) waits for them, and for the stream when they were
lost; a process whose pub/sub connection is cut subscribes again to exactly its
tables; and on a Redis without sharded pub/sub (``rename-command``) it falls back to
plain pub/sub per table channel.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from server.bus.channels import event_channel, table_of
from server.bus.redis import HOLD_MAX, RedisBus
from server.bus.rides import StepMessage
from server.protocol.records import Address, ReplyRecord, pack
from server.vocabulary.events import Event
from tests.kit.redis import RedisServer
from tests.kit.timing import scaled

STORED: dict[str, list[Event]] = {}
OWNERS: dict[str, str] = {}


async def stored_after(table: str, seq: int) -> list[Event] | None:
    found = STORED.get(table)
    return None if found is None else [e for e in found if e.seq > seq]


async def owner_of(table: str) -> str | None:
    return OWNERS.get(table)


def events(*seqs: int) -> list[Event]:
    return [Event(seq, "kind", {"n": seq}) for seq in seqs]


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(scaled(timeout)):
        while not check():
            await asyncio.sleep(0.005)


@pytest.fixture(autouse=True)
def _clean() -> Any:
    yield
    STORED.clear()
    OWNERS.clear()


async def two_buses(url: str) -> tuple[RedisBus, RedisBus]:
    a = RedisBus(url, node="node-a", events_after=stored_after, owner_of=owner_of)
    b = RedisBus(url, node="node-b", events_after=stored_after, owner_of=owner_of)
    await a.start()
    await b.start()
    return a, b


@pytest.fixture
async def pair(redis_url: str) -> AsyncIterator[tuple[RedisBus, RedisBus]]:
    a, b = await two_buses(redis_url)
    try:
        yield a, b
    finally:
        await b.close()
        await a.close()


async def shard_channels(url: str) -> set[str]:
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        return set(await raw.execute_command("PUBSUB", "SHARDCHANNELS"))
    finally:
        await raw.aclose()


def test_a_tables_channel_is_in_its_hash_slot() -> None:
    """The channel's hash tag is the table's id, as its keys' are (``chemmy:{t1}:row``)."""
    assert event_channel("t1") == "chemmy:{t1}:ev"
    assert table_of("chemmy:{t1}:ev") == "t1"
    assert table_of("chemmy:ev:t1") is None and table_of("chemmy:{}:ev") is None


async def test_a_process_hears_only_the_tables_it_watches_and_does_not_own(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    a, b = pair
    assert a.sharded and b.sharded  # Redis 7
    seen: list[tuple[str, int]] = []
    mine: list[tuple[str, int]] = []
    b.subscribe("t1", lambda table, step: seen.extend((table, e.seq) for e in step))
    b.subscribe("t2", lambda table, step: seen.extend((table, e.seq) for e in step))
    a.subscribe("t1", lambda table, step: mine.extend((table, e.seq) for e in step))
    a.serve("t1", lambda record: None)
    a.serve("t2", lambda record: None)
    await a.watch("t1")  # a client of the owner's own: served without Redis
    await b.watch("t1")
    assert b.listening == {"t1"} and a.listening == set()
    for seq in range(1, 51):
        a.publish("t1", events(seq))
        a.publish("t2", events(seq))
    await eventually(lambda: len(seen) == 50)
    assert seen == [("t1", n) for n in range(1, 51)]
    assert mine == seen  # the owner's watcher, each step once, from the owner itself
    assert b.received["t1"] == 50 and b.received["t2"] == 0
    # Issue 36: the owner hears none of its own steps back from Redis.
    assert a.received["t1"] == 0 and a.received["t2"] == 0
    assert await shard_channels(redis_url) == {"chemmy:{t1}:ev"}
    # The last watcher leaves: b stops hearing t1 (a still owns it).
    b.unwatch("t1")
    await eventually(lambda: not b.listening)
    a.publish("t1", events(51))
    a.control({"kind": "tables"})  # after 51 on a's one connection: b heard both by then
    heard: list[Any] = []
    b.on_control(heard.append)
    await eventually(lambda: bool(heard))
    assert b.received["t1"] == 50 and seen[-1] == ("t1", 50)
    # The owner gives t2 up with nobody watching it: it still listens to nothing.
    a.unserve("t2")
    await asyncio.sleep(0.05)
    assert a.listening == set() and await shard_channels(redis_url) == set()


async def test_an_owner_hears_its_table_until_its_own_step_comes_back_and_again_once_given_up(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    """Issue 36: a watched table this process comes to own stays subscribed until its
    own first step comes back on the channel (what the previous owner published late
    still arrives), then is unsubscribed: its later steps reach its watchers from the
    owner itself and nothing comes back from Redis. Given up while still watched, it is
    subscribed again, and the next owner's steps arrive, each once, those published
    before the subscription was confirmed from the stream."""
    a, b = pair
    seen: list[int] = []
    b.subscribe("t1", lambda table, step: seen.extend(e.seq for e in step))
    await b.watch("t1")
    a.publish("t1", events(1))  # a's step while a owns t1
    await eventually(lambda: seen == [1])
    b.serve("t1", lambda record: None)  # b takes t1 over
    a.publish("t1", events(2))  # a's last step, published late
    await eventually(lambda: seen == [1, 2])
    assert b.listening == {"t1"}
    b.publish("t1", events(3))
    assert seen == [1, 2, 3]  # at once, from b itself
    await eventually(lambda: b.listening == set())  # its own step came back: unsubscribed
    assert await shard_channels(redis_url) == set()
    for seq in range(4, 11):
        b.publish("t1", events(seq))
    assert b.received["t1"] == 3  # 1 and 2 from a, 3 its own; none since
    # b gives t1 up (still watched there); a owns it again and publishes at once.
    STORED["t1"] = events(*range(1, 12))
    b.unserve("t1")
    a.publish("t1", events(11))  # perhaps before b's subscription: then from the stream
    await eventually(lambda: seen[-1:] == [11])
    await eventually(lambda: b.listening == {"t1"})
    STORED["t1"] = events(*range(1, 13))
    a.publish("t1", events(12))
    await eventually(lambda: seen[-1:] == [12])
    assert seen == list(range(1, 13))


async def test_once_watch_returns_the_next_step_arrives(pair: tuple[RedisBus, RedisBus]) -> None:
    """The subscription is in effect when ``watch`` returns (Redis confirmed it): a step
    published at once reaches the watcher, every time, on fresh tables."""
    a, b = pair
    seen: dict[str, list[int]] = {}
    for n in range(20):
        table = f"w{n}"
        seen[table] = []
        b.subscribe(table, lambda t, step: seen[t].extend(e.seq for e in step))
        await b.watch(table)
        a.publish(table, events(1))
    await eventually(lambda: all(v == [1] for v in seen.values()))


async def test_a_table_left_and_watched_again_at_once_stays_heard(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    """The last watcher leaves and another comes in the same turn of the loop, before the
    unsubscribe spawned by the leaving was sent: the table is subscribed when ``watch``
    returns and stays so (the unsubscribe, then a subscribe, in that order), and the
    next step arrives. Before, ``watch`` took the table for heard (the unsubscribe not
    yet sent) and the unsubscribe went out after it: a watcher that never heard a step."""
    a, b = pair
    seen: list[int] = []
    b.subscribe("t1", lambda table, step: seen.extend(e.seq for e in step))
    await b.watch("t1")
    b.unwatch("t1")  # its unsubscribe spawned, not sent yet
    await b.watch("t1")
    await asyncio.sleep(0.1)  # (the spawned unsubscribe has long run by now)
    assert b.listening == {"t1"}
    assert await shard_channels(redis_url) == {"chemmy:{t1}:ev"}
    a.publish("t1", events(1))
    await eventually(lambda: seen == [1])


async def test_a_reply_that_overtakes_its_events_waits_for_them(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    """As on a Redis Cluster (events from the table's shard, the reply from another
    node): the reply to a step comes first; the gateway hands it on only after the
    step's events. And when the events never come (lost), they are read from the
    stream after :data:`HOLD_MAX`, then the reply goes on."""
    a, b = pair
    order: list[Any] = []
    b.subscribe("t1", lambda table, step: order.extend(e.seq for e in step))
    b.on_replies(lambda reply: order.append(("reply", reply.to.request)))
    await b.watch("t1")
    a.publish("t1", events(1))
    await eventually(lambda: order == [1])
    raw = aioredis.Redis.from_url(redis_url)
    try:
        reply = ReplyRecord(Address(b.node, 1, 1), {"seq": 3}, None, ("t1", 3))
        await raw.publish(f"chemmy:node:{b.node}", pack(reply))
        await asyncio.sleep(scaled(0.1))
        assert order == [1]  # held: its step's events are not in yet
        await raw.spublish(
            event_channel("t1"), StepMessage("t1", events(2, 3), "node-a").packed()[1]
        )
        await eventually(lambda: len(order) == 4)
        assert order == [1, 2, 3, ("reply", 1)]
        # Lost: step 4's events never come over pub/sub; the stream has them.
        STORED["t1"] = events(1, 2, 3, 4)
        lost = ReplyRecord(Address(b.node, 1, 2), {"seq": 4}, None, ("t1", 4))
        await raw.publish(f"chemmy:node:{b.node}", pack(lost))
        await asyncio.sleep(HOLD_MAX / 2)
        assert order[-1] == ("reply", 1)
        await eventually(lambda: order[-1:] == [("reply", 2)], timeout=HOLD_MAX + 5)
        assert order == [1, 2, 3, ("reply", 1), 4, ("reply", 2)]
    finally:
        await raw.aclose()
    # A reply for a table this process does not hear goes on at once.
    b.unwatch("t1")
    b._reply_here(ReplyRecord(Address(b.node, 1, 3), {"seq": 9}, None, ("t1", 9)))
    assert order[-1] == ("reply", 3)


async def pubsub_client(url: str, name: str) -> dict[str, str]:
    """The ``CLIENT LIST`` entry of the pub/sub connection named ``name`` (waits for it)."""
    raw = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        async with asyncio.timeout(scaled(10)):
            while True:
                found = [c for c in await raw.client_list(_type="pubsub") if c["name"] == name]
                if found:
                    return found[0]
                await asyncio.sleep(0.02)
    finally:
        await raw.aclose()


async def test_a_cut_connection_subscribes_again_to_exactly_its_tables(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    """``CLIENT KILL`` of b's pub/sub connection: b connects again and subscribes to the
    tables it watches (not those it owns: issue 36) and to no other (``ssub`` in ``CLIENT
    LIST``), and what was published meanwhile reaches its subscribers from the stream,
    each once."""
    a, b = pair
    seen: list[int] = []
    b.subscribe("t1", lambda table, step: seen.extend(e.seq for e in step))
    await b.watch("t1")
    await b.watch("t2")
    b.unwatch("t2")
    b.serve("t3", lambda record: None)
    await eventually(lambda: b.listening == {"t1"})
    STORED["t1"] = events(1)
    a.publish("t1", events(1))
    await eventually(lambda: seen == [1])
    before = await pubsub_client(redis_url, "chemmy-bus-node-b")
    assert before["ssub"] == "1" and before["sub"] == "2"  # t1; its own channel, ctl
    raw = aioredis.Redis.from_url(redis_url)
    try:
        await raw.execute_command("CLIENT", "KILL", "ID", before["id"])
        STORED["t1"] = events(1, 2, 3)
        a.publish("t1", events(2, 3))  # perhaps while b listens to nothing
        await eventually(lambda: seen[-1:] == [3])
        after = await pubsub_client(redis_url, "chemmy-bus-node-b")
        await eventually(lambda: b.listening == {"t1"})
        after = await pubsub_client(redis_url, "chemmy-bus-node-b")
        assert after["id"] != before["id"]
        assert (after["ssub"], after["sub"]) == ("1", "2")
        STORED["t1"] = events(1, 2, 3, 4)
        a.publish("t1", events(4))
        await eventually(lambda: seen[-1:] == [4])
    finally:
        await raw.aclose()
    assert seen == [1, 2, 3, 4]
    assert await shard_channels(redis_url) == {"chemmy:{t1}:ev"}


async def test_without_sharded_pubsub_plain_pubsub_per_table(
    make_redis: Callable[..., RedisServer],
) -> None:
    """A Redis without ``SPUBLISH``/``SSUBSCRIBE`` (renamed away, as on Redis 6): the
    buses find it out and use plain pub/sub on the same per-table channels."""
    server = make_redis(
        extra=["--rename-command", "SPUBLISH", "", "--rename-command", "SSUBSCRIBE", ""]
    )
    a, b = await two_buses(server.url())
    try:
        assert not a.sharded and not b.sharded
        seen: list[int] = []
        b.subscribe("t1", lambda table, step: seen.extend(e.seq for e in step))
        await b.watch("t1")
        assert b.listening == {"t1"}
        a.publish("t1", events(1, 2))
        await eventually(lambda: seen == [1, 2])
        raw = aioredis.Redis.from_url(server.url(), decode_responses=True)
        try:
            assert "chemmy:{t1}:ev" in await raw.pubsub_channels()
            b.unwatch("t1")
            await eventually(lambda: not b.listening)
            assert "chemmy:{t1}:ev" not in await raw.pubsub_channels()
        finally:
            await raw.aclose()
    finally:
        await b.close()
        await a.close()
