"""Group commit (issue 23): the commits of many tables waiting for the store at the same
moment go out together (SQLite: one transaction, each commit in its own savepoint;
Redis: one pipeline and one ``WAIT``), each answered with its own result or refusal,
each stored before its caller's await returns, each table's order kept, and a commit
refused in a group never taking another with it.

The SQLite tests hold the store's worker thread on a gate while the commits queue, so
the group is exactly what was queued; the Redis ones start the commits in one turn of
the loop, which is what a group is there.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from server.ledger.accounts import Entry
from server.protocol.errors import KeyConflict, Overdrawn, StaleEpoch, StoreError, StoreUnavailable
from server.store import CommitResult, RedisStore, SQLiteStore, TableRow
from server.store.redis import GROUP_MAX as REDIS_GROUP_MAX
from server.store.sqlite import GROUP_MAX as SQLITE_GROUP_MAX

Grouping = RedisStore | SQLiteStore


@pytest.fixture(params=("redis", "sqlite"))
def kind(request: pytest.FixtureRequest) -> str:
    """Only the stores that group (the conftest's ``store`` opens one of this kind)."""
    return str(request.param)


def step(
    i: int, seq: int, amount: int = 10, *, key: str | None = None, epoch: int = 0
) -> dict[str, Any]:
    """Table ``t<i>``'s step ``seq``: player ``p<i>`` stakes ``amount``, the row, an event."""
    table, player = f"t{i}", f"p{i}"
    return {
        "entries": [
            Entry(
                key or f"{table}-r{seq}:{player}:stake",
                f"player:{player}",
                f"stake:{table}:{player}",
                amount,
                "stake",
                f"{table}-r{seq}",
            )
        ],
        "table": TableRow(
            table, {"tier": "1-100"}, {"phase": "betting", "n": seq}, seq, epoch=epoch
        ),
        "events": [{"seq": seq, "kind": "bets", "data": {"n": seq}, "private": {}}],
    }


async def fund(store: Any, count: int, balance: int = 1000) -> None:
    for i in range(count):
        await store.ensure_player(f"p{i}", f"P{i}", balance)


@asynccontextmanager
async def one_group(store: Grouping) -> AsyncIterator[None]:
    """The commits started inside go out as one group: SQLite's worker waits on a gate
    until they are all queued; Redis groups the commits started in one turn of the loop
    by itself."""
    if isinstance(store, RedisStore):
        yield
        return
    gate = threading.Event()
    held = asyncio.ensure_future(store._run(lambda db: gate.wait(10)))
    await asyncio.sleep(0.02)  # the worker is in the gate
    try:
        yield
        await asyncio.sleep(0.05)  # every commit is queued behind it
    finally:
        gate.set()
        await held


async def grouped(store: Grouping, *commits: dict[str, Any]) -> list[Any]:
    """Start ``commits`` at once, as one group; their answers (results or exceptions)."""
    async with one_group(store):
        tasks = [asyncio.ensure_future(store.commit(**kwargs)) for kwargs in commits]
    return list(await asyncio.gather(*tasks, return_exceptions=True))


@contextmanager
def counted(store: Grouping) -> Iterator[dict[str, int]]:
    """The groups and commits the store counted inside the block."""
    found: dict[str, int] = {}
    groups, commits = store.groups, store.commits
    yield found
    found["groups"] = store.groups - groups
    found["commits"] = store.commits - commits


async def test_concurrent_commits_of_many_tables_go_out_as_one_group(store: Grouping) -> None:
    await fund(store, 40)
    with counted(store) as count:
        answers = await grouped(store, *(step(i, 1, 10 + i) for i in range(40)))
    assert count == {"groups": 1, "commits": 40}
    assert answers == [CommitResult(1, {f"player:p{i}": 990 - i}) for i in range(40)]
    rows = {row.table_id: row for row in await store.load_tables()}
    assert all(rows[f"t{i}"].seq == 1 for i in range(40))
    assert [e["seq"] for e in await store.events_after("t7", 0) or []] == [1]
    assert (await store.audit())["sum"] == 0


async def test_a_lone_commit_is_a_group_of_its_own(store: Grouping) -> None:
    await fund(store, 1)
    with counted(store) as count:
        for seq in range(1, 4):
            assert (await store.commit(**step(0, seq))).balances == {"player:p0": 1000 - 10 * seq}
    assert count == {"groups": 3, "commits": 3}


async def test_a_group_is_capped(store: Grouping) -> None:
    cap = SQLITE_GROUP_MAX if isinstance(store, SQLiteStore) else REDIS_GROUP_MAX
    await fund(store, cap + 6)
    with counted(store) as count:
        answers = await grouped(store, *(step(i, 1) for i in range(cap + 6)))
    assert all(isinstance(a, CommitResult) and a.inserted == 1 for a in answers)
    assert count == {"groups": 2, "commits": cap + 6}


async def test_refusals_in_a_group_are_their_own_and_keep_nothing(store: Grouping) -> None:
    await fund(store, 6)
    await store.commit(**step(1, 1, key="taken"))  # t1's key "taken" holds 10
    assert await store.claim_table("t2") == 1
    assert await store.claim_table("t2") == 2  # t2's owner is now epoch 2
    before = {row.table_id: row for row in await store.load_tables()}
    with counted(store) as count:
        answers = await grouped(
            store,
            step(0, 1),
            step(1, 2, 11, key="taken"),  # a different entry under a stored key
            step(2, 1, epoch=1),  # an owner fenced off
            step(3, 1, 1001),  # more than p3 has
            step(4, 1),
            step(5, 1),
        )
    assert [type(a) for a in answers] == [
        CommitResult,
        KeyConflict,
        StaleEpoch,
        Overdrawn,
        CommitResult,
        CommitResult,
    ]
    assert count["commits"] == 3 and count["groups"] == 1
    balances = await store.balances([f"player:p{i}" for i in range(6)])
    assert balances == {
        "player:p0": 990,
        "player:p1": 990,  # its first step only
        "player:p2": 1000,
        "player:p3": 1000,
        "player:p4": 990,
        "player:p5": 990,
    }
    rows = {row.table_id: row for row in await store.load_tables()}
    assert rows["t1"] == before["t1"] and "t2" not in rows and "t3" not in rows
    assert [rows[t].seq for t in ("t0", "t4", "t5")] == [1, 1, 1]
    assert [e["seq"] for e in await store.events_after("t1", 0) or []] == [1]
    assert await store.events_after("t3", 0) == []
    assert not await store.has_entry("t3-r1:p3:stake")
    assert not await store.has_entry("t2-r1:p2:stake")
    audit = await store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]


async def test_a_retried_commit_in_a_group_is_applied_once(store: Grouping) -> None:
    await fund(store, 3)
    first = await store.commit(**step(0, 1))
    assert first == CommitResult(1, {"player:p0": 990})
    answers = await grouped(store, step(0, 1), step(1, 1), step(1, 1), step(2, 1))
    assert answers == [
        CommitResult(0, {"player:p0": 990}),  # stored already: skipped
        CommitResult(1, {"player:p1": 990}),
        CommitResult(0, {"player:p1": 990}),  # the same commit twice in one group
        CommitResult(1, {"player:p2": 990}),
    ]
    assert [e["seq"] for e in await store.events_after("t1", 0) or []] == [1]
    assert len(await store.ledger()) == 3 + 3  # three welcomes, three stakes


async def test_a_tables_commits_keep_their_order_in_a_group(store: Grouping) -> None:
    """Commits of one table in one group (an actor never does it, but the store keeps
    their order all the same): each sees the one before."""
    await fund(store, 1, balance=25)
    answers = await grouped(store, *(step(0, seq) for seq in range(1, 5)))
    assert [type(a) for a in answers] == [CommitResult, CommitResult, Overdrawn, Overdrawn]
    assert [a.balances for a in answers[:2]] == [{"player:p0": 15}, {"player:p0": 5}]
    [row] = await store.load_tables()
    assert row.seq == 2
    assert [e["seq"] for e in await store.events_after("t0", 0) or []] == [1, 2]


async def test_actors_committing_at_once_keep_each_tables_order(store: Grouping) -> None:
    """Many tables' actors, each awaiting its commits one after the other (as the
    croupier's actor does), at once: fewer groups than commits, and every table's row
    and events in its own order."""
    tables, steps = 30, 8
    await fund(store, tables)

    async def actor(i: int) -> None:
        for seq in range(1, steps + 1):
            result = await store.commit(**step(i, seq))
            assert result.balances == {f"player:p{i}": 1000 - 10 * seq}
            await asyncio.sleep(0)

    with counted(store) as count:
        await asyncio.gather(*(actor(i) for i in range(tables)))
    assert count["commits"] == tables * steps
    assert count["groups"] < count["commits"] // 4
    rows = {row.table_id: row for row in await store.load_tables()}
    for i in range(tables):
        assert rows[f"t{i}"].seq == steps and rows[f"t{i}"].state == {"phase": "betting", "n": 8}
        assert [e["seq"] for e in await store.events_after(f"t{i}", 0) or []] == [
            *range(1, steps + 1)
        ]


async def test_the_money_audit_is_exact_after_a_burst_with_failures(store: Grouping) -> None:
    tables, steps = 20, 12
    await fund(store, tables, balance=300)
    rng = random.Random(23)
    plans = [[rng.choice((10, 40, 90, 400)) for _ in range(steps)] for _ in range(tables)]
    kept: dict[str, int] = {}

    async def actor(i: int) -> None:
        seq = 0
        for amount in plans[i]:
            try:
                result = await store.commit(**step(i, seq + 1, amount))
            except Overdrawn:
                continue  # refused: the table's next step reuses the seq
            seq += 1
            kept[f"player:p{i}"] = result.balances[f"player:p{i}"]

    await asyncio.gather(*(actor(i) for i in range(tables)))
    expected = {}
    for i, plan in enumerate(plans):
        left = 300
        for amount in plan:
            if amount <= left:
                left -= amount
        expected[f"player:p{i}"] = left
    assert await store.balances(expected) == expected
    assert {a: kept.get(a, 300) for a in expected} == expected
    audit = await store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"] and audit["holds_ok"]


async def test_a_call_between_commits_ends_the_group_and_keeps_its_place(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "order.sqlite3")
    await store.open()
    try:
        await fund(store, 2)
        with counted(store) as count:
            async with one_group(store):
                first = asyncio.ensure_future(store.commit(**step(0, 1)))
                await asyncio.sleep(0)
                read = asyncio.ensure_future(store.balances(["player:p0", "player:p1"]))
                await asyncio.sleep(0)
                second = asyncio.ensure_future(store.commit(**step(1, 1)))
            seen = await read
            await asyncio.gather(first, second)
        assert seen == {"player:p0": 990, "player:p1": 1000}  # after the first, before
        assert count == {"groups": 2, "commits": 2}
    finally:
        await store.close()


class FailingCommit:
    """A connection whose next ``COMMIT`` fails (a disk that gives out), then works."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.failed = False

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT" and not self.failed:
            self.failed = True
            raise sqlite3.OperationalError("disk I/O error (simulated)")
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


async def test_a_failed_commit_of_the_group_fails_every_commit_in_it(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "fail.sqlite3")
    await store.open()
    try:
        await fund(store, 4)
        real = store._db
        assert real is not None
        store._db = FailingCommit(real)  # type: ignore[assignment]
        with counted(store) as count:
            answers = await grouped(store, *(step(i, 1) for i in range(3)), step(3, 1, 5000))
        assert [type(a) for a in answers] == [StoreUnavailable] * 4  # even the refused one
        assert count == {"groups": 0, "commits": 0}
        assert await store.load_tables() == []
        assert await store.balances([f"player:p{i}" for i in range(4)]) == {
            f"player:p{i}": 1000 for i in range(4)
        }
        # The disk works again: the tables' retries are each stored once.
        answers = await grouped(store, *(step(i, 1) for i in range(3)))
        assert answers == [CommitResult(1, {f"player:p{i}": 990}) for i in range(3)]
        assert (await store.audit())["sum"] == 0
    finally:
        store._db = real
        await store.close()


async def test_redis_loads_its_script_again_for_a_group(redis_url: str) -> None:
    store = RedisStore(redis_url)
    await store.open()
    try:
        await fund(store, 3)
        await store._redis().script_flush()  # a restarted Redis forgot the scripts
        answers = await grouped(store, *(step(i, 1) for i in range(3)))
        assert answers == [CommitResult(1, {f"player:p{i}": 990}) for i in range(3)]
        assert len(await store.ledger()) == 6
    finally:
        await store.close()


@pytest.mark.slow
async def test_redis_waits_once_for_a_group_and_every_commit_hears_it(redis_url: str) -> None:
    """With ``min_replicas`` and no replica: one ``WAIT`` for the group, and every
    commit whose script ran is in doubt (``StoreUnavailable``, kept on the primary);
    one refused by its script hears its own refusal."""
    store = RedisStore(redis_url, min_replicas=1)
    plain = RedisStore(redis_url)
    await store.open()
    await plain.open()
    try:
        await fund(plain, 3)
        with counted(store) as count:
            answers = await grouped(store, step(0, 1), step(1, 1, 5000), step(2, 1))
        assert [type(a) for a in answers] == [StoreUnavailable, Overdrawn, StoreUnavailable]
        assert "0 of 1 replicas" in str(answers[0])
        assert count == {"groups": 1, "commits": 0}
        assert await plain.has_entry("t0-r1:p0:stake") and await plain.has_entry("t2-r1:p2:stake")
        assert not await plain.has_entry("t1-r1:p1:stake")
    finally:
        await store.close()
        await plain.close()


async def test_the_benchmark_counts_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bench/store.py's part for tables committing at once, small: its figures and rows."""
    from bench import store as bench

    monkeypatch.setattr(bench, "LEVELS", (1, 8))
    monkeypatch.setattr(bench, "CONCURRENT_COMMITS", 16)
    monkeypatch.setattr(bench, "REPEATS", 1)
    found = await bench.concurrent(lambda: SQLiteStore(tmp_path / "bench.sqlite3"))
    assert set(found) == {"1", "8"}
    assert found["1"]["per_transaction"] == 1.0
    assert found["8"]["commits_s"] > 0 and found["8"]["per_transaction"] >= 1.0
    rows = bench.together_report({"together": {"sqlite": found}}, None)
    assert sum(line.startswith("| SQLiteStore | ") for line in rows) == 2


async def test_a_commit_the_store_cannot_take_fails_alone_in_its_group(store: Grouping) -> None:
    await fund(store, 3)
    answers = await grouped(store, step(0, 1), step(1, 1, key="bad\ud800key"), step(2, 1))
    assert answers[0] == CommitResult(1, {"player:p0": 990})
    assert isinstance(answers[1], StoreError) and "not storable text" in str(answers[1])
    assert answers[2] == CommitResult(1, {"player:p2": 990})
    assert (await store.balances(["player:p1"]))["player:p1"] == 1000
    assert [row.table_id for row in await store.load_tables()] == ["t0", "t2"]


async def test_a_redis_flush_cancelled_before_it_ran_leaves_nothing_stuck(redis_url: str) -> None:
    store = RedisStore(redis_url)
    await store.open()
    try:
        await fund(store, 2)
        waiting = asyncio.ensure_future(store.commit(**step(0, 1)))
        await asyncio.sleep(0)  # queued; its flush is scheduled, not yet run
        [flush] = store._flushes
        flush.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await store.commit(**step(1, 1)) == CommitResult(1, {"player:p1": 990})
        assert not await store.has_entry("t0-r1:p0:stake")
    finally:
        await store.close()
