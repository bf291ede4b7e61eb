"""Fixtures every test folder may use: a real Redis (tests/kit/redis.py).

- ``redis_server``: one ``redis-server`` for the whole session (AOF on, a temp dir, a
  free port), stopped at the end;
- ``redis_url``: that server emptied for this test (``FLUSHALL``), as a URL; started
  again first if an earlier test stopped it;
- ``make_redis``: ``make_redis()`` starts a private server for a test that stops, kills
  or restarts Redis mid-test (so the shared one is never taken away); stopped at the end.

They never touch a Redis they did not start.

And the per-test timeout (pytest-timeout; ``timeout`` in pyproject.toml, 300 s) is
scaled by ``CHEMMY_TESTS_TIMEOUT_FACTOR`` like every other wait, unless given for the
run (``--timeout`` or ``PYTEST_TIMEOUT``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.kit.redis import RedisServer
from tests.kit.timing import TIMEOUT_FACTOR


@pytest.hookimpl(trylast=True)  # after pytest-timeout has read its settings
def pytest_configure(config: pytest.Config) -> None:
    timeout = getattr(config, "_env_timeout", None)
    given = config.getoption("timeout", None) is not None or os.environ.get("PYTEST_TIMEOUT")
    if timeout and not given:
        config._env_timeout = timeout * TIMEOUT_FACTOR  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    redis_server.start()
    redis_server.flush()
    return redis_server.url()


@pytest.fixture
def make_redis(tmp_path: Path) -> Iterator[Callable[..., RedisServer]]:
    made: list[RedisServer] = []

    def make(**options: str) -> RedisServer:
        server = RedisServer(tmp_path / f"redis-{len(made)}", **options)
        made.append(server)
        server.start()
        return server

    try:
        yield make
    finally:
        for server in made:
            server.stop()
