"""The bus contract (server/bus/base.py), run against every implementation.

Two parts of a process meet on the bus: a gateway submits command records and gets the
replies addressed to it; an owner serves a table's commands, replies, and publishes each
stored step's events to every subscriber, in seq order, each once. These tests drive one
bus as both parts (one process); the many-process tests drive several.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from server.bus.base import Bus
from server.bus.local import LocalBus
from server.protocol.errors import Refused
from server.protocol.records import Address, CommandRecord, ReplyRecord
from server.table.events import Event

STORED: dict[str, list[Event]] = {}


async def stored_after(table: str, seq: int) -> list[Event] | None:
    events = STORED.get(table)
    if events is None:
        return None
    return [e for e in events if e.seq > seq]


@pytest.fixture(params=["local"])
async def bus(request: pytest.FixtureRequest) -> AsyncIterator[Bus]:
    made: Bus = LocalBus("node-a", events_after=stored_after)
    await made.start()
    yield made
    await made.close()


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait until ``check()`` holds (a remote bus delivers asynchronously)."""
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.005)


def events(*seqs: int) -> list[Event]:
    return [Event(seq, "kind", {"n": seq}) for seq in seqs]


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
    with pytest.raises(Refused) as err:
        bus.submit(CommandRecord("nowhere", "sit", "ann"))
    assert err.value.code == "no_table"
    bus.serve("t1", lambda record: None)
    bus.unserve("t1")
    with pytest.raises(Refused):
        bus.submit(CommandRecord("t1", "sit", "ann"))


async def test_the_owners_refusal_reaches_the_submitter(bus: Bus) -> None:
    def full(record: CommandRecord) -> None:
        raise Refused("busy", "the table is busy; try again")

    bus.serve("t1", full)
    with pytest.raises(Refused) as err:
        bus.submit(CommandRecord("t1", "sit", "ann"))
    assert err.value.code == "busy"


async def test_events_reach_every_subscriber_in_order_each_once(bus: Bus) -> None:
    seen: dict[str, list[int]] = {"a": [], "b": []}

    def recorder(name: str) -> Callable[[str, Sequence[Event]], None]:
        def handler(table: str, step: Sequence[Event]) -> None:
            assert table == "t1"
            seen[name].extend(e.seq for e in step)

        return handler

    a, b = recorder("a"), recorder("b")
    bus.subscribe("t1", a)
    bus.subscribe("t1", a)  # subscribing twice delivers once
    bus.subscribe("t1", b)
    for step in (events(1, 2), events(3), events(4, 5, 6)):
        bus.publish("t1", step)
    await eventually(lambda: len(seen["a"]) == len(seen["b"]) == 6)
    assert seen["a"] == seen["b"] == [1, 2, 3, 4, 5, 6]
    bus.unsubscribe("t1", a)
    bus.publish("t1", events(7))
    await eventually(lambda: seen["b"][-1] == 7)
    assert seen["a"][-1] == 6


async def test_other_tables_events_do_not_arrive(bus: Bus) -> None:
    seen: list[str] = []
    bus.subscribe("t1", lambda table, step: seen.append(table))
    bus.publish("t2", events(1))
    bus.publish("t1", events(1))
    await eventually(lambda: bool(seen))
    assert seen == ["t1"]


async def test_a_failing_subscriber_stops_neither_the_others_nor_the_publisher(
    bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[int] = []

    def broken(table: str, step: Sequence[Event]) -> None:
        raise RuntimeError("a bug in one subscriber")

    bus.subscribe("t1", broken)
    bus.subscribe("t1", lambda table, step: seen.extend(e.seq for e in step))
    bus.publish("t1", events(1))
    await eventually(lambda: seen == [1])
    assert "failed" in caplog.text


async def test_catch_up_reads_the_stored_events(bus: Bus) -> None:
    STORED["t1"] = events(1, 2, 3, 4)
    try:
        after = await bus.events_after("t1", 2)
        assert after is not None and [e.seq for e in after] == [3, 4]
        assert await bus.events_after("t9", 0) is None
    finally:
        STORED.clear()


def test_the_contract_lists_every_method() -> None:
    methods: set[Any] = {
        "start", "close", "serve", "unserve", "publish", "reply",
        "submit", "on_replies", "subscribe", "unsubscribe", "events_after",
    }  # fmt: skip
    for name in methods:
        assert callable(getattr(LocalBus, name)), name
