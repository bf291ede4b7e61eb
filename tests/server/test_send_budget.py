"""What waits to be sent is bounded for the whole process and per address (issue 18.7),
not only per connection: connections that never read, from many addresses, each below
the per-connection cut, must not together push the process past its container's memory.
Over a bound the connections with the most unsent are cut first, until the rest fit;
a client that reads is never cut. Real sockets with tiny buffers, a real server."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from typing import Any

from tests.kit import Client, scaled

KIB = 1024


def slow_socket(port: int, address: str) -> socket.socket:
    """A client socket from loopback ``address`` with a tiny receive buffer, so that a
    reader that stops reading backs the server up at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", port))
    return sock


async def stop_reading(net: Any, server: Any, address: str, queries: int) -> Client:
    """A guest from ``address`` that joins t1, stops reading and asks for the roads
    ``queries`` times: the replies pile up unsent at the server."""
    slow = await net.connect(server, "json", label=address, sock=slow_socket(server.port, address))
    await slow.hello(guest=True, name=f"Slow {address}")
    await slow.join("t1")
    for session in server.sessions.values():  # the server's side: a small send buffer too
        if session.identity is not None and session.identity.player_id == slow.player:
            sock = session.conn.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    assert slow.ws is not None and slow.ws.transport is not None
    slow.ws.transport.pause_reading()
    for _ in range(queries):
        await slow.send({"type": "roads", "id": "r", "table": "t1"})
    return slow


def unsent(server: Any) -> dict[str, int]:
    """Bytes waiting at the server, per connected player."""
    out = {}
    for s in server.sessions.values():
        if s.identity is not None and s.conn.transport is not None:
            out[s.identity.player_id] = s.conn.transport.get_write_buffer_size()
    return out


async def settled(server: Any) -> dict[str, int]:
    """Wait until the unsent bytes stop changing (every reply queued, the cuts made)."""
    last: dict[str, int] = {}
    async with asyncio.timeout(scaled(10)):
        while True:
            await asyncio.sleep(scaled(0.2))
            now = unsent(server)
            if now == last:
                return now
            last = now


async def test_the_process_total_is_bounded_cutting_the_largest_first(net: Any) -> None:
    budget = 256 * KIB
    server = await net.start(
        rate_limit=10_000.0,
        rate_burst=10_000,
        max_connections_per_address=100,
        send_buffer_total=64 * 2**20,
        send_buffer_per_address=64 * 2**20,
    )
    server.slow_client_buffer = 64 * 2**20  # only the total bound acts here
    server.watchdog_interval = 0.05
    reader = await net.guest(server, "json", name="Reader")
    await reader.join("t1")
    slow = [
        await stop_reading(net, server, f"127.0.0.{10 + n}", queries=40 + 20 * n) for n in range(6)
    ]
    await settled(server)
    # Every reply queued, then the bound: (set while they were still queued, it would cut
    # the largest of those queued so far, which is right, but not what is checked here).
    server.config = dataclasses.replace(server.config, send_buffer_total=budget)
    left = await settled(server)
    assert sum(left.values()) <= budget, left
    cut = [c.player for c in slow if c.player not in left]
    kept = [c.player for c in slow if c.player in left]
    assert cut and kept, (cut, left)
    # The largest (the ones that asked most) went first.
    assert cut == [c.player for c in slow[-len(cut) :]], (cut, kept)
    assert reader.player in left and (await reader.call("ping"))["type"] == "ok"
    for client in slow:
        await client.abort()


async def test_one_address_is_bounded_on_its_own(net: Any) -> None:
    share = 128 * KIB
    server = await net.start(
        rate_limit=10_000.0,
        rate_burst=10_000,
        max_connections_per_address=100,
        send_buffer_total=64 * 2**20,
        send_buffer_per_address=share,
    )
    server.slow_client_buffer = 64 * 2**20
    server.watchdog_interval = 0.05
    flood = [await stop_reading(net, server, "127.0.0.50", queries=60) for _ in range(5)]
    other = await stop_reading(net, server, "127.0.0.51", queries=60)
    left = await settled(server)
    assert sum(left.get(c.player, 0) for c in flood) <= share, left
    assert any(c.player not in left for c in flood)
    assert other.player in left, "another address's client is not cut for this one's"
    for client in [*flood, other]:
        await client.abort()
