"""The one place a Redis client is made from a store URL (store, bus, leases, limits).

Two kinds of URL:

- ``redis://[user:password@]host:port/db``, ``rediss://…`` (TLS), ``unix:///path?db=N``:
  one Redis, as redis-py's ``Redis.from_url`` reads it;
- ``redis+sentinel://[[user]:password@]HOST:PORT[,HOST:PORT…]/SERVICE[/DB]``: the
  primary of the Sentinel-monitored ``SERVICE`` (``sentinel monitor SERVICE …`` in
  ``sentinel.conf``), found by asking the listed sentinels (a port left out is 26379;
  the database is 0 unless given). The password, if any, is the primary's (and its
  replicas'), not the sentinels'. Every new connection asks the sentinels where the
  primary is now, and a connection still open to a primary that was demoted hears
  ``READONLY`` once and is dropped (redis-py's ``SentinelConnectionPool``), so every
  client made here follows a promotion by itself.

:func:`connect` makes the client, its writes timed by a deadline on the task that sends
(:class:`TimedConnection`) instead of redis-py's ``asyncio.wait_for``, which on Python
3.11 runs every write in a task of its own: a task per command, a fifth to a third of a
command's CPU (issue 36). :func:`parse_sentinel_url` checks a sentinel URL
(config validation uses it, and its :class:`ValueError` names what is wrong);
:class:`Lane` is a connection of its own for a stream of short commands (the bus's
publishes and relays, the store's commits), packed here and written at once without
redis-py's per-command machinery, and :class:`Asks` one that many tasks share (the shared
limits' bucket asks);
:func:`unavailable` tells the errors that mean "no primary can write now" (a switch of
primary under way) from a refusal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Self
from urllib.parse import unquote, urlsplit

import hiredis
import redis.asyncio as aioredis
from redis._parsers.base import BaseParser
from redis.asyncio.connection import AbstractConnection, Connection
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool, SentinelManagedConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import (
    InvalidResponse,
    NoScriptError,
    ReadOnlyError,
    RedisError,
    ResponseError,
)
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.sentinel import DEMOTED_MASTER_UNBLOCKED_ERROR

__all__ = [
    "MORE",
    "REDIS_SCHEMES",
    "SENTINEL_SCHEME",
    "Abandoned",
    "Asks",
    "Lane",
    "SentinelURL",
    "TakenOver",
    "TimedConnection",
    "connect",
    "follow_primary",
    "has_sentinels",
    "is_redis_url",
    "packed",
    "parse_sentinel_url",
    "redact",
    "resp_parser",
    "unavailable",
]

SENTINEL_SCHEME: Final = "redis+sentinel://"
#: The store URLs that name a Redis (and so make a process one of a cluster).
REDIS_SCHEMES: Final = ("redis://", "rediss://", "unix://", SENTINEL_SCHEME)
SENTINEL_PORT: Final = 26379

#: Error reply codes that mean "Redis cannot do it now": a switch of primary (a demoted
#: primary, a replica loading its copy, a replica cut from its primary, a primary with
#: fewer replicas than its ``min-replicas-to-write``) or a full one.
UNAVAILABLE_CODES: Final = (
    "OOM", "READONLY", "MISCONF", "LOADING", "BUSY", "MASTERDOWN", "NOREPLICAS",
)  # fmt: skip


def is_redis_url(url: str) -> bool:
    return url.startswith(REDIS_SCHEMES)


@dataclass(frozen=True, slots=True)
class SentinelURL:
    """A ``redis+sentinel://`` URL, read."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None


def parse_sentinel_url(url: str) -> SentinelURL:
    """Read ``redis+sentinel://[[user]:password@]HOST:PORT[,HOST:PORT…]/SERVICE[/DB]``;
    :class:`ValueError` says what is wrong (never showing the password)."""
    form = "redis+sentinel://HOST:PORT[,HOST:PORT...]/SERVICE[/DB]"
    if not url.startswith(SENTINEL_SCHEME):
        raise ValueError(f"not a sentinel URL (expected {form})")
    rest = url[len(SENTINEL_SCHEME) :]
    netloc, _, path = rest.partition("/")
    if "?" in path or "#" in path:
        raise ValueError(f"a sentinel URL takes no query or fragment ({form})")
    credentials, at, hosts = netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = credentials.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    sentinels = tuple(_host_port(part, form) for part in hosts.split(","))
    parts = [p for p in path.split("/")]
    if not parts or not parts[0]:
        raise ValueError(f"a sentinel URL names the monitored service ({form})")
    if len(parts) > 2 or (len(parts) == 2 and not parts[1].isdigit()):
        raise ValueError(f"after the service comes only a database number ({form})")
    db = int(parts[1]) if len(parts) == 2 else 0
    return SentinelURL(sentinels, unquote(parts[0]), db, username, password)


def _host_port(text: str, form: str) -> tuple[str, int]:
    if not text:
        raise ValueError(f"a sentinel URL lists at least one sentinel HOST:PORT ({form})")
    parts = urlsplit(f"//{text}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{text!r} is not HOST:PORT (a port is 1-65535)") from None
    if not parts.hostname:
        raise ValueError(f"{text!r} is not HOST:PORT ({form})")
    return parts.hostname, port or SENTINEL_PORT


class _SentinelRedis(aioredis.Redis):
    """A primary's client that also closes the sentinels' clients it was made with."""

    manager: Sentinel | None = None

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        sentinel, self.manager = self.manager, None
        if sentinel is not None:
            await sentinel.aclose()


class _TimedWrites:
    """A connection whose writes are bounded by ``socket_timeout`` with
    ``asyncio.timeout`` (a deadline on the running task) rather than ``asyncio.wait_for``
    (a new task per write on Python 3.11). A write that runs out is refused as redis-py
    refuses one: the connection dropped, :class:`redis.exceptions.TimeoutError`; and
    dropped at once, with its unsent bytes (a frozen Redis would otherwise hold them in
    a closing transport until it reads again)."""

    socket_timeout: float | None
    _writer: asyncio.StreamWriter | None

    async def disconnect(self, nowait: bool = False, **more: Any) -> None:  # type: ignore[override]
        if nowait and self._writer is not None:
            self._writer.transport.abort()
        await super().disconnect(nowait, **more)  # type: ignore[misc]

    async def send_packed_command(
        self, command: bytes | str | Iterable[bytes], check_health: bool = True
    ) -> None:
        try:  # (no timer when there is no timeout: asyncio.timeout(None))
            async with asyncio.timeout(self.socket_timeout or None):
                await send_within(self, command, check_health)
        except TimeoutError:  # (the cancelled write dropped the connection)
            raise RedisTimeoutError("Timeout writing to socket") from None


async def send_within(
    connection: Any, command: bytes | str | Iterable[bytes], check_health: bool = False
) -> None:
    """Write ``command`` on any redis-py connection (TCP, TLS, a Unix socket) with no timer
    of its own, for a caller whose deadline bounds it already (:class:`_TimedWrites`).
    Not redis-py's ``wait_for`` nested in that deadline: on Python 3.11 it can swallow the
    deadline's cancellation when the write ends in the same step (review)."""
    timeout, connection.socket_timeout = connection.socket_timeout, None
    try:
        await AbstractConnection.send_packed_command(connection, command, check_health)
    finally:
        connection.socket_timeout = timeout


class TimedConnection(_TimedWrites, Connection):  # type: ignore[misc]
    """A TCP connection to one Redis with :class:`_TimedWrites`."""


class _TimedSentinelConnection(_TimedWrites, SentinelManagedConnection):  # type: ignore[misc]
    """A connection to a Sentinel-monitored primary with :class:`_TimedWrites`."""


def connect(url: str, **options: Any) -> aioredis.Redis:
    """A client for the Redis ``url`` names (see the module docstring). ``options`` are
    redis-py's connection options (timeouts, retry, health checks); a sentinel URL's
    sentinels are asked with the same timeouts. Raises :class:`ValueError` for a URL
    that is not one of these."""
    if not url.startswith(SENTINEL_SCHEME):
        if url.startswith("redis://"):  # (TLS and Unix sockets keep their own classes)
            options.setdefault("connection_class", TimedConnection)
        return aioredis.Redis.from_url(url, **options)
    target = parse_sentinel_url(url)
    timeouts = {k: v for k, v in options.items() if k.startswith("socket_")}
    sentinel = Sentinel(list(target.sentinels), sentinel_kwargs=timeouts)  # type: ignore[no-untyped-call]
    client = sentinel.master_for(
        target.service,
        redis_class=_SentinelRedis,
        db=target.db,
        username=target.username,
        password=target.password,
        check_connection=True,  # a PING on each new connection: a primary that answers
        connection_class=_TimedSentinelConnection,
        **options,
    )
    assert isinstance(client, _SentinelRedis)
    client.manager = sentinel
    return client


def packed(commands: Iterable[Sequence[bytes | str]]) -> bytes:
    """``commands`` in Redis's protocol (RESP: an array of bulk strings each), one buffer."""
    out: list[bytes] = []
    for args in commands:
        out.append(b"*%d\r\n" % len(args))
        for arg in args:
            data = arg.encode() if isinstance(arg, str) else arg
            out += (b"$%d\r\n" % len(data), data, b"\r\n")
    return b"".join(out)


class Abandoned(RedisError):
    """A batch no caller waits for any more was not sent again (:meth:`Lane.replies`)."""


class Lane:
    """One connection of its own, made like ``client``'s (the same address, or the
    primary the sentinels name now; credentials, database, TLS, timeouts), for a stream of
    short commands sent in order: each batch packed here (:func:`packed`) and written at
    once, its replies read in order, without a pipeline's pool checkout and release, retry
    wrapper, command stack and packer per command (issue 36: ``python -m bench.relay``, the
    bus's CPU a relayed command, a quarter less).

    :meth:`send` answers each command's reply, or raises redis-py's error for the first
    error reply (a ``READONLY`` from a demoted primary among them), a lost connection or a
    timeout; the connection is then dropped (with what was left unread) and the next
    :meth:`send` connects again, as it does once the sentinels name another primary.
    A batch is handed to the transport at once and its replies read under one deadline
    (``socket_timeout``, a timer on the batch: a write Redis does not take shows as
    replies that do not come), not a timer each. :meth:`send` is one writer's (the bus's:
    never two tasks at once); :meth:`replies` (the store's commits, :class:`Asks`) takes
    turns between callers and retries a lost connection. One Lane is used one of the two
    ways only."""

    def __init__(self, client: aioredis.Redis) -> None:
        self._pool = client.connection_pool
        self._connection: Any = None
        self._wire: _Wire | None = None  # the connection's protocol once made
        self._lock = asyncio.Lock()
        self._retry: Any = None  # the client's connections' (made at the first reply)

    async def send(self, commands: Sequence[Sequence[bytes | str]]) -> list[Any]:
        return await self._batch(commands, errors=False)

    async def replies(
        self, commands: Sequence[Sequence[bytes | str]], wanted: Callable[[], bool] | None = None
    ) -> list[Any]:
        """Each command's reply, an error reply as its :class:`ResponseError` (the
        connection goes on: a script's refusal is its own, as in a pipeline), for callers
        that share the Lane: one batch at a time (a lock), in the order they came. A lost
        connection or a timeout sends the whole batch again on a new connection as the
        client's own commands would be (its ``retry``: the same tries and backoff, the
        sentinels asked where the primary is, a ``READONLY`` primary taken for lost), so
        a command sent here must be harmless twice; then raises as :meth:`send`. With
        ``wanted``, tried again only while it says the replies are still wanted (else
        :class:`Abandoned`, before the backoff's wait and after it)."""

        async def attempt() -> list[Any]:
            if wanted is not None and not wanted():
                raise Abandoned("no caller waits for these replies any more")
            return await self._batch(commands, errors=True)

        async def failed(error: BaseException) -> None:  # (the batch dropped its connection)
            if wanted is not None and not wanted():
                raise Abandoned("no caller waits for these replies any more") from error

        async with self._lock:
            if self._retry is None:
                self._retry = self._pool.make_connection().retry  # type: ignore[no-untyped-call]
            return await self._retry.call_with_retry(attempt, failed)  # type: ignore[no-any-return]

    async def _batch(self, commands: Sequence[Sequence[bytes | str]], errors: bool) -> list[Any]:
        connection = self._connection
        if connection is not None and not self._current(connection):
            await self.close()  # a primary the sentinels no longer name (a switch)
            connection = None
        timer = None
        try:
            if connection is None:
                connection = self._pool.make_connection()  # type: ignore[no-untyped-call]
                await connection.connect()
                self._wire = _Wire.over(connection)
                self._connection = connection
            # Written and its replies parsed as they arrive by the connection's protocol
            # (:class:`_Wire`), under one deadline: a timer on the batch's future, not a
            # timeout on the task nor redis-py's per-call layers (issue 36).
            wire = self._wire
            assert wire is not None
            replies = wire.send(packed(commands), len(commands))
            if connection.socket_timeout:
                loop = asyncio.get_running_loop()
                timer = loop.call_later(connection.socket_timeout, _expire, replies)
            done: list[Any] = await replies
            master = getattr(self._pool, "is_master", False)
            for reply in done:
                lost = reply[0] if type(reply) is list and reply else reply
                if isinstance(lost, RedisConnectionError):
                    raise lost  # (LOADING, NOAUTH...: redis-py raises them, and retries)
                if isinstance(reply, ResponseError):
                    if master and _demoted(reply):
                        raise RedisConnectionError("The previous master is now a slave")
                    if not errors:
                        raise reply
            return done
        except BaseException as exc:
            self._connection, self._wire = None, None
            if connection is not None:
                await connection.disconnect(nowait=True)
            if type(exc) is TimeoutError:  # (the batch's deadline, as redis-py says it)
                raise RedisTimeoutError("Timeout writing to or reading from Redis") from None
            raise
        finally:
            if timer is not None:
                timer.cancel()

    def _current(self, connection: Any) -> bool:
        """Whether ``connection`` is to the primary the sentinels named last (the bus's
        probe asks them every half second, :func:`follow_primary`): a demoted primary
        takes a ``PUBLISH`` without a ``READONLY``. Always, for one Redis."""
        primary = getattr(self._pool, "master_address", None)
        return primary is None or primary == (connection.host, connection.port)

    async def close(self) -> None:
        connection, self._connection, self._wire = self._connection, None, None
        if connection is not None:
            await connection.disconnect(nowait=True)


#: What a parser says of a reply not whole yet (not a reply of ``False``).
MORE: Final = object()


def resp_parser(connection: Any = None) -> Any:
    """A RESP parser (RESP2 and RESP3: hiredis, redis-py's own C one) of a connection's
    replies: error replies as redis-py's exceptions (``NOSCRIPT``, ``READONLY``...),
    returned, not raised; text decoded as ``connection``'s client decodes it (bytes
    without a connection); :data:`MORE` while the next is not whole."""
    options: dict[str, Any] = dict(
        protocolError=InvalidResponse, replyError=BaseParser.parse_error, notEnoughData=MORE
    )
    encoder = getattr(connection, "encoder", None)
    if encoder is not None and encoder.decode_responses:
        options.update(encoding=encoder.encoding, errors=encoder.encoding_errors)
    return hiredis.Reader(**options)


class TakenOver(asyncio.Protocol):
    """The protocol of a redis-py connection's transport once redis-py has made it (the
    address or the primary the sentinels name, TLS, credentials, database): what arrives
    fed to :attr:`parser` (:func:`resp_parser`), not to redis-py's stream (issue 36: its
    per-call layers, its reads and wakes, a timeout on the task). The base of the
    :class:`Lane`'s protocol and of the bus's pub/sub's (``server.bus.pubsub``)."""

    def __init__(self, transport: asyncio.Transport, parser: Any) -> None:
        self.transport = transport
        self.parser = parser
        #: redis-py's stream protocol, told of the loss too (its ``wait_closed`` ends).
        self.before: asyncio.BaseProtocol | None = None

    @classmethod
    def over(cls, connection: Any) -> Self:
        """Take ``connection``'s transport over from redis-py's stream (what it holds
        unread, nothing after its handshake, parsed first)."""
        writer, reader = connection._writer, connection._reader
        if writer is None or reader is None:  # (redis-py's own streams: a version without)
            raise RedisConnectionError("a connection to Redis has no transport to take over")
        taken = cls(writer.transport, resp_parser(connection))
        left = bytes(getattr(reader, "_buffer", b""))
        if left:
            taken.parser.feed(left)
        taken.before = writer.transport.get_protocol()
        writer.transport.set_protocol(taken)
        return taken

    def data_received(self, data: bytes) -> None:
        self.parser.feed(data)
        self.arrived()

    def arrived(self) -> None:
        """What came is in the parser."""

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost_with(exc)
        if self.before is not None:
            self.before.connection_lost(exc)

    def lost_with(self, exc: Exception | None) -> None:
        """The connection is lost (``exc``: why, if known)."""

    def eof_received(self) -> bool:
        return False  # (closed: connection_lost follows)


class _Wire(TakenOver):
    """A :class:`Lane`'s connection, taken over (:class:`TakenOver`): each batch written at
    once and its replies parsed as they arrive, the batch's future answered when the last
    is in. One batch at a time (the Lane's). A lost connection fails the batch waiting
    (:class:`~redis.exceptions.ConnectionError`), as does what is not RESP."""

    def __init__(self, transport: asyncio.Transport, parser: Any) -> None:
        super().__init__(transport, parser)
        self.waiter: asyncio.Future[list[Any]] | None = None
        self.count = 0
        self.replies: list[Any] = []
        self.lost: BaseException | None = None

    def send(self, data: bytes, count: int) -> asyncio.Future[list[Any]]:
        """Write ``data`` (``count`` commands); the future of their replies."""
        waiter: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        if self.lost is not None:
            waiter.set_exception(RedisConnectionError("the connection to Redis was lost"))
            return waiter
        self.waiter, self.count, self.replies = waiter, count, []
        self.transport.write(data)
        self.arrived()  # (replies cannot be here yet; a parser left in error says so)
        return waiter

    def arrived(self) -> None:
        waiter = self.waiter
        if waiter is None:
            return
        replies, parser = self.replies, self.parser
        try:
            while len(replies) < self.count:
                reply = parser.gets()
                if reply is MORE:
                    return
                if type(reply) is not hiredis.PushNotification:  # (RESP3: no reply; as
                    replies.append(reply)  # redis-py, a push between replies is passed over)
        except Exception as exc:  # (InvalidResponse: not RESP)
            self.waiter = None
            if not waiter.done():
                waiter.set_exception(RedisConnectionError(f"Redis sent what is not RESP: {exc}"))
            self.transport.abort()
            return
        self.waiter = None
        if not waiter.done():
            waiter.set_result(replies)

    def lost_with(self, exc: Exception | None) -> None:
        self.lost = exc or RedisConnectionError("Redis closed the connection")
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(RedisConnectionError("the connection to Redis was lost"))


def _expire(replies: asyncio.Future[list[Any]]) -> None:
    """A batch's deadline: its replies did not all come in time."""
    if not replies.done():
        replies.set_exception(TimeoutError())


def _demoted(reply: ResponseError) -> bool:
    """Whether an error reply says the primary was demoted (over sentinels: the
    connection is taken for lost, as redis-py's sentinel connections take it)."""
    return isinstance(reply, ReadOnlyError) or str(reply).startswith(DEMOTED_MASTER_UNBLOCKED_ERROR)


class Asks:
    """Commands many tasks ask for, sent on a :class:`Lane` of their own: those asked in
    one turn of the loop go out as one batch (at most ``most``), each caller answered
    its own reply or raised its own error reply (:meth:`Lane.replies`, which retries a
    lost connection while a caller of the batch still waits). A command whose caller gave
    up before its batch went is not sent; an ``EVALSHA`` Redis does not know
    (``NOSCRIPT``: it ran nothing) is sent again as ``EVAL`` of the script given with it
    (which Redis then keeps)."""

    def __init__(self, client: aioredis.Redis, most: int = 64) -> None:
        self.lane = Lane(client)
        self.most = most
        self._queued: list[tuple[list[bytes | str], str | None, asyncio.Future[Any]]] = []
        self._sender: asyncio.Task[None] | None = None

    def ask(self, command: Sequence[bytes | str], script: str | None = None) -> asyncio.Future[Any]:
        """Queue ``command`` (``script``: the text of the ``EVALSHA``'s script); its reply."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queued.append((list(command), script, future))
        if self._sender is None:
            self._sender = loop.create_task(self._send())
        return future

    async def _send(self) -> None:
        batch: list[tuple[list[bytes | str], str | None, asyncio.Future[Any]]] = []
        try:
            while self._queued:
                batch = [q for q in self._queued[: self.most] if not q[2].done()]
                del self._queued[: self.most]
                if not batch:
                    continue
                awaited = partial(_awaited, [future for _, _, future in batch])
                try:
                    replies = await self.lane.replies([c for c, _, _ in batch], awaited)
                except Exception as exc:  # the batch failed: every caller hears it
                    replies = [exc] * len(batch)
                for (command, script, future), reply in zip(batch, replies, strict=True):
                    if isinstance(reply, NoScriptError) and script is not None:
                        self._queued.append((["EVAL", script, *command[2:]], None, future))
                    elif future.done():
                        continue
                    elif isinstance(reply, BaseException):
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)
        finally:
            self._sender = None
            for _, _, future in batch + self._queued:  # (cancelled: closed, or the loop is)
                future.cancel()

    async def close(self) -> None:
        sender, self._sender = self._sender, None
        if sender is not None:
            sender.cancel()
            with suppress(BaseException):
                await sender
        await self.lane.close()


def _awaited(futures: list[asyncio.Future[Any]]) -> bool:
    """Whether a caller still waits for one of ``futures``."""
    return not all(future.done() for future in futures)


def redact(url: str) -> str:
    """``url`` without its password, to name it in messages (a sentinel URL's list of
    hosts too)."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    credentials, at, hosts = netloc.rpartition("@")
    if not sep or not at or ":" not in credentials:
        return url
    user = credentials.partition(":")[0]
    return f"{scheme}://{user}:***@{hosts}{slash}{path}"


def unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means Redis cannot answer or write now (no primary reachable, a
    demoted or loading one, a timeout), so the same call may work in a moment; not
    whether it was refused. redis-py strips the code from the message of the replies it
    knows (``READONLY`` becomes a ``ReadOnlyError`` saying "You can't write against a
    read only replica."), so the code is looked for in ``status_code`` too."""
    if isinstance(exc, RedisConnectionError | RedisTimeoutError | OSError | TimeoutError):
        return True  # the sentinels' "no master found" is a ConnectionError too
    if isinstance(exc, ResponseError):
        code = getattr(exc, "status_code", None) or str(exc).partition(" ")[0]
        return str(code).startswith(UNAVAILABLE_CODES)
    return False


async def follow_primary(client: aioredis.Redis) -> None:
    """For a sentinel client: ask the sentinels where the primary is now, and if it
    moved, close the idle connections to the old one (redis-py's pool does that when it
    learns the new address). A client that only ``PUBLISH``es needs it: a demoted
    primary takes a ``PUBLISH`` without a ``READONLY`` (and delivers it only to its own
    subscribers), so nothing else would make it look again. Harmless otherwise."""
    if has_sentinels(client):
        await client.connection_pool.get_master_address()  # type: ignore[attr-defined]


def has_sentinels(client: aioredis.Redis) -> bool:
    """Whether ``client`` finds its primary through sentinels (``redis+sentinel://``):
    only then has :func:`follow_primary` anything to do."""
    return isinstance(client.connection_pool, SentinelConnectionPool)
