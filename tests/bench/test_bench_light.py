"""bench/_light.py, the benchmarks' light WebSocket client: its frames cut from bytes as
they come (any split, the three length forms, fragments), its own frames masked as RFC
6455 says, pings answered, a refused subprotocol refused; and against a real server on
port 0, a guest that says hello, joins and reads the table's events as the test kit's
client does; over a real loopback socket, each message stamped with the time its bytes
reached the kernel, and a write larger than the kernel takes at once sent whole."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench import _light
from tests.kit.inproc import Net


def server_frame(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    """A server's frame (unmasked)."""
    b0 = (0x80 if fin else 0) | opcode
    n = len(payload)
    if n < 126:
        return struct.pack("!BB", b0, n) + payload
    if n < 1 << 16:
        return struct.pack("!BBH", b0, 126, n) + payload
    return struct.pack("!BBQ", b0, 127, n) + payload


def unmask(frame: bytes) -> tuple[int, bytes]:
    """A client frame's opcode and payload (its mask bit must be set)."""
    assert frame[0] & 0x80, "FIN"
    assert frame[1] & 0x80, "a client's frame is masked"
    n, at = frame[1] & 0x7F, 2
    if n == 126:
        n, at = struct.unpack("!H", frame[2:4])[0], 4
    elif n == 127:
        n, at = struct.unpack("!Q", frame[2:10])[0], 10
    key, body = frame[at : at + 4], frame[at + 4 :]
    assert len(body) == n
    return frame[0] & 0x0F, bytes(b ^ key[i % 4] for i, b in enumerate(body))


class Wire(asyncio.Transport):
    """What the connection wrote."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.aborted = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.aborted = True


HANDSHAKE = (
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Accept: x\r\nSec-WebSocket-Protocol: chemmy.v1.json\r\n\r\n"
)


@pytest.mark.parametrize("key", [b"\x00\x00\x00\x00", b"\x12\x34\xab\xcd"])
@pytest.mark.parametrize("size", [0, 5, 125, 126, 65535, 65536])
def test_a_clients_frame_is_masked_and_says_its_length(key: bytes, size: int) -> None:
    payload = bytes(i % 251 for i in range(size))
    frame = _light.mask_frame(_light.TEXT, payload, key)
    assert frame[2 + (2 if 126 <= size < 65536 else 8 if size >= 65536 else 0) :][:4] == key
    assert unmask(frame) == (_light.TEXT, payload)


async def test_frames_are_cut_from_the_bytes_however_they_are_split() -> None:
    got: list[bytes] = []
    conn = _light.LightConnection(got.append)
    wire = Wire()
    conn.connection_made(wire)
    big = b'{"type":"event","seq":1,"pad":"' + b"x" * 70_000 + b'"}'
    mid = b'{"type":"event","seq":2,"pad":"' + b"y" * 300 + b'"}'
    stream = (
        HANDSHAKE
        + server_frame(_light.TEXT, b'{"type":"event","seq":0}')
        + server_frame(_light.TEXT, big)
        + server_frame(_light.PING, b"beat")
        + server_frame(_light.TEXT, mid[:100], fin=False)
        + server_frame(_light.CONTINUATION, mid[100:200], fin=False)
        + server_frame(_light.CONTINUATION, mid[200:])
    )
    for at in range(0, len(stream), 7):  # seven bytes at a time
        conn.data_received(stream[at : at + 7])
    assert conn.shaken.done() and conn.shaken.exception() is None
    assert got == [b'{"type":"event","seq":0}', big, mid]
    # the request, then the pong: the ping's payload, masked
    assert wire.written[0] == conn.request
    assert [unmask(w) for w in wire.written[1:]] == [(_light.PONG, b"beat")]
    # a close is answered and ends the connection
    conn.data_received(server_frame(_light.CLOSE, struct.pack("!H", 1001)))
    assert unmask(wire.written[-1]) == (_light.CLOSE, struct.pack("!H", 1001))
    assert conn.closed and wire.aborted
    assert (conn.close_code, conn.close_reason) == (1001, "")


async def test_a_connection_says_how_it_ended() -> None:
    """Issue 36: a missing delivery at a closed connection is told by how it closed:
    the server's close code and reason, or cut (no close frame)."""
    closed = _light.LightConnection()
    closed.connection_made(Wire())
    closed.data_received(HANDSHAKE)
    closed.data_received(server_frame(_light.CLOSE, struct.pack("!H", 1008) + b"too slow"))
    assert (closed.closed, closed.close_code, closed.close_reason) == (True, 1008, "too slow")
    cut = _light.LightConnection()
    cut.connection_made(Wire())
    cut.data_received(HANDSHAKE)
    cut.connection_lost(ConnectionResetError())
    assert (cut.closed, cut.close_code) == (True, None)


async def test_a_reply_goes_to_its_rpc_and_the_rest_to_the_reader() -> None:
    got: list[bytes] = []
    conn = _light.LightConnection(got.append)
    conn.connection_made(Wire())
    conn.data_received(HANDSHAKE)
    asking = asyncio.create_task(conn.rpc({"type": "hello", "id": "w1", "guest": True}))
    await asyncio.sleep(0)
    other = b'{"type":"ok","id":"b7","seq":3}'
    conn.data_received(server_frame(_light.TEXT, other))
    conn.data_received(server_frame(_light.TEXT, b'{"type":"ok","id":"w1","player":"g"}'))
    assert (await asking)["player"] == "g"
    assert got == [other]  # not the rpc's: the reader's


async def test_a_server_without_the_subprotocol_is_refused() -> None:
    conn = _light.LightConnection()
    wire = Wire()
    conn.connection_made(wire)
    conn.data_received(HANDSHAKE.replace(b"chemmy.v1.json", b"chemmy.v1.msgpack"))
    with pytest.raises(ConnectionError, match="subprotocol"):
        await conn.shaken
    assert wire.aborted


async def test_a_light_guest_joins_a_real_server_and_reads_its_events(tmp_path: Path) -> None:
    net = Net(tmp_path)
    try:
        server = await net.start()
        url = f"ws://127.0.0.1:{server.port}/"
        frames: list[bytes] = []
        light = await _light.connect(url, frames.append, timeout=10)
        hello = await light.rpc({"type": "hello", "id": "w1", "guest": True}, 10)
        assert hello["type"] == "ok" and hello["guest"] is True
        joined = await light.rpc({"type": "join", "id": "w2", "table": "t1"}, 10)
        assert joined["type"] == "ok" and "snapshot" in joined
        # a full client sits down: both see the same events, the light one as bytes
        ann = await net.player(server, "ann", name="Ann")
        await ann.join("t1")
        at = len(ann.frames)
        reply = await ann.call("sit", table="t1")
        await ann.next_frame(lambda m: m.get("type") == "event", start=at)
        want = [f.msg for f in ann.frames[at:] if f.msg.get("type") == "event"]
        for _ in range(100):
            seen: list[Any] = [json.loads(f) for f in frames if b'"type":"event"' in f[:40]]
            if len(seen) >= len(want):
                break
            await asyncio.sleep(0.02)
        assert [(m["seq"], m["kind"]) for m in seen[: len(want)]] == [
            (m["seq"], m["kind"]) for m in want
        ]
        assert reply["seq"] in [m["seq"] for m in want]
        await light.close()
    finally:
        await net.close()


async def test_each_message_carries_when_the_kernel_received_it() -> None:
    """Issue 37 §3: a light client times what reached its machine apart from its own lag.
    A server writes a frame while the client's loop is busy: the message's stamp lies
    between the server's write and the handler's own time, well before the handler
    (the stamp is the kernel's, not the read's). Then a message far larger than the
    kernel takes at once: what is left is sent when the socket is writable, whole."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    go = threading.Event()
    seen: dict[str, Any] = {}
    big = bytes(range(251)) * ((8 << 20) // 251)
    want = len(_light.mask_frame(_light.TEXT, big))

    def serve() -> None:
        peer, _ = listener.accept()
        with peer:
            request = b""
            while b"\r\n\r\n" not in request:
                request += peer.recv(4096)
            peer.sendall(HANDSHAKE)
            go.wait(10)
            seen["before"] = time.time()
            peer.sendall(server_frame(_light.TEXT, b'{"type":"event","seq":1}'))
            seen["after"] = time.time()
            time.sleep(0.2)  # the client's big frame fills the socket's buffers meanwhile
            got = bytearray()
            while len(got) < want:
                chunk = peer.recv(1 << 20)
                if not chunk:
                    break
                got += chunk
            seen["got"] = bytes(got)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        got: list[tuple[bytes, float, float]] = []
        conn = _light.LightConnection()
        conn.on_message = lambda payload: got.append((payload, conn.received_at, time.time()))
        await _light.connect(f"ws://127.0.0.1:{port}/", conn=conn, timeout=10)
        go.set()
        time.sleep(0.3)  # the loop busy: the frame waits in the kernel, stamped
        for _ in range(200):
            if got:
                break
            await asyncio.sleep(0.01)
        [(payload, stamp, handled)] = got
        assert payload == b'{"type":"event","seq":1}'
        assert seen["before"] <= stamp <= seen["after"] <= handled
        assert handled - stamp >= 0.2
        conn.send_text(big)
        wire = conn.transport
        assert isinstance(wire, _light.StampedSocket) and wire.out  # left for later
        await asyncio.to_thread(thread.join, 10)
        frame = seen["got"]
        assert len(frame) == want
        assert frame == _light.mask_frame(_light.TEXT, big, frame[10:14])
        assert not wire.out
        await conn.close()
        await asyncio.sleep(0.01)
        assert conn.closed and wire.sock.fileno() == -1
    finally:
        listener.close()
