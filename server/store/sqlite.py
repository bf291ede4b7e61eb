"""The default :class:`~server.store.base.Store`: one SQLite file, zero set-up.

Standard library ``sqlite3``, one connection, WAL journal (readers never block the
writer), ``synchronous=NORMAL`` (a commit is durable against a process crash; a power
cut may lose the last few commits but never corrupts the file) and foreign keys on.
The schema is created when the store is opened (``PRAGMA user_version`` names its
version).

The methods are coroutines but do their work synchronously inside the ``async def``:
the file is local, each call is short (a handful of indexed statements), and running
them on the event loop's thread keeps writes in exactly the order they were asked for,
with no thread pool and no interleaving between a check and its write. Every call that
writes runs in one ``BEGIN IMMEDIATE`` transaction, rolled back on any error.

The database keeps the rules too, as a second line of defence: a ``CHECK`` keeps player
balances non-negative and ledger amounts positive, foreign keys tie ledger entries to
accounts and round index rows to rounds, and triggers make the ledger append-only.

It must never be shared by two processes writing (a cluster uses the Redis store),
never let a ``sqlite3`` exception escape (they become :class:`StoreError`), and never
hold a transaction open across an ``await``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

from server.store.base import (
    HISTORY_LIMIT,
    KeyConflict,
    Overdrawn,
    RoundIndex,
    StoreError,
    TableRow,
    check_balance,
    check_entry,
    dump_json,
    index_record,
    welcome_entry,
)
from server.table.wallet import Entry, player_account

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

SCHEMA_VERSION: Final = 1

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS accounts (
    account TEXT PRIMARY KEY,
    balance INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT no_overdraft CHECK (balance >= 0 OR substr(account, 1, 7) <> 'player:')
);
CREATE TABLE IF NOT EXISTS ledger (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    src TEXT NOT NULL REFERENCES accounts (account),
    dst TEXT NOT NULL REFERENCES accounts (account),
    amount INTEGER NOT NULL CHECK (amount > 0),
    kind TEXT NOT NULL,
    round_id TEXT,
    CHECK (src <> dst)
);
CREATE INDEX IF NOT EXISTS ledger_src ON ledger (src, seq);
CREATE INDEX IF NOT EXISTS ledger_dst ON ledger (dst, seq);
CREATE TRIGGER IF NOT EXISTS ledger_no_update BEFORE UPDATE ON ledger
BEGIN SELECT RAISE (ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS ledger_no_delete BEFORE DELETE ON ledger
BEGIN SELECT RAISE (ABORT, 'the ledger is append-only'); END;
CREATE TABLE IF NOT EXISTS players (
    player_id TEXT PRIMARY KEY,
    name TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tables (
    table_id TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    state TEXT NOT NULL,
    seq INTEGER NOT NULL,
    closed INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS rounds (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    round_id TEXT NOT NULL UNIQUE,
    table_id TEXT NOT NULL,
    shoe_no INTEGER NOT NULL,
    coup_no INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS rounds_table ON rounds (table_id, shoe_no, coup_no);
CREATE TABLE IF NOT EXISTS round_players (
    player_id TEXT NOT NULL,
    round_seq INTEGER NOT NULL REFERENCES rounds (seq) ON DELETE CASCADE,
    PRIMARY KEY (player_id, round_seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS round_players_round ON round_players (round_seq);
CREATE TABLE IF NOT EXISTS shoes (
    table_id TEXT NOT NULL,
    shoe_no INTEGER NOT NULL,
    revealed INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (table_id, shoe_no)
) WITHOUT ROWID;
"""

#: How long a statement waits for another connection's lock (a reader such as a
#: backup) before failing, in milliseconds. Short: the wait blocks the event loop.
BUSY_TIMEOUT_MS: Final = 1000


class SQLiteStore:
    """A :class:`~server.store.base.Store` in one SQLite file at ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._db: sqlite3.Connection | None = None

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # -- lifecycle -------------------------------------------------------------------
    async def open(self) -> None:
        if self._db is not None:
            return
        try:
            db = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA foreign_keys = ON")
            (version,) = db.execute("PRAGMA user_version").fetchone()
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has schema version {version}, newer than {SCHEMA_VERSION}"
                )
            db.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";\n"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except (sqlite3.Error, StoreError) as exc:
            db.close()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        self._db = db

    async def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            try:
                db.execute("PRAGMA optimize")
            except sqlite3.Error:
                pass
            finally:
                db.close()

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """The open connection, with third-party errors translated at the boundary."""
        if self._db is None:
            raise StoreError("the store is not open")
        try:
            yield self._db
        except sqlite3.IntegrityError as exc:
            if "no_overdraft" in str(exc):
                raise Overdrawn("a player's balance would go negative") from exc
            raise StoreError(f"integrity: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"sqlite: {exc}") from exc
        except OverflowError as exc:  # an integer wider than SQLite's 64 bits
            raise StoreError(f"out of range: {exc}") from exc

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connection() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    # -- players and balances --------------------------------------------------------
    async def ensure_player(self, player_id: str, name: str, initial_balance: int) -> int:
        if initial_balance < 0:
            raise StoreError("an initial balance is not negative")
        account = player_account(player_id)
        with self._transaction() as db:
            known = db.execute("SELECT 1 FROM players WHERE player_id = ?", (player_id,))
            if known.fetchone() is None:
                db.execute("INSERT OR IGNORE INTO accounts (account) VALUES (?)", (account,))
                if initial_balance > 0:
                    _post(db, [welcome_entry(player_id, initial_balance)])
            db.execute(
                "INSERT INTO players (player_id, name) VALUES (?, ?)"
                " ON CONFLICT (player_id) DO UPDATE SET name = excluded.name",
                (player_id, name),
            )
            return _balance(db, account)

    async def player_name(self, player_id: str) -> str | None:
        with self._connection() as db:
            row = db.execute("SELECT name FROM players WHERE player_id = ?", (player_id,))
            found = row.fetchone()
            return None if found is None else str(found[0])

    async def load_balances(self) -> dict[str, int]:
        with self._connection() as db:
            return dict(db.execute("SELECT account, balance FROM accounts"))

    async def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        with self._connection() as db:
            return {account: _balance(db, account) for account in accounts}

    async def has_entry(self, key: str) -> bool:
        with self._connection() as db:
            return db.execute("SELECT 1 FROM ledger WHERE key = ?", (key,)).fetchone() is not None

    # -- the one write ---------------------------------------------------------------
    async def commit(
        self,
        *,
        entries: Sequence[Entry] = (),
        table: TableRow | None = None,
        records: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        # Check and serialize everything before the transaction begins.
        for entry in entries:
            check_entry(entry)
        table_json = None
        if table is not None:
            table_json = (dump_json(table.config), dump_json(table.state))
        prepared = [(index_record(record), dump_json(record)) for record in records]
        with self._transaction() as db:
            inserted = _post(db, entries)
            if table is not None and table_json is not None:
                db.execute(
                    "INSERT INTO tables (table_id, config, state, seq, closed)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (table_id) DO UPDATE SET"
                    " config = excluded.config, state = excluded.state,"
                    " seq = excluded.seq, closed = excluded.closed",
                    (table.table_id, *table_json, table.seq, int(table.closed)),
                )
            for index, body in prepared:
                if isinstance(index, RoundIndex):
                    _put_round(db, index, body)
                else:
                    db.execute(
                        "INSERT INTO shoes (table_id, shoe_no, revealed, body) VALUES"
                        " (?, ?, ?, ?) ON CONFLICT (table_id, shoe_no) DO UPDATE SET"
                        " revealed = excluded.revealed, body = excluded.body",
                        (index.table, index.shoe_no, int(index.revealed), body),
                    )
            return inserted

    # -- tables ----------------------------------------------------------------------
    async def load_tables(self) -> list[TableRow]:
        with self._connection() as db:
            rows = db.execute(
                "SELECT table_id, config, state, seq, closed FROM tables"
                " WHERE closed = 0 ORDER BY rowid"
            ).fetchall()
        return [
            TableRow(table_id, json.loads(config), json.loads(state), seq, bool(closed))
            for table_id, config, state, seq, closed in rows
        ]

    async def save_table(self, row: TableRow) -> None:
        await self.commit(table=row)

    # -- records ---------------------------------------------------------------------
    async def history(self, player_id: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        limit = max(0, min(limit, HISTORY_LIMIT))
        with self._connection() as db:
            rows = db.execute(
                "SELECT rounds.body FROM round_players"
                " JOIN rounds ON rounds.seq = round_players.round_seq"
                " WHERE round_players.player_id = ?"
                " ORDER BY round_players.round_seq DESC LIMIT ?",
                (player_id, limit),
            ).fetchall()
        return [json.loads(body) for (body,) in rows]

    async def round_record(self, round_id: str) -> dict[str, Any] | None:
        with self._connection() as db:
            row = db.execute("SELECT body FROM rounds WHERE round_id = ?", (round_id,))
            found = row.fetchone()
        return None if found is None else dict(json.loads(found[0]))

    async def shoe_record(self, table_id: str, shoe_no: int | None = None) -> dict[str, Any] | None:
        with self._connection() as db:
            if shoe_no is None:
                cursor = db.execute(
                    "SELECT body FROM shoes WHERE table_id = ? AND revealed = 1"
                    " ORDER BY shoe_no DESC LIMIT 1",
                    (table_id,),
                )
            else:
                cursor = db.execute(
                    "SELECT body FROM shoes WHERE table_id = ? AND shoe_no = ?",
                    (table_id, shoe_no),
                )
            found = cursor.fetchone()
        return None if found is None else dict(json.loads(found[0]))

    async def shoe_records(self, table_id: str, limit: int = 20) -> list[dict[str, Any]]:
        with self._connection() as db:
            rows = db.execute(
                "SELECT body FROM shoes WHERE table_id = ? ORDER BY shoe_no DESC LIMIT ?",
                (table_id, max(0, limit)),
            ).fetchall()
        return [json.loads(body) for (body,) in rows]

    # -- checking --------------------------------------------------------------------
    async def ledger(self, account: str | None = None, limit: int = 1000) -> list[Entry]:
        columns = "key, src, dst, amount, kind, round_id"
        with self._connection() as db:
            if account is None:
                cursor = db.execute(
                    f"SELECT {columns} FROM ledger ORDER BY seq DESC LIMIT ?", (max(0, limit),)
                )
            else:
                cursor = db.execute(
                    f"SELECT {columns} FROM ledger WHERE src = ? OR dst = ?"
                    " ORDER BY seq DESC LIMIT ?",
                    (account, account, max(0, limit)),
                )
            return [Entry(*row) for row in cursor]

    async def audit(self) -> dict[str, Any]:
        with self._connection() as db:
            balances: dict[str, int] = dict(db.execute("SELECT account, balance FROM accounts"))
            flows: dict[str, int] = dict(
                db.execute(
                    "SELECT account, SUM(amount) FROM ("
                    " SELECT dst AS account, amount FROM ledger"
                    " UNION ALL SELECT src AS account, -amount FROM ledger"
                    ") GROUP BY account"
                )
            )
            (count,) = db.execute("SELECT COUNT(*) FROM ledger").fetchone()
        accounts = balances.keys() | flows.keys()
        return {
            "sum": sum(balances.values()),
            "ledger_matches": all(balances.get(a, 0) == flows.get(a, 0) for a in accounts),
            "entries": count,
        }


# -- statements run inside a transaction ------------------------------------------------


def _balance(db: sqlite3.Connection, account: str) -> int:
    row = db.execute("SELECT balance FROM accounts WHERE account = ?", (account,)).fetchone()
    return 0 if row is None else int(row[0])


def _post(db: sqlite3.Connection, entries: Iterable[Entry]) -> int:
    """Insert the entries not yet in the ledger and move their balances, in order."""
    inserted = 0
    for entry in entries:
        old = db.execute(
            "SELECT key, src, dst, amount, kind, round_id FROM ledger WHERE key = ?",
            (entry.key,),
        ).fetchone()
        if old is not None:
            if Entry(*old) != entry:
                raise KeyConflict(f"ledger key {entry.key!r} holds a different entry")
            continue
        db.executemany(
            "INSERT OR IGNORE INTO accounts (account) VALUES (?)", ((entry.src,), (entry.dst,))
        )
        # Checked here, before SQLite's CHECK (and before its arithmetic, which turns to
        # floating point past 64 bits).
        check_balance(entry.src, _balance(db, entry.src) - entry.amount)
        check_balance(entry.dst, _balance(db, entry.dst) + entry.amount)
        db.execute(
            "UPDATE accounts SET balance = balance - ? WHERE account = ?",
            (entry.amount, entry.src),
        )
        db.execute(
            "UPDATE accounts SET balance = balance + ? WHERE account = ?",
            (entry.amount, entry.dst),
        )
        db.execute(
            "INSERT INTO ledger (key, src, dst, amount, kind, round_id) VALUES (?, ?, ?, ?, ?, ?)",
            (entry.key, entry.src, entry.dst, entry.amount, entry.kind, entry.round_id),
        )
        inserted += 1
    return inserted


def _put_round(db: sqlite3.Connection, index: RoundIndex, body: str) -> None:
    """Upsert a round record (keeping its place in history) and re-index its players."""
    db.execute(
        "INSERT INTO rounds (round_id, table_id, shoe_no, coup_no, body) VALUES"
        " (?, ?, ?, ?, ?) ON CONFLICT (round_id) DO UPDATE SET table_id = excluded.table_id,"
        " shoe_no = excluded.shoe_no, coup_no = excluded.coup_no, body = excluded.body",
        (index.round_id, index.table, index.shoe_no, index.coup_no, body),
    )
    (seq,) = db.execute("SELECT seq FROM rounds WHERE round_id = ?", (index.round_id,)).fetchone()
    db.execute("DELETE FROM round_players WHERE round_seq = ?", (seq,))
    db.executemany(
        "INSERT INTO round_players (player_id, round_seq) VALUES (?, ?)",
        ((player, seq) for player in index.players),
    )
