"""An owner publishes a step on Redis only while another process may hear its table
(``server.bus.audience``, placement by players; issue 36: a routed cluster's ``SPUBLISH``
of every step reached nobody).

The pure part: a mark holds for its time, the members' lines count for the tables other
members list, this process's own line never. The real part, two buses on a real
``redis-server``: an owner whose table nobody else hears delivers its steps to its own
subscribers and publishes nothing (a raw subscriber on the channel hears nothing); a
command relayed from another process marks the table, and from its step on that process
hears every step; once the mark is over and no line lists the table, the steps stay
home again; and a watcher whose line lists the table hears it with no mark at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from server.bus.audience import HOLD, Audience
from server.bus.channels import event_channel
from server.bus.redis import RedisBus
from server.protocol.records import Address, CommandRecord, ReplyRecord
from server.vocabulary.events import Event
from tests.kit.timing import scaled
from tests.server.test_bus_watch import events, eventually

Lines = dict[str, dict[str, int] | None]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- the pure part ---------------------------------------------------------------------


def test_a_mark_holds_for_its_time_and_then_the_lines_decide() -> None:
    clock = Clock()
    audience = Audience("me", clock=clock)
    audience.read({})
    assert not audience.heard("t1")
    audience.mark("t1")
    clock.now += HOLD - 0.01
    assert audience.heard("t1") and not audience.heard("t2")
    clock.now += 0.02
    assert not audience.heard("t1")


def test_the_lines_of_other_members_count_and_its_own_never() -> None:
    audience = Audience("me", clock=Clock())
    audience.read({"me": {"t1": 5}, "other": {"t2": 1, "t3": 0}})
    assert [audience.heard(t) for t in ("t1", "t2", "t3")] == [False, True, False]
    audience.read({"me": {"t1": 5}, "other": {"t1": 1}})  # (a new read)
    assert [audience.heard(t) for t in ("t1", "t2")] == [True, False]


def test_a_live_member_with_no_line_hears_every_table() -> None:
    """A process placing by hash (the switch to players half done), of a version before
    the lines, or whose line was dropped while it was away: it may watch anything."""
    audience = Audience("me", clock=Clock())
    audience.read({"me": None, "other": {"t2": 1}})
    assert not audience.heard("t1")  # (its own missing line is nobody else's)
    audience.read({"me": {}, "other": {"t2": 1}, "old": None})
    assert audience.heard("t1") and audience.heard("t9")


def test_a_step_kept_home_goes_out_late_once_its_table_is_heard() -> None:
    clock = Clock()
    audience = Audience("me", clock=clock)
    audience.read({})
    bend = Event(2, "progress", {"percent": 40}, transient=True)
    assert not audience.goes_out("t1", events(1))
    assert not audience.goes_out("t1", [bend])  # (a bend alone: the step before is kept)
    assert not audience.goes_out("t2", events(7))
    assert audience.due() == []  # (nobody hears them yet)
    audience.read({"other": {"t1": 2}})
    assert audience.due() == [("t1", events(1))]
    assert audience.due() == []  # (each once)
    assert audience.goes_out("t1", events(3))  # heard now
    assert audience.goes_out("t2", events(8), subscribed=True)  # (and t2's kept one dropped)
    audience.read({"other": {"t1": 2, "t2": 1}})
    assert audience.due() == []
    audience.forget("t1")
    audience.read({"other": {}})
    assert not audience.goes_out("t1", events(4))


# -- two buses on a real Redis -----------------------------------------------------------


class Owned:
    """An owner bus ``a`` with an audience (a clock of the test's; no lines read yet), a
    second bus ``b``, and a raw subscriber on t1's channel counting what Redis carries."""

    def __init__(
        self,
        a: RedisBus,
        b: RedisBus,
        clock: Clock,
        raw: aioredis.client.PubSub,
        stored: list[Event],
    ) -> None:
        self.a, self.b, self.clock, self.raw, self.stored = a, b, clock, raw, stored
        a.audience = Audience(a.node, clock=clock)
        self.carried: list[bytes] = []

    async def drain(self) -> None:
        """Read what Redis carried on t1's channel so far: once the owner's writer has
        nothing left to send (Redis answered its last write), a PING's answer marks the end."""
        await eventually(lambda: not self.a._outbox and not self.a._sending)
        await self.raw.ping()
        while True:
            message = await self.raw.get_message(timeout=scaled(2.0))
            if message is None or message["type"] == "pong":
                return
            if message["type"] == "smessage":
                self.carried.append(message["data"])


@pytest.fixture
async def owned(redis_url: str) -> AsyncIterator[Owned]:
    owners = {"t1": "node-a"}

    async def owner_of(table: str) -> str | None:
        return owners.get(table)

    stored: list[Event] = []

    async def stored_after(table: str, seq: int) -> list[Event] | None:
        return [e for e in stored if e.seq > seq]

    a = RedisBus(redis_url, node="node-a", events_after=stored_after, owner_of=owner_of)
    b = RedisBus(redis_url, node="node-b", events_after=stored_after, owner_of=owner_of)
    await a.start()
    await b.start()
    raw = aioredis.Redis.from_url(redis_url)
    pubsub = raw.pubsub()
    await pubsub.ssubscribe(event_channel("t1"))
    await pubsub.get_message(timeout=scaled(2.0))  # (its confirmation)
    try:
        yield Owned(a, b, Clock(), pubsub, stored)
    finally:
        await pubsub.aclose()
        await raw.aclose()
        await b.close()
        await a.close()


async def test_a_step_nobody_elsewhere_hears_stays_home_and_a_relayed_command_sends_it_out(
    owned: Owned,
) -> None:
    a, b, clock = owned.a, owned.b, owned.clock
    home: list[int] = []
    a.subscribe("t1", lambda table, step: home.extend(e.seq for e in step))
    commands: list[CommandRecord] = []
    a.serve("t1", commands.append)  # (marked: whoever watched the last owner hears it)
    a.publish("t1", events(1))
    clock.now += HOLD + 1  # the mark is over, and no line lists t1
    a.publish("t1", events(2))
    a.publish("t1", events(3))
    assert home == [1, 2, 3]  # the owner's own subscribers, each step at once
    assert a.unpublished == 2 and a.counts().unpublished == 2  # type: ignore[union-attr]
    await owned.drain()
    assert len(owned.carried) == 1  # only step 1 went out

    # A client on b watches t1: b subscribes, then its join is relayed to the owner.
    elsewhere: list[int] = []
    b.subscribe("t1", lambda table, step: elsewhere.extend(e.seq for e in step))
    await b.watch("t1")
    replies: list[ReplyRecord] = []
    b.on_replies(replies.append)
    to = Address("node-b", 1, "c1")
    b.submit(CommandRecord("t1", "join", "p1", "c1", reply_to=to))
    await eventually(lambda: len(commands) == 1)
    assert commands[0].reply_to == to
    a.publish("t1", events(4))  # the join's step: out, and every one within the mark
    a.reply(ReplyRecord(to, {"joined": True}, after=("t1", 4)))
    a.publish("t1", events(5))
    await eventually(lambda: elsewhere == [4, 5] and len(replies) == 1)
    assert a.unpublished == 2

    # The mark ends; b's line lists t1 (its watcher): still out, with no mark.
    a.lines_read({"node-b": {"t1": 1}, "node-a": {"t1": 3}})
    clock.now += HOLD + 1
    a.publish("t1", events(6))
    await eventually(lambda: elsewhere == [4, 5, 6])
    # b's watcher left and its line says so: the steps stay home again.
    a.lines_read({"node-b": {}, "node-a": {"t1": 3}})
    a.publish("t1", events(7))
    assert a.unpublished == 3 and home == [1, 2, 3, 4, 5, 6, 7]
    await owned.drain()
    assert len(owned.carried) == 4  # steps 1, 4, 5, 6


async def test_an_owner_still_subscribed_to_its_table_publishes_until_its_step_comes_back(
    owned: Owned,
) -> None:
    """A table this process watched before it owned it: subscribed until its own first
    step comes back on the channel (anything the last owner published came before it),
    so that step goes out whoever hears it; the next ones stay home."""
    a, clock = owned.a, owned.clock
    home: list[int] = []
    a.subscribe("t1", lambda table, step: home.extend(e.seq for e in step))
    await a.watch("t1")  # another process owned it then
    assert a.listening == {"t1"}
    a.serve("t1", lambda record: None)
    clock.now += HOLD + 1  # (no mark, no line)
    a.publish("t1", events(1))
    await eventually(lambda: a.listening == set())  # its own step came back: unsubscribed
    a.publish("t1", events(2))
    assert home == [1, 2] and a.unpublished == 1
    await owned.drain()
    assert len(owned.carried) == 1


async def test_a_watcher_the_lines_show_late_gets_the_steps_it_missed_at_the_next_read(
    owned: Owned,
) -> None:
    """b watched t1 but its join's mark ended before its line was read (a process that
    stalled): the owner kept steps home. At the next read of the lines that list b, the
    last one goes out late, and b fills the gap before it from the table's stream."""
    a, b, clock = owned.a, owned.b, owned.clock
    a.serve("t1", lambda record: None)
    elsewhere: list[int] = []
    b.subscribe("t1", lambda table, step: elsewhere.extend(e.seq for e in step))
    await b.watch("t1")
    owned.stored.extend(events(1, 2, 3))
    a.publish("t1", events(1))  # (within the serve's mark: out)
    await eventually(lambda: elsewhere == [1])
    clock.now += HOLD + 1
    a.publish("t1", events(2))
    a.publish("t1", [*events(3), Event(3, "progress", {"percent": 50}, transient=True)])
    assert a.unpublished == 2
    await asyncio.sleep(0.05)
    assert elsewhere == [1]  # (nothing came: nothing was sent)
    lines: Lines = {"node-b": {"t1": 1}, "node-a": {}}
    a.lines_read(lines)
    await eventually(lambda: elsewhere == [1, 2, 3])  # from the stream (its 3 then dropped)
    a.lines_read(lines)  # (sent once)
    await owned.drain()
    assert len(owned.carried) == 2 and b.backfilled == 2
    assert elsewhere == [1, 2, 3]  # (the bend kept home is never shown late)
