"""Fixtures of the deploy tests: the real nginx with deploy/'s config in front of real
``chemmy-server`` processes sharing a real Redis.

- ``nginx_program``: nginx must be installed (Debian ``nginx``; ``scripts/test``
  installs it when missing), else the test fails saying so;
- ``make_front``: ``make_front(n, config)`` starts ``n`` chemmy-server processes on the
  test's Redis (``--store``, the ``redis_url`` fixture of tests/conftest.py; or
  ``store=False``: SQLite) and nginx in front of them (:class:`Front`); all stopped when
  the test ends.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from deploy_helpers import Front, MakeFront, cluster_script, server_helpers

from tests.kit import ServerProcess, scaled


@pytest.fixture
def nginx_program() -> str:
    found = shutil.which("nginx") or shutil.which("/usr/sbin/nginx")
    assert found, "nginx is not installed: scripts/test installs it (Debian package nginx)"
    return found


@pytest.fixture
async def make_front(
    tmp_path: Path, redis_url: str, nginx_program: str
) -> AsyncIterator[MakeFront]:
    made: list[Front] = []
    secret = server_helpers().SECRET

    async def make(count: int, config: str, *args: str, store: bool = True) -> Front:
        """``count`` servers sharing the test's Redis (``store=False``: each on its own
        SQLite file, for a single process), and nginx in front of them."""
        shared = ["--store", redis_url] if store else []
        servers = [
            ServerProcess(
                tmp_path / f"chemmy-{n}",
                config,
                *shared,
                "--log-format",
                "text",
                "--log-level",
                "warning",
                *args,
                env={"CHEMMY_JWT_SECRET": secret},
            )
            for n in range(1, count + 1)
        ]
        front = Front(servers, None, redis_url if store else None)
        made.append(front)
        await asyncio.gather(*(asyncio.to_thread(s.start) for s in servers))
        addresses = [f"127.0.0.1:{s.port}" for s in servers]
        nginx = cluster_script().Nginx(tmp_path / "nginx", addresses, timeout=scaled(30))
        front.nginx = nginx
        await asyncio.to_thread(nginx.start)
        return front

    try:
        yield make
    finally:
        for front in made:
            for client in front.clients:
                await client.close()
            if front.nginx is not None:
                front.nginx.stop()
            # SIGTERM, and SIGKILL if it has not exited soon after: the test is over.
            for server in front.servers:
                if server.running:
                    server.send_signal(signal.SIGTERM)
            for server in front.servers:
                if server.proc is not None:
                    try:
                        await asyncio.to_thread(server.wait_exit, scaled(1.5))
                    except subprocess.TimeoutExpired:
                        server.kill()
