"""The table event channels a process listens to on Redis (``server.bus.redis``).

A table's events go to ``chemmy:{<table>}:ev``: the table's id is the channel's hash tag,
as it is its keys' (``chemmy:{<table>}:row``, ``:events``...), so on a Redis Cluster a
table's channel and its keys live in one slot (on its shard). They are published with
Redis's sharded pub/sub (``SPUBLISH``, ``SSUBSCRIBE``: Redis 7 and later), or with plain
pub/sub on a server without it (:attr:`Channels.sharded`, found out at each connection).

:class:`Channels` sends the ``(S)SUBSCRIBE`` and ``(S)UNSUBSCRIBE`` commands on the bus's
one pub/sub connection, one at a time and in order (a lock), and matches Redis's
confirmations to them, per table, in the same order: a subscribe's future is resolved
when Redis confirms it, and from then on every message published on the channel
reaches this connection. It never reads the connection (the bus's reader does, and
hands it the confirmations).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Coroutine, Iterable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

__all__ = ["PREFIX", "Channels", "event_channel", "has_sharded_pubsub", "table_of"]

PREFIX = "chemmy"
_HEAD, _TAIL = f"{PREFIX}:{{", "}:ev"
#: Tables subscribed to in one command at most (a process that reconnects with many).
CHUNK = 500

log = logging.getLogger("chemmy.bus")


def event_channel(table: str) -> str:
    """``table``'s event channel, in the table's hash slot."""
    return f"{_HEAD}{table}{_TAIL}"


def table_of(channel: str) -> str | None:
    """The table whose event channel ``channel`` is, or None."""
    if channel.startswith(_HEAD) and channel.endswith(_TAIL) and len(channel) > len(_HEAD + _TAIL):
        return channel[len(_HEAD) : -len(_TAIL)]
    return None


async def has_sharded_pubsub(redis: aioredis.Redis) -> bool:
    """Whether Redis has sharded pub/sub (Redis 7 and later): ``SPUBLISH`` on a channel
    nobody listens to (no table's: ``?`` is not in a table id)."""
    try:
        await redis.execute_command("SPUBLISH", event_channel("?"), b"")  # type: ignore[no-untyped-call]
    except ResponseError as exc:
        if "unknown command" in str(exc).lower():
            log.warning("bus: Redis has no sharded pub/sub (SPUBLISH); plain pub/sub it is")
            return False
        raise
    return True


class Channels:
    """The table channels subscribed on the current pub/sub connection (see the module
    docstring). :attr:`pubsub` is None while the bus has no connection."""

    def __init__(self) -> None:
        self.pubsub: Any = None
        #: Sharded pub/sub (``SSUBSCRIBE``/``SPUBLISH``), or plain on a server without it.
        self.sharded = True
        #: The tables whose subscription Redis confirmed (and has not unsubscribed).
        self.heard: set[str] = set()
        # Per table, one entry per command called for and not yet confirmed, in order: a
        # subscribe's future, None for an unsubscribe.
        self._acks: dict[str, deque[asyncio.Future[None] | None]] = {}
        # The commands called for and not yet sent, in order (:meth:`send`).
        self._queue: deque[tuple[list[str], bool]] = deque()
        self._lock = asyncio.Lock()

    def listening(self, table: str) -> bool | asyncio.Future[None]:
        """Whether ``table`` is subscribed once the commands on their way are confirmed:
        True, False, or the future of the subscribe on its way."""
        acks = self._acks.get(table)
        if acks:
            last = acks[-1]
            return last if last is not None else False
        return table in self.heard

    def send(
        self, tables: Iterable[str], on: bool
    ) -> Coroutine[Any, Any, list[asyncio.Future[None]]]:
        """Subscribe to (``on``) or unsubscribe from ``tables``' channels; awaited, the
        futures of the subscribes. The commands take their place when this is called, not
        when it is awaited (a job spawned to send it may start later): :meth:`listening`
        answers what they make at once, and Redis gets every command in the order of the
        calls. One that cannot be sent (the connection is gone) is left to the reader,
        which subscribes what is wanted when it connects again."""
        tables = list(tables)
        futures: list[asyncio.Future[None]] = []
        if self.pubsub is not None and tables:
            loop = asyncio.get_running_loop()
            for table in tables:
                future: asyncio.Future[None] | None = loop.create_future() if on else None
                self._acks.setdefault(table, deque()).append(future)
                if future is not None:
                    futures.append(future)
            self._queue.append((tables, on))
        return self._flush(futures)

    async def _flush(self, futures: list[asyncio.Future[None]]) -> list[asyncio.Future[None]]:
        """Send the commands waiting, in order, one at a time (whoever holds the lock
        sends those queued meanwhile too)."""
        async with self._lock:
            while self._queue and self.pubsub is not None:
                tables, on = self._queue.popleft()
                try:
                    for start in range(0, len(tables), CHUNK):
                        channels = [event_channel(t) for t in tables[start : start + CHUNK]]
                        await self._command(self.pubsub, channels, on)
                except (RedisError, OSError):
                    pass  # the reader sees the connection go and subscribes again
        return futures

    async def _command(self, pubsub: Any, channels: list[str], on: bool) -> None:
        if self.sharded:
            await (pubsub.ssubscribe(*channels) if on else pubsub.sunsubscribe(*channels))
        else:
            await (pubsub.subscribe(*channels) if on else pubsub.unsubscribe(*channels))

    def acked(self, table: str, on: bool) -> None:
        """Redis confirmed a subscribe (``on``) or an unsubscribe of ``table``'s channel."""
        if on:
            self.heard.add(table)
        else:
            self.heard.discard(table)
        acks = self._acks.get(table)
        if not acks:
            return
        future = acks.popleft()
        if not acks:
            del self._acks[table]
        if future is not None and not future.done():
            future.set_result(None)

    def lost(self) -> None:
        """The connection is gone: nothing is subscribed, nothing will be confirmed (the
        subscribes waiting are released; the reader subscribes again)."""
        self.pubsub = None
        self.heard.clear()
        self._queue.clear()
        for acks in self._acks.values():
            for future in acks:
                if future is not None and not future.done():
                    future.set_result(None)
        self._acks.clear()

    async def wait(self, futures: Iterable[asyncio.Future[None]], timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until ``futures`` are confirmed."""
        pending = [f for f in futures if not f.done()]
        if pending:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await asyncio.gather(*(asyncio.shield(f) for f in pending))

    def publish_args(self, channel: str, data: bytes) -> tuple[str, str, bytes]:
        """The command that publishes one message: a table's events with ``SPUBLISH``
        (sharded pub/sub), the rest with ``PUBLISH``."""
        if self.sharded and table_of(channel) is not None:
            return ("SPUBLISH", channel, data)
        return ("PUBLISH", channel, data)
