"""The one protocol test client: a recording WebSocket client of a live Chemmy server.

:class:`Client` speaks the Chemmy protocol (docs/protocol.md) over a real ``websockets``
connection, in JSON (text frames) or msgpack (binary frames). A reader task records
**every** frame received (:attr:`Client.frames`), routes replies to the command that
asked, checks that event ``seq`` numbers continue without a gap or a duplicate per table
(:attr:`Client.problems`), and wakes whoever waits for a frame. It survives
reconnections (:meth:`Client.reconnect`), so a resumed stream is checked against what
came before the drop. :func:`open_player` and :func:`open_guest` connect and say hello.

Load generators (bench/) that hold thousands of connections give a ``tap``: it sees each
frame first and may take it, so that frames it only counts are neither decoded nor kept.

No sleeps: everything waits for a frame, with a timeout scaled by
``CHEMMY_TESTS_TIMEOUT_FACTOR`` (:mod:`.timing`). This module must never reach into a
server's internals: it knows the server only by its URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from .tables import SECRET
from .timing import scaled

#: Refusals that mean "not now, try again" while a table moves between processes.
TRANSIENT = frozenset({"unavailable", "timeout", "busy", "store_unavailable", "store_failed"})

JSON = "chemmy.v1.json"
MSGPACK = "chemmy.v1.msgpack"
FORMATS = {"json": JSON, "msgpack": MSGPACK}

#: A frame a tap was given: it returns True to take it (not decoded, not recorded).
Tap = Callable[[str | bytes], bool]

_ids = itertools.count(1)


class ProtocolProblem(AssertionError):
    """The server broke the protocol (a wrong frame type, a seq gap, a duplicate...)."""


@dataclass(frozen=True, slots=True)
class Frame:
    index: int
    conn: int  # which connection of this client (0, 1, ... after reconnects)
    raw: str | bytes
    msg: dict[str, Any]
    at: float


def decode_frame(raw: str | bytes, fmt: str) -> dict[str, Any]:
    if fmt == JSON:
        if not isinstance(raw, str):
            raise ProtocolProblem("a binary frame on a JSON connection")
        value = json.loads(raw)
    else:
        if not isinstance(raw, bytes):
            raise ProtocolProblem("a text frame on a msgpack connection")
        value = msgpack.unpackb(raw, raw=False)
    if not isinstance(value, dict):
        raise ProtocolProblem(f"a frame that is not a map: {value!r}")
    return value


def encode_frame(message: Mapping[str, Any], fmt: str) -> str | bytes:
    if fmt == JSON:
        return json.dumps(message, separators=(",", ":"))
    packed: bytes = msgpack.packb(dict(message), use_bin_type=True)
    return packed


class Client:
    """One player's (or spectator's) connection(s) to a live server, recording everything.

    ``timeout`` is this client's default wait (seconds, already scaled; default
    ``scaled(5)``); ``tap`` sees every frame before it is decoded and takes it by
    returning True (see the module docstring).
    """

    def __init__(
        self,
        url: str,
        fmt: str = "json",
        *,
        label: str = "client",
        timeout: float | None = None,
        tap: Tap | None = None,
    ) -> None:
        self.url = url
        self.fmt = FORMATS.get(fmt, fmt)
        self.label = label
        self.timeout = timeout if timeout is not None else scaled(5)
        self.tap = tap
        self.ws: ClientConnection | None = None
        self.frames: list[Frame] = []
        self.problems: list[str] = []
        self.last_seq: dict[str, int] = {}
        self.snapshots: dict[str, dict[str, Any]] = {}  # the last snapshot per table
        self.snapshot_at: dict[str, int] = {}  # ... and the index of its frame
        self.player: str | None = None
        self.name: str | None = None
        self.token: str | None = None
        self.hello_reply: dict[str, Any] | None = None
        self.conn_no = -1
        self.close_codes: list[int | None] = []
        self._reader: asyncio.Task[None] | None = None
        self._waiters: list[tuple[Callable[[dict[str, Any]], bool], asyncio.Future[Frame]]] = []
        self._closed = asyncio.Event()
        self._resumes: dict[str, int] = {}  # join id -> since

    def __repr__(self) -> str:
        return f"Client({self.label!r}, {self.fmt}, player={self.player!r})"

    # -- connection ------------------------------------------------------------------
    async def open(self, **kwargs: Any) -> Client:
        """Connect (``kwargs`` override the ``websockets`` connect options)."""
        options: dict[str, Any] = {
            "subprotocols": [self.fmt],
            "proxy": None,
            "compression": None,
            "max_size": None,
            "open_timeout": scaled(10),
            "close_timeout": scaled(5),
            "ping_interval": None,
        }
        options.update(kwargs)
        self.ws = await connect(self.url, **options)
        if self.ws.subprotocol != self.fmt:
            raise ProtocolProblem(f"asked for {self.fmt}, got {self.ws.subprotocol}")
        self.conn_no += 1
        self._closed = asyncio.Event()
        self._reader = asyncio.create_task(
            self._read(self.ws, self.conn_no), name=f"reader-{self.label}"
        )
        return self

    async def _read(self, ws: ClientConnection, conn_no: int) -> None:
        tap = self.tap
        try:
            async for raw in ws:
                if tap is not None and tap(raw):
                    continue
                self._on_frame(raw, conn_no)
        except ConnectionClosed:
            pass
        finally:
            self.close_codes.append(ws.close_code)
            self._closed.set()
            for _pred, fut in self._waiters:
                if not fut.done():
                    fut.set_exception(
                        ConnectionError(
                            f"{self.label}: connection closed ({ws.close_code} {ws.close_reason!r})"
                        )
                    )

    def _on_frame(self, raw: str | bytes, conn_no: int) -> None:
        try:
            msg = decode_frame(raw, self.fmt)
        except (ProtocolProblem, ValueError) as exc:
            self.problems.append(f"{self.label}: undecodable frame {raw[:80]!r}: {exc}")
            return
        frame = Frame(len(self.frames), conn_no, raw, msg, time.monotonic())
        self.frames.append(frame)
        kind = msg.get("type")
        if kind == "event":
            table, seq = msg.get("table"), msg.get("seq")
            if not isinstance(table, str) or not isinstance(seq, int):
                self.problems.append(f"{self.label}: an event without table/seq: {msg}")
            else:
                last = self.last_seq.get(table)
                if last is not None and seq != last + 1:
                    what = "duplicate" if seq <= last else "gap"
                    self.problems.append(f"{self.label}: {what}: seq {seq} after {last} on {table}")
                self.last_seq[table] = max(seq, last or 0)
        elif kind in ("progress", "chat"):  # transient: after the event of its seq
            table, seq = msg.get("table"), msg.get("seq")
            last = self.last_seq.get(table) if isinstance(table, str) else None
            if not isinstance(seq, int) or (last is not None and seq != last):
                self.problems.append(f"{self.label}: a {kind} out of order (after {last}): {msg}")
        elif kind == "ok" and msg.get("resumed") is True and repr(msg.get("id")) in self._resumes:
            self.last_seq[str(msg["table"])] = self._resumes.pop(repr(msg.get("id")))
        elif kind == "ok" and isinstance(msg.get("snapshot"), dict):
            self.last_seq[str(msg["table"])] = int(msg["snapshot"]["seq"])
            self.snapshots[str(msg["table"])] = msg["snapshot"]
            self.snapshot_at[str(msg["table"])] = frame.index
        for pred, fut in list(self._waiters):
            if not fut.done() and pred(msg):
                fut.set_result(frame)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self, timeout: float | None = None) -> int | None:
        """Wait for the server to close this connection; return the close code."""
        async with asyncio.timeout(timeout or self.timeout):
            await self._closed.wait()
        assert self._reader is not None
        await self._reader
        return self.close_codes[-1]

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(scaled(5)):
                    await self._reader

    async def abort(self) -> None:
        """Drop the connection abruptly (no closing handshake), as a lost network does."""
        assert self.ws is not None and self.ws.transport is not None
        self.ws.transport.abort()
        assert self._reader is not None
        with contextlib.suppress(Exception):
            await self._reader

    async def reconnect(
        self, table: str | None = None, *, since: int | bool | None = True
    ) -> dict[str, Any] | None:
        """A new connection for the same player (same token): hello, then join ``table``
        with ``since`` = the last seq received (``since=False``: ask for a snapshot)."""
        if self.ws is not None and not self.closed:
            await self.abort()
        await self.open()
        assert self.token is not None, "only a token player can come back as the same player"
        await self.hello(token=self.token)
        if table is None:
            return None
        if since is True:
            since = self.last_seq.get(table)
        return await self.call(
            "join", table=table, **({} if since in (None, False) else {"since": since})
        )

    # -- sending ---------------------------------------------------------------------
    async def send_raw(self, frame: str | bytes) -> int:
        """Send one frame as it is; return the frame index replies will come after."""
        try:
            msg = decode_frame(frame, self.fmt)
        except Exception:
            msg = {}
        return await self._send(frame, msg)

    async def send(self, message: Mapping[str, Any]) -> int:
        """Send one message; return the frame index replies will come after."""
        return await self._send(encode_frame(message, self.fmt), message)

    async def _send(self, frame: str | bytes, msg: Mapping[str, Any]) -> int:
        assert self.ws is not None
        self._note_resume(msg)
        start = len(self.frames)
        await self.ws.send(frame)
        return start

    def _note_resume(self, msg: Mapping[str, Any]) -> None:
        """A join with ``since`` asks for the events after it again: remember it, so the
        replay that follows the ok is not taken for duplicates."""
        since, mid = msg.get("since"), msg.get("id")
        if msg.get("type") == "join" and isinstance(since, int) and not isinstance(since, bool):
            self._resumes[repr(mid)] = since

    async def send_command(
        self, kind: str, /, *, msg_id: Any = None, **fields: Any
    ) -> tuple[Any, int]:
        """Send a command with a fresh id (or ``msg_id``) without waiting for its reply:
        (its id, the frame index its reply will come after)."""
        mid = next(_ids) if msg_id is None else msg_id
        start = await self.send({"type": kind, "id": mid, **fields})
        return mid, start

    async def rpc(
        self, kind: str, /, *, timeout: float | None = None, msg_id: Any = None, **fields: Any
    ) -> dict[str, Any]:
        """Send a command with a fresh id (or ``msg_id``); return its reply (events keep
        being recorded meanwhile)."""
        mid, start = await self.send_command(kind, msg_id=msg_id, **fields)
        return await self.wait_frame(
            lambda m: m.get("type") in ("ok", "error") and m.get("id") == mid,
            start=start,
            timeout=timeout,
            what=f"reply to {kind}",
        )

    async def call(
        self, kind: str, /, *, msg_id: Any = None, timeout: float | None = None, **fields: Any
    ) -> dict[str, Any]:
        """:meth:`rpc`, asserting the reply is ok."""
        reply = await self.rpc(kind, msg_id=msg_id, timeout=timeout, **fields)
        assert reply["type"] == "ok", f"{self.label}: {kind} {fields} refused: {reply}"
        return reply

    async def call_patiently(
        self, kind: str, /, *, msg_id: Any = None, timeout: float, **fields: Any
    ) -> dict[str, Any]:
        """Send a command with one id (``msg_id`` or a fresh one) until it is answered ok,
        the same id each time so that it is applied once, while the answer is a transient
        refusal (a table moving between processes); the ok reply. Within ``timeout``
        seconds (scaled)."""
        mid = next(_ids) if msg_id is None else msg_id
        async with asyncio.timeout(scaled(timeout)):
            while True:
                reply = await self.rpc(kind, msg_id=mid, **fields)
                if reply["type"] == "ok":
                    return reply
                assert reply["code"] in TRANSIENT, f"{self.label}: {kind} {fields}: {reply}"
                await asyncio.sleep(0.1)

    async def refused(
        self, code: str, kind: str, /, *, msg_id: Any = None, **fields: Any
    ) -> dict[str, Any]:
        """:meth:`rpc`, asserting the reply is an error with ``code``."""
        reply = await self.rpc(kind, msg_id=msg_id, **fields)
        assert reply["type"] == "error", f"{self.label}: {kind} {fields} was accepted: {reply}"
        assert reply["code"] == code, f"{self.label}: {kind} {fields}: {reply}"
        assert isinstance(reply["message"], str) and reply["message"]
        return reply

    async def hello(
        self, *, token: str | None = None, name: str | None = None, guest: bool | None = None
    ) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if token is not None:
            fields["token"] = token
        else:
            fields["guest"] = True if guest is None else guest
            if name is not None:
                fields["name"] = name
        reply = await self.call("hello", **fields)
        self.player, self.name, self.token = reply["player"], reply["name"], token
        self.hello_reply = reply
        return reply

    async def join(self, table: str = "t1", **fields: Any) -> dict[str, Any]:
        return await self.call("join", table=table, **fields)

    async def balance(self) -> int:
        return int((await self.call("balance"))["balance"])

    # -- waiting ---------------------------------------------------------------------
    async def next_frame(
        self,
        pred: Callable[[dict[str, Any]], bool],
        *,
        start: int = 0,
        timeout: float | None = None,
        what: str = "frame",
    ) -> Frame:
        """The first frame from index ``start`` on whose message matches ``pred``,
        waiting for it; its :attr:`Frame.index` tells where to read on from."""
        for frame in self.frames[start:]:
            if pred(frame.msg):
                return frame
        if self.closed:
            raise AssertionError(f"{self.label}: waiting for {what} on a closed connection")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Frame] = loop.create_future()
        entry = (pred, fut)
        self._waiters.append(entry)
        # A timer that fails the future (lighter than asyncio.timeout on the round trips
        # the benchmarks time with this client).
        expiry = loop.call_later(timeout if timeout is not None else self.timeout, _expire, fut)
        try:
            return await fut
        except TimeoutError:
            recent = [f.msg for f in self.frames[-5:]]
            raise AssertionError(
                f"{self.label}: no {what} in time; last frames: {recent}"
            ) from None
        finally:
            expiry.cancel()
            self._waiters.remove(entry)

    async def wait_frame(
        self,
        pred: Callable[[dict[str, Any]], bool],
        *,
        start: int = 0,
        timeout: float | None = None,
        what: str = "frame",
    ) -> dict[str, Any]:
        """The first frame from index ``start`` on that matches ``pred``, waiting for it."""
        frame = await self.next_frame(pred, start=start, timeout=timeout, what=what)
        return frame.msg

    async def wait_event(
        self,
        kind: str,
        pred: Callable[[dict[str, Any]], bool] | None = None,
        *,
        table: str | None = None,
        after: int | None = None,
        start: int = 0,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """The first event ``kind`` (with seq > ``after``, matching ``pred``) received."""

        def match(m: dict[str, Any]) -> bool:
            return (
                m.get("type") == "event"
                and m.get("kind") == kind
                and (table is None or m.get("table") == table)
                and (after is None or m.get("seq", 0) > after)
                and (pred is None or pred(m))
            )

        return await self.wait_frame(match, start=start, timeout=timeout, what=f"event {kind}")

    async def wait_seq(self, table: str, seq: int, timeout: float | None = None) -> None:
        """Wait until every event of ``table`` up to ``seq`` has been received."""
        if self.last_seq.get(table, -1) >= seq:
            return
        await self.wait_frame(
            lambda m: (
                m.get("type") == "event" and m.get("table") == table and m.get("seq", 0) >= seq
            ),
            timeout=timeout,
            what=f"seq {seq} of {table}",
        )

    # -- reading what came -----------------------------------------------------------
    def events(
        self, table: str | None = None, kind: str | None = None, *, start: int = 0
    ) -> list[dict[str, Any]]:
        return [
            f.msg
            for f in self.frames[start:]
            if f.msg.get("type") == "event"
            and (table is None or f.msg.get("table") == table)
            and (kind is None or f.msg.get("kind") == kind)
        ]

    def replies(self, start: int = 0) -> list[dict[str, Any]]:
        return [f.msg for f in self.frames[start:] if f.msg.get("type") in ("ok", "error")]

    async def next_reply(self, start: int, timeout: float | None = None) -> dict[str, Any]:
        """The first reply (ok or error, whatever its id) from frame index ``start`` on."""
        return await self.wait_frame(
            lambda m: m.get("type") in ("ok", "error"), start=start, timeout=timeout, what="a reply"
        )

    async def one_reply_each(self, ids: list[Any], timeout: float) -> dict[Any, dict[str, Any]]:
        """The one reply of each of ``ids`` (commands sent without waiting), all within
        ``timeout`` seconds; a ping's reply after them shows that none came twice."""
        got: dict[Any, dict[str, Any]] = {}
        async with asyncio.timeout(timeout):
            for mid in ids:

                def answers(m: dict[str, Any], mid: Any = mid) -> bool:
                    return m.get("id") == mid and m.get("type") in ("ok", "error")

                got[mid] = await self.wait_frame(answers, what=f"the reply to {mid}")
            await self.call("ping")
        for mid in ids:
            assert [r for r in self.replies() if r.get("id") == mid] == [got[mid]], mid
        return got

    def chats(self) -> list[dict[str, Any]]:
        return [f.msg for f in self.frames if f.msg.get("type") == "chat"]

    def assert_clean(self) -> None:
        assert not self.problems, self.problems


def _expire(fut: asyncio.Future[Frame]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


async def open_player(
    url: str,
    player: str,
    fmt: str = "json",
    *,
    secret: str = SECRET,
    name: str | None = None,
    roles: tuple[str, ...] = (),
    label: str | None = None,
    **client: Any,
) -> Client:
    """A connected player who said hello with a token (HS256 under ``secret``), so the
    same player id comes back on every connection. ``client``: :class:`Client` options."""
    from server.process.auth import make_token

    made = Client(url, fmt, label=label or player, **client)
    await made.open()
    try:
        await made.hello(token=make_token(secret, player, name=name, roles=roles))
    except BaseException:
        await made.close()
        raise
    return made


async def open_guest(
    url: str, fmt: str = "json", *, name: str | None = None, label: str | None = None, **client: Any
) -> Client:
    """A connected guest who said hello. ``client``: :class:`Client` options."""
    made = Client(url, fmt, label=label or name or "guest", **client)
    await made.open()
    try:
        await made.hello(guest=True, name=name)
    except BaseException:
        await made.close()
        raise
    return made


async def http_get(
    port: int, path: str, headers: Mapping[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP/1.1 GET over asyncio streams: (status, headers, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        async with asyncio.timeout(scaled(5)):
            head = await reader.readuntil(b"\r\n\r\n")
            status_line, *header_lines = head.decode("latin-1").split("\r\n")
            status = int(status_line.split()[1])
            hdrs = {}
            for line in header_lines:
                if ":" in line:
                    k, v = line.split(":", 1)
                    hdrs[k.strip().lower()] = v.strip()
            length = int(hdrs.get("content-length", "0"))
            body = await reader.readexactly(length) if length else await reader.read()
        return status, hdrs, body
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
