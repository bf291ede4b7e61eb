"""Benchmark of the table row written at every step (issue 36 target 2): what the
croupier's actor spends on the row of one step, a table of 14 seated bots played at a
human pace (``bench.table``'s ``steps``: bets with ids, changed bets, DONE, squeezes,
progress, turns), over whole shoes.

Run from the project root: ``python -m bench.row`` (prints only). For each step that
made events, as the actor does it (server/croupier/commit.py): the row
(``to_state(spectators=False)``), the bettors' parts (``take_parts``), the commit's plan
(``plan_commit``: the config and the state as JSON), and the step before's state dropped.
``--sqlite``: each step is also committed to a real SQLite file (``store.commit``, its
worker thread included), and the figure is the process's CPU per commit
(``time.process_time``: every thread). The row's figure is CPU time too, the best of
``--repeats`` runs (the machine is shared).

``--baseline DIR`` measures in turns (DIR, here, DIR, here: ``--turns``) the ``server``
of another checkout in DIR (a ``git worktree`` of main) and this one's, each in a
subprocess running this file with only that checkout on its path (the file uses only
calls main has too).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import server.store as stores
from bench._util import ROOT
from bench.table import AREAS, BOTS, Run
from server.croupier import commit
from server.store.base import TableRow
from server.store.plan import plan_commit
from server.table.table import Phase
from server.vocabulary import commands as c


def steps(coups: int) -> list[c.Command]:
    """The commands of ``coups`` coups as :func:`bench.table.steps` sends them (played
    once, on a table of their own, so each timed run replays the same steps)."""
    r = Run()
    t, bots = r.table, r.bots
    out: list[tuple[float, c.Command]] = []
    n = 0

    def send(cmd: c.Command) -> None:
        out.append((r.now, cmd))
        t.handle(cmd, r.now)

    def cid() -> str:
        nonlocal n
        n += 1
        return f"s{n}"

    r.send = send  # type: ignore[method-assign]
    played = 0
    while played < coups:
        r.now += 1.0
        if r.answer():
            continue
        if t.phase is Phase.BETTING:
            played += 1
            for i, b in enumerate(bots):
                area = "banker" if b == t.holder else AREAS[(i + played) % 3]
                amount = 100 * (1 + (i * 7 + played) % 10)
                send(c.PlaceBet(player=b, area=area, amount=amount, id=cid()))
            for b in bots:
                area = "banker" if b == t.holder else "player"
                send(c.PlaceBet(player=b, area=area, amount=100, id=cid()))
            for b in bots:
                if t.phase is Phase.BETTING:
                    send(c.Done(player=b, id=cid()))
            continue
        coup = t.coup
        assert coup is not None, t.phase
        hand = coup.stage_hand
        turner = coup.turners[hand]
        assert turner is not None
        send(c.Squeeze(player=turner, hand=hand, style="peek", id=cid()))
        for card in coup.face_down():
            for j in range(8):
                r.now += 0.15
                send(c.Progress(player=turner, hand=hand, card=card, percent=10 * (j + 1)))
            send(c.TurnCard(player=turner, hand=hand, card=card, id=cid()))
    return out  # type: ignore[return-value]


class Planner:
    """A store that only plans its commits (what the loop pays before the store's
    thread: the checks and the JSON)."""

    def __init__(self) -> None:
        self.now = 0.0

    async def commit(self, *, table: TableRow, **rest: Any) -> None:
        plan_commit(self.now, [], table, [], [], [], [])


def _run(coro: Any) -> None:
    """Run a coroutine that never waits (the planner's commit) without a loop."""
    try:
        coro.send(None)
    except StopIteration:
        return
    raise AssertionError("the planner waited")


def replay(
    script: list[Any], store: Any = None, loop: asyncio.AbstractEventLoop | None = None
) -> tuple[float, int, float]:
    """Replay ``script`` on a fresh table; the row's CPU seconds over the
    steps that made events, their count, and with ``store`` the process CPU of the
    commits (every thread)."""
    r = Run()
    t = r.table
    config = {"id": t.table_id, **t.options.to_dict()}
    last = t.to_state(spectators=False)
    t.take_parts()
    clock = time.process_time  # (CPU: the machine is shared)
    spent = cpu = 0.0
    n = 0
    planner = Planner()
    for now, cmd in script:
        step = t.handle(cmd, now)
        if not step.events:
            continue
        t0 = clock()
        w = commit.to_write(t, None, last, {}, [], [], [], [])
        _run(commit.write(planner, t, config, 0, w))  # type: ignore[arg-type]
        last = w.state
        spent += clock() - t0
        n += 1
        if store is not None and loop is not None:
            w.stored = [e for e in step.events if e.seq]
            c0 = time.process_time()
            loop.run_until_complete(commit.write(store, t, config, 0, w))
            cpu += time.process_time() - c0
    del last
    return spent, n, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coups", type=int, default=160, help="coups a run (two shoes)")
    parser.add_argument("--repeats", type=int, default=5, help="runs; the best is shown")
    parser.add_argument("--sqlite", action="store_true", help="commit to a SQLite file too")
    parser.add_argument("--baseline", metavar="DIR", help="another checkout, in turns")
    parser.add_argument("--turns", type=int, default=2, help="turns with --baseline")
    args = parser.parse_args()
    if args.baseline:
        rest = [a for a in sys.argv[1:] if a not in (args.baseline, "--baseline")]
        for _ in range(args.turns):
            for name, root in (("baseline", args.baseline), ("this", str(ROOT))):
                print(f"{name} ({root}):", flush=True)
                env = {**os.environ, "PYTHONPATH": root}
                subprocess.run([sys.executable, __file__, *rest], env=env, cwd=root, check=True)
        return
    script = steps(args.coups)
    best, best_cpu, n = float("inf"), float("inf"), 0
    for _ in range(args.repeats):
        gc.collect()
        if args.sqlite:
            with tempfile.TemporaryDirectory() as d:
                loop = asyncio.new_event_loop()
                store = loop.run_until_complete(stores.open_store(Path(d) / "row.db"))
                spent, n, cpu = replay(script, store, loop)
                loop.run_until_complete(store.close())
                loop.close()
            best_cpu = min(best_cpu, cpu)
        else:
            spent, n, _ = replay(script)
        best = min(best, spent)
    print(f"{args.coups} coups, {BOTS} seated bots, {n:,d} steps with events:")
    print(f"  row (to_state, take_parts, plan_commit, drop): {best / n * 1e6:7.1f} us a step")
    if args.sqlite:
        print(
            f"  commit to SQLite (process CPU, all threads):  {best_cpu / n * 1e6:7.1f} us a step"
        )


if __name__ == "__main__":
    main()
