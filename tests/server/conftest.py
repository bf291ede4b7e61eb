"""Fixtures for the real-socket tests: a live ChemmyServer in-process on port 0, over a
temporary SQLite file, with short table timers, and clients that are closed afterwards.

The server, the clients and the table driver are the test kit's (``tests/kit``): test
modules here ``from tests.kit import Client, Game, ...``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from server.gateway.server import ChemmyServer
from server.store.base import (
    Store,
)
from server.store.redis import RedisStore
from server.store.sqlite import SQLiteStore
from tests.kit.inproc import Net

#: The stores every store contract test runs on (the Redis one a real redis-server).
STORE_KINDS = ("redis", "sqlite")


def make_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path, **options: Any) -> Store:
    """A store of ``kind`` (not opened): a SQLite file in ``tmp_path``, or on this
    session's Redis (``redis_url``)."""
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "chemmy.sqlite3", **options)
    return RedisStore(request.getfixturevalue("redis_url"), **options)


class Clock:
    """A store's clock that a test moves by hand (``make_store(..., clock=Clock())``)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=STORE_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    """Each kind of store in turn (a module may define its own)."""
    return str(request.param)


@pytest.fixture
async def store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """An open store of ``kind``, closed after the test."""
    made = make_store(kind, request, tmp_path)
    await made.open()
    yield made
    await made.close()


MakeServer = Callable[..., Awaitable[ChemmyServer]]


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
