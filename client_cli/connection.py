"""An asyncio client for the Chemmy protocol (msgpack frames), with resume on reconnect.

:class:`Connection` speaks only the public protocol (``chemmy.v1.msgpack``):

* ``hello`` with a token or as a guest, then requests matched to their replies by
  ``id`` (a future per request; an ``error`` reply raises :class:`ServerError`);
* one ordered stream of what the server pushes — table ``event`` messages and ``chat``
  — plus three kinds of item the connection makes itself, in order with the events:

  - ``{"type": "snapshot", "table": T, "seq": N, "snapshot": {...}}``: a table's full
    view, from a ``join`` without ``since`` or a resume the server could not serve;
  - ``{"type": "status", "state": S, ...}``: the connection's state changed
    (``connecting``, ``connected``, ``reconnecting``, ``resumed``, ``closed``);
  - ``{"type": "error", ...}``: an error reply nobody was waiting for.

  Read it with ``async for item in conn.stream()`` or pass ``on_item``;
* the last ``seq`` seen per joined table, and after a dropped connection an automatic
  reconnect with exponential backoff and jitter (:func:`backoff_delay`), a new
  ``hello`` and a ``join`` of every table with ``since`` = that seq, so the table
  sends only what was missed.

A token keeps the identity across reconnects, and with it the seat and a squeeze in
progress. A guest keeps it too: the server's hello reply hands a guest a ``resume``
token, which the next hello presents; only when that is refused (the server was
restarted, or a day passed) does the guest come back as a new player from a snapshot.

Money is never touched here; the connection moves plain messages (the hello reply's
``currency`` only sets how the client shows amounts: :func:`client_cli.money.set_currency`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import secrets
import time
from collections.abc import AsyncIterator, Callable
from enum import StrEnum
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from client_cli.money import set_currency
from server.protocol.codec import MSGPACK, decode, encode
from server.protocol.errors import ProtocolError

__all__ = [
    "DEFAULT_URL",
    "ConnState",
    "Connection",
    "ConnectionLost",
    "ServerError",
    "backoff_delay",
]

DEFAULT_URL = "ws://127.0.0.1:8765"
MAX_FRAME = 1 << 24  # snapshots with a whole shoe's roads are a few hundred kB at most
RATE_RETRIES = 3  # a "rate_limited" refusal is retried (same id) this many times
#: Error codes after which reconnecting cannot help (the credentials are refused).
FATAL_HELLO_CODES = frozenset({"auth_required", "bad_token", "token_expired", "bad_name"})

Item = dict[str, Any]


class ConnState(StrEnum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    RESUMED = "resumed"
    CLOSED = "closed"


class ServerError(Exception):
    """The server answered a request with an error reply."""

    def __init__(self, code: str, message: str, reply: Item | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.reply = reply or {}


class ConnectionLost(Exception):
    """The connection dropped (or was never up) before the reply came."""


def backoff_delay(
    attempt: int,
    *,
    initial: float = 0.25,
    maximum: float = 10.0,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before reconnect ``attempt`` (0, 1, 2, ...): exponential
    (``initial * 2**attempt``, capped at ``maximum``) with "equal jitter": a uniformly
    random point in the upper half, so many clients dropped at once spread out."""
    base = min(maximum, initial * (1 << min(max(attempt, 0), 30)))
    r = rng.random() if rng is not None else random.random()
    return base / 2 + r * base / 2


class Connection:
    """One WebSocket connection to a Chemmy server that comes back when it drops.

    ``await start()`` connects and says hello (raising on failure unless ``retry``),
    ``await request(type, **fields)`` sends a command and returns the ``ok`` reply,
    ``await join(table)`` joins and remembers the table for resuming; ``stream()``
    yields events, chat and status items in order; ``await close()`` ends it all.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        guest: bool = False,
        name: str | None = None,
        on_item: Callable[[Item], None] | None = None,
        on_state: Callable[[ConnState], None] | None = None,
        reconnect: bool = True,
        backoff_initial: float = 0.25,
        backoff_max: float = 10.0,
        open_timeout: float = 10.0,
        request_timeout: float = 30.0,
        rate: float | None = 18.0,
        burst: int = 30,
        rng: random.Random | None = None,
    ) -> None:
        if not token and not guest:
            raise ValueError("give a token, or ask for guest play")
        self.url = url
        self.token = token
        self.guest = guest if not token else False
        self.name = name
        self.on_item = on_item
        self.on_state = on_state
        self.reconnect = reconnect
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.open_timeout = open_timeout
        self.request_timeout = request_timeout
        self.rng = rng or random.Random()
        # A token bucket a little under the server's default limit (20/s, burst 40):
        # a client that keeps to it is never refused with "rate_limited".
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        self.state = ConnState.CLOSED
        self.identity: Item = {}  # the last hello reply: player, name, balance...
        self.last_seq: dict[str, int] = {}  # per joined table
        self.tables: set[str] = set()  # joined tables, joined again on reconnect
        self.clock_offset = 0.0  # server time - local time, from a ping
        self.reconnects = 0
        self.close_reason: str | None = None
        self._ws: ClientConnection | None = None
        self._live: ClientConnection | None = None  # the socket once hello and joins are done
        self._reader: asyncio.Task[None] | None = None
        self._reconnector: asyncio.Task[None] | None = None
        self._pending: dict[str, tuple[asyncio.Future[Item], str, Item]] = {}
        self._queue: asyncio.Queue[Item | None] = asyncio.Queue()
        self._ids = itertools.count(1)
        self._prefix = secrets.token_hex(4)
        self._closing = False

    # ------------------------------------------------------------------ lifecycle
    @property
    def player(self) -> str | None:
        pid = self.identity.get("player")
        return str(pid) if pid is not None else None

    @property
    def connected(self) -> bool:
        return self._ws is not None and self.state in (ConnState.CONNECTED, ConnState.RESUMED)

    async def start(self, *, retry: bool = False) -> Item:
        """Connect and say hello; return the hello reply. With ``retry``, keep trying
        with backoff until it works (or the credentials are refused)."""
        self._closing = False
        self._set_state(ConnState.CONNECTING)
        attempt = 0
        while True:
            try:
                await self._open(resume=False)
                return self.identity
            except ServerError as exc:
                if exc.code in FATAL_HELLO_CODES or not retry:
                    self._set_state(ConnState.CLOSED, reason=exc.message)
                    raise
            except (OSError, ConnectionLost, InvalidHandshake, TimeoutError) as exc:
                if not retry:
                    self._set_state(ConnState.CLOSED, reason=_describe(exc))
                    raise ConnectionLost(
                        f"cannot connect to {self.url}: {_describe(exc)}"
                    ) from None
            except InvalidURI as exc:
                self._set_state(ConnState.CLOSED, reason=str(exc))
                raise ConnectionLost(f"not a WebSocket URL: {self.url}") from None
            await asyncio.sleep(self._delay(attempt))
            attempt += 1

    async def close(self) -> None:
        """Close for good: no reconnect; pending requests fail with ConnectionLost."""
        self._closing = True
        if self._reconnector is not None:
            self._reconnector.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reconnector
            self._reconnector = None
        ws = self._ws
        if ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 2)
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._reader, 2)
        self._fail_pending("the connection is closed")
        self._ws = None
        self._set_state(ConnState.CLOSED)
        self._queue.put_nowait(None)

    def drop(self) -> None:
        """Cut the connection abruptly, as a network failure would (for tests and
        the UI's "reconnect" key); the connection comes back by itself."""
        ws = self._ws
        if ws is not None and ws.transport is not None:
            ws.transport.abort()

    # ------------------------------------------------------------------ requests
    def next_id(self) -> str:
        return f"{self._prefix}-{next(self._ids)}"

    async def request(
        self, kind: str, /, *, timeout: float | None = None, mid: str | None = None, **fields: Any
    ) -> Item:
        """Send one command (``kind`` positional only: a field may be called ``kind``,
        as ``set_limit``'s is); return its ``ok`` reply or raise :class:`ServerError`
        (an ``error`` reply) or :class:`ConnectionLost`. ``None`` fields are left out.
        Give ``mid`` to repeat a command with the same id (an idempotent retry)."""
        ws = self._ws
        if ws is None or not self.connected:
            raise ConnectionLost("not connected")
        return await self._request_on(ws, kind, fields, timeout=timeout, mid=mid)

    async def _request_on(
        self,
        ws: ClientConnection,
        kind: str,
        fields: dict[str, Any],
        *,
        timeout: float | None = None,
        mid: str | None = None,
    ) -> Item:
        mid = mid or self.next_id()
        message: Item = {
            "type": kind,
            "id": mid,
            **{k: v for k, v in fields.items() if v is not None},
        }
        for attempt in range(RATE_RETRIES + 1):
            await self._throttle()
            fut: asyncio.Future[Item] = asyncio.get_running_loop().create_future()
            self._pending[mid] = (fut, kind, message)
            try:
                await ws.send(encode(message, MSGPACK))
            except ConnectionClosed:
                self._pending.pop(mid, None)
                raise ConnectionLost("the connection dropped") from None
            try:
                return await asyncio.wait_for(fut, timeout or self.request_timeout)
            except TimeoutError:
                raise ConnectionLost(f"no reply to {kind} in time") from None
            except ServerError as exc:
                # Refused before it was read: the same id is safe to send again.
                if exc.code != "rate_limited" or attempt == RATE_RETRIES:
                    raise
                await asyncio.sleep(0.25 * (attempt + 1))
            finally:
                self._pending.pop(mid, None)
        raise AssertionError("unreachable")

    async def _throttle(self) -> None:
        """Wait for a token of the client's own rate limit (none when ``rate`` is None)."""
        if self.rate is None:
            return
        while True:
            now = time.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now
            if self._tokens >= 1:
                self._tokens -= 1
                return
            await asyncio.sleep((1 - self._tokens) / self.rate)

    async def join(self, table: str, since: int | None = None) -> Item:
        """Join ``table`` (a snapshot comes on the stream, or the missed events when
        ``since`` can be served) and rejoin it after every reconnect."""
        reply = await self.request("join", table=table, since=since)
        self.tables.add(table)
        return reply

    async def leave(self, table: str) -> Item:
        """Leave ``table``; it is forgotten (not rejoined) once the server agrees."""
        reply = await self.request("leave", table=table)
        self.tables.discard(table)
        self.last_seq.pop(table, None)
        return reply

    async def resync(self, table: str) -> Item:
        """Ask for a fresh snapshot of a joined table (after a gap in its seqs)."""
        return await self.request("join", table=table)

    def server_time(self) -> float:
        """The server's clock now, as far as the last ping tells (deadlines use it)."""
        return time.time() + self.clock_offset

    # ------------------------------------------------------------------ the stream
    async def stream(self) -> AsyncIterator[Item]:
        """Events, chat, snapshots and status changes, in the order they happened;
        ends after :meth:`close`."""
        while True:
            item = await self._queue.get()
            if item is None:
                return
            yield item

    def _push(self, item: Item) -> None:
        if self.on_item is not None:
            self.on_item(item)
        else:
            self._queue.put_nowait(item)

    def _set_state(self, state: ConnState, **extra: Any) -> None:
        self.state = state
        if state is ConnState.CLOSED and extra.get("reason"):
            self.close_reason = str(extra["reason"])
        if self.on_state is not None:
            self.on_state(state)
        self._push({"type": "status", "state": state.value, **extra})

    # ------------------------------------------------------------------ internals
    def _delay(self, attempt: int) -> float:
        return backoff_delay(
            attempt, initial=self.backoff_initial, maximum=self.backoff_max, rng=self.rng
        )

    async def _open(self, *, resume: bool) -> None:
        ws = await connect(
            self.url,
            subprotocols=[MSGPACK],  # type: ignore[list-item]
            max_size=MAX_FRAME,
            open_timeout=self.open_timeout,
            ping_interval=20,
            ping_timeout=20,
        )
        if ws.subprotocol != MSGPACK:
            await ws.close()
            raise ConnectionLost("the server does not speak chemmy.v1.msgpack")
        self._ws = ws
        self._reader = asyncio.create_task(self._read(ws), name="chemmy-reader")
        try:
            hello: dict[str, Any] = {"token": self.token} if self.token else {"guest": True}
            if self.name and not self.token:
                hello["name"] = self.name
            before = self.player
            resume_token = self.identity.get("resume") if self.guest else None
            try:
                if isinstance(resume_token, str):
                    hello["resume"] = resume_token
                reply = await self._request_on(ws, "hello", hello, timeout=self.open_timeout)
            except ServerError as exc:
                if "resume" not in hello or exc.code not in ("bad_token", "token_expired"):
                    raise
                del hello["resume"]  # the server forgot us: come back as a new guest
                reply = await self._request_on(ws, "hello", hello, timeout=self.open_timeout)
            self.identity = reply
            # Every amount from now on in the player's currency (play money: none).
            set_currency(reply.get("currency"), reply.get("decimals"))
            t0 = time.time()
            with contextlib.suppress(ServerError, ConnectionLost):
                pong = await self._request_on(ws, "ping", {}, timeout=self.open_timeout)
                if isinstance(pong.get("time"), int | float):
                    self.clock_offset = float(pong["time"]) - (t0 + time.time()) / 2
            same_player = before is None or before == self.player
            resumed: dict[str, bool] = {}
            for table in sorted(self.tables):
                since = self.last_seq.get(table) if resume and same_player else None
                r = await self._request_on(ws, "join", {"table": table, "since": since})
                resumed[table] = bool(r.get("resumed"))
        except BaseException:
            self._ws = None
            with contextlib.suppress(Exception):
                await ws.close()
            raise
        self._live = ws
        if resume:
            self._set_state(ConnState.RESUMED, tables=resumed, same_player=same_player)
        else:
            self._set_state(ConnState.CONNECTED)

    async def _read(self, ws: ClientConnection) -> None:
        try:
            async for frame in ws:
                try:
                    message = decode(frame, MSGPACK, max_size=MAX_FRAME)
                except ProtocolError:
                    continue  # never crash on a bad frame; the server does not send them
                self._handle(message)
        except ConnectionClosed:
            pass
        finally:
            if self._ws is ws:
                self._ws = None
            self._fail_pending("the connection dropped")
            if ws is self._live:
                self._live = None
                if not self._closing:
                    self._lost()

    def _handle(self, message: Item) -> None:
        kind = message.get("type")
        if kind in ("ok", "error"):
            mid = message.get("id")
            entry = self._pending.get(str(mid)) if mid is not None else None
            if entry is None:
                if kind == "error":
                    self._push(message)
                return
            fut, sent_kind, sent = entry
            if kind == "error":
                if not fut.done():
                    fut.set_exception(
                        ServerError(
                            str(message.get("code", "error")),
                            str(message.get("message", "")),
                            message,
                        )
                    )
                return
            if sent_kind == "join":
                self._joined(sent, message)
            if not fut.done():
                fut.set_result(message)
            return
        if kind == "event":
            table = message.get("table")
            seq = message.get("seq")
            if (
                isinstance(table, str)
                and isinstance(seq, int)
                and seq > self.last_seq.get(table, -1)
            ):
                self.last_seq[table] = seq
            self._push(message)
            return
        self._push(message)  # chat, and anything newer this client does not know

    def _joined(self, sent: Item, reply: Item) -> None:
        """A join's reply, handled in stream order: a snapshot replaces the table's state."""
        table = str(reply.get("table", sent.get("table")))
        self.tables.add(table)
        seq = reply.get("seq")
        snapshot = reply.get("snapshot")
        if snapshot is not None and isinstance(seq, int):
            self.last_seq[table] = seq
            self._push({"type": "snapshot", "table": table, "seq": seq, "snapshot": snapshot})

    def _fail_pending(self, why: str) -> None:
        for mid, (fut, _kind, _msg) in list(self._pending.items()):
            if not fut.done():
                fut.set_exception(ConnectionLost(why))
            self._pending.pop(mid, None)

    def _lost(self) -> None:
        if not self.reconnect:
            self._set_state(ConnState.CLOSED, reason="the connection dropped")
            self._queue.put_nowait(None)
            return
        if self._reconnector is None or self._reconnector.done():
            self._reconnector = asyncio.create_task(self._reconnect_loop(), name="chemmy-reconnect")

    async def _reconnect_loop(self) -> None:
        self._set_state(ConnState.RECONNECTING, attempt=0)
        attempt = 0
        while not self._closing:
            await asyncio.sleep(self._delay(attempt))
            if self._closing:
                return
            try:
                await self._open(resume=True)
                self.reconnects += 1
                return
            except ServerError as exc:
                if exc.code in FATAL_HELLO_CODES:
                    self._set_state(ConnState.CLOSED, reason=exc.message)
                    return
            except (OSError, ConnectionLost, InvalidHandshake, TimeoutError, ConnectionClosed):
                pass
            attempt += 1
            self._set_state(ConnState.RECONNECTING, attempt=attempt)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())
