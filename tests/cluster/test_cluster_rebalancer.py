"""The placement loop (``Rebalancer``) on a real ``redis-server``, where its steps meet
what a loaded machine does to them: a drain's step arriving while the loop's own step is
in flight, and a step that starts many tables one after another.

- One step at a time: a drain's step waits for the loop's step in flight. Two at once
  let the loop's step, placed before the drain, take back the table the drain had just
  handed over (seen in CI: a drained table's lease held nowhere else for 12 s).
- A step that starts tables slowly renews the leases it already holds between them,
  so none lapses while it works (seen in CI: a survivor's table left ownerless for a
  moment after a kill, while it started its share of the dead process's tables).
- A notice heard while a step reads every owner is looked at again by the next step,
  and a drain's step tells of its draining mark before it gives any table up.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis

from server.croupier.cluster import Leases, Rebalancer, lease_key


class GatedLeases(Leases):
    """Leases whose next tick, once answered, waits for ``gate`` before its step goes
    on: a Redis reply that reaches a loaded process late."""

    gate: asyncio.Event | None = None

    async def tick(self, *args: Any, **kwargs: Any) -> Any:
        answer = await super().tick(*args, **kwargs)
        if self.gate is not None:
            gate, self.gate = self.gate, None
            await gate.wait()
        return answer


async def test_a_drain_waits_for_the_step_in_flight_and_the_table_stays_handed_over(
    redis_url: str,
) -> None:
    leases = GatedLeases(redis_url, "node-a", ttl=3.0)
    owned: set[str] = set()
    started: list[str] = []

    async def own(table: str) -> None:
        owned.add(table)
        started.append(table)

    async def disown(table: str, why: str) -> None:
        owned.discard(table)

    async def tables() -> list[str]:
        return ["t1"]

    loop = Rebalancer(leases, tables=tables, owned=lambda: set(owned), own=own, disown=disown)
    raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await loop.step()
        assert owned == {"t1"} and started == ["t1"]
        gate = leases.gate = asyncio.Event()
        in_flight = asyncio.create_task(loop.step())  # read the members before the drain
        await asyncio.sleep(0.1)
        loop.draining = True  # SIGTERM (Croupier.drain): hand every table over now
        drain = asyncio.create_task(loop.step())
        await asyncio.sleep(0.1)
        assert leases.gate is None  # (the loop's tick was answered and waits at the gate)
        gate.set()
        await asyncio.wait_for(asyncio.gather(in_flight, drain), 5)
        assert owned == set(), started  # handed over, and not taken back
        assert started == ["t1"]
        assert await raw.get(lease_key("t1")) is None  # free for the next owner at once
    finally:
        await raw.aclose()
        await leases.close()


@pytest.mark.slow
async def test_a_step_that_starts_tables_slowly_keeps_the_leases_it_holds(
    redis_url: str,
) -> None:
    ttl = 0.9
    leases = Leases(redis_url, "node-a", ttl=ttl)
    owned: set[str] = set()
    open_tables = ["t1"]

    async def own(table: str) -> None:
        if table != "t1":
            await asyncio.sleep(ttl / 3)  # a start that awaits a loaded store
        owned.add(table)

    async def disown(table: str, why: str) -> None:
        owned.discard(table)

    async def tables() -> list[str]:
        return list(open_tables)

    loop = Rebalancer(leases, tables=tables, owned=lambda: set(owned), own=own, disown=disown)
    raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await loop.step()
        assert owned == {"t1"}
        open_tables += [f"t{n}" for n in range(2, 8)]  # six more, ~2 leases' time to start
        step = asyncio.create_task(loop.step())
        holders = []
        while not step.done():
            holders.append(await raw.get(lease_key("t1")))
            await asyncio.sleep(0.02)
        await step
        assert owned == set(open_tables)
        assert holders.count("node-a") == len(holders), holders  # t1's never lapsed
        for table in open_tables:
            assert await raw.get(lease_key(table)) == "node-a"
    finally:
        await raw.aclose()
        await leases.close()


class CountedLeases(GatedLeases):
    """Leases that remember which tables each tick read the owners of."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads: list[list[str]] = []

    async def tick(self, owned: Any, tables: Any, **kwargs: Any) -> Any:
        self.reads.append(list(tables))
        return await super().tick(owned, tables, **kwargs)


def a_loop(leases: Leases, names: list[str], said: list[str]) -> tuple[Rebalancer, set[str]]:
    """A placement loop over the tables ``names``, and the set of those it runs; each
    table it gives up is said in ``said``."""
    owned: set[str] = set()

    async def own(table: str) -> None:
        owned.add(table)

    async def disown(table: str, why: str) -> None:
        said.append(f"gave up {table}")
        owned.discard(table)

    async def tables() -> list[str]:
        return names

    loop = Rebalancer(leases, tables=tables, owned=lambda: set(owned), own=own, disown=disown)
    return loop, owned


async def test_a_notice_heard_during_a_step_that_reads_every_owner_is_read_again(
    redis_url: str,
) -> None:
    leases = CountedLeases(redis_url, "node-a", ttl=3.0)
    loop, _ = a_loop(leases, ["t1"], [])
    try:
        await loop.step()  # (the first step reads every owner)
        loop.poke()  # a notice: the next step reads every owner
        gate = leases.gate = asyncio.Event()
        step = asyncio.create_task(loop.step())
        await asyncio.sleep(0.1)
        loop.poke()  # another, heard while that read was under way: it may predate it
        gate.set()
        await asyncio.wait_for(step, 5)
        await loop.step()
        assert leases.reads == [["t1"], ["t1"], ["t1"]]
    finally:
        await leases.close()


async def test_a_drain_tells_of_its_mark_before_it_gives_a_table_up(redis_url: str) -> None:
    leases = Leases(redis_url, "node-a", ttl=3.0)
    said: list[str] = []
    loop, owned = a_loop(leases, ["t1", "t2"], said)
    raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await loop.step()
        assert owned == {"t1", "t2"}
        loop.draining = True
        await loop.step(ticked=lambda: said.append("told"))
        assert said == ["told", "gave up t1", "gave up t2"]
        assert await raw.zrange("chemmy:draining", 0, -1) == ["node-a"]
    finally:
        await raw.aclose()
        await leases.close()
