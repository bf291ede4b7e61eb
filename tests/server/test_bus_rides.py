"""Replies that ride on their step's events (``server.bus.rides``, issue 36), over two real
buses on a real ``redis-server``: a relayed command whose gateway hears its table is
answered in the message of its step's events (one ``PUBLISH`` fewer a relayed command, and
one pub/sub message fewer read by the gateway), after those events; the gateway keeps
hearing the table until such a reply came, even when its last watcher leaves meanwhile;
a gateway that does not hear the table is answered on its own channel as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
from hypothesis import example, given, settings
from hypothesis import strategies as st

from server.bus import rides
from server.bus.redis import RedisBus
from server.protocol.records import Address, CommandRecord, ReplyRecord
from server.vocabulary.events import Event
from tests.kit.timing import scaled
from tests.server.test_bus_pubsub import two_buses


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(scaled(timeout)):
        while not check():
            await asyncio.sleep(0.005)


@pytest.fixture
async def pair(redis_url: str) -> AsyncIterator[tuple[RedisBus, RedisBus]]:
    async with two_buses(redis_url) as buses:  # (node-a owns t1)
        yield buses


async def calls(url: str) -> dict[str, int]:
    raw = aioredis.Redis.from_url(url)
    try:
        stats = await raw.info("commandstats")
    finally:
        await raw.aclose()
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


def owner(a: RedisBus, held: list[CommandRecord] | None = None) -> Callable[[CommandRecord], None]:
    """The owner's table: each command a step of one event, then its reply (the actor's
    order); with ``held``, the commands wait there to be answered by :func:`answer`."""

    def handle(record: CommandRecord) -> None:
        if held is not None:
            held.append(record)
        else:
            answer(a, record)

    return handle


def answer(a: RedisBus, record: CommandRecord) -> None:
    seq = int(str(record.id))
    a.publish("t1", [Event(seq, "bet_placed", {"n": seq})])
    assert record.reply_to is not None
    a.reply(ReplyRecord(record.reply_to, {"seq": seq}, after=("t1", seq)))


def command(b: RedisBus, seq: int) -> CommandRecord:
    return CommandRecord("t1", "bet", "ann", seq, {}, Address(b.node, 1, seq))


async def test_a_reply_rides_on_its_steps_events_when_its_gateway_hears_the_table(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    """Twenty commands relayed by a gateway that hears the table: twenty ``PUBLISH``es (the
    relays), not forty; each reply handed on after its step's event."""
    a, b = pair
    a.serve("t1", owner(a))
    seen: list[Any] = []
    b.subscribe("t1", lambda table, step: seen.extend(("event", e.seq) for e in step))
    b.on_replies(lambda reply: seen.append(("reply", reply.to.request)))
    await b.watch("t1")
    assert b.listening == {"t1"}
    before = await calls(redis_url)
    for seq in range(1, 21):
        b.submit(command(b, seq))
        await eventually(lambda: len(seen) == 2 * seq)  # noqa: B023 (waited for at once)
    after = await calls(redis_url)
    assert seen == [(kind, seq) for seq in range(1, 21) for kind in ("event", "reply")]
    assert after.get("spublish", 0) - before.get("spublish", 0) == 20
    assert after.get("publish", 0) - before.get("publish", 0) == 20  # the relays alone


async def test_a_gateway_that_does_not_hear_the_table_is_answered_on_its_channel(
    pair: tuple[RedisBus, RedisBus], redis_url: str
) -> None:
    a, b = pair
    a.serve("t1", owner(a))
    replies: list[ReplyRecord] = []
    b.on_replies(replies.append)
    before = await calls(redis_url)
    b.submit(command(b, 1))
    await eventually(lambda: len(replies) == 1)
    after = await calls(redis_url)
    assert replies[0].result == {"seq": 1}
    assert after.get("publish", 0) - before.get("publish", 0) == 2  # the relay, the reply


async def test_a_gateway_keeps_hearing_the_table_until_the_reply_riding_there_came(
    pair: tuple[RedisBus, RedisBus],
) -> None:
    """The last watcher here leaves while a relayed command waits at its owner: the channel
    stays subscribed until the reply, riding on the step's events, came; then it goes."""
    a, b = pair
    held: list[CommandRecord] = []
    a.serve("t1", owner(a, held))
    replies: list[ReplyRecord] = []
    b.on_replies(replies.append)
    await b.watch("t1")
    b.submit(command(b, 1))
    await eventually(lambda: len(held) == 1)
    b.unwatch("t1")  # (the player left the table: nobody here watches it now)
    await asyncio.sleep(scaled(0.2))
    assert b.listening == {"t1"}  # kept for the reply on its way
    answer(a, held[0])
    await eventually(lambda: len(replies) == 1)
    assert replies[0].result == {"seq": 1} and replies[0].after == ("t1", 1)
    await eventually(lambda: b.listening == set())


@pytest.mark.slow
async def test_a_reply_that_never_comes_lets_the_table_go_after_ride_max(
    pair: tuple[RedisBus, RedisBus], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner never answers (it died, or lost the table) and the gateway relays nothing
    more: the table's channel is let go once the reply was awaited past ``RIDE_MAX``, not
    heard for good."""
    monkeypatch.setattr(rides, "RIDE_MAX", 0.3)
    a, b = pair
    held: list[CommandRecord] = []
    a.serve("t1", owner(a, held))
    await b.watch("t1")
    b.submit(command(b, 1))
    await eventually(lambda: len(held) == 1)
    b.unwatch("t1")
    await asyncio.sleep(0.05)
    assert b.listening == {"t1"}  # kept for the reply on its way
    await eventually(lambda: b.listening == set())  # never answered: given up


def _outcome(read: Callable[[bytes], str], data: bytes) -> Any:
    try:
        return read(data)
    except Exception as exc:
        return type(exc)


def _unpacked(data: bytes) -> str:
    """The publisher as an Unpacker reads it (what ``rides.publisher`` did before)."""
    import msgpack

    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(data)
    unpacker.read_array_header()
    return str(unpacker.unpack())


@settings(max_examples=300, deadline=None)
@example(node="x" * 70_000, rest=[], cut=0)  # (a str 32)
@example(node="\u00e9" * 200, rest=[b"b"], cut=3)  # (a str 16: 400 bytes)
@example(node="a" * 100, rest=[1], cut=1)  # (a str 8)
@given(
    node=st.text(max_size=300),
    rest=st.lists(
        st.integers(-(2**63), 2**64 - 1) | st.text(max_size=5) | st.binary(max_size=5), max_size=20
    ),
    cut=st.integers(min_value=0, max_value=8),
)
def test_the_publisher_is_read_off_the_bytes_as_msgpack_reads_it(
    node: str, rest: list[Any], cut: int
) -> None:
    """An events message's publisher (its first element) is read off its bytes, whatever
    the lengths of the string and of the array (each msgpack header: fixstr, str 8, 16
    and 32; fixarray, array 16 and 32), as an Unpacker reads it; what is not such a
    message (cut short, another type first, not an array) comes out as it did through
    the Unpacker (issue 36: the Unpacker made for each message cost a process about
    40,000 instructions)."""
    import msgpack

    for message in ([node, *rest], [node] + [0] * 20, [node] + [0] * 70_000):
        data = msgpack.packb(message, use_bin_type=True)
        assert rides.publisher(data) == node
        short = data[: max(0, len(data) - len(message) - len(node.encode()) - cut)]
        assert _outcome(rides.publisher, short) == _outcome(_unpacked, short)
    odd = [b"", msgpack.packb({"a": 1}), msgpack.packb([1, node]), b"\x91\xc1", b"\x91\xdb"]
    odd += [msgpack.packb([node.encode(), *rest]), msgpack.packb(node)]
    for data in odd:
        assert _outcome(rides.publisher, data) == _outcome(_unpacked, data), data
