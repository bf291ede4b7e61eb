"""The hub's ``write_all``: one frame made once and written to many connections, as
``websockets.broadcast`` would write it (real servers and clients on port 0)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve

from server.gateway.hub import send_now, write_all


@asynccontextmanager
async def pair(
    count: int, compression: str | None = None
) -> AsyncIterator[tuple[list[ServerConnection], list[ClientConnection]]]:
    """``count`` clients connected to a bare server; its side of each connection."""
    ours: list[ServerConnection] = []
    arrived = asyncio.Event()

    async def handler(ws: ServerConnection) -> None:
        ours.append(ws)
        if len(ours) == count:
            arrived.set()
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0, compression=compression) as server:
        port = server.sockets[0].getsockname()[1]
        clients = [
            await connect(f"ws://127.0.0.1:{port}", compression=compression) for _ in range(count)
        ]
        await asyncio.wait_for(arrived.wait(), 5)
        try:
            yield ours, clients
        finally:
            for client in clients:
                await client.close()


async def received(client: ClientConnection, count: int) -> list[str | bytes]:
    return [await asyncio.wait_for(client.recv(), 5) for _ in range(count)]


async def test_every_connection_gets_the_message_as_text_or_binary() -> None:
    async with pair(3) as (ours, clients):
        write_all(ours, '{"a": "é"}'.encode(), text=True)
        write_all(ours, b"\x00\xff", text=False)
        big = b"x" * 70_000  # a 64-bit length in the frame's header
        write_all(ours, big, text=False)
        for client in clients:
            assert await received(client, 3) == ['{"a": "é"}', b"\x00\xff", big]


async def test_what_the_protocol_still_holds_goes_first() -> None:
    async with pair(2) as (ours, clients):
        for conn in ours:
            conn.protocol.send_text(b"first")  # queued in the protocol, not yet written
        write_all(ours, b"second", text=True)
        send_now(ours[0], "third")
        assert await received(clients[0], 3) == ["first", "second", "third"]
        assert await received(clients[1], 2) == ["first", "second"]


async def test_a_compressed_connection_gets_it_through_broadcast() -> None:
    async with pair(2, compression="deflate") as (ours, clients):
        assert all(conn.protocol.extensions for conn in ours)
        write_all(ours, b"squeezed " * 100, text=True)
        for client in clients:
            assert await received(client, 1) == ["squeezed " * 100]


async def test_a_closing_connection_is_skipped_and_the_others_still_get_it() -> None:
    async with pair(3) as (ours, clients):
        await clients[1].close()
        await asyncio.wait_for(ours[1].wait_closed(), 5)
        ours[2].transport.abort()  # a dead transport: its write fails or is dropped
        write_all(ours, b"still here", text=True)
        assert await received(clients[0], 1) == ["still here"]
