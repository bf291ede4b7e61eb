"""What a player's own limits cost a ``bet``, next to the server before them and a bare echo.

Run from the project root: ``python -m bench.limits [--baseline REV] [--requests N]
[--write]``.

Every ``bet`` and ``same_bet`` now reads the player's limits from the store (issue 21:
``server/protection/play_limits.py``), and for a player who set a wager or loss limit also 30
days of their flows and their chips at the other tables, before the table holds the bet
to what they leave. This measures the sequential round trip of a ``bet`` (alternating
with a ``remove_bet``, as bench/gateway.py does) for:

- ``no limits``: a player with none (one read more than before);
- ``limits``: a player with a daily loss and a weekly wager limit (the reads above);
- the ``--baseline`` revision's server (default ``d91cfd5``, before limits), on SQLite;
- the bare ``websockets`` echo of the same message.

Each server is its own process on SQLite, as ``chemmy-server`` runs by default; the
kinds are taken in turns of a few round trips, so whatever else the machine does falls
on all alike. ``--write`` puts the results in docs/benchmarks.md, section
"## Limits (bench/limits.py)".
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench._util import machine, write_benchmarks
from bench.gateway import (
    RUN,
    TABLE,
    Process,
    archive,
    ok,
    request,
    seated_bot,
    start_bare,
    start_baseline,
    start_chemmy,
    stats_ms,
    timed,
)
from tests.kit.client import Client

SECTION = "## Limits (bench/limits.py)"
#: The floor: the bare echo, each reply sent after chemmy's store committed a bet's step.
WRITE = "echo after the store's write"


def bet_or_remove(bot: Client) -> Callable[[], Awaitable[Any]]:
    flip = {"n": 0}

    async def call() -> None:
        flip["n"] += 1
        if flip["n"] % 2:
            await ok(bot, "bet", table=TABLE, area="player", amount=100)
        else:
            await ok(bot, "remove_bet", table=TABLE, area="player")

    return call


async def measure(tmp: Path, count: int, baseline: str) -> dict[str, Any]:
    servers: list[Process] = []  # (each stopped below, even when a later one fails to start)

    def started(made: tuple[Process, str]) -> str:
        servers.append(made[0])
        return made[1]

    try:
        plain_url, limited_url = started(start_chemmy(tmp)), started(start_chemmy(tmp))
        echo_url, write_url = started(start_bare("echo")), started(start_bare("write"))
        old_url = started(start_baseline(tmp, archive(baseline, tmp / "baseline")))
        bots = [await seated_bot(url) for url in (plain_url, limited_url, old_url)]
        await bots[1].call("set_limit", kind="loss_day", amount=10**9)
        await bots[1].call("set_limit", kind="wager_week", amount=10**10)
        echo_client = await Client(echo_url, label="echo", timeout=30).open()
        write_client = await Client(write_url, label="write", timeout=30).open()
        kinds: dict[str, Callable[[], Awaitable[Any]]] = {
            "no limits": bet_or_remove(bots[0]),
            "limits": bet_or_remove(bots[1]),
            baseline: bet_or_remove(bots[2]),
            "bare echo": lambda: request(
                echo_client, "bet", table=TABLE, area="player", amount=100
            ),
            WRITE: lambda: request(write_client, "bet", table=TABLE, area="player", amount=100),
        }
        samples: dict[str, list[float]] = {k: [] for k in kinds}
        for call in kinds.values():
            await timed(call, 0, warmup=200)
        for _ in range(count // RUN):
            for name, call in kinds.items():
                samples[name] += await timed(call, RUN, warmup=1)
        for one in (*bots, echo_client, write_client):
            await one.close()
    finally:
        for process in servers:
            process.stop()
    return {"count": count // RUN * RUN, **{k: stats_ms(v) for k, v in samples.items()}}


def report(results: dict[str, Any], baseline: str, command: str) -> str:
    base = results[baseline]["p50"]
    echo = results["bare echo"]["p50"]
    lines = [
        SECTION,
        "",
        f"`{command}` on {machine()}: {results['count']} sequential round trips of each,",
        "taken in turns of 20 (a `bet`, then a `remove_bet`, alternately; each server its own",
        "process on SQLite).",
        "",
        f"| bet round trip | p50 ms | p99 ms | p50 ÷ {baseline} | p50 ÷ bare echo "
        "| p50 ÷ echo after the store's write |",
        "|---|---|---|---|---|---|",
    ]
    floor = results[WRITE]["p50"]
    for name in ("no limits", "limits", baseline, "bare echo", WRITE):
        st = results[name]
        lines.append(
            f"| {name} | {st['p50']:.3f} | {st['p99']:.3f} | {st['p50'] / base:.2f} "
            f"| {st['p50'] / echo:.1f} | {st['p50'] / floor:.1f} |"
        )
    lines += [
        "",
        "A player with no limit pays one store read more per bet (their limits); one with a",
        "wager or loss limit pays three (their limits, 30 days of flows, their chips at the",
        "other tables). Issue 23 weighs these against the group commit.",
        "",
        f"{WRITE.capitalize()}: the bare echo server, each reply sent after chemmy's SQLite",
        "store (a file of its own, the server's settings) committed what a `bet` step, or a",
        "`remove_bet`'s, stores: the table row with a 2 KiB state, the step's event and its",
        "one ledger entry (bench/gateway.py `bet_write`). It is the floor of a command that",
        "is stored before its reply, with none of the rules, the gateway or the fan-out.",
        "",
    ]
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> str:
    with tempfile.TemporaryDirectory(prefix="chemmy-bench-limits-") as tmp:
        results = await measure(Path(tmp), args.requests, args.baseline)
    command = "python -m bench.limits" + (
        f" --baseline {args.baseline}" if args.baseline != "d91cfd5" else ""
    )
    if args.requests != 2000:
        command += f" --requests {args.requests}"
    return report(results, args.baseline, command + (" --write" if args.write else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="d91cfd5", help="the revision before limits")
    parser.add_argument("--requests", type=int, default=2000, help="round trips per kind")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args(argv)
    text = asyncio.run(run(args))
    print(text)
    if args.write:
        write_benchmarks(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
