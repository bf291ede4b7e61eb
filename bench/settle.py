"""What a coup's settlement costs the server at a table of many bettors without a seat:
the settling step timed in its parts, in process (issue 37 §3).

Run from the project root: ``python -m bench.settle [--bettors N] [--watchers W]
[--coups C] [--profile]``.

One ``chemmy-server`` in this process (``assemble``, SQLite in a temporary directory,
port 0), one table on short timers (betting 4 s, the rest 1-2 s: the croupier acts for
whoever lets a timer run out); its clients in a child process, light connections
(bench/_light.py): two seated players who only sit (the table deals when someone is
seated), ``N`` bettors without a seat (token players, each from an address of its own)
who each place one bet on Player or Banker at a random moment of the betting, and ``W``
guests who watch. Every step of the table's actor is timed, wall and thread CPU, in
its parts: *decide* (the table's step), *to_write* (the state row and the bettors' parts
made for the store), *commit* (the store's commit, awaited: its thread), *deliver* (the
events published to the hub, the reply); the step whose events hold ``settled`` is the
settlement. Reported: each part's median over the coups' settlements (the first left
out: the accounts are made then), beside a step of betting's for scale; the event loop's
longest hold during each settlement (a probe task's 1 ms sleep, how late it came back:
what a command arriving then waited for the loop); the time spent
within the settlement in a few functions (:func:`probes`, inclusive, in any thread: the
store's commit runs in its own) and in the cyclic collector (``gc0``... by generation);
with ``--profile`` the settlement's hot functions (cProfile of those steps only: its
overhead inflates every figure, read the shares). The collector is tuned as
``chemmy-server`` tunes it (``tune_gc``). On a shared machine, compare runs in turns.

It measures the server's own time for the step, not the clients' (they are in another
process and only read), nor the writes of the events to the watchers after the step
(the hub writes them in slices, docs/architecture.md §7).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import io
import json
import multiprocessing as mp
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bench._light import LightConnection
from bench._light import connect as light_connect
from bench._util import load_line, loadavg, raise_nofile
from server.process.auth import make_token

SECRET = "bench-settle-secret-of-at-least-32-bytes"
TABLE = "s1"
TIMERS = {
    "betting": 4.0,  # (--betting)
    "squeeze": 1.0,
    "third_card": 1.0,
    "shoe_offer": 1.0,
    "cut": 1.0,
    "reveal": 1.0,
}


def address(group: int, i: int) -> str:
    return f"127.{group}.{i // 250 % 250}.{i % 250 + 1}"


# -- the clients (a child process) ----------------------------------------------------
#: How the bettors bet: (bets each a betting round, the share of the round they are spread
#: over, the amounts drawn from, the random seed). bench.bursts bets more often.
BETTING: tuple[int, float, tuple[int, ...], int] = (1, 0.7, (100, 200, 500, 1000), 7)


async def _clients(
    url: str,
    bettors: int,
    watchers: int,
    betting: float,
    pipe: Connection,
    how: tuple[int, float, tuple[int, ...], int] = BETTING,
) -> None:
    bets, spread, amounts, seed = how
    rng = random.Random(seed)
    conns: list[LightConnection] = []
    ids = iter(range(1, 1 << 60))
    tasks: set[asyncio.Task[None]] = set()

    async def bet_later(conn: LightConnection, delay: float) -> None:
        await asyncio.sleep(delay)
        area = rng.choice(("player", "banker"))
        amount = rng.choice(amounts)
        if not conn.closed:
            await conn.send(
                {
                    "type": "bet",
                    "id": f"b{next(ids)}",
                    "table": TABLE,
                    "area": area,
                    "amount": amount,
                }
            )

    def bettor(conn_box: list[LightConnection]) -> Callable[[bytes], None]:
        def take(payload: bytes) -> None:
            if b'"kind":"betting_opened"' in payload[:120]:
                for _ in range(bets):
                    delay = rng.uniform(0.1, spread * betting)
                    task = asyncio.create_task(bet_later(conn_box[0], delay))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)

        return take

    async def one(kind: str, i: int) -> None:
        box: list[LightConnection] = []
        take = bettor(box) if kind == "bettor" else (lambda _payload: None)
        group = {"seated": 249, "bettor": 250, "watcher": 251}[kind]
        conn = await light_connect(url, take, local_addr=(address(group, i), 0), timeout=120)
        box.append(conn)
        conns.append(conn)
        hello: dict[str, Any] = {"guest": True}
        if kind != "watcher":
            hello = {"token": make_token(SECRET, f"{kind}-{i}", ttl=3600)}
        steps: list[tuple[str, dict[str, Any]]] = [("hello", hello), ("join", {"table": TABLE})]
        if kind == "seated":
            steps.append(("sit", {"table": TABLE}))
        for what, fields in steps:
            reply = await conn.rpc({"type": what, "id": f"c{next(ids)}", **fields}, 120)
            if reply.get("type") != "ok":
                raise RuntimeError(f"{kind} {i}: {what}: {reply}")

    gate = asyncio.Semaphore(32)

    async def gated(kind: str, i: int) -> None:
        async with gate:
            await one(kind, i)

    await asyncio.gather(*(gated("watcher", i) for i in range(watchers)))
    await asyncio.gather(*(gated("bettor", i) for i in range(bettors)))
    await asyncio.gather(*(gated("seated", i) for i in range(2)))
    pipe.send(("ready", len(conns)))
    await asyncio.get_running_loop().run_in_executor(None, pipe.recv)
    for conn in conns:
        conn.abort()


def clients_main(
    url: str,
    bettors: int,
    watchers: int,
    betting: float,
    pipe: Connection,
    how: tuple[int, float, tuple[int, ...], int] = BETTING,
) -> None:
    """The clients' process: ``watchers`` light watchers, ``bettors`` light bettors
    betting as ``how`` says, two seated players; ready when all have joined."""
    raise_nofile()
    asyncio.run(_clients(url, bettors, watchers, betting, pipe, how))


# -- the server, timed ------------------------------------------------------------------
class Timing:
    """Each step of the actor: its parts' wall and CPU seconds, whether it settled."""

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        """The collector's pauses within a timed step (``gc.callbacks``)."""
        if phase == "start":
            self.gc_began = time.perf_counter()
        elif self.current is not None:
            spent = self.current.setdefault("probes", {})
            name = f"gc{info['generation']}"  # (a full collection: gc2)
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - self.gc_began

    def sync_probe(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` timed (wall, added up) while a step is timed, in any thread."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            current = self.current
            w0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                if current is not None:
                    spent = current.setdefault("probes", {})
                    spent[name] = spent.get(name, 0.0) + time.perf_counter() - w0

        return timed

    def __init__(self, profile: bool) -> None:
        self.steps: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None
        self.profile = profile
        self.stats: pstats.Stats | None = None
        self.gc_began = 0.0
        self.holds: list[tuple[float, float]] = []  # (the event loop's: _holds)

    def part(self, name: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            w0, c0 = time.perf_counter(), time.thread_time()
            try:
                return await fn(*args, **kwargs)
            finally:
                if self.current is not None:
                    self.current[name] = (time.perf_counter() - w0, time.thread_time() - c0)

        return timed

    def sync_part(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            w0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                if self.current is not None:
                    self.current[name] = (time.perf_counter() - w0, time.thread_time() - c0)

        return timed


def probes() -> list[tuple[Any, str]]:
    """The functions a settlement is timed in (inclusive; where they are looked up)."""
    from server.croupier import commit as croupier_commit
    from server.croupier.actor import TableActor
    from server.gateway.hub import Hub
    from server.store import front, plan
    from server.store.sqlite import connection, rows
    from server.table import settlement
    from server.table.actions import SentActions
    from server.table.table import Table

    return [
        (Table, "handle"),
        (TableActor, "_written"),
        (TableActor, "_to_write"),
        (settlement, "settle"),
        (settlement, "pay"),
        (settlement, "round_record"),
        (SentActions, "refresh"),
        (Hub, "publish"),
        (Hub, "_private"),
        (front, "plan_commit"),
        *(
            (plan, n)
            for n in ("check_events", "check_parts", "check_row", "dump_json", "index_record")
        ),
        (connection.SQLiteCore, "_commit"),
        (connection, "_post"),
        (connection, "_put_parts"),
        (connection, "_put_events"),
        (connection, "_put_round"),
        (croupier_commit, "to_write"),
        (rows, "_post_together"),
    ]


def install(timing: Timing) -> None:
    """Time the actor's steps and their parts (class attributes patched: this process
    only)."""
    from server.croupier.actor import TableActor

    step_item = TableActor._step_item

    async def timed_step(self: TableActor, item: Any) -> None:
        record: dict[str, Any] = {"kind": item.record.kind if item.record else "croupier"}
        timing.current = record
        profiler = cProfile.Profile() if timing.profile else None
        w0, c0 = time.perf_counter(), time.thread_time()
        if profiler is not None:
            profiler.enable()
        try:
            await step_item(self, item)
        finally:
            if profiler is not None:
                profiler.disable()
            record["step"] = (time.perf_counter() - w0, time.thread_time() - c0)
            record["span"] = (w0, time.perf_counter())
            timing.current = None
            timing.steps.append(record)
            if profiler is not None and record.get("settled"):
                stats = pstats.Stats(profiler)
                if timing.stats is None:
                    timing.stats = stats
                else:
                    timing.stats.add(stats)

    deliver = TableActor._deliver

    def timed_deliver(self: TableActor, item: Any, happened: Any) -> None:
        if timing.current is not None:
            kinds = {e.kind for e in happened.events}
            timing.current["settled"] = "settled" in kinds
            timing.current["bettors"] = self.table.bettor_count()
        deliver(self, item, happened)

    TableActor._step_item = timed_step  # type: ignore[method-assign]
    for owner, name in probes():
        setattr(owner, name, timing.sync_probe(name, getattr(owner, name)))
    TableActor._decide_item = timing.part("decide", TableActor._decide_item)  # type: ignore[method-assign]
    TableActor._to_write = timing.sync_part("to_write", TableActor._to_write)  # type: ignore[method-assign]
    TableActor._write = timing.part("commit", TableActor._write)  # type: ignore[method-assign]
    TableActor._deliver = timing.sync_part("deliver", timed_deliver)  # type: ignore[method-assign]


@contextlib.asynccontextmanager
async def table_and_clients(
    tmp: Path, name: str, args: argparse.Namespace, how: tuple[int, float, tuple[int, ...], int]
) -> AsyncIterator[Any]:
    """One ``chemmy-server`` in this process (SQLite in ``tmp``, the table ``TABLE`` named
    ``name`` with ``args.betting`` s of betting), and the clients' process
    (:func:`clients_main`: ``args.bettors`` bettors betting as ``how`` says,
    ``args.watchers`` watchers), all connected when this yields the server; the clients
    stopped and the server with them afterwards. bench.bursts shares it."""
    from server.process.assemble import assemble
    from server.process.config import ServerConfig
    from server.process.main import tune_gc
    from server.store import store_for

    table = {
        "id": TABLE,
        "name": name,
        "tier": "1-100",
        "timers": {**TIMERS, "betting": args.betting},
    }
    config = ServerConfig(
        host="127.0.0.1",
        port=0,
        db=str(tmp / f"{name.lower()}.sqlite3"),
        jwt_secret=SECRET,
        tables=(table,),
        log_level="warning",
        hello_rate_limit=0.0,
    )
    server = assemble(config, store_for(config.store_url))
    await server.start()
    tune_gc()  # as chemmy-server does
    parent, child = mp.get_context("spawn").Pipe()
    url = f"ws://127.0.0.1:{server.port}/"
    proc = mp.get_context("spawn").Process(
        target=clients_main,
        args=(url, args.bettors, args.watchers, args.betting, child, how),
        daemon=True,
    )
    proc.start()
    try:
        ready = await asyncio.get_running_loop().run_in_executor(None, parent.recv)
        print(f"bench: {ready[1]} clients connected", file=sys.stderr)
        yield server
    finally:
        with contextlib.suppress(OSError):
            parent.send("stop")
        proc.join(10)
        if proc.is_alive():
            proc.kill()
        await server.stop()


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    timing = Timing(args.profile)
    install(timing)
    gc.callbacks.append(timing.on_gc)
    async with table_and_clients(tmp, "Settle", args, BETTING):
        timing.steps.clear()
        held = asyncio.create_task(_holds(timing.holds))
        deadline = time.monotonic() + args.timeout
        while sum(1 for s in timing.steps if s.get("settled")) < args.coups + 1:
            if time.monotonic() > deadline:
                raise RuntimeError("the coups took too long")
            await asyncio.sleep(0.2)
        held.cancel()
    return report_of(timing, args)


async def _holds(holds: list[tuple[float, float]]) -> None:
    """The event loop's holds: each time a 1 ms sleep came back more than 2 ms late,
    ``(when it was due, when it came back)`` (what a command arriving then waited)."""
    while True:
        due = time.perf_counter() + 0.001
        await asyncio.sleep(0.001)
        back = time.perf_counter()
        if back - due > 0.002:
            holds.append((due, back))


def longest_hold(holds: list[tuple[float, float]], span: tuple[float, float]) -> float:
    """The longest of ``holds`` that overlaps ``span`` (a step's), seconds."""
    w0, w1 = span
    return max((b - a for a, b in holds if b > w0 and a < w1), default=0.0)


def report_of(timing: Timing, args: argparse.Namespace) -> dict[str, Any]:
    settles = [s for s in timing.steps if s.get("settled")][1:]  # (the first: a warm-up)
    bets = [s for s in timing.steps if s["kind"] == "bet" and "commit" in s]

    def medians(steps: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
        out = {}
        for part in ("step", "decide", "to_write", "commit", "deliver"):
            have = [s[part] for s in steps if part in s]
            if have:
                out[part] = (
                    statistics.median(w for w, _ in have) * 1e3,
                    statistics.median(c for _, c in have) * 1e3,
                )
        return out

    def hold(steps: list[dict[str, Any]]) -> list[float]:
        return [longest_hold(timing.holds, s["span"]) * 1e3 for s in steps if "span" in s]

    names = sorted({n for s in settles for n in s.get("probes", {})})
    probe_ms = {
        n: statistics.median(s.get("probes", {}).get(n, 0.0) for s in settles) * 1e3 for n in names
    }
    result: dict[str, Any] = {
        "probes": probe_ms,
        "bettors": args.bettors,
        "watchers": args.watchers,
        "settlements": len(settles),
        "settle": medians(settles),
        "bet": medians(bets),
        "bet_steps": len(bets),
        "hold": {"settle": hold(settles), "bet": hold(bets)},
    }
    if timing.stats is not None:
        text = io.StringIO()
        timing.stats.stream = text  # type: ignore[attr-defined]
        timing.stats.sort_stats("cumulative").print_stats(args.top)
        result["profile"] = text.getvalue()
    return result


def report(result: dict[str, Any], load: str) -> str:
    lines = [
        f"{result['bettors']:,} bettors without a seat, {result['watchers']:,} watchers; "
        f"{result['settlements']} settlements, {result['bet_steps']} bet steps; {load}",
        "",
        "| step | whole | decide | to_write | commit (awaited) | deliver |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("settle", "bet"):
        st = result[name]
        cells = [
            f"{st[p][0]:.1f} ms ({st[p][1]:.1f} CPU)" if p in st else "—"
            for p in ("step", "decide", "to_write", "commit", "deliver")
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    settle_holds = result["hold"]["settle"]
    bet_holds = result["hold"]["bet"]
    lines += [
        "",
        "The event loop's longest hold during each settlement (a 1 ms sleep's lateness): "
        + ", ".join(f"{ms:.1f}" for ms in settle_holds)
        + f" ms; during a bet's step, median {statistics.median(bet_holds or [0.0]):.1f} ms,"
        + f" most {max(bet_holds or [0.0]):.1f} ms",
        "",
        "Within the settlement (wall, medians): "
        + ", ".join(f"{n} {ms:.1f} ms" for n, ms in result["probes"].items()),
    ]
    if "profile" in result:
        lines += ["", result["profile"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bettors", type=int, default=1000)
    parser.add_argument("--watchers", type=int, default=0)
    parser.add_argument("--coups", type=int, default=3, help="settlements timed (3)")
    parser.add_argument("--profile", action="store_true", help="cProfile the settlements")
    parser.add_argument("--top", type=int, default=40, help="functions in the profile")
    parser.add_argument("--betting", type=float, default=4.0, help="the betting timer (4 s)")
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    raise_nofile()
    load = loadavg()
    with tempfile.TemporaryDirectory(prefix="chemmy-settle-") as tmp:
        result = asyncio.run(run(args, Path(tmp)))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    print(report(result, load_line(load)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
