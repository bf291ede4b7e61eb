"""The bus contract (server/bus/base.py), run against every implementation.

Two parts of a process meet on the bus: a gateway submits command records and gets the
replies addressed to it; an owner serves a table's commands, replies, and publishes each
stored step's events to every subscriber, in seq order, each once. The first part of
this file drives one bus as both parts (one process), for :class:`LocalBus` and for
:class:`RedisBus` over a real ``redis-server`` (the ``redis_url`` fixture). The second
part drives two :class:`RedisBus` instances on one Redis as two processes: a record
relayed from a gateway to an owner and its reply back; events reaching the other
process in order, each once, before the reply they led to; a gap filled from the stored
events (pub/sub may lose messages); a subscription dropped by Redis
(``CLIENT KILL TYPE pubsub``) and Redis itself restarted (``make_redis``), after which
nothing is missed and nothing is delivered twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest
import redis.asyncio as aioredis

from server.bus.base import Bus, BusCounts
from server.bus.local import LocalBus
from server.bus.redis import RedisBus
from server.bus.rides import StepMessage
from server.protocol.errors import Refused, StoreUnavailable
from server.protocol.records import Address, CommandRecord, ReplyRecord
from server.vocabulary.events import Event
from tests.kit.redis import RedisServer
from tests.kit.timing import scaled

STORED: dict[str, list[Event]] = {}
#: Table t1's event channel (sharded pub/sub, in the table's hash slot).
EV = "chemmy:{t1}:ev"
#: table -> the node that owns it, for the Redis buses' owner lookup (the leases' part).
OWNERS: dict[str, str] = {}


async def stored_after(table: str, seq: int) -> list[Event] | None:
    events = STORED.get(table)
    if events is None:
        return None
    return [e for e in events if e.seq > seq]


async def owner_of(table: str) -> str | None:
    return OWNERS.get(table)


def redis_bus(url: str, node: str) -> RedisBus:
    return RedisBus(url, node=node, events_after=stored_after, owner_of=owner_of)


@pytest.fixture(autouse=True)
def _clean() -> Any:
    yield
    STORED.clear()
    OWNERS.clear()


@pytest.fixture(params=["local", "redis"])
async def bus(request: pytest.FixtureRequest) -> AsyncIterator[Bus]:
    made: Bus
    if request.param == "local":
        made = LocalBus("node-a", events_after=stored_after)
    else:
        made = redis_bus(request.getfixturevalue("redis_url"), "node-a")
    await made.start()
    yield made
    await made.close()


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait until ``check()`` holds (a remote bus delivers asynchronously; the timeout
    scaled)."""
    async with asyncio.timeout(scaled(timeout)):
        while not check():
            await asyncio.sleep(0.005)


def events(*seqs: int) -> list[Event]:
    return [Event(seq, "kind", {"n": seq}) for seq in seqs]


def recorder(seen: list[Any]) -> Callable[[str, Sequence[Event]], None]:
    def handler(table: str, step: Sequence[Event]) -> None:
        seen.extend(e.seq for e in step)

    return handler


# ---------------------------------------------------------------- one process, every bus
async def test_a_record_reaches_the_owner_and_its_reply_the_gateway(bus: Bus) -> None:
    got: list[CommandRecord] = []
    replies: list[ReplyRecord] = []
    bus.serve("t1", got.append)
    bus.on_replies(replies.append)
    to = Address(bus.node, 7, 1)
    record = CommandRecord("t1", "bet", "ann", "b-1", {"area": "player", "amount": 100}, to)
    bus.submit(record)
    await eventually(lambda: bool(got))
    assert got == [record]
    bus.reply(ReplyRecord.ok(to, seq=5, duplicate=False))
    await eventually(lambda: bool(replies))
    assert replies == [ReplyRecord.ok(to, seq=5, duplicate=False)]


async def test_a_table_nobody_serves_is_refused(bus: Bus) -> None:
    """Refused at once when the bus can tell (one process), else answered with an error
    reply (the owner is elsewhere, or nowhere): never silence."""
    replies: list[ReplyRecord] = []
    bus.on_replies(replies.append)

    async def refusal(record: CommandRecord) -> str:
        try:
            bus.submit(record)
        except Refused as err:
            return err.code
        await eventually(lambda: bool(replies))
        (reply,) = replies
        replies.clear()
        assert reply.to == record.reply_to and reply.error is not None
        assert reply.error["message"]
        return reply.error["code"]

    to = Address(bus.node, 1, 1)
    assert await refusal(CommandRecord("nowhere", "sit", "ann", reply_to=to)) in (
        "no_table",
        "unavailable",
    )
    bus.serve("t1", lambda record: None)
    bus.unserve("t1")
    assert await refusal(CommandRecord("t1", "sit", "ann", reply_to=to)) in (
        "no_table",
        "unavailable",
    )


async def test_the_owners_refusal_reaches_the_submitter(bus: Bus) -> None:
    def full(record: CommandRecord) -> None:
        raise Refused("busy", "the table is busy; try again")

    bus.serve("t1", full)
    with pytest.raises(Refused) as err:
        bus.submit(CommandRecord("t1", "sit", "ann"))
    assert err.value.code == "busy"


async def test_events_reach_every_subscriber_in_order_each_once(bus: Bus) -> None:
    seen: dict[str, list[int]] = {"a": [], "b": []}
    a, b = recorder(seen["a"]), recorder(seen["b"])
    bus.subscribe("t1", a)
    bus.subscribe("t1", a)  # subscribing twice delivers once
    bus.subscribe("t1", b)
    await bus.watch("t1")  # (a no-op for one process)
    for step in (events(1, 2), events(3), events(4, 5, 6)):
        bus.publish("t1", step)
    await eventually(lambda: len(seen["a"]) == len(seen["b"]) == 6)
    bus.unsubscribe("t1", a)
    bus.publish("t1", events(7))
    await eventually(lambda: seen["b"][-1] == 7)
    await asyncio.sleep(scaled(0.1))  # a Redis bus's own copy comes back: it is not delivered again
    assert seen["a"] == [1, 2, 3, 4, 5, 6]
    assert seen["b"] == [1, 2, 3, 4, 5, 6, 7]


async def test_other_tables_events_do_not_arrive(bus: Bus) -> None:
    seen: list[str] = []
    bus.subscribe("t1", lambda table, step: seen.append(table))
    bus.publish("t2", events(1))
    bus.publish("t1", events(1))
    await eventually(lambda: bool(seen))
    await asyncio.sleep(scaled(0.1))
    assert seen == ["t1"]


async def test_a_failing_subscriber_stops_neither_the_others_nor_the_publisher(
    bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[int] = []

    def broken(table: str, step: Sequence[Event]) -> None:
        raise RuntimeError("a bug in one subscriber")

    bus.subscribe("t1", broken)
    bus.subscribe("t1", recorder(seen))
    bus.publish("t1", events(1))
    await eventually(lambda: seen == [1])
    assert "failed" in caplog.text


async def test_catch_up_reads_the_stored_events(bus: Bus) -> None:
    STORED["t1"] = events(1, 2, 3, 4)
    after = await bus.events_after("t1", 2)
    assert after is not None and [e.seq for e in after] == [3, 4]
    assert await bus.events_after("t9", 0) is None


async def test_catching_up_delivers_nothing_twice(bus: Bus) -> None:
    seen: list[int] = []
    bus.subscribe("t1", recorder(seen))
    STORED["t1"] = events(1, 2)
    bus.publish("t1", events(1, 2))
    await eventually(lambda: seen == [1, 2])
    await bus.catch_up("t1")
    bus.publish("t1", events(3))
    await eventually(lambda: seen[-1] == 3)
    await asyncio.sleep(scaled(0.1))
    assert seen == [1, 2, 3]


def test_the_contract_lists_every_method() -> None:
    methods: set[Any] = {
        "start", "close", "serve", "unserve", "publish", "reply",
        "submit", "on_replies", "subscribe", "unsubscribe", "watch", "unwatch",
        "events_after", "catch_up", "not_ready", "on_control", "control", "counts",
    }  # fmt: skip
    declared = {name for name in vars(Bus) if not name.startswith("_") and name != "node"}
    assert declared == methods  # what the gateway and the croupier may ask of a bus
    for cls in (LocalBus, RedisBus):
        for name in methods:
            assert callable(getattr(cls, name)), (cls, name)


def test_one_process_answers_the_process_side_trivially() -> None:
    """Issue 35: readiness, notices and counters are the interface's, not probed with
    ``getattr``; in one process the bus is always ready, tells nobody, counts nothing."""
    bus, heard = LocalBus(), list[dict[str, Any]]()
    bus.on_control(heard.append)
    bus.control({"kind": "tables"})
    assert (bus.not_ready(), bus.counts(), heard) == (None, None, [])


def test_a_redis_bus_not_started_is_not_ready_and_counts_nothing(redis_url: str) -> None:
    bus = redis_bus(redis_url, "node-a")
    assert bus.not_ready() == "bus unreachable"
    assert bus.counts() == BusCounts(relayed=0, backfilled=0, received={}, listening=0)


# ------------------------------------------------------- two processes over one Redis
@pytest.fixture
async def pair(redis_url: str) -> AsyncIterator[tuple[RedisBus, RedisBus]]:
    """Two buses on one Redis, as two processes: ``a`` owns t1, ``b`` is a gateway."""
    a, b = redis_bus(redis_url, "node-a"), redis_bus(redis_url, "node-b")
    await a.start()
    await b.start()
    OWNERS["t1"] = a.node
    try:
        yield a, b
    finally:
        await b.close()
        await a.close()


async def test_a_record_is_relayed_to_the_owner_and_the_reply_comes_back(
    pair: tuple[RedisBus, RedisBus],
) -> None:
    a, b = pair
    got: list[CommandRecord] = []
    replies: list[ReplyRecord] = []
    a.serve("t1", got.append)
    b.on_replies(replies.append)
    to = Address(b.node, 3, 9)
    record = CommandRecord("t1", "bet", "ann", "b-1", {"area": "tie", "amount": 100}, to)
    b.submit(record)
    await eventually(lambda: bool(got))
    assert got == [record]  # the same record, across the process boundary
    a.reply(ReplyRecord.ok(to, seq=12, duplicate=False))
    await eventually(lambda: bool(replies))
    assert replies == [ReplyRecord.ok(to, seq=12, duplicate=False)]
    assert b.relayed == 1


async def test_a_remote_owners_refusal_is_a_reply(pair: tuple[RedisBus, RedisBus]) -> None:
    a, b = pair
    replies: list[ReplyRecord] = []
    b.on_replies(replies.append)

    def full(record: CommandRecord) -> None:
        raise Refused("busy", "the table is busy; try again")

    a.serve("t1", full)
    to = Address(b.node, 1, 1)
    b.submit(CommandRecord("t1", "sit", "ann", reply_to=to))
    await eventually(lambda: bool(replies))
    assert replies[0].error is not None and replies[0].error["code"] == "busy"


async def test_an_owner_that_is_gone_or_moving_is_unavailable(
    pair: tuple[RedisBus, RedisBus],
) -> None:
    """The lease names a process that no longer listens, or one that no longer serves
    the table (it moved): the gateway hears ``unavailable`` at once, not silence."""
    a, b = pair
    replies: list[ReplyRecord] = []
    b.on_replies(replies.append)
    OWNERS["t1"] = "node-gone"
    b.submit(CommandRecord("t1", "sit", "ann", reply_to=Address(b.node, 1, 1)))
    OWNERS["t2"] = a.node  # a names itself owner of t2 but serves nothing there
    b.submit(CommandRecord("t2", "sit", "ann", reply_to=Address(b.node, 1, 2)))
    await eventually(lambda: len(replies) == 2)
    assert sorted((r.to.request, r.error and r.error["code"]) for r in replies) == [
        (1, "unavailable"),
        (2, "unavailable"),
    ]


async def test_an_owner_nobody_can_look_up_is_unavailable_and_the_bus_goes_on(
    redis_url: str,
) -> None:
    """The owner lookup (the leases) raises the store's StoreUnavailable while Redis
    fails over: that command is answered ``unavailable`` and the bus's sender goes on
    relaying the next ones (it once ended, and no command left the process again)."""
    failing = True

    async def lookup(table: str) -> str | None:
        if failing:
            raise StoreUnavailable("Redis: no master found")
        return OWNERS.get(table)

    a = redis_bus(redis_url, "node-a")
    b = RedisBus(redis_url, node="node-b", events_after=stored_after, owner_of=lookup)
    await a.start()
    await b.start()
    try:
        OWNERS["t1"] = a.node
        got: list[CommandRecord] = []
        replies: list[ReplyRecord] = []
        a.serve("t1", got.append)
        b.on_replies(replies.append)
        b.submit(CommandRecord("t1", "sit", "ann", reply_to=Address(b.node, 1, 1)))
        await eventually(lambda: bool(replies))
        assert replies[0].error is not None and replies[0].error["code"] == "unavailable"
        failing = False
        again = CommandRecord("t1", "sit", "ann", reply_to=Address(b.node, 1, 2))
        b.submit(again)
        await eventually(lambda: bool(got))
        assert got == [again]
    finally:
        await b.close()
        await a.close()


async def test_events_reach_the_other_process_before_the_reply_they_led_to(
    pair: tuple[RedisBus, RedisBus],
) -> None:
    a, b = pair
    seen: list[Any] = []
    b.subscribe("t1", recorder(seen))
    await b.watch("t1")
    b.on_replies(lambda reply: seen.append("reply"))
    to = Address(b.node, 1, 1)

    def owner(record: CommandRecord) -> None:  # a step: stored, published, answered
        a.publish("t1", events(1, 2))
        a.reply(ReplyRecord.ok(to, seq=2, duplicate=False))

    a.serve("t1", owner)
    b.submit(CommandRecord("t1", "bet", "ann", reply_to=to))
    await eventually(lambda: "reply" in seen)
    assert seen == [1, 2, "reply"]


async def test_a_burst_goes_out_in_few_round_trips_and_in_order(
    pair: tuple[RedisBus, RedisBus],
) -> None:
    """An owner busier than one ``PUBLISH`` round trip per message: 3,000 steps and a
    reply after every 100th reach the other process in order, each once, in far fewer
    writes than messages (the outbox is sent in batches, not one by one)."""
    a, b = pair
    seen: list[Any] = []
    b.subscribe("t1", recorder(seen))
    await b.watch("t1")
    b.on_replies(lambda reply: seen.append(("reply", reply.to.request)))
    assert a._lane is not None
    real = a._lane.send
    pipelines: list[int] = []

    async def counted(commands: Any) -> Any:
        pipelines.append(len(commands))
        return await real(commands)

    a._lane.send = counted  # type: ignore[method-assign]
    expected: list[Any] = []
    for seq in range(1, 3001):
        a.publish("t1", events(seq))
        expected.append(seq)
        if seq % 100 == 0:
            a.reply(ReplyRecord.ok(Address(b.node, 1, seq), seq=seq, duplicate=False))
            expected.append(("reply", seq))
    await eventually(lambda: len(seen) >= len(expected), timeout=20)
    assert seen == expected
    assert 0 < len(pipelines) < 300, len(pipelines)


async def test_the_writer_sends_without_the_pool_and_relays_with_the_events(
    pair: tuple[RedisBus, RedisBus],
) -> None:
    """The bus's writer sends on a connection of its own (``server.connect.redis.Lane``):
    no connection is checked out of redis-py's pool for a publish or a relay, and a
    command relayed right after a step goes in the same write as the step's events, in
    order (issue 36: a pipeline and a pool checkout a batch, and a round trip of its own
    for each relay, were a tenth of a cluster process's CPU)."""
    a, b = pair
    got: list[CommandRecord] = []
    seen: list[Any] = []
    a.serve("t1", got.append)
    a.subscribe("t2", recorder(seen))
    await a.watch("t2")
    b.serve("t2", lambda record: None)
    assert b._redis is not None and b._lane is not None
    pool = b._redis.connection_pool
    checkouts: list[int] = []
    real_checkout, real_send = pool.get_connection, b._lane.send

    async def checkout(*args: Any, **kwargs: Any) -> Any:
        checkouts.append(1)
        return await real_checkout(*args, **kwargs)

    writes: list[list[str]] = []

    async def send(commands: Any) -> Any:
        writes.append([str(command[0]) for command in commands])
        return await real_send(commands)

    pool.get_connection = checkout  # type: ignore[method-assign]
    b._lane.send = send  # type: ignore[method-assign]
    for seq in range(1, 21):
        b.publish("t2", events(seq))
        b.submit(CommandRecord("t1", "bet", "ann", f"b-{seq}", reply_to=Address(b.node, 1, seq)))
    await eventually(lambda: len(got) == 20 and len(seen) == 20)
    assert [r.id for r in got] == [f"b-{seq}" for seq in range(1, 21)]
    assert seen == list(range(1, 21))
    assert checkouts == []
    assert b.relayed == 20
    assert sum(len(w) for w in writes) == 40 and len(writes) < 40, writes
    first = writes[0]
    assert first[:2] == [("SPUBLISH" if b.sharded else "PUBLISH"), "PUBLISH"]


async def test_a_process_drops_its_own_steps_coming_back(pair: tuple[RedisBus, RedisBus]) -> None:
    """The owner's subscribers had its step when it was published; the copy Redis sends
    back is dropped undecoded, and the bus lag is measured on other processes' steps."""
    a, b = pair
    seen_a: list[Any] = []
    seen_b: list[Any] = []
    lag_a: list[float] = []
    lag_b: list[float] = []
    a.subscribe("t1", recorder(seen_a))
    b.subscribe("t1", recorder(seen_b))
    await b.watch("t1")
    a.on_lag, b.on_lag = lag_a.append, lag_b.append
    a.publish("t1", events(1, 2))
    a.publish("t1", events(3))
    notices: list[dict[str, Any]] = []
    a.on_control(notices.append)
    a.control({"kind": "tables"})  # sent after the steps on one connection: heard after
    await eventually(lambda: len(seen_b) == 3 and bool(notices))
    assert seen_a == [1, 2, 3] and seen_b == [1, 2, 3]
    assert lag_a == [] and len(lag_b) == 2


async def test_a_gap_is_filled_from_the_stored_events_and_nothing_comes_twice(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    a, b = pair
    seen: list[int] = []
    b.subscribe("t1", recorder(seen))
    await b.watch("t1")
    STORED["t1"] = events(1, 2, 3, 4, 5)
    a.publish("t1", events(1))
    await eventually(lambda: seen == [1])
    # Steps 2-4 were published while pub/sub lost them: only 5 arrives.
    raw = aioredis.Redis.from_url(redis_url)
    try:
        await raw.spublish(EV, StepMessage("t1", events(5), "").packed()[1])
        await eventually(lambda: len(seen) >= 5)
        assert b.backfilled == 4  # 2-5 read back; then 5 as it came is already delivered
        # A batch already delivered (a copy, or a stale message) is dropped.
        await raw.spublish(EV, StepMessage("t1", events(3, 4), "").packed()[1])
        a.publish("t1", events(6))
        await eventually(lambda: seen[-1] == 6)
    finally:
        await raw.aclose()
    assert seen == [1, 2, 3, 4, 5, 6]


def bend(seq: int, percent: int) -> Event:
    """A transient event (a squeezed card's bend): the seq of the stored one before it."""
    return Event(seq, "progress", {"percent": percent}, None, True)


def labels(seen: list[Any]) -> Callable[[str, Sequence[Event]], None]:
    def handler(table: str, step: Sequence[Event]) -> None:
        seen.extend(f"{e.seq}~{e.data['percent']}" if e.transient else e.seq for e in step)

    return handler


async def test_a_bend_is_delivered_after_its_event_and_never_read_back(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    """A transient event travels in its step's message, marked (an old process drops
    the message as malformed), with the seq of the stored event before it: delivered
    once that one is, after it; a lost stored step is read back from the store and then
    the bend is shown; a lost bend is not read back (it was never stored)."""
    a, b = pair
    seen: list[Any] = []
    b.subscribe("t1", labels(seen))
    await b.watch("t1")
    STORED["t1"] = events(1, 2, 3)  # (a bend is never among the stored events)
    a.publish("t1", events(1))
    a.publish("t1", [bend(1, 10)])  # a step of a bend alone: its seq is 1's
    a.publish("t1", [bend(1, 20), *events(2)])
    await eventually(lambda: len(seen) == 4)
    assert seen == [1, "1~10", "1~20", 2]
    raw = aioredis.Redis.from_url(redis_url)
    try:
        # Step 3 was lost on the way: a bend that follows it fills the gap first.
        await raw.spublish(EV, StepMessage("t1", [bend(3, 30)], "").packed()[1])
        await eventually(lambda: len(seen) == 6)
        assert seen[4:] == [3, "3~30"] and b.backfilled == 1
        # A bend that follows an event already passed is late: dropped, never read back.
        await raw.spublish(EV, StepMessage("t1", [bend(2, 25)], "").packed()[1])
        a.publish("t1", events(4))
        await eventually(lambda: seen[-1] == 4)
    finally:
        await raw.aclose()
    assert seen == [1, "1~10", "1~20", 2, 3, "3~30", 4] and b.backfilled == 1


async def test_garbage_and_failing_handlers_do_not_stop_the_reader(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    """Whatever comes over Redis (truncated or empty msgpack, a wrong shape) and whatever
    a handler raises, the bus's one reader goes on: later events, replies and notices
    still arrive."""
    a, b = pair
    seen: list[int] = []
    b.subscribe("t1", recorder(seen))
    await b.watch("t1")
    notices: list[dict[str, Any]] = []

    def control(notice: dict[str, Any]) -> None:
        notices.append(notice)
        if notice.get("kind") == "boom":
            raise RuntimeError("a handler's bug")

    b.on_control(control)
    raw = aioredis.Redis.from_url(redis_url)
    try:
        for junk in (b"", b"\x90", b"\x94\xa1", b"\xc1", b"\x93\x01\x02\x03", b"{}"):
            await raw.spublish(EV, junk)
            await raw.publish(f"chemmy:node:{b.node}", junk)
            await raw.publish("chemmy:ctl", junk)
        a.control({"kind": "boom"})
        a.publish("t1", events(1))
        a.control({"kind": "tables"})
        await eventually(lambda: seen == [1] and notices[-1:] == [{"kind": "tables"}])
    finally:
        await raw.aclose()


async def test_a_gap_the_store_cannot_fill_yet_is_filled_at_the_next_event(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    """The stream cannot be read when a gap shows (the store fails): nothing is
    delivered out of order and the reader goes on; the next event fills the gap."""
    a, b = pair
    seen: list[int] = []
    b.subscribe("t1", recorder(seen))
    await b.watch("t1")
    a.publish("t1", events(1))
    await eventually(lambda: seen == [1])
    failing = True

    async def flaky(table: str, seq: int) -> list[Event] | None:
        if failing:
            raise OSError("the store is down")
        return await stored_after(table, seq)

    b._events_after = flaky
    STORED["t1"] = events(1, 2, 3, 4)
    raw = aioredis.Redis.from_url(redis_url)
    try:
        await raw.spublish(EV, StepMessage("t1", events(3), "").packed()[1])  # 2 was lost
        a.control({"kind": "tables"})  # heard after 3: b has handled 3 by then
        notices: list[dict[str, Any]] = []
        b.on_control(notices.append)
        await eventually(lambda: bool(notices))
        assert seen == [1]  # not 3 before 2
        failing = False
        a.publish("t1", events(4))
        await eventually(lambda: seen[-1:] == [4])
    finally:
        await raw.aclose()
    assert seen == [1, 2, 3, 4]


async def test_a_dropped_subscription_catches_up_on_reconnecting(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    """``CLIENT KILL TYPE pubsub``: both processes' subscriptions are cut. What was
    published while ``b`` had none reaches it from the stored events when it is back,
    before anything newer, each once."""
    a, b = pair
    seen: list[int] = []
    b.subscribe("t1", recorder(seen))
    await b.watch("t1")
    STORED["t1"] = events(1)
    a.publish("t1", events(1))
    await eventually(lambda: seen == [1])
    raw = aioredis.Redis.from_url(redis_url)
    try:
        killed = await raw.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        assert killed >= 2
        STORED["t1"] = events(1, 2, 3)
        a.publish("t1", events(2, 3))  # into the void, or not: either way once
        await eventually(lambda: seen[-1:] == [3])
        await eventually(lambda: a.connected.is_set() and b.connected.is_set())
        STORED["t1"] = events(1, 2, 3, 4)
        a.publish("t1", events(4))
        await eventually(lambda: seen[-1:] == [4])
    finally:
        await raw.aclose()
    assert seen == [1, 2, 3, 4]


async def test_a_restarted_redis_misses_nothing(make_redis: Callable[..., RedisServer]) -> None:
    """Redis stops and starts again (AOF on): both buses reconnect by themselves; what
    was stored meanwhile reaches the gateway, in order, each once; commands and
    replies travel again."""
    server = make_redis()
    a, b = redis_bus(server.url(), "node-a"), redis_bus(server.url(), "node-b")
    await a.start()
    await b.start()
    try:
        OWNERS["t1"] = a.node
        seen: list[int] = []
        b.subscribe("t1", recorder(seen))
        await b.watch("t1")
        STORED["t1"] = events(1)
        a.publish("t1", events(1))
        await eventually(lambda: seen == [1])
        await asyncio.to_thread(server.stop)
        await eventually(lambda: not b.connected.is_set())
        STORED["t1"] = events(1, 2)
        a.publish("t1", events(2))  # Redis is down: lost on the way, kept in the store
        # A command queued behind the step a keeps trying to publish is answered now,
        # not relayed after its gateway gave up on it.
        OWNERS["t2"] = b.node
        refused: list[ReplyRecord] = []
        a.on_replies(refused.append)
        a.submit(CommandRecord("t2", "done", "bob", reply_to=Address(a.node, 1, 7)))
        await eventually(lambda: bool(refused))
        assert refused[0].error is not None and refused[0].error["code"] == "unavailable"
        await asyncio.to_thread(server.start)
        await eventually(lambda: a.connected.is_set() and b.connected.is_set(), timeout=10)
        await eventually(lambda: seen[-1:] == [2])
        got: list[CommandRecord] = []
        replies: list[ReplyRecord] = []
        a.serve("t1", got.append)
        b.on_replies(replies.append)
        to = Address(b.node, 1, 1)
        b.submit(CommandRecord("t1", "done", "ann", reply_to=to))
        await eventually(lambda: bool(got))
        a.reply(ReplyRecord.ok(to, seq=2, duplicate=False))
        await eventually(lambda: bool(replies))
        STORED["t1"] = events(1, 2, 3)
        a.publish("t1", events(3))
        await eventually(lambda: seen[-1:] == [3])
        assert seen == [1, 2, 3]
    finally:
        await b.close()
        await a.close()


async def test_a_new_owner_first_delivers_what_the_last_one_stored_but_never_sent(
    pair: tuple[RedisBus, RedisBus],
) -> None:
    """The owner ``a`` stored steps 2 and 3, then died before publishing them. ``b``
    takes the table over: before its actor publishes step 4, its own subscribers get 2
    and 3 from the stored events (a process delivers its own steps at once, without
    the gap check events from Redis get)."""
    a, b = pair
    seen: list[int] = []
    b.subscribe("t1", recorder(seen))
    await b.watch("t1")
    STORED["t1"] = events(1)
    a.publish("t1", events(1))
    await eventually(lambda: seen == [1])
    await a.close()
    STORED["t1"] = events(1, 2, 3)
    OWNERS["t1"] = b.node
    await b.catch_up("t1")
    b.serve("t1", lambda record: None)
    STORED["t1"] = events(1, 2, 3, 4)
    b.publish("t1", events(4))
    assert seen == [1, 2, 3, 4]


async def test_notices_reach_every_process(pair: tuple[RedisBus, RedisBus]) -> None:
    a, b = pair
    heard: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    a.on_control(heard["a"].append)
    b.on_control(heard["b"].append)
    a.control({"kind": "tables"})
    await eventually(lambda: bool(heard["a"]) and bool(heard["b"]))
    assert heard["a"] == heard["b"] == [{"kind": "tables"}]


async def test_closing_sends_what_is_queued_first(pair: tuple[RedisBus, RedisBus]) -> None:
    """A stopping process's last steps and its leaving notice are queued as it closes its
    bus: they still go out."""
    a, b = pair
    seen: list[int] = []
    heard: list[dict[str, Any]] = []
    b.subscribe("t1", recorder(seen))
    await b.watch("t1")
    b.on_control(heard.append)
    a.publish("t1", events(1, 2))
    a.control({"kind": "leaving", "node": a.node})
    await a.close()
    await eventually(lambda: seen == [1, 2] and heard == [{"kind": "leaving", "node": a.node}])
