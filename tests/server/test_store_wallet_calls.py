"""The store contract of the wallet calls' outbox (docs/wallet.md §3-§4), on every store.

SQLite and a real Redis (the ``redis_url`` fixture), as in tests/server/test_store.py
(whose fixtures are rebuilt here, the same way, so that this file stands alone): calls go
in with a commit, all or nothing, are skipped when their transaction id is stored, change
only in their progress, are found due from an index, listed newest first with filters and
a cursor, totalled for reconciliation, and survive the store being opened again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from redis import asyncio as aioredis

from server.ledger.accounts import Entry
from server.protocol.errors import (
    BadWalletCall,
    KeyConflict,
    Overdrawn,
    StaleEpoch,
    StoreError,
    StoreUnavailable,
)
from server.store import RedisStore, SQLiteStore, Store, TableRow
from server.store.base import (
    WALLET_CALLS_LIMIT,
)
from server.store.calls import (
    check_wallet_call,
)
from tests.kit.redis import RedisServer
from tests.server.conftest import make_store

KINDS = ("redis", "sqlite")
NOW = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
DAY = 86_400.0


def wcall(
    txn: str,
    kind: str = "credit",
    *,
    player: str = "ann",
    table: str = "t1",
    round_id: str = "t1-1-1",
    amount: int = 100,
    currency: str | None = "EUR",
    state: str = "pending",
    next_at: float = NOW,
    created: float = NOW,
    **more: Any,
) -> dict[str, Any]:
    """A wallet call as the seamless wallet's client would write it."""
    return {
        "transaction_id": txn,
        "kind": kind,
        "request_id": f"req-{txn}",
        "player": player,
        "table": table,
        "round_id": round_id,
        "amount": amount,
        "currency": currency,
        "state": state,
        "attempts": 0,
        "next_at": next_at,
        "created": created,
        "updated": created,
        "body": {"transaction_id": txn, "amount": amount, "payouts": [{"area": "banker"}]},
        "answer": None,
        "reference": None,
        "reason": None,
        "error": None,
        **more,
    }


def bet(key: str, player: str, amount: int) -> Entry:
    return Entry(key, f"player:{player}", f"stake:t1:{player}", amount, "stake", "r1")


def stored(call: dict[str, Any], seq: int) -> dict[str, Any]:
    return {**call, "seq": seq}


async def seqs(store: Store, **filters: Any) -> list[str]:
    return [c["transaction_id"] for c in await store.wallet_calls(**filters)]


# -- in with a commit ---------------------------------------------------------------------


async def test_calls_go_in_with_the_commit(store: Store) -> None:
    await store.ensure_player("ann", "Ann", 1000)
    credit = wcall("t1-1-1:ann:credit", amount=250)
    rollback = wcall("t1-1-1:bob:rollback", "rollback", player="bob", reason="voided")
    result = await store.commit(
        entries=[bet("k1", "ann", 10)],
        table=TableRow("t1", {}, {"phase": "betting"}, 1),
        events=[{"seq": 1, "kind": "bets", "data": {}, "private": None}],
        records=[{"kind": "shoe", "table": "t1", "shoe_no": 1}],
        calls=[credit, rollback],
    )
    assert result.inserted == 1
    first = await store.wallet_call(credit["transaction_id"])
    second = await store.wallet_call(rollback["transaction_id"])
    assert first is not None and second is not None
    assert first == stored(credit, first["seq"])
    assert second == stored(rollback, second["seq"])
    assert 1 <= first["seq"] < second["seq"]
    assert await store.wallet_call("nobody:credit") is None
    # A commit of calls alone, and a call's free fields kept as given (JSON's way).
    lone = wcall("t1-1-2:ann:debit", "debit", body={"bets": [{"area": "tie", "n": 1.5}]})
    lone |= {"created": int(NOW), "extra": {"k": [1, "two", None]}}
    lone.pop("answer")
    assert await store.commit(calls=[lone]) == (0, {})
    got = await store.wallet_call(lone["transaction_id"])
    assert got is not None and got["seq"] > second["seq"]
    assert got["created"] == NOW and isinstance(got["created"], float)
    assert got["answer"] is None and got["extra"] == {"k": [1, "two", None]}
    assert got["body"] == {"bets": [{"area": "tie", "n": 1.5}]}
    assert (await store.balances(["player:ann"]))["player:ann"] == 990


async def test_a_refused_commit_keeps_none_of_its_calls(store: Store) -> None:
    await store.ensure_player("ann", "Ann", 100)
    await store.commit(entries=[bet("k1", "ann", 10)])
    assert await store.claim_table("t1") == 1
    calls = [wcall("a:credit"), wcall("b:rollback", "rollback")]
    refused: list[tuple[type[StoreError], dict[str, Any]]] = [
        (Overdrawn, {"entries": [bet("k2", "ann", 50), bet("k3", "ann", 50)]}),
        (KeyConflict, {"entries": [bet("k2", "ann", 5), bet("k1", "ann", 11)]}),
        (StaleEpoch, {"table": TableRow("t1", {}, {"n": 1}, 1, epoch=0)}),
        (StoreError, {"records": [{"kind": "round"}]}),
        (BadWalletCall, {"entries": [bet("k2", "ann", 5)], "calls": [{"kind": "credit"}]}),
    ]
    for error, commit in refused:
        with pytest.raises(error):
            await store.commit(calls=commit.pop("calls", calls), **commit)
        assert await store.wallet_calls() == []
        assert await store.wallet_call("a:credit") is None
        assert await store.due_wallet_calls(NOW + DAY) == []
        assert await store.wallet_totals() == []
        assert not await store.has_entry("k2")
    # The same calls in a commit that passes are stored once, numbered from the start.
    await store.commit(entries=[bet("k2", "ann", 5)], calls=calls)
    assert await seqs(store) == ["b:rollback", "a:credit"]


async def test_a_stored_transaction_id_is_skipped(store: Store) -> None:
    first = wcall("t1-1-1:ann:credit", amount=100)
    await store.commit(calls=[first, {**first, "amount": 1}])  # twice in one commit
    kept = await store.wallet_call(first["transaction_id"])
    assert kept is not None and kept["amount"] == 100
    await store.update_wallet_call(first["transaction_id"], {"state": "acknowledged"})
    # A retried commit: neither overwritten (not back to pending) nor numbered again.
    again = {**first, "amount": 7, "state": "pending", "seq": 999}
    await store.commit(calls=[again, wcall("t1-1-2:ann:credit")])
    assert await store.wallet_call(first["transaction_id"]) == stored(
        first | {"state": "acknowledged"}, kept["seq"]
    )
    listed = await store.wallet_calls()
    assert [c["transaction_id"] for c in listed] == ["t1-1-2:ann:credit", "t1-1-1:ann:credit"]
    assert listed[0]["seq"] > listed[1]["seq"] == kept["seq"]
    assert [c["transaction_id"] for c in await store.due_wallet_calls(NOW)] == ["t1-1-2:ann:credit"]


# -- progress and the due index ---------------------------------------------------------


async def test_due_calls_come_from_pending_of_the_kinds_by_next_at(store: Store) -> None:
    await store.commit(
        calls=[
            wcall("c3", next_at=NOW + 3),
            wcall("r1", "rollback", next_at=NOW + 1),
            wcall("d0", "debit", next_at=NOW),
            wcall("c2", next_at=NOW + 2),
            wcall("late", next_at=NOW + 60),
            wcall("acked", next_at=NOW, state="acknowledged"),
            wcall("failed", "rollback", next_at=NOW, state="failed"),
        ]
    )
    due = await store.due_wallet_calls(NOW + 10)
    assert [c["transaction_id"] for c in due] == ["r1", "c2", "c3"]
    assert due[0] == stored(wcall("r1", "rollback", next_at=NOW + 1), due[0]["seq"])
    assert [c["transaction_id"] for c in await store.due_wallet_calls(NOW + 2)] == ["r1", "c2"]
    assert [c["transaction_id"] for c in await store.due_wallet_calls(NOW + 10, limit=2)] == [
        "r1",
        "c2",
    ]
    assert await store.due_wallet_calls(NOW + 10, limit=0) == []
    assert await store.due_wallet_calls(NOW - 1) == []
    assert [
        c["transaction_id"] for c in await store.due_wallet_calls(NOW + 1, kinds=["debit"])
    ] == ["d0"]
    every = await store.due_wallet_calls(NOW + 100, kinds=("debit", "credit", "rollback"))
    assert [c["transaction_id"] for c in every] == ["d0", "r1", "c2", "c3", "late"]
    with pytest.raises(BadWalletCall):
        await store.due_wallet_calls(NOW, kinds=["balance"])


async def test_due_calls_of_one_time_come_in_seq_order(store: Store) -> None:
    names = ["z", "m", "a", "q", "b"]
    await store.commit(calls=[wcall(name, next_at=NOW + 1) for name in names])
    await store.commit(calls=[wcall("first", next_at=NOW)])
    due = await store.due_wallet_calls(NOW + 1)
    assert [c["transaction_id"] for c in due] == ["first", *names]
    assert [c["transaction_id"] for c in await store.due_wallet_calls(NOW + 1, limit=3)] == [
        "first",
        "z",
        "m",
    ]


async def test_updates_change_the_progress_and_the_due_index(store: Store) -> None:
    await store.commit(calls=[wcall("c1"), wcall("c2", next_at=NOW + 1)])
    before = await store.wallet_call("c1")
    assert before is not None
    answer = {"status": "ok", "balance": 126450}
    changes = {"state": "acknowledged", "attempts": 1, "updated": NOW + 5, "answer": answer}
    after = await store.update_wallet_call("c1", changes)
    assert after == before | changes
    assert await store.wallet_call("c1") == after
    assert [c["transaction_id"] for c in await store.due_wallet_calls(NOW + 9)] == ["c2"]
    # Retried later: due again only once its next_at has come.
    await store.update_wallet_call("c2", {"attempts": 1, "next_at": NOW + 30, "error": "503"})
    assert await store.due_wallet_calls(NOW + 9) == []
    [c2] = await store.due_wallet_calls(NOW + 30)
    assert (c2["attempts"], c2["next_at"], c2["error"]) == (1, NOW + 30, "503")
    # Back to pending (a person re-opened a failed one): due again.
    await store.update_wallet_call("c1", {"state": "failed", "reason": "4xx"})
    assert (await store.update_wallet_call("c1", {"state": "pending"}) or {})["reason"] == "4xx"
    assert [c["transaction_id"] for c in await store.due_wallet_calls(NOW + 30)] == ["c1", "c2"]
    assert await store.update_wallet_call("nobody", {"state": "acknowledged"}) is None
    # Only the progress may change, and only to a value of the right shape.
    kept = await store.wallet_calls()
    for bad in (
        {"amount": 5},
        {"transaction_id": "c9"},
        {"seq": 1},
        {"state": "lost"},
        {"attempts": -1},
        {"next_at": "soon"},
        {"answer": "ok"},
        {"error": 5},
    ):
        with pytest.raises(BadWalletCall):
            await store.update_wallet_call("c1", bad)
        with pytest.raises(ValueError):
            await store.update_wallet_call("c1", bad)
    with pytest.raises(ValueError):
        await store.update_wallet_call("nobody", {"amount": 5})
    assert await store.wallet_calls() == kept


async def test_an_update_only_from_a_state_is_a_compare_and_set(store: Store) -> None:
    """What a person's retry or resolution of a failed call rests on
    (``server.operator.wallet``): the call changes only if it is in that state, in
    the same atomic step; otherwise it comes back as it is. Its ``resolutions`` (an
    audit line each) are kept, and only a list of objects is."""
    await store.commit(calls=[wcall("c1", state="failed"), wcall("c2")])
    line = {"action": "resolve", "outcome": "applied", "by": "operator-key", "at": NOW}
    changes = {"state": "acknowledged", "updated": NOW + 1, "resolutions": [line]}
    after = await store.update_wallet_call("c1", changes, only_from="failed")
    assert after is not None and after["state"] == "acknowledged"
    assert after["resolutions"] == [line]
    # The same again (a second person, a repeat): it is no longer failed, nothing changes.
    other = {"state": "cancelled", "updated": NOW + 2, "resolutions": [line, line]}
    assert await store.update_wallet_call("c1", other, only_from="failed") == after
    assert await store.wallet_call("c1") == after
    # A pending call is not taken for a failed one, and stays due.
    c2 = await store.wallet_call("c2")
    assert await store.update_wallet_call("c2", changes, only_from="failed") == c2
    assert [c["transaction_id"] for c in await store.due_wallet_calls(NOW)] == ["c2"]
    assert await store.update_wallet_call("nobody", changes, only_from="failed") is None
    for bad in ({"resolutions": "retried"}, {"resolutions": ["retried"]}):
        with pytest.raises(BadWalletCall):
            await store.update_wallet_call("c2", bad)
    assert "resolutions" not in (await store.wallet_call("c2") or {})  # none until one


# -- listing and totals -------------------------------------------------------------------


async def test_listing_is_newest_first_filtered_and_paged(store: Store) -> None:
    calls = [
        wcall(
            f"t{n % 2 + 1}-1-{n}:{player}:{kind}",
            kind,
            player=player,
            table=f"t{n % 2 + 1}",
            round_id=f"t{n % 2 + 1}-1-{n}",
            state=state,
        )
        for n, (player, kind, state) in enumerate(
            [
                ("ann", "debit", "acknowledged"),
                ("bob", "debit", "refused"),
                ("ann", "credit", "pending"),
                ("bob", "rollback", "rolled_back"),
                ("ann", "rollback", "failed"),
                ("cy", "credit", "acknowledged"),
                ("ann", "credit", "pending"),
            ]
        )
    ]
    for n in range(0, len(calls), 3):  # in three commits
        await store.commit(calls=calls[n : n + 3])
    names = [c["transaction_id"] for c in calls]
    listed = await store.wallet_calls()
    assert [c["transaction_id"] for c in listed] == names[::-1]
    assert [c["seq"] for c in listed] == sorted((c["seq"] for c in listed), reverse=True)
    assert listed[-1] == stored(calls[0], listed[-1]["seq"])
    assert await seqs(store, player="ann") == [names[6], names[4], names[2], names[0]]
    assert await seqs(store, player="ann", kind="credit") == [names[6], names[2]]
    assert await seqs(store, state="pending") == [names[6], names[2]]
    assert await seqs(store, table="t2") == [names[5], names[3], names[1]]
    assert await seqs(store, round_id="t2-1-3") == [names[3]]
    assert await seqs(store, player="ann", table="t2") == []
    assert await seqs(store, player="nobody") == []
    assert await seqs(store, limit=2) == [names[6], names[5]]
    assert await store.wallet_calls(limit=0) == []
    assert len(await store.wallet_calls(limit=WALLET_CALLS_LIMIT * 5)) == 7
    # The cursor: each page goes on below the last one's seq.
    pages: list[list[str]] = []
    cursor = None
    while page := await store.wallet_calls(limit=3, before_seq=cursor):
        pages.append([c["transaction_id"] for c in page])
        cursor = page[-1]["seq"]
    assert pages == [names[6:3:-1], names[3:0:-1], names[:1]]
    ann_first = await store.wallet_calls(player="ann", limit=1)
    assert await seqs(store, player="ann", before_seq=ann_first[0]["seq"]) == [
        names[4],
        names[2],
        names[0],
    ]
    assert await store.wallet_calls(before_seq=listed[-1]["seq"]) == []
    for bad in ({"state": "lost"}, {"kind": "balance"}, {"before_seq": "9"}, {"player": 5}):
        with pytest.raises(BadWalletCall):
            await store.wallet_calls(**bad)


async def test_totals_per_day_table_currency_kind_and_state(store: Store) -> None:
    await store.commit(
        calls=[
            wcall("a", amount=100),
            wcall("b", amount=250),
            wcall("c", amount=5, state="acknowledged"),
            wcall("d", "debit", amount=1500, table="t2"),
            wcall("e", amount=7, currency=None),
            wcall("f", amount=40, created=NOW + 2 * 3600),  # after midnight UTC
            wcall("g", amount=0, currency="JPY"),
        ]
    )
    day1 = {"day": "2023-11-14", "table": "t1", "currency": "EUR", "kind": "credit"}
    day2 = day1 | {"day": "2023-11-15"}
    assert await store.wallet_totals() == [
        day1 | {"currency": None, "state": "pending", "count": 1, "amount": 7},
        day1 | {"state": "acknowledged", "count": 1, "amount": 5},
        day1 | {"state": "pending", "count": 2, "amount": 350},
        day1 | {"currency": "JPY", "state": "pending", "count": 1, "amount": 0},
        day1 | {"table": "t2", "kind": "debit", "state": "pending", "count": 1, "amount": 1500},
        day2 | {"state": "pending", "count": 1, "amount": 40},
    ]
    assert await store.wallet_totals(since=NOW + 3600) == [
        day2 | {"state": "pending", "count": 1, "amount": 40}
    ]
    assert await store.wallet_totals(until=NOW + 2 * 3600) == (await store.wallet_totals())[:-1]
    assert await store.wallet_totals(since=NOW + DAY) == []
    # A state that changes moves the call to its new group.
    await store.update_wallet_call("f", {"state": "failed"})
    assert (await store.wallet_totals(since=NOW + 3600))[0]["state"] == "failed"


# -- refusals and persistence -------------------------------------------------------------


BAD_CALLS: list[dict[str, Any]] = [
    {"transaction_id": ""},
    {"transaction_id": 5},
    {"kind": "balance"},
    {"state": "done"},
    {"request_id": None},
    {"player": ""},
    {"table": 1},
    {"round_id": None},
    {"amount": -1},
    {"amount": 1 << 53},
    {"amount": 1.0},
    {"amount": True},
    {"currency": ""},
    {"currency": 978},
    {"attempts": "0"},
    {"next_at": None},
    {"created": float("nan")},
    {"updated": float("inf")},
    {"body": None},
    {"body": [1]},
    {"answer": "ok"},
    {"reference": 5},
    {"reason": 1},
    {"error": {"x": 1}},
    {"extra": object()},
    {"body": {"x": float("nan")}},
]


async def test_bad_calls_are_refused_and_keep_nothing(store: Store) -> None:
    await store.ensure_player("ann", "Ann", 100)
    for bad in BAD_CALLS:
        call = wcall("t1-1-1:ann:credit") | bad
        with pytest.raises(BadWalletCall):
            check_wallet_call(call)
        with pytest.raises(ValueError):
            await store.commit(entries=[bet("k", "ann", 10)], calls=[wcall("ok"), call])
    for missing in ("kind", "request_id", "player", "amount", "state", "next_at", "created"):
        call = wcall("t1-1-1:ann:credit")
        del call[missing]
        with pytest.raises(StoreError):
            await store.commit(calls=[call])
    with pytest.raises(StoreError):
        await store.commit(calls=["not a call"])  # type: ignore[list-item]
    assert await store.wallet_calls() == []
    assert not await store.has_entry("k")


@pytest.mark.parametrize("kind", KINDS)
async def test_calls_survive_the_store_opened_again(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    first = make_store(kind, request, tmp_path)
    await first.open()
    await first.commit(calls=[wcall("a"), wcall("b", next_at=NOW + 5), wcall("c", "debit")])
    await first.update_wallet_call("a", {"state": "acknowledged", "answer": {"status": "ok"}})
    listed = await first.wallet_calls()
    await first.close()
    second = make_store(kind, request, tmp_path)
    await second.open()
    try:
        assert await second.wallet_calls() == listed
        assert [c["transaction_id"] for c in await second.due_wallet_calls(NOW + 5)] == ["b"]
        await second.commit(calls=[wcall("d")])
        assert (await second.wallet_call("d") or {})["seq"] > listed[0]["seq"]
    finally:
        await second.close()


async def test_a_closed_store_raises_store_error(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    closed = make_store(kind, request, tmp_path)
    for call in (
        closed.commit(calls=[wcall("a")]),
        closed.update_wallet_call("a", {"state": "failed"}),
        closed.due_wallet_calls(NOW),
        closed.wallet_call("a"),
        closed.wallet_calls(),
        closed.wallet_totals(),
    ):
        with pytest.raises(StoreError):
            await call


@pytest.mark.slow
async def test_redis_down_is_unavailable_for_the_calls_and_back_is_fine(
    make_redis: Callable[..., RedisServer],
) -> None:
    server = make_redis()
    store = RedisStore(server.url())
    await store.open()
    try:
        await store.commit(calls=[wcall("a")])
        server.stop()
        for call in (
            store.commit(calls=[wcall("b")]),
            store.update_wallet_call("a", {"state": "failed"}),
            store.due_wallet_calls(NOW),
            store.wallet_call("a"),
            store.wallet_calls(),
            store.wallet_totals(),
        ):
            with pytest.raises(StoreUnavailable):
                await call
        server.start()  # the AOF brings back what was stored
        assert [c["transaction_id"] for c in await store.due_wallet_calls(NOW)] == ["a"]
        await store.commit(calls=[wcall("b")])
        assert await seqs(store) == ["b", "a"]
    finally:
        await store.close()


async def test_sqlite_an_older_file_gains_the_calls_table(tmp_path: Path) -> None:
    path = tmp_path / "chemmy.sqlite3"
    first = SQLiteStore(path)
    await first.open()
    await first.ensure_player("ann", "Ann", 1000)
    await first.close()
    raw = sqlite3.connect(path)  # as a server before the outbox left it
    raw.execute("DROP TABLE wallet_calls")
    raw.commit()
    raw.close()
    second = SQLiteStore(path)
    await second.open()
    try:
        assert await second.player_money("ann") == (1000, 1000)
        await second.commit(calls=[wcall("a")])
        assert [c["transaction_id"] for c in await second.due_wallet_calls(NOW)] == ["a"]
    finally:
        await second.close()
    raw = sqlite3.connect(path)
    try:
        plan = " ".join(
            str(row)
            for row in raw.execute(
                "EXPLAIN QUERY PLAN SELECT data FROM wallet_calls WHERE state = 'pending'"
                " AND next_at <= 1 ORDER BY next_at, seq LIMIT 5"
            )
        )
        assert "wallet_calls_due" in plan and "TEMP B-TREE" not in plan, plan
        # The database keeps the calls too: fixed fields stay, and none is deleted.
        with pytest.raises(sqlite3.DatabaseError, match="progress"):
            raw.execute("UPDATE wallet_calls SET amount = 1")
        with pytest.raises(sqlite3.DatabaseError, match="kept"):
            raw.execute("DELETE FROM wallet_calls")
        raw.execute("UPDATE wallet_calls SET state = 'failed'")  # its progress may change
    finally:
        raw.close()


async def test_redis_keys_of_the_calls(redis_url: str) -> None:
    """The keys of docs/architecture.md §10; the due set holds the pending calls only."""
    store = RedisStore(redis_url)
    await store.open()
    raw = aioredis.Redis.from_url(redis_url)
    try:
        await store.commit(calls=[wcall("a"), wcall("b", state="failed"), wcall("c")])
        keys = sorted([k.decode() async for k in raw.scan_iter(match="chemmy:wcall:*")])
        names = ("data", "due", "order", "seq")
        assert keys == [f"chemmy:wcall:{name}" for name in names]
        assert await raw.zrange("chemmy:wcall:due", 0, -1) == [b"a", b"c"]
        await store.update_wallet_call("a", {"state": "acknowledged"})
        assert await raw.zrange("chemmy:wcall:due", 0, -1) == [b"c"]
        assert await raw.zrange("chemmy:wcall:order", 0, -1, withscores=True) == [
            (b"a", 1.0),
            (b"b", 2.0),
            (b"c", 3.0),
        ]
    finally:
        await raw.aclose()
        await store.close()


async def test_redis_reads_the_indexes_in_pages(redis_url: str) -> None:
    """Filters and kinds are applied after reading the ordered indexes page by page:
    a match far down, behind many that do not match, is still found."""
    store = RedisStore(redis_url)
    await store.open()
    try:
        await store.commit(calls=[wcall("old", player="bob", next_at=NOW + 900)])
        debits = [wcall(f"d{n}", "debit", next_at=NOW + n) for n in range(700)]
        await store.commit(calls=debits)
        assert await seqs(store, player="bob") == ["old"]
        [due] = await store.due_wallet_calls(NOW + 1000)
        assert due["transaction_id"] == "old"
        assert len(await store.due_wallet_calls(NOW + 1000, kinds=["debit"], limit=1000)) == 700
        assert len(await store.wallet_calls(kind="debit", limit=650)) == 650
        # Ties of next_at go by seq, even across pages (the set orders them by name).
        await store.commit(calls=[wcall(f"c{999 - n}", next_at=NOW + 2000) for n in range(600)])
        due_now = await store.due_wallet_calls(NOW + 2000, limit=2)
        assert [c["transaction_id"] for c in due_now] == ["old", "c999"]
        await store.update_wallet_call("old", {"state": "acknowledged"})
        due_now = await store.due_wallet_calls(NOW + 2000, limit=1000)
        assert [c["transaction_id"] for c in due_now] == [f"c{999 - n}" for n in range(600)]
    finally:
        await store.close()
