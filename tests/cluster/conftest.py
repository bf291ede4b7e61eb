"""Fixtures of the many-process tests: a private Redis and server processes over it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit import table_def
from tests.kit.cluster import Cluster
from tests.kit.redis import RedisServer


@pytest.fixture
def make_cluster(
    tmp_path: Path, make_redis: Callable[..., RedisServer]
) -> Iterator[Callable[..., Cluster]]:
    made: list[Cluster] = []

    def make(
        nodes: int,
        tables: list[dict[str, Any]] | None = None,
        redis: RedisServer | None = None,
        **settings: Any,
    ) -> Cluster:
        """``nodes`` processes over ``redis`` (a new private one unless given), with
        ``tables`` and more ``chemmy-server`` settings."""
        cluster = Cluster(
            tmp_path / f"cluster{len(made)}",
            (redis or make_redis()).port,
            tables if tables is not None else [table_def("t1")],
            **settings,
        )
        made.append(cluster)
        for _ in range(nodes):
            cluster.add()
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.stop()
