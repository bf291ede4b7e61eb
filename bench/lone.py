"""Where a lone ``bet`` round trip goes, on SQLite, in one process (issue 23).

Run from the project root: ``python -m bench.lone [--requests N] [--cprofile]
[--event-loop uvloop|asyncio]``.

The server (bench/gateway.py's settings, a new SQLite file) and one seated bot run in this
process, on one event loop (uvloop by default, as ``chemmy-server`` runs; asyncio's own
with ``--event-loop asyncio``); the bot sends a ``bet`` and a ``remove_bet`` alternately, as
bench/gateway.py does. Each piece of the server's path is wrapped with a
``time.perf_counter`` span (mean and p50 per round trip, µs):

- ``dispatch to relay``: the gateway's frame decode, checks and handler up to the relay,
  with inside it the two store reads of a ``bet`` (the player's restriction and limits,
  each a hop to the store's thread and back);
- ``relay to step``: the command record's way to the table's actor (its queue, the task's
  wake-up);
- the actor's step: ``Table.handle`` (decide), ``to_state`` (the state row), the store's
  ``commit`` (checks and JSON on the loop, then the thread hop and the SQLite transaction:
  ``_commit`` is the transaction alone, timed in the store's thread), and ``deliver``
  (the events published, encoded and sent, then the reply);
- the round trip as the bot sees it (its client, the kit's, runs on the same loop); the rest is the sockets, websockets and the client.

``--cprofile`` also prints the top functions of a cProfile of the measured round trips
(the loop's thread only).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.gateway import SERVER_CONFIG, bet_and_remove, seated_bot
from server.croupier.actor import TableActor
from server.gateway import tables as net_tables
from server.gateway.server import ChemmyServer
from server.process.assemble import assemble
from server.process.config import load_config
from server.process.main import loop_factory
from server.process.settings import EVENT_LOOPS
from server.store import store_for
from server.store.sqlite import SQLiteStore

SPANS: dict[str, list[float]] = defaultdict(list)


def _sync(owner: Any, name: str, label: str) -> None:
    inner = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            SPANS[label].append(time.perf_counter() - t0)

    setattr(owner, name, wrapper)


def _async(owner: Any, name: str, label: str) -> None:
    inner = getattr(owner, name)

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await inner(*args, **kwargs)
        finally:
            SPANS[label].append(time.perf_counter() - t0)

    setattr(owner, name, wrapper)


def instrument() -> None:
    """Wrap the pieces of the path (see the module's docstring)."""
    _async(ChemmyServer, "_dispatch", "dispatch (whole handler)")
    if hasattr(net_tables, "bet_checks"):
        _async(net_tables, "bet_checks", "  bet_checks (one store read, the checks)")
    if hasattr(net_tables, "bet_allowance"):
        _async(net_tables, "bet_allowance", "    bet_allowance (the limits' arithmetic)")
    relayed: dict[str, float] = {}
    relay = ChemmyServer.relay

    def timed_relay(self: Any, *args: Any, **kwargs: Any) -> Any:
        relayed["at"] = time.perf_counter()
        t0 = time.perf_counter()
        try:
            return relay(self, *args, **kwargs)
        finally:
            SPANS["relay (submit)"].append(time.perf_counter() - t0)

    ChemmyServer.relay = timed_relay  # type: ignore[method-assign]
    step = TableActor._step

    async def timed_step(self: Any, item: Any) -> None:
        if item.record is not None and "at" in relayed:
            SPANS["relay to step (queue, wake)"].append(time.perf_counter() - relayed.pop("at"))
        t0 = time.perf_counter()
        try:
            await step(self, item)
        finally:
            SPANS["actor step (whole)"].append(time.perf_counter() - t0)

    TableActor._step = timed_step  # type: ignore[method-assign]
    _sync(TableActor, "_decide", "  Table.handle (decide)")
    from server.table import Table

    _sync(Table, "to_state", "  to_state (state row)")
    _async(SQLiteStore, "commit", "  store.commit (checks, JSON, hop, write)")
    _sync(SQLiteStore, "_commit", "    _commit (the transaction, store thread)")
    from server.store import front, plan

    _sync(
        front,
        "plan_commit",
        "    plan_commit (the commit checked and serialized, on the loop)",
    )
    _sync(plan, "check_row", "      check_row (the row's JSON)")
    _sync(plan, "check_events", "      check_events (the events' JSON)")
    _sync(TableActor, "_deliver", "  deliver (events, reply)")


async def measure(tmp: Path, count: int, profile: bool) -> tuple[dict[str, Any], str]:
    (tmp / "chemmy.toml").write_text(SERVER_CONFIG)
    config = load_config(["--config", str(tmp / "chemmy.toml"), "--port", "0"], {})
    config = type(config)(**{**vars(config), "db": str(tmp / "chemmy.sqlite3")})
    server = assemble(config, store_for(config.store_url))
    await server.start()
    try:
        bot = await seated_bot(f"ws://127.0.0.1:{server.port}")
        call = bet_and_remove(bot)
        for _ in range(300):
            await call()
        SPANS.clear()
        trips: list[float] = []
        profiler = cProfile.Profile() if profile else None
        if profiler is not None:
            profiler.enable()
        for _ in range(count):
            t0 = time.perf_counter()
            await call()
            trips.append(time.perf_counter() - t0)
        if profiler is not None:
            profiler.disable()
        await bot.close()
    finally:
        await server.stop()
    text = ""
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        text = out.getvalue()
    return {"round trip (bot)": trips, **SPANS}, text


def report(spans: dict[str, list[float]], count: int, command: str) -> str:
    lines = [
        f"`{command}`: {count} round trips (`bet` and `remove_bet` alternately), µs per",
        "round trip (a span met twice in a round trip counts twice in its mean):",
        "",
        "| span | mean µs | p50 µs | per round trip |",
        "|---|---|---|---|",
    ]
    for name, samples in spans.items():
        if not samples:
            continue
        mean = sum(samples) / count * 1e6
        p50 = statistics.median(samples) * 1e6
        lines.append(f"| {name} | {mean:.0f} | {p50:.0f} | {len(samples) / count:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="round trips")
    parser.add_argument("--cprofile", action="store_true", help="also a cProfile")
    parser.add_argument(
        "--event-loop",
        choices=EVENT_LOOPS,
        default="uvloop",
        help="the event loop (chemmy-server's --event-loop; its default, uvloop)",
    )
    args = parser.parse_args(argv)
    if not args.cprofile:
        instrument()
    with (
        tempfile.TemporaryDirectory(prefix="chemmy-bench-lone-") as tmp,
        asyncio.Runner(loop_factory=loop_factory(args.event_loop)) as runner,
    ):
        spans, text = runner.run(measure(Path(tmp), args.requests, args.cprofile))
    command = f"python -m bench.lone --event-loop {args.event_loop}" + (
        " --cprofile" if args.cprofile else ""
    )
    print(report(spans, args.requests, command))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
