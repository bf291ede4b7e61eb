"""The operator's calls on a real cluster (issue 33, points 4 and 6): two real
``chemmy-server`` processes over a real Redis that the test starts (and stops).

- A signed call captured at one process and replayed to the other does nothing: the
  other answers the first answer (``Idempotent-Replayed: true``), as captured and under
  another ``Idempotency-Key``; one table is made, and a captured pause replayed after a
  resume leaves the table playing. The keys live in Redis, shared by every process.
- A call relayed to a table's owner that never answers (frozen: SIGSTOP) is answered the
  documented ``504 timeout`` within 10 s of its connection (before ``websockets``
  aborts the connection), however long ``--command-timeout`` is.
- SIGTERM while Redis is down ends the process cleanly: exit 0, one log line saying the
  tables were not handed over, no traceback.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Callable

import httpx
import pytest

from tests.kit import scaled, table_def
from tests.kit.cluster import Cluster
from tests.kit.operator import KEY, SignedOperator
from tests.kit.redis import RedisServer

pytestmark = pytest.mark.slow  # server subprocesses: seconds each

LONG = {"betting": 60, "squeeze": 60, "third_card": 60}


async def lines(op: SignedOperator) -> dict[str, dict[str, object]]:
    answer = await op.get("/operator/v1/tables")
    assert answer.status_code == 200, answer.text
    return {line["table"]: line for line in answer.json()["tables"]}


async def test_a_call_replayed_to_another_process_does_nothing(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(2, [table_def("t1", timers=LONG)], operator_key=KEY)
    await cluster.ready(tables=1)
    one, two = (SignedOperator(node.port) for node in cluster.nodes)
    try:
        raw = b"{}"
        captured = {
            "Content-Type": "application/json",
            "Chemmy-Signature": one.sign("POST", "/operator/v1/tables", raw),
            "Idempotency-Key": "create-1",
        }
        first = await one.http.post("/operator/v1/tables", content=raw, headers=captured)
        assert first.status_code == 200, first.text
        made = first.json()["table"]["table"]
        for key in ("create-1", "create-2"):
            again = await two.http.post(
                "/operator/v1/tables", content=raw, headers={**captured, "Idempotency-Key": key}
            )
            assert again.status_code == 200 and again.json() == first.json(), again.text
            assert again.headers["idempotent-replayed"] == "true"
        await asyncio.sleep(0.5)  # (each process reads the shared lobby lines every 0.25 s)
        assert sorted(await lines(two)) == sorted(["t1", made])

        pause = {
            "Content-Type": "application/json",
            "Chemmy-Signature": one.sign("POST", "/operator/v1/tables/t1/pause", b""),
            "Idempotency-Key": "pause-1",
        }
        paused = await one.http.post("/operator/v1/tables/t1/pause", headers=pause)
        assert paused.status_code == 200 and paused.json()["paused"] is True
        resumed = await two.post("/operator/v1/tables/t1/resume", None)
        assert resumed.status_code == 200 and resumed.json()["paused"] is False
        replayed = await two.http.post("/operator/v1/tables/t1/pause", headers=pause)
        assert replayed.json() == paused.json()
        assert replayed.headers["idempotent-replayed"] == "true"
        await asyncio.sleep(0.5)
        for op in (one, two):
            assert (await lines(op))["t1"]["paused"] is False
    finally:
        await one.http.aclose()
        await two.http.aclose()


async def test_a_call_to_a_frozen_owner_is_answered_504_in_time(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(
        2, [table_def("t1", timers=LONG)], operator_key=KEY, command_timeout=60, lease=30
    )
    await cluster.ready(tables=1)
    owner = cluster.owner("t1")
    assert owner is not None
    (other,) = cluster.others(owner)
    op = SignedOperator(other.port)
    op.http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{other.port}", timeout=30)
    owner.send_signal(signal.SIGSTOP)  # alive, holding its lease, answering nothing
    try:
        started = time.monotonic()
        answer = await op.post("/operator/v1/tables/t1/pause", None)
        took = time.monotonic() - started
    finally:
        owner.send_signal(signal.SIGCONT)
        await op.http.aclose()
    assert answer.status_code == 504, answer.text
    assert answer.json()["status"] == "timeout"
    assert took < 10.0, took


async def test_sigterm_while_redis_is_down_ends_cleanly(
    make_cluster: Callable[..., Cluster], make_redis: Callable[..., RedisServer]
) -> None:
    redis = make_redis()
    cluster = make_cluster(1, [table_def("t1")], redis=redis)
    await cluster.ready(tables=1)
    (node,) = cluster.nodes
    redis.stop()
    await asyncio.sleep(scaled(1.5))  # its bus and its leases have found Redis gone
    node.send_signal(signal.SIGTERM)
    code = await asyncio.to_thread(node.wait_exit, scaled(30))
    log = node.log_text(100_000)
    assert code == 0, log
    assert "Traceback" not in log and "ConnectionRefusedError" not in log, log
    assert "draining without Redis" in log, log
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert not [r for r in records if r.get("level") in ("error", "critical")], log
