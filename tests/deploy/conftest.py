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
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from deploy_helpers import cluster_script, server_helpers
from kit import ServerProcess, scaled

from server.croupier.cluster import lease_key, placement


@pytest.fixture
def nginx_program() -> str:
    found = shutil.which("nginx") or shutil.which("/usr/sbin/nginx")
    assert found, "nginx is not installed: scripts/test installs it (Debian package nginx)"
    return found


@dataclass
class Front:
    """nginx (``nginx``, scripts/cluster's :class:`Nginx`) in front of ``servers``."""

    servers: list[ServerProcess]
    nginx: Any
    store: str | None
    clients: list[Any] = field(default_factory=list)

    @property
    def url(self) -> str:
        """Where players connect: nginx's TLS port."""
        return f"wss://127.0.0.1:{self.nginx.https_port}/"

    @property
    def https(self) -> str:
        return f"https://127.0.0.1:{self.nginx.https_port}"

    async def settled(self, tables: list[str]) -> None:
        """Wait until the cluster's members are exactly these processes and each table
        is owned where placement puts it: no table moves until a process joins or
        leaves. (A process that left without a clean stop stays a member until its
        heartbeat expires.)"""
        assert self.store is not None, "a cluster's"
        r = aioredis.Redis.from_url(self.store)
        pids = {s.pid for s in self.servers}
        try:
            async with asyncio.timeout(scaled(20)):
                while True:
                    now_ms = int(time.time() * 1000)
                    nodes = [
                        n.decode() for n in await r.zrangebyscore("chemmy:nodes", now_ms, "+inf")
                    ]
                    raw = [await r.get(lease_key(t)) for t in tables]
                    owners = {
                        t: None if o is None else o.decode()
                        for t, o in zip(tables, raw, strict=True)
                    }
                    placed = placement(tables, nodes, owners)  # where it stays, balanced
                    if {int(n.rsplit("-", 2)[1]) for n in nodes} == pids and all(
                        owners[t] == placed[t] for t in tables
                    ):
                        return
                    await asyncio.sleep(0.05)
        finally:
            await r.aclose()


MakeFront = Callable[..., Awaitable[Front]]


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
            # SIGTERM, and SIGKILL soon after: a process of a cluster may hang after its
            # drain (docs/operations.md), and the test is over.
            for server in front.servers:
                if server.running:
                    server.send_signal(signal.SIGTERM)
            for server in front.servers:
                if server.proc is not None:
                    try:
                        await asyncio.to_thread(server.wait_exit, scaled(1.5))
                    except subprocess.TimeoutExpired:
                        server.kill()
