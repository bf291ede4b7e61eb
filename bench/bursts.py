"""Where a bettor's ``bet`` spends its time in the server at a table of many bettors
without a seat: each bet timed along its way, and each burst in its parts, in process
(issue 37 §3).

Run from the project root: ``python -m bench.bursts [--bettors N] [--watchers W]
[--bets K] [--coups C]``.

The table and clients of :mod:`bench.settle` (one ``chemmy-server`` in this process,
SQLite in a temporary directory; light clients in a child process), but each bettor
places ``K`` bets a betting round at random moments of it, as the evening's bettors do
at human pace, and ``W`` guests watch. Each ``bet`` is timed (``time.perf_counter``) at
its frame decoded, its record queued at the table's actor (after the gateway's checks:
``bet_checks``' store read, the player's line), its burst begun (the wait in the actor's
queue) and its reply handed to the connection (``chemmy_command_seconds``' end). Each
burst (:func:`server.croupier.bursts.step_burst`) is timed, wall and the loop thread's
CPU, in its parts: the bets decided, the commit (awaited), the delivery (the publish to
the hub, the replies); the hub's publishes and the tail's slices of writes
(``_Tail._turn``) are timed wherever they fall, and the event loop's lag is sampled
every 5 ms. Reported: the parts' medians and 90th/99th percentiles over the measured
bets and bursts, and the share of the loop's wall time each took.

It measures the server's own time, not the clients' (they are in another process).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._util import load_line, loadavg, percentile, raise_nofile
from bench.settle import table_and_clients


# -- the clients (a child process) ----------------------------------------------------
# -- the server, timed ------------------------------------------------------------------
class Timing:
    """The bets' times along their way, the bursts' parts, the hub's and the loop's."""

    def __init__(self) -> None:
        self.on = False
        self.submitted: dict[int, float] = {}  # request id -> queued at the actor
        self.begun: dict[int, tuple[float, int]] = {}  # request id -> (burst begun, size)
        self.bets: list[dict[str, float]] = []
        self.bursts: list[dict[str, float]] = []
        self.current: dict[str, float] | None = None
        self.calls: dict[str, list[float]] = {}  # name -> wall seconds of each call
        self.lags: list[float] = []
        self.began = 0.0
        self.ended = 0.0

    def add(self, name: str, took: float) -> None:
        if self.on:
            self.calls.setdefault(name, []).append(took)


def _request(item: Any) -> int | None:
    record = getattr(item, "record", None)
    if record is None or record.kind != "bet" or record.reply_to is None:
        return None
    request = record.reply_to.request
    return request if isinstance(request, int) else None


def install(timing: Timing) -> None:
    """Time the bets, the bursts and the hub (class attributes patched: this process)."""
    from server.croupier import actor as actor_module
    from server.croupier import bursts
    from server.croupier.actor import TableActor
    from server.gateway import hub, tables
    from server.gateway.server import ChemmyServer

    submit = TableActor.submit

    def timed_submit(self: TableActor, record: Any) -> None:
        if record.kind == "bet" and record.reply_to is not None:
            timing.submitted[record.reply_to.request] = time.perf_counter()
        submit(self, record)

    step_burst = bursts.step_burst

    async def timed_burst(actor: TableActor, items: list[Any]) -> None:
        w0, c0 = time.perf_counter(), time.thread_time()
        for item in items:
            n = _request(item)
            if n is not None:
                timing.begun[n] = (w0, len(items))
        part: dict[str, float] = {"size": len(items)}
        timing.current = part
        try:
            await step_burst(actor, items)
        finally:
            timing.current = None
            part["whole"] = time.perf_counter() - w0
            part["cpu"] = time.thread_time() - c0
            if timing.on:
                timing.bursts.append(part)

    step = TableActor._step

    async def timed_step(self: TableActor, item: Any) -> None:
        n = _request(item)
        if n is not None and timing.current is None:
            timing.begun[n] = (time.perf_counter(), 1)
        await step(self, item)

    def around(name: str, fn: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
        def took(w0: float) -> None:
            spent = time.perf_counter() - w0
            timing.add(name, spent)
            if timing.current is not None:
                timing.current[name] = timing.current.get(name, 0.0) + spent

        if is_async:

            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                w0 = time.perf_counter()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    took(w0)

            return timed_async

        def timed(*args: Any, **kwargs: Any) -> Any:
            w0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                took(w0)

        return timed

    on_reply = ChemmyServer._on_reply

    def timed_reply(self: ChemmyServer, reply: Any) -> None:
        request = reply.to.request
        pending = self._pending.get(request) if isinstance(request, int) else None
        on_reply(self, reply)
        if pending is None or pending.kind != "bet" or pending.received is None:
            return
        end = time.perf_counter()
        queued = timing.submitted.pop(request, None)
        begun = timing.begun.pop(request, None)
        if not timing.on or queued is None or begun is None:
            return
        timing.bets.append(
            {
                "whole": end - pending.received,
                "gateway": queued - pending.received,
                "queue": begun[0] - queued,
                "burst": end - begun[0],
                "size": begun[1],
            }
        )

    TableActor.submit = timed_submit  # type: ignore[method-assign]
    TableActor._step = timed_step  # type: ignore[method-assign]
    actor_module.step_burst = timed_burst  # type: ignore[assignment]
    ChemmyServer._on_reply = timed_reply  # type: ignore[method-assign]
    TableActor._write = around("commit", TableActor._write, True)  # type: ignore[method-assign]
    bursts._deliver_burst = around("deliver", bursts._deliver_burst, False)  # type: ignore[assignment]
    bursts._commit_burst = around("commit_burst", bursts._commit_burst, True)  # type: ignore[assignment]
    hub.Hub.publish = around("publish", hub.Hub.publish, False)  # type: ignore[method-assign]
    hub._Tail._turn = around("tail_turn", hub._Tail._turn, False)  # type: ignore[method-assign]
    add = hub._Tail.add

    def timed_add(self: Any, groups: Any, observe: Any = None) -> None:
        """The hub's own sample of its writes' wait (one in 8, from a step's publish:
        ``chemmy_fanout_wait_seconds``), told to the bench as well."""

        def both(seconds: float) -> None:
            if observe is not None:
                observe(seconds)
            if timing.on:
                timing.add("fan_out_wait", seconds)

        add(self, groups, both)

    hub._Tail.add = timed_add  # type: ignore[method-assign]
    tables.bet_checks = around("bet_checks", tables.bet_checks, True)
    from server.store.sqlite import connection as sqlite_connection

    core = sqlite_connection.SQLiteCore
    read, checkpoint = core._read, core._checkpoint

    async def timed_read(self: Any, job: Any, *args: Any) -> Any:
        worker = self._worker
        if worker is not None and timing.on:
            why = (
                "read_direct"
                if self._direct_now(worker)
                else ("read_behind_job" if worker.pending else "read_off")
            )
            w0 = time.perf_counter()
            try:
                return await read(self, job, *args)
            finally:
                timing.add(why, time.perf_counter() - w0)
        return await read(self, job, *args)

    def counted_checkpoint(self: Any, again: bool = False) -> None:
        timing.add("checkpoint", 0.0)
        checkpoint(self, again)

    core._read = timed_read  # type: ignore[method-assign]
    core._checkpoint = counted_checkpoint  # type: ignore[method-assign]
    from server.table.table import Table

    Table.flush_bettors = around("flush_bettors", Table.flush_bettors, False)  # type: ignore[method-assign]
    from server.croupier import balances

    balances.decide_funded = around("decide", balances.decide_funded, True)
    balances.prepare = around("prepare", balances.prepare, True)


async def _lag(timing: Timing) -> None:
    while True:
        t0 = time.perf_counter()
        await asyncio.sleep(0.005)
        if timing.on:
            timing.lags.append(time.perf_counter() - t0 - 0.005)


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    timing = Timing()
    install(timing)
    lag = asyncio.create_task(_lag(timing))
    try:
        async with table_and_clients(tmp, "Bursts", args, (args.bets, 0.85, (100, 200, 500), 11)):
            await asyncio.sleep(args.warmup)
            timing.on, timing.began = True, time.perf_counter()
            c0 = time.process_time()
            await asyncio.sleep(args.window)
            timing.on, timing.ended = False, time.perf_counter()
            cpu = time.process_time() - c0
    finally:
        lag.cancel()
    return report_of(timing, args, cpu)


def _dist(values: list[float]) -> list[float]:
    if not values:
        return [0.0, 0.0, 0.0, 0.0]
    ms = [v * 1e3 for v in values]
    return [statistics.median(ms), percentile(ms, 90), percentile(ms, 99), statistics.mean(ms)]


def report_of(timing: Timing, args: argparse.Namespace, cpu: float) -> dict[str, Any]:
    window = timing.ended - timing.began
    bets = timing.bets
    return {
        "bettors": args.bettors,
        "watchers": args.watchers,
        "window": window,
        "cpu": cpu / window,
        "bet_count": len(bets),
        "bet": {p: _dist([b[p] for b in bets]) for p in ("whole", "gateway", "queue", "burst")},
        "bet_burst_size": _dist([b["size"] / 1e3 for b in bets]),
        "burst_count": len(timing.bursts),
        "burst": {
            p: _dist([b.get(p, 0.0) for b in timing.bursts])
            for p in ("whole", "cpu", "decide", "prepare", "flush_bettors", "commit", "deliver")
        },
        "burst_size": _dist([b["size"] / 1e3 for b in timing.bursts]),
        "calls": {
            name: {"count": len(v), "share": sum(v) / window, "dist": _dist(v)}
            for name, v in sorted(timing.calls.items())
        },
        "lag": _dist(timing.lags),
    }


def _row(name: str, d: list[float]) -> str:
    return f"| {name} | {d[0]:.2f} | {d[1]:.2f} | {d[2]:.2f} | {d[3]:.2f} |"


def report(result: dict[str, Any], load: str) -> str:
    lines = [
        f"{result['bettors']:,} bettors without a seat, {result['watchers']:,} watchers; "
        f"{result['bet_count']} bets in {result['burst_count']} bursts over "
        f"{result['window']:.0f} s; server CPU {result['cpu']:.2f} cores; {load}",
        "",
        "| a bet's time (ms) | p50 | p90 | p99 | mean |",
        "|---|---|---|---|---|",
    ]
    for part, d in result["bet"].items():
        lines.append(_row(part, d))
    lines.append(_row("its burst's size (bets)", result["bet_burst_size"]))
    lines += ["", "| a burst (ms) | p50 | p90 | p99 | mean |", "|---|---|---|---|---|"]
    for part, d in result["burst"].items():
        lines.append(_row(part, d))
    lines.append(_row("size (commands)", result["burst_size"]))
    lines += [
        "",
        "| call | count | share of the wall | p50 | p90 | p99 | mean (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in result["calls"].items():
        d = c["dist"]
        lines.append(
            f"| {name} | {c['count']} | {c['share']:.1%} | {d[0]:.2f} | {d[1]:.2f} | "
            f"{d[2]:.2f} | {d[3]:.2f} |"
        )
    fan = result["calls"].get("fan_out_wait")
    if fan is not None:
        lines += [
            "",
            "fan_out_wait: a step's bytes from their publish to a watcher's write (every 8th"
            " write; its share is a sum of waits, not of the loop's time)",
        ]
    lines += ["", "loop lag (5 ms sleeps, ms): " + " / ".join(f"{v:.1f}" for v in result["lag"])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bettors", type=int, default=1000)
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--bets", type=int, default=1, help="bets a bettor a betting round")
    parser.add_argument("--betting", type=float, default=10.0, help="the betting timer (10 s)")
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument(
        "--direct-slow",
        type=float,
        help="the store's DIRECT_SLOW (s): a larger one keeps its reads and commits on the"
        " loop on a loaded machine (where a preempted read looks like a slow disk)",
    )
    parser.add_argument("--at-once-rows", type=int, help="the store's AT_ONCE_ROWS")
    parser.add_argument("--tail-slice", type=float, help="the hub's TAIL_SLICE (s)")
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = parser.parse_args(argv)
    if args.tail_slice is not None:
        from server.gateway import hub

        hub.TAIL_SLICE = args.tail_slice  # type: ignore[misc]
    from server.store.sqlite import connection

    if args.at_once_rows is not None:
        connection.AT_ONCE_ROWS = args.at_once_rows  # type: ignore[misc]
    if args.direct_slow is not None:
        connection.DIRECT_SLOW = args.direct_slow  # type: ignore[misc]
    raise_nofile()
    load = loadavg()
    gc.collect()
    with tempfile.TemporaryDirectory(prefix="chemmy-bursts-") as tmp:
        result = asyncio.run(run(args, Path(tmp)))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    print(report(result, load_line(load)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
