"""What one SQLite commit does in the file (issue 23, capacity): the statements of a
lone step are few, and the shortcuts that made them few keep the file as it was (a
ledger whose seqs have no gap, whatever was retried or refused)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest

from server.ledger.accounts import CASHIER, Entry
from server.protocol.errors import KeyConflict, Overdrawn, StoreUnavailable
from server.store import SQLiteStore
from tests.server.test_store import bet
from tests.server.test_store_group_commit import step


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    made = SQLiteStore(tmp_path / "chemmy.sqlite3")
    await made.open()
    await made.ensure_player("ann", "Ann", 1000)
    await made.ensure_player("p0", "P0", 1000)
    yield made
    await made.close()


def ledger_seqs(store: SQLiteStore) -> tuple[list[int], int]:
    """The ledger's seqs, and the last one ``AUTOINCREMENT`` gave, read from the file."""
    raw = sqlite3.connect(store.path)
    try:
        seqs = [seq for (seq,) in raw.execute("SELECT seq FROM ledger ORDER BY seq")]
        (last,) = raw.execute("SELECT seq FROM sqlite_sequence WHERE name = 'ledger'").fetchone()
        return seqs, last
    finally:
        raw.close()


async def test_retried_and_refused_entries_leave_no_gap_in_the_ledgers_seqs(
    store: SQLiteStore,
) -> None:
    await store.commit(entries=[bet("k1", "ann", 10)])
    assert (await store.commit(entries=[bet("k1", "ann", 10)])).inserted == 0  # a retry
    with pytest.raises(KeyConflict):
        await store.commit(entries=[bet("k1", "ann", 11)])
    with pytest.raises(Overdrawn):
        await store.commit(entries=[bet("k2", "ann", 5000)])
    await store.commit(entries=[bet("k3", "ann", 10), Entry("d1", CASHIER, "player:bob", 7, "x")])
    assert ledger_seqs(store) == ([1, 2, 3, 4, 5], 5)  # the two welcomes, k1, k3, d1


async def test_a_retry_in_the_same_transaction_is_skipped(store: SQLiteStore) -> None:
    """A step and its retry committed together (one transaction, a savepoint each): the
    retry's insert is refused inside its savepoint and the entry skipped."""
    groups = store.groups
    first, again = await asyncio.gather(store.commit(**step(0, 1)), store.commit(**step(0, 1)))
    assert store.groups == groups + 1
    assert (first.inserted, again.inserted) == (1, 0)
    assert first.balances == again.balances == {"player:p0": 990}
    assert ledger_seqs(store) == ([1, 2, 3], 3)  # the two welcomes, the stake


class Counting:
    """The store's connection, noting the statements it is given."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.statements: list[str] = []

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.statements.append(sql)
        return self.db.execute(sql, *args)

    def executemany(self, sql: str, rows: Iterable[Any]) -> sqlite3.Cursor:
        self.statements.append(sql)
        return self.db.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)

    def take(self) -> list[str]:
        """The statements since the last take, each cut to its first words."""
        taken, self.statements = self.statements, []
        return [" ".join(sql.split()[:3]) for sql in taken]


def counting(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> Counting:
    assert store._db is not None
    counted = Counting(store._db)
    monkeypatch.setattr(store, "_db", counted)
    return counted


async def test_a_lone_bet_step_is_nine_statements(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bet of a table already stored, between accounts that exist: the row (its
    fencing check inside), the last event's seq, the event, the events' prune, the
    entry, both balances, the player's flows of the day (their old days were pruned by
    their first flow of the day)."""
    await store.commit(**step(0, 1))  # the table's first row, its stake made
    counted = counting(store, monkeypatch)
    direct = store.direct
    result = await store.commit(**step(0, 2))
    assert result.inserted == 1 and result.balances == {"player:p0": 980}
    assert store.direct == direct + 1  # committed on the loop
    assert counted.take() == [
        "BEGIN IMMEDIATE",
        "INSERT INTO tables",
        "SELECT coalesce(max(seq), -1)",
        "INSERT INTO events",
        "DELETE FROM events",
        "INSERT INTO ledger",
        "UPDATE accounts SET",
        "INSERT INTO player_days",
        "COMMIT",
    ]
    retried = await store.commit(**step(0, 2))  # the same step again: kept once
    assert retried.inserted == 0 and retried.balances == {"player:p0": 980}
    assert counted.take() == [
        "BEGIN IMMEDIATE",
        "INSERT INTO tables",
        "SELECT coalesce(max(seq), -1)",  # its event not above the last stored: skipped
        "INSERT INTO ledger",  # refused: the key is taken
        "SELECT key, src,",  # the entry under the key, the same: skipped
        "SELECT balance FROM",  # the player's, for the answer
        "COMMIT",
    ]


async def test_the_busy_timeout_is_set_as_the_connection_changes_threads(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0 on the loop (a lock held elsewhere fails a direct commit at once), the store's
    busy timeout in the worker (which waits for it): set when the connection passes
    from one to the other, not around each direct commit."""
    counted = counting(store, monkeypatch)

    def pragmas() -> list[str]:
        return [sql for sql in counted.statements if sql.startswith("PRAGMA busy_timeout =")]

    def timeout(db: sqlite3.Connection) -> int:
        return int(db.execute("PRAGMA busy_timeout").fetchone()[0])

    await store.commit(entries=[bet("k1", "ann", 1)])  # after the fixture's worker jobs
    await store.commit(entries=[bet("k2", "ann", 1)])
    assert await store.balances(["player:ann"]) == {"player:ann": 998}  # a direct read
    assert pragmas() == ["PRAGMA busy_timeout = 0"]
    assert await store._read(timeout) == 0
    assert await store._run(timeout) == 3000
    await store.commit(entries=[bet("k3", "ann", 1)])
    assert pragmas()[1:] == ["PRAGMA busy_timeout = 3000", "PRAGMA busy_timeout = 0"]
    assert await store._read(timeout) == 0


async def test_a_direct_read_that_meets_a_lock_is_made_by_the_worker(store: SQLiteStore) -> None:
    """``BUSY`` on the loop (where the busy timeout is 0) sends the read to the worker,
    which waits for the lock; any other failure is the caller's at once."""
    loop_thread = threading.current_thread()
    ran: list[bool] = []  # on the loop's thread?

    def read(db: sqlite3.Connection, code: int) -> int:
        ran.append(threading.current_thread() is loop_thread)
        if ran[-1]:
            failure = sqlite3.OperationalError("database is locked")
            failure.sqlite_errorcode = code  # type: ignore[attr-defined]
            raise failure
        return int(db.execute("SELECT count(*) FROM accounts").fetchone()[0])

    assert await store._read(read, 5) == 3  # SQLITE_BUSY: the worker read it
    assert ran == [True, False]
    ran.clear()
    with pytest.raises(StoreUnavailable):
        await store._read(read, 10)  # SQLITE_IOERR: not retried
    assert ran == [True]
