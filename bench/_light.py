"""A light WebSocket client for the benchmarks: a raw asyncio connection that speaks just
enough of RFC 6455 to hold a Chemmy connection for a measuring client that must keep up.

bench/evening.py holds a thousand bettors and a thousand watchers in a few Python
processes; each ``tests.kit.client.Client`` over the ``websockets`` library costs its
process a reader task, a frame object and a UTF-8 decode for every event of the table,
and its processes' event loops fell hundreds of ms behind (docs/benchmarks.md, "A table
of a thousand bettors without a seat"): what the bench timed was its own lag. Here a
connection is an ``asyncio.Protocol``: the handshake asks for the ``chemmy.v1.json``
subprotocol and no extension (so no compression), the server's frames (unmasked) are cut
from the bytes received and handed over as ``bytes`` undecoded, for the caller to scan
for the few markers it needs (``"kind":"betting_opened"``, its own reply's ``"id":…``,
``seq``); its own frames are masked, as a client's must be. Pings are answered (the
server pings every 20 s), a close is answered and ends the connection.

Each message is also stamped with the time the kernel received it
(:attr:`LightConnection.received_at`, read by ``on_message``): the socket is read with
``recvmsg`` and ``SO_TIMESTAMPNS`` (Linux: the receive time, ``CLOCK_REALTIME`` as
``time.time()``, of the last segment in that read), so a benchmark can tell what reached
the client's machine when apart from its own process's lag. The stamp is that of the read
that completed the message: never earlier than its bytes arrived (an upper bound). asyncio's
transports pass no ancillary data, so :class:`StampedSocket` reads and writes the socket
itself.

It must never be used where the protocol is under test (tests/kit/client.py is the
protocol's client: it checks every frame); it knows the server only by its URL.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from websockets.exceptions import ConnectionClosed

SUBPROTOCOL = "chemmy.v1.json"
#: Linux's socket option and control message for a receive time as a ``timespec``
#: (``socket`` names them only on some Pythons; 35 on Linux, socket(7)).
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
TIMESPEC = struct.Struct("@ll")  # struct timespec: two C longs
READ_SIZE = 256 * 1024  # what asyncio's socket transport reads at most at once
TEXT, BINARY, CLOSE, PING, PONG, CONTINUATION = 1, 2, 8, 9, 10, 0

#: A frame's payload handed to the reader: the whole message, undecoded.
OnMessage = Callable[[bytes], None]


def mask_frame(opcode: int, payload: bytes, key: bytes | None = None) -> bytes:
    """One client frame (FIN set) of ``payload``, masked with ``key`` (4 random bytes
    unless given), RFC 6455 §5.2-§5.3."""
    key = os.urandom(4) if key is None else key
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    if not n:
        return head + key
    repeated = (key * (n // 4 + 1))[:n]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(n, "big")
    return head + key + masked


class LightConnection(asyncio.Protocol):
    """One client connection: the handshake, then every server message's payload to
    ``on_message``; replies to ``rpc`` are taken before it."""

    def __init__(self, on_message: OnMessage | None = None) -> None:
        self.on_message = on_message
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.fragments: list[bytes] = []
        self.shaken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.key = base64.b64encode(os.urandom(16))
        self.request = b""
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.closed = False
        #: How it ended, as this side saw it: the server's close frame's code and reason
        #: (``close_code`` None: no close frame came, the connection was cut).
        self.close_code: int | None = None
        self.close_reason = ""
        #: When the kernel received the bytes that completed the message being handed to
        #: ``on_message`` or to its ``rpc`` (``time.time()``'s clock; the time of the read
        #: when no kernel stamp came with the bytes).
        self.received_at = 0.0

    # -- asyncio.Protocol ------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes, stamp: float | None = None) -> None:
        """``data`` read from the socket; ``stamp``: when the kernel received it
        (:class:`StampedSocket`), else now."""
        self.received_at = time.time() if stamp is None else stamp
        self.buffer += data
        if not self.shaken.done():
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).decode("latin-1")
            del self.buffer[: end + 4]
            lines = head.split("\r\n")
            fields = {
                k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])
            }
            if not lines[0].startswith("HTTP/1.1 101"):
                self.shaken.set_exception(ConnectionError(f"handshake refused: {lines[0]}"))
                self.abort()
                return
            if fields.get("sec-websocket-protocol") != SUBPROTOCOL:
                self.shaken.set_exception(ConnectionError(f"subprotocol: {head!r}"[:200]))
                self.abort()
                return
            if fields.get("sec-websocket-extensions"):  # never asked for
                self.shaken.set_exception(ConnectionError("an extension was forced on us"))
                self.abort()
                return
            self.shaken.set_result(None)
        self._frames()

    def _frames(self) -> None:
        buf = self.buffer
        at, size = 0, len(buf)
        while size - at >= 2:
            b0, b1 = buf[at], buf[at + 1]
            n, h = b1 & 0x7F, 2
            if n == 126:
                if size - at < 4:
                    break
                n, h = (buf[at + 2] << 8) | buf[at + 3], 4
            elif n == 127:
                if size - at < 10:
                    break
                n, h = int.from_bytes(buf[at + 2 : at + 10], "big"), 10
            if size - at < h + n:
                break
            payload = bytes(buf[at + h : at + h + n])
            at += h + n
            opcode = b0 & 0x0F
            if opcode in (TEXT, BINARY, CONTINUATION):
                if not b0 & 0x80:  # a fragment: kept until the last
                    self.fragments.append(payload)
                    continue
                if self.fragments:
                    payload = b"".join([*self.fragments, payload])
                    self.fragments.clear()
                self._message(payload)
            elif opcode == PING:
                self._write(mask_frame(PONG, payload))
            elif opcode == CLOSE:
                if len(payload) >= 2:
                    self.close_code = int.from_bytes(payload[:2], "big")
                    self.close_reason = payload[2:].decode("utf-8", "replace")
                self._write(mask_frame(CLOSE, payload[:2]))
                self.abort()
                break
        if at:
            del buf[:at]

    def _message(self, payload: bytes) -> None:
        if self.waiting and (b'"type":"ok"' in payload[:20] or b'"type":"error"' in payload[:20]):
            msg = json.loads(payload)
            fut = self.waiting.pop(str(msg.get("id")), None)
            if fut is not None:
                if not fut.done():
                    fut.set_result(msg)
                return
        if self.on_message is not None:
            self.on_message(payload)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.shaken.done():
            self.shaken.set_exception(exc or ConnectionError("closed during the handshake"))
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(ConnectionClosed(None, None))
        self.waiting.clear()

    # -- use ---------------------------------------------------------------------------
    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.closed:
            self.transport.write(data)

    def send_text(self, text: str | bytes) -> None:
        """One text message; ``ConnectionClosed`` once the connection is gone."""
        if self.closed:
            raise ConnectionClosed(None, None)
        self._write(mask_frame(TEXT, text.encode() if isinstance(text, str) else text))

    async def send(self, message: Mapping[str, Any]) -> None:
        """One command (as ``tests.kit.client.Client.send``: awaited, written at once)."""
        self.send_text(json.dumps(message, separators=(",", ":")))

    async def rpc(self, message: Mapping[str, Any], timeout: float = 60.0) -> dict[str, Any]:
        """Send ``message`` (with its ``id``) and return its reply."""
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[str(message["id"])] = fut
        await self.send(message)
        return await asyncio.wait_for(fut, timeout)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        self.closed = True

    async def close(self) -> None:
        if self.transport is not None and not self.closed:
            self._write(mask_frame(CLOSE, struct.pack("!H", 1000)))
            self.transport.close()
        self.closed = True


async def connect(
    url: str,
    on_message: OnMessage | None = None,
    *,
    conn: LightConnection | None = None,
    local_addr: tuple[str, int] | None = None,
    timeout: float = 60.0,
) -> LightConnection:
    """A light connection to ``url`` (``ws://host:port[/path]``), handshake done
    (``conn``: one made beforehand, its ``on_message`` set)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    path = parts.path or "/"
    conn = LightConnection(on_message) if conn is None else conn
    conn.request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {conn.key.decode()}\r\n"
        f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {SUBPROTOCOL}\r\n\r\n"
    ).encode()
    loop = asyncio.get_running_loop()

    async def opened() -> None:
        family, kind, proto, _name, address = (
            await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        )[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as asyncio's
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            if local_addr is not None:
                sock.bind(local_addr)
            await loop.sock_connect(sock, address)
        except BaseException:
            sock.close()
            raise
        StampedSocket(loop, sock, conn)
        await conn.shaken

    try:
        await asyncio.wait_for(opened(), timeout)
    except BaseException:
        conn.abort()
        raise
    return conn


class StampedSocket(asyncio.Transport):
    """A connected non-blocking TCP socket driving a :class:`LightConnection`: each read
    is a ``recvmsg`` whose ``SO_TIMESTAMPNS`` stamp goes with its bytes
    (``data_received(data, stamp)``); writes go out at once, what the kernel does not
    take is kept and sent when the socket is writable (as asyncio's transport does).
    Only for a socket with ``SO_TIMESTAMPNS`` set, before it connected."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, conn: LightConnection
    ) -> None:
        super().__init__()
        self.loop, self.sock, self.conn = loop, sock, conn
        self.fd = sock.fileno()
        self.out = bytearray()
        self.closing = self.gone = False
        conn.connection_made(self)
        if not self.closing:
            loop.add_reader(self.fd, self._readable)

    def _readable(self) -> None:
        try:
            data, ancillary, _flags, _address = self.sock.recvmsg(
                READ_SIZE, socket.CMSG_SPACE(TIMESPEC.size)
            )
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._end(exc)
            return
        if not data:  # the server closed its side
            self._end(None)
            return
        stamp = None
        for level, kind, raw in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                seconds, nanoseconds = TIMESPEC.unpack(raw[: TIMESPEC.size])
                stamp = seconds + nanoseconds * 1e-9
        self.conn.data_received(data, stamp)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self.closing:
            return
        if not self.out:
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self._end(exc)
                return
            data = memoryview(data)[sent:]
            if not data:
                return
            self.loop.add_writer(self.fd, self._writable)
        self.out += data

    def _writable(self) -> None:
        try:
            sent = self.sock.send(self.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._end(exc)
            return
        del self.out[:sent]
        if not self.out:
            self.loop.remove_writer(self.fd)
            if self.closing:
                self._end(None)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        """What is written still goes out, then the socket closes."""
        if self.closing:
            return
        self.closing = True
        self.loop.remove_reader(self.fd)
        if not self.out:
            self._end(None)

    def abort(self) -> None:
        self._end(None)

    def _end(self, exc: Exception | None) -> None:
        """The socket closed at once; the connection told soon after (as asyncio's
        transports do: never from inside its own ``data_received``)."""
        if self.gone:
            return
        self.closing = self.gone = True
        self.loop.remove_reader(self.fd)
        self.loop.remove_writer(self.fd)
        self.sock.close()
        self.loop.call_soon(self.conn.connection_lost, exc)


__all__ = ["LightConnection", "StampedSocket", "connect", "mask_frame"]
