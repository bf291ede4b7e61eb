"""The bus's pub/sub connection read without redis-py's ``PubSub`` (``server.bus.pubsub``,
issue 36), on a real ``redis-server``: the bus hears its tables' steps and its records
without one ``PubSub.get_message`` call; a message longer than one read, and messages cut
anywhere, arrive whole and in order; a connection Redis closes is a lost one (the bus
connects again and subscribes to its tables again); one that stops answering is found
lost after two silent waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
import redis.asyncio.client
from redis.exceptions import ConnectionError as RedisConnectionError

from server.bus.pubsub import PubSub
from server.bus.redis import RedisBus
from server.connect.redis import connect, resp_parser
from server.protocol.records import Address, CommandRecord
from server.vocabulary.events import Event
from tests.kit.redis import RedisServer
from tests.kit.timing import scaled


async def no_events(table: str, seq: int) -> list[Event] | None:
    return []


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(scaled(timeout)):
        while not check():
            await asyncio.sleep(0.005)


@contextlib.asynccontextmanager
async def two_buses(redis_url: str) -> AsyncIterator[tuple[RedisBus, RedisBus]]:
    """Two processes' buses, node-a owning every table."""

    async def owner_of(table: str) -> str | None:
        return "node-a"

    a = RedisBus(redis_url, node="node-a", events_after=no_events, owner_of=owner_of)
    b = RedisBus(redis_url, node="node-b", events_after=no_events, owner_of=owner_of)
    await a.start()
    await b.start()
    try:
        yield a, b
    finally:
        await b.close()
        await a.close()


async def test_the_bus_hears_steps_and_records_without_redis_pys_pubsub(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hundred steps (one of 200 KB: longer than a read) and ten relayed commands
    reach the other process in order, and redis-py's ``PubSub.get_message`` (about 80 µs
    a message) is never called."""
    calls: list[int] = []
    real = redis.asyncio.client.PubSub.get_message

    async def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(redis.asyncio.client.PubSub, "get_message", counting)

    async with two_buses(redis_url) as (a, b):
        seen: list[tuple[int, int]] = []
        got: list[CommandRecord] = []
        a.serve("t1", lambda record: None)
        a.serve("t2", got.append)
        b.subscribe("t1", lambda table, step: seen.extend((e.seq, len(e.data["x"])) for e in step))
        await b.watch("t1")
        for seq in range(1, 101):
            a.publish("t1", [Event(seq, "kind", {"x": "y" * (200_000 if seq == 50 else seq)})])
        for n in range(10):
            b.submit(CommandRecord("t2", "bet", "ann", n, {}, Address("node-b", 1, n)))
        await eventually(lambda: len(seen) == 100 and len(got) == 10)
        assert seen == [(seq, 200_000 if seq == 50 else seq) for seq in range(1, 101)]
        assert [record.id for record in got] == list(range(10))
        assert calls == []


def test_messages_cut_anywhere_are_read_whole_and_in_order() -> None:
    """What Redis sends may arrive in pieces cut anywhere (RESP2 and RESP3 alike)."""
    wire = (
        b">3\r\n$10\r\nssubscribe\r\n$14\r\nchemmy:{t1}:ev\r\n:1\r\n"
        b"*3\r\n$8\r\nsmessage\r\n$14\r\nchemmy:{t1}:ev\r\n$5\r\nhe\r\no\r\n"
        b"+PONG\r\n"
        b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
        b">3\r\n$7\r\nmessage\r\n$10\r\nchemmy:ctl\r\n$3\r\nabc\r\n"
    )
    for cut in range(len(wire)):
        reader = PubSub.__new__(PubSub)
        reader._parser = resp_parser()
        reader._parser.feed(wire[:cut])
        out = reader._parse()
        reader._parser.feed(wire[cut:])
        out += reader._parse()
        assert [(m["type"], m["channel"], m["data"]) for m in out] == [
            ("ssubscribe", b"chemmy:{t1}:ev", 1),
            ("smessage", b"chemmy:{t1}:ev", b"he\r\no"),
            ("message", b"chemmy:ctl", b"abc"),
        ], cut
        assert reader._parse() == [] and not reader._parser.has_data()


def test_what_is_not_resp_is_a_lost_connection() -> None:
    """A length that is no number, a kind RESP has not, or an error reply ends the
    connection (the bus connects again), never the bus's reader with another error."""
    for wire in (b"*x\r\n", b"$1z\r\nab\r\n", b"!3\r\nabc\r\n", b"-ERR no\r\n", b"?1\r\n"):
        reader = PubSub.__new__(PubSub)
        reader._parser = resp_parser()
        reader._parser.feed(wire)
        with pytest.raises(RedisConnectionError):
            reader._parse()


async def test_a_connection_redis_closes_is_lost_and_the_bus_hears_its_tables_again(
    redis_url: str,
) -> None:
    async with (
        two_buses(redis_url) as (a, b),
        contextlib.aclosing(aioredis.Redis.from_url(redis_url)) as raw,
    ):
        seen: list[int] = []
        a.serve("t1", lambda record: None)
        b.subscribe("t1", lambda table, step: seen.extend(e.seq for e in step))
        await b.watch("t1")
        a.publish("t1", [Event(1, "kind", {})])
        await eventually(lambda: seen == [1])
        assert await raw.client_kill_filter(skipme=True, _type="pubsub") >= 2  # type: ignore[no-untyped-call]
        await eventually(lambda: not b.connected.is_set() or b.listening == set(), 2.0)
        await eventually(lambda: b.connected.is_set() and b.listening == {"t1"})
        a.publish("t1", [Event(2, "kind", {})])
        await eventually(lambda: seen == [1, 2])


async def test_a_busy_reader_stops_the_connection_reading_until_it_parsed() -> None:
    """While the bus's reader is busy (a store read, retried), what arrives is held up
    to HELD_MOST bytes; past it the connection stops reading (the rest waits in Redis,
    as a stream's limit had it) until the reader has parsed what it holds (review)."""
    from server.bus.pubsub import HELD_MOST, _Heard

    class Transport:
        def __init__(self) -> None:
            self.reading = True

        def pause_reading(self) -> None:
            self.reading = False

        def resume_reading(self) -> None:
            self.reading = True

    reader = PubSub.__new__(PubSub)
    reader._parser, reader._health, reader._pinged = resp_parser(), 5.0, None
    transport = Transport()
    heard = reader._heard_by = _Heard(transport, reader._parser)  # type: ignore[arg-type]
    message = b"*3\r\n$7\r\nmessage\r\n$10\r\nchemmy:ctl\r\n$4096\r\n" + b"x" * 4096 + b"\r\n"
    fed = 0
    while fed <= HELD_MOST:
        assert transport.reading
        heard.data_received(message)
        fed += len(message)
    assert not transport.reading
    got = await reader.messages(1.0)
    assert len(got) == fed // len(message) and transport.reading


async def test_a_pong_read_between_two_waits_answers_the_ping() -> None:
    """What arrives while nobody waits (a PONG among it) is a sign of life all the same:
    the PING is answered, the connection is not taken for lost, and no other PING goes
    until the connection is silent again for its health check's time."""
    from server.bus.pubsub import _Heard

    class Transport:
        def __init__(self) -> None:
            self.written: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.written.append(data)

    reader = PubSub.__new__(PubSub)
    reader._parser, reader._health, reader._pinged = resp_parser(), 0.5, None
    transport = Transport()
    heard = reader._heard_by = _Heard(transport, reader._parser)  # type: ignore[arg-type]
    await asyncio.sleep(0.5)
    assert await reader.messages(0.05) == [] and transport.written == [b"*1\r\n$4\r\nPING\r\n"]
    heard.data_received(b"+PONG\r\n")  # (while nobody waits)
    assert await reader.messages(0.05) == [] and reader._pinged is None
    assert len(transport.written) == 1  # (heard 0.05 s ago: no PING yet)
    assert await reader.messages(0.5) == [] and len(transport.written) == 2  # (silent again)
    heard.connection_lost(None)
    with pytest.raises(RedisConnectionError):
        await reader.messages(0.05)


@pytest.mark.slow
async def test_a_connection_that_stops_answering_is_found_lost(tmp_path: Path) -> None:
    """Silent for its health check's time, it is sent a PING (answered: alive); silent a
    read's wait after that (Redis frozen), it is lost."""
    server = RedisServer(tmp_path)
    server.start()
    assert server.process is not None
    client = connect(server.url(), socket_connect_timeout=1, socket_timeout=1)
    reader = PubSub(client, "chemmy-bus-test", 0.3)
    try:
        await reader.connect()
        await reader.subscribe("chemmy:ctl")
        assert [m["type"] for m in await reader.messages(0.5)] == ["subscribe"]
        for _ in range(8):  # silent 0.3 s, a PING goes; its PONG comes: alive
            assert await reader.messages(0.2) == []
        server.process.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(RedisConnectionError):
                for _ in range(4):  # a PING within 0.3 s, lost a wait after it
                    assert await reader.messages(0.2) == []
        finally:
            server.process.send_signal(signal.SIGCONT)
    finally:
        await reader.aclose()
        await client.aclose()
        server.stop()
