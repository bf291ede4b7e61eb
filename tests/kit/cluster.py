"""Several ``chemmy-server`` processes sharing tables through one real Redis.

:class:`Cluster` starts N server subprocesses (``tests/kit``'s launcher: port 0, the
listening line) all given ``--store redis://...`` of a private ``redis-server`` started
for the test (``make_redis``, AOF on), with a short lease so failover tests are quick.
It reads who owns what from the lease keys, as an operator would. The Redis is the
test's own (``make_redis`` in tests/conftest.py); this module never starts or touches
another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from .launch import ServerProcess
from .tables import SECRET, server_toml
from .timing import scaled

#: The lease (seconds) cluster tests run with: a lost process's tables move after this.
LEASE = 2.5


class Cluster:
    """N server processes over one Redis."""

    def __init__(self, home: Path, redis_port: int, tables: list[dict[str, Any]]) -> None:
        self.home = home
        self.url = f"redis://127.0.0.1:{redis_port}/0"
        self.config = server_toml(
            tables, jwt_secret=SECRET, guest=True, rate_limit=10_000.0, rate_burst=10_000
        )
        self.nodes: list[ServerProcess] = []
        self.redis = redis.Redis(host="127.0.0.1", port=redis_port, decode_responses=True)

    def add(self) -> ServerProcess:
        """Start one more process."""
        n = len(self.nodes)
        node = ServerProcess(
            self.home / f"node{n}", self.config, "--store", self.url, "--lease", str(LEASE)
        )
        node.start()
        self.nodes.append(node)
        return node

    def owners(self) -> dict[str, str]:
        """table -> the node name holding its lease."""
        out: dict[str, str] = {}
        for key in self.redis.scan_iter("chemmy:{*}:lease"):
            table = key.split("{", 1)[1].split("}", 1)[0]
            owner = self.redis.get(key)
            if owner is not None:
                out[table] = owner
        return out

    def members(self) -> list[str]:
        return sorted(self.redis.zrange("chemmy:nodes", 0, -1))

    def node_name(self, node: ServerProcess) -> str:
        """The bus name of ``node``'s process (host-pid-random)."""
        names = [m for m in self.members() if m.split("-")[-2] == str(node.pid)]
        assert len(names) == 1, (names, self.members())
        return names[0]

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.redis.close()


async def settle(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until ``check()`` holds (the timeout scaled), polling."""
    async with asyncio.timeout(scaled(timeout)):
        while not check():
            await asyncio.sleep(0.05)
