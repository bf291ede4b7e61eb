"""Servers in this process, for the tests that need to look inside one.

:class:`Net` starts :class:`~server.gateway.server.ChemmyServer` objects on port 0 over a
temporary SQLite file (one table t1 with short timers, guests and tokens on), connects
:class:`~.client.Client` s to them, and closes everything at the end of the test
(``tests/server/conftest.py`` makes it the ``net`` fixture). A test that only needs a
server from the outside may use :class:`~.launch.ServerProcess` instead.

This module must never share a server between tests: each :class:`Net` is one test's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from server.gateway.server import ChemmyServer
from server.process.assemble import assemble
from server.process.auth import make_token
from server.process.config import ServerConfig
from server.store import store_for

from .client import Client
from .game import Game
from .tables import SECRET, table_def


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
        server = assemble(config, store_for(config.store_url))
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
        currency: str | None = None,
    ) -> Client:
        """A connected player with a token (the same player id on every reconnection),
        in ``currency`` (None: play money)."""
        client = await self.connect(server, fmt, label=player_id)
        token = make_token(SECRET, player_id, name=name, roles=roles, currency=currency)
        await client.hello(token=token)
        return client

    async def seated_pair(self, server: ChemmyServer) -> tuple[Client, Client, Game]:
        """Ann and Bob seated at t1, betting open (Bob's connection is the game's
        watcher)."""
        ann = await self.player(server, "ann", name="Ann")
        bob = await self.player(server, "bob", name="Bob")
        for client in (ann, bob):
            await client.join("t1")
            await client.call("sit", table="t1")
        game = Game("t1", {"ann": ann, "bob": bob}, bob)
        await game.to_betting()
        return ann, bob, game

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
        for server in reversed(self.servers):
            await self.stop(server)
