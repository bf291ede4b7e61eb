"""The SQLite store's connection: the worker thread, group and direct commits, the
file opened (and migrated) and closed, players and balances, and the one write
(:meth:`SQLiteCore.commit`, a planned commit applied in one savepoint).

The package docstring (``server.store.sqlite``) says why; this module must never let a
``sqlite3`` exception escape nor touch the connection outside the worker but while the
worker holds no job.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from typing import Any, Final, TypeVar
from urllib.request import pathname2url

from server.protocol.errors import Overdrawn, StoreError, StoreInUse, StoreUnavailable
from server.store.base import EVENT_RETENTION, HISTORY_LIMIT, CommitResult, RoundIndex
from server.store.front import StoreFront
from server.store.plan import CommitPlan, check_retention
from server.store.records import own_copy
from server.store.sqlite.rows import (
    _balance,
    _hold_guards,
    _post,
    _Pruned,
    _put_calls,
    _put_events,
    _put_parts,
    _put_round,
    _put_table,
)
from server.store.sqlite.schema import (
    _ADDED,
    _ADDED_TOO,
    _ROUND_TIME_BACKFILL,
    _ROUND_TIME_COLUMN,
    _ROUND_TIMES,
    _SCHEMA,
    _VERSION_2_COLUMNS,
    SCHEMA_VERSION,
)

#: How long a write waits for another connection's lock (a backup, a second process by
#: mistake) before it fails with :class:`StoreUnavailable`, in milliseconds. The wait
#: happens in the store's thread, so the loop serves everyone meanwhile; the calls
#: queued behind it wait too, so it is kept to a few seconds.
BUSY_TIMEOUT_MS: Final = 3000

#: SQLite's "cannot write now" codes: BUSY LOCKED NOMEM READONLY IOERR FULL CANTOPEN PROTOCOL
_UNAVAILABLE: Final = frozenset({5, 6, 7, 8, 10, 13, 14, 15})

T = TypeVar("T")


#: The most commits one group (one transaction, one fsync) takes.
GROUP_MAX: Final = 64
#: Commits on the loop's thread that waited longer than this (seconds) turn them off for
#: a while (:meth:`SQLiteStore._commit_direct`): 30 s, doubled each time, at most 10 min.
DIRECT_SLOW: Final = 0.02
DIRECT_COOL_OFF: Final = 30.0
DIRECT_COOL_OFF_MAX: Final = 600.0
#: A commit of more rows goes to the worker. Bursts of bets (~400 rows) and a thousand bettors'
#: settlement (2,200-2,900) stay on the loop: in the worker they took 10-150 ms (issue 37 §3).
DIRECT_MOST: Final = 4096
#: A ``PASSIVE`` checkpoint every this many transactions (:meth:`SQLiteCore._checkpoint`;
#: a lone bet is ~17 pages: at 100 they cost a sixth of its CPU, issue 36).
CHECKPOINT_EVERY: Final = 1000
#: A commit of at least this many rows (and at most :data:`DIRECT_MOST`) is committed by
#: the loop at once when no other is held, not held for the end of the turn: it is a
#: transaction's worth on its own (a burst of bettors' bets, issue 37 §3), and held, its
#: caller waited two turns of the loop for it (each with a slice of a large table's
#: writes: 6 ms at the median, half of a burst's time).
AT_ONCE_ROWS: Final = 8

log = logging.getLogger("chemmy.store")

#: A job's outcome: its result, or the exception it raised.
Outcome = tuple[Any, BaseException | None]

_Item = tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[[], Any], bool]


class _Worker:
    """One thread that runs jobs one at a time, in the order they were submitted, and hands
    each result back to the submitting loop (a queue and ``call_soon_threadsafe``: half the
    hop of a thread pool executor). A job submitted ``grouped`` (a commit) is run with every
    grouped job queued right behind it at that moment (at most :data:`GROUP_MAX`) by
    ``group``, which answers each one's own outcome: the group never waits for company, and
    a job not grouped ends it (it runs after the group, so the order of the calls is kept).
    :attr:`pending` counts the jobs submitted whose answers the loop has not taken yet (the
    loop's own count: raised by :meth:`submit`, lowered when the answer is settled on the
    loop). At 0 the thread holds no job and none is queued, so the loop may use the
    connection itself for a moment (:meth:`SQLiteStore._run_grouped`)."""

    def __init__(
        self, name: str, group: Callable[[list[Callable[[], Any]]], list[Outcome]]
    ) -> None:
        self._jobs: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._group = group
        self.pending = 0
        # A daemon: a store never closed keeps no process alive (SQLite rolls back at open).
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


class SQLiteCore(StoreFront):
    """The connection and the commit of :class:`~server.store.sqlite.SQLiteStore` (its
    public calls are in ``store``).

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
        self.event_retention, self.round_index = check_retention(event_retention, round_index)
        self.path, self.busy_timeout_ms, self.clock = os.fspath(path), busy_timeout_ms, clock
        self._worker: _Worker | None = None
        # Touched in the worker thread, or on the loop's while the worker holds no job
        # (a direct commit, :meth:`_run_grouped`).
        self._db: sqlite3.Connection | None = None
        # ms (:meth:`_busy_timeout`): 0 on the loop, busy_timeout_ms in the worker; None: unknown
        self._busy_ms: int | None = None
        self._serving: int | None = None  # the lock file's descriptor (claim_serving)
        #: Commits stored, and the transactions (groups) they went in: ``commits /
        #: groups`` is the mean group; ``direct``: of the groups, those the loop committed
        #: itself. Direct commits are off (``direct=False``, or for a while after a slow
        #: one: :attr:`direct_until`, a ``time.monotonic`` time).
        self.commits = self.groups = self.direct = 0
        self.direct_on, self.direct_until = direct, 0.0
        self._cool_off = DIRECT_COOL_OFF
        self._checkpointed = 0  # self.groups at the last checkpoint asked of the worker
        self._copying: asyncio.Future[None] | None = None  # its copy (_checkpoint)
        #: Whose flow days this process pruned today (:func:`_put_flows`): once a day each.
        self._pruned = _Pruned()
        # Commits held for a direct commit at the end of this turn of the loop.
        self._batch: list[tuple[Callable[[], Any], asyncio.Future[Any]]] = []
        self._held = 0  # (their rows)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # -- the worker thread -----------------------------------------------------------
    async def _run(self, job: Callable[..., T], *args: Any) -> T:
        """Run ``job(db, *args)`` in the store's thread, after every call made before."""
        result: T = await self._submit(functools.partial(self._in_worker, job, *args))
        return result

    async def _read(self, job: Callable[..., T], *args: Any) -> T:
        """Like :meth:`_run` for a small read of the hot path (a bet's restriction and
        limits, a balance): made on the loop's thread while the worker holds no job (so it
        sees every call made before: the commits held for the end of the turn are
        committed first, by the loop), else by the worker. A read in WAL mode takes no
        lock a writer holds; the pages it needs are in SQLite's cache or the system's, and
        one that still waited more than :data:`DIRECT_SLOW` sends the reads and commits to
        the worker for a while, as a slow commit does. A read that meets a lock all the
        same (``BUSY``: another process in exclusive locking mode, or recovering the WAL)
        goes to the worker, which waits for it: the busy timeout is 0 on the loop."""
        worker = self._worker
        if worker is None:
            raise StoreError("the store is not open")
        if self._batch and self._direct_now(worker):
            # Commits held for the end of this turn: committed now, so the read sees them on
            # the loop. Sent to the worker, they and the reads after them waited there (a
            # thousand bettors' table: a bet's checks waited 11 ms at the median, issue 37 §3).
            self._flush_direct()
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
        *waited* more than :data:`DIRECT_SLOW` turns direct use off for a while: its wall
        time (first alone: most are under) less the loop thread's time on or waiting for a
        CPU (the disk or a lock; not the collector, a profiler, a large transaction's own
        work or a loaded machine, which the worker's thread would not have spared)."""
        if time.monotonic() - started[0] <= DIRECT_SLOW:
            return
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
        batch, self._batch, self._held = self._batch, [], 0
        for held, future in batch:
            _chain(worker.submit(held, grouped=True), future)

    async def _run_grouped(
        self, job: Callable[..., T], *args: Any, rows: int = 0, at_once: bool = False
    ) -> T:
        """Like :meth:`_run`, with ``job`` one write of a group commit
        (:meth:`_commit_group`): it runs inside a transaction, not in its own.

        While the worker holds no job, the commits called in one turn of the loop are
        held and committed together by the loop itself at the end of the turn
        (:meth:`_flush_direct`), without the hop to the store's thread (issue 23). A call
        queued for the worker meanwhile takes them with it first (:meth:`_submit`): the
        calls keep their order; once the turn's ``rows`` would pass :data:`DIRECT_MOST` (two
        settlements), the call and all held go to the worker. None held: one ``at_once``
        (:data:`AT_ONCE_ROWS`) is committed now, in a transaction of its own, and so is any
        with nothing else to run in the turn (asyncio's ready queue, ``_ready``, empty;
        uvloop has none): its caller (a lone ``bet``) goes on in this turn (issue 36)."""
        worker = self._worker
        if worker is None:
            raise StoreError("the store is not open")
        call = functools.partial(self._call, job, *args)
        if self.groups - self._checkpointed >= CHECKPOINT_EVERY:
            self._checkpoint()
        if self._held + rows <= DIRECT_MOST and self._direct_now(worker):
            loop = asyncio.get_running_loop()
            if not self._batch and (at_once or not getattr(loop, "_ready", True)):
                outcomes = self._commit_direct([call])
                if outcomes is None:  # (to the worker, which waits for the lock)
                    at_worker: T = await self._submit(call, grouped=True)
                    return at_worker
                kept, error = outcomes[0]
                if error is not None:
                    raise error
                done: T = kept
                return done
            future: asyncio.Future[T] = loop.create_future()
            if not self._batch:
                loop.call_soon(self._flush_direct)
            self._batch.append((call, future))
            self._held += rows
            return await future
        result: T = await self._submit(call, grouped=True)
        return result

    def _flush_direct(self) -> None:
        """Commit the commits held in this turn of the loop on the loop's thread (the
        worker holds no job: any job queued since took them along), or, when they cannot
        be committed here, hand them to the worker in their order."""
        batch, self._batch, self._held = self._batch, [], 0
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

        A commit in WAL mode at ``synchronous=NORMAL`` appends to the WAL without waiting
        for the disk, but the first after a checkpoint copied it all restarts the WAL (one
        fdatasync a cycle, :data:`CHECKPOINT_EVERY`). The write lock held by another process
        (busy timeout 0 on the loop: ``BUSY`` at ``BEGIN`` gives None, the worker waits) and
        checkpoints (:meth:`_checkpoint`) are kept off this path. One that still waited over
        :data:`DIRECT_SLOW` (a disk that makes even that wait: :meth:`_timed`) turns direct
        commits off for a while: a slow disk stalls the loop for one commit, not the next."""
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

    def _checkpoint(self, again: bool = False) -> None:
        """Checkpoint the WAL, due every :data:`CHECKPOINT_EVERY` transactions (its pages
        copied into the file; reused from its start once all are). It fsyncs: never on the
        loop. A connection of its own copies them in a thread (tens of ms), the loop going
        on, then again those written meanwhile, then the worker the last few (a few ms)."""
        self._checkpointed = self.groups
        if self._copying is None or self._copying.done():  # (one at a time)
            self._copying = asyncio.get_running_loop().run_in_executor(None, _copy, self.path)
            self._copying.add_done_callback(functools.partial(self._copied, again))

    def _copied(self, again: bool, copy: asyncio.Future[None]) -> None:
        _ignore_failure(copy)
        if not again and self._worker is not None and self.groups > self._checkpointed:
            self._checkpoint(again=True)  # (those written meanwhile copied too)
        elif self._worker is not None:
            done = self._submit(functools.partial(self._in_worker, _passive))
            done.add_done_callback(_ignore_failure)

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
                self._pruned.forget()  # (its commits' prunes were rolled back too)
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

    def _connection(self) -> _Translating:
        """The open connection, with third-party errors translated at the boundary."""
        if self._db is None:
            raise StoreError("the store is not open")
        return _Translating(self._db)

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
            db.execute("PRAGMA cache_size = -65536")  # KiB (2 MiB held few tables' rows)
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
                for statement in (*_ADDED, *_ADDED_TOO):
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
        worker, self._worker = self._worker, None  # (a checkpoint's copy starts no other)
        if self._copying is not None:  # its own connection closed before the lock goes
            await asyncio.wait([self._copying])
        fd, self._serving = self._serving, None
        if fd is not None:
            os.close(fd)  # the flock goes with the descriptor
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

    # -- the one write (planned by StoreFront.commit) -----------------------------------
    async def _apply(self, plan: CommitPlan) -> CommitResult:
        # A commit of many rows (a settlement of many bettors) goes to the thread at once.
        rows = len(plan.entries) + len(plan.events) + (len(plan.parts[1]) if plan.parts else 0)
        return await self._run_grouped(self._commit, plan, rows=rows, at_once=rows >= AT_ONCE_ROWS)

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
        self._pruned.done()  # (nothing after this refuses: the prune counts)
        return CommitResult(
            inserted, {a: left[a] if a in left else _balance(db, a) for a in plan.report}
        )


# -- statements run in the worker thread ------------------------------------------------


def _clocks() -> tuple[float, float]:
    """(wall, this thread's time on or waiting for a CPU), for :meth:`SQLiteStore._timed`:
    a loop the OS preempted did not wait for the store (issue 37 §3). Linux's
    ``schedstat`` (ran, waited; ns) from a descriptor kept for the thread's life (1 µs a
    read; only the loop's threads time calls); elsewhere, the CPU time alone."""
    fd = getattr(_THREAD, "schedstat", None)
    if fd is None:
        with suppress(OSError):
            fd = os.open(f"/proc/self/task/{threading.get_native_id()}/schedstat", os.O_RDONLY)
        fd = _THREAD.schedstat = -1 if fd is None else fd
    try:  # (not ``suppress``: twice a command; -1, no schedstat: no system call)
        ran, waited = os.pread(fd, 96, 0).split()[:2] if fd >= 0 else ("", "")
        return time.monotonic(), (int(ran) + int(waited)) / 1e9
    except (OSError, ValueError):
        return time.monotonic(), time.thread_time()


_THREAD = threading.local()


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


def _passive(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def _copy(path: str) -> None:
    """A checkpoint on a connection of its own (:meth:`SQLiteCore._checkpoint`)."""
    with closing(sqlite3.connect(f"file:{pathname2url(path)}?mode=rw", uri=True)) as db:
        _passive(db)


class _Translating:
    """``with`` it: the connection; a third-party error raised inside is raised again as the
    store's (a class: a ``contextmanager``'s generator cost 3x as much, twice a commit)."""

    __slots__ = ("db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        return self.db

    def __exit__(self, kind: Any, exc: BaseException | None, _: Any) -> None:
        if isinstance(exc, sqlite3.IntegrityError):
            if "no_overdraft" in str(exc):
                raise Overdrawn("a player's or a stake's balance would go negative") from exc
            raise StoreError(f"integrity: {exc}") from exc
        if isinstance(exc, sqlite3.Error):
            raise _translate(exc) from exc
        if isinstance(exc, OverflowError | UnicodeError):  # past 64 bits; a lone surrogate
            what = "out of range" if isinstance(exc, OverflowError) else "not storable text"
            raise StoreError(f"{what}: {exc}") from exc


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
