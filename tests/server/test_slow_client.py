"""A client too slow to keep up is cut off and can resume; it never slows the table
(issue 4). Frames are written without waiting (``websockets.broadcast``); the server's
watchdog drops a connection whose unsent frames pile up past a bound."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from tests.kit import scaled


def small_socket(port: int) -> socket.socket:
    """A client socket with a tiny receive buffer, so a reader that stops reading backs
    the server up at once (loopback buffers would otherwise absorb megabytes)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    return sock


async def test_a_client_that_stops_reading_is_cut_off_and_resumes(net: Any) -> None:
    server = await net.start(rate_limit=10_000.0, rate_burst=10_000)
    server.slow_client_buffer = 32 * 1024
    server.watchdog_interval = 0.05
    slow = await net.connect(server, "json", label="slow", sock=small_socket(server.port))
    await slow.hello(token=None, guest=True, name="Slow")
    joined = await slow.join("t1")
    for session in server.sessions.values():  # the server's side of it: a small send buffer too
        if session.identity is not None and session.identity.player_id == slow.player:
            sock = session.conn.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    watcher = await net.guest(server, "msgpack", name="Rail")
    await watcher.join("t1")

    assert slow.ws is not None and slow.ws.transport is not None
    slow.ws.transport.pause_reading()  # the slow client stops reading
    for _ in range(80):  # each reply carries the roads: the replies pile up unread
        await slow.send({"type": "roads", "id": "r", "table": "t1"})

    async def cut_off() -> None:
        while any(
            s.identity and s.identity.player_id == slow.player for s in server.sessions.values()
        ):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(cut_off(), scaled(5))
    assert server.metrics.slow_clients._value.get() == 1
    slow.ws.transport.abort()  # its side of the dropped connection (it was not reading)

    # the table and the others never waited for it
    sat = await watcher.call("sit", table="t1")
    assert sat["seq"] > joined["seq"]
    assert (await watcher.call("ping"))["type"] == "ok"

    # the slow client comes back and resumes from its last seq
    back = await net.connect(server, "json", label="back")
    hello = await back.call("hello", guest=True, resume=slow.hello_reply["resume"])
    assert hello["player"] == slow.player  # the same guest
    again = await back.call("join", table="t1", since=joined["seq"])
    assert again["resumed"] is True and again["seq"] == sat["seq"]
