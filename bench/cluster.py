"""Benchmark of many ``chemmy-server`` processes over one Redis (issue 11), each figure next
to a baseline measured in the same run.

Run from the project root: ``python -m bench.cluster [--write]`` (``--parts a,c`` runs
only some parts, while developing; ``--help`` for the sizes).

- (a) Latency across processes. Three processes; one table (timers of an hour, so the
  round stays open) owned by process A; one seated bot on A and one on C place and remove
  a chip in turn; a spectator on each of A, B and C. Each command's ``bets`` event is
  timed from the bot sending the command to each spectator receiving it: the spectator
  on the command's own process and the table's owner is the baseline (no Redis on the
  event's way); the others add a hop through Redis pub/sub (and, for the bot on C, the
  command's relay to A and back). Next to it, in turns: a raw redis-py ``PUBLISH`` to a
  redis-py subscriber on the same Redis, timed from the call to the receipt.
- (b) Coups per second over 100 tables with zero timers (the croupier declines the shoe,
  cuts and turns on the players' behalf) and one bot per table betting each round, on
  one process, then on three (bots spread over the processes as a plain load balancer
  would, then each bot on its table's owner), all on Redis; and one process on SQLite.
  The CPU time of every process over the window (``/proc/PID/stat``): the servers,
  Redis, the bots, and the rest of the machine (``/proc/stat``).
- (c) Failover. Three processes, the default lease (3 s); a table played by a bot on
  another process. ``kill -9`` of the table's owner; the figure is the time from the
  kill to the bot's receiving the table's next event (the first with a ``seq`` above the
  last one stored when the owner died). Ten trials, each with a new process started in
  the dead one's place.
- (e) Cost per process as the cluster grows (issue 22). 1, 2, 3 and 4 processes, each
  owning the same number of tables with a paced bot at each (on the table's owner) and
  hosting as many spectators at another process's tables: each process's server CPU
  per coup of its own tables, against one process's; with ``--baseline REV`` the same
  with that revision's server (``git archive``, as bench/gateway.py's ``--baseline``),
  size by size in turns. ``--parts e --write`` writes its own section.
- (d) Connections. Spectators at one table spread evenly over three processes, against
  one process, both on Redis, holding the same clients at the same time, the events
  alternating between them (bench/gateway.py's ramp: shared accounts, 10,000 deliveries
  a second at every level); the most held with p99 fan-out under 100 ms.

Every server is ``chemmy-server`` in a subprocess (the test kit's launcher: port 0, the
listening line), every Redis a ``redis-server`` of the run's own (tests/kit/redis.py:
AOF on, ``appendfsync everysec``), every client the kit's recording ``Client``.
``--write`` puts the results in docs/benchmarks.md, section "## Cluster
(bench/cluster.py)" (every other section is kept).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import math
import multiprocessing as mp
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aioredis

from bench import gateway
from bench._util import cpu_seconds, machine, percentile, raise_nofile, write_benchmarks
from server.process.auth import make_token
from tests.kit import cluster as kit_cluster
from tests.kit.client import Client, http_get
from tests.kit.game import Game
from tests.kit.launch import ServerProcess
from tests.kit.redis import RedisServer, redis_available
from tests.kit.tables import server_toml

COMMAND = "python -m bench.cluster"
SECTION = "## Cluster (bench/cluster.py)"
SECRET = gateway.SECRET
X = "\N{MULTIPLICATION SIGN}"
#: The croupier does every timed step at once: declines the shoe, cuts, closes betting
#: once a bet is in, turns the cards. The grace of a disconnected seat stays long.
ZERO_TIMERS = {
    "betting": 0,
    "squeeze": 0,
    "third_card": 0,
    "shoe_offer": 0,
    "cut": 0,
    "grace": 3600,
}
HOUR_TIMERS = {k: 3600 for k in ZERO_TIMERS}
SETTINGS: dict[str, Any] = {
    "jwt_secret": SECRET,
    "rate_limit": 1_000_000.0,
    "rate_burst": 1_000_000,
    "max_connections_per_player": 0,
    "max_connections_per_address": 0,
    "hello_rate_limit": 0.0,
    "queue_size": 8192,
    "log_level": "warning",
}
#: Hellos and joins in flight per client process in (d). A Redis store's connection
#: pool (redis-py's default, 100 connections, not blocking) refuses a store call beyond
#: that many at once ("Too many connections"), and a refused hello is a client lost; so
#: the 4 client processes open at most 64 at a time (see the notes).
CONNECT_CONCURRENCY = 16
RUN = 20  # samples of one kind in a row before the next kind's turn
BOT_WORKERS = 2


def config(tables: Sequence[str], timers: dict[str, int]) -> str:
    """A ``chemmy-server`` TOML file: the bench settings and ``tables`` (tier 1-100)."""
    defs = [{"id": t, "name": f"Bench {t}", "tier": "1-100", "timers": timers} for t in tables]
    return server_toml(defs, **SETTINGS)


def table_ids(count: int) -> list[str]:
    return [f"t{i:03d}" for i in range(count)]


def lease_key(table: str) -> str:
    return f"chemmy:{{{table}}}:lease"


# ====================================================================== a cluster
class Cluster(kit_cluster.Cluster):
    """``chemmy-server`` processes over one Redis of their own (or one on SQLite): the
    test kit's :class:`tests.kit.cluster.Cluster`, with the server's default lease,
    text logs, and a Redis started (and stopped) here."""

    def __init__(self, home: Path, config_text: str, *, redis_store: bool = True) -> None:
        self.redis_server: RedisServer | None = None
        if redis_store:
            self.redis_server = RedisServer(home / "redis")
            self.redis_server.start()
        port = self.redis_server.port if self.redis_server is not None else 0
        super().__init__(
            home, port, [], config=config_text, lease=None, args=["--log-format", "text"]
        )

    def server_args(self) -> list[str]:
        """On SQLite, no ``--store``: each process its own database."""
        return super().server_args() if self.redis_server is not None else list(self.args)

    @property
    def live(self) -> list[ServerProcess]:
        return [n for n in self.nodes if n.running]

    def pids(self) -> list[int]:
        """The live servers', then Redis's process ids."""
        out = [n.pid for n in self.live]
        if self.redis_server is not None and self.redis_server.process is not None:
            out.append(self.redis_server.process.pid)
        return out

    def named(self) -> dict[str, ServerProcess]:
        """The live processes by their bus name (``host-pid-random``)."""
        pids = {str(n.pid): n for n in self.live}
        out: dict[str, ServerProcess] = {}
        for name in self.redis.zrange("chemmy:nodes", 0, -1):
            node = pids.get(str(name).split("-")[-2])
            if node is not None:
                out[str(name)] = node
        return out

    def leases(self, tables: Sequence[str]) -> dict[str, str | None]:
        found = self.redis.mget([lease_key(t) for t in tables])
        return {t: (str(v) if v is not None else None) for t, v in zip(tables, found, strict=True)}

    def owner_of(self, table: str) -> ServerProcess:
        owner = self.leases([table])[table]
        names = self.named()
        assert owner is not None and owner in names, (table, owner, list(names))
        return names[owner]

    async def placed(self, tables: Sequence[str], timeout: float = 60.0) -> dict[str, str]:
        """Wait until every live process is a member and every table is owned by one,
        each owning its fair share at most; the owners."""
        limit = math.ceil(len(tables) / max(1, len(self.live)))
        deadline = time.monotonic() + timeout
        while True:
            names = self.named()
            owners = self.leases(tables)
            counts = collections.Counter(owners.values())
            if (
                len(names) == len(self.live)
                and all(o in names for o in owners.values())
                and max(counts.values()) <= limit
            ):
                return {t: str(o) for t, o in owners.items()}
            if time.monotonic() > deadline:
                raise AssertionError(f"tables not placed: {dict(counts)} over {list(names)}")
            await asyncio.sleep(0.1)

    def stop(self) -> None:
        """Kill every process (no drain: a benchmark's end), then stop Redis."""
        for node in self.nodes:
            node.kill()
        self.redis.close()
        if self.redis_server is not None:
            self.redis_server.stop()


async def player(url: str, pid: str, *, tap: Callable[[str | bytes], bool] | None = None) -> Client:
    """A token player connected to ``url`` who said hello."""
    client = Client(url, label=pid, timeout=30, tap=tap)
    await client.open()
    await client.hello(token=make_token(SECRET, pid, ttl=24 * 3600))
    return client


async def guest(url: str, tap: Callable[[str | bytes], bool]) -> Client:
    client = Client(url, label="guest", timeout=30, tap=tap)
    await client.open()
    await client.hello(guest=True)
    return client


def stats_ms(samples: Sequence[float]) -> dict[str, float]:
    return {
        "p50": percentile(samples, 50) * 1e3,
        "p99": percentile(samples, 99) * 1e3,
        "n": len(samples),
    }


# ====================================================================== (a) latency
class Arrivals:
    """A tap that times each event frame of a spectator (perf_counter at receipt) by seq,
    and wakes whoever waits for a seq."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self.waiting: dict[int, asyncio.Future[float]] = {}

    def __call__(self, frame: str | bytes) -> bool:
        seq = gateway._seq_of(frame)
        if seq is None:
            return False
        now = time.perf_counter()
        self.at[seq] = now
        fut = self.waiting.pop(seq, None)
        if fut is not None and not fut.done():
            fut.set_result(now)
        return True

    async def wait(self, seq: int, timeout: float = 10.0) -> float:
        if seq in self.at:
            return self.at[seq]
        fut = asyncio.get_running_loop().create_future()
        self.waiting[seq] = fut
        async with asyncio.timeout(timeout):
            return await fut


async def latency(tmp: Path, samples: int) -> dict[str, Any]:
    """(a): see the module docstring. ``samples`` commands per bot, and as many raw
    publishes."""
    table = "lat"
    cluster = Cluster(tmp / "latency", config([table], HOUR_TIMERS))
    clients: list[Client] = []
    try:
        for _ in range(3):
            cluster.add()
        await cluster.placed([table])
        a = cluster.owner_of(table)
        b, c = [n for n in cluster.live if n is not a]
        nodes = {"A": a, "B": b, "C": c}
        bots = {"A": await player(a.url, "bot-a"), "C": await player(c.url, "bot-c")}
        clients += bots.values()
        for seat, bot in enumerate(bots.values(), 1):
            await bot.join(table)
            await bot.call("sit", table=table, seat=seat)
        await Game(table, {"bot-a": bots["A"], "bot-c": bots["C"]}, bots["A"]).to_betting()
        taps = {name: Arrivals() for name in nodes}
        for name, node in nodes.items():
            watcher = await guest(node.url, taps[name])
            clients.append(watcher)
            await watcher.join(table)

        flips = {"A": 0, "C": 0}

        async def command(by: str) -> dict[str, float]:
            """One command by the bot on ``by``: seconds to each spectator, by process."""
            bot = bots[by]
            flips[by] += 1
            t0 = time.perf_counter()
            if flips[by] % 2:
                mid, at = await bot.send_command("bet", table=table, area="player", amount=100)
            else:
                mid, at = await bot.send_command("remove_bet", table=table, area="player")
            # (from the frame the reply comes after: scanning every frame kept so far
            # would take the bench's loop longer than the round trip it times)
            reply = await bot.wait_frame(lambda m: m.get("id") == mid, start=at, what="reply")
            if reply.get("type") != "ok":
                raise RuntimeError(f"bot on {by}: {reply}")
            seq = int(reply["seq"])
            return {name: await tap.wait(seq) - t0 for name, tap in taps.items()}

        pub = aioredis.Redis(host="127.0.0.1", port=cluster.redis_server.port)  # type: ignore[union-attr]
        sub_client = aioredis.Redis(host="127.0.0.1", port=cluster.redis_server.port)  # type: ignore[union-attr]
        pubsub = sub_client.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe("bench:pubsub")
        received: dict[int, asyncio.Future[float]] = {}

        async def listen() -> None:
            async for message in pubsub.listen():
                now = time.perf_counter()
                fut = received.pop(int(message["data"]), None)
                if fut is not None and not fut.done():
                    fut.set_result(now)

        listener = asyncio.create_task(listen())
        counter = {"n": 0}

        async def publish() -> float:
            counter["n"] += 1
            n = counter["n"]
            fut = asyncio.get_running_loop().create_future()
            received[n] = fut
            t0 = time.perf_counter()
            await pub.publish("bench:pubsub", str(n))
            async with asyncio.timeout(10):
                return await fut - t0

        out: dict[str, list[float]] = collections.defaultdict(list)

        async def turn(count: int, keep: bool) -> None:
            for by in ("A", "C"):
                for _ in range(count):
                    got = await command(by)
                    if keep:
                        for at, seconds in got.items():
                            out[f"{by}->{at}"].append(seconds)
            for _ in range(count):
                seconds = await publish()
                if keep:
                    out["pubsub"].append(seconds)

        await turn(100, keep=False)  # warm up
        for _ in range(max(1, samples // RUN)):
            await turn(RUN, keep=True)
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await pubsub.aclose()
        await pub.aclose()
        await sub_client.aclose()
        return {key: stats_ms(values) for key, values in out.items()}
    finally:
        for client in clients:
            await client.close()
        cluster.stop()


# ====================================================================== bots
class Bot:
    """One seated player who bets 100 on Player each time betting opens, and counts the
    coups settled. Event frames are taken by a tap (looked at, not decoded); replies go
    on to the client. A bet refused for want of an owner (``unavailable``, a timeout)
    is tried again."""

    def __init__(self, url: str, pid: str, table: str, pause: float = 0.0) -> None:
        self.pid, self.table = pid, table
        self.pause = pause  # seconds from betting opened to the bet (a pace per table)
        self.client = Client(url, label=pid, timeout=30, tap=self._tap)
        self.opened = asyncio.Event()
        self.go = asyncio.Event()  # bets only once this is set (all bots seated)
        self.settled = 0
        self.bets = 0
        self.errors: collections.Counter[str] = collections.Counter()
        self.seqs: list[tuple[int, float]] = []  # (seq, perf_counter) while recording
        self.recording = False
        self.probe = False  # the first bet after sitting: betting may not be open yet
        self.task: asyncio.Task[None] | None = None

    def _tap(self, frame: str | bytes) -> bool:
        seq = gateway._seq_of(frame)
        if seq is None:
            return False
        text = frame if isinstance(frame, str) else frame.decode()
        head = text[:120]
        if '"kind":"betting_opened"' in head:
            self.opened.set()
        elif '"kind":"settled"' in head:
            self.settled += 1
        if self.recording:
            self.seqs.append((seq, time.perf_counter()))
        return True

    async def start(self, go: bool = True) -> None:
        """Connect, join and sit; bet from now on, or (``go=False``) once :attr:`go` is
        set."""
        if go:
            self.go.set()
        await self.client.open()
        await self.client.hello(token=make_token(SECRET, self.pid, ttl=24 * 3600))
        await self.client.join(self.table)
        reply = await self.client.rpc("sit", table=self.table)
        if reply["type"] != "ok" and reply.get("code") != "already_seated":
            raise RuntimeError(f"{self.pid}: sit: {reply}")
        self.probe = True  # betting may be open already (refused with wrong_phase if not)
        self.opened.set()
        self.task = asyncio.create_task(self.run(), name=f"bot-{self.pid}")

    async def run(self) -> None:
        await self.go.wait()
        while True:
            await self.opened.wait()
            self.opened.clear()
            if self.pause:
                await asyncio.sleep(self.pause)
            probe, self.probe = self.probe, False
            for _attempt in range(200):
                try:
                    reply = await self.client.rpc(
                        "bet", table=self.table, area="player", amount=100, timeout=15
                    )
                except AssertionError:  # no reply in time
                    self.errors["no reply"] += 1
                    continue
                except ConnectionError:
                    self.errors["closed"] += 1
                    return
                if reply["type"] == "ok":
                    self.bets += 1
                    break
                code = str(reply.get("code"))
                if not (probe and code == "wrong_phase"):
                    self.errors[code] += 1
                if code in ("wrong_phase", "over_max", "insufficient_funds", "not_seated"):
                    break  # no betting round to bet in (the next one wakes us)
                await asyncio.sleep(0.05)
            # The client keeps every reply: a load generator forgets them.
            self.client.frames.clear()

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        await self.client.close()


def bot_worker_main(pipe: Connection) -> None:
    raise_nofile()
    asyncio.run(_bot_worker(pipe))


async def _bot_worker(pipe: Connection) -> None:
    """A process of bots: ``start`` [(url, player, table)...], ``count``, ``stop``."""
    loop = asyncio.get_running_loop()
    bots: list[Bot] = []
    while True:
        command, *args = await loop.run_in_executor(None, pipe.recv)
        if command == "start":
            gate = asyncio.Semaphore(16)
            failed: list[str] = []

            async def one(
                url: str, pid: str, table: str, pause: float = 0.0, gate: asyncio.Semaphore = gate
            ) -> None:
                async with gate:
                    bot = Bot(url, pid, table, pause)
                    try:
                        await bot.start(go=False)
                        bots.append(bot)
                    except Exception as exc:  # reported, not fatal
                        failed.append(f"{type(exc).__name__}: {exc}"[:200])  # noqa: B023

            await asyncio.gather(*(one(*spec) for spec in args[0]))
            pipe.send(("started", len(bots), failed[:3]))
        elif command == "go":
            for bot in bots:
                bot.go.set()
            pipe.send(("going",))
        elif command == "count":
            errors: collections.Counter[str] = collections.Counter()
            for bot in bots:
                errors.update(bot.errors)
            pipe.send(("count", sum(b.settled for b in bots), sum(b.bets for b in bots), errors))
        elif command == "stop":
            await asyncio.gather(*(b.close() for b in bots), return_exceptions=True)
            bots.clear()
            pipe.send(("stopped",))
        elif command == "exit":
            pipe.send(("bye",))
            return


class BotWorkers:
    """A few bot processes; bots are spread evenly across them."""

    def __init__(self, count: int) -> None:
        ctx = mp.get_context("spawn")
        self.pipes: list[Connection] = []
        self.procs: list[Any] = []
        for _ in range(count):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=bot_worker_main, args=(child,), daemon=True)
            proc.start()
            self.pipes.append(parent)
            self.procs.append(proc)

    @property
    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.procs]

    async def _ask(self, pipe: Connection, message: tuple[Any, ...]) -> Any:
        pipe.send(message)
        return await asyncio.get_running_loop().run_in_executor(None, pipe.recv)

    async def start(self, specs: Sequence[tuple[Any, ...]]) -> tuple[int, list[str]]:
        n = len(self.pipes)
        replies = await asyncio.gather(
            *(self._ask(p, ("start", specs[i::n])) for i, p in enumerate(self.pipes))
        )
        return sum(r[1] for r in replies), [e for r in replies for e in r[2]]

    async def go(self) -> None:
        await asyncio.gather(*(self._ask(p, ("go",)) for p in self.pipes))

    async def count(self) -> tuple[int, int, collections.Counter[str]]:
        replies = await asyncio.gather(*(self._ask(p, ("count",)) for p in self.pipes))
        errors: collections.Counter[str] = collections.Counter()
        for r in replies:
            errors.update(r[3])
        return sum(r[1] for r in replies), sum(r[2] for r in replies), errors

    async def stop(self) -> None:
        await asyncio.gather(*(self._ask(p, ("stop",)) for p in self.pipes))

    async def close(self) -> None:
        await asyncio.gather(*(self._ask(p, ("exit",)) for p in self.pipes))
        for proc in self.procs:
            proc.join(10)


# ====================================================================== (b) throughput
def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])
    return (total - idle) / ticks, total / ticks


@dataclass
class Throughput:
    label: str
    processes: int
    store: str
    placement: str
    tables: int
    bots: int
    seconds: float
    coups: int
    bets: int
    errors: dict[str, int]
    cpu: dict[str, float]  # CPU seconds over the window: "servers", each "server N", ...
    per_server: list[float] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)  # the servers', summed, over the window

    @property
    def rate(self) -> float:
        return self.coups / self.seconds

    @property
    def others(self) -> float:
        """CPU seconds over the window of every process on the machine but the bench's
        (other work on a shared machine)."""
        ours = sum(self.cpu.get(k, 0.0) for k in ("servers", "Redis", "bots", "bench"))
        return max(0.0, self.cpu["machine"] - ours)

    def lag(self) -> str:
        """The bus lag over the window (events from another process), from /metrics."""
        count = self.metrics.get("chemmy_bus_lag_seconds_count", 0.0)
        if not count:
            return "—"
        mean = self.metrics.get("chemmy_bus_lag_seconds_sum", 0.0) / count
        fast = self.metrics.get('chemmy_bus_lag_seconds_bucket{le="0.1"}', 0.0) / count
        return f"mean {mean * 1e3:,.0f} ms; {fast:.0%} under 100 ms"


async def scrape(port: int) -> dict[str, float]:
    """A server's /metrics as {"name{labels}": value} (counters and histograms)."""
    _status, _headers, body = await http_get(port, "/metrics")
    out: dict[str, float] = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            try:
                out[name] = float(value)
            except ValueError:
                continue
    return out


async def scrape_all(servers: Sequence[ServerProcess]) -> dict[str, float]:
    """Every server's /metrics, summed."""
    total: collections.Counter[str] = collections.Counter()
    for found in await asyncio.gather(*(scrape(s.port) for s in servers)):
        total.update(found)
    return dict(total)


async def throughput(
    tmp: Path,
    workers: BotWorkers,
    label: str,
    tables: list[str],
    processes: int,
    *,
    redis_store: bool = True,
    sticky: bool = False,
    warmup: float = 5.0,
    window: float = 20.0,
) -> Throughput:
    """(b), one configuration: ``processes`` servers, a bot per table (spread evenly
    over the processes, or with ``sticky`` on its table's owner), ``window`` seconds
    measured after ``warmup``."""
    cluster = Cluster(
        tmp / label.replace(" ", "-"), config(tables, ZERO_TIMERS), redis_store=redis_store
    )
    try:
        for _ in range(processes):
            cluster.add()
        if redis_store:
            owners = await cluster.placed(tables)
            names = cluster.named()
        specs: list[tuple[str, str, str]] = []
        for i, table in enumerate(tables):
            if sticky:
                url = names[owners[table]].url
            else:
                url = cluster.live[i % processes].url
            specs.append((url, f"bot-{table}", table))
        started, failed = await workers.start(specs)
        if started < len(specs):
            logs = "\n".join(n.log_text(10) for n in cluster.live)
            raise RuntimeError(f"{label}: {started} of {len(specs)} bots started: {failed}\n{logs}")
        await workers.go()  # every bot seated: all tables start playing together
        await asyncio.sleep(warmup)
        servers = [n.pid for n in cluster.live]
        redis_pid = cluster.pids()[len(servers) :]
        groups = {
            "servers": servers,
            "Redis": redis_pid,
            "bots": workers.pids,
            "bench": [os.getpid()],
        }

        def cpu_now() -> dict[str, float]:
            out = {k: sum(cpu_seconds(p) for p in pids) for k, pids in groups.items()}
            for i, pid in enumerate(servers):
                out[f"server {i}"] = cpu_seconds(pid)
            out["machine"] = machine_busy()[0]
            return out

        coups0, bets0, errors0 = await workers.count()
        metrics0 = await scrape_all(cluster.live)
        cpu0, t0 = cpu_now(), time.perf_counter()
        await asyncio.sleep(window)
        coups1, bets1, errors = await workers.count()
        cpu1, t1 = cpu_now(), time.perf_counter()
        metrics1 = await scrape_all(cluster.live)
        cpu = {k: cpu1[k] - cpu0[k] for k in cpu0}
        errors.subtract(errors0)
        await workers.stop()
        return Throughput(
            label=label,
            processes=processes,
            store="Redis" if redis_store else "SQLite",
            placement="each bot on its table's owner" if sticky else "bots spread evenly",
            tables=len(tables),
            bots=started,
            seconds=t1 - t0,
            coups=coups1 - coups0,
            bets=bets1 - bets0,
            errors={k: v for k, v in errors.items() if v > 0},
            cpu=cpu,
            per_server=[cpu[f"server {i}"] for i in range(len(servers))],
            metrics={k: metrics1.get(k, 0.0) - metrics0.get(k, 0.0) for k in metrics1},
        )
    finally:
        cluster.stop()


# ====================================================================== (c) failover
@dataclass
class Trial:
    seconds: float  # kill -> the next event at the bot
    lease_left: float  # the dead owner's lease, left at the kill
    stored_seq: int
    next_seq: int


async def failover(tmp: Path, trials: int) -> list[Trial]:
    """(c): see the module docstring. Ten tables, so that placement has something to
    spread; trial ``i`` plays table ``i``."""
    tables = table_ids(max(trials, 3))
    cluster = Cluster(tmp / "failover", config(tables, ZERO_TIMERS))
    out: list[Trial] = []
    bots: list[Bot] = []
    try:
        for _ in range(3):
            cluster.add()
        assert cluster.redis is not None
        for i in range(trials):
            table = tables[i]
            await cluster.placed(tables)
            owner = cluster.owner_of(table)
            others = [n for n in cluster.live if n is not owner]
            bot = Bot(others[i % 2].url, f"bot-{table}", table)
            bots.append(bot)
            await bot.start()
            while bot.settled < 5:  # the table plays
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2 + 0.1 * i)  # kill at various points of a coup
            bot.recording = True
            lease_left = cluster.redis.pttl(lease_key(table)) / 1e3
            killed = time.perf_counter()
            owner.kill()
            await asyncio.sleep(0.2)  # whatever the owner had sent is in by now
            stored = int(cluster.redis.hget(f"chemmy:{{{table}}}:row", "seq") or 0)
            deadline = time.monotonic() + 30
            while True:
                after = [(s, t) for s, t in bot.seqs if s > stored]
                if after:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"{table}: no event after seq {stored} in 30 s")
                await asyncio.sleep(0.01)
            seq, at = after[0]
            out.append(Trial(at - killed, lease_left, stored, seq))
            print(
                f"  trial {i + 1}: {at - killed:.2f} s (lease left {lease_left:.2f} s), "
                f"seq {stored} -> {seq}",
                file=sys.stderr,
            )
            bot.recording = False
            bot.seqs.clear()
            await bot.close()  # its seat stays held (grace of an hour): the table waits
            cluster.add()  # a new process in the dead one's place
        return out
    finally:
        for bot in bots:
            await bot.close()
        cluster.stop()


# ====================================================================== (d) connections
async def connections(tmp: Path, levels: list[int], budget: float) -> list[tuple[Any, Any]]:
    """(d): one process against three, both on a Redis of their own, the ramp of
    bench/gateway.py (:func:`bench.gateway.ramp_pair`); the seated bot that triggers the
    events is on the table's owner."""
    single = Cluster(tmp / "single", gateway.SERVER_CONFIG)
    triple = Cluster(tmp / "triple", gateway.SERVER_CONFIG)
    workers = gateway.Workers(gateway.WORKERS)
    sides: list[gateway.Side] = []
    try:
        single.add()
        for _ in range(3):
            triple.add()
        for cluster in (single, triple):
            await cluster.placed([gateway.TABLE])
            owner = cluster.owner_of(gateway.TABLE)
            side = gateway.Side(list(cluster.live), [n.url for n in cluster.live])
            side.send = await gateway.bot_trigger(await gateway.seated_bot(owner.url))
            sides.append(side)
        return await gateway.ramp_pair(
            workers,
            sides[1],
            sides[0],
            "chemmy",
            levels,
            budget,
            names=("three", "one"),
            concurrency=CONNECT_CONCURRENCY,
        )
    finally:
        await workers.drop()
        await workers.close()
        single.stop()
        triple.stop()


# ====================================================================== (e) growth
#: (e): tables owned by each process, and the pause of each table's bot (seconds from
#: betting opened to its bet): the same paced load per process at every size, well
#: under what the two cores can do even at four processes.
GROWTH_TABLES, GROWTH_PAUSE = 4, 0.3
#: Where the playing processes' spectators are (``--growth-spectators``): at the next
#: process's tables (``next``), or at their own process's (``own``: every event they
#: see is delivered without Redis; only the watchers' process hears other tables).
SPECTATORS = {"at": "next"}


def growth_section() -> str:
    if SPECTATORS["at"] == "own":
        return "## Cluster growth (bench/cluster.py --parts e --growth-spectators own)"
    return GROWTH_SECTION


class CodeCluster(Cluster):
    """:class:`Cluster` whose processes run the ``server`` package in ``code`` (another
    revision's, bench.gateway's ``archive``), or this checkout's (``code`` None)."""

    def __init__(self, home: Path, config_text: str, code: Path | None) -> None:
        super().__init__(home, config_text)
        self.code = code

    def add(self) -> ServerProcess:
        if self.code is None:
            return super().add()
        n = len(self.nodes)
        node = ServerProcess(
            self.home / f"node{n}",
            self.config,
            *self.server_args(),
            env={"PYTHONPATH": str(self.code)},
        )
        node.cwd = self.code
        node.start()
        self.nodes.append(node)
        return node


@dataclass
class Growth:
    code: str  # "now", or the baseline's revision
    processes: int
    seconds: float
    coups: list[float]  # per process: its own tables' coups over the window
    cpu: list[float]  # per process: CPU seconds over the window
    foreign: list[float]  # per process: other processes' event messages decoded
    #: The process that only hosts watchers: its CPU seconds, the coups of the tables
    #: its spectators watch, the event messages it decoded.
    host: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def per_coup(self) -> list[float]:
        """Each process's server CPU per coup of its own tables (seconds)."""
        return [c / max(1.0, n) for c, n in zip(self.cpu, self.coups, strict=True)]

    def host_per_coup(self) -> float:
        """The watchers' process's server CPU per coup it fans out (seconds)."""
        return self.host[0] / max(1.0, self.host[1])


def watch_specs(
    live: Sequence[ServerProcess], host: ServerProcess, owned: dict[str, list[str]]
) -> list[Any]:
    """Process ``i``'s spectators watch every table of process ``i + 1`` (their own
    tables with one process): the same number of watchers on each, all of a table that
    another process owns as soon as there are two; and ``host``'s (it only hosts
    watchers) watch every table of the first process."""
    step = 0 if SPECTATORS["at"] == "own" else 1
    specs = [(node, owned[live[(i + step) % len(live)].url]) for i, node in enumerate(live)]
    return [*specs, (host, owned[live[0].url])]


async def growth_run(
    tmp: Path, workers: BotWorkers, processes: int, code: Path | None, label: str, window: float
) -> Growth:
    """(e), one size: ``processes`` servers owning :data:`GROWTH_TABLES` tables each, a
    paced bot per table on its owner, and as many spectators on each process, at
    another process's tables; and one more process that only hosts spectators (its
    tables, placed there like any, have no player: no events)."""
    tables = table_ids((processes + 1) * GROWTH_TABLES)
    cluster = CodeCluster(tmp / f"growth-{label}-{processes}", config(tables, ZERO_TIMERS), code)
    spectators: list[Client] = []
    try:
        for _ in range(processes + 1):
            cluster.add()
        owners = await cluster.placed(tables)
        names = cluster.named()
        *live, host = [names[o] for o in dict.fromkeys(owners[t] for t in tables)]
        owned = {n.url: [t for t in tables if names[owners[t]] is n] for n in [*live, host]}
        played = [t for t in tables if t not in owned[host.url]]
        specs = [(names[owners[t]].url, f"bot-{t}", t, GROWTH_PAUSE) for t in played]
        started, failed = await workers.start(specs)
        if started < len(specs):
            raise RuntimeError(f"growth: {started} of {len(specs)} bots started: {failed}")
        await workers.go()

        def quiet(frame: str | bytes) -> bool:
            return gateway._seq_of(frame) is not None  # events are looked at, not kept

        for node, watched in watch_specs(live, host, owned):
            for table in watched:
                spectator = await guest(node.url, quiet)
                await spectator.join(table)
                spectators.append(spectator)
        await asyncio.sleep(5.0)  # warm up
        pids = [n.pid for n in [*live, host]]
        before = [await scrape(n.port) for n in [*live, host]]
        cpu0, t0 = [cpu_seconds(p) for p in pids], time.perf_counter()
        await asyncio.sleep(window)
        cpu1, t1 = [cpu_seconds(p) for p in pids], time.perf_counter()
        after = [await scrape(n.port) for n in [*live, host]]
        await workers.stop()

        def delta(name: str) -> list[float]:
            return [a.get(name, 0.0) - b.get(name, 0.0) for a, b in zip(after, before, strict=True)]

        coups, foreign = delta("chemmy_coups_total"), delta("chemmy_bus_lag_seconds_count")
        cpu = [b - a for a, b in zip(cpu0, cpu1, strict=True)]
        return Growth(
            code=label,
            processes=processes,
            seconds=t1 - t0,
            coups=coups[:-1],
            cpu=cpu[:-1],
            foreign=foreign[:-1],
            host=(cpu[-1], coups[0], foreign[-1]),
        )
    finally:
        for spectator in spectators:
            await spectator.close()
        cluster.stop()


async def growth(
    tmp: Path, sizes: Sequence[int], baseline: str | None, window: float, rounds: int = 1
) -> list[Growth]:
    """(e): every size with this checkout's server, then (``baseline``) that revision's,
    size by size in turns, so that other load on the machine falls on both alike; all of
    it ``rounds`` times, keeping each configuration's run with the least CPU per coup
    (other work on a shared machine only ever adds)."""
    code = None
    if baseline is not None:
        code = gateway.archive(baseline, tmp / "baseline-code")
    workers = BotWorkers(BOT_WORKERS)
    best: dict[tuple[str, int], Growth] = {}
    try:
        for round_no in range(rounds):
            for processes in sizes:
                for label, where in (("now", None), (baseline, code)):
                    if label is None:
                        continue
                    print(f"(e) {processes} processes, {label} ...", file=sys.stderr)
                    home = tmp / f"round{round_no}"
                    run = await growth_run(home, workers, processes, where, label, window)
                    per = ", ".join(f"{x * 1e3:.2f}" for x in run.per_coup())
                    print(f"  CPU per coup (ms): {per}; coups {run.coups}", file=sys.stderr)
                    kept = best.get((label, processes))
                    if kept is None or _mean(run.per_coup()) < _mean(kept.per_coup()):
                        best[(label, processes)] = run
    finally:
        await workers.close()
    return list(best.values())


def growth_report(runs: list[Growth]) -> list[str]:
    lines = [
        "",
        "### (e) Cost per process as the cluster grows",
        "",
        f"The same load on every process at every size: {GROWTH_TABLES} tables owned by "
        f"each (zero timers), a bot seated at each on the table's owner that bets "
        f"{GROWTH_PAUSE:g} s after betting opens (a pace the two cores keep even with four "
        f"processes), and {GROWTH_TABLES} spectators on each process, one at each table of "
        + (
            "its own process (each event they see delivered without Redis). "
            if SPECTATORS["at"] == "own"
            else "the next process (with one process, at its own). "
        )
        + "Each process's server CPU "
        "(utime+stime, `/proc/PID/stat`) over the window ÷ the coups of its own tables "
        '(`chemmy_coups_total`); "foreign messages" are the event messages of other '
        "processes' tables it received and decoded (`chemmy_bus_lag_seconds_count`), per "
        "second. Besides them, one more process only hosts watchers: "
        f"{GROWTH_TABLES} spectators at the first process's tables (its own tables, placed "
        "there like any, have no player and make no events); its figure is its CPU per "
        "coup it fans out (the first process's coups). "
        f"Window {runs[0].seconds:.0f} s after a 5 s warm-up; each size with this "
        "revision and the baseline in turns, all of it --growth-rounds times, each "
        "configuration's run with the least mean CPU per coup kept.",
        "",
        "| server | processes (+ the watchers' one) | coups/s (all) | CPU per coup, each "
        "process | mean | relative to one process | foreign messages/s, each process | "
        "watchers' process: CPU per coup fanned out (relative) | its foreign messages/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for code in dict.fromkeys(r.code for r in runs):
        mine = [r for r in runs if r.code == code]
        one = _mean(mine[0].per_coup())
        host_one = mine[0].host_per_coup()
        for r in mine:
            each = " / ".join(f"{x * 1e3:.2f}" for x in r.per_coup())
            worst = max(r.per_coup()) / one
            foreign = " / ".join(f"{f / r.seconds:,.0f}" for f in r.foreign)
            lines.append(
                f"| {code} | {r.processes} (+1) | {sum(r.coups) / r.seconds:,.0f} | {each} ms | "
                f"{_mean(r.per_coup()) * 1e3:.2f} ms | {_mean(r.per_coup()) / one:.2f}{X} "
                f"(most {worst:.2f}{X}) | {foreign} | {r.host_per_coup() * 1e3:.2f} ms "
                f"({r.host_per_coup() / max(1e-9, host_one):.2f}{X}) | "
                f"{r.host[2] / r.seconds:,.0f} |"
            )
    return lines


def _mean(values: Sequence[float]) -> float:
    return sum(values) / max(1, len(values))


def growth_target(runs: list[Growth]) -> list[str]:
    out = []
    for code in dict.fromkeys(r.code for r in runs):
        mine = [r for r in runs if r.code == code]
        one = _mean(mine[0].per_coup())
        worst = max(max(r.per_coup()) / one for r in mine)
        host = max(r.host_per_coup() for r in mine) / max(1e-9, mine[0].host_per_coup())
        name = "this revision" if code == "now" else f"the baseline {code}"
        out.append(
            f"- Server CPU per coup on every process within 15% of one process's, "
            f"{'/'.join(str(r.processes) for r in mine)} processes ({name}): "
            f"{'**met**' if worst <= 1.15 else '**missed**'}: at most {worst:.2f}{X}; the "
            f"watchers' process: {'**met**' if host <= 1.15 else '**missed**'}, at most "
            f"{host:.2f}{X} its figure beside one process."
        )
    return out


# ====================================================================== report
def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}{X}" if b else "n/a"


def report(args: argparse.Namespace, results: dict[str, Any]) -> str:
    alone = set(getattr(args, "parts", "").split(",")) == {"e"}
    lines = [
        growth_section() if alone else SECTION,
        "",
        f"Made by `{results['command']}` on {time.strftime('%Y-%m-%d')} "
        f"({results['elapsed']:.0f} s).",
        f"Machine: {machine()}; redis-server {results['redis_version']}, redis-py "
        f"{redis.__version__}. Every server, every Redis and every client process share the "
        f"two cores. {results['load']}",
        "",
        "Servers: `chemmy-server --store redis://...` (each process a member of the "
        "cluster; the default lease, 3 s), bench settings as in bench/gateway.py (rate "
        "limits off); each configuration has a `redis-server` of its own (AOF on, "
        "`appendfsync everysec`).",
    ]
    if "latency" in results:
        lines += latency_report(results["latency"])
    if "throughput" in results:
        lines += throughput_report(results["throughput"])
    if "failover" in results:
        lines += failover_report(results["failover"])
    if "connections" in results:
        lines += connections_report(results["connections"])
    if "growth" in results:
        lines += growth_report(results["growth"])
    lines += ["", "### Against the targets", "", *targets(results)]
    return "\n".join(lines) + "\n"


LATENCY_ROWS = (
    ("A->A", "A (the owner)", "A", "baseline: no Redis on the way"),
    ("A->B", "A (the owner)", "B", "the event through Redis pub/sub"),
    ("A->C", "A (the owner)", "C", "the event through Redis pub/sub"),
    ("C->A", "C", "A (the owner)", "the command relayed through Redis"),
    ("C->C", "C", "C", "command relayed, event back through Redis"),
    ("C->B", "C", "B", "command relayed, event through Redis"),
)


def latency_report(lat: dict[str, Any]) -> list[str]:
    base = lat["A->A"]
    lines = [
        "",
        f"### (a) A command on one process, its event at a client of another ({lat['A->A']['n']:,} commands per bot)",
        "",
        "Three processes; the table's owner is A. A bot seated on A and one on C place and "
        "remove a chip in turn, sequentially; a spectator on each of A, B and C. Latency: "
        "the bot sending the command → the spectator receiving its `bets` event (one "
        "clock: every client is in the bench's process). Taken in turns of "
        f"{RUN} (bot on A, bot on C, raw publish), so that other load falls on all alike.",
        "",
        "| command sent to | event received at | path | p50 | p99 | added to the baseline p50 / p99 |",
        "|---|---|---|---|---|---|",
    ]
    for key, sent, at, path in LATENCY_ROWS:
        r = lat[key]
        added = (
            "—"
            if key == "A->A"
            else f"{r['p50'] - base['p50']:+.3f} / {r['p99'] - base['p99']:+.3f} ms"
        )
        lines.append(
            f"| {sent} | {at} | {path} | {r['p50']:.3f} ms | {r['p99']:.3f} ms | {added} |"
        )
    ps = lat["pubsub"]
    lines.append(
        f"| raw redis-py `PUBLISH` | a redis-py subscriber | one pub/sub hop, nothing else "
        f"| {ps['p50']:.3f} ms | {ps['p99']:.3f} ms | |"
    )
    return lines


def throughput_report(runs: list[Throughput]) -> list[str]:
    first = runs[0]
    base = next((r for r in runs if r.processes == 1 and r.store == "Redis"), first)
    lines = [
        "",
        f"### (b) Coups per second, {first.tables} tables, zero timers",
        "",
        f"{first.tables} tables with every timer at zero (the croupier declines the shoe, cuts "
        "and turns the cards at once, and closes betting as soon as a bet is in), one "
        "seated bot per table that bets 100 on Player each time betting opens (in "
        f"{BOT_WORKERS} client processes). Coups counted by the bots (`settled` events) "
        f"over a window of {first.seconds:.0f} s after a warm-up. CPU: each process's "
        "utime+stime over the window (`/proc/PID/stat`), in cores (CPU seconds ÷ wall "
        'seconds); "other processes" is the machine\'s busy time (`/proc/stat`) less the '
        "bench's own processes: other work on the shared machine.",
        "",
        "| configuration | coups/s | relative to one process | servers' CPU (each) | Redis CPU "
        "| bots' CPU | other processes' CPU | server CPU per coup | Redis CPU per coup | bus lag "
        "| commands relayed | bots' errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        each = " + ".join(f"{c / r.seconds:.2f}" for c in r.per_server)
        errors = ", ".join(f"{k} {v}" for k, v in sorted(r.errors.items())) or "none"
        lines.append(
            f"| {r.label} | {r.rate:,.0f} | {ratio(r.rate, base.rate)} "
            f"| {r.cpu['servers'] / r.seconds:.2f} ({each}) "
            f"| {r.cpu['Redis'] / r.seconds:.2f} | {r.cpu['bots'] / r.seconds:.2f} "
            f"| {r.others / r.seconds:.2f} (machine {r.cpu['machine'] / r.seconds:.2f} of "
            f"{os.cpu_count()}) "
            f"| {r.cpu['servers'] / max(1, r.coups) * 1e3:.2f} ms "
            f"| {r.cpu['Redis'] / max(1, r.coups) * 1e3:.2f} ms | {r.lag()} "
            f"| {r.metrics.get('chemmy_bus_relayed_commands', 0.0) / r.seconds:,.0f}/s "
            f"| {errors} |"
        )
    return lines


def limits(one: Throughput, three: Throughput) -> str:
    """What bounds three processes' coups/s against one's, from the run's own figures:
    the servers' CPU they could get, and what a coup cost each."""
    cores = os.cpu_count() or 1
    cpu_one, cpu_three = one.cpu["servers"] / one.seconds, three.cpu["servers"] / three.seconds
    cost_one = one.cpu["servers"] / max(1, one.coups)
    cost_three = three.cpu["servers"] / max(1, three.coups)
    bound = (cpu_three / cpu_one) * (cost_one / cost_three)
    return (
        f"  What limits it: the CPU. One process runs all its tables on one thread and took "
        f"{cpu_one:.2f} of a core; three took {cpu_three:.2f} cores between them, with the "
        f"machine at {three.cpu['machine'] / three.seconds:.2f} of its {cores} (Redis and "
        f"the bots have the rest), so they had {cpu_three / cpu_one:.2f}{X} one's CPU; and "
        f"a coup cost the servers {cost_three * 1e3:.2f} ms of CPU against {cost_one * 1e3:.2f} "
        f"ms (a gateway decodes the events of every table its clients watch; commands are "
        f"relayed). Together "
        f"these allow {bound:.2f}{X}, which is what was measured. 2.5{X} needs at least three "
        f"cores for the servers alone."
    )


def failover_report(trials: list[Trial]) -> list[str]:
    times = [t.seconds for t in trials]
    lines = [
        "",
        f"### (c) Failover: `kill -9` of a table's owner, {len(trials)} trials",
        "",
        "Three processes, the default lease (3 s); a table (zero timers) played by a bot "
        "connected to another process. The owner is killed at a different point of a coup "
        "in each trial; the figure is the time from the kill to the bot receiving the "
        "table's next event (the first with a `seq` above the one stored when the owner "
        'died); "lease left" is the dead owner\'s lease still to run at the kill '
        "(renewed every second, a third of it). After each trial a new process takes the dead one's place.",
        "",
        "| trial | kill → next event | lease left at the kill | after the lease ran out |",
        "|---|---|---|---|",
    ]
    for i, t in enumerate(trials, 1):
        lines.append(
            f"| {i} | {t.seconds:.2f} s | {t.lease_left:.2f} s | {t.seconds - t.lease_left:.2f} s |"
        )
    lines += [
        "",
        f"min {min(times):.2f} s, median {percentile(times, 50):.2f} s, max {max(times):.2f} s.",
    ]
    return lines


def connections_report(rows: list[tuple[Any, Any]]) -> list[str]:
    lines = [
        "",
        "### (d) Connections: spectators over three processes against one",
        "",
        "One table; its events are made by a seated bot on the table's owner placing and "
        "removing a chip. Spectators share 100 accounts (as in bench/gateway.py's ramp) and "
        "are spread evenly over the three processes; the one process holds as many. Both "
        "sides hold their clients at the same time and the events alternate between them "
        "in blocks; the pace is 10,000 deliveries/s at every level. Latency: the bot's "
        "command → each spectator receiving the event; CPU per event sums the side's server "
        "processes.",
        "",
        "| clients | three: p50 / p99 | one: p50 / p99 | three: CPU/event | one: CPU/event "
        "| three: RSS (sum) | one: RSS | p99 < 100 ms (three / one) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for three, one in rows:
        lines.append(
            f"| {three.clients:,} | {three.p50:.1f} / {three.p99:.1f} ms | {one.p50:.1f} / "
            f"{one.p99:.1f} ms | {three.cpu_per_event * 1e3:.1f} ms | "
            f"{one.cpu_per_event * 1e3:.1f} ms | {three.rss_kib / 1024:.0f} MiB | "
            f"{one.rss_kib / 1024:.0f} MiB | {'yes' if three.complete and three.p99 < 100 else 'no'}"
            f" / {'yes' if one.complete and one.p99 < 100 else 'no'} |"
        )
    best3 = max((t.clients for t, _ in rows if t.complete and t.p99 < 100), default=0)
    best1 = max((o.clients for _, o in rows if o.complete and o.p99 < 100), default=0)
    lines += [
        "",
        f"Most clients held with p99 fan-out under 100 ms: **{best3:,}** over three processes, "
        f"**{best1:,}** on one.",
    ]
    return lines


def targets(results: dict[str, Any]) -> list[str]:
    def verdict(ok: bool) -> str:
        return "**met**" if ok else "**missed**"

    out = []
    lat = results.get("latency")
    if lat:
        added = lat["A->B"]["p50"] - lat["A->A"]["p50"]
        out.append(
            f"- At most 1 ms added at p50 by another process (issue 11): {verdict(added <= 1)}: "
            f"{added:+.3f} ms (A→B {lat['A->B']['p50']:.3f} ms against A→A "
            f"{lat['A->A']['p50']:.3f} ms; a raw pub/sub hop {lat['pubsub']['p50']:.3f} ms); "
            f"with the command relayed too, {lat['C->B']['p50'] - lat['A->A']['p50']:+.3f} ms."
        )
    runs = results.get("throughput")
    if runs:
        one = next(r for r in runs if r.processes == 1 and r.store == "Redis")
        three = [r for r in runs if r.processes == 3]
        best = max(three, key=lambda r: r.rate)
        out.append(
            f"- Three processes at least 2.5{X} one: {verdict(best.rate >= 2.5 * one.rate)}: "
            + ", ".join(f"{r.rate / one.rate:.2f}{X} ({r.placement})" for r in three)
            + "."
        )
        out.append(limits(one, best))
    trials = results.get("failover")
    if trials:
        worst = max(t.seconds for t in trials)
        out.append(
            f"- Failover within the lease + 1 s (4 s): {verdict(worst <= 4)}: at most "
            f"{worst:.2f} s over {len(trials)} trials (median "
            f"{percentile([t.seconds for t in trials], 50):.2f} s)."
        )
    if results.get("growth"):
        out += growth_target(results["growth"])
    rows = results.get("connections")
    if rows:
        best3 = max((t.clients for t, _ in rows if t.complete and t.p99 < 100), default=0)
        best1 = max((o.clients for _, o in rows if o.complete and o.p99 < 100), default=0)
        out.append(
            f"- Connections over three processes against one (p99 under 100 ms): {best3:,} "
            f"against {best1:,}."
        )
    return out


# ====================================================================== main
PARTS = ("a", "b", "c", "d", "e")
#: Where a run of (e) alone is written (the full run's section keeps (a)-(d)).
GROWTH_SECTION = "## Cluster growth (bench/cluster.py --parts e)"


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    parts = set(args.parts.split(","))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="chemmy-bench-cluster-") as name:
        tmp = Path(name)
        if "a" in parts:
            print("(a) latency across processes ...", file=sys.stderr)
            results["latency"] = await latency(tmp, args.samples)
            for key, value in results["latency"].items():
                print(f"  {key}: {value}", file=sys.stderr)
        if "b" in parts:
            tables = table_ids(args.tables)
            workers = BotWorkers(BOT_WORKERS)
            runs: list[Throughput] = []
            try:
                for label, processes, store, sticky in (
                    ("one process", 1, True, False),
                    ("three processes", 3, True, False),
                    ("three processes, bots on the owner", 3, True, True),
                    ("one process, SQLite", 1, False, False),
                ):
                    print(f"(b) {label} ...", file=sys.stderr)
                    run = await throughput(
                        tmp,
                        workers,
                        label,
                        tables,
                        processes,
                        redis_store=store,
                        sticky=sticky,
                        window=args.window,
                    )
                    print(
                        f"  {run.rate:.0f} coups/s; CPU "
                        f"{ {k: round(v / run.seconds, 2) for k, v in run.cpu.items()} }; "
                        f"errors {run.errors}",
                        file=sys.stderr,
                    )
                    runs.append(run)
            finally:
                await workers.close()
            results["throughput"] = runs
        if "c" in parts:
            print(f"(c) failover, {args.trials} trials ...", file=sys.stderr)
            results["failover"] = await failover(tmp, args.trials)
        if "d" in parts:
            levels = [int(x) for x in args.ramp.split(",") if x]
            print(f"(d) connections, ramp {levels} ...", file=sys.stderr)
            results["connections"] = await connections(tmp, levels, args.budget)
        if "e" in parts:
            sizes = [int(x) for x in args.sizes.split(",") if x]
            results["growth"] = await growth(
                tmp, sizes, args.baseline, args.growth_window, args.growth_rounds
            )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2000, help="(a) commands per bot")
    parser.add_argument("--tables", type=int, default=100, help="(b) tables (default 100)")
    parser.add_argument("--window", type=float, default=20.0, help="(b) seconds measured")
    parser.add_argument("--trials", type=int, default=10, help="(c) kills (default 10)")
    parser.add_argument("--ramp", default="500,1000,2000,3000,4000", help="(d) levels")
    parser.add_argument("--budget", type=float, default=240.0, help="(d) seconds at most")
    parser.add_argument("--sizes", default="1,2,3,4", help="(e) processes, each size")
    parser.add_argument(
        "--growth-spectators",
        choices=("next", "own"),
        default="next",
        help="(e) the spectators at the next process's tables, or at their own's",
    )
    parser.add_argument("--growth-window", type=float, default=15.0, help="(e) seconds measured")
    parser.add_argument(
        "--growth-rounds", type=int, default=1, help="(e) each configuration this often (best)"
    )
    parser.add_argument(
        "--baseline", default=None, help="(e) also the server of this git revision, in turns"
    )
    parser.add_argument("--parts", default=",".join(PARTS), help="which of a,b,c,d,e to run")
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args(argv)
    SPECTATORS["at"] = args.growth_spectators
    if not redis_available():
        sys.exit("redis-server is not installed (scripts/test installs it)")
    raise_nofile()
    t0 = time.perf_counter()
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    results = asyncio.run(main_async(args))
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    results["elapsed"] = time.perf_counter() - t0
    words = argv if argv is not None else sys.argv[1:]
    results["command"] = " ".join([COMMAND, shlex.join(words)]).strip()
    results["redis_version"] = redis_version()
    results["load"] = (
        f"The load average (1, 5, 15 min) was {' '.join(load_before)} when the run started "
        f"and {' '.join(load_after)} at its end."
    )
    text = report(args, results)
    print(text)
    if args.write:
        alone = set(args.parts.split(",")) == {"e"}
        write_benchmarks(growth_section() if alone else SECTION, text)
    return 0


def redis_version() -> str:
    import subprocess

    out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    for word in out.split():
        if word.startswith("v="):
            return word[2:]
    return out.strip()


__all__ = ["Bot", "Cluster", "main"]

if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
