"""The croupier: the tables this process runs, each as a :class:`TableActor`.

It makes sure the configured tables exist in the store, starts one actor per table it
owns and serves their commands on the bus; it creates and closes tables for operators,
drains at shutdown, and keeps the lobby: each table's summary line after its last step.

Alone (the default), a process owns every table. In a cluster (a Redis store) it owns
the tables placed on it, by lease (``server.croupier.cluster``): it takes a table as a
restarted process would (``from_state``, a catch-up ``Tick``), hands it over at a step
boundary when placement moves it or the process drains, and stops writing at once when
its lease is lost.

It never decides a rule and never touches a connection: commands come in as records
from the bus, and everything goes out through the bus.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from server.bus.base import Bus
from server.protocol.errors import Refused, StoreUnavailable
from server.store.base import Store, TableRow
from server.table import Table, TableOptions, views
from server.vocabulary import commands as c
from server.vocabulary.events import Event
from server.wallet.base import Wallet

from .actor import BeforeDebits, TableActor, changes_line
from .cluster import Leases, Rebalancer
from .settings import ActorHooks, ActorSettings
from .wallet import TableWallet

__all__ = ["Croupier"]

log = logging.getLogger("chemmy.croupier")

StepHook = Callable[[TableActor, c.Command, list[Event]], None]

#: How long the list of open tables is trusted before placement reads it again.
TABLE_LIST_FRESH = 2.0
#: How long stopping waits for a background loop before leaving it behind.
STOP_WAIT = 3.0


class Croupier:
    """Every table actor of this process."""

    def __init__(
        self,
        store: Store,
        bus: Bus,
        *,
        grace: float,
        queue_size: int = 256,
        on_step: StepHook | None = None,
        on_tables: Callable[[int], None] | None = None,
        on_failing: Callable[[int], None] | None = None,
        cluster: Leases | None = None,
        money: Wallet | None = None,
        wallet_timeout: float = 3.0,
    ) -> None:
        self.store = store
        #: Where the players' money lives (docs/wallet.md), for every table here.
        self.money = money
        self.wallet_timeout = wallet_timeout
        #: Called with the wallet calls a table stored, to deliver (the courier's wake).
        self.on_calls: Callable[[list[dict[str, Any]]], None] | None = None
        #: Delivers players' unanswered credits and rollbacks before their debits, until
        #: a deadline: for each player who has one, whether all were answered in time
        #: (the courier's deliver_first).
        self.before_debits: BeforeDebits | None = None
        #: Hears each coup's debits: their time and outcomes (for /metrics).
        self.on_debits: Callable[[float, list[str]], None] | None = None
        self.bus = bus
        self.grace = grace
        self.queue_size = queue_size
        self.on_step = on_step
        self.on_tables = on_tables
        self.on_failing = on_failing
        self.actors: dict[str, TableActor] = {}
        self.draining = False
        #: Tables whose store writes are failing now (the process is not ready).
        self.failing: set[str] = set()
        self.cluster = cluster
        self.rebalancer: Rebalancer | None = None
        self._task: asyncio.Task[None] | None = None
        self._summaries: dict[str, dict[str, Any]] = {}  # the lobby lines last shared
        self._define_lock = asyncio.Lock()  # one table definition at a time (one process)
        self._table_ids: tuple[float, list[str]] = (-1e9, [])
        self._jobs: set[asyncio.Task[None]] = set()

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self, definitions: tuple[dict[str, Any], ...]) -> None:
        """Add the configured tables the store does not have yet, then start the tables
        this process owns: all of them alone, the ones placed here in a cluster."""
        async with self._defining():  # processes starting together define them once
            rows = {row.table_id: row for row in await self.store.load_tables()}
            for definition in definitions:
                tid = str(definition["id"])
                if tid not in rows:
                    epoch = await self.store.claim_table(tid)
                    seq = await self.store.table_seq(tid)  # a closed table's, if any
                    rows[tid] = TableRow(tid, dict(definition), None, seq, False, epoch)
                    await self.store.save_table(rows[tid])
        if self.cluster is None:
            for row in rows.values():
                await self._start_table(row)
            return
        self.bus_control()
        self.rebalancer = Rebalancer(
            self.cluster,
            tables=self._open_tables,
            owned=lambda: set(self.actors),
            own=self._own,
            disown=self._disown,
        )
        self.rebalancer.on_members = self._members_left
        if self.cluster.watching is not None:
            # By players, a table handed over: the others look at once, with what this
            # process sees now (the one whose watchers it follows may not have read them).
            self.rebalancer.on_released = self._released
        await self.rebalancer.step()  # take what is placed here before serving anyone
        # The others, at rest, would find this member only at their next renewal (a third
        # of a lease): told, they hand over its share at once (issue 36).
        self._tell({"kind": "joined", "node": self.bus.node})
        self._task = asyncio.create_task(self.rebalancer.run(), name="rebalancer")

    def bus_control(self) -> None:
        """Hear the cluster's notices (a Redis bus has them; one process needs none)."""
        self.bus.on_control(self._notice)

    def _notice(self, notice: dict[str, Any]) -> None:
        kind = notice.get("kind")
        if kind == "owner" and self.cluster is not None:
            self.cluster.heard_owner(str(notice.get("table")), notice.get("node"))
        if kind == "released" and self.cluster is not None:
            self.cluster.heard_released(str(notice.get("table")), str(notice.get("node")))
        if kind in ("tables", "closed", "owner", "released", "reconnected", "leaving", "joined"):
            self._table_ids = (-1e9, self._table_ids[1])
            if self.rebalancer is not None:
                self.rebalancer.poke()
        if self.on_notice is not None:
            self.on_notice(notice)

    on_notice: Callable[[dict[str, Any]], None] | None = None

    def _released(self, table: str) -> None:
        self._tell({"kind": "released", "table": table, "node": self.bus.node})

    def _tell(self, notice: dict[str, Any]) -> None:
        self.bus.control(notice)

    def _members_left(self, alive: set[str]) -> None:
        """Processes left the cluster: their clients are gone from the tables here."""
        for actor in self.actors.values():
            actor.gateways_gone(alive)

    def _debits_answered(self, seconds: float, outcomes: list[str]) -> None:
        if self.on_debits is not None:
            self.on_debits(seconds, outcomes)

    def _calls_stored(self, calls: list[dict[str, Any]]) -> None:
        if self.on_calls is not None:
            self.on_calls(calls)

    async def _before_debits(
        self, players: list[str], deadline: float
    ) -> dict[str, Awaitable[bool]]:
        if self.before_debits is None:
            return {}
        return dict(await self.before_debits(players, deadline))

    def serves_calls(self, table_id: str) -> bool:
        """Whether this process delivers ``table_id``'s wallet calls: it owns the table,
        or no process does (closed; or, in a cluster, not listed yet: a call delivered
        twice is applied once)."""
        return table_id in self.actors or table_id not in self._table_ids[1]

    async def _open_tables(self) -> list[str]:
        """The open tables' ids (cached for a moment; notices refresh them)."""
        read, ids = self._table_ids
        if time.monotonic() - read > TABLE_LIST_FRESH:
            ids = await self.store.table_ids()  # (no row read: issue 36)
            self._table_ids = (time.monotonic(), ids)
        return ids

    async def _own(self, table_id: str) -> None:
        """This process took ``table_id``'s lease: claim its next epoch and start it from
        its stored row, as after a crash. The epoch is claimed *before* the row is read:
        from then on the store refuses the old owner's writes (it may only have been
        paused), so the row read is the last one it will ever hold."""
        epoch = await self.store.claim_table(table_id)
        row = await self.store.load_table(table_id)
        if row is None:
            raise LookupError(f"table {table_id!r} is not open")
        actor = await self._start_table(row, epoch)
        if self.cluster is not None:
            # Listed before this process serves anyone (start awaits the first rebalance):
            # a table taken here is never "no_table" to a player who saw it in the lobby.
            # If Redis refuses it now, the next step's line is shared (_shared) as ever.
            summary = actor.summary()
            with contextlib.suppress(Exception):
                await self.cluster.put_summary(table_id, summary)
                self._summaries[table_id] = summary
        self._tell({"kind": "owner", "table": table_id, "node": self.bus.node})
        log.info("table %s: owned here", table_id, extra={"table": table_id})

    async def _disown(self, table_id: str, why: str) -> None:
        """Stop running ``table_id`` here (after the step in progress, which is stored)."""
        actor = self.actors.pop(table_id, None)
        self.bus.unserve(table_id)
        self._summaries.pop(table_id, None)
        self.failing.discard(table_id)
        self._count()
        if actor is not None:
            if why == "placed elsewhere":
                await actor.stop()
            else:  # the lease is gone: not one more write
                actor.abandon()
            log.info(
                "table %s: no longer owned here (%s)", table_id, why, extra={"table": table_id}
            )

    async def _start_table(self, row: TableRow, epoch: int | None = None) -> TableActor:
        """Start ``row``'s actor as its owner: with the epoch claimed for it (a new one
        unless given), which every write of the actor carries."""
        config = dict(row.config)
        timers = dict(config.get("timers") or {})
        timers.setdefault("grace", self.grace)
        config["timers"] = timers
        options = TableOptions.from_dict({k: v for k, v in config.items() if k != "id"})
        wallet = TableWallet(confirms_holds=self.money is not None and self.money.confirms_holds)
        if row.state is not None:  # (with its bettors without a seat: their parts)
            table = Table.from_state(row.state, wallet, row.parts or {})
        else:
            # A table id used before (closed, then created again) goes on numbering its
            # shoes, so round ids, ledger keys and shoe records are never reused, and
            # its events (the row's seq is the closed table's last).
            last = await self.store.shoe_records(row.table_id, limit=1)
            shoes_before = int(last[0]["shoe_no"]) if last else 0
            table = Table(
                row.table_id, options, wallet, shoes_before=shoes_before, seq_before=row.seq
            )
        if epoch is None:
            epoch = await self.store.claim_table(row.table_id)
        actor = TableActor(
            table,
            store=self.store,
            bus=self.bus,
            settings=ActorSettings(
                config=config,
                epoch=epoch,
                # Restored after a stop or a crash: nobody is connected yet. The table
                # decides (Restored): seats held for the grace period (§5), spectators gone.
                restored=row.state is not None,
                parts=row.parts,
                queue_size=self.queue_size,
                money=self.money,
                wallet_timeout=self.wallet_timeout,
            ),
            hooks=ActorHooks(
                on_step=self._shared,
                on_closed=self._closed,
                on_store=self._store_state,
                on_lost=self._lost,
                on_calls=self._calls_stored,
                before_debits=self._before_debits,
                on_debits=self._debits_answered,
            ),
        )
        await actor.load()
        # Whatever the last owner stored but this process's clients have not seen (it
        # died between storing a step and publishing it) reaches them first, so the
        # events this actor publishes follow without a gap.
        await self.bus.catch_up(row.table_id)
        self.actors[row.table_id] = actor
        if self.draining:
            actor.submit_command(c.SetDraining(on=True))
        actor.start()
        self.bus.serve(row.table_id, actor.submit)
        self._count()
        return actor

    def _lost(self, actor: TableActor) -> None:
        """A newer owner claimed the table: stop serving it here."""
        self.bus.unserve(actor.table_id)
        if self.actors.get(actor.table_id) is actor:
            del self.actors[actor.table_id]
        self._count()

    def _store_state(self, actor: TableActor, ok: bool) -> None:
        if ok:
            self.failing.discard(actor.table_id)
        else:
            self.failing.add(actor.table_id)
        if self.on_failing is not None:
            self.on_failing(len(self.failing))

    def _count(self) -> None:
        if self.on_tables is not None:
            self.on_tables(len(self.actors))

    async def drain(self, timeout: float) -> None:
        """Alone: no new bets anywhere; wait (at most ``timeout``) until no coup is being
        dealt. In a cluster: hand every table over now (each step is stored, so the next
        owner carries on from it) and take no more."""
        self.draining = True
        if self.rebalancer is not None:
            self.rebalancer.draining = True
            leaving = {"kind": "leaving", "node": self.bus.node}
            try:
                # Told as soon as the draining mark is written (the others, at rest, would
                # look only at their next renewal: issue 36): they place its tables and
                # look every lease/6 until they hold them; told again once all are
                # released, so the last are taken at once too.
                await self.rebalancer.step(ticked=lambda: self._tell(leaving))
            except StoreUnavailable as exc:  # SIGTERM while Redis is away (§7; Leases translate)
                log.warning(  # (docs/operations.md §7)
                    "draining without Redis (%s): the tables are not handed over; their "
                    "leases expire and other processes take them",
                    exc,
                )
            self._tell(leaving)
            return
        for actor in self.actors.values():
            with contextlib.suppress(Refused):  # the table refuses new bets (draining)
                actor.submit_command(c.SetDraining(on=True))
        end = time.monotonic() + timeout
        while time.monotonic() < end and any(a.in_coup for a in self.actors.values()):
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        if self._task is not None:
            assert self.rebalancer is not None
            self.rebalancer.stopping = True
            self._task.cancel()
            # A cancellation swallowed inside a Redis call must not hang the shutdown.
            await asyncio.wait({self._task}, timeout=STOP_WAIT)
        for tid, actor in list(self.actors.items()):
            self.bus.unserve(tid)
            await actor.stop()
            if self.cluster is not None:
                await self.cluster.release(tid)
        if self.cluster is not None:
            await self.cluster.leave()
            self._tell({"kind": "leaving", "node": self.bus.node})
            await self.cluster.close()

    # -- the lobby and operators -------------------------------------------------------
    def lobby(self) -> list[dict[str, Any]]:
        return [actor.summary() for actor in self.actors.values()]

    def has(self, table_id: str) -> bool:
        return table_id in self.actors

    async def create_table(self, table_id: str, options: TableOptions) -> dict[str, Any]:
        """Save a new table, then start it (alone) or let placement start it (cluster);
        its lobby line."""
        exists = Refused("table_exists", f"there is already a table {table_id!r}")
        if table_id in self.actors:
            raise exists
        # One definition at a time, cluster-wide: two creates of one id (a closed one's,
        # say) each claimed an epoch and the older one's save failed as stale.
        async with self._defining():
            if table_id in await self.store.table_ids():
                raise exists
            # Only checked, known settings are kept: nothing the operator sent goes to
            # the store as it came.
            epoch = await self.store.claim_table(table_id)
            seq = await self.store.table_seq(table_id)  # a closed table's of this id
            definition = {"id": table_id, **options.to_definition()}
            row = TableRow(table_id, definition, None, seq, False, epoch)
            await self.store.save_table(row)
            if self.cluster is not None:
                summary = views.summary(Table(table_id, options, TableWallet()))
                await self.cluster.put_summary(table_id, summary)
                self._tell({"kind": "tables"})
                return summary
            actor = await self._start_table(row, epoch)
            return actor.summary()

    def _defining(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The lock under which tables are defined: the cluster's, or this process's."""
        if self.cluster is not None:
            return self.cluster.lock("define-tables")
        return self._define_lock

    def _closed(self, actor: TableActor) -> None:
        """A table closed (its ``close`` step is stored): it takes no more commands, and
        its id is free for a new table at once. Its actor ends by itself."""
        tid = actor.table_id
        self.bus.unserve(tid)
        if self.actors.get(tid) is actor:
            del self.actors[tid]
        self._count()
        # Every croupier's list of tables is stale (the gateways end the table by its
        # own ``closed`` event, which went out before this).
        self._tell({"kind": "closed", "table": tid})
        if self.cluster is not None:
            cluster = self.cluster
            self._summaries.pop(tid, None)

            async def gone() -> None:
                with contextlib.suppress(Exception):
                    await cluster.drop_summary(tid)
                    await cluster.release(tid)
                self._tell({"kind": "tables"})

            self._spawn(gone())

    def _spawn(self, job: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(job)
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)

    def _shared(self, actor: TableActor, cmd: c.Command, events: list[Event]) -> None:
        """After a step: the table's lobby line, shared when it changed (cluster)."""
        if self.on_step is not None:
            self.on_step(actor, cmd, events)
        if self.cluster is None or actor.closed or actor.lost:
            return
        if not changes_line(cmd, events):
            return  # (nothing stored, nobody came or went: the same line)
        summary, shared = actor.summary(), self._summaries.get(actor.table_id)
        if shared is not summary and shared != summary:  # (the same line: the same object)
            self._summaries[actor.table_id] = summary
            cluster, tid = self.cluster, actor.table_id

            async def put() -> None:
                with contextlib.suppress(Exception):
                    await cluster.put_summary(tid, summary)

            self._spawn(put())
