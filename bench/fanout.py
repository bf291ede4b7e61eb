"""In-process micro-measure of the hub's fan-out (server/gateway/hub.py), beside the bare
``websockets.broadcast`` of the same frames and beside the hub of another revision, in
the same run, in turns.

Run from the project root: ``python -m bench.fanout [--watchers N] [--steps S]
[--rounds R] [--baseline REV] [--gap SECONDS]``.

One process serves N real WebSocket connections (``websockets``, port 0, no
compression); their clients are raw sockets in a child process that does the
handshake and then reads and discards (so the server's writes are real system calls to
sockets being drained, not appends to a full buffer). The server's thread CPU
(``time.thread_time``) is measured around each step's publish and the writes it makes
(the hub's tail drained), and the write system calls it made (``/proc/self/io``
``syscw``) are counted. Each variant publishes S steps a round, the variants in turn
(A, B, C, A, B, C, ...), R rounds; the figures are the medians over rounds of µs a step,
and their ratio to the bare broadcast of the same round.

- ``bare``: ``websockets.broadcast`` of each event's payload to every connection (a
  private part: its own frame to its connection): what a developer would write.
- ``hub@REV``: ``server/gateway/hub.py`` of ``REV`` (``git show``), loaded as a module
  of its own: today's code before a change.
- ``hub``: the working tree's ``server/gateway/hub.py``.

Steps (``--kind``): ``burst`` is a bettors' burst, a ``bets`` event and a chat line
(public, ~0.4 KiB); ``phase`` is a phase change, one event with a private ``actions``
part alike for every watcher (a player each); ``stream`` publishes ``burst`` steps
``--gap`` seconds apart without draining in between and reports writes per watcher per
step (the tail's coalescing, and its ``TAIL_GAP``). ``burst`` and ``phase`` time each
step with its writes drained before the next, the tail's ``TAIL_GAP`` set to 0 (the drain
would otherwise wait for it): a step's cost alone.

It measures the hub alone, not a table, a store or a client's reading; the machine's
other work shows in every variant alike, hence the turns and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import importlib.util
import inspect
import multiprocessing as mp
import os
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection, broadcast, serve

from bench._util import ROOT, load_line, loadavg, raise_nofile
from server.process.metrics import Metrics
from server.protocol.codec import JSON, encode
from server.vocabulary.events import Event

# -- the clients: raw sockets in a child process, drained ------------------------------


def _clients_main(port: int, count: int, pipe: Connection) -> None:
    raise_nofile()
    socks = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16))
        s.sendall(
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: " + key + b"\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n"
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
        assert head.startswith(b"HTTP/1.1 101"), head[:80]
        s.setblocking(False)
        socks.append(s)
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    pipe.send("ready")
    received = 0
    while not pipe.poll():
        for key, _ in sel.select(0.05):
            with contextlib.suppress(BlockingIOError):
                received += len(key.fileobj.recv(1 << 16))  # type: ignore[union-attr]
    pipe.recv()
    pipe.send(received)
    for s in socks:
        s.close()


# -- the variants ------------------------------------------------------------------------


def load_hub(rev: str | None) -> types.ModuleType:
    """``server/gateway/hub.py`` at ``rev`` (None: the working tree's) as its own module."""
    name = "bench_hub_" + (rev or "tree").replace("~", "_").replace("^", "_")
    if rev is None:
        path = ROOT / "server" / "gateway" / "hub.py"
    else:
        text = subprocess.run(
            ["git", "show", f"{rev}:server/gateway/hub.py"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        path = Path(tempfile.mkdtemp(prefix="bench-fanout-")) / f"{name}.py"
        path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def steps_of(kind: str, count: int, players: list[str]) -> list[list[Event]]:
    steps = []
    for n in range(count):
        bets = {f"p{i}": {"banker": 100 * (i + 1)} for i in range(20)}
        if kind == "phase":
            actions = {"actions": ["leave", "chat"]}
            event = Event(n, "betting_closed", {"totals": bets}, {p: actions for p in players})
            steps.append([event])
        else:
            chat = {"player": "x", "name": "X", "text": f"line {n}"}
            steps.append(
                [
                    Event(n, "bets", {"bettors": 1000, "totals": bets}),
                    Event(n, "chat", chat, transient=True),
                ]
            )
    return steps


class Writes:
    """The transports' writes counted (a pass of its own, not timed: the counting costs)."""

    def __init__(self, conns: list[ServerConnection]) -> None:
        self.conns, self.count = conns, 0

    def __enter__(self) -> Writes:
        for conn in self.conns:
            write = conn.transport.write

            def counted(data: Any, write: Any = write) -> None:
                self.count += 1
                write(data)

            conn.transport.write = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        for conn in self.conns:
            del conn.transport.write  # (the class's again)


async def _drain(tail: Any, pause: float = 0.0) -> None:
    while tail is not None and tail.frames:
        await asyncio.sleep(pause)


def tail_of(step: Any) -> Any:
    """The tail a hub variant's step writes through (None: the bare broadcast's)."""
    return getattr(step, "tail", None)


def hub_variant(module: types.ModuleType, conns: list[ServerConnection], gap: bool) -> Any:
    """``module``'s hub, its steps timed with their writes; without ``gap``, its tail's
    passes begin at once (``TAIL_GAP`` 0: a step's cost alone, the drain not waiting)."""
    if not gap and hasattr(module, "TAIL_GAP"):
        module.TAIL_GAP = 0.0
    # Timed as the server times it (server/process/assemble.py), where the variant can:
    # the encode-and-hand histogram, and the writes' wait (one write in 8).
    metrics = Metrics()
    can = inspect.signature(module.Hub).parameters
    timers = {"observe": metrics.fanout.observe, "observe_wait": metrics.fanout_wait.observe}
    hub = module.Hub(**{k: f for k, f in timers.items() if k in can})
    for i, conn in enumerate(conns):
        hub.subscribe("t1", module.Subscriber(conn, f"w{i}", JSON))
    tail = getattr(module, "_TAIL", None)

    async def step(events: list[Event], drain: bool = True) -> None:
        hub.publish("t1", events)
        if drain:
            await _drain(tail)

    step.tail = tail  # type: ignore[attr-defined]
    return step


def bare_variant(conns: list[ServerConnection]) -> Any:
    from server.gateway.hub import envelope, transient
    from server.table.views import view_event

    async def step(events: list[Event], drain: bool = True) -> None:
        for event in events:
            if event.transient:
                broadcast(conns, encode(transient("t1", event), JSON))
                continue
            if event.private:
                for i, conn in enumerate(conns):  # a player each: its own frame
                    broadcast((conn,), encode(envelope("t1", view_event(event, f"w{i}")), JSON))
            else:
                broadcast(conns, encode(envelope("t1", view_event(event, None)), JSON))

    return step


async def measure(
    step: Callable[[list[Event]], Any], steps: list[list[Event]], conns: list[ServerConnection]
) -> tuple[float, float]:
    """µs of this thread's CPU a step, and writes a watcher a step (a pass of its own)."""
    cpu = 0.0
    for events in steps:
        t0 = time.thread_time()
        await step(events)
        cpu += time.thread_time() - t0
        await asyncio.sleep(0.001)  # (the clients read; the loop is idle between steps)
    with Writes(conns) as writes:
        for events in steps[:10]:
            await step(events)
            await asyncio.sleep(0.001)
    return cpu / len(steps) * 1e6, writes.count / min(10, len(steps)) / len(conns)


async def stream(
    step: Callable[[list[Event]], Any],
    steps: list[list[Event]],
    conns: list[ServerConnection],
    gap: float,
) -> tuple[float, float]:
    """Steps ``gap`` apart, not waiting for their writes: CPU a step (µs) and writes a
    watcher a step (counted: the counting's cost is in every variant). (A second's
    figure would be the loaded machine's: the steps fall behind their pace.)"""
    with Writes(conns) as writes:
        cpu0, t0 = time.thread_time(), time.perf_counter()
        for n, events in enumerate(steps):
            await step(events, drain=False)  # (the tail writes in the loop's turns)
            await asyncio.sleep(max(0.0, t0 + (n + 1) * gap - time.perf_counter()))
        await _drain(tail_of(step), 0.002)
        cpu = time.thread_time() - cpu0
    return cpu / len(steps) * 1e6, writes.count / len(conns) / len(steps)


async def main_async(args: argparse.Namespace) -> list[str]:
    raise_nofile()
    conns: list[ServerConnection] = []
    all_in = asyncio.Event()

    async def handler(conn: ServerConnection) -> None:
        conns.append(conn)
        if len(conns) == args.watchers:
            all_in.set()
        await conn.wait_closed()

    async with serve(handler, "127.0.0.1", 0, compression=None, ping_interval=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        ours, theirs = mp.Pipe()
        child = mp.get_context("spawn").Process(
            target=_clients_main, args=(port, args.watchers, theirs), daemon=True
        )
        child.start()
        await all_in.wait()
        while not ours.poll():
            await asyncio.sleep(0.05)
        ours.recv()
        players = [f"w{i}" for i in range(args.watchers)]
        steps = steps_of(args.kind, args.steps, players)
        variants: dict[str, Any] = {"bare": bare_variant(conns)}
        if args.baseline:
            variants[f"hub@{args.baseline}"] = hub_variant(
                load_hub(args.baseline), conns, args.kind == "stream"
            )
        variants["hub"] = hub_variant(load_hub(None), conns, args.kind == "stream")
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, step in variants.items():
                if args.kind == "stream":
                    results[name].append(await stream(step, steps, conns, args.gap))
                else:
                    results[name].append(await measure(step, steps, conns))
        ours.send("stop")
        while not ours.poll():
            await asyncio.sleep(0.05)
        received = ours.recv()
        child.join(10)
    unit = "writes/watcher/step"
    lines = [
        f"{args.kind}: {args.watchers} watchers, {args.steps} steps a round, "
        f"{args.rounds} rounds in turns; {received / 1e6:.1f} MB read by the clients",
        f"| variant | µs a step (median) | ÷ bare | {unit} |",
        "|---|---|---|---|",
    ]
    bare = statistics.median(r[0] for r in results["bare"])
    for name, rows in results.items():
        cpu = statistics.median(r[0] for r in rows)
        writes = statistics.median(r[1] for r in rows)
        lines.append(f"| {name} | {cpu:,.0f} | {cpu / bare:.2f}x | {writes:.2f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fanout", description=__doc__)
    parser.add_argument("--watchers", type=int, default=2000, help="connections (2000)")
    parser.add_argument("--steps", type=int, default=100, help="steps a round (100)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, in turns (5)")
    parser.add_argument(
        "--kind", choices=("burst", "phase", "stream"), default="burst", help="steps"
    )
    parser.add_argument("--gap", type=float, default=0.01, help="stream: s between steps")
    parser.add_argument("--baseline", default=None, help="a revision's hub beside (git rev)")
    args = parser.parse_args(argv)
    start = loadavg()
    lines = asyncio.run(main_async(args))
    print("\n".join(lines))
    print(load_line(start))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
