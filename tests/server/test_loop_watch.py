"""``/metrics`` says how late the event loop runs and how long the collector pauses it
(server/process/metrics.py ``LoopWatch``, docs/operations.md §4): a real server on port 0,
its loop blocked for real, a real collection."""

from __future__ import annotations

import asyncio
import gc
import re
import time

import pytest

from server.process.metrics import LAG_PROBE
from tests.kit import http_get
from tests.kit.inproc import Net


def sample(text: str, name: str) -> float:
    """One sample's value in Prometheus text (0 when absent)."""
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return 0.0 if found is None else float(found.group(1))


async def metrics(port: int) -> str:
    status, _, body = await http_get(port, "/metrics")
    assert status == 200
    return body.decode()


@pytest.mark.slow
async def test_a_blocked_loop_shows_as_lag_and_a_collection_as_a_pause(net: Net) -> None:
    server = await net.start()
    await asyncio.sleep(3 * LAG_PROBE)  # a few probes on an idle loop: on time
    before = await metrics(server.port)
    assert sample(before, "chemmy_loop_lag_seconds_count") >= 1
    slow = 'chemmy_loop_lag_seconds_bucket{le="0.25"}'
    late = sample(before, "chemmy_loop_lag_seconds_count") - sample(before, slow)
    time.sleep(0.4)  # the loop held for 0.4 s (a step that never yields)
    await asyncio.sleep(2 * LAG_PROBE)
    gc.collect()
    after = await metrics(server.port)
    # The probe due meanwhile woke about 0.4 s late: counted above 0.25 s.
    assert sample(after, "chemmy_loop_lag_seconds_count") - sample(after, slow) >= late + 1
    assert sample(after, "chemmy_loop_lag_seconds_sum") >= 0.3
    full = 'chemmy_gc_pause_seconds_count{generation="2"}'
    assert sample(after, full) >= sample(before, full) + 1


async def test_a_stopped_server_leaves_the_collector_alone(net: Net) -> None:
    callbacks = len(gc.callbacks)
    server = await net.start()
    assert len(gc.callbacks) == callbacks + 1
    await net.stop(server)
    assert len(gc.callbacks) == callbacks
