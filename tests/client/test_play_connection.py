""":class:`client_cli.connection.Connection` against a small scripted server (in-process,
port 0): hello, replies matched by id, the snapshot in stream order, errors, the client's
own rate limit, and a dropped connection resumed with ``since`` = the last seq."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.asyncio.server import Server, ServerConnection, serve

from client_cli.connection import Connection, ConnectionLost, ConnState, ServerError, backoff_delay
from server.protocol.codec import MSGPACK, decode, encode


class FakeServer:
    """Answers the protocol the way chemmy-server does, for one table ``t``."""

    def __init__(self) -> None:
        self.seq = 3
        self.joins: list[dict[str, Any]] = []
        self.hellos: list[dict[str, Any]] = []
        self.conns: list[ServerConnection] = []
        self.server: Server | None = None
        self.received: list[str] = []

    @property
    def url(self) -> str:
        assert self.server is not None
        port = next(iter(self.server.sockets)).getsockname()[1]
        return f"ws://127.0.0.1:{port}"

    async def send(self, conn: ServerConnection, msg: dict[str, Any]) -> None:
        await conn.send(encode(msg, MSGPACK))

    async def event(self, conn: ServerConnection, kind: str = "done") -> None:
        self.seq += 1
        await self.send(
            conn,
            {
                "type": "event",
                "table": "t",
                "seq": self.seq,
                "kind": kind,
                "data": {"player": "p1"},
            },
        )

    async def handler(self, conn: ServerConnection) -> None:
        self.conns.append(conn)
        async for frame in conn:
            msg = decode(frame, MSGPACK)
            kind, mid = msg["type"], msg.get("id")
            self.received.append(kind)
            if kind == "hello":
                self.hellos.append(msg)
                if msg.get("token") == "bad":
                    await self.send(
                        conn, {"type": "error", "id": mid, "code": "bad_token", "message": "no"}
                    )
                    continue
                await self.send(
                    conn, {"type": "ok", "id": mid, "player": "p1", "name": "Ann", "balance": 500}
                )
            elif kind == "ping":
                await self.send(conn, {"type": "ok", "id": mid, "time": 1.0})
            elif kind == "join":
                self.joins.append(msg)
                since = msg.get("since")
                if since is not None and since <= self.seq:
                    await self.send(
                        conn,
                        {"type": "ok", "id": mid, "table": "t", "resumed": True, "seq": self.seq},
                    )
                else:
                    await self.send(
                        conn,
                        {
                            "type": "ok",
                            "id": mid,
                            "table": "t",
                            "resumed": False,
                            "seq": self.seq,
                            "snapshot": {"table": "t", "seq": self.seq},
                        },
                    )
            elif kind == "bet":
                await self.send(
                    conn,
                    {
                        "type": "error",
                        "id": mid,
                        "code": "below_min",
                        "message": "the minimum is 100",
                    },
                )
            elif kind == "flood":
                await self.send(conn, {"type": "ok", "id": mid})
            else:
                await self.send(conn, {"type": "ok", "id": mid, "seq": self.seq})


@pytest.fixture
async def fake() -> AsyncIterator[FakeServer]:
    f = FakeServer()
    f.server = await serve(f.handler, "127.0.0.1", 0, subprotocols=[MSGPACK])  # type: ignore[list-item]
    try:
        yield f
    finally:
        f.server.close()
        await f.server.wait_closed()


async def next_item(conn: Connection, *types: str) -> dict[str, Any]:
    async def get() -> dict[str, Any]:
        async for item in conn.stream():
            if item["type"] in types:
                return item
        raise AssertionError("the stream ended")

    return await asyncio.wait_for(get(), 5)


def test_backoff_grows_with_jitter() -> None:
    rng = random.Random(1)
    delays = [backoff_delay(n, initial=0.5, maximum=8, rng=rng) for n in range(8)]
    for n, d in enumerate(delays):
        base = min(8.0, 0.5 * 2**n)
        assert base / 2 <= d <= base
    assert max(delays) <= 8 and delays[4] > delays[0]
    assert len({round(backoff_delay(3, rng=rng), 6) for _ in range(10)}) > 1  # jittered


def test_credentials_are_required() -> None:
    with pytest.raises(ValueError):
        Connection("ws://127.0.0.1:1")


async def test_hello_join_and_replies(fake: FakeServer) -> None:
    states: list[ConnState] = []
    conn = Connection(fake.url, guest=True, name="Ann", on_state=states.append)
    hello = await conn.start()
    assert hello["player"] == "p1" and conn.player == "p1"
    assert fake.hellos[0] == {
        "type": "hello",
        "id": fake.hellos[0]["id"],
        "guest": True,
        "name": "Ann",
    }
    reply = await conn.join("t")
    assert reply["seq"] == 3 and conn.tables == {"t"} and conn.last_seq == {"t": 3}
    snap = await next_item(conn, "snapshot")
    assert snap == {
        "type": "snapshot",
        "table": "t",
        "seq": 3,
        "snapshot": {"table": "t", "seq": 3},
    }
    with pytest.raises(ServerError) as err:
        await conn.request("bet", table="t", area="player", amount=1)
    assert err.value.code == "below_min" and "minimum" in err.value.message
    ok = await conn.request("done", table="t", since=None)  # None fields are left out
    assert ok["type"] == "ok"
    await fake.event(fake.conns[-1])
    event = await next_item(conn, "event")
    assert event["seq"] == 4 and conn.last_seq["t"] == 4
    await conn.close()
    assert (
        states[0] is ConnState.CONNECTING
        and ConnState.CONNECTED in states
        and states[-1] is ConnState.CLOSED
    )
    with pytest.raises(ConnectionLost):
        await conn.request("done", table="t")


async def test_refused_credentials_are_not_retried(fake: FakeServer) -> None:
    conn = Connection(fake.url, token="bad")
    with pytest.raises(ServerError) as err:
        await conn.start(retry=True)
    assert err.value.code == "bad_token" and len(fake.hellos) == 1
    assert conn.state is ConnState.CLOSED


async def test_no_server() -> None:
    conn = Connection("ws://127.0.0.1:9", guest=True, open_timeout=2)
    with pytest.raises(ConnectionLost):
        await conn.start()


async def test_resume_after_a_drop(fake: FakeServer) -> None:
    conn = Connection(fake.url, token="good", backoff_initial=0.05, backoff_max=0.2)
    await conn.start()
    await conn.join("t")
    await next_item(conn, "snapshot")
    server_side = fake.conns[-1]
    await fake.event(server_side)
    await fake.event(server_side)
    assert (await next_item(conn, "event"))["seq"] == 4
    assert (await next_item(conn, "event"))["seq"] == 5

    conn.drop()
    status = await next_item(conn, "status")
    assert status["state"] == "reconnecting"
    status = await next_item(conn, "status")
    assert (
        status["state"] == "resumed" and status["tables"] == {"t": True} and status["same_player"]
    )
    assert fake.joins[-1]["since"] == 5, "rejoined from the last seq seen"
    assert fake.hellos[-1]["token"] == "good" and conn.reconnects == 1
    await fake.event(fake.conns[-1])
    assert (await next_item(conn, "event"))["seq"] == 6
    await conn.close()


async def test_a_pending_request_fails_when_the_connection_drops(fake: FakeServer) -> None:
    conn = Connection(fake.url, guest=True, reconnect=False)
    await conn.start()
    fake.received.clear()

    async def slow() -> None:
        await conn.request("never", timeout=5)

    # "never" is answered by the fake; drop before the reply can arrive
    task = asyncio.create_task(slow())
    conn.drop()
    with pytest.raises(ConnectionLost):
        await task
    await next_item(conn, "status")
    assert conn.state is ConnState.CLOSED


async def test_own_rate_limit(fake: FakeServer) -> None:
    conn = Connection(fake.url, guest=True, rate=50, burst=5)
    await conn.start()
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.gather(*(conn.request("flood") for _ in range(15)))
    # 5 at once, then 10 more at 50/s: at least ~0.2 s
    assert loop.time() - start >= 0.15
    await conn.close()
