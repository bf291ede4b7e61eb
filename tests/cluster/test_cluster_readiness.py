"""Readiness follows Redis (issue 18.9): a frozen Redis (SIGSTOP) keeps every connection
open, so only a live check tells that a process cannot serve. Every process answers
``/readyz`` 503 ("redis not answering") within a few seconds of the freeze, and 200
again by itself once Redis runs again. Real processes over a real Redis."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable

import pytest

from tests.kit import http_get, scaled, table_def
from tests.kit.cluster import Cluster
from tests.kit.redis import RedisServer

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each


async def readiness(port: int) -> tuple[int, bytes]:
    try:
        status, _headers, body = await http_get(port, "/readyz")
    except (TimeoutError, OSError) as exc:
        return 0, repr(exc).encode()
    return status, body


async def until(ports: list[int], wanted: int, seconds: float) -> float:
    """Seconds until every port's ``/readyz`` is ``wanted``."""
    start = time.monotonic()
    seen = {}
    while time.monotonic() - start < scaled(seconds):
        seen = {port: await readiness(port) for port in ports}
        if all(status == wanted for status, _ in seen.values()):
            return time.monotonic() - start
        await asyncio.sleep(0.1)
    raise AssertionError(f"/readyz never became {wanted}: {seen}")


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_readyz_follows_a_frozen_redis(
    make_cluster: Callable[..., Cluster], make_redis: Callable[..., RedisServer]
) -> None:
    redis = make_redis()
    redis.start()
    cluster = make_cluster(3, [table_def("t1")], redis=redis)
    await cluster.ready(tables=1)
    ports = [node.port for node in cluster.nodes]
    await until(ports, 200, 10)
    assert redis.process is not None
    redis.process.send_signal(signal.SIGSTOP)
    try:
        took = await until(ports, 503, 8)
        assert took < scaled(5), took
        bodies = {(await readiness(port))[1] for port in ports}
        assert all(b"redis not answering" in body for body in bodies), bodies
    finally:
        redis.process.send_signal(signal.SIGCONT)
    await until(ports, 200, 15)
