"""``scripts/cluster --ha`` for real (its :class:`~tests.kit.local.LocalCluster` with
``ha``): a primary, a replica and three sentinels on deploy/sentinel.conf, two
``chemmy-server`` on ``redis+sentinel://`` and nginx. Kill the primary: the sentinels
promote the replica and both servers are ready again through it; deploy/redis.conf is
left as it was (the sentinels make a data server rewrite its config file: each runs on
a copy); everything stops."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import redis

from server.connect.redis import parse_sentinel_url
from tests.kit import scaled
from tests.kit.local import REDIS_CONF, LocalCluster, http_status

pytestmark = pytest.mark.slow  # server subprocesses, five Redis processes: seconds each


def named_primary(cluster: LocalCluster) -> int | None:
    (host, port), *_ = parse_sentinel_url(cluster.store).sentinels
    client = redis.Redis(host=host, port=port, socket_timeout=1, decode_responses=True)
    try:
        found = client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "chemmy")
        return int(found[1]) if found else None
    except redis.RedisError:
        return None
    finally:
        client.close()


def ready(cluster: LocalCluster) -> bool:
    return all(
        http_status(f"http://127.0.0.1:{port}/readyz", None, 1) == 200
        for port in cluster.server_ports
    )


async def test_scripts_cluster_ha_survives_the_primary(tmp_path: Path, nginx_program: str) -> None:
    conf = REDIS_CONF.read_bytes()
    cluster = LocalCluster(
        tmp_path / "ha",
        processes=2,
        https_port=0,
        http_port=0,
        timeout=scaled(30),
        stop_timeout=scaled(5),
        ha=True,
    )
    cluster.start()
    try:
        assert cluster.store.startswith("redis+sentinel://")
        assert len(cluster.sentinels) == 3 and cluster.replica is not None
        assert "a replica, three sentinels" in cluster.describe()
        assert named_primary(cluster) == cluster.redis_port
        assert ready(cluster)
        assert cluster.redis is not None
        cluster.redis.kill()
        began = time.monotonic()
        async with asyncio.timeout(scaled(40)):
            while named_primary(cluster) in (None, cluster.redis_port) or not ready(cluster):
                await asyncio.sleep(0.2)
        print(f"scripts/cluster --ha: ready again {time.monotonic() - began:.1f} s after the kill")
    finally:
        children = [*cluster.sentinels, cluster.replica, *cluster.servers]
        cluster.stop()
    assert not any(child is not None and child.running for child in children)
    assert REDIS_CONF.read_bytes() == conf
