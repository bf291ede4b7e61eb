"""What a process costs when nobody plays (issue 36, target 1): one process on SQLite
against each process of a cluster over Redis, the same tables, idle.

Run from the project root: ``python -m bench.idle [--write]`` (``--help`` for the sizes;
``--tables 4 --window 3 --warmup 2 --rounds 1 --spectators 4`` runs in under a minute,
a test of the tool only).

- **Setups**: one ``chemmy-server`` on SQLite, and a cluster of ``--processes`` (default
  2; ``2,3`` for both sizes) over a ``redis-server`` of its own (tests/kit/redis.py: AOF
  on, ``appendfsync everysec``), all with the same ``--tables`` (default 120) on the
  server's default timers (bench/evening.py's tables and settings). With ``--baseline
  REV`` the same setups again, their server that revision's (``git archive``, as
  bench/gateway.py's ``--baseline``). Every setup is started before the first window and
  runs until the last, so each is measured in the company of the others (all idle).
  ``--placement players``: this tree's clusters place by players (each process publishes
  and reads its watchers a table every 2 s); a ``--baseline``'s by hash, as it did.
- **Phases**: first nobody connected; then, with ``--spectators K`` (default 200), K
  guests join each setup's tables (hello, join; a table each in turn, the cluster's
  spread over its processes as a plain load balancer would, each from an address of its
  own: bench/evening.py's) and stay silent (light connections, bench/_light.py, that
  answer the server's pings); ``--spectators 0``: the first phase only.
- **Windows**: after ``--warmup`` s, each setup is measured for ``--window`` s (default
  30) in turn, A, B, A, B (``--rounds``, default 2): every server's CPU time over its
  window, in cores, from the scheduler's nanoseconds (``/proc/PID/task/*/schedstat``;
  utime+stime, ``/proc/PID/stat``, beside it: it counts 10 ms ticks, a few in a window
  of an idle process), and its Redis's, with Redis's
  commands a second by kind (``INFO commandstats`` before and after; the bench's own
  ``INFO`` left out). The figure is the mean over the rounds, each round's beside it.
- **The ratio**: a cluster process's CPU (the mean of its processes) ÷ the one process's,
  in the same round and phase (target: at most 2, issue 36).

The load average at the start and end of the run is printed (the machine is shared).
``--json PATH`` writes the figures. docs/benchmarks.md, "An idle cluster process (issue
36, target 1)", holds a run's report with what was changed.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import itertools
import json
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._light import LightConnection
from bench._light import connect as light_connect
from bench._util import (
    cpu_seconds,
    load_line,
    loadavg,
    machine,
    raise_nofile,
    run_seconds,
)
from bench.evening import (
    config,
    placed,
    redis_calls,
    spectator_address,
    start_redis,
    table_ids,
)
from bench.gateway import archive
from tests.kit.launch import LISTENING, ServerProcess

COMMAND = "python -m bench.idle"
SECTION = "## An idle cluster process (issue 36, target 1)"
X = "\N{MULTIPLICATION SIGN}"
#: What a server of another revision runs from (its gateway imports ``texts`` and serves
#: ``web``).
SERVER_PATHS = ("server", "texts", "web")
TARGET = 2.0  # a cluster process's idle CPU at most this times one process's (issue 36)


class Setup:
    """One process on SQLite (``processes`` 0) or ``processes`` over a Redis of their
    own, with ``code``'s server (None: this work tree's)."""

    def __init__(
        self,
        home: Path,
        tables: Sequence[str],
        processes: int,
        code: Path | None,
        rev: str,
        placement: str = "hash",
    ) -> None:
        from tests.kit.redis import RedisServer

        self.label = f"{processes} over Redis" if processes else "1 on SQLite"
        if rev != "now":
            self.label += f" ({rev})"
        self.processes = processes
        self.redis: RedisServer | None = None
        self.nodes: list[ServerProcess] = []
        extra = ["--log-format", "text"]
        if processes:
            self.redis = start_redis(home / "redis")
            extra += ["--store", self.redis.url()]
            if code is None:  # (a --baseline from before it has no such setting: hash)
                extra += ["--placement", placement]
        env = {} if code is None else {"PYTHONPATH": str(code)}
        text = config(tables)
        for n in range(max(1, processes)):
            node = ServerProcess(home / f"node{n}", text, *extra, env=env)
            if code is not None:
                node.cwd = code
                node.ready = LISTENING  # an older server may say it another way
            node.start()
            self.nodes.append(node)
        self.tables = list(tables)

    async def placed(self, timeout: float = 60.0) -> None:
        """With Redis: wait until every table has an owner (a lease)."""
        if self.redis is not None:
            await placed(self.redis.port, self.tables, timeout, f"{self.label}: ")

    def redis_pid(self) -> int | None:
        rs = self.redis
        return rs.process.pid if rs is not None and rs.process is not None else None

    def commands(self) -> dict[str, int]:
        """Redis's calls so far by command (``INFO commandstats``); {} on SQLite."""
        return {} if self.redis is None else redis_calls(self.redis.port)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop(timeout=15)
        if self.redis is not None:
            self.redis.stop()


@dataclass
class Window:
    """One setup measured over one window."""

    setup: str
    phase: str
    round: int
    seconds: float
    cores: list[float]  # each server process's CPU over the window, in cores
    ticks: list[float]  # the same from utime+stime (10 ms ticks)
    redis_cores: float = 0.0
    commands: dict[str, float] = field(default_factory=dict)  # Redis's, a second, by kind

    @property
    def per_process(self) -> float:
        return sum(self.cores) / len(self.cores)


async def measure(setup: Setup, phase: str, rnd: int, window: float) -> Window:
    pids = [n.pid for n in setup.nodes]
    rpid = setup.redis_pid()
    calls0 = setup.commands()
    tick0 = [cpu_seconds(p) for p in pids]
    cpu0 = [run_seconds(p) for p in pids]
    r0 = run_seconds(rpid) if rpid else 0.0
    t0 = time.monotonic()
    await asyncio.sleep(window)
    cpu1 = [run_seconds(p) for p in pids]
    r1 = run_seconds(rpid) if rpid else 0.0
    tick1 = [cpu_seconds(p) for p in pids]
    seconds = time.monotonic() - t0
    calls1 = setup.commands()
    commands = {
        k: (n - calls0.get(k, 0)) / seconds
        for k, n in calls1.items()
        if k != "info" and n > calls0.get(k, 0)
    }
    return Window(
        setup=setup.label,
        phase=phase,
        round=rnd,
        seconds=seconds,
        cores=[(b - a) / seconds for a, b in zip(cpu0, cpu1, strict=True)],
        ticks=[(b - a) / seconds for a, b in zip(tick0, tick1, strict=True)],
        redis_cores=(r1 - r0) / seconds,
        commands=dict(sorted(commands.items(), key=lambda kv: -kv[1])),
    )


async def join_spectators(setup: Setup, count: int, worker: int) -> list[LightConnection]:
    """``count`` guests at ``setup``'s tables (a table each in turn), spread over its
    processes in turn, each from an address of its own; hello and join, then silent."""
    conns: list[LightConnection] = []
    ids = itertools.count(1)
    gate = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with gate:
            url = setup.nodes[i % len(setup.nodes)].url
            address = spectator_address(worker, i)
            conn = await light_connect(url, local_addr=(address, 0), timeout=60)
            conns.append(conn)
            table = setup.tables[i % len(setup.tables)]
            for kind, fields in (("hello", {"guest": True}), ("join", {"table": table})):
                reply = await conn.rpc({"type": kind, "id": f"i{next(ids)}", **fields}, 60)
                if reply.get("type") != "ok":
                    raise RuntimeError(f"spectator {kind}: {reply}"[:200])

    await asyncio.gather(*(one(i) for i in range(count)))
    return conns


async def run(args: argparse.Namespace, tmp: Path) -> list[Window]:
    tables = table_ids(args.tables)
    sizes = [int(n) for n in str(args.processes).split(",") if n]
    codes: list[tuple[str, Path | None]] = [("now", None)]
    if args.baseline:
        code = archive(args.baseline, tmp / "baseline", SERVER_PATHS)
        codes.append((args.baseline, code))
    setups: list[Setup] = []
    windows: list[Window] = []
    conns: list[LightConnection] = []
    try:
        for rev, code in codes:
            for processes in [0, *sizes]:
                home = tmp / f"{rev}-{processes}"
                setups.append(Setup(home, tables, processes, code, rev, args.placement))
                print(f"started {setups[-1].label}", file=sys.stderr)
        for s in setups:
            await s.placed()
        phases = [("idle", 0)] + ([("spectators", args.spectators)] if args.spectators else [])
        for phase, count in phases:
            if count:
                for w, s in enumerate(setups):
                    conns += await join_spectators(s, count, w)
                print(f"{count} spectators joined each setup", file=sys.stderr)
            await asyncio.sleep(args.warmup)
            for rnd in range(args.rounds):
                for s in setups:
                    win = await measure(s, phase, rnd, args.window)
                    windows.append(win)
                    print(
                        f"{phase} round {rnd + 1} {s.label}: "
                        f"{' '.join(f'{c:.4f}' for c in win.cores)} cores, "
                        f"Redis {win.redis_cores:.4f}, {sum(win.commands.values()):.1f} cmd/s",
                        file=sys.stderr,
                    )
    finally:
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.abort()
        for s in setups:
            s.stop()
    return windows


def summary(windows: Sequence[Window]) -> list[dict[str, Any]]:
    """Per phase and setup: the mean of its rounds, each round, and the ratio to the one
    process of the same code in the same round."""
    rows: list[dict[str, Any]] = []
    by: dict[tuple[str, str], list[Window]] = collections.defaultdict(list)
    for w in windows:
        by[w.phase, w.setup].append(w)
    for (phase, label), ws in by.items():
        suffix = label.partition(" (")[2]
        one_label = "1 on SQLite" + (f" ({suffix}" if suffix else "")
        ones = {w.round: w for w in by.get((phase, one_label), [])}
        ratios = [
            w.per_process / ones[w.round].per_process
            for w in ws
            if w.round in ones and ones[w.round].per_process > 0
        ]
        kinds: dict[str, float] = collections.defaultdict(float)
        for w in ws:
            for k, v in w.commands.items():
                kinds[k] += v / len(ws)
        rows.append(
            {
                "phase": phase,
                "setup": label,
                "per_process": sum(w.per_process for w in ws) / len(ws),
                "ticks": sum(sum(w.ticks) / len(w.ticks) for w in ws) / len(ws),
                "rounds": [w.per_process for w in ws],
                "processes": [sum(c) / len(ws) for c in zip(*(w.cores for w in ws), strict=True)],
                "ratio": sum(ratios) / len(ratios) if ratios else None,
                "ratios": ratios,
                "redis_cores": sum(w.redis_cores for w in ws) / len(ws),
                "commands": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
            }
        )
    return rows


def report(results: dict[str, Any]) -> str:
    lines = [
        SECTION,
        "",
        f"`{results['command']}`, {results['date']}; {results['machine']}.",
        f"{results['tables']} tables on the default timers; windows of "
        f"{results['window']:.0f} s after {results['warmup']:.0f} s of warm-up, each setup "
        f"in turn, {results['rounds']} rounds. {results['load']}",
        "",
        "| phase | setup | CPU a process (cores), mean (each round) | utime+stime | "
        f"{X} one process | Redis (cores) | Redis commands/s |",
        "|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for row in results["rows"]:
        rounds = ", ".join(f"{v:.4f}" for v in row["rounds"])
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}{X}"
        if row["ratio"] is not None and len(row["ratios"]) > 1:
            ratio += f" ({', '.join(f'{r:.1f}' for r in row['ratios'])})"
        total = sum(row["commands"].values())
        kinds = ", ".join(f"{k} {v:.1f}" for k, v in list(row["commands"].items())[:6])
        redis = f"{row['redis_cores']:.4f}" if row["commands"] else "-"
        cmds = f"{total:.1f}: {kinds}" if row["commands"] else "-"
        lines.append(
            f"| {row['phase']} | {row['setup']} | {row['per_process']:.4f} ({rounds}) "
            f"| {row['ticks']:.4f} | {ratio} | {redis} | {cmds} |"
        )
        if row["ratio"] is not None and row["commands"]:
            kept = "kept" if row["ratio"] <= TARGET else "NOT kept"
            verdicts.append(f"{row['setup']}, {row['phase']}: {row['ratio']:.2f}{X} ({kept})")
    if verdicts:
        lines += ["", f"Target (a cluster process at most {TARGET:g}{X} one process): "]
        lines[-1] += "; ".join(verdicts) + "."
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=120, help="tables (default 120)")
    parser.add_argument(
        "--processes", default="2", help="cluster sizes, comma-separated (default 2; e.g. 2,3)"
    )
    parser.add_argument(
        "--spectators", type=int, default=200, help="idle spectators a setup (200; 0: none)"
    )
    parser.add_argument("--window", type=float, default=30.0, help="seconds measured (30)")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before (10)")
    parser.add_argument("--rounds", type=int, default=2, help="windows per setup, in turn (2)")
    parser.add_argument("--baseline", metavar="REV", help="also that revision's servers")
    parser.add_argument(
        "--placement",
        choices=("hash", "players"),
        default="hash",
        help="the clusters' placement (hash; players: each process publishes and reads its "
        "watchers a table every 2 s)",
    )
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = parser.parse_args(argv)
    raise_nofile()
    load_before = loadavg()
    print(f"load average at start: {load_before}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="chemmy-idle-") as tmp:
        windows = asyncio.run(run(args, Path(tmp)))
    words = argv if argv is not None else sys.argv[1:]
    results: dict[str, Any] = {
        "command": " ".join([COMMAND, shlex.join(words)]).strip(),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": machine(),
        "load": load_line(load_before),
        "tables": args.tables,
        "window": args.window,
        "warmup": args.warmup,
        "rounds": args.rounds,
        "placement": args.placement,
        "rows": summary(windows),
        "windows": [vars(w) for w in windows],
    }
    print(f"load average at end: {loadavg()}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    text = report(results)
    print(text)
    return 0


__all__ = ["Setup", "Window", "main", "report", "summary"]

if __name__ == "__main__":
    sys.exit(main())
