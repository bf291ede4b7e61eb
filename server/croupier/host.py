"""The croupier: the tables this process runs, each as a :class:`TableActor`.

It loads the tables from the store (and the configured lobby), starts one actor per
table it owns and serves their commands on the bus; it creates and closes tables for
operators, drains at shutdown (no new bets, running coups settle), and keeps the lobby:
each table's summary line after its last step.

It never decides a rule and never touches a connection: commands come in as records
from the bus, and everything goes out through the bus.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from server.bus.base import Bus
from server.protocol.errors import Refused
from server.store.base import Store, TableRow
from server.table import Table, TableOptions
from server.table import commands as c
from server.table.events import Event

from .actor import LedgerWallet, TableActor

__all__ = ["Croupier"]

log = logging.getLogger("chemmy.croupier")

StepHook = Callable[[TableActor, c.Command, list[Event]], None]


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
    ) -> None:
        self.store = store
        self.bus = bus
        self.grace = grace
        self.queue_size = queue_size
        self.on_step = on_step
        self.on_tables = on_tables
        self.on_failing = on_failing
        self.wallet = LedgerWallet()
        self.actors: dict[str, TableActor] = {}
        self.draining = False
        #: Tables whose store writes are failing now (the process is not ready).
        self.failing: set[str] = set()

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self, definitions: tuple[dict[str, Any], ...]) -> None:
        """Load every balance and every stored table, add the configured ones not stored
        yet, and start an actor for each."""
        self.wallet.load((await self.store.load_balances()).items())
        rows = {row.table_id: row for row in await self.store.load_tables()}
        for definition in definitions:
            tid = str(definition["id"])
            if tid not in rows:
                rows[tid] = TableRow(tid, dict(definition), None, 0, False)
        for row in rows.values():
            await self._start_table(row)

    async def _start_table(self, row: TableRow, epoch: int | None = None) -> TableActor:
        """Start ``row``'s actor as its owner: with the epoch claimed for it (a new one
        unless given), which every write of the actor carries."""
        config = dict(row.config)
        timers = dict(config.get("timers") or {})
        timers.setdefault("grace", self.grace)
        config["timers"] = timers
        options = TableOptions.from_dict({k: v for k, v in config.items() if k != "id"})
        if row.state is not None:
            table = Table.from_state(row.state, self.wallet)
        else:
            # A table id used before (closed, then created again) goes on numbering its
            # shoes, so round ids, ledger keys and shoe records are never reused.
            last = await self.store.shoe_records(row.table_id, limit=1)
            shoes_before = int(last[0]["shoe_no"]) if last else 0
            table = Table(row.table_id, options, self.wallet, shoes_before=shoes_before)
        if epoch is None:
            epoch = await self.store.claim_table(row.table_id)
        actor = TableActor(
            table,
            epoch=epoch,
            store=self.store,
            wallet=self.wallet,
            bus=self.bus,
            config=config,
            queue_size=self.queue_size,
            on_step=self.on_step,
            on_closed=self._closed,
            on_store=self._store_state,
            on_lost=self._lost,
        )
        self.actors[row.table_id] = actor
        if row.state is not None:
            # Restored after a stop or a crash: nobody is connected yet. Seats are held
            # for the grace period (§5); spectators are gone.
            for p in list(table.players.values()):
                if p.seat is None:
                    actor.submit_command(c.Leave(player=p.id))
                elif p.connected:
                    actor.submit_command(c.Disconnect(player=p.id))
        if self.draining:
            actor.draining = True
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
        """No new bets anywhere; wait (at most ``timeout``) until no coup is being dealt."""
        self.draining = True
        for actor in self.actors.values():
            actor.draining = True
        end = time.monotonic() + timeout
        while time.monotonic() < end and any(a.in_coup for a in self.actors.values()):
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        for tid, actor in list(self.actors.items()):
            self.bus.unserve(tid)
            await actor.stop()

    # -- the lobby and operators -------------------------------------------------------
    def lobby(self) -> list[dict[str, Any]]:
        return [actor.summary() for actor in self.actors.values()]

    def has(self, table_id: str) -> bool:
        return table_id in self.actors

    async def create_table(self, table_id: str, options: TableOptions) -> dict[str, Any]:
        """Save a new table, then start it; its lobby line."""
        if table_id in self.actors:
            raise Refused("table_exists", f"there is already a table {table_id!r}")
        # Only checked, known settings are kept: nothing the operator sent goes to the
        # store as it came.
        epoch = await self.store.claim_table(table_id)
        definition = {"id": table_id, **options.to_definition()}
        row = TableRow(table_id, definition, None, 0, False, epoch)
        await self.store.save_table(row)
        actor = await self._start_table(row, epoch)
        return actor.summary()

    def _closed(self, actor: TableActor) -> None:
        """A table closed (its ``close`` step is stored): it takes no more commands, and
        its id is free for a new table at once. Its actor ends by itself."""
        self.bus.unserve(actor.table_id)
        if self.actors.get(actor.table_id) is actor:
            del self.actors[actor.table_id]
        self._count()
