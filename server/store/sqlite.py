"""The default :class:`~server.store.base.Store`: one SQLite file, zero set-up.

Standard library ``sqlite3``, one connection, WAL journal (readers never block the
writer), ``synchronous=NORMAL`` (a commit is durable against a process crash; a power
cut may lose the last few commits but never corrupts the file) and foreign keys on.
The schema is created, or migrated from an older version, when the store is opened
(``PRAGMA user_version`` names its version; version 1 files are migrated in place,
and a file whose ``rounds`` lack the ``time`` column of the round search gains it,
filled from each record's JSON).

**No call blocks the event loop** (issue 9): the connection lives in one dedicated
worker thread and every call runs there, in the order the calls were made (one
thread, one FIFO queue). A check and its write are one job, so nothing
interleaves between them, and every call that writes is one ``BEGIN IMMEDIATE``
transaction, rolled back on any error, but for commits (issue 23, group commit): the
commits queued at the moment the thread takes one (at most :data:`GROUP_MAX`; a lone
commit waits for no company) run in one transaction, each in its own savepoint (one
refused is rolled back to it and answered with its own exception, the others stay),
then one ``COMMIT``; each caller is answered after that ``COMMIT``, and a ``COMMIT``
that fails fails every commit of the group. While another process holds the write lock the
worker waits up to ``busy_timeout_ms`` (then :class:`StoreUnavailable`); the loop goes on
serving everyone meanwhile. A caller cancelled while its job runs does not stop the
job: cancellation never leaves half a transaction.

**Direct commits** (issue 23): while the worker holds no job, the commits called in one
turn of the loop are committed together by the loop itself at the end of that turn, in
one transaction as the worker would, and the hot reads (a bet's restriction and limits,
balances) are made on the loop too: the hop to the thread and back (two thread
wake-ups, ~0.1 ms on these machines) was a lone ``bet``'s largest piece. What could make
the loop wait is kept off that path: ``BUSY`` at ``BEGIN`` (another process holds the
write lock) hands the commits to the worker, which waits (the connection's busy timeout
is 0 while the loop uses it, ``busy_timeout_ms`` in the worker: set as it passes from one
to the other), and a direct read that meets a lock goes to the worker too; SQLite's
automatic checkpoints, which fsync, are off, and the worker runs a ``PASSIVE`` one every
:data:`CHECKPOINT_EVERY` transactions; and a direct read or commit that still waited
more than :data:`DIRECT_SLOW` (its wall time less the loop's own CPU time: a disk that
makes even a WAL append or a cached read wait) turns direct use off for 30 s, doubled
each time (at most 10 min). So a slow disk can stall the loop for one commit, not for
the next ones (docs/architecture.md §10).
A call queued for the worker while commits are held takes them along first: the calls
still run in the order they were made. ``direct=False`` keeps everything in the thread.

The database keeps the rules too, as a second line of defence: a ``CHECK`` and a
trigger keep player and stake balances non-negative, a ``CHECK`` keeps ledger amounts
positive, foreign keys tie ledger entries to accounts and round index rows to rounds,
and triggers make the ledger append-only (an expired guest's welcome is the one entry
that may go) and keep every wallet call, changed only in its progress.

It must never be shared by two processes writing (many processes use the Redis store),
never let a ``sqlite3`` exception escape (they become :class:`StoreError`, or
:class:`StoreUnavailable` for a busy or failing disk), and never touch its connection
outside the worker thread but while the worker holds no job (:attr:`_Worker.pending`).
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import json
import logging
import os
import queue
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Final, TypeVar

from server.store.base import (
    EVENT_RETENTION,
    HISTORY_LIMIT,
    AckRule,
    BetReads,
    CommitResult,
    LimitGuard,
    LimitsRule,
    Overdrawn,
    PlayRule,
    RestrictionRule,
    RoundIndex,
    RoundQuery,
    StoreError,
    StoreInUse,
    StoreUnavailable,
    TableRow,
    audit_report,
    check_currency,
    check_day,
    check_due_kinds,
    check_due_time,
    check_operator_call,
    check_play_open,
    check_play_time,
    check_span,
    check_wallet_changes,
    current_limits,
    dump_json,
    flow_buckets,
    follows,
    guard_breach,
    guard_measure,
    hold_problems,
    merge_wallet_call,
    operator_call_record,
    own_copy,
    play_baseline,
    round_query,
    wallet_filters,
    wallet_limit,
    wallet_totals,
)
from server.store.ledger import (
    FLOW_NAMES,
    OUTCOME_KINDS,
    SQL_PLAYER_NO_OVERDRAFT,
    SQL_STAKE_NO_OVERDRAFT,
    SQL_WELCOME_OWNER,
    add_flows,
    check_balance,
    check_entry,
    check_epoch,
    flow_day,
    stake_account,
    stored_again,
    welcome_entry,
)
from server.store.plan import CommitPlan, plan_commit
from server.table.wallet import CASHIER, Entry, player_account

__all__ = ["BUSY_TIMEOUT_MS", "SCHEMA_VERSION", "SQLiteStore"]

SCHEMA_VERSION: Final = 2

#: The whole schema at :data:`SCHEMA_VERSION` (a new file).
_SCHEMA: Final = (
    """
CREATE TABLE IF NOT EXISTS accounts (
    account TEXT PRIMARY KEY,
    balance INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT no_overdraft """
    + SQL_PLAYER_NO_OVERDRAFT
    + """
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
CREATE TABLE IF NOT EXISTS players (
    player_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    guest INTEGER NOT NULL DEFAULT 0,
    seen REAL NOT NULL DEFAULT 0
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
    body TEXT NOT NULL,
    time REAL NOT NULL DEFAULT 0
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
)

#: What version 2 adds to a version 1 file (and to a new one, after ``_SCHEMA``).
_VERSION_2: Final = (
    # The epoch of each table's owner (fencing); a table may be claimed before its row.
    "CREATE TABLE IF NOT EXISTS epochs (table_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL)",
    # The retained events of each table, for a client resuming across a restart.
    "CREATE TABLE IF NOT EXISTS events (table_id TEXT NOT NULL, seq INTEGER NOT NULL,"
    " body TEXT NOT NULL, PRIMARY KEY (table_id, seq)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL)",
    # Stakes never go negative either (a CHECK cannot be changed in place: a trigger).
    SQL_STAKE_NO_OVERDRAFT,
    # Append-only, but for the welcome of a guest expired (whose row is gone first).
    "DROP TRIGGER IF EXISTS ledger_no_delete",
    "CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger WHEN OLD.kind <> 'welcome'"
    f" OR EXISTS (SELECT 1 FROM players WHERE player_id = {SQL_WELCOME_OWNER})"
    " BEGIN SELECT RAISE (ABORT, 'the ledger is append-only'); END",
    "CREATE INDEX IF NOT EXISTS players_idle_guests ON players (seen) WHERE guest = 1",
)

#: The wallet calls' outbox (docs/wallet.md §3-§4): new tables only, so they are made
#: whenever a file lacks them, whatever its version (an older server ignores them).
#: ``data`` is the call's JSON (without its ``seq``); the columns beside it are what is
#: searched. The fixed fields never change and no call is deleted (the triggers).
_WALLET_CALLS: Final = (
    "CREATE TABLE IF NOT EXISTS wallet_calls ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, transaction_id TEXT NOT NULL UNIQUE,"
    " kind TEXT NOT NULL, state TEXT NOT NULL, player TEXT NOT NULL,"
    " table_id TEXT NOT NULL, round_id TEXT NOT NULL, currency TEXT,"
    " amount INTEGER NOT NULL CHECK (amount >= 0), next_at REAL NOT NULL,"
    " created REAL NOT NULL, data TEXT NOT NULL)",
    # Due calls (state = 'pending' by next_at, then seq: the rowid ends every index).
    "CREATE INDEX IF NOT EXISTS wallet_calls_due ON wallet_calls (state, next_at)",
    "CREATE INDEX IF NOT EXISTS wallet_calls_player ON wallet_calls (player, seq)",
    "CREATE INDEX IF NOT EXISTS wallet_calls_table ON wallet_calls (table_id, seq)",
    "CREATE INDEX IF NOT EXISTS wallet_calls_round ON wallet_calls (round_id, seq)",
    "CREATE INDEX IF NOT EXISTS wallet_calls_created ON wallet_calls (created)",
    "CREATE TRIGGER IF NOT EXISTS wallet_calls_fixed BEFORE UPDATE OF seq, transaction_id,"
    " kind, player, table_id, round_id, currency, amount, created ON wallet_calls"
    " BEGIN SELECT RAISE (ABORT, 'a wallet call changes only in its progress'); END",
    "CREATE TRIGGER IF NOT EXISTS wallet_calls_no_delete BEFORE DELETE ON wallet_calls"
    " BEGIN SELECT RAISE (ABORT, 'wallet calls are kept'); END",
)

#: A table's parts (``TableRow.parts``: its bettors without a seat, GAME_RULES §5), each
#: written only by the steps that change it: a table only added, created if missing on
#: every open (the schema's version stays 2).
_TABLE_PARTS: Final = (
    "CREATE TABLE IF NOT EXISTS table_parts (table_id TEXT NOT NULL, part TEXT NOT NULL,"
    " body TEXT NOT NULL, PRIMARY KEY (table_id, part)) WITHOUT ROWID",
)

#: A player's currency (the transfer API, docs/wallet.md §2). A table only added, created
#: if missing on every open: a version 2 file made before it gains it, and a server that
#: does not know it never reads it, so the schema's version stays 2.
_CURRENCIES: Final = (
    "CREATE TABLE IF NOT EXISTS player_currencies"
    " (player_id TEXT PRIMARY KEY, currency TEXT NOT NULL) WITHOUT ROWID",
)

#: The operator's calls made once (docs/operator-api.md "Idempotency"): a table only
#: added, created if missing on every open, like the currencies' (the schema's version
#: stays 2). One row a key: the call's record (JSON) and when its time runs out; the
#: rows whose time ran out are deleted by the next claim (the index on ``expires``).
_OPERATOR_CALLS: Final = (
    "CREATE TABLE IF NOT EXISTS operator_calls (key TEXT PRIMARY KEY,"
    " fingerprint TEXT NOT NULL, body TEXT NOT NULL, expires REAL NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS operator_calls_expires ON operator_calls (expires)",
)

#: A player's time-out or self-exclusion (issue 21): a table only added, created if
#: missing on every open, like the currencies' (the schema's version stays 2).
_RESTRICTIONS: Final = (
    "CREATE TABLE IF NOT EXISTS player_restrictions"
    " (player_id TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID",
)

#: A player's usage and limits (issue 21): tables only added, created if missing on every
#: open, like the restrictions' (the schema's version stays 2). ``player_days`` holds the
#: flows of each player's UTC day, upserted by the commit that inserts the entries (a
#: player's days older than ``FLOW_DAYS`` are deleted as a newer one is written);
#: ``player_limits`` the player's limits as JSON.
_PLAYER_USAGE: Final = (
    "CREATE TABLE IF NOT EXISTS player_days (player_id TEXT NOT NULL, day TEXT NOT NULL,"
    " staked INTEGER NOT NULL, net INTEGER NOT NULL, deposited INTEGER NOT NULL,"
    " PRIMARY KEY (player_id, day)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS player_limits"
    " (player_id TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID",
)

#: A player's play session (responsible play): a table only added, created if missing on
#: every open, like the limits' (the schema's version stays 2). One row a player: when
#: the session began and a connection of theirs was last seen, the reality check's
#: period and when the next one is due (NULL: none), and the baseline of its result.
_PLAY_SESSIONS: Final = (
    "CREATE TABLE IF NOT EXISTS play_sessions (player_id TEXT PRIMARY KEY,"
    " started REAL NOT NULL, seen REAL NOT NULL, every REAL, next REAL,"
    " staked INTEGER NOT NULL, net INTEGER NOT NULL) WITHOUT ROWID",
)

#: The rounds' time, for the operator's round search (``round_records``): a column added
#: to a file that lacks it (and filled from each stored record's JSON), then its
#: indexes. Added in place, so the schema's version stays 2 (an older server's inserts
#: leave it 0: the default).
_ROUND_TIME_COLUMN: Final = "ALTER TABLE rounds ADD COLUMN time REAL NOT NULL DEFAULT 0"
_ROUND_TIME_BACKFILL: Final = (
    "UPDATE rounds SET time = json_extract(body, '$.time')"
    " WHERE json_type(body, '$.time') IN ('integer', 'real')"
)
_ROUND_TIMES: Final = (
    "CREATE INDEX IF NOT EXISTS rounds_time ON rounds (time, round_id)",
    "CREATE INDEX IF NOT EXISTS rounds_table_time ON rounds (table_id, time, round_id)",
)

#: Columns version 2 adds to version 1 tables.
_VERSION_2_COLUMNS: Final = (
    "ALTER TABLE players ADD COLUMN guest INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE players ADD COLUMN seen REAL NOT NULL DEFAULT 0",
)

#: How long a write waits for another connection's lock (a backup, a second process by
#: mistake) before it fails with :class:`StoreUnavailable`, in milliseconds. The wait
#: happens in the store's thread, so the loop serves everyone meanwhile; the calls
#: queued behind it wait too, so it is kept to a few seconds.
BUSY_TIMEOUT_MS: Final = 3000

#: SQLite's primary result codes that mean "cannot write now" rather than "refused":
#: BUSY, LOCKED, NOMEM, READONLY, IOERR, FULL, CANTOPEN, PROTOCOL.
_UNAVAILABLE: Final = frozenset({5, 6, 7, 8, 10, 13, 14, 15})

T = TypeVar("T")


#: The most commits one group (one transaction, one fsync) takes.
GROUP_MAX: Final = 64
#: Commits on the loop's thread that waited longer than this (seconds) turn them off for
#: a while (:meth:`SQLiteStore._commit_direct`): 30 s, doubled each time, at most 10 min.
DIRECT_SLOW: Final = 0.02
DIRECT_COOL_OFF: Final = 30.0
DIRECT_COOL_OFF_MAX: Final = 600.0
#: A ``PASSIVE`` checkpoint is asked of the worker every this many transactions (SQLite's
#: automatic ones are off: they would fsync on whichever thread commits).
CHECKPOINT_EVERY: Final = 100

log = logging.getLogger("chemmy.store")

#: A job's outcome: its result, or the exception it raised.
Outcome = tuple[Any, BaseException | None]

_Item = tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[[], Any], bool]


class _Worker:
    """One thread that runs jobs one at a time, in the order they were submitted, and
    hands each result back to the submitting loop (a queue and ``call_soon_threadsafe``:
    half the hop of a thread pool executor).

    A job submitted ``grouped`` (a commit) is run with every grouped job queued right
    behind it at that moment (at most :data:`GROUP_MAX`) by ``group``, which answers
    each one's own outcome: the group never waits for company, and a job not grouped
    ends it (it runs after the group, so the order of the calls is kept).

    :attr:`pending` counts the jobs submitted whose answers the loop has not taken yet
    (it is the loop's own count: raised by :meth:`submit`, lowered when the answer is
    settled on the loop). At 0 the thread holds no job and none is queued, so the loop
    may use the connection itself for a moment (:meth:`SQLiteStore._run_grouped`)."""

    def __init__(
        self, name: str, group: Callable[[list[Callable[[], Any]]], list[Outcome]]
    ) -> None:
        self._jobs: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._group = group
        self.pending = 0
        # A daemon: a store never closed does not keep the process alive (SQLite rolls
        # back a transaction cut short, at the next open).
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], T], *, grouped: bool = False) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self.pending += 1
        self._jobs.put((loop, future, job, grouped))
        return future

    def stop(self) -> None:
        """No more jobs: the thread ends after those queued."""
        self.pending += 1  # (never answered: the loop leaves the connection alone)
        self._jobs.put(None)

    def _serve(self) -> None:
        held: list[_Item | None] = []  # the job that ended a group, run next
        while (item := held.pop() if held else self._jobs.get()) is not None:
            loop, future, job, grouped = item
            if not grouped:
                try:
                    outcome: Outcome = (job(), None)
                except BaseException as exc:
                    outcome = (None, exc)
                self._answer(loop, future, outcome)
                continue
            group = [item]
            while len(group) < GROUP_MAX:
                try:
                    more = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None or not more[3]:
                    held.append(more)
                    break
                group.append(more)
            outcomes = self._group([job for _, _, job, _ in group])
            for (loop, future, _, _), outcome in zip(group, outcomes, strict=True):
                self._answer(loop, future, outcome)

    def _answer(
        self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], outcome: Outcome
    ) -> None:
        with suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(self._settle, future, *outcome)

    def _settle(
        self, future: asyncio.Future[Any], result: Any, error: BaseException | None
    ) -> None:
        self.pending -= 1
        _settle(future, result, error)


class SQLiteStore:
    """A :class:`~server.store.base.Store` in one SQLite file at ``path``.

    ``event_retention``: events kept per table; ``round_index``: rounds a player's
    history index keeps; ``busy_timeout_ms``: how long a write waits for a lock;
    ``clock``: when a player was seen.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        event_retention: int = EVENT_RETENTION,
        round_index: int = HISTORY_LIMIT,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        clock: Callable[[], float] = time.time,
        direct: bool = True,
    ) -> None:
        if event_retention < 1 or round_index < HISTORY_LIMIT:
            raise StoreError("retention keeps at least 1 event and 100 rounds a player")
        self.path = os.fspath(path)
        self.event_retention = event_retention
        self.round_index = round_index
        self.busy_timeout_ms = busy_timeout_ms
        self.clock = clock
        self._worker: _Worker | None = None
        # Touched in the worker thread, or on the loop's while the worker holds no job
        # (a direct commit, :meth:`_run_grouped`).
        self._db: sqlite3.Connection | None = None
        # The connection's busy timeout, in ms (:meth:`_busy_timeout`): 0 while the loop
        # uses it, busy_timeout_ms in the worker; None when not known.
        self._busy_ms: int | None = None
        self._serving: int | None = None  # the lock file's descriptor (claim_serving)
        #: Commits stored, and the transactions (groups) they went in: ``commits /
        #: groups`` is the mean group; ``direct``: of the groups, those the loop committed
        #: itself. Direct commits are off (``direct=False``, or for a while after a slow
        #: one: :attr:`direct_until`, a ``time.monotonic`` time).
        self.commits = 0
        self.groups = 0
        self.direct = 0
        self.direct_on = direct
        self.direct_until = 0.0
        self._cool_off = DIRECT_COOL_OFF
        self._checkpointed = 0  # self.groups at the last checkpoint asked of the worker
        #: The players whose flow days this process pruned today (:func:`_put_flows`):
        #: once a day each is enough (only one process serves the file).
        self._pruned = _Pruned()
        # Commits held for a direct commit at the end of this turn of the loop.
        self._batch: list[tuple[Callable[[], Any], asyncio.Future[Any]]] = []

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # -- the worker thread -----------------------------------------------------------
    async def _run(self, job: Callable[..., T], *args: Any) -> T:
        """Run ``job(db, *args)`` in the store's thread, after every call made before."""
        result: T = await self._submit(functools.partial(self._in_worker, job, *args))
        return result

    async def _read(self, job: Callable[..., T], *args: Any) -> T:
        """Like :meth:`_run` for a small read of the hot path (a bet's restriction and
        limits, a balance): made on the loop's thread while the worker holds no job and
        no commit is held (so it sees every call made before), else by the worker. A read
        in WAL mode takes no lock a writer holds; the pages it needs are in SQLite's
        cache or the system's, and one that still waited more than :data:`DIRECT_SLOW`
        sends the reads and commits to the worker for a while, as a slow commit does. A
        read that meets a lock all the same (``BUSY``: another process in exclusive
        locking mode, or recovering the WAL) goes to the worker, which waits for it: the
        busy timeout is 0 on the loop (:meth:`_busy_timeout`)."""
        worker = self._worker
        if worker is None:
            raise StoreError("the store is not open")
        if not self._direct_now(worker) or self._batch:
            return await self._run(job, *args)
        started = _clocks()
        try:
            return self._on_loop(job, *args)
        except StoreUnavailable as exc:
            if not _busy(exc):
                raise
        finally:
            self._timed(started, "a read")
        return await self._run(job, *args)  # (nothing was queued meanwhile: still in order)

    def _direct_now(self, worker: _Worker) -> bool:
        """Whether the loop may use the connection itself now (see :meth:`_run_grouped`)."""
        return (
            worker.pending == 0
            and self.direct_on
            and len(self._batch) < GROUP_MAX
            and time.monotonic() >= self.direct_until
        )

    def _timed(self, started: tuple[float, float], what: str) -> None:
        """After a direct read or commit begun at ``started`` (:func:`_clocks`): one that
        *waited* more than :data:`DIRECT_SLOW` turns direct use off for a while. Waiting
        is its wall time less the loop thread's own CPU time: the disk or a lock, not the
        collector, a profiler or a large transaction's own work, which the worker's
        thread would not have spared the loop either (it holds the GIL)."""
        wall, cpu = _clocks()
        waited = (wall - started[0]) - (cpu - started[1])
        if waited > DIRECT_SLOW:
            self.direct_until = time.monotonic() + self._cool_off
            log.warning(
                "%s on the loop waited %.1f ms: the store's thread does it all for %.0f s",
                what,
                waited * 1000,
                self._cool_off,
            )
            self._cool_off = min(2 * self._cool_off, DIRECT_COOL_OFF_MAX)

    def _submit(self, call: Callable[[], T], *, grouped: bool = False) -> asyncio.Future[T]:
        """Queue ``call`` for the worker, after the commits the loop holds for a direct
        commit (:meth:`_run_grouped`): they were called first, so they go first."""
        worker = self._worker
        if worker is None:
            raise StoreError("the store is not open")
        self._spill(worker)
        return worker.submit(call, grouped=grouped)

    def _spill(self, worker: _Worker) -> None:
        """Hand the commits held for a direct commit to the worker, in their order."""
        batch, self._batch = self._batch, []
        for held, future in batch:
            _chain(worker.submit(held, grouped=True), future)

    async def _run_grouped(self, job: Callable[..., T], *args: Any) -> T:
        """Like :meth:`_run`, with ``job`` one write of a group commit
        (:meth:`_commit_group`): it runs inside a transaction, not in its own.

        While the worker holds no job, the commits called in one turn of the loop are
        held and committed together by the loop itself at the end of the turn
        (:meth:`_flush_direct`), without the hop to the store's thread and back: two
        thread wake-ups, about 0.1 ms here, were a lone ``bet``'s largest piece after
        the store's reads (issue 23). A call queued for the worker meanwhile takes them
        with it first (:meth:`_submit`), so the order of the calls is kept."""
        worker = self._worker
        if worker is None:
            raise StoreError("the store is not open")
        call = functools.partial(self._call, job, *args)
        if self.groups - self._checkpointed >= CHECKPOINT_EVERY:
            self._checkpoint()
        if self._direct_now(worker):
            loop = asyncio.get_running_loop()
            future: asyncio.Future[T] = loop.create_future()
            if not self._batch:
                loop.call_soon(self._flush_direct)
            self._batch.append((call, future))
            return await future
        result: T = await self._submit(call, grouped=True)
        return result

    def _flush_direct(self) -> None:
        """Commit the commits held in this turn of the loop on the loop's thread (the
        worker holds no job: any job queued since took them along), or, when they cannot
        be committed here, hand them to the worker in their order."""
        batch, self._batch = self._batch, []
        if not batch:
            return
        outcomes = self._commit_direct([call for call, _ in batch])
        if outcomes is None:
            worker = self._worker
            for call, future in batch:
                if worker is None:
                    _settle(future, None, StoreError("the store is not open"))
                else:
                    _chain(worker.submit(call, grouped=True), future)
            return
        for (_, future), (result, error) in zip(batch, outcomes, strict=True):
            _settle(future, result, error)

    def _commit_direct(self, calls: list[Callable[[], Any]]) -> list[Outcome] | None:
        """Commit ``calls`` on the loop's thread in one transaction, as the worker would
        (:meth:`_group_in_transaction`); None when they must go to the worker instead.

        A commit in WAL mode at ``synchronous=NORMAL`` appends to the WAL and does not
        wait for the disk. What could make it wait is kept off this path: the write lock
        held by another process (no busy wait here: the busy timeout is 0 on the loop,
        :meth:`_busy_timeout`, so ``BUSY`` at ``BEGIN`` gives None, and the worker waits
        for the lock) and checkpoints (never automatic: the worker runs them,
        :meth:`_checkpoint`). A direct commit that still waited more than
        :data:`DIRECT_SLOW` (a disk that makes even a WAL append wait: :meth:`_timed`)
        turns direct commits off for a while (30 s, doubled at each such commit, at most
        10 min), so a slow disk stalls the loop for that one commit, not the next ones."""
        db = self._db
        if db is None:
            return None
        started = _clocks()
        try:
            try:
                self._busy_timeout(db, 0)
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error:
                return None  # (locked by another process, or failing: the worker's to say)
            outcomes = self._group_in_transaction(db, calls)
        except Exception as exc:  # the transaction failed, rolled back: every commit's
            outcomes = [(None, own_copy(exc)) for _ in calls]
        self.direct += 1
        self._timed(started, f"a commit of {len(calls)}")
        return outcomes

    def _checkpoint(self) -> None:
        """Ask the worker for a ``PASSIVE`` checkpoint (the WAL's pages copied into the
        database; the WAL is then reused from its start): every :data:`CHECKPOINT_EVERY`
        transactions, about SQLite's own 1,000 pages. It fsyncs, so it never runs on the
        loop; it waits for no reader and no writer."""
        self._checkpointed = self.groups

        def checkpoint(db: sqlite3.Connection) -> None:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

        self._submit(functools.partial(self._in_worker, checkpoint)).add_done_callback(
            _ignore_failure
        )

    def _busy_timeout(self, db: sqlite3.Connection, ms: int) -> None:
        """Make the connection's busy timeout ``ms``: 0 on the loop's thread (a lock held
        by another process fails there at once, and the worker waits for it) and
        :attr:`busy_timeout_ms` in the worker's. Set when the connection passes from one
        thread to the other, not for each call: a lone table's direct commits, one after
        the other, are not two ``PRAGMA`` statements longer each (set to 0 and back)."""
        if self._busy_ms != ms:
            self._busy_ms = None  # (not known, should the pragma fail)
            db.execute(f"PRAGMA busy_timeout = {int(ms)}")
            self._busy_ms = ms

    def _in_worker(self, job: Callable[..., T], *args: Any) -> T:
        """``job(db, *args)`` in the worker's thread (:meth:`_run`), which waits for locks."""
        with self._connection() as db:
            self._busy_timeout(db, self.busy_timeout_ms)
            return job(db, *args)

    def _on_loop(self, job: Callable[..., T], *args: Any) -> T:
        """``job(db, *args)`` on the loop's thread (:meth:`_read`), which waits for none."""
        with self._connection() as db:
            self._busy_timeout(db, 0)
            return job(db, *args)

    def _call(self, job: Callable[..., T], *args: Any) -> T:
        """``job(db, *args)`` where the connection is already (a commit of a group)."""
        with self._connection() as db:
            return job(db, *args)

    def _commit_group(self, jobs: list[Callable[[], Any]]) -> list[Outcome]:
        """Run the commits queued together in one ``BEGIN IMMEDIATE`` transaction, each
        inside its own savepoint (one that raises is rolled back to it and answered with
        its own exception; the others stay), then one ``COMMIT`` for all (one WAL append).
        When the transaction itself fails (it cannot begin, SQLite rolled it back, the
        ``COMMIT`` fails), every commit of the group is answered with that failure, and
        nothing of them is kept."""
        try:
            with self._connection() as db:
                self._busy_timeout(db, self.busy_timeout_ms)
                db.execute("BEGIN IMMEDIATE")
                return self._group_in_transaction(db, jobs)
        except BaseException as exc:
            return [(None, own_copy(exc)) for _ in jobs]

    def _group_in_transaction(
        self, db: sqlite3.Connection, jobs: list[Callable[[], Any]]
    ) -> list[Outcome]:
        """The body of :meth:`_commit_group`, its transaction begun: raises when the
        transaction itself fails (rolled back)."""
        outcomes: list[Outcome] = []
        alone = len(jobs) == 1  # no savepoint: the transaction is the commit's own
        with self._connection():
            try:
                for job in jobs:
                    outcomes.append(self._savepoint(db, job, alone))
                if alone and outcomes[0][1] is not None:  # its own refusal
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    return outcomes
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        self.groups += 1
        self.commits += sum(error is None for _, error in outcomes)
        return outcomes

    @staticmethod
    def _savepoint(db: sqlite3.Connection, job: Callable[[], Any], alone: bool) -> Outcome:
        """Run one commit of a group in a savepoint; its outcome. Raises (failing the
        group) when the transaction did not survive the commit's failure."""
        if alone:
            try:
                return job(), None
            except BaseException as exc:
                return None, exc
        db.execute("SAVEPOINT one_commit")
        try:
            result = job()
        except BaseException as exc:
            if not db.in_transaction:  # SQLite rolled back the whole transaction
                raise
            db.execute("ROLLBACK TO one_commit")
            db.execute("RELEASE one_commit")
            return None, exc
        db.execute("RELEASE one_commit")
        return result, None

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """The open connection, with third-party errors translated at the boundary."""
        if self._db is None:
            raise StoreError("the store is not open")
        try:
            yield self._db
        except sqlite3.IntegrityError as exc:
            if "no_overdraft" in str(exc):
                raise Overdrawn("a player's or a stake's balance would go negative") from exc
            raise StoreError(f"integrity: {exc}") from exc
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        except OverflowError as exc:  # an integer wider than SQLite's 64 bits
            raise StoreError(f"out of range: {exc}") from exc
        except UnicodeError as exc:  # a lone surrogate: no UTF-8 for it
            raise StoreError(f"not storable text: {exc}") from exc

    @staticmethod
    @contextmanager
    def _transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    # -- lifecycle -------------------------------------------------------------------
    async def open(self) -> None:
        if self._worker is not None:
            return
        worker = _Worker(f"chemmy-sqlite:{os.path.basename(self.path)}", self._commit_group)
        try:
            await worker.submit(self._open_db)
        except BaseException:
            worker.stop()
            raise
        self._worker = worker

    def _open_db(self) -> None:
        if sqlite3.sqlite_version_info < (3, 35, 0):  # UPSERT ... RETURNING
            raise StoreError(f"SQLite {sqlite3.sqlite_version} is too old (3.35 or later)")
        try:
            # (Shared with the loop's thread for direct commits, never at the same time.)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise _translate(exc, f"cannot open {self.path}") from exc
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA wal_autocheckpoint = 0")  # the worker's (_checkpoint)
            db.execute("PRAGMA foreign_keys = ON")
            with self._transaction(db):
                (version,) = db.execute("PRAGMA user_version").fetchone()
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path} has schema version {version}, newer than {SCHEMA_VERSION}"
                    )
                if version == 1:  # migrate: the tables of version 1 gain columns
                    for statement in _VERSION_2_COLUMNS:
                        db.execute(statement)
                for statement in _SCHEMA.split(";\n"):
                    if statement.strip():
                        db.execute(statement)
                for statement in _VERSION_2:
                    db.execute(statement)
                for statement in _WALLET_CALLS:
                    db.execute(statement)
                for statement in (*_RESTRICTIONS, *_PLAYER_USAGE, *_PLAY_SESSIONS):
                    db.execute(statement)
                for statement in (*_CURRENCIES, *_OPERATOR_CALLS, *_TABLE_PARTS):
                    db.execute(statement)
                columns = {row[1] for row in db.execute("PRAGMA table_info(rounds)")}
                if "time" not in columns:  # a file from before the round search
                    db.execute(_ROUND_TIME_COLUMN)
                    db.execute(_ROUND_TIME_BACKFILL)
                for statement in _ROUND_TIMES:
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except (sqlite3.Error, StoreError) as exc:
            db.close()
            if isinstance(exc, StoreError):
                raise
            raise _translate(exc, f"cannot open {self.path}") from exc
        self._db, self._busy_ms = db, self.busy_timeout_ms

    async def claim_serving(self) -> None:
        """SQLite is one process's store: the serving process holds an exclusive
        ``flock`` on ``<path>.lock`` (beside the database; the OS drops it when the
        process ends, even by kill -9). Readers such as audits need no claim."""
        if self._serving is not None or self.path == ":memory:":
            return
        lock = f"{self.path}.lock"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise StoreUnavailable(f"cannot open {lock}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreInUse(
                f"{self.path} is served by another running chemmy-server (it holds {lock}); "
                "SQLite is one process's store: stop that one, or run a cluster on "
                "--store redis://"
            ) from None
        self._serving = fd

    async def close(self) -> None:
        fd, self._serving = self._serving, None
        if fd is not None:
            os.close(fd)  # the flock goes with the descriptor
        worker, self._worker = self._worker, None
        if worker is None:
            return
        try:
            self._spill(worker)  # after every call made before, the held commits too
            await worker.submit(self._close_db)
        finally:
            worker.stop()

    def _close_db(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            try:
                self._busy_timeout(db, self.busy_timeout_ms)
                db.execute("PRAGMA optimize")
            except sqlite3.Error:
                pass
            finally:
                db.close()

    # -- players and balances --------------------------------------------------------
    async def ensure_player(
        self, player_id: str, name: str, initial_balance: int, *, guest: bool = False
    ) -> int:
        if not isinstance(initial_balance, int) or initial_balance < 0:
            raise StoreError("an initial balance is a whole number, not negative")
        welcome = welcome_entry(player_id, initial_balance) if initial_balance > 0 else None
        if welcome is not None:
            check_entry(welcome)
        return await self._run(self._ensure_player, player_id, name, welcome, guest, self.clock())

    def _ensure_player(
        self,
        db: sqlite3.Connection,
        player_id: str,
        name: str,
        welcome: Entry | None,
        guest: bool,
        now: float,
    ) -> int:
        account = player_account(player_id)
        with self._transaction(db):
            known = db.execute("SELECT 1 FROM players WHERE player_id = ?", (player_id,))
            if known.fetchone() is None:
                db.execute("INSERT OR IGNORE INTO accounts (account) VALUES (?)", (account,))
                if welcome is not None:
                    _post(db, [welcome])
            db.execute(
                "INSERT INTO players (player_id, name, guest, seen) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (player_id) DO UPDATE SET name = excluded.name,"
                " guest = excluded.guest, seen = excluded.seen",
                (player_id, name, int(guest), now),
            )
            return _balance(db, account)

    async def player_name(self, player_id: str) -> str | None:
        def job(db: sqlite3.Connection) -> str | None:
            row = db.execute("SELECT name FROM players WHERE player_id = ?", (player_id,))
            found = row.fetchone()
            return None if found is None else str(found[0])

        return await self._run(job)

    async def expire_guests(self, idle_seconds: float) -> int:
        return await self._run(self._expire_guests, self.clock() - idle_seconds)

    def _expire_guests(self, db: sqlite3.Connection, cutoff: float) -> int:
        gone = 0
        with self._transaction(db):
            idle = db.execute(
                "SELECT player_id FROM players WHERE guest = 1 AND seen <= ?", (cutoff,)
            ).fetchall()
            for (pid,) in idle:
                account = player_account(pid)
                touching = db.execute(
                    "SELECT key, src, dst, amount, kind, round_id FROM ledger"
                    " WHERE src = ? OR dst = ? LIMIT 2",
                    (account, account),
                ).fetchall()
                welcome = welcome_entry(pid, touching[0][3]) if touching else None
                if len(touching) > 1 or (touching and Entry(*touching[0]) != welcome):
                    continue
                if _balance(db, account) != (welcome.amount if welcome else 0):
                    continue
                db.execute("DELETE FROM players WHERE player_id = ?", (pid,))
                db.execute("DELETE FROM play_sessions WHERE player_id = ?", (pid,))
                if welcome is not None:  # (the trigger lets it go once the row is gone)
                    db.execute("DELETE FROM ledger WHERE key = ?", (welcome.key,))
                    db.execute(
                        "UPDATE accounts SET balance = balance + ? WHERE account = ?",
                        (welcome.amount, CASHIER),
                    )
                db.execute("DELETE FROM accounts WHERE account = ?", (account,))
                gone += 1
        return gone

    async def load_balances(self) -> dict[str, int]:
        return await self._run(lambda db: dict(db.execute("SELECT account, balance FROM accounts")))

    async def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        wanted = list(accounts)
        return await self._read(lambda db: {account: _balance(db, account) for account in wanted})

    async def player_money(self, player_id: str, tables: Iterable[str] = ()) -> tuple[int, int]:
        stakes = [stake_account(t, player_id) for t in dict.fromkeys(tables)]

        def job(db: sqlite3.Connection) -> tuple[int, int]:
            available = _balance(db, player_account(player_id))
            return available + sum(_balance(db, a) for a in stakes), available

        return await self._read(job)

    async def has_entry(self, key: str) -> bool:
        return await self._run(
            lambda db: (
                db.execute("SELECT 1 FROM ledger WHERE key = ?", (key,)).fetchone() is not None
            )
        )

    # -- the one write ---------------------------------------------------------------
    async def commit(
        self,
        *,
        entries: Sequence[Entry] = (),
        table: TableRow | None = None,
        records: Sequence[Mapping[str, Any]] = (),
        events: Sequence[Mapping[str, Any]] = (),
        calls: Sequence[Mapping[str, Any]] = (),
        guards: Sequence[LimitGuard] = (),
    ) -> CommitResult:
        # Planned (checked and serialized) before the job is queued.
        plan = plan_commit(self.clock(), entries, table, records, events, calls, guards)
        return await self._run_grouped(self._commit, plan)

    def _commit(self, db: sqlite3.Connection, plan: CommitPlan) -> CommitResult:
        # Inside the group's transaction (_commit_group): a savepoint of its own.
        _put_calls(db, plan.calls)
        table = plan.table
        if table is not None and plan.row is not None:
            _put_table(db, table, plan.row)
            if plan.parts is not None:
                _put_parts(db, table.table_id, *plan.parts)
            _put_events(db, table, plan.events, self.event_retention)
        inserted, left, flows = _post(db, plan.entries, plan.day, plan.cutoff, self._pruned)
        _hold_guards(db, plan.guards, flows)
        for index, body in plan.records:
            if isinstance(index, RoundIndex):
                _put_round(db, index, body, self.round_index)
            else:
                db.execute(
                    "INSERT INTO shoes (table_id, shoe_no, revealed, body) VALUES"
                    " (?, ?, ?, ?) ON CONFLICT (table_id, shoe_no) DO UPDATE SET"
                    " revealed = excluded.revealed, body = excluded.body",
                    (index.table, index.shoe_no, int(index.revealed), body),
                )
        return CommitResult(
            inserted, {a: left[a] if a in left else _balance(db, a) for a in plan.report}
        )

    # -- tables ----------------------------------------------------------------------
    async def claim_table(self, table_id: str) -> int:
        if not isinstance(table_id, str) or not table_id:
            raise StoreError("a table has an id")

        def job(db: sqlite3.Connection) -> int:
            with self._transaction(db):
                db.execute(
                    "INSERT INTO epochs (table_id, epoch) VALUES (?, 1)"
                    " ON CONFLICT (table_id) DO UPDATE SET epoch = epoch + 1",
                    (table_id,),
                )
                return _epoch(db, table_id)

        return await self._run(job)

    async def table_seq(self, table_id: str) -> int:
        row = await self._run(
            lambda db: db.execute(
                "SELECT seq FROM tables WHERE table_id = ?", (table_id,)
            ).fetchone()
        )
        return 0 if row is None else int(row[0])

    async def load_tables(self) -> list[TableRow]:
        def job(db: sqlite3.Connection) -> list[TableRow]:
            rows = db.execute(_LOAD_TABLES + " WHERE closed = 0 ORDER BY tables.rowid").fetchall()
            return _rows(rows, _parts(db, None))

        return await self._run(job)

    async def table_ids(self) -> list[str]:
        rows = await self._run(
            lambda db: db.execute(
                "SELECT table_id FROM tables WHERE closed = 0 ORDER BY rowid"
            ).fetchall()
        )
        return [str(table_id) for (table_id,) in rows]

    async def load_table(self, table_id: str) -> TableRow | None:
        def job(db: sqlite3.Connection) -> list[TableRow]:
            where = " WHERE tables.table_id = ? AND closed = 0"
            rows = db.execute(_LOAD_TABLES + where, (table_id,)).fetchall()
            return _rows(rows, _parts(db, table_id) if rows else {})

        found = await self._run(job)
        return found[0] if found else None

    async def save_table(self, row: TableRow) -> None:
        await self.commit(table=row)

    async def events_after(self, table_id: str, seq: int) -> list[dict[str, Any]] | None:
        def job(db: sqlite3.Connection) -> tuple[list[tuple[int, str]], int]:
            kept = db.execute(
                "SELECT seq, body FROM events WHERE table_id = ? AND seq > ? ORDER BY seq",
                (table_id, seq),
            ).fetchall()
            top = db.execute("SELECT seq FROM tables WHERE table_id = ?", (table_id,)).fetchone()
            return kept, 0 if top is None else int(top[0])

        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            return follows(seq, [], 0)  # raises the one error for a bad seq
        kept, top = await self._run(job)
        return follows(seq, kept, top)

    # -- records ---------------------------------------------------------------------
    async def history(self, player_id: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        limit = max(0, min(limit, HISTORY_LIMIT))
        rows = await self._run(
            lambda db: db.execute(
                "SELECT rounds.body FROM round_players"
                " JOIN rounds ON rounds.seq = round_players.round_seq"
                " WHERE round_players.player_id = ?"
                " ORDER BY round_players.round_seq DESC LIMIT ?",
                (player_id, limit),
            ).fetchall()
        )
        return [json.loads(body) for (body,) in rows]

    async def round_record(self, round_id: str) -> dict[str, Any] | None:
        found = await self._run(
            lambda db: db.execute(
                "SELECT body FROM rounds WHERE round_id = ?", (round_id,)
            ).fetchone()
        )
        return None if found is None else dict(json.loads(found[0]))

    async def round_records(
        self,
        query: RoundQuery,
    ) -> list[dict[str, Any]]:
        wanted = round_query(query)
        if not wanted.limit:
            return []
        where = ["time >= ?"]
        params: list[Any] = [max(wanted.low, -1e300)]
        if wanted.before is not None and wanted.before[0] < wanted.high:
            # One upper bound for the index range: a deep page starts where the last
            # one ended (the row value below orders the ties of one time).
            where.append("time <= ?")
            params.append(wanted.before[0])
        else:
            where.append("time < ?")
            params.append(min(wanted.high, 1e300))
        for column, value in (("table_id", wanted.table), ("round_id", wanted.round_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if wanted.player is not None:  # every round of theirs: round_players is pruned
            where.append(
                "EXISTS (SELECT 1 FROM json_each(rounds.body, '$.players') WHERE value = ?)"
            )
            params.append(wanted.player)
        if wanted.before is not None:
            where.append("(time, round_id) < (?, ?)")
            params += [wanted.before[0], wanted.before[1]]
        sql = (
            f"SELECT body FROM rounds WHERE {' AND '.join(where)}"
            " ORDER BY time DESC, round_id DESC LIMIT ?"
        )
        rows = await self._run(lambda db: db.execute(sql, (*params, wanted.limit)).fetchall())
        return [json.loads(body) for (body,) in rows]

    async def shoe_record(self, table_id: str, shoe_no: int | None = None) -> dict[str, Any] | None:
        def job(db: sqlite3.Connection) -> Any:
            if shoe_no is None:
                return db.execute(
                    "SELECT body FROM shoes WHERE table_id = ? AND revealed = 1"
                    " ORDER BY shoe_no DESC LIMIT 1",
                    (table_id,),
                ).fetchone()
            return db.execute(
                "SELECT body FROM shoes WHERE table_id = ? AND shoe_no = ?",
                (table_id, shoe_no),
            ).fetchone()

        found = await self._run(job)
        return None if found is None else dict(json.loads(found[0]))

    async def shoe_records(self, table_id: str, limit: int = 20) -> list[dict[str, Any]]:
        rows = await self._run(
            lambda db: db.execute(
                "SELECT body FROM shoes WHERE table_id = ? ORDER BY shoe_no DESC LIMIT ?",
                (table_id, max(0, limit)),
            ).fetchall()
        )
        return [json.loads(body) for (body,) in rows]

    async def secret(self, name: str, nbytes: int = 32) -> bytes:
        if not isinstance(name, str) or not name or not 16 <= nbytes <= 1024:
            raise StoreError("a secret has a name and 16 to 1024 bytes")
        fresh = secrets.token_bytes(nbytes)

        def job(db: sqlite3.Connection) -> bytes:
            with self._transaction(db):
                db.execute(
                    "INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)", (name, fresh)
                )
                (value,) = db.execute(
                    "SELECT value FROM secrets WHERE name = ?", (name,)
                ).fetchone()
                return bytes(value)

        return await self._run(job)

    # -- a player's currency ----------------------------------------------------------
    async def player_currency(self, player_id: str) -> str | None:
        def job(db: sqlite3.Connection) -> str | None:
            found = db.execute(
                "SELECT currency FROM player_currencies WHERE player_id = ?", (player_id,)
            ).fetchone()
            return None if found is None else str(found[0])

        return await self._run(job)

    async def set_player_currency(self, player_id: str, currency: str) -> str:
        check_currency(player_id, currency)

        def job(db: sqlite3.Connection) -> str:
            with self._transaction(db):
                db.execute(
                    "INSERT OR IGNORE INTO player_currencies (player_id, currency) VALUES (?, ?)",
                    (player_id, currency),
                )
                (stored,) = db.execute(
                    "SELECT currency FROM player_currencies WHERE player_id = ?", (player_id,)
                ).fetchone()
                return str(stored)

        return await self._run(job)

    # -- a player's time-out or self-exclusion ---------------------------------------
    async def player_restriction(self, player_id: str) -> dict[str, Any] | None:
        def job(db: sqlite3.Connection) -> dict[str, Any] | None:
            return _restriction(db, player_id)

        found = await self._read(job)
        return found if found is not None and found["until"] > time.time() else None

    async def set_player_restriction(
        self, player_id: str, kind: str, until: float, by: str, *, rule: RestrictionRule
    ) -> dict[str, Any] | None:
        def job(db: sqlite3.Connection) -> dict[str, Any] | None:
            with self._transaction(db):  # read and write in one: of two, one after the other
                kept = rule(_restriction(db, player_id), kind, until, by, time.time())
                if kept is None:
                    db.execute("DELETE FROM player_restrictions WHERE player_id = ?", (player_id,))
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO player_restrictions (player_id, body)"
                        " VALUES (?, ?)",
                        (player_id, json.dumps(kept)),
                    )
                return kept

        return await self._run(job)

    # -- a player's usage and limits ----------------------------------------------------
    async def player_days(self, player_id: str, since_day: str) -> dict[str, dict[str, int]]:
        since_day = check_day(since_day)
        rows = await self._read(
            lambda db: db.execute(
                "SELECT day, staked, net, deposited FROM player_days"
                " WHERE player_id = ? AND day >= ? ORDER BY day",
                (player_id, since_day),
            ).fetchall()
        )
        return flow_buckets({day: sums for day, *sums in rows}, since_day)

    async def bet_reads(self, player_id: str, since_day: str) -> BetReads:
        since_day = check_day(since_day)

        def job(db: sqlite3.Connection) -> tuple[Any, ...]:
            limits = _limits(db, player_id)
            days = []
            if limits:
                days = db.execute(
                    "SELECT day, staked, net, deposited FROM player_days"
                    " WHERE player_id = ? AND day >= ? ORDER BY day",
                    (player_id, since_day),
                ).fetchall()
            return _restriction(db, player_id), limits, _play_session(db, player_id), days

        restriction, limits, play, days = await self._read(job)
        if restriction is not None and restriction["until"] <= time.time():
            restriction = None
        return BetReads(
            restriction,
            current_limits(limits, self.clock()),
            play,
            flow_buckets({day: sums for day, *sums in days}, since_day),
        )

    async def player_limits(self, player_id: str) -> dict[str, Any]:
        stored = await self._read(_limits, player_id)
        return current_limits(stored, self.clock())

    async def set_player_limits(
        self, player_id: str, changes: Mapping[str, int | None], by: str, *, rule: LimitsRule
    ) -> dict[str, Any]:
        def job(db: sqlite3.Connection) -> dict[str, Any]:
            with self._transaction(db):  # read and write in one: of two, one after the other
                kept = rule(_limits(db, player_id), changes, by, self.clock())
                if kept:
                    db.execute(
                        "INSERT OR REPLACE INTO player_limits (player_id, body) VALUES (?, ?)",
                        (player_id, dump_json(kept)),
                    )
                else:
                    db.execute("DELETE FROM player_limits WHERE player_id = ?", (player_id,))
                return kept

        return await self._run(job)

    # -- a player's play session --------------------------------------------------------
    async def open_play_session(
        self, player_id: str, now: float, gap: float, every: float | None, *, rule: PlayRule
    ) -> dict[str, Any]:
        now, gap, every = check_play_open(player_id, now, gap, every)

        def job(db: sqlite3.Connection) -> dict[str, Any]:
            with self._transaction(db):  # read and write in one: of two, one after the other
                rows = db.execute(
                    "SELECT day, staked, net, deposited FROM player_days"
                    " WHERE player_id = ? AND day >= ?",
                    (player_id, flow_day(now)),
                ).fetchall()
                baseline = play_baseline({day: sums for day, *sums in rows}, now)
                kept = rule(_play_session(db, player_id), now, gap, every, baseline)
                _put_play_session(db, player_id, kept)
                return kept

        return await self._run(job)

    async def play_session(self, player_id: str) -> dict[str, Any] | None:
        return await self._read(_play_session, player_id)

    async def touch_play_sessions(self, player_ids: Sequence[str], now: float) -> None:
        now = check_play_time(now, "time")
        wanted = [(now, pid) for pid in dict.fromkeys(player_ids)]
        if not wanted:
            return

        def job(db: sqlite3.Connection) -> None:
            with self._transaction(db):
                db.executemany(
                    "UPDATE play_sessions SET seen = max(seen, ?) WHERE player_id = ?", wanted
                )

        await self._run(job)

    async def ack_reality_check(
        self, player_id: str, now: float, *, rule: AckRule
    ) -> dict[str, Any] | None:
        now = check_play_time(now, "time")

        def job(db: sqlite3.Connection) -> dict[str, Any] | None:
            with self._transaction(db):
                kept = rule(_play_session(db, player_id), now)
                if kept is not None:
                    _put_play_session(db, player_id, kept)
                return kept

        return await self._run(job)

    # -- checking --------------------------------------------------------------------
    async def ledger(self, account: str | None = None, limit: int = 1000) -> list[Entry]:
        columns = "key, src, dst, amount, kind, round_id"

        def job(db: sqlite3.Connection) -> list[Entry]:
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

        return await self._run(job)

    async def audit(self) -> dict[str, Any]:
        return await self._run(_audit)

    # -- the wallet calls' outbox ---------------------------------------------------------
    async def update_wallet_call(
        self,
        transaction_id: str,
        changes: Mapping[str, Any],
        *,
        only_from: str | None = None,
    ) -> dict[str, Any] | None:
        changes = check_wallet_changes(changes)

        def job(db: sqlite3.Connection) -> dict[str, Any] | None:
            with self._transaction(db):
                found = db.execute(
                    "SELECT seq, data FROM wallet_calls WHERE transaction_id = ?",
                    (transaction_id,),
                ).fetchone()
                if found is None:
                    return None
                seq, data = found
                stored = json.loads(data)
                if only_from is not None and stored["state"] != only_from:
                    return {**stored, "seq": seq}
                call, text = merge_wallet_call(stored, changes)
                db.execute(
                    "UPDATE wallet_calls SET state = ?, next_at = ?, data = ? WHERE seq = ?",
                    (call["state"], call["next_at"], text, seq),
                )
                return {**call, "seq": seq}

        return await self._run(job)

    async def due_wallet_calls(
        self,
        now: float,
        limit: int = 100,
        kinds: Sequence[str] = ("credit", "rollback"),
    ) -> list[dict[str, Any]]:
        now, limit, wanted = check_due_time(now), wallet_limit(limit), check_due_kinds(kinds)
        if not limit or not wanted:
            return []
        rows = await self._run(
            lambda db: db.execute(
                "SELECT seq, data FROM wallet_calls WHERE state = 'pending' AND next_at <= ?"
                f" AND kind IN ({', '.join('?' * len(wanted))}) ORDER BY next_at, seq LIMIT ?",
                (now, *wanted, limit),
            ).fetchall()
        )
        return [_loaded_call(seq, data) for seq, data in rows]

    async def wallet_call(self, transaction_id: str) -> dict[str, Any] | None:
        found = await self._run(
            lambda db: db.execute(
                "SELECT seq, data FROM wallet_calls WHERE transaction_id = ?", (transaction_id,)
            ).fetchone()
        )
        return None if found is None else _loaded_call(*found)

    async def wallet_calls(
        self,
        *,
        state: str | None = None,
        player: str | None = None,
        table: str | None = None,
        round_id: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        before_seq: int | None = None,
    ) -> list[dict[str, Any]]:
        filters = wallet_filters(
            state=state,
            player=player,
            table=table,
            round_id=round_id,
            kind=kind,
            before_seq=before_seq,
        )
        limit = wallet_limit(limit)
        if not limit:
            return []
        columns = {"state": "state", "player": "player", "table": "table_id"}
        columns |= {"round_id": "round_id", "kind": "kind"}
        where = [f"{columns[name]} = ?" for name in filters]
        params: list[Any] = list(filters.values())
        if before_seq is not None:
            where.append("seq < ?")
            params.append(before_seq)
        sql = "SELECT seq, data FROM wallet_calls"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = await self._run(
            lambda db: db.execute(f"{sql} ORDER BY seq DESC LIMIT ?", (*params, limit)).fetchall()
        )
        return [_loaded_call(seq, data) for seq, data in rows]

    async def wallet_totals(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[dict[str, Any]]:
        low, high = check_span(since, until)
        rows = await self._run(
            lambda db: db.execute(
                "SELECT created, table_id, currency, kind, state, amount FROM wallet_calls"
                " WHERE created >= ? AND created < ?",
                (max(low, -1e300), min(high, 1e300)),
            ).fetchall()
        )
        names = ("created", "table", "currency", "kind", "state", "amount")
        return wallet_totals((dict(zip(names, row, strict=True)) for row in rows), since, until)

    # -- the operator's calls, each made once -------------------------------------------
    async def claim_operator_call(
        self, key: str, fingerprint: str, keep: float
    ) -> dict[str, Any] | None:
        keep = check_operator_call(key, fingerprint, keep)
        record = operator_call_record(fingerprint, None)

        def job(db: sqlite3.Connection) -> dict[str, Any] | None:
            now = self.clock()
            with self._transaction(db):  # read and write in one: of two, one after the other
                db.execute("DELETE FROM operator_calls WHERE expires <= ?", (now,))
                claimed = db.execute(
                    "INSERT OR IGNORE INTO operator_calls (key, fingerprint, body, expires)"
                    " VALUES (?, ?, ?, ?)",
                    (key, fingerprint, record, now + keep),
                ).rowcount
                if claimed:
                    return None
                (body,) = db.execute(
                    "SELECT body FROM operator_calls WHERE key = ?", (key,)
                ).fetchone()
                return dict(json.loads(body))

        return await self._run(job)

    async def answer_operator_call(
        self, key: str, fingerprint: str, answer: Mapping[str, Any], keep: float
    ) -> None:
        keep = check_operator_call(key, fingerprint, keep)
        record = operator_call_record(fingerprint, answer)

        def job(db: sqlite3.Connection) -> None:
            now = self.clock()
            with self._transaction(db):
                db.execute(
                    "UPDATE operator_calls SET body = ?, expires = ?"
                    " WHERE key = ? AND fingerprint = ? AND expires > ?",
                    (record, now + keep, key, fingerprint, now),
                )

        await self._run(job)


# -- statements run in the worker thread ------------------------------------------------


def _clocks() -> tuple[float, float]:
    """(wall, this thread's CPU) times, for :meth:`SQLiteStore._timed`."""
    return time.monotonic(), time.thread_time()


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():  # the caller gave up; the job ran all the same
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def _chain(inner: asyncio.Future[Any], outer: asyncio.Future[Any]) -> None:
    """Answer ``outer`` with ``inner``'s outcome, when it comes."""

    def done(_: asyncio.Future[Any]) -> None:
        if inner.cancelled():
            if not outer.done():
                outer.cancel()
            return
        _settle(outer, None if inner.exception() else inner.result(), inner.exception())

    inner.add_done_callback(done)


def _ignore_failure(done: asyncio.Future[Any]) -> None:
    """(A checkpoint that failed: the next one copies what it did not.)"""
    if not done.cancelled():
        done.exception()


def _translate(exc: sqlite3.Error, doing: str = "sqlite") -> StoreError:
    """A ``sqlite3`` error as a :class:`StoreError`: :class:`StoreUnavailable` when the
    file is busy, locked or failing (retry later), a plain one when a write is wrong."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _UNAVAILABLE:
        return StoreUnavailable(f"{doing}: {exc}")
    if isinstance(exc, sqlite3.OperationalError) and code is None:
        return StoreUnavailable(f"{doing}: {exc}")
    return StoreError(f"{doing}: {exc}")


def _busy(exc: StoreUnavailable) -> bool:
    """Whether ``exc`` is SQLite's ``BUSY``: a lock another connection holds."""
    code = getattr(exc.__cause__, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == 5  # SQLITE_BUSY (and its extended codes)


def _balance(db: sqlite3.Connection, account: str) -> int:
    row = db.execute("SELECT balance FROM accounts WHERE account = ?", (account,)).fetchone()
    return 0 if row is None else int(row[0])


def _epoch(db: sqlite3.Connection, table_id: str) -> int:
    row = db.execute("SELECT epoch FROM epochs WHERE table_id = ?", (table_id,)).fetchone()
    return 0 if row is None else int(row[0])


#: What a table row's upsert sets (``?1`` to ``?5``: id, config, state, seq, closed).
_TABLE_SET: Final = (
    " ON CONFLICT (table_id) DO UPDATE SET config = excluded.config,"
    " state = excluded.state, seq = excluded.seq, closed = excluded.closed"
)
#: The upsert of a row whose epoch (``?6``) is the stored one; nothing written otherwise.
_PUT_TABLE_AT_EPOCH: Final = (
    "INSERT INTO tables (table_id, config, state, seq, closed) SELECT ?1, ?2, ?3, ?4, ?5"
    " WHERE ?6 = coalesce((SELECT epoch FROM epochs WHERE table_id = ?1), 0)" + _TABLE_SET
)
_PUT_TABLE: Final = (
    "INSERT INTO tables (table_id, config, state, seq, closed) VALUES (?1, ?2, ?3, ?4, ?5)"
    + _TABLE_SET
)


def _put_table(db: sqlite3.Connection, table: TableRow, table_json: tuple[str, str]) -> None:
    """Upsert the row, after the fencing check (a stale owner writes nothing).

    A commit almost always finds the stored epoch equal to its row's (the one its owner
    claimed, or 0 for a table never claimed): the row is then written by one statement,
    the check in its ``WHERE`` (which writes nothing when the epochs differ). Otherwise
    the stored epoch is read: a lower one is :class:`StaleEpoch`; a higher one (claimed
    elsewhere) is stored, then the row."""
    row = (table.table_id, *table_json, table.seq, int(table.closed))
    if db.execute(_PUT_TABLE_AT_EPOCH, (*row, table.epoch)).rowcount:
        return
    check_epoch(table.table_id, table.epoch, _epoch(db, table.table_id))
    db.execute(
        "INSERT INTO epochs (table_id, epoch) VALUES (?, ?) ON CONFLICT (table_id)"
        " DO UPDATE SET epoch = excluded.epoch",
        (table.table_id, table.epoch),
    )
    db.execute(_PUT_TABLE, row)


#: A table row with its epoch (the rows of ``WHERE`` ...).
_LOAD_TABLES: Final = (
    "SELECT tables.table_id, config, state, seq, closed, coalesce(epoch, 0)"
    " FROM tables LEFT JOIN epochs ON epochs.table_id = tables.table_id"
)


def _rows(rows: list[Any], parts: dict[str, dict[str, Any]]) -> list[TableRow]:
    """Table rows as :data:`_LOAD_TABLES` reads them, each with its parts."""
    return [
        TableRow(
            tid, json.loads(config), json.loads(state), seq, bool(closed), epoch, parts.get(tid)
        )
        for tid, config, state, seq, closed, epoch in rows
    ]


def _put_parts(
    db: sqlite3.Connection, tid: str, drop: bool, parts: list[tuple[str, str | None]]
) -> None:
    """Write a commit's parts of a table (``TableRow.parts``): all of them dropped first
    for a table created or closed, then each written or dropped."""
    if drop:
        db.execute("DELETE FROM table_parts WHERE table_id = ?", (tid,))
    gone = [(tid, key) for key, body in parts if body is None]
    if gone:
        db.executemany("DELETE FROM table_parts WHERE table_id = ? AND part = ?", gone)
    kept = [(tid, key, body) for key, body in parts if body is not None]
    if kept:
        db.executemany(
            "INSERT INTO table_parts (table_id, part, body) VALUES (?, ?, ?)"
            " ON CONFLICT (table_id, part) DO UPDATE SET body = excluded.body",
            kept,
        )


def _parts(db: sqlite3.Connection, tid: str | None) -> dict[str, dict[str, Any]]:
    """The stored parts of one table (or every table): table -> key -> part."""
    rows = db.execute(
        "SELECT table_id, part, body FROM table_parts"
        + ("" if tid is None else " WHERE table_id = ?"),
        () if tid is None else (tid,),
    ).fetchall()
    out: dict[str, dict[str, Any]] = {}
    for table_id, key, body in rows:
        out.setdefault(table_id, {})[key] = json.loads(body)
    return out


def _put_events(
    db: sqlite3.Connection, table: TableRow, events: list[tuple[int, str]], retention: int
) -> None:
    """Append the step's events not yet stored, and prune: a table's events have
    gap-free seqs, so keeping the last ``retention`` seqs keeps the newest
    ``retention`` events (and never more), with one indexed range delete.

    The events at or below the last seq stored are skipped (a retried commit): not by
    ``INSERT OR IGNORE``, which would put back an older event pruned since, and not by
    a test in the insert (``INSERT ... SELECT ... WHERE seq > (SELECT max(seq) ...)``):
    an insert whose ``SELECT`` reads its own table goes through a temporary table, and
    cost more than the read before it."""
    tid = table.table_id
    if table.state is None:  # a table created (again): a new event log
        db.execute("DELETE FROM events WHERE table_id = ?", (tid,))
    if not events:
        return
    (last,) = db.execute(
        "SELECT coalesce(max(seq), -1) FROM events WHERE table_id = ?", (tid,)
    ).fetchone()
    new = [(tid, seq, body) for seq, body in events if seq > last]
    if not new:
        return
    db.executemany("INSERT INTO events (table_id, seq, body) VALUES (?, ?, ?)", new)
    db.execute("DELETE FROM events WHERE table_id = ? AND seq <= ?", (tid, new[-1][1] - retention))


#: A ledger entry's insert (its six fields).
_INSERT_ENTRY: Final = (
    "INSERT INTO ledger (key, src, dst, amount, kind, round_id) VALUES (?, ?, ?, ?, ?, ?)"
)


def _post(
    db: sqlite3.Connection,
    entries: Iterable[Entry],
    day: str | None = None,
    cutoff: str = "",
    pruned: _Pruned | None = None,
) -> tuple[int, dict[str, int], dict[str, list[int]]]:
    """Insert the entries not yet in the ledger and move their balances, in order; with
    ``day``, add the inserted entries' flows to their players' buckets of that day (and
    drop their days before ``cutoff``).
    Returns how many were inserted, the balances they left and the flows they added.

    A new entry between accounts that exist (all but the first into a stake) is two
    statements: its insert, then its move. The insert is refused whole when the key is
    taken or an account is missing (the ``UNIQUE`` key, the foreign keys), and only then
    is the stored entry read (:func:`_refused_entry`): a read of the key before every
    insert cost more than catching the rare refusal (and an insert that tests the key
    itself, ``INSERT ... SELECT ... WHERE NOT EXISTS``, goes through a temporary table).
    A refused insert uses up no ``AUTOINCREMENT`` seq (a conflict ignored, by ``ON
    CONFLICT DO NOTHING`` or ``OR IGNORE``, would). An entry inserted before its move
    that the move refuses goes with the rest of the commit."""
    inserted: list[Entry] = []
    left: dict[str, int] = {}
    for entry in entries:
        row = (entry.key, entry.src, entry.dst, entry.amount, entry.kind, entry.round_id)
        try:
            db.execute(_INSERT_ENTRY, row)
        except sqlite3.IntegrityError:
            if not _refused_entry(db, entry, row):
                continue
        # Move both and read them back in one statement. Amounts and balances stay within
        # 2**53, so a sum never leaves SQLite's 64-bit integers; an overdraft is refused
        # by the CHECK (players), the trigger (stakes) and check_balance, the source's
        # before the destination's (which only rises: only check_balance may refuse it).
        moved = dict(
            db.execute(
                "UPDATE accounts SET balance = balance + iif(account = ?1, -?3, ?3)"
                " WHERE account IN (?1, ?2) RETURNING account, balance",
                (entry.src, entry.dst, entry.amount),
            ).fetchall()
        )
        for account in (entry.src, entry.dst):
            check_balance(account, moved[account])
            left[account] = moved[account]
        inserted.append(entry)
    flows = add_flows({}, inserted)
    if day is not None:
        _put_flows(db, flows, day, cutoff, pruned)
    return len(inserted), left, flows


def _hold_guards(
    db: sqlite3.Connection, guards: Sequence[LimitGuard], flows: Mapping[str, list[int]]
) -> None:
    """Raise :class:`LimitPassed` when the ``flows`` just added take a player past one
    of ``guards`` (in the commit's transaction: its savepoint is rolled back)."""
    for guard in guards:
        index, _ = guard_measure(guard.kind)
        column = FLOW_NAMES[index]  # (a name of ours, never a caller's text)
        (total,) = db.execute(
            f"SELECT COALESCE(SUM({column}), 0) FROM player_days WHERE player_id = ? AND day >= ?",
            (guard.player, guard.since),
        ).fetchone()
        breach = guard_breach(guard, int(total), flows.get(guard.player, [0, 0, 0])[index])
        if breach is not None:
            raise breach


def _refused_entry(db: sqlite3.Connection, entry: Entry, row: tuple[Any, ...]) -> bool:
    """After ``entry``'s insert was refused: False when the same entry is stored under
    its key (a retried commit: skipped), :class:`KeyConflict` when another one is; else
    an account was missing: they are made, the entry inserted (True: to be moved)."""
    old = db.execute(
        "SELECT key, src, dst, amount, kind, round_id FROM ledger WHERE key = ?", (entry.key,)
    ).fetchone()
    if stored_again(None if old is None else Entry(*old), entry):
        return False
    db.executemany(
        "INSERT OR IGNORE INTO accounts (account) VALUES (?)", ((entry.src,), (entry.dst,))
    )
    db.execute(_INSERT_ENTRY, row)  # (refused again for any other reason: the caller's)
    return True


class _Pruned:
    """The players whose days older than :data:`FLOW_DAYS` were deleted on ``day``: a
    player's first flow of a day prunes, the rest of the day's commits need not (a
    prune forgotten by a rolled-back commit is done again the next day: an extra old
    row is harmless, every read asks for its days)."""

    def __init__(self) -> None:
        self.day = ""
        self.players: set[str] = set()

    def due(self, day: str, players: Iterable[str]) -> list[str]:
        """Of ``players``, those not pruned on ``day`` yet; noted as pruned now."""
        if day != self.day:
            self.day, self.players = day, set()
        due = [player for player in players if player not in self.players]
        self.players.update(due)
        return due


def _put_flows(
    db: sqlite3.Connection,
    flows: Mapping[str, list[int]],
    day: str,
    cutoff: str,
    pruned: _Pruned | None = None,
) -> None:
    """Add each player's flows to their row of ``day``, and delete their rows before
    ``cutoff`` (an indexed range of the primary key), once a day per player when
    ``pruned`` remembers it."""
    if not flows:
        return
    db.executemany(
        "INSERT INTO player_days (player_id, day, staked, net, deposited) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (player_id, day) DO UPDATE SET staked = staked + excluded.staked,"
        " net = net + excluded.net, deposited = deposited + excluded.deposited",
        ((player, day, *sums) for player, sums in flows.items()),
    )
    due = list(flows) if pruned is None else pruned.due(day, flows)
    if due:
        db.executemany(
            "DELETE FROM player_days WHERE player_id = ? AND day < ?",
            ((player, cutoff) for player in due),
        )


def _put_calls(db: sqlite3.Connection, calls: list[tuple[dict[str, Any], str]]) -> None:
    """Insert the wallet calls whose transaction id is not stored yet (the stored one is
    kept as it is: a retried commit). Most commits have none: no statement then."""
    if not calls:
        return
    db.executemany(
        "INSERT INTO wallet_calls (transaction_id, kind, state, player, table_id, round_id,"
        " currency, amount, next_at, created, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (transaction_id) DO NOTHING",
        (
            (
                call["transaction_id"],
                call["kind"],
                call["state"],
                call["player"],
                call["table"],
                call["round_id"],
                call["currency"],
                call["amount"],
                call["next_at"],
                call["created"],
                text,
            )
            for call, text in calls
        ),
    )


def _loaded_call(seq: int, data: str) -> dict[str, Any]:
    return {**json.loads(data), "seq": int(seq)}


def _put_round(db: sqlite3.Connection, index: RoundIndex, body: str, keep: int) -> None:
    """Upsert a round record (keeping its place in history), re-index its players and
    keep each player's index to their newest ``keep`` rounds."""
    db.execute(
        "INSERT INTO rounds (round_id, table_id, shoe_no, coup_no, body, time) VALUES"
        " (?, ?, ?, ?, ?, ?) ON CONFLICT (round_id) DO UPDATE SET table_id = excluded.table_id,"
        " shoe_no = excluded.shoe_no, coup_no = excluded.coup_no, body = excluded.body,"
        " time = excluded.time",
        (index.round_id, index.table, index.shoe_no, index.coup_no, body, index.time),
    )
    (seq,) = db.execute("SELECT seq FROM rounds WHERE round_id = ?", (index.round_id,)).fetchone()
    db.execute("DELETE FROM round_players WHERE round_seq = ?", (seq,))
    db.executemany(
        "INSERT INTO round_players (player_id, round_seq) VALUES (?, ?)",
        ((player, seq) for player in index.players),
    )
    db.executemany(
        "DELETE FROM round_players WHERE player_id = ? AND round_seq <= (SELECT round_seq"
        " FROM round_players WHERE player_id = ? ORDER BY round_seq DESC LIMIT 1 OFFSET ?)",
        ((player, player, keep) for player in index.players),
    )


def _audit(db: sqlite3.Connection) -> dict[str, Any]:
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
    kinds = ("hold", *OUTCOME_KINDS)
    wagers = [
        Entry(*row)
        for row in db.execute(
            "SELECT key, src, dst, amount, kind, round_id FROM ledger"
            f" WHERE kind IN ({', '.join('?' * len(kinds))})",
            kinds,
        )
    ]
    recorded = {
        round_id
        for (round_id,) in db.execute(
            "SELECT DISTINCT ledger.round_id FROM ledger JOIN rounds"
            " ON rounds.round_id = ledger.round_id WHERE ledger.kind = 'hold'"
        )
    }
    problems = hold_problems(wagers, recorded, balances)
    return audit_report(balances, flows, count, problems)


def _restriction(db: sqlite3.Connection, player_id: str) -> dict[str, Any] | None:
    """The restriction stored for ``player_id`` (maybe expired), or ``None``."""
    found = db.execute(
        "SELECT body FROM player_restrictions WHERE player_id = ?", (player_id,)
    ).fetchone()
    return None if found is None else dict(json.loads(found[0]))


def _limits(db: sqlite3.Connection, player_id: str) -> dict[str, Any] | None:
    """The limits stored for ``player_id`` (pendings not yet applied), or ``None``."""
    found = db.execute(
        "SELECT body FROM player_limits WHERE player_id = ?", (player_id,)
    ).fetchone()
    return None if found is None else dict(json.loads(found[0]))


def _play_session(db: sqlite3.Connection, player_id: str) -> dict[str, Any] | None:
    """The play session stored for ``player_id`` (``Store.play_session``), or ``None``."""
    found = db.execute(
        "SELECT started, seen, every, next, staked, net FROM play_sessions WHERE player_id = ?",
        (player_id,),
    ).fetchone()
    if found is None:
        return None
    started, seen, every, due, staked, net = found
    return {
        "started": float(started),
        "seen": float(seen),
        "every": None if every is None else float(every),
        "next": None if due is None else float(due),
        "baseline": {"staked": int(staked), "net": int(net)},
    }


def _put_play_session(db: sqlite3.Connection, player_id: str, kept: Mapping[str, Any]) -> None:
    db.execute(
        "INSERT OR REPLACE INTO play_sessions (player_id, started, seen, every, next, staked, net)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            player_id,
            kept["started"],
            kept["seen"],
            kept["every"],
            kept["next"],
            kept["baseline"]["staked"],
            kept["baseline"]["net"],
        ),
    )
