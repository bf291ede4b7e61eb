"""``/metrics`` times each table command at the server (``chemmy_command_seconds``,
server/process/metrics.py, docs/operations.md §4): from the gateway decoding its frame
to handing the reply frame to the connection. A real server on port 0, a real client:
every command relayed to the table is counted once, under its kind, and the server's
time is part of the round trip the client measured, so their sums stay below it."""

from __future__ import annotations

import re
import time
from typing import Any

from tests.kit import http_get

NAME = "chemmy_command_seconds"


def samples(text: str, suffix: str) -> dict[str, float]:
    """The histogram's ``suffix`` samples (``count``, ``sum``) by their ``kind``."""
    found = re.findall(rf'^{NAME}_{suffix}{{kind="(\w+)"}} (\S+)$', text, re.MULTILINE)
    return {kind: float(value) for kind, value in found}


async def metrics(port: int) -> str:
    status, _, body = await http_get(port, "/metrics")
    assert status == 200
    return body.decode()


async def test_each_table_command_is_timed_within_its_round_trip(net: Any) -> None:
    server = await net.start(rate_limit=10_000.0, rate_burst=10_000)
    ann = await net.player(server, "ann")
    before = await metrics(server.port)
    assert f"# TYPE {NAME} histogram" in before
    trips: list[float] = []

    async def timed(kind: str, **fields: Any) -> None:
        start = time.perf_counter()
        reply = await ann.rpc(kind, **fields)
        trips.append(time.perf_counter() - start)
        assert reply["type"] in ("ok", "error"), reply

    await timed("join", table="t1")
    await timed("sit", table="t1")
    for _ in range(3):
        await timed("roads", table="t1")
    await timed("toss", table="t1", hand="player")  # refused by the table: still timed
    await timed("balance")  # not a table command: not timed
    after = await metrics(server.port)
    count0, count1 = samples(before, "count"), samples(after, "count")
    rose = {kind: count1[kind] - count0.get(kind, 0.0) for kind in count1}
    assert {k: v for k, v in rose.items() if v} == {"join": 1, "sit": 1, "roads": 3, "toss": 1}
    took = sum(samples(after, "sum").values()) - sum(samples(before, "sum").values())
    assert 0 < took < sum(trips[:-1])
