"""The bus's pub/sub connection, read without redis-py's per-message layers (issue 36).

redis-py's ``PubSub.get_message`` costs about 80 µs of CPU a message on this project's
machines (a retry wrapper, a timeout and a logger lookup per read, its RESP parser reading
each message a line at a time); a cluster process reads one for every step of every table
its clients watch and another process owns, and for every command relayed to it. This
connection is made and authenticated by redis-py (the same address, or the primary the
sentinels name; credentials, database, TLS, ``CLIENT SETNAME``), then its transport is
taken over by a protocol of its own (:class:`_Heard`): what arrives is parsed as it comes
(hiredis, Redis's own C parser) and the reader woken, with no stream and no timeout on the
task between (issue 36).

:class:`PubSub` has what :class:`~server.bus.channels.Channels` calls (``ssubscribe``,
``sunsubscribe``, ``subscribe``, ``unsubscribe``) and :meth:`PubSub.messages`, for the
bus's one reader: the messages as redis-py gives them (``type``, ``channel``, ``data``).
A connection silent for ``health`` seconds is sent a ``PING`` at the end of a read's wait;
one still silent a whole wait after it is taken for lost
(:class:`~redis.exceptions.ConnectionError`), as is one Redis closes or that says what is
not RESP.

It never decides what a message means (the bus does).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse

from server.connect.redis import MORE, TakenOver, packed

__all__ = ["PubSub"]

_KINDS = (b"message", b"smessage", b"subscribe", b"ssubscribe", b"unsubscribe", b"sunsubscribe")
#: Bytes held unread before the connection stops reading (its reader busy: the rest waits
#: in Redis, whose output buffer limit for pub/sub cuts a reader far behind).
HELD_MOST = 1 << 20


class _Heard(TakenOver):
    """The pub/sub connection, taken over (:class:`~server.connect.redis.TakenOver`): when
    something came noted, and the reader woken; while the reader is busy elsewhere,
    reading stops once it holds :data:`HELD_MOST`."""

    def __init__(self, transport: asyncio.Transport, parser: Any) -> None:
        super().__init__(transport, parser)
        self.heard = time.monotonic()  # when Redis last sent anything
        self.waiter: asyncio.Future[bool] | None = None
        self.lost = False
        self.paused = False

    def arrived(self) -> None:
        self.heard = time.monotonic()
        if not self.paused and self.waiter is None and self.parser.len() > HELD_MOST:
            self.paused = True
            self.transport.pause_reading()
        self._wake(True)

    def parsed(self) -> None:
        """What was held is parsed: read again if reading was paused."""
        if self.paused:
            self.paused = False
            self.transport.resume_reading()

    def lost_with(self, exc: Exception | None) -> None:
        self.lost = True
        self._wake(True)

    def _wake(self, arrived: bool) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(arrived)


class PubSub:
    """One pub/sub connection (see the module docstring); :meth:`connect` first."""

    def __init__(self, client: aioredis.Redis, name: str, health: float) -> None:
        self._pool = client.connection_pool
        self._name = name
        self._connection: Any = None
        self._heard_by: _Heard | None = None
        self._parser: Any = None  # (its protocol's, once connected)
        self._health = health
        self._pinged: float | None = None  # when the PING not yet answered went

    async def connect(self) -> None:
        connection = self._pool.make_connection()  # type: ignore[no-untyped-call]
        self._connection = connection
        await connection.connect()
        await connection.send_command("CLIENT", "SETNAME", self._name)
        await connection.read_response()
        self._heard_by = _Heard.over(connection)
        self._parser = self._heard_by.parser

    async def _send(self, *args: str) -> None:
        heard = self._heard_by
        if heard is None or heard.lost:
            raise RedisConnectionError("the bus's pub/sub connection is closed")
        heard.transport.write(packed([args]))  # (a few bytes: no wait for the buffer)

    async def subscribe(self, *channels: str) -> None:
        await self._send("SUBSCRIBE", *channels)

    async def unsubscribe(self, *channels: str) -> None:
        await self._send("UNSUBSCRIBE", *channels)

    async def ssubscribe(self, *channels: str) -> None:
        await self._send("SSUBSCRIBE", *channels)

    async def sunsubscribe(self, *channels: str) -> None:
        await self._send("SUNSUBSCRIBE", *channels)

    async def messages(self, timeout: float) -> list[dict[str, Any]]:
        """The messages that arrived, at least one unless ``timeout`` passed first (then
        none; see the module docstring for the ``PING``)."""
        heard = self._heard_by
        if heard is None:
            raise RedisConnectionError("the bus's pub/sub connection is closed")
        while True:
            out = self._parse()
            heard.parsed()
            if out:
                return out
            if heard.lost:
                raise RedisConnectionError("Redis closed the bus's pub/sub connection")
            loop = asyncio.get_running_loop()
            heard.waiter = waiter = loop.create_future()
            timer = loop.call_later(timeout, heard._wake, False)
            try:
                arrived = await waiter
            finally:
                timer.cancel()
                heard.waiter = None
            if arrived:
                continue
            now = time.monotonic()
            if self._pinged is not None and heard.heard > self._pinged:
                self._pinged = None  # (Redis sent something since: a PONG is a sign of life)
            if self._pinged is not None and now - self._pinged >= timeout:
                raise RedisConnectionError("Redis did not answer the bus's PING")
            if self._pinged is None and now - heard.heard >= self._health:
                self._pinged = now
                await self._send("PING")
            return []

    def _parse(self) -> list[dict[str, Any]]:
        """Every whole message read (the rest stays for the next read). An error reply,
        or what is not RESP, ends the connection."""
        out: list[dict[str, Any]] = []
        parser = self._parser
        while True:
            try:
                item = parser.gets()
            except InvalidResponse:
                raise RedisConnectionError("the bus's pub/sub connection read no RESP") from None
            if item is MORE:
                return out
            if isinstance(item, Exception):
                raise RedisConnectionError(f"the bus's pub/sub connection read an error: {item}")
            if isinstance(item, list) and len(item) == 3 and item[0] in _KINDS:
                kind = item[0].decode()
                out.append({"type": kind, "channel": item[1], "data": item[2], "pattern": None})
            # (anything else, a PONG, is only a sign of life)

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        self._heard_by = None
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.disconnect(nowait=True)
