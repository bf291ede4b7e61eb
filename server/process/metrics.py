"""Prometheus metrics of one server, in its own registry (several servers may share a
process in tests). Served at ``/metrics``. Never holds a player's private data."""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["COMMAND_BUCKETS", "PAUSE_BUCKETS", "SETTLED_KINDS", "LoopWatch", "Metrics"]

#: Seconds between two probes of the event loop's lag (:class:`LoopWatch`).
LAG_PROBE = 0.1
#: The kinds of ``chemmy_settled_minor_units_total`` (docs/protocol.md §15).
SETTLED_KINDS = ("staked", "returned", "commission")
#: The buckets of the loop lag and collector pause histograms, in seconds.
PAUSE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
#: The buckets of ``chemmy_command_seconds``: fine from 1 ms to 500 ms, where a table
#: command's time at the server lies (docs/operations.md §4).
COMMAND_BUCKETS = (
    0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5,
)  # fmt: skip


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.connections = Gauge("chemmy_connections", "Open WebSocket connections", registry=r)
        self.tables = Gauge("chemmy_tables", "Tables running in this process", registry=r)
        self.commands = Counter("chemmy_commands", "Client commands received", ["type"], registry=r)
        self.refused = Counter(
            "chemmy_refused", "Commands refused, by error code", ["code"], registry=r
        )
        self.coups = Counter("chemmy_coups", "Coups settled", registry=r)
        self.settled = Counter(
            "chemmy_settled_minor_units",
            "Money settled, by kind (staked, returned, commission), in minor units",
            ["kind"],
            registry=r,
        )
        for kind in SETTLED_KINDS:  # there from the start, at 0 (a rate needs a first point)
            self.settled.labels(kind=kind)
        self.fanout = Histogram(
            "chemmy_fanout_seconds",
            "Time to encode and hand one event to every watching connection",
            buckets=(0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5),
            registry=r,
        )
        self.fanout_wait = Histogram(
            "chemmy_fanout_wait_seconds",
            "Time from a step's publish to its bytes handed to a watcher's connection"
            " (one write in 8)",
            buckets=COMMAND_BUCKETS,  # (the same scale: the promises are 50 and 100 ms)
            registry=r,
        )
        self.command_time = Histogram(
            "chemmy_command_seconds",
            "Time from the gateway decoding a table command's frame to handing its reply"
            " frame to the connection (the player's line, the bus, the table's queue and"
            " step), by the command's kind",
            ["kind"],
            buckets=COMMAND_BUCKETS,
            registry=r,
        )
        self.store_failing = Gauge(
            "chemmy_store_failing_tables",
            "Tables whose last store write failed (the process reports not ready)",
            registry=r,
        )
        self.store_errors = Counter(
            "chemmy_store_errors", "Store calls that failed, by where", ["where"], registry=r
        )
        self._cluster(r)
        self.transfers = Counter(
            "chemmy_transfers",
            "Transfer API calls (docs/wallet.md §2), by kind (deposit, withdraw, balance) and"
            " status (ok, duplicate, or the refusal's)",
            ["kind", "status"],
            registry=r,
        )
        self.wallet_calls = Counter(
            "chemmy_wallet_calls",
            "Calls to the operator's seamless wallet (docs/wallet.md §3), by kind (debit,"
            " credit, rollback) and outcome (ok, retry, or the refusal's status)",
            ["kind", "outcome"],
            registry=r,
        )
        self.wallet_debits = Histogram(
            "chemmy_wallet_debit_seconds",
            "Time from betting closed to every debit of the coup answered (or timed out)",
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10),
            registry=r,
        )
        self.slow_clients = Counter(
            "chemmy_slow_clients", "Connections cut off for not keeping up", registry=r
        )
        self.loop_lag = Histogram(
            "chemmy_loop_lag_seconds",
            f"How late the event loop ran a {LAG_PROBE} s timer: what every command and"
            " event arriving then waited behind (long steps, big fan-outs, collections)",
            buckets=PAUSE_BUCKETS,
            registry=r,
        )
        self.gc_pause = Histogram(
            "chemmy_gc_pause_seconds",
            "Each run of the cyclic garbage collector in this process, by generation",
            ["generation"],
            buckets=PAUSE_BUCKETS,
            registry=r,
        )
        # The children of ``commands`` and ``command_time`` by kind, kept: ``labels`` takes
        # a lock and builds its key on every call, twice a command (issue 36, the lone bet).
        self._counted: dict[str, Any] = {}
        self._timed: dict[str, Any] = {}

    def command(self, kind: str) -> None:
        """One more client command of ``kind`` (a parsed kind: a bounded set)."""
        child = self._counted.get(kind)
        if child is None:
            child = self._counted[kind] = self.commands.labels(type=kind)
        child.inc()

    def command_took(self, kind: str, took: float) -> None:
        """A table command of ``kind`` took ``took`` seconds at the server."""
        child = self._timed.get(kind)
        if child is None:
            child = self._timed[kind] = self.command_time.labels(kind=kind)
        child.observe(took)

    def _cluster(self, r: CollectorRegistry) -> None:
        """The cluster's: the bus and the leases (zero on one process)."""
        self.bus_lag = Histogram(
            "chemmy_bus_lag_seconds",
            "From an owner publishing a step's events to this process receiving them",
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0),
            registry=r,
        )
        self.relayed = Gauge(
            "chemmy_bus_relayed_commands",
            "Commands this process relayed to a table owned by another process (total)",
            registry=r,
        )
        self.backfilled = Gauge(
            "chemmy_bus_backfilled_events",
            "Events read back from a table's stream to fill a gap (total)",
            registry=r,
        )
        self.bus_received = Gauge(
            "chemmy_bus_event_messages",
            "Event messages this process received from Redis, per table (total): a process"
            " hears a table only while it owns it or its clients watch it",
            ["table"],
            registry=r,
        )
        self.unpublished = Gauge(
            "chemmy_bus_unpublished_steps",
            "Steps of this process's tables not published on Redis (total): placing by"
            " players, no other process's clients watched the table",
            registry=r,
        )
        self.bus_listening = Gauge(
            "chemmy_bus_listening_tables",
            "Tables whose events this process is subscribed to (on Redis) now",
            registry=r,
        )
        self.lease_changes = Gauge(
            "chemmy_lease_changes",
            "Tables this process took or gave up (total)",
            registry=r,
        )


class LoopWatch:
    """The event loop's own health, for ``/metrics`` (docs/operations.md §4): a probe
    that sleeps :data:`LAG_PROBE` s and records how much later than that it woke
    (``chemmy_loop_lag_seconds``: the loop was busy with other work meanwhile, and so
    was everything that arrived), and the pause of each garbage collection
    (``chemmy_gc_pause_seconds``, from ``gc.callbacks``; the process's collections, so
    every server of a process observes them). A server starts it once it serves and
    stops it when it stops (the callback leaves ``gc.callbacks``)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._task: asyncio.Task[None] | None = None
        self._gc_started: float | None = None

    def start(self) -> None:
        gc.callbacks.append(self._on_gc)
        self._task = asyncio.create_task(self._probe(), name="loop-lag-probe")

    def stop(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._task is not None:
            self._task.cancel()

    async def _probe(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(LAG_PROBE)
            self.metrics.loop_lag.observe(max(0.0, loop.time() - asked - LAG_PROBE))

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self._gc_started is not None:
            pause = time.perf_counter() - self._gc_started
            self._gc_started = None
            self.metrics.gc_pause.labels(generation=str(info.get("generation"))).observe(pause)
