"""Benchmark of the stores: what one table step's commit costs, seen from the event loop.

Run from the project root: ``python -m bench.store`` (``--no-write`` to only print).
Prints a table and writes it to docs/benchmarks.md, section "## Store (bench/store.py)"
(the rest of the file is kept).

Each store commits what a croupier commits for a ``bet``: two ledger entries (the
chips to the player's stake and back, so the money never runs out), the table row with
a 2 KiB state, and the step's event where the store keeps events. The figure is the
round trip of ``await store.commit(...)`` from the loop: for SQLite that includes the
hop to its worker thread and back, for Redis the network round trip and the script.
Redis is a ``redis-server`` of its own on a free port (tests/redis_server.py), AOF on
with ``appendfsync everysec``.

"Loop stall under a lock": another process holds SQLite's write lock for 0.5 s while
one commit waits for it; the figure is the longest the loop went without running a
10 ms timer meanwhile (a store that waits on the loop's thread stalls everyone).

``--baseline DIR`` measures the ``server`` package in DIR (another checkout) in a
subprocess running this same script, with only ``server`` taken from DIR, and puts its
rows beside these, marked "baseline". ``--baseline REV`` (a git revision, not a folder)
does the same with that revision's ``server`` (``git archive REV server``).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import server.store as stores
from bench._util import ROOT, load_line, loadavg, machine, percentile, write_benchmarks
from server.store.base import TableRow
from server.table.wallet import Entry

SECTION = "## Store (bench/store.py)"
COMMAND = "python -m bench.store"
COMMITS = 3000
WARMUP = 200

LOCKER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


def state_of(n: int) -> dict[str, Any]:
    """A table state of about 2 KiB (the size docs/benchmarks.md measures for a step)."""
    return {
        "phase": "betting",
        "seq": n,
        "shoe": {"cards": "AsKd9h" * 230, "position": 40 + n % 300, "seed": "ab" * 32},
        "seats": [{"player": f"bot-{i}", "bets": {"player": 100}} for i in range(3)],
    }


async def commits(store: Any, count: int) -> list[float]:
    """Round trips (seconds) of ``count`` step commits."""
    events = "events" in inspect.signature(store.commit).parameters
    await store.ensure_player("bot", "bot", 10**12)
    out: list[float] = []
    for i in range(count):
        seq = i + 1
        kwargs: dict[str, Any] = {
            "entries": [
                Entry(f"r{i}:bot:player:stake", "player:bot", "stake:t1:bot", 100, "stake"),
                Entry(f"r{i}:bot:player:unstake", "stake:t1:bot", "player:bot", 100, "unstake"),
            ],
            "table": TableRow("t1", {"tier": "1-100"}, state_of(i), seq, False),
        }
        if events:
            kwargs["events"] = [
                {"seq": seq, "kind": "bets", "data": {"player": "bot", "bets": {}}, "private": {}}
            ]
        started = time.perf_counter()
        await store.commit(**kwargs)
        out.append(time.perf_counter() - started)
    return out


async def stall_under_lock(path: Path) -> tuple[float, float]:
    """(longest loop gap, commit round trip) while another process holds the lock."""
    store = stores.SQLiteStore(path)
    await store.open()
    try:
        await store.ensure_player("bot", "bot", 10**9)
        locker = await asyncio.create_subprocess_exec(
            sys.executable, "-c", LOCKER, str(path), "0.5", stdout=asyncio.subprocess.PIPE
        )
        assert locker.stdout is not None
        await locker.stdout.readline()
        gaps: list[float] = []

        async def tick() -> None:
            last = time.perf_counter()
            while True:
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0.02)
        started = time.perf_counter()
        await store.commit(entries=[Entry("lock", "player:bot", "house", 1, "x")])
        took = time.perf_counter() - started
        await asyncio.sleep(0.05)  # let the timer wake once more: a stall shows in that gap
        ticker.cancel()
        await asyncio.gather(ticker, return_exceptions=True)
        await locker.wait()
        return max(gaps), took
    finally:
        await store.close()


async def measure(make: Callable[[], Any]) -> dict[str, float]:
    store = make()
    await store.open()
    try:
        await commits(store, WARMUP)
        lat = await commits(store, COMMITS)
    finally:
        await store.close()
    return {
        "mean": sum(lat) / len(lat) * 1e6,
        "p50": percentile(lat, 50) * 1e6,
        "p99": percentile(lat, 99) * 1e6,
    }


async def run(tmp: Path, redis_url: str | None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    results["memory"] = await measure(stores.MemoryStore)
    results["sqlite"] = await measure(lambda: stores.SQLiteStore(tmp / "bench.sqlite3"))
    if redis_url is not None and hasattr(stores, "RedisStore"):
        results["redis"] = await measure(lambda: stores.RedisStore(redis_url))
    results["stall"] = await stall_under_lock(tmp / "lock.sqlite3")
    return results


def baseline(where: str) -> dict[str, Any]:
    """:func:`baseline_of` a folder, or of a git revision's ``server`` package."""
    if Path(where).is_dir():
        return baseline_of(where)
    with tempfile.TemporaryDirectory(prefix="chemmy-bench-rev-") as folder:
        archive = subprocess.run(
            ["git", "archive", where, "server"], cwd=ROOT, capture_output=True, check=False
        )
        if archive.returncode != 0:
            raise SystemExit(f"--baseline: neither a folder nor a git revision: {where}")
        subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
        return baseline_of(folder)


def baseline_of(directory: str) -> dict[str, Any]:
    """The same measurements of the ``server`` package in ``directory`` (no Redis): this
    script in a subprocess whose path has a folder holding only that ``server`` first,
    then this checkout (for ``bench`` and ``tests``), and not the working directory
    (``-P``)."""
    code = Path(directory).resolve() / "server"
    if not (code / "__init__.py").is_file():
        raise SystemExit(f"--baseline: no server package in {directory}")
    with tempfile.TemporaryDirectory(prefix="chemmy-bench-baseline-") as only:
        (Path(only) / "server").symlink_to(code, target_is_directory=True)
        done = subprocess.run(
            [sys.executable, "-P", "-m", "bench.store", "--json", "--no-redis"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([only, str(ROOT)])},
            capture_output=True,
            text=True,
            check=True,
        )
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def report(
    results: dict[str, Any], before: dict[str, Any] | None, label: str, command: str, load: str
) -> str:
    names = {
        "memory": "MemoryStore",
        "sqlite": "SQLiteStore (file, WAL)",
        "redis": "RedisStore (loopback, one Lua script)",
    }
    lines = [
        SECTION,
        "",
        f"Made by `{command}` on {time.strftime('%Y-%m-%d')}.",
        f"Machine: {machine()}. {load}",
        "",
        f"{COMMITS} step commits each (2 entries, a 2 KiB state row, 1 event where the store "
        f"keeps events), after a warm-up of {WARMUP}."
        + (f" Baseline, measured in the same run: {label}." if before else ""),
        "",
        "| store | commit round trip mean | p50 | p99 |",
        "|---|---|---|---|",
    ]
    runs = [(before, " (baseline)")] if before else []
    for key in ("memory", "sqlite", "redis"):
        for found, mark in [*runs, (results, "")]:
            if found and key in found:
                r = found[key]
                lines.append(
                    f"| {names[key]}{mark} | {r['mean']:.0f} µs | {r['p50']:.0f} µs"
                    f" | {r['p99']:.0f} µs |"
                )
    lines.append("")
    for found, mark in [*runs, (results, "")]:
        gap, took = found["stall"]
        lines.append(
            f"- Lock held elsewhere{mark}: another process holds SQLite's write lock for "
            f"0.5 s while one commit waits; the commit took {took * 1e3:.0f} ms and the "
            f"event loop's longest gap was {gap * 1e3:.0f} ms (10 ms timers)."
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--baseline",
        metavar="DIR|REV",
        help="also measure the server package of a folder or of a git revision",
    )
    parser.add_argument("--label", help="what the baseline is, for the docs")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-redis", action="store_true", help="leave Redis out")
    args = parser.parse_args()
    start = loadavg()
    with tempfile.TemporaryDirectory(prefix="chemmy-bench-store-") as name:
        tmp = Path(name)
        redis_server = None
        if not args.no_redis:
            from tests.redis_server import RedisServer, redis_available

            if redis_available():
                redis_server = RedisServer(tmp / "redis")
                redis_server.start()
        try:
            url = redis_server.url() if redis_server is not None else None
            results = asyncio.run(run(tmp, url))
        finally:
            if redis_server is not None:
                redis_server.stop()
    if args.json:
        print(json.dumps(results))
        return
    before = baseline(args.baseline) if args.baseline else None
    words = sys.argv[1:]
    if args.baseline and Path(args.baseline).is_dir():  # say DIR; the label says what
        words = ["DIR" if w == args.baseline else w for w in words]
    command = " ".join([COMMAND, shlex.join(words)]).strip()
    label = args.label or (
        f"the `server` package of `{args.baseline}`"
        if args.baseline and Path(args.baseline).is_dir()
        else f"the stores at commit {args.baseline}"
    )
    text = report(results, before, label, command, load_line(start))
    print(text)
    if not args.no_write:
        write_benchmarks(SECTION, text)


if __name__ == "__main__":
    main()
