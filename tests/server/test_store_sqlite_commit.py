"""What one SQLite commit does in the file (issue 23, capacity): the statements of a
lone step are few, and the shortcuts that made them few keep the file as it was (a
ledger whose seqs have no gap, whatever was retried or refused)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from server.store import KeyConflict, Overdrawn, SQLiteStore
from server.table.wallet import CASHIER, Entry
from tests.server.test_store import bet


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    made = SQLiteStore(tmp_path / "chemmy.sqlite3")
    await made.open()
    await made.ensure_player("ann", "Ann", 1000)
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
    assert ledger_seqs(store) == ([1, 2, 3, 4], 4)  # the welcome, k1, k3, d1
