"""The croupier: one actor (task) per table, the table's single writer.

It directs play as a croupier does at a real table: takes commands from a bounded
queue one at a time, hands each to the pure :class:`~server.table.Table` with the
time, keeps the timers (a ``Tick`` when the next deadline comes), brings a freshly
shuffled shoe when the table wants one, and **stores every step before anything is
sent**: the table's state, the ledger entries and the round records go to the store in
one commit, then the events are published and the sender answered.

It never decides a rule (that is the table's) and never touches a socket (that is
``server.net``'s): it calls the ``publish`` and ``reply`` callbacks it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from server.protocol.errors import ChemmyError, Refused
from server.store.base import Store, TableRow
from server.table import Table
from server.table import commands as c
from server.table.events import Event, Step
from server.table.wallet import Entry, MemoryWallet

__all__ = ["Busy", "LedgerWallet", "Request", "TableActor"]

log = logging.getLogger("chemmy.croupier")

# (table, the step (no events when refused), error or None) -> None; runs in the actor.
Callback = Callable[[Table, Step, ChemmyError | None], None]


class Busy(Refused):
    """The table's command queue is full: refused, never dropped silently."""

    def __init__(self) -> None:
        super().__init__("busy", "the table is busy; try again")


class LedgerWallet(MemoryWallet):
    """The process's one wallet: balances in memory, entries queued for the store.

    Every actor drains the queue right after its command, before it awaits anything,
    so the entries of one step are committed together with that table's state.
    """

    def __init__(self, balances: dict[str, int] | None = None) -> None:
        super().__init__(balances)
        self.pending: list[Entry] = []

    def on_entry(self, entry: Entry) -> None:
        self.pending.append(entry)

    def drain(self) -> list[Entry]:
        out, self.pending = self.pending, []
        return out


@dataclass(slots=True)
class Request:
    command: c.Command
    callback: Callback | None = None


class TableActor:
    """Runs one table. ``submit`` puts a command in the queue; ``run`` is the task."""

    def __init__(
        self,
        table: Table,
        *,
        store: Store,
        wallet: LedgerWallet,
        publish: Callable[[str, list[Event]], None],
        config: dict[str, Any] | None = None,
        queue_size: int = 256,
        clock: Callable[[], float] = time.time,
        new_seed: Callable[[], bytes] = lambda: secrets.token_bytes(32),
        on_step: Callable[[TableActor, c.Command, list[Event]], None] | None = None,
        restored: bool = False,
    ) -> None:
        self.table = table
        self.store = store
        self.wallet = wallet
        self.publish = publish
        self.config = config or {}
        self.queue: asyncio.Queue[Request | None] = asyncio.Queue(queue_size)
        self.clock = clock
        self.new_seed = new_seed
        self.on_step = on_step
        self.restored = restored  # restored after a stop: the table hears Restored first
        self.coup_in_progress = table.coup is not None  # from each step's result
        self._last_state = table.to_state(spectators=False)
        self._task: asyncio.Task[None] | None = None

    @property
    def table_id(self) -> str:
        return self.table.table_id

    # -- the queue -------------------------------------------------------------------
    def submit(self, command: c.Command, callback: Callback | None = None) -> None:
        """Queue a command; raises :class:`Busy` when the queue is full."""
        try:
            self.queue.put_nowait(Request(command, callback))
        except asyncio.QueueFull:
            raise Busy() from None

    async def call(self, command: c.Command) -> list[Event]:
        """Submit and wait for the result (tests and the operator's tools)."""
        fut: asyncio.Future[list[Event]] = asyncio.get_running_loop().create_future()

        def done(_t: Table, step: Step, err: ChemmyError | None) -> None:
            if fut.done():
                return
            if err is not None:
                fut.set_exception(err)
            else:
                fut.set_result(list(step.events))

        self.submit(command, done)
        return await fut

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.create_task(self.run(), name=f"table-{self.table_id}")
        return self._task

    async def stop(self) -> None:
        if self._task is not None:
            with contextlib.suppress(asyncio.QueueFull):
                self.queue.put_nowait(None)
            try:
                await asyncio.wait_for(self._task, 5)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()

    # -- the loop --------------------------------------------------------------------
    async def run(self) -> None:
        if self.restored:  # nobody is connected after a restart: the table decides (§5)
            await self._step(Request(c.Restored()))
        await self._step(Request(c.Tick()))  # a restarted table catches up with its timers
        while True:
            deadline = self.table.next_deadline
            try:
                if deadline is None:
                    req = await self.queue.get()
                else:
                    async with asyncio.timeout(max(0.0, deadline - self.clock())):
                        req = await self.queue.get()
            except TimeoutError:
                req = Request(c.Tick())
            if req is None:
                return
            await self._step(req)

    async def _step(self, req: Request) -> None:
        table = self.table
        now = self.clock()
        cmd = req.command
        try:
            step = table.handle(cmd, now)
            if table.wants_shoe:
                shoe = table.handle(c.StartShoe(seed=self.new_seed()), now)
                step = Step(
                    step.events + shoe.events, step.duplicate, shoe.seq, shoe.coup_in_progress
                )
        except ChemmyError as err:
            self.wallet.drain()  # a refused command moved no money; keep the queue clean
            if req.callback is not None:
                req.callback(table, self._nothing(), err)
            return
        except Exception:
            log.exception("table %s failed on %s; restored from its last step", self.table_id, cmd)
            await self._restore()
            if req.callback is not None:
                req.callback(
                    self.table, self._nothing(), Refused("internal", "the table could not do that")
                )
            return
        events = list(step.events)
        entries = self.wallet.drain()
        records = table.drain_records()
        if events or entries or records:
            state = table.to_state(spectators=False)  # spectators are not kept (docs)
            try:
                await self.store.commit(
                    entries=entries,
                    table=TableRow(
                        self.table_id, self.config, state, table.seq, table.phase == "closed"
                    ),
                    records=records,
                )
            except Exception:
                # Nothing of this step was stored, so nothing of it may be sent (§8):
                # back to the last stored step; the sender hears it failed.
                log.exception("table %s: storing a step failed; step undone", self.table_id)
                self.wallet.pending.extend(entries)
                await self._restore()
                if req.callback is not None:
                    req.callback(
                        self.table,
                        self._nothing(),
                        Refused("store_failed", "that could not be saved; try again"),
                    )
                return
            self._last_state = state
        self.coup_in_progress = step.coup_in_progress
        if events:
            self.publish(self.table_id, events)
        if req.callback is not None:
            req.callback(table, step, None)
        if self.on_step is not None:
            self.on_step(self, cmd, events)

    def _nothing(self) -> Step:
        """The step of a command that did nothing (refused, or undone)."""
        return Step((), False, self.table.seq, self.table.coup is not None)

    async def _restore(self) -> None:
        """After a bug: back to the last stored step, balances re-read from the store."""
        lost = self.wallet.drain()
        self.wallet.forget(e.key for e in lost)  # never stored: the retry posts them once
        accounts = {e.src for e in lost} | {e.dst for e in lost}
        if accounts:
            self.wallet.load((await self.store.balances(accounts)).items())
        old = self.table
        self.table = Table.from_state(self._last_state, self.wallet)
        for pid, p in old.players.items():
            # Spectators are not stored: whoever the stored step does not know was
            # watching then (or came since), and still is.
            if pid not in self.table.players:
                self.table.players[pid] = type(p)(pid, p.name, connected=p.connected)
