"""Fixtures for the real-socket tests: a live ChemmyServer in-process on port 0, over a
temporary SQLite file, with short table timers, and clients that are closed afterwards.

The server, the clients and the table driver are the test kit's (``tests/kit``): test
modules here ``from tests.kit import Client, Game, ...``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from server.net.server import ChemmyServer
from tests.kit.inproc import Net

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
