"""Benchmark of a Redis primary's failover under a playing cluster (issue 22).

Run from the project root: ``python -m bench.failover [--write]`` (``--trials N``,
``--down-after 1000,2000``: the sentinels' ``down-after-milliseconds`` values tried).

Each trial starts a primary, two replicas and three sentinels of its own
(tests/kit/redis.py: quorum 2, ``failover-timeout`` 3 s), three ``chemmy-server``
processes on ``redis+sentinel://`` with ``--redis-min-replicas 1`` and the default
lease (3 s), and a table with zero timers played by a bot connected to a process other
than the table's owner (its events reach it through Redis). Once the table has played a
few coups, ``kill -9`` of the primary at a different point of a coup in each trial. The
figures: the time from the kill to the sentinels naming the promoted replica, and to
the bot receiving the table's next event (the first with a ``seq`` above every one it
had half the down-after time after the kill: no event can be stored before then).
Target: at most down-after + 2 s. ``--write`` puts the results in docs/benchmarks.md,
section "## Redis failover (bench/failover.py)" (every other section is kept).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench._util import machine, percentile, write_benchmarks
from bench.cluster import ZERO_TIMERS, Bot, config, table_ids
from tests.kit.cluster import Cluster
from tests.kit.redis import RedisHA, redis_available

COMMAND = "python -m bench.failover"
SECTION = "## Redis failover (bench/failover.py)"


@dataclass
class Trial:
    down_after_ms: int
    promoted: float  # kill -> the sentinels name another primary
    outage: float  # kill -> the bot's next event
    seq_before: int
    seq_after: int


async def trial(tmp: Path, down_after_ms: int, n: int) -> Trial:
    ha = RedisHA(tmp / "redis", replicas=2, down_after_ms=down_after_ms)
    ha.start()
    tables = table_ids(3)
    cluster = Cluster(
        tmp / "cluster",
        0,
        [],
        config=config(tables, ZERO_TIMERS),
        lease=None,
        url=ha.url(),
        args=["--log-format", "text", "--redis-min-replicas", "1"],
    )
    bot: Bot | None = None
    try:
        for _ in range(3):
            cluster.add()
        table = tables[0]
        for attempt in range(20):  # placement may still move the table as members join
            await cluster.ready(len(tables))
            owner = cluster.owner(table)
            other = next(node for node in cluster.nodes if node is not owner)
            bot = Bot(other.url, f"bot-{n}-{attempt}", table)
            try:
                await bot.start()
                break
            except AssertionError:
                await bot.close()
                bot = None
                await asyncio.sleep(0.5)
        assert bot is not None, "the bot could not sit at the table"
        while bot.settled < 3:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1 * n)  # kill at various points of a coup
        bot.recording = True
        old = ha.primary()
        killed = time.perf_counter()
        old.kill()
        new = await asyncio.to_thread(ha.promoted, old)
        promoted = time.perf_counter() - killed
        assert new is not old
        cut = killed + down_after_ms / 2000
        deadline = time.monotonic() + 30
        while True:
            before = max((s for s, t in bot.seqs if t < cut), default=-1)
            after = [(s, t) for s, t in bot.seqs if s > before and t >= cut]
            if after and time.perf_counter() > cut:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"no event after the kill in 30 s (seq {before})")
            await asyncio.sleep(0.01)
        seq, at = after[0]
        out = Trial(down_after_ms, promoted, at - killed, before, seq)
        print(
            f"  down-after {down_after_ms} ms, trial {n + 1}: promoted after {promoted:.2f} s, "
            f"next event after {out.outage:.2f} s (seq {before} -> {seq})",
            file=sys.stderr,
        )
        return out
    finally:
        if bot is not None:
            await bot.close()
        for node in cluster.nodes:
            node.kill()
        cluster.redis.close()
        ha.stop()


def report(trials: list[Trial], args: argparse.Namespace, took: float) -> str:
    lines = [
        SECTION,
        "",
        f"Made by `{COMMAND} --trials {args.trials} --down-after {args.down_after}` on "
        f"{time.strftime('%Y-%m-%d')} ({took:.0f} s). Machine: {machine()}.",
        "",
        "Each trial: a primary, two replicas and three sentinels (quorum 2, "
        "`failover-timeout` 3 s), three `chemmy-server` on `redis+sentinel://` with "
        "`--redis-min-replicas 1` and the default lease (3 s), a table with zero timers "
        "played by a bot on a process other than the table's owner. `kill -9` of the "
        "primary at a different point of a coup in each trial; *promoted* is the kill → "
        "the sentinels naming another primary, *outage* the kill → the bot's next event "
        "(the first `seq` above every one it had half the down-after time after the kill). "
        "Target: outage ≤ down-after + 2 s.",
        "",
        "| down-after | trial | promoted | outage | outage - down-after |",
        "|---|---|---|---|---|",
    ]
    for i, t in enumerate(trials):
        n = sum(1 for u in trials[:i] if u.down_after_ms == t.down_after_ms) + 1
        lines.append(
            f"| {t.down_after_ms} ms | {n} | {t.promoted:.2f} s | {t.outage:.2f} s | "
            f"{t.outage - t.down_after_ms / 1000:.2f} s |"
        )
    lines.append("")
    for down_after in sorted({t.down_after_ms for t in trials}):
        outages = [t.outage for t in trials if t.down_after_ms == down_after]
        worst = max(outages)
        met = "met" if worst <= down_after / 1000 + 2 else "missed"
        lines.append(
            f"- down-after {down_after} ms: outage min {min(outages):.2f} s, median "
            f"{percentile(outages, 50):.2f} s, max {worst:.2f} s (target "
            f"{down_after / 1000 + 2:.1f} s: {met})."
        )
    return "\n".join(lines) + "\n"


async def main_async(args: argparse.Namespace) -> list[Trial]:
    out: list[Trial] = []
    for down_after in [int(v) for v in args.down_after.split(",")]:
        for n in range(args.trials):
            with tempfile.TemporaryDirectory(prefix="chemmy-failover-") as tmp:
                out.append(await trial(Path(tmp), down_after, n))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5, help="kills per down-after (5)")
    parser.add_argument("--down-after", default="1000,2000", help="down-after-milliseconds")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args(argv)
    if not redis_available():
        print("redis-server is not installed", file=sys.stderr)
        return 1
    began = time.monotonic()
    trials = asyncio.run(main_async(args))
    text = report(trials, args, time.monotonic() - began)
    print(text)
    if args.write:
        write_benchmarks(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
