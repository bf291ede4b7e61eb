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

from server.ledger.accounts import CASHIER, HOUSE, Entry
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


# -- a settlement's many entries, posted together (issue 37) ------------------------------
PLAYERS = 40


async def seated_players(store: SQLiteStore) -> None:
    """``PLAYERS`` players with 1,000 each, their stakes at t1 made, and the house."""
    for i in range(PLAYERS):
        await store.ensure_player(f"q{i}", f"Q{i}", 1000)
    await store.commit(entries=[bet(f"seat:{i}", f"q{i}", 100) for i in range(PLAYERS)])
    await store.commit(entries=[Entry("house:0", "player:q0", HOUSE, 1, "lose")])


def settlement(round_id: str, *, amount: int = 10) -> list[Entry]:
    """A settlement's entries: each player loses ``amount`` from their stake to the house,
    every other one is paid back and wins twice it (an account moved several times)."""
    out = []
    for i in range(PLAYERS):
        stake, player = f"stake:t1:q{i}", f"player:q{i}"
        out.append(Entry(f"{round_id}:q{i}:lose", stake, HOUSE, amount, "lose", round_id))
        if i % 2:
            out.append(Entry(f"{round_id}:q{i}:win", HOUSE, player, 2 * amount, "win", round_id))
    return out


def books(store: SQLiteStore) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The ledger's rows (seq first) and every account's balance, read from the file."""
    raw = sqlite3.connect(store.path)
    try:
        ledger = raw.execute(
            "SELECT seq, key, src, dst, amount, kind, round_id FROM ledger ORDER BY seq"
        ).fetchall()
        accounts = raw.execute("SELECT account, balance FROM accounts ORDER BY account")
        return ledger, accounts.fetchall()
    finally:
        raw.close()


async def test_a_settlements_entries_are_posted_in_a_few_statements_off_the_loop(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sixty entries between accounts that exist: their balances read at once, checked
    in order, the entries inserted in one ``executemany`` and each account written once
    (not an insert and a move an entry); a commit of more than ``DIRECT_MOST`` rows is
    made in the store's thread, never on the loop's (here 100: the largest commits)."""
    from server.store.sqlite import connection

    monkeypatch.setattr(connection, "DIRECT_MOST", 100)
    await seated_players(store)
    counted = counting(store, monkeypatch)
    direct = store.direct
    entries = settlement("r2") + settlement("r3")  # 120 entries
    result = await store.commit(entries=entries)
    assert result.inserted == 120
    assert store.direct == direct  # in the worker's thread
    taken = counted.take()
    assert "UPDATE accounts SET" in taken  # once, for all the accounts
    assert len(taken) <= 10, taken
    assert not [s for s in counted.statements if "iif" in s]
    balances = await store.balances([f"player:q{i}" for i in range(PLAYERS)] + [HOUSE])
    # the welcome 1,000, less the seat's 100 (q0 also lost 1), plus 2 x 20 won by the odd
    assert balances["player:q1"] == 1000 - 100 + 40 and balances["player:q2"] == 900
    assert (await store.audit())["sum"] == 0


@pytest.mark.parametrize("retried", [False, True])
async def test_posting_together_keeps_what_posting_one_at_a_time_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retried: bool
) -> None:
    """The same commits on two files, one posting every entry by itself: the same
    answers, the same ledger rows in the same order, the same balances. ``retried``:
    each commit is made twice (its keys stored already: posted one at a time, none
    kept twice), and one mixes stored keys and new ones."""
    from server.store.sqlite import rows

    kept: list[Any] = []
    for together in (True, False):
        monkeypatch.setattr(rows, "POST_TOGETHER", 8 if together else 10**9)
        store = SQLiteStore(tmp_path / f"together-{together}.sqlite3")
        await store.open()
        try:
            await seated_players(store)
            answers = []
            for r in range(3):
                entries = settlement(f"r{r}", amount=10 + r)
                for _ in range(2 if retried else 1):
                    done = await store.commit(entries=entries)
                    answers.append((done.inserted, sorted(done.balances.items())))
            if retried:
                mixed = settlement("r2", amount=12)[:5] + settlement("r9")
                done = await store.commit(entries=mixed)
                answers.append((done.inserted, sorted(done.balances.items())))
            firsts = first_bets("t2")  # (their stakes at t2 made by the commit)
            done = await store.commit(entries=firsts)
            answers.append((done.inserted, sorted(done.balances.items())))
            kept.append((answers, books(store), (await store.audit())["sum"]))
        finally:
            await store.close()
    assert kept[0] == kept[1]
    assert kept[0][2] == 0


def first_bets(table: str) -> list[Entry]:
    """Every player's first bet at ``table``: each into a stake account not made yet."""
    return [
        Entry(f"{table}:q{i}:1", f"player:q{i}", f"stake:{table}:q{i}", 5 + i, "stake", "")
        for i in range(PLAYERS)
    ]


async def test_a_commit_that_makes_accounts_is_posted_together(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forty first bets at a new table (each one's stake made by it): the accounts made
    in one statement, the entries in one, each account written once, not two statements
    an entry and a read and an insert an account (a burst with one newcomer, or a new
    file's first settlement into the house, was posted one entry at a time)."""
    await seated_players(store)
    counted = counting(store, monkeypatch)
    done = await store.commit(entries=first_bets("t2"))
    assert done.inserted == PLAYERS
    taken = counted.take()
    assert len(taken) <= 10, taken
    assert not [s for s in counted.statements if "iif" in s]
    balances = await store.balances(["player:q3", "stake:t2:q3"])
    assert balances == {"player:q3": 1000 - 100 - 8, "stake:t2:q3": 8}
    overdrawn = [Entry("t3:q1:1", "player:q1", "stake:t3:q1", 5000, "stake", ""), *first_bets("t3")]
    with pytest.raises(Overdrawn):  # refused whole: no account made either
        await store.commit(entries=overdrawn)
    assert not [a for a, _ in books(store)[1] if a.startswith("stake:t3:")]


async def test_an_overdraft_anywhere_in_a_commit_posted_together_refuses_it_whole(
    store: SQLiteStore,
) -> None:
    """The moves are checked in their order, as one statement each would be: a stake
    that goes below zero midway is refused though the commit's later entries would bring
    it back; nothing of the commit is kept."""
    await seated_players(store)
    before = books(store)
    entries = settlement("r2")
    dip = [
        Entry("r2:q3:over", "stake:t1:q3", HOUSE, 95, "lose", "r2"),  # 100 - 10 - 95 < 0
        Entry("r2:q3:back", "player:q3", "stake:t1:q3", 500, "stake", "r2"),
    ]
    with pytest.raises(Overdrawn):
        await store.commit(entries=entries[:6] + dip + entries[6:])
    assert books(store) == before
    with pytest.raises(KeyConflict):  # a stored key with another amount: refused whole
        await store.commit(entries=[*settlement("r4"), bet("seat:1", "q1", 99)])
    assert books(store) == before
