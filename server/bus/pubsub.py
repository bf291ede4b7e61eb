"""The bus's pub/sub connection, read without redis-py's per-message layers (issue 36).

redis-py's ``PubSub.get_message`` costs about 80 µs of CPU a message on this project's
machines (a retry wrapper, a timeout and a logger lookup per read, its RESP parser reading
each message a line at a time); a cluster process reads one for every step of every table
its clients watch and another process owns, and for every command relayed to it. This
connection is made and authenticated by redis-py (the same address, or the primary the
sentinels name; credentials, database, TLS, ``CLIENT SETNAME``), then read here: what
arrived is taken at once and every whole message in it parsed in one go (hiredis, Redis's
own C parser).

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

import hiredis
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse

from server.connect.redis import packed

__all__ = ["PubSub"]

#: Bytes read at most at once.
READ_SIZE = 1 << 16
_KINDS = (b"message", b"smessage", b"subscribe", b"ssubscribe", b"unsubscribe", b"sunsubscribe")
#: What the parser says of a message not whole yet (not a reply of ``False``).
_MORE = object()


def _parser() -> Any:
    """A RESP parser (RESP2 and RESP3) of bytes, an error reply given as an exception."""
    return hiredis.Reader(protocolError=InvalidResponse, replyError=Exception, notEnoughData=_MORE)


class PubSub:
    """One pub/sub connection (see the module docstring); :meth:`connect` first."""

    def __init__(self, client: aioredis.Redis, name: str, health: float) -> None:
        self._pool = client.connection_pool
        self._name = name
        self._connection: Any = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._parser = _parser()
        self._health = health
        self._heard = time.monotonic()  # when Redis last sent anything
        self._pinged: float | None = None  # when the PING not yet answered went

    async def connect(self) -> None:
        connection = self._pool.make_connection()  # type: ignore[no-untyped-call]
        self._connection = connection
        await connection.connect()
        await connection.send_command("CLIENT", "SETNAME", self._name)
        await connection.read_response()
        reader, writer = getattr(connection, "_reader", None), getattr(connection, "_writer", None)
        if reader is None or writer is None:  # (redis-py's own streams: a version without)
            raise RedisConnectionError("the bus's pub/sub connection has no stream to read")
        self._reader, self._writer = reader, writer

    async def _send(self, *args: str) -> None:
        if self._writer is None:
            raise RedisConnectionError("the bus's pub/sub connection is closed")
        self._writer.write(packed([args]))
        await self._writer.drain()

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
        reader = self._reader
        if reader is None:
            raise RedisConnectionError("the bus's pub/sub connection is closed")
        while True:
            out = self._parse()
            if out:
                return out
            try:
                async with asyncio.timeout(timeout):
                    data = await reader.read(READ_SIZE)
            except TimeoutError:
                now = time.monotonic()
                if self._pinged is not None and now - self._pinged >= timeout:
                    raise RedisConnectionError("Redis did not answer the bus's PING") from None
                if self._pinged is None and now - self._heard >= self._health:
                    self._pinged = now
                    await self._send("PING")
                return []
            if not data:
                raise RedisConnectionError("Redis closed the bus's pub/sub connection")
            self._heard, self._pinged = time.monotonic(), None
            self._parser.feed(data)

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
            if item is _MORE:
                return out
            if isinstance(item, Exception):
                raise RedisConnectionError(f"the bus's pub/sub connection read an error: {item}")
            if isinstance(item, list) and len(item) == 3 and item[0] in _KINDS:
                kind = item[0].decode()
                out.append({"type": kind, "channel": item[1], "data": item[2], "pattern": None})
            # (anything else, a PONG, is only a sign of life)

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        self._reader = self._writer = None
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.disconnect(nowait=True)
