"""Fixtures for the real-socket tests: a live ChemmyServer in-process on port 0, over a
temporary SQLite file, with short table timers, and clients that are closed afterwards.

helpers.py is loaded under the unique module name ``server_helpers`` so the test
modules here can ``from server_helpers import ...`` whatever else is on sys.path.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

_spec = importlib.util.spec_from_file_location(
    "server_helpers", Path(__file__).with_name("helpers.py")
)
assert _spec is not None and _spec.loader is not None
if "server_helpers" not in sys.modules:
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["server_helpers"] = _mod
    _spec.loader.exec_module(_mod)

from server_helpers import SECRET, Client, table_def  # noqa: E402

from server.net.auth import make_token  # noqa: E402
from server.net.config import ServerConfig  # noqa: E402
from server.net.server import ChemmyServer  # noqa: E402
from server.store import store_for  # noqa: E402

MakeServer = Callable[..., Awaitable[ChemmyServer]]


class Net:
    """The live servers of one test and every client connected to them (closed at the end)."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.servers: list[ChemmyServer] = []
        self.stopped: set[int] = set()
        self.clients: list[Client] = []

    async def start(self, *, db: str | None = None, **overrides: Any) -> ChemmyServer:
        """A server on a free port. ``db`` defaults to this test's one SQLite file, so a
        second server started after :meth:`stop` finds what the first one stored."""
        settings: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": 0,
            "db": db or str(self.tmp_path / "chemmy.sqlite3"),
            "jwt_secret": SECRET,
            "tables": (table_def("t1"),),
            "log_level": "warning",
        }
        settings.update(overrides)
        config = ServerConfig(**settings)
        server = ChemmyServer(config, store_for(config.store_url))
        await server.start()
        self.servers.append(server)
        return server

    async def stop(self, server: ChemmyServer) -> None:
        if id(server) not in self.stopped:
            self.stopped.add(id(server))
            await server.stop()

    async def connect(
        self, server: ChemmyServer, fmt: str = "json", *, label: str | None = None, **kwargs: Any
    ) -> Client:
        """A connected client (no hello yet)."""
        client = Client(
            f"ws://127.0.0.1:{server.port}/", fmt, label=label or f"{fmt}-{len(self.clients)}"
        )
        self.clients.append(client)
        await client.open(**kwargs)
        return client

    async def guest(
        self, server: ChemmyServer, fmt: str = "json", name: str | None = None
    ) -> Client:
        """A connected guest who said hello."""
        client = await self.connect(server, fmt, label=name)
        await client.hello(guest=True, name=name)
        return client

    async def player(
        self,
        server: ChemmyServer,
        player_id: str,
        fmt: str = "json",
        *,
        roles: tuple[str, ...] = (),
        name: str | None = None,
    ) -> Client:
        """A connected player with a token (the same player id on every reconnection)."""
        client = await self.connect(server, fmt, label=player_id)
        await client.hello(token=make_token(SECRET, player_id, name=name, roles=roles))
        return client

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
        for server in reversed(self.servers):
            await self.stop(server)


@pytest.fixture
async def net(tmp_path: Path) -> AsyncIterator[Net]:
    """Start servers and connect clients; everything is closed when the test ends."""
    n = Net(tmp_path)
    try:
        yield n
    finally:
        await n.close()


@pytest.fixture
async def server(net: Net) -> ChemmyServer:
    """A live server with one table t1 (tier 1-100, short timers), guests and tokens on."""
    return await net.start()


@pytest.fixture
def make_server(net: Net) -> MakeServer:
    """``await make_server(**ServerConfig overrides)``: another live server."""
    return net.start
