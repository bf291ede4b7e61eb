"""Direct commits and reads on SQLite (issue 23): while the store's worker holds no job,
the commits called in one turn of the loop are committed together by the loop at the end
of that turn, and the hot reads are made on the loop, without the hop to the thread.
Each is still stored before its caller's await returns, the calls keep their order, a
write lock held by another process sends them to the worker (which waits for it, the
loop running on), checkpoints run in the worker, and a slow one turns the path off."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from server.ledger.accounts import Entry
from server.protocol.errors import KeyConflict
from server.store import SQLiteStore
from server.store.base import TableRow
from server.store.sqlite import connection as sqlite_module
from tests.kit.timing import TIMEOUT_FACTOR
from tests.server.test_store import Ticker, bet, hold_write_lock
from tests.server.test_store_group_commit import step


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    made = SQLiteStore(tmp_path / "chemmy.sqlite3")
    await made.open()
    await made.ensure_player("ann", "Ann", 1000)
    for i in range(20):
        await made.ensure_player(f"p{i}", f"P{i}", 1000)
    yield made
    await made.close()


def counts(store: SQLiteStore) -> tuple[int, int, int]:
    return store.commits, store.groups, store.direct


async def test_a_lone_commit_is_made_by_the_loop_and_stored_before_it_returns(
    store: SQLiteStore,
) -> None:
    before = counts(store)
    result = await store.commit(entries=[bet("k1", "ann", 10)])
    assert result.inserted == 1 and result.balances == {"player:ann": 990}
    assert counts(store) == (before[0] + 1, before[1] + 1, before[2] + 1)
    assert await store.balances(["player:ann", "stake:t1:ann"]) == {
        "player:ann": 990,
        "stake:t1:ann": 10,
    }


async def test_the_commits_of_one_turn_share_one_transaction(store: SQLiteStore) -> None:
    before = counts(store)
    results = await asyncio.gather(*(store.commit(**step(i, 1)) for i in range(10)))
    assert [r.balances for r in results] == [{f"player:p{i}": 990} for i in range(10)]
    assert counts(store) == (before[0] + 10, before[1] + 1, before[2] + 1)
    assert sorted(row.table_id for row in await store.load_tables()) == sorted(
        f"t{i}" for i in range(10)
    )


async def test_a_refused_commit_is_its_own_and_the_others_of_its_turn_stay(
    store: SQLiteStore,
) -> None:
    await store.commit(**step(1, 1))
    answers = await asyncio.gather(
        store.commit(**step(0, 1)),
        store.commit(**step(1, 2, key="t1-r1:p1:stake")),  # a key already taken
        store.commit(**step(2, 1)),
        return_exceptions=True,
    )
    assert isinstance(answers[1], KeyConflict)
    assert not isinstance(answers[0], BaseException)
    assert not isinstance(answers[2], BaseException)
    money = await store.balances(["player:p0", "player:p1", "player:p2"])
    assert money == {"player:p0": 990, "player:p1": 990, "player:p2": 990}


async def test_a_read_called_among_held_commits_sees_exactly_those_before_it(
    store: SQLiteStore,
) -> None:
    calls = [store.commit(entries=[bet(f"k{n}", "ann", 1)]) for n in range(10)]
    calls.insert(4, store.balances(["player:ann"]))  # queued for the worker: takes them along
    calls.insert(8, store.player_money("ann", ["t1"]))
    done = await asyncio.gather(*calls)
    assert done[4] == {"player:ann": 1000 - 4}
    assert done[8] == (1000, 1000 - 7)
    assert await store.balances(["player:ann"]) == {"player:ann": 990}
    assert [e.key for e in await store.ledger("stake:t1:ann")] == [
        f"k{n}" for n in reversed(range(10))
    ]


async def test_a_read_among_held_commits_commits_them_and_reads_on_the_loop(
    store: SQLiteStore,
) -> None:
    """A read called while commits are held for the end of the turn commits them there
    and then, on the loop, and reads on the loop: it does not send them, itself and what
    follows to the store's thread (issue 37 §3: a bet's checks waited there)."""
    loop_thread = threading.get_ident()
    before = counts(store)
    calls: list[Any] = [store.commit(entries=[bet(f"k{n}", "ann", 1)]) for n in range(3)]
    calls.append(store.balances(["player:ann"]))
    calls.append(store._read(lambda db: threading.get_ident()))
    done = await asyncio.gather(*calls)
    assert done[3] == {"player:ann": 997}  # the three held before it, stored
    assert done[4] == loop_thread
    assert counts(store) == (before[0] + 3, before[1] + 1, before[2] + 1)  # by the loop


async def test_a_commit_of_many_rows_is_stored_at_once_when_none_is_held(
    store: SQLiteStore,
) -> None:
    """A commit of ``AT_ONCE_ROWS`` rows or more (a burst of bettors' bets) with no other
    held is committed by the loop before its call returns, without waiting for the end
    of the turn (issue 37 §3: its commands waited two turns of the loop for it)."""
    before = counts(store)
    stored_at_once(store, [bet(f"k{n}", f"p{n}", 5) for n in range(sqlite_module.AT_ONCE_ROWS)])
    # A smaller one is still held for the end of the turn, with the others of its turn.
    few = [store.commit(entries=[bet(f"f{n}", "ann", 1)]) for n in range(3)]
    assert [r.inserted for r in await asyncio.gather(*few)] == [1, 1, 1]
    assert counts(store) == (before[0] + 4, before[1] + 2, before[2] + 2)
    assert await store.balances(["player:p0", "player:ann"]) == {
        "player:p0": 995,
        "player:ann": 997,
    }


async def test_a_lone_commit_with_nothing_else_in_its_turn_is_stored_at_once(
    store: SQLiteStore,
) -> None:
    """A commit with none held and nothing else to run in its turn of the loop (the
    ready queue empty: nothing could join it) is committed before its call returns; its
    caller (a lone ``bet``'s step) goes on in the same turn, not two turns later (issue
    36). With something else to run in the turn, it is held for the turn's end."""
    loop = asyncio.get_running_loop()
    for _ in range(10):  # (whatever the test's set-up left to run, run first)
        if not loop._ready:  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0)
    before = counts(store)
    call = store.commit(entries=[bet("k1", "ann", 10)])
    with pytest.raises(StopIteration) as stored:  # never suspended: done in this turn
        call.send(None)
    assert stored.value.value.balances == {"player:ann": 990}
    assert counts(store) == (before[0] + 1, before[1] + 1, before[2] + 1)
    ran: list[str] = []
    loop.call_soon(ran.append, "another callback of this turn")
    held = asyncio.ensure_future(store.commit(entries=[bet("k2", "ann", 10)]))
    await asyncio.sleep(0)  # (the held commit's task begins; the other callback runs)
    assert ran and not held.done()  # held for the end of the turn, not yet stored
    assert (await held).balances == {"player:ann": 980}
    assert counts(store) == (before[0] + 2, before[1] + 2, before[2] + 2)


async def test_a_commit_of_many_rows_called_among_held_ones_keeps_its_place(
    store: SQLiteStore,
) -> None:
    """Called while smaller commits are held, a large one is held with them, after them."""
    before = counts(store)
    many = [bet(f"k{n}", "ann", 1, round_id=f"r{n}") for n in range(sqlite_module.AT_ONCE_ROWS)]
    calls = [store.commit(entries=[bet("first", "ann", 100)]), store.commit(entries=many)]
    done = await asyncio.gather(*calls)
    assert done[0].balances == {"player:ann": 900}
    assert done[1].balances == {"player:ann": 900 - len(many)}
    assert counts(store) == (before[0] + 2, before[1] + 1, before[2] + 1)


async def test_while_the_worker_has_a_job_commits_and_reads_go_through_it(
    store: SQLiteStore,
) -> None:
    gate = threading.Event()
    held = asyncio.ensure_future(store._run(lambda db: gate.wait(10)))
    await asyncio.sleep(0.02)  # the worker is in the gate
    before = counts(store)
    commit = asyncio.ensure_future(store.commit(entries=[bet("k1", "ann", 10)]))
    read = asyncio.ensure_future(store.balances(["player:ann"]))
    await asyncio.sleep(0.05)
    assert not commit.done() and not read.done()  # queued behind the job, in order
    gate.set()
    await held
    assert (await commit).inserted == 1
    assert await read == {"player:ann": 990}
    assert counts(store) == (before[0] + 1, before[1] + 1, before[2])  # none direct


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
@pytest.mark.slow
async def test_a_write_lock_held_elsewhere_sends_the_commit_to_the_worker_and_the_loop_runs(
    store: SQLiteStore,
) -> None:
    # Held 2 s, as test_store's competing writer: a loop that waited for it would stall
    # for all of it, and a loaded machine's own hiccups (0.51 s once, with the whole suite
    # on two cores) stay well under the line.
    locker = await hold_write_lock(Path(store.path), 2.0)
    direct = store.direct
    ticker = Ticker()
    result = await store.commit(entries=[bet("k1", "ann", 10)])  # waited in the thread
    worst = await ticker.stop()
    assert await locker.wait() == 0
    assert result.inserted == 1
    assert store.direct == direct  # BUSY at BEGIN: not committed on the loop
    assert worst < min(1.0 * TIMEOUT_FACTOR, 1.5), f"the loop stalled for {worst:.3f} s"
    assert (await store.commit(entries=[bet("k2", "ann", 10)])).inserted == 1
    assert store.direct == direct + 1  # the lock gone: direct again


async def test_a_slow_direct_commit_turns_the_path_off_for_a_while(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_module, "DIRECT_SLOW", -1.0)  # every one is "slow"
    await store.commit(entries=[bet("k1", "ann", 10)])
    direct, groups = store.direct, store.groups
    loop_time = asyncio.get_running_loop().time()
    assert store.direct_until > 0 and store.direct_until - loop_time >= 29
    await store.commit(entries=[bet("k2", "ann", 10)])
    await store.player_restriction("ann")
    assert store.direct == direct and store.groups == groups + 1  # through the worker
    store.direct_until = 0.0  # the cool-off over: the next is direct, and doubles it
    await store.commit(entries=[bet("k3", "ann", 10)])
    assert store.direct == direct + 1
    assert store.direct_until - asyncio.get_running_loop().time() >= 59
    assert await store.balances(["player:ann"]) == {"player:ann": 970}


async def test_a_commit_that_waited_turns_the_path_off(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit slow because it waited (a disk, a lock: here a sleep inside its
    statements) turns direct commits off."""
    put_table = sqlite_module._put_table

    def slow_put_table(*args: Any) -> None:
        time.sleep(0.04)
        put_table(*args)

    monkeypatch.setattr(sqlite_module, "_put_table", slow_put_table)
    await store.commit(**step(0, 1))
    assert store.direct == 1 and store.direct_until > 0


@pytest.mark.parametrize(
    ("wall", "cpu", "off"),
    [
        (0.04, 0.0, True),  # it waited 40 ms: a disk, a lock
        (0.04, 0.04, False),  # 40 ms of work: the collector, a profiler, a big group
        (0.05, 0.04, False),  # 10 ms off the CPU: under the limit
        (0.08, 0.04, True),  # 40 ms of work (or waiting for a CPU) and 40 ms asleep
    ],
)
async def test_only_what_the_loop_waited_counts(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, wall: float, cpu: float, off: bool
) -> None:
    """The rule itself, on the store's two clocks (wall; the loop thread's CPU and its
    wait for one): a direct commit turns the path off when its wall time less the
    thread's time on or waiting for a CPU passes :data:`DIRECT_SLOW`."""
    now = time.monotonic()  # (the wall time is read alone first: it must have passed)
    readings = iter([(now - wall, 7.0), (now, 7.0 + cpu)])
    monkeypatch.setattr(sqlite_module, "_clocks", lambda: next(readings))
    await store.commit(**step(0, 1))
    assert store.direct == 1
    assert (store.direct_until > 0) == off


@contextlib.contextmanager
def sharing_one_cpu_with_a_spinner() -> Iterator[None]:
    """This thread and a busy process on one CPU: the OS takes the CPU from this
    thread about half the time (a loaded machine)."""
    cpu = min(os.sched_getaffinity(0))
    mine = os.sched_getaffinity(0)
    spinner = subprocess.Popen(
        [sys.executable, "-c", "while True: pass"],
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    os.sched_setaffinity(0, {cpu})  # (0: this thread)
    try:
        time.sleep(0.05)  # (the spinner runs)
        yield
    finally:
        os.sched_setaffinity(0, mine)
        spinner.kill()
        spinner.wait()


async def test_a_loop_the_os_preempted_did_not_wait_for_the_store(store: SQLiteStore) -> None:
    """Time the loop thread spent waiting for a CPU is not the store's: on a loaded
    machine a direct read or commit the OS preempted does not turn the path off (it did:
    every read and commit then went through the thread, issue 37 §3)."""
    with sharing_one_cpu_with_a_spinner():
        started, cpu_before = sqlite_module._clocks(), time.thread_time()
        end = time.monotonic() + 0.2
        while time.monotonic() < end:  # 200 ms of "a read", about half of it preempted
            pass
        wall = time.monotonic() - started[0]
        preempted = wall - (time.thread_time() - cpu_before)
        store._timed(started, "a read")
    assert preempted > 0.05, preempted  # (the OS did take the CPU away)
    assert store.direct_until == 0  # ... and that did not count as waiting


async def test_direct_false_keeps_every_call_in_the_thread(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "chemmy.sqlite3", direct=False)
    await store.open()
    try:
        await store.ensure_player("ann", "Ann", 1000)
        await asyncio.gather(*(store.commit(entries=[bet(f"k{n}", "ann", 1)]) for n in range(5)))
        assert store.direct == 0 and store.commits == 5
        assert await store.balances(["player:ann"]) == {"player:ann": 995}
    finally:
        await store.close()


def wal_size(store: SQLiteStore) -> int:
    return os.path.getsize(f"{store.path}-wal")


@pytest.mark.parametrize("every", [100, 10**9])
async def test_the_worker_checkpoints_every_so_many_transactions(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, every: int
) -> None:
    """SQLite's own checkpoints are off (they fsync on the committing thread); one runs
    every CHECKPOINT_EVERY transactions (copied in a thread of its own, then by the
    worker), after which the WAL is written from its start again: it stops growing.
    Without them (every = 10**9) it grows on."""
    monkeypatch.setattr(sqlite_module, "CHECKPOINT_EVERY", every)
    statements: list[str] = []
    assert store._db is not None
    store._db.set_trace_callback(statements.append)
    for n in range(400):
        await store.commit(**step(n % 20, n + 2))
        if n == 100:
            early = wal_size(store)
        if store._copying is not None and not store._copying.done():  # (one was asked)
            ran = sum("wal_checkpoint" in statement for statement in statements)
            assert await checkpointed(statements, ran) == ran + 1
    if every == 100:
        assert sum("wal_checkpoint" in statement for statement in statements) == 3
        assert wal_size(store) <= early * 1.5
    else:
        assert wal_size(store) > early * 2


async def test_a_quick_direct_commit_reads_the_threads_clock_once(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A direct commit whose wall time is under DIRECT_SLOW waited less than that: the
    loop thread's clock (a read of /proc) is read at its start, not again at its end
    (issue 36: read twice, the store's clocks were 0.7% of the server's CPU)."""
    read = []
    clocks = sqlite_module._clocks
    monkeypatch.setattr(sqlite_module, "_clocks", lambda: read.append(1) or clocks())
    for n in range(20):
        await store.commit(**step(n, 2, amount=1))
    assert store.direct == 20
    assert len(read) < 30  # one a commit (a rare slow one on a loaded machine: two)


async def checkpointed(statements: list[str], past: int = 0) -> int:
    """How many checkpoints the worker ran, once it ran more than ``past`` (within 5 s)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        ran = sum("wal_checkpoint" in statement for statement in statements)
        if ran > past:
            return ran
        await asyncio.sleep(0.01)
    return ran


async def test_a_checkpoint_every_thousand_transactions(store: SQLiteStore) -> None:
    """The checkpoint copies the WAL's pages into the file: asked every 100 transactions
    it cost a sixth of a lone commit's CPU, copying pages (a table's row, the ledger's
    last) that the next commits wrote again (issue 36). One in 1,000 now."""
    statements: list[str] = []
    assert store._db is not None
    store._db.set_trace_callback(statements.append)  # (the worker holds no job)
    for n in range(1001):
        await store.commit(**step(n % 20, n + 2, amount=1))
    assert await checkpointed(statements) == 1


def held_copies(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """A checkpoint's copies held until the event is set; the paths copied."""
    copying, copy, copies = threading.Event(), sqlite_module._copy, []

    def held_copy(path: str) -> None:
        copying.wait(5)
        copy(path)
        copies.append(path)

    monkeypatch.setattr(sqlite_module, "_copy", held_copy)
    return copying, copies


async def test_the_loop_commits_on_while_a_checkpoint_copies(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint's pages are copied by a connection of its own in a thread of its own
    while the loop commits on directly (in the worker, the commits and reads waited behind
    it: tens of ms at 1,000 transactions), then again those written meanwhile, then by the
    worker the last few; the WAL is then written from its start again (issue 36)."""
    statements: list[str] = []
    assert store._db is not None
    store._db.set_trace_callback(statements.append)
    copying, copies = held_copies(monkeypatch)
    for n in range(1001):
        await store.commit(**step(n % 20, n + 2, amount=1))
    direct = store.direct
    for n in range(20):  # (the copy is held)
        await store.commit(**step(n, 2000 + n, amount=1))
    assert store.direct == direct + 20 and not statements[-1].startswith("PRAGMA")
    copying.set()
    assert await checkpointed(statements) == 1
    assert len(copies) == 2  # (again, for the 20 commits made while the first copied)
    copied = wal_size(store)
    for n in range(50):
        await store.commit(**step(n % 20, 3000 + n, amount=1))
    assert wal_size(store) == copied  # (written from its start: it does not grow)
    audit = await store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]


async def test_the_store_closes_once_a_checkpoints_copy_is_done(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint's copy holds a connection of its own to the file: the store closes (its
    lock let go) only once that copy is done, and starts no copy after it."""
    copying, copies = held_copies(monkeypatch)
    await store.commit(**step(0, 2, amount=1))
    store._checkpoint()
    closing = asyncio.create_task(store.close())
    await asyncio.sleep(0.1)
    assert not closing.done()  # (the copy still holds its connection to the file)
    copying.set()
    await closing
    assert len(copies) == 1 and store._copying is not None and store._copying.done()


def thread_reads(thread: threading.Thread) -> int:
    """How many read calls the OS counted for ``thread`` (Linux)."""
    with open(f"/proc/self/task/{thread.native_id}/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("syscr:"))


async def test_the_rows_of_many_tables_stay_in_sqlites_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table's row is some 11 KB (three overflow pages): in SQLite's default 2 MiB
    cache the rows of 120 tables did not fit, and each commit read its row's pages back
    from the file before rewriting them (issue 36). The connection's cache holds them."""
    monkeypatch.setattr(sqlite_module, "CHECKPOINT_EVERY", 10**9)  # (the cache alone)
    store = SQLiteStore(tmp_path / "chemmy.sqlite3", direct=False)  # (the worker's reads)
    await store.open()
    try:
        assert store._worker is not None
        for turn in range(2):
            if turn:
                before = thread_reads(store._worker._thread)
            for i in range(200):
                row = TableRow(f"t{i}", {}, {"felt": f"{i}{turn}" * 4000}, turn + 1)
                await store.commit(table=row)
        assert thread_reads(store._worker._thread) - before < 20
    finally:
        await store.close()


async def test_a_burst_of_bets_and_a_settlement_are_committed_by_the_loop(
    store: SQLiteStore,
) -> None:
    """A burst of up to 200 bettors' bets (some 400 rows) and the settlement of a thousand
    bettors (2,200-2,900 rows) are committed by the loop before their call returns: in the
    worker each read and commit after a burst waited for it, and one took 10-150 ms there
    beside a busy loop, and a settlement 16-97 ms before its events could go (issue 37
    §3). A commit of more than ``DIRECT_MOST`` rows still goes to the worker."""
    before = counts(store)
    stored_at_once(store, [bet(f"b{n}", "ann", 1) for n in range(400)])
    stored_at_once(store, [bet(f"t{n}", f"p{n % 20}", 1) for n in range(2_900)])
    settlement = [bet(f"s{n}", f"p{n % 20}", 1) for n in range(sqlite_module.DIRECT_MOST + 1)]
    assert (await store.commit(entries=settlement)).inserted == len(settlement)
    assert counts(store) == (before[0] + 3, before[1] + 3, before[2] + 2)  # not direct
    assert await store.balances(["player:ann", "player:p0"]) == {
        "player:ann": 600,
        "player:p0": 1000 - 2_900 // 20 - (sqlite_module.DIRECT_MOST + 1 + 19) // 20,
    }


async def test_the_rows_one_turn_holds_for_the_loop_stay_within_direct_most(
    store: SQLiteStore,
) -> None:
    """Two thousand-bettor settlements called in one turn (two tables, 2,900 rows each)
    are not committed by the loop together, holding every table's commands for both: once
    the turn's rows would pass ``DIRECT_MOST``, the call and those held go to the worker,
    in their order (review)."""
    before = counts(store)
    first = [bet(f"a{n}", f"p{n % 20}", 1) for n in range(2_900)]
    second = [bet(f"b{n}", f"p{n % 20}", 1) for n in range(2_900)]
    lone = store.commit(entries=[bet("lone", "ann", 100)])
    done = await asyncio.gather(lone, store.commit(entries=first), store.commit(entries=second))
    assert [d.inserted for d in done] == [1, 2_900, 2_900]
    assert counts(store)[2] == before[2]  # none of them by the loop
    assert await store.balances(["player:ann", "player:p0"]) == {
        "player:ann": 900,
        "player:p0": 1000 - 2 * 2_900 // 20,
    }


def stored_at_once(store: SQLiteStore, entries: list[Entry]) -> None:
    """``entries`` committed by the loop before the call returns: one transaction, one
    direct use, one commit, all of them inserted."""
    before = counts(store)
    call = store.commit(entries=entries)
    with pytest.raises(StopIteration) as stored:  # never suspended: done in this turn
        call.send(None)
    assert stored.value.value.inserted == len(entries)
    assert counts(store) == (before[0] + 1, before[1] + 1, before[2] + 1)
