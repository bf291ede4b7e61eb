"""The store contract of the round search (``Store.round_records``, the operator's
``GET /operator/v1/rounds``), on every store.

SQLite and a real Redis (the ``redis_url`` fixture), as in
tests/server/test_store_wallet_calls.py: every round record is found by time, table,
player and round id, newest first by ``(time, round_id)``, and a cursor pages through
thousands of them without missing or repeating one, ties of one ``time`` included; an
upserted record moves in the index; records stored before the index existed are found
(SQLite: a file without the ``time`` column; Redis: a database without the sorted sets).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from redis import asyncio as aioredis

from server.protocol.errors import StoreError
from server.store import RedisStore, SQLiteStore, Store
from server.store.base import (
    HISTORY_LIMIT,
    ROUNDS_LIMIT,
    RoundQuery,
)
from tests.server.conftest import make_store

KINDS = ("redis", "sqlite")
NOW = 1_700_000_000.0


def record(
    round_id: str, time: float, table: str = "t1", players: tuple[str, ...] = ("ann",)
) -> dict[str, Any]:
    """A round record of the shape settlement writes (the fields the search reads)."""
    coup_no = round_id.rpartition("-")[2]
    return {
        "kind": "round",
        "round_id": round_id,
        "table": table,
        "shoe_no": 1,
        "coup_no": int(coup_no) if coup_no.isdigit() else 1,
        "time": time,
        "players": list(players),
        "player": ["9h", "Kd"],
        "banker": ["2c", "3d"],
        "outcome": "player",
        "bets": [
            {
                "player": p,
                "area": "player",
                "stake": 100,
                "returned": 200,
                "win": 100,
                "commission": 0,
                "outcome": "win",
            }
            for p in players
        ],
        "commission": 0,
    }


def ids(found: list[dict[str, Any]]) -> list[str]:
    return [r["round_id"] for r in found]


async def test_filters_and_order(store: Store) -> None:
    await store.commit(
        records=[
            record("t1-1-1", NOW, "t1", ("ann",)),
            record("t2-1-1", NOW + 1, "t2", ("bob",)),
            record("t1-1-2", NOW + 2, "t1", ("ann", "bob")),
            record("t2-1-2", NOW + 3, "t2", ()),
            {"kind": "shoe", "table": "t1", "shoe_no": 1},  # not a round
        ]
    )
    assert ids(await store.round_records(RoundQuery())) == ["t2-1-2", "t1-1-2", "t2-1-1", "t1-1-1"]
    assert ids(await store.round_records(RoundQuery(table="t1"))) == ["t1-1-2", "t1-1-1"]
    assert ids(await store.round_records(RoundQuery(player="bob"))) == ["t1-1-2", "t2-1-1"]
    assert ids(await store.round_records(RoundQuery(player="bob", table="t2"))) == ["t2-1-1"]
    assert ids(await store.round_records(RoundQuery(since=NOW + 1, until=NOW + 3))) == [
        "t1-1-2",
        "t2-1-1",
    ]
    assert ids(await store.round_records(RoundQuery(since=NOW + 3))) == ["t2-1-2"]
    assert ids(await store.round_records(RoundQuery(until=NOW))) == []  # until is excluded
    assert ids(await store.round_records(RoundQuery(round_id="t2-1-1"))) == ["t2-1-1"]
    assert ids(await store.round_records(RoundQuery(round_id="t2-1-1", table="t1"))) == []
    assert ids(await store.round_records(RoundQuery(round_id="t2-1-1", player="ann"))) == []
    assert ids(await store.round_records(RoundQuery(round_id="nope"))) == []
    assert ids(await store.round_records(RoundQuery(table="t9"))) == []
    assert ids(await store.round_records(RoundQuery(limit=2))) == ["t2-1-2", "t1-1-2"]
    assert await store.round_records(RoundQuery(limit=0)) == []
    found = await store.round_records(RoundQuery(round_id="t1-1-2"))
    assert found == [record("t1-1-2", NOW + 2, "t1", ("ann", "bob"))]  # as stored


async def test_bad_arguments_are_store_errors(store: Store) -> None:
    for bad in (
        {"since": "yesterday"},
        {"until": float("nan")},
        {"table": 1},
        {"limit": 1.5},
        {"before": (NOW,)},
        {"before": ("x", "t1-1-1")},
        {"before": (NOW, 7)},
    ):
        with pytest.raises(StoreError):
            await store.round_records(RoundQuery(**bad))


async def test_a_cursor_pages_through_thousands_with_ties(store: Store) -> None:
    # 2,400 rounds on two tables, three of each time: ties are ordered by round_id.
    made = [
        record(f"t{n % 2 + 1}-1-{n}", NOW + n // 3, f"t{n % 2 + 1}", (f"p{n % 7}",))
        for n in range(2400)
    ]
    for start in range(0, len(made), 400):
        await store.commit(records=made[start : start + 400])
    expected = sorted(made, key=lambda r: (r["time"], r["round_id"]), reverse=True)

    async def walk(limit: int, **filters: Any) -> list[str]:
        seen: list[str] = []
        before = None
        while True:
            page = await store.round_records(RoundQuery(limit=limit, before=before, **filters))
            seen += ids(page)
            if len(page) < limit:
                return seen
            before = (page[-1]["time"], page[-1]["round_id"])

    assert await walk(250) == ids(expected)
    assert await walk(ROUNDS_LIMIT) == ids(expected)
    assert len(await store.round_records(RoundQuery(limit=5000))) == ROUNDS_LIMIT
    assert await walk(97, table="t2") == [r["round_id"] for r in expected if r["table"] == "t2"]
    # A player's every round, beyond the HISTORY_LIMIT their history keeps.
    p3 = [r["round_id"] for r in expected if r["players"] == ["p3"]]
    assert len(p3) > HISTORY_LIMIT
    assert await walk(100, player="p3") == p3
    assert len(await store.history("p3")) == HISTORY_LIMIT
    window = [r["round_id"] for r in expected if NOW + 10 <= r["time"] < NOW + 500]
    assert await walk(33, since=NOW + 10, until=NOW + 500) == window


async def test_an_upserted_round_moves(store: Store) -> None:
    await store.commit(records=[record("r-1", NOW, "t1"), record("r-2", NOW + 5, "t1")])
    await store.commit(records=[record("r-1", NOW + 9, "t2", ("bob",))])
    assert ids(await store.round_records(RoundQuery())) == ["r-1", "r-2"]
    assert ids(await store.round_records(RoundQuery(table="t1"))) == ["r-2"]
    assert ids(await store.round_records(RoundQuery(table="t2"))) == ["r-1"]
    assert ids(await store.round_records(RoundQuery(player="ann"))) == ["r-2"]
    # A record without a time is indexed at 0.
    timeless = record("r-0", NOW)
    del timeless["time"]
    await store.commit(records=[timeless])
    assert ids(await store.round_records(RoundQuery(until=1))) == ["r-0"]


@pytest.mark.parametrize("kind", KINDS)
async def test_rounds_survive_the_store_opened_again(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    first = make_store(kind, request, tmp_path)
    await first.open()
    await first.commit(records=[record(f"r-{n}", NOW + n) for n in range(5)])
    await first.close()
    second = make_store(kind, request, tmp_path)
    await second.open()
    try:
        assert ids(await second.round_records(RoundQuery(before=(NOW + 3, "r-3")))) == [
            "r-2",
            "r-1",
            "r-0",
        ]
    finally:
        await second.close()


async def test_sqlite_an_older_file_gains_the_time_column(tmp_path: Path) -> None:
    path = tmp_path / "chemmy.sqlite3"
    first = SQLiteStore(path)
    await first.open()
    await first.commit(records=[record("r-1", NOW), record("r-2", NOW + 1, "t2")])
    await first.close()
    raw = sqlite3.connect(path)  # as a server before the round search left it
    raw.execute("DROP INDEX rounds_time")
    raw.execute("DROP INDEX rounds_table_time")
    raw.execute("ALTER TABLE rounds DROP COLUMN time")
    raw.commit()
    raw.close()
    second = SQLiteStore(path)
    await second.open()
    try:
        assert ids(await second.round_records(RoundQuery())) == ["r-2", "r-1"]
        assert ids(await second.round_records(RoundQuery(since=NOW + 1))) == ["r-2"]
    finally:
        await second.close()
    raw = sqlite3.connect(path)
    try:
        plan = " ".join(
            str(row)
            for row in raw.execute(
                "EXPLAIN QUERY PLAN SELECT body FROM rounds WHERE time >= 0 AND time < 1e300"
                " AND table_id = 't1' ORDER BY time DESC, round_id DESC LIMIT 5"
            )
        )
        assert "rounds_table_time" in plan and "TEMP B-TREE" not in plan, plan
    finally:
        raw.close()


async def test_redis_rounds_stored_before_the_index_are_found(redis_url: str) -> None:
    first = RedisStore(redis_url)
    await first.open()
    await first.commit(records=[record("r-1", NOW), record("r-2", NOW + 1, "t2")])
    await first.close()
    raw = aioredis.Redis.from_url(redis_url)  # as a server before the round search
    try:
        await raw.delete(
            "chemmy:round_times",
            "chemmy:round_times:t1",
            "chemmy:round_times:t2",
            "chemmy:round_times_ready",
        )
    finally:
        await raw.aclose()
    second = RedisStore(redis_url)
    await second.open()
    try:
        assert ids(await second.round_records(RoundQuery())) == ["r-2", "r-1"]
        assert ids(await second.round_records(RoundQuery(table="t2"))) == ["r-2"]
    finally:
        await second.close()
