"""The bus over Redis: many processes share tables through one Redis (``redis.asyncio``).

Every process is a gateway for its own clients; each table is owned by one process at a
time (``server.croupier.cluster`` takes and renews the leases). Over Redis pub/sub:

- ``chemmy:node:<node>`` carries records to one process: the commands for the tables it
  owns and the replies to the commands its clients sent (but those riding on events);
- ``chemmy:{<table>}:ev`` carries each stored step's events (with their private parts:
  the gateways fan them out, per view, to their own clients), in the table's hash slot
  (``server.bus.channels``: sharded pub/sub where Redis has it, else plain). A process
  subscribes to a table's channel only while clients of its own watch it and another
  process owns it (``watch``: the subscription confirmed before the first watcher's join
  is sent; ``unwatch``). Placing by players, an owner publishes only the steps another
  process may hear (``server.bus.audience``). The owner does not hear its own steps back
  (issue 36): a watched table it comes to own stays subscribed until its own first step
  comes back on the channel (whatever the previous owner published came before it), then
  is unsubscribed; a table it gives up while clients here watch it is subscribed again
  and, once Redis confirms it, caught up from the stream;
- ``chemmy:ctl`` carries notices for the croupiers (a table's owner changed, tables were
  created or closed, a process drains) and the gateways (a player's reality check was
  answered: their connections elsewhere stop asking).

A transient event (a squeezed card's bend: shown, never stored) travels in its step's
message with the ``seq`` of the stored event it follows; it is delivered once that one
is, and a lost one is not read back (there is nothing to read: it is not stored).

Pub/sub may lose messages (a subscriber's connection drops, Redis restarts). Events never
are lost for that: they are stored with each step in the table's stream (the store's
``events_after``), and this bus keeps, per table, the last ``seq`` it delivered. A batch
that starts after a gap is preceded by the missing events read back from the stream; a
batch already delivered is dropped; after a reconnection exactly the tables it hears are
subscribed again and caught up from the stream. A table it stops hearing is forgotten
(its last ``seq`` too: hearing it again starts afresh, from a join's snapshot).

A step's events reach a gateway before the reply to the command that caused them. One
reader task handles the messages of the one pub/sub connection in the order Redis
delivers them, and the owner publishes the events first, on one connection, so on one
Redis they come first anyway. The rule does not rest on that (on a Redis Cluster a
sharded channel's messages come from the table's shard, a reply from another node):
a reply names its step (``after``: table, seq), and a reply for a table this process
hears whose events it has not delivered that far waits for them; if they do not come
within :data:`HOLD_MAX` (a message lost), they are read from the stream, then the reply
goes on.

Outgoing messages go through one queue and one writer task, in the order they were made;
those waiting together go in one write on its own connection (``server.connect.redis.Lane``),
a reply in its step's message to a gateway that hears the table (``server.bus.rides``). A
command whose owner cannot be reached is answered ``unavailable`` here (so are those queued
while Redis is away); one whose reply never comes is timed out by the gateway.

The owner's own clients are served without Redis: what it publishes reaches its local
subscribers at once (and the copy coming back from Redis is dropped, by the publisher's
name it starts with, before the rest of it is decoded).

This module never decides a rule and never looks inside an event's data.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import secrets
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import msgpack
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.connect.redis import Lane, connect, follow_primary, has_sentinels, unavailable
from server.protocol.errors import ProtocolError, Refused, StoreUnavailable
from server.protocol.records import CommandRecord, ReplyRecord, pack, unpack
from server.vocabulary.events import Event

from .audience import Audience
from .base import BusCounts, CommandHandler, ControlHandler, EventHandler, ReplyHandler, Subscribers
from .channels import Channels, has_sharded_pubsub, table_of
from .pubsub import PubSub
from .rides import Awaited, Riders, StepMessage, publisher, relay_data, unpack_step

__all__ = ["RedisBus", "node_name"]

log = logging.getLogger("chemmy.bus")

EventSource = Callable[[str, int], Awaitable[list[Event] | None]]
#: Who owns a table now (the croupier's lease lookup): table -> node or None.
OwnerLookup = Callable[[str], Awaitable[str | None]]

PREFIX = "chemmy"
#: Backoff between tries to reach Redis again; the cap is short so that a promoted
#: replica (Sentinel) is found within half a second of its promotion.
RECONNECT_FIRST, RECONNECT_MAX = 0.05, 0.5
BATCH_MAX = 500  # messages published in one pipeline at most
FLUSH_TIMEOUT = 2.0  # seconds close() waits for the outbox to be sent
#: The liveness probe: a PING this often, bounded by PROBE_TIMEOUT; Redis is taken for
#: not answering (``/readyz`` 503) once no probe succeeded for UNANSWERED_AFTER seconds.
PROBE_INTERVAL, PROBE_TIMEOUT, UNANSWERED_AFTER = 0.5, 1.0, 2.0
#: No PING while Redis answered another call of this process this recently (:meth:`heard`:
#: the placement loop's tick, 1 s apart at rest by default): idle, the probe was half a cluster
#: process's Redis round trips (issue 36). Over that period, well under UNANSWERED_AFTER.
PROBE_QUIET = 1.25
#: The connections' health check (a PING when silent this long; the pub/sub one is lost
#: when silent a read's wait after it: ``server.bus.pubsub``) and how long one read waits
#: for a message (issue 36: a read of a second cost an idle process a tenth of its CPU).
HEALTH_EVERY, LISTEN_TIMEOUT = 10, 5.0
#: How long ``watch`` waits for Redis to confirm a subscription, and a reply for the
#: events of its step before they are read from the stream (seconds).
WATCH_TIMEOUT, HOLD_MAX = 2.0, 0.5
_SUBSCRIBED = {"ssubscribe": True, "subscribe": True, "sunsubscribe": False, "unsubscribe": False}


def node_name() -> str:
    """A process's name on the bus: host, pid and a random part (pids are reused)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


class RedisBus:
    """:class:`~server.bus.base.Bus` over Redis pub/sub (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        node: str | None = None,
        events_after: EventSource,
        owner_of: OwnerLookup | None = None,
    ) -> None:
        self.url = url
        self.node = node or node_name()
        self._events_after = events_after
        self._owner_of = owner_of
        self._redis: aioredis.Redis | None = None
        self._lane: Lane | None = None  # the writer's own connection (publishes, relays)
        self._owners: dict[str, CommandHandler] = {}
        self._subscribers = Subscribers()
        self._replies: ReplyHandler | None = None
        self._control: ControlHandler | None = None
        self._last: dict[str, int] = {}  # table -> the last seq delivered here
        self._watched: set[str] = set()  # the tables clients of this process watch
        self._channels = Channels()
        self._held: dict[str, list[ReplyRecord]] = {}  # replies waiting for their events
        self._jobs: set[asyncio.Task[Any]] = set()
        #: Event messages that came from Redis, per table (this process's own steps
        #: coming back included): what listening only where someone watches saves.
        self.received: collections.Counter[str] = collections.Counter()
        #: What the writer task sends, in order (``_wake`` is set when something is added).
        self._outbox: deque[tuple[str, bytes] | StepMessage | CommandRecord] = deque()
        self._unsent: dict[str, StepMessage] = {}  # table -> its last step's message
        self._rides = Riders()  # commands whose replies may ride: their tables
        self._awaited = Awaited()  # this gateway's relays whose replies may ride
        self._wake = asyncio.Event()
        self._sending = False  # the writer holds messages taken from the outbox
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False
        #: Counters for /metrics: events read back from streams, records relayed; and
        #: ``on_lag(seconds)`` hears how long each batch of events took to arrive.
        self.backfilled = 0
        self.relayed = 0
        self.on_lag: Callable[[float], None] | None = None
        #: Placement by players: which tables another process hears (``server.bus.audience``);
        #: a step of any other is delivered here only. None: every step is published.
        self.audience: Audience | None = None
        self.unpublished = 0  # steps not published: no other process heard their table
        self.connected = asyncio.Event()
        #: When Redis last answered this process's probe (monotonic; see :meth:`_probe`).
        self.answered_at = -1e9

    @property
    def answering(self) -> bool:
        """Whether Redis answered a probe lately: a connection can stay up while Redis
        is frozen (SIGSTOP, a stalled disk), and then nothing this process does works."""
        return time.monotonic() - self.answered_at <= UNANSWERED_AFTER

    def heard(self) -> None:
        """Redis just answered another call of this process (the placement loop's
        tick): the probe need not ask it again for :data:`PROBE_QUIET` seconds."""
        self.answered_at = time.monotonic()

    def not_ready(self) -> str | None:
        if not self.connected.is_set():
            return "bus unreachable"
        if not self.answering:
            return "redis not answering"
        return None

    def counts(self) -> BusCounts | None:
        counts = self.relayed, self.backfilled, self.received, len(self.listening)
        return BusCounts(*counts, unpublished=self.unpublished)

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        self._redis = connect(
            self.url, socket_connect_timeout=2, socket_timeout=5, health_check_interval=HEALTH_EVERY
        )
        self._lane = Lane(self._redis)
        self._tasks = [
            asyncio.create_task(self._read(), name=f"bus-read-{self.node}"),
            asyncio.create_task(self._write(), name=f"bus-write-{self.node}"),
            asyncio.create_task(self._probe(), name=f"bus-probe-{self.node}"),
        ]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await self.connected.wait()

    async def close(self) -> None:
        """Send what is still queued (a stopping process's last steps and its leaving
        notice; for at most :data:`FLUSH_TIMEOUT`), then disconnect."""
        if self._tasks and not self._closing:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FLUSH_TIMEOUT):
                    while self._outbox or self._sending:
                        await asyncio.sleep(0.005)
        self._closing = True
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            # A cancellation swallowed inside a Redis call must not hang the shutdown.
            await asyncio.wait(self._tasks, timeout=3.0)
        self._tasks = []
        for job in list(self._jobs):
            job.cancel()
        self._held.clear()
        if self._lane is not None:
            with contextlib.suppress(Exception):
                await self._lane.close()
            self._lane = None
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    async def _probe(self) -> None:
        """``PING`` Redis once nothing else was answered for :data:`PROBE_QUIET` s
        (:meth:`heard`), and every :data:`PROBE_INTERVAL` while it does not answer
        (:attr:`answering`, ``/readyz``); a sentinel client asks where the primary is
        every :data:`PROBE_INTERVAL`, any other sleeps until a ping may be due."""
        # A connection of its own: probes must not leave connections in the writer's
        # pool (after a Redis restart each stale one costs the writer a failed batch).
        probe = connect(
            self.url, socket_connect_timeout=PROBE_TIMEOUT, socket_timeout=PROBE_TIMEOUT
        )
        sentinels = has_sentinels(self._redis)  # type: ignore[arg-type]
        try:
            while not self._closing:
                try:
                    # (a timer may fire a moment early: then it is due all the same)
                    if time.monotonic() - self.answered_at >= PROBE_QUIET - 0.01:
                        async with asyncio.timeout(PROBE_TIMEOUT):
                            await probe.ping()
                        self.answered_at = time.monotonic()
                    if sentinels:
                        async with asyncio.timeout(PROBE_TIMEOUT):
                            await follow_primary(self._redis)  # type: ignore[arg-type]
                except (RedisError, OSError, TimeoutError):
                    pass
                for freed in self._awaited.expire(time.monotonic()):  # (no reply came)
                    self._drop(freed)
                due = self.answered_at + PROBE_QUIET - time.monotonic()
                wait = PROBE_INTERVAL if due <= 0 else due  # (<= 0: the ping failed)
                await asyncio.sleep(min(wait, PROBE_INTERVAL) if sentinels else wait)
        finally:
            with contextlib.suppress(Exception):
                await probe.aclose()

    def on_control(self, handler: ControlHandler) -> None:
        self._control = handler

    def control(self, notice: dict[str, Any]) -> None:
        """Tell every croupier (this one too) something changed."""
        self._send(f"{PREFIX}:ctl", msgpack.packb(notice, use_bin_type=True))

    # -- owner -------------------------------------------------------------------------
    def serve(self, table: str, handler: CommandHandler) -> None:
        # Not subscribed for it: its steps reach its clients here at once (publish). A
        # subscription its watchers made stays until its first own step comes back.
        self._owners[table] = handler
        if self.audience is not None:
            self.audience.mark(table)  # (the previous owner's watchers elsewhere hear it)

    def unserve(self, table: str) -> None:
        self._owners.pop(table, None)
        if self.audience is not None:
            self.audience.forget(table)
        self._unsent.pop(table, None)  # (its last step's message: kept for replies only)
        if table in self._watched and self._channels.listening(table) is not True:
            self._spawn(self._listen_again(table))
        else:
            self._drop(table)

    async def _listen_again(self, table: str) -> None:
        """A table given up while clients here watch it: subscribe, and once Redis
        confirms it, read from the stream what the next owner stored meanwhile."""
        state = self._channels.listening(table)
        if state is False:
            await self._channels.wait(await self._channels.send([table], True), WATCH_TIMEOUT)
        elif state is not True:
            await self._channels.wait([state], WATCH_TIMEOUT)
        if self._hears(table):
            await self._catch_up(table)

    def publish(self, table: str, events: Sequence[Event]) -> None:
        if not events:
            return
        self._deliver(table, list(events))  # this process's own clients first, at once
        if self._closing:
            return
        audience = self.audience  # (subscribed, its own first step must come back)
        if audience is not None and not audience.goes_out(
            table, events, self._channels.listening(table) is not False
        ):
            self.unpublished += 1  # (nobody elsewhere hears it)
            self._unsent.pop(table, None)  # (a reply to this step goes on its own)
            return
        message = self._unsent[table] = StepMessage(table, events, self.node)
        self._outbox.append(message)
        self._wake.set()

    def lines_read(self, lines: Mapping[str, Mapping[str, int] | None]) -> None:
        """The members' lines were read: kept steps of tables now heard go out late."""
        if self.audience is not None and not self._closing:
            self.audience.read(lines)  # (server.bus.audience)
            if due := self.audience.due():
                self._outbox.extend(StepMessage(t, events, self.node) for t, events in due)
                self._wake.set()

    def reply(self, record: ReplyRecord) -> None:
        if record.to.gateway == self.node:
            self._reply_here(record)
        elif not self._ride(record):
            self._send(f"{PREFIX}:node:{record.to.gateway}", pack(record))

    def _ride(self, record: ReplyRecord) -> bool:
        """Put ``record`` in its step's message still queued (``server.bus.rides``)."""
        table, after = self._rides.take(record.to), record.after
        if after is None or after[0] != table:
            return False
        message = self._unsent.get(table)
        if message is None or message.sent or message.top < after[1]:
            return False
        message.replies.append((record.to.gateway, pack(record)))
        return True

    # -- gateway -----------------------------------------------------------------------
    def submit(self, record: CommandRecord) -> None:
        owner = self._owners.get(record.table)
        if owner is not None:  # a table this process owns: no Redis in between
            owner(record)
            return
        if self._redis is None:
            raise Refused("unavailable", "the tables cannot be reached; try again")
        self._outbox.append(record)
        self._wake.set()

    def on_replies(self, handler: ReplyHandler) -> None:
        self._replies = handler

    def subscribe(self, table: str, handler: EventHandler) -> None:
        self._subscribers.add(table, handler)

    def unsubscribe(self, table: str, handler: EventHandler) -> None:
        self._subscribers.remove(table, handler)

    async def watch(self, table: str) -> None:
        """Hear ``table`` (a client here watches it): subscribe to its channel unless
        subscribed, and wait until Redis confirms it (at most :data:`WATCH_TIMEOUT`; with
        Redis away, not at all: the reader subscribes when it is back)."""
        self._watched.add(table)
        state = self._channels.listening(table)
        if state is True or table in self._owners:
            return  # (an owner's steps reach its watchers here without Redis)
        futures = await self._channels.send([table], True) if state is False else [state]
        await self._channels.wait(futures, WATCH_TIMEOUT)

    def unwatch(self, table: str) -> None:
        self._watched.discard(table)
        self._drop(table)

    def wants(self, table: str) -> bool:
        """Whether this process hears ``table`` (it owns it, or clients here watch it)."""
        return table in self._watched or table in self._owners

    def _hears(self, table: str) -> bool:
        """Whether ``table``'s channel is wanted: clients here watch it and another
        process owns it (an owner's own steps are delivered here as it publishes them)."""
        return table in self._watched and table not in self._owners

    @property
    def listening(self) -> set[str]:
        """The tables whose channel Redis confirmed on the current connection."""
        return set(self._channels.heard)

    @property
    def sharded(self) -> bool:
        """Whether the table channels use sharded pub/sub (else plain pub/sub)."""
        return self._channels.sharded

    def _drop(self, table: str) -> None:
        """Stop hearing ``table`` unless it is still wanted: unsubscribe, and forget it
        (hearing it again starts afresh); the replies waiting for it go on."""
        if self.wants(table):
            return
        self._last.pop(table, None)
        self._release(table, None)
        if self._channels.listening(table) is not False and not self._awaited.holds(table):
            self._spawn(self._channels.send([table], False))

    def _spawn(self, job: Awaitable[Any]) -> None:
        async def run() -> None:
            await job

        task = asyncio.create_task(run())
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)

    async def events_after(self, table: str, seq: int) -> list[Event] | None:
        return await self._events_after(table, seq)

    async def catch_up(self, table: str) -> None:
        await self._catch_up(table)

    # -- delivery ------------------------------------------------------------------------
    def _deliver(self, table: str, events: list[Event]) -> None:
        """Hand events to this process's subscribers, each once, in seq order."""
        last = self._last.get(table)
        if last is not None:
            # (a transient event follows the stored one of its seq: shown once that is)
            events = [e for e in events if e.seq > last or (e.transient and e.seq == last)]
        if not events:
            return
        top = max(e.seq for e in events)
        self._last[table] = top if last is None else max(top, last)
        self._subscribers.deliver(table, events)
        if table in self._held:
            self._release(table, self._last[table])

    async def _arrived(self, table: str, events: list[Event]) -> None:
        """Events from Redis: fill any gap from the table's stream, then deliver. When
        the stream cannot be read (the store fails), these events wait there too: they
        are delivered, after the gap, by the next catch-up that succeeds. A table this
        process no longer hears (a message on its way as it unsubscribed) is dropped."""
        if not self.wants(table):
            return
        last = self._last.get(table)
        if last is not None and events:
            first = events[0]  # (a transient one follows the stored event of its seq)
            need = first.seq if first.transient else first.seq - 1
            if need > last and not await self._catch_up(table, until=need):
                return
        self._deliver(table, events)

    async def _catch_up(self, table: str, until: int | None = None) -> bool:
        """Deliver the stored events after the last one delivered; False when the
        stream could not be read (nothing delivered), or read but not up to ``until``
        (a replica that is not yet as new as the primary, during a switch of primary:
        what was read is delivered, the rest waits for the next catch-up)."""
        last = self._last.get(table)
        if last is None:
            return True
        try:
            missed = await self._events_after(table, last)
        except Exception as exc:  # the store's failure; the reader must go on
            log.warning(
                "table %s: reading the stored events failed (%s); trying again at its next event",
                table,
                exc,
                extra={"table": table},
            )
            return False
        if missed is None:
            # Older than the stream keeps: the gateways' clients resync by snapshot.
            log.warning(
                "table %s: events after %d are no longer kept", table, last, extra={"table": table}
            )
            return True
        if missed:
            self.backfilled += len(missed)
            self._deliver(table, missed)
        return until is None or self._last.get(table, last) >= until

    def _reply_here(self, record: ReplyRecord) -> None:
        """A reply to a command of this process's clients: handed on once the events of
        its step are delivered here (see the module docstring)."""
        after = record.after
        if after is not None and self._behind(*after):
            table = after[0]
            held = self._held.setdefault(table, [])
            if not held:
                self._spawn(self._overdue(table))
            held.append(record)
            return
        self._hand_on(record)

    def _behind(self, table: str, seq: int) -> bool:
        """Whether ``table``'s events up to ``seq`` are still to be delivered here (only
        for a table this process hears)."""
        if not self.wants(table):
            return False
        last = self._last.get(table)
        if last is None:
            # The first word of a table just heard (a first watcher's join): the reply's
            # step covers everything up to seq; what comes later follows it.
            self._last[table] = seq
            return False
        return last < seq

    async def _overdue(self, table: str) -> None:
        """The replies waiting for ``table``'s events: after :data:`HOLD_MAX`, the events
        (lost on the way) are read from the stream; then the replies go on regardless."""
        await asyncio.sleep(HOLD_MAX)
        if self._held.get(table):
            await self._catch_up(table)
            self._release(table, None)

    def _release(self, table: str, seq: int | None) -> None:
        """Hand on the replies waiting for ``table``'s events up to ``seq`` (all: None)."""
        ready: list[ReplyRecord] = []
        waiting: list[ReplyRecord] = []
        for record in self._held.pop(table, []):
            late = seq is not None and record.after is not None and record.after[1] > seq
            (waiting if late else ready).append(record)
        if waiting:
            self._held[table] = waiting
        for record in ready:
            self._hand_on(record)

    def _hand_on(self, record: ReplyRecord) -> None:
        freed = self._awaited.done(record.to)  # (its table's channel kept for it until now)
        if freed is not None:
            self._drop(freed)
        if self._replies is None:
            return
        try:
            self._replies(record)
        except Exception:
            log.exception("handling a reply failed")

    def _command_here(self, record: CommandRecord) -> None:
        owner = self._owners.get(record.table)
        try:
            if owner is None:
                raise Refused("unavailable", "that table is moving to another process; try again")
            owner(record)
        except Refused as err:
            if record.reply_to is not None:
                self.reply(ReplyRecord.refused(record.reply_to, err))

    # -- the Redis side ------------------------------------------------------------------
    def _send(self, channel: str, data: bytes) -> None:
        if not self._closing:
            self._outbox.append((channel, data))
            self._wake.set()

    async def _write(self) -> None:
        """Publish the outbox in order; relay commands to their tables' owners.

        What waits together goes out in one write on the bus's own connection (a
        :class:`~server.connect.redis.Lane`: one round trip, none of redis-py's
        per-command machinery: a busy owner's events would fall ever further behind if it
        waited for each ``PUBLISH``). A command's owner is looked up (most often without
        Redis) before the batch goes, its receivers counted from its ``PUBLISH``'s reply.

        A batch that cannot be published because Redis cannot be reached (it restarts,
        a connection was cut) is published again, with backoff, before anything after
        it: a stored step's events must reach the other processes (they may wait for
        nothing newer to notice a gap), and a reply its gateway. Sending one twice is
        harmless (events are dropped by seq, a reply nobody waits for is ignored,
        notices are idempotent). A command that cannot be relayed is answered
        ``unavailable`` at once instead: its sender retries it with its id."""
        outbox = self._outbox
        while not self._closing:
            if not outbox:
                self._wake.clear()
                await self._wake.wait()
                continue
            self._sending = True
            try:
                batch: list[tuple[str, bytes] | StepMessage | CommandRecord] = []
                while outbox and len(batch) < BATCH_MAX:
                    batch.append(outbox.popleft())
                await self._publish(batch)
            finally:
                self._sending = False

    async def _publish(self, batch: list[tuple[str, bytes] | StepMessage | CommandRecord]) -> None:
        """Send ``batch`` in one write, again and again while Redis is away (its commands
        are answered ``unavailable`` instead of being sent again)."""
        lines: list[tuple[str, str, bytes]] = []
        relays: list[tuple[int, CommandRecord]] = []  # (its line, the command)
        here: list[CommandRecord] = []  # commands for tables this process now owns
        for item in batch:
            if not isinstance(item, CommandRecord):
                line = item.packed() if isinstance(item, StepMessage) else item
                lines.append(self._channels.publish_args(*line))
                continue
            try:
                owner = None if self._owner_of is None else await self._owner_of(item.table)
            except (RedisError, StoreUnavailable) as exc:  # (the leases' lookup)
                self._unreachable(item, exc)
                continue
            if owner == self.node:
                here.append(item)
            elif owner is None:
                self._no_owner(item)
            else:
                relays.append((len(lines), item))
                to, table = item.reply_to, item.table
                ride = self._hears(table) and self._channels.listening(table) is True
                if ride := ride and to is not None:  # (server.bus.rides)
                    for freed in self._awaited.add(to, table):  # type: ignore[arg-type]
                        self._drop(freed)
                lines.append(("PUBLISH", f"{PREFIX}:node:{owner}", relay_data(item, ride)))
        lane = self._lane
        assert lane is not None
        delay = RECONNECT_FIRST
        while lines and not self._closing:
            try:
                answers = await lane.send(lines)
            except (RedisConnectionError, RedisTimeoutError, ResponseError, OSError) as exc:
                # READONLY, LOADING, MASTERDOWN: a primary being switched refused it;
                # sent again, in order, like a batch Redis could not be reached for.
                if isinstance(exc, ResponseError) and not unavailable(exc):
                    log.warning("publishing on Redis failed: %s", exc)
                    self._refuse(relays, exc)
                    break
                if delay == RECONNECT_FIRST:
                    log.warning("publishing on Redis failed: %s; trying again", exc)
                gone = {at for at, _record in relays}
                lines = [line for i, line in enumerate(lines) if i not in gone]
                self._refuse(relays, exc)
                relays = []
                self._refuse_queued_commands(exc)
                await asyncio.sleep(delay)
                delay = min(RECONNECT_MAX, delay * 2)
                continue
            except RedisError as exc:
                log.warning("publishing on Redis failed: %s", exc)
                self._refuse(relays, exc)
                break
            for at, record in relays:
                self.relayed += 1
                if not answers[at]:
                    self._no_owner(record)
            break
        for record in here:
            self._command_here(record)

    def _refuse(self, relays: list[tuple[int, CommandRecord]], exc: Exception) -> None:
        for _at, record in relays:
            self._unreachable(record, exc)

    def _no_owner(self, record: CommandRecord) -> None:
        """A command whose table has no owner (or nobody heard its relay)."""
        if record.reply_to is not None:
            self._reply_here(
                ReplyRecord.refused(
                    record.reply_to,
                    Refused("unavailable", "that table has no owner right now; try again"),
                )
            )

    def _refuse_queued_commands(self, exc: Exception) -> None:
        """Redis is away: the commands waiting in the outbox are answered ``unavailable``
        now (their senders retry them with their ids), not relayed after their gateways
        gave up on them; everything else keeps its place."""
        waiting = list(self._outbox)
        self._outbox.clear()
        for item in waiting:
            if isinstance(item, CommandRecord):
                self._unreachable(item, exc)
            else:
                self._outbox.append(item)

    def _unreachable(self, record: CommandRecord, exc: Exception) -> None:
        """A command that could not be relayed: its sender hears ``unavailable``."""
        log.warning("relaying a command on Redis failed: %s", exc)
        if record.reply_to is not None:
            self._reply_here(
                ReplyRecord.refused(
                    record.reply_to,
                    Refused("unavailable", "the tables cannot be reached; try again"),
                )
            )

    async def _read(self) -> None:
        """Read every message in the order Redis delivers it; reconnect, subscribe again
        to exactly the tables this process hears, and catch them up."""
        delay = RECONNECT_FIRST
        first = True
        while not self._closing:
            pubsub = None
            try:
                assert self._redis is not None
                pubsub = await self._connect()
                futures = await self._channels.send(sorted(self._wanted()), True)
                if not first:
                    self._spawn(self._caught_up(futures))
                first = False
                delay = RECONNECT_FIRST
                self.answered_at = time.monotonic()  # it just answered the subscribe
                self.connected.set()
                while not self._closing:
                    for message in await pubsub.messages(LISTEN_TIMEOUT):
                        await self._handle(message)
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                self.connected.clear()
                if not self._closing:
                    log.warning("bus: lost Redis (%s); reconnecting", exc)
                await asyncio.sleep(delay)
                delay = min(RECONNECT_MAX, delay * 2)
            finally:
                self._channels.lost()
                if pubsub is not None:
                    with contextlib.suppress(Exception):
                        await pubsub.aclose()

    async def _connect(self) -> PubSub:
        """A new pub/sub connection (``server.bus.pubsub``), named ``chemmy-bus-<node>``
        (operators and tests find it in ``CLIENT LIST``), on this process's channel and the
        notices'; whether Redis has sharded pub/sub is found out on the way."""
        assert self._redis is not None
        self._channels.sharded = await has_sharded_pubsub(self._redis)
        pubsub = PubSub(self._redis, f"chemmy-bus-{self.node}", HEALTH_EVERY)
        await pubsub.connect()
        await pubsub.subscribe(f"{PREFIX}:node:{self.node}", f"{PREFIX}:ctl")
        self._channels.pubsub = pubsub
        return pubsub

    def _wanted(self) -> set[str]:
        return self._watched - set(self._owners)

    async def _caught_up(self, futures: list[asyncio.Future[None]]) -> None:
        """Reconnected: once the subscriptions are confirmed, every table heard is caught
        up from the stream (what was published while nobody here listened), and the
        croupier and gateway hear of it (owners may have changed meanwhile)."""
        await self._channels.wait(futures, WATCH_TIMEOUT)
        log.warning("bus: reconnected to Redis; catching up %d tables", len(futures))
        for table in sorted(self._wanted()):
            await self._catch_up(table)
        if self._control is not None:
            self._control({"kind": "reconnected"})

    async def _handle(self, message: dict[str, Any]) -> None:
        channel = message["channel"]
        channel = channel.decode() if isinstance(channel, bytes) else str(channel)
        data = message["data"]
        kind = message.get("type")
        heard = table_of(channel)
        if kind in _SUBSCRIBED:
            if heard is not None:
                self._channels.acked(heard, _SUBSCRIBED[kind])
            return
        if kind not in ("message", "smessage"):
            return  # (a PONG)
        try:
            if heard is not None:
                self.received[heard] += 1
                if publisher(data) == self.node:
                    # This process's own step: delivered here when it was published. It
                    # owns the table and came after anything its previous owner
                    # published: the channel is no longer needed here.
                    held = self._awaited.holds(heard)  # (riding replies still to come)
                    if (
                        heard in self._owners
                        and self._channels.listening(heard) is True
                        and not held
                    ):
                        self._spawn(self._channels.send([heard], False))
                    return
                table, events, at, riding = unpack_step(data)
                if at and self.on_lag is not None:
                    self.on_lag(max(0.0, time.time() - at))
                await self._arrived(table, events)
                for gateway, reply in riding:  # (after their events: server.bus.rides)
                    if gateway == self.node:
                        self._reply_here(unpack(reply))  # type: ignore[arg-type]
            elif channel == f"{PREFIX}:ctl":
                if self._control is not None:
                    self._control(msgpack.unpackb(data, raw=False))
            else:
                record = unpack(data)
                if isinstance(record, ReplyRecord):
                    self._reply_here(record)
                else:
                    self._rides.remember(record, data)
                    if self.audience is not None and record.table in self._owners:
                        self.audience.mark(record.table)  # (its sender's process hears it)
                    self._command_here(record)
        except (ProtocolError, ValueError, KeyError, TypeError, msgpack.UnpackException) as exc:
            log.warning("bus: a malformed message on %s: %s", channel, exc)
        except Exception:  # a handler's fault must not end the only reader of the bus
            log.exception("bus: handling a message on %s failed", channel)
