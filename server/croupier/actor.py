"""The croupier's table actor: one task per table, the table's single writer.

It directs play as a croupier does at a real table: takes commands from a bounded queue
one at a time (the players' commands arrive as records from the bus, the croupier's own
— ``Tick``, a fresh shoe, ``Restored``, ``SetDraining`` — from
:class:`~server.croupier.host.Croupier`), hands each to the pure
:class:`~server.table.Table` with the time, keeps the timers (a ``Tick`` when the next
deadline comes), brings a freshly shuffled shoe when the table wants one, and **stores
every step before anything is sent**: the ledger entries, the table's state, the round
records and the step's events go to the store in one commit, with the owner's epoch;
then the events are published on the bus and the sender answered with a reply record.
A step is three parts, in that order: *decide* (the command, what the store must hold
first, the table's step or a refusal), *commit* (store it; what happened, or an undo)
and *deliver* (publish, then reply).

Its helpers, each in its own module: what a record becomes (:mod:`.kinds`), the balances
a command is decided with (:mod:`.balances`), a step's store commit (:mod:`.commit`),
bettors' chips stepped as one burst (:mod:`.bursts`), an undone or in-doubt step
(:mod:`.recovery`), the operator's seamless wallet — debits, rollbacks, the mirror
(:mod:`.seamless`) — the ``roads`` answer (:mod:`.roads`), the one retry with backoff
(:mod:`.retry`), and what the actor is started with and tells its croupier
(:mod:`.settings`). The table's wallet, whether a coup is dealt and whether the table is
closed are read from the table itself, never copied.

Money (docs/architecture.md §5): the table decides with its own
:class:`~server.croupier.wallet.TableWallet` — its stakes and held wagers exactly, its
players' balances as last read from the store — and the store checks every movement
again, atomically, where the balances live. A bet the cached balance allowed but the
store refuses (the money went elsewhere meanwhile) is undone and refused
``insufficient_funds``; a bet the cache refused is tried once more after reading the
player's balance afresh (a deposit, or another table, may have moved it).

It never decides a rule (that is the table's) and never touches a socket (that is
``server.gateway``'s): what leaves it is a bus publish or a reply record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from server.bus.base import Bus
from server.ledger.accounts import Entry, player_account, stake_account
from server.ledger.flows import LimitGuard
from server.protocol.errors import (
    ChemmyError,
    LimitPassed,
    Overdrawn,
    Refused,
    StaleEpoch,
    StoreError,
    StoreUnavailable,
    no_table,
    store_refusal,
)
from server.protocol.records import CommandRecord, ReplyRecord
from server.store.base import CommitResult, Store
from server.table import Table, TableError, views
from server.table.state import Phase
from server.vocabulary import commands as c
from server.vocabulary.events import Event, Step

from . import balances, commit, kinds, recovery
from .bursts import burst, step_burst
from .commit import Write
from .fairqueue import FairQueue, QueueClosed, QueueFull
from .items import Happened, Item
from .kinds import answer, command_of, guards_of
from .recovery import InDoubt
from .retry import backoff
from .roads import Roads
from .seamless import BeforeDebits, Seamless
from .settings import ActorHooks, ActorSettings
from .wallet import TableWallet

__all__ = [
    "ActorHooks",
    "ActorSettings",
    "BeforeDebits",
    "Busy",
    "TableActor",
    "changes_line",
]

log = logging.getLogger("chemmy.croupier")

#: The line of the croupier's own commands in the table's queue (no client has it).
CROUPIER_LINE = "\x00croupier"


def changes_line(cmd: c.Command, events: Sequence[Event]) -> bool:
    """Whether a step may change its table's lobby line: a stored event, or a player
    joining or leaving (the watchers count). A step of transient events alone (a squeezed
    card's bend, a chat line: more than half of a busy table's steps) never does, and its
    line is neither made again nor compared (issue 36: the line's road, rebuilt after
    every bend, was a cluster owner's cost)."""
    if isinstance(cmd, c.Join | c.Leave | c.Disconnect):
        return True
    return any(not e.transient for e in events)


class Busy(Refused):
    """The table's command queue is full: refused, never dropped silently."""

    def __init__(self) -> None:
        super().__init__("busy", "the table is busy; try again")


class TableActor:
    """Runs one table. ``submit`` queues a record, ``call``/``submit_command`` a
    croupier command; ``run`` is the task. :meth:`load` before :meth:`start`."""

    def __init__(
        self,
        table: Table,
        *,
        store: Store,
        bus: Bus,
        settings: ActorSettings | None = None,
        hooks: ActorHooks | None = None,
    ) -> None:
        assert isinstance(table.wallet, TableWallet), "an actor's table has a TableWallet"
        settings = settings or ActorSettings()
        self.table = table
        self.store = store
        self.bus = bus
        self.settings = settings
        self.hooks = hooks or ActorHooks()
        self.config = settings.config
        self.epoch = settings.epoch
        self.clock = settings.clock
        self.queue: FairQueue[Item] = FairQueue(settings.queue_size)
        self.lost = False
        self._told_closed = False  # the croupier heard on_closed
        #: Failed steps in a row (``store_failures`` of them the store's); while any,
        #: the croupier's own steps wait for ``retry_at`` (exponential backoff) instead
        #: of retrying an overdue timer in a tight loop.
        self.failures = 0
        self.store_failures = 0
        self.retry_at: float | None = None
        self._last_state = table.to_state(spectators=False)
        #: The parts of the table's bettors without a seat as stored (GAME_RULES §5):
        #: with the row, what the table is rebuilt from when a step is undone.
        self._parts: dict[str, dict[str, Any]] = dict(settings.parts or {})
        table.take_parts()  # (what a restored table would write: stored already)
        self._summary: tuple[tuple[Any, ...], dict[str, Any]] | None = None  # (key, line)
        self._task: asyncio.Task[None] | None = None
        self._current: Item | None = None  # the item being stepped, not answered yet
        self._bursting: list[Item] = []  # a burst's other decided items, not answered yet
        self._doubt: InDoubt | None = None  # a step that may have been kept after all
        #: The gateways through which each player watches this table (from their joins;
        #: not stored: after a takeover the gateways join their players again).
        self.watchers: dict[str, set[str]] = {}
        self.roads = Roads(bus, table.table_id)
        #: The operator's seamless wallet (docs/wallet.md), if the money lives there:
        #: with one that confirms holds, a coup's debits run while the table waits in
        #: DEBITING, and each step's credits and rollbacks go into its commit.
        money = settings.money
        self.seamless = None if money is None else Seamless(self, money, settings.wallet_timeout)

    @property
    def table_id(self) -> str:
        return self.table.table_id

    @property
    def wallet(self) -> TableWallet:
        """The table's own wallet (the actor's table always has a TableWallet)."""
        wallet = self.table.wallet
        assert isinstance(wallet, TableWallet)
        return wallet

    @property
    def in_coup(self) -> bool:
        """Whether a coup is being dealt (a drain waits for it)."""
        return self.table.in_coup

    @property
    def closed(self) -> bool:
        """The operator closed the table (its ``close`` step stored): no more steps."""
        return self.table.phase is Phase.CLOSED

    @property
    def in_doubt(self) -> bool:
        """A step's commit may have been kept after all (the next step looks first)."""
        return self._doubt is not None

    def summary(self) -> dict[str, Any]:
        """The table's lobby line (made again only when what it is made from changed:
        :func:`views.summary_key`; its road only after a result or a new shoe:
        :meth:`Roads.lobby`). The same line as before is the same object."""
        key = views.summary_key(self.table)
        if self._summary is None or self._summary[0] != key:
            self._summary = (key, views.summary(self.table, self.roads.lobby(self.table), key))
        return self._summary[1]

    # -- money ---------------------------------------------------------------------------
    async def load(self) -> None:
        """Fill the table's wallet from the store (before the actor starts)."""
        accounts = recovery.accounts(self.table)
        self.wallet.load((await self.store.balances(accounts)).items())

    async def refresh(self, players: Iterable[str]) -> bool:
        """Read players' balances (and stakes here) afresh; whether any changed."""
        accounts = set()
        for pid in players:
            accounts |= {player_account(pid), stake_account(self.table_id, pid)}
        fresh = await self.store.balances(accounts)
        changed = any(self.wallet.balance(a) != v for a, v in fresh.items())
        self.wallet.load(fresh.items())
        return changed

    @property
    def currency(self) -> str | None:
        return getattr(self.table.options, "currency", None)

    def session_of(self, player: str) -> dict[str, Any] | None:
        """The session at the operator the player's wagers here were placed under."""
        p = self.table.players.get(player)
        return None if p is None else p.wallet_session

    # -- the queue -------------------------------------------------------------------
    def submit(self, record: CommandRecord) -> None:
        """Queue a gateway's record; raises :class:`Busy` when the queue is full."""
        self._put(Item(record=record))

    def submit_command(self, command: c.Command) -> None:
        """Queue a croupier command, not waiting for it."""
        self._put(Item(command=command))

    async def call(self, command: c.Command) -> list[Event]:
        """Queue a croupier command and wait for its events (or its refusal)."""
        done: asyncio.Future[list[Event]] = asyncio.get_running_loop().create_future()
        self._put(Item(command=command, done=done))
        return await done

    def _put(self, item: Item) -> None:
        """Queue ``item`` in its sender's line (a client address; the croupier's own
        line for its commands): a full queue makes room from the longest line."""
        record = item.record
        sender = CROUPIER_LINE if record is None else (record.origin or record.player)
        try:
            pushed = self.queue.put(sender, item)
        except QueueFull:
            raise Busy() from None
        except QueueClosed:
            raise Refused("unavailable", "that table is stopping here; try again") from None
        if pushed is not None:
            self._refuse(pushed, Busy())  # the flood's own newest command pays

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.create_task(self.run(), name=f"table-{self.table_id}")
        return self._task

    def gateways_gone(self, alive: set[str]) -> None:
        """Processes left the cluster: whoever watched only through them is gone."""
        for player, gateways in list(self.watchers.items()):
            if gateways and not gateways & alive:
                del self.watchers[player]
                if player in self.table.players:
                    with contextlib.suppress(Busy):
                        self.submit_command(c.Disconnect(player=player))

    def abandon(self) -> None:
        """Stop at once, without another step or write (this process lost the table).
        The command being stepped and those queued are answered ``unavailable`` now,
        never left to time out (a retry with the same id reaches the next owner)."""
        self.lost = True
        if self._task is not None:
            self._task.cancel()
        if self.seamless is not None:
            self.seamless.cancel()  # the next owner debits again, with the same ids
        self._refuse_waiting()

    def _refuse_waiting(self) -> None:
        """Answer ``unavailable`` to every command this actor will never step: the one
        in progress (its step cancelled before it replied) and the queued ones."""
        items = [] if self._current is None else [self._current]
        items += self._bursting
        self._current, self._bursting = None, []
        self._refuse_queued(Refused("unavailable", "that table moved; try again"), items)

    def _refuse_queued(self, err: ChemmyError, items: list[Item] | None = None) -> None:
        """Answer ``err`` to ``items`` and to every command still queued."""
        items = items or []
        while not self.queue.empty():
            items.append(self.queue.get_nowait())
        for item in items:
            self._refuse(item, err)

    async def stop(self) -> None:
        """Stop after the commands already queued (each step is stored)."""
        if self.seamless is not None:
            self.seamless.cancel()  # whoever runs the table next debits again, same ids
        if self._task is not None:
            self.queue.close()  # what is queued is stepped first
            try:
                await asyncio.wait_for(self._task, 5)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
                self._refuse_waiting()  # what it never stepped is answered, not dropped

    # -- the loop --------------------------------------------------------------------
    async def run(self) -> None:
        if self.settings.restored:  # nobody is connected after a restart: the table decides
            await self._step(Item(command=c.Restored()))  # (§5)
        await self._step(Item(command=c.Tick()))  # a restarted table catches up its timers
        while not (self.closed or self.lost):
            if self.seamless is not None:
                self.seamless.maybe_debit()
            deadline = self.table.next_deadline
            if deadline is not None and self.retry_at is not None:
                deadline = max(deadline, self.retry_at)  # the store is failing: back off
            try:
                wait = None if deadline is None else max(0.0, deadline - self.clock())
                item = await self.queue.get(wait)
            except TimeoutError:
                item = Item(command=c.Tick())
            if item is None:
                return
            items = burst(self, item)
            if items is None:
                await self._step(item)
            else:
                await step_burst(self, items)
        if self.closed:  # what came in behind the close: answered at once, not dropped
            self._refuse_queued(no_table(self.table_id))

    def _refuse(self, item: Item, err: ChemmyError) -> None:
        if item.done is not None and not item.done.done():
            item.done.set_exception(err)
        record = item.record
        if record is not None and record.reply_to is not None:
            self.bus.reply(ReplyRecord.refused(record.reply_to, err))

    def _decide(self, cmd: c.Command, now: float) -> Step:
        """The table's step for ``cmd`` (and a fresh shoe when it wants one)."""
        table = self.table
        step = table.handle(cmd, now)
        if table.wants_shoe:
            shoe = table.handle(c.StartShoe(seed=self.settings.new_seed()), now)
            step = Step(step.events + shoe.events, step.duplicate, shoe.seq, shoe.coup_in_progress)
        return step

    async def _step(self, item: Item) -> None:
        """Step one item; while it runs it is :attr:`_current` (it has not been answered:
        every await of a step comes before its reply)."""
        self._current = item
        try:
            await self._step_item(item)
        finally:
            if self._current is item:
                self._current = None

    async def _step_item(self, item: Item) -> None:
        """A step in three parts: decide (the table's step, or a refusal), commit (store
        before send: what happened, or an undo), deliver (publish, then reply)."""
        if self._doubt is not None and not await self._doubt_settled(item):
            return
        decided = await self._decide_item(item)
        if decided is None:
            return
        if commit.is_large(decided[1], self.wallet.pending):
            await asyncio.sleep(0)  # (the loop turns before its commit: commit.LARGE_STEP)
        happened = await self._commit(item, *decided)
        if happened is not None:
            self._deliver(item, happened)

    async def _doubt_settled(self, item: Item) -> bool:
        """Settle the step in doubt before stepping ``item``; False (``item`` answered)
        while the store still cannot tell."""
        try:
            await self._settle_doubt()
        except StoreError as exc:  # still cannot tell: nothing more happens here yet
            self._store_failed(exc)
            self._refuse(item, store_refusal(exc))
            return False
        return True

    async def _decide_item(self, item: Item) -> tuple[c.Command, Step] | None:
        """The command ``item`` asks for and the table's step for it; None when ``item``
        was answered without a step (a query, a refusal, a failure: nothing moved)."""
        now = self.clock()
        record = item.record
        try:
            cmd = item.command if record is None else command_of(self, record)
            if cmd is None:  # a query, or a disconnect of someone already gone
                kind = None if record is None else kinds.GATEWAY_COMMANDS.get(record.kind)
                if record is not None and kind is not None and kind.query is not None:
                    await kind.query(self, record)
                return None
            await balances.prepare(self, cmd, record)
            return cmd, await balances.decide_funded(self, cmd, now)
        except ChemmyError as err:
            self.wallet.drain()  # a refused command moved no money
            self._refuse(item, err)
        except StoreError as exc:
            # A balance could not be read before deciding: nothing was decided or moved.
            self.wallet.drain()
            self._store_failed(exc)
            self._refuse(item, store_refusal(exc))
        except Exception:
            log.exception(
                "table %s failed; restored from its last step",
                self.table_id,
                extra={"table": self.table_id},
            )
            self._backoff()  # a bug that repeats on every Tick must not spin the loop
            await self._restore()
            self._refuse(item, Refused("internal", "the table could not do that"))
        return None

    async def _commit(self, item: Item, cmd: c.Command, step: Step) -> Happened | None:
        """Store the step (its entries, the table's state, its records and events) in one
        commit with the owner's epoch; what happened, or None when it was not kept (the
        step undone, ``item`` answered)."""
        table = self.table
        happened = Happened(cmd, step, list(step.events))
        entries = self.wallet.drain()
        records = table.drain_records()
        stored = step.stored
        if not (stored or entries or records):
            # Nothing to keep (a duplicate, a coalesced bend, or only a transient event:
            # shown, never stored; the next stored step's row holds what it changed).
            return happened
        w = self._to_write(entries, records, stored, guards_of(cmd, item.record))
        try:
            result = await self._write(w)
        except StaleEpoch:
            # A newer owner claimed this table: this process writes nothing more
            # and sends nothing of this step; the new owner carries on (§8).
            self._lose(item)
            return None
        except Overdrawn:
            # The balance this table knew was more than the store holds (spent at
            # another table meanwhile): the bet was never accepted (§3).
            await self._restore(entries)
            self._refuse(
                item, TableError("insufficient_funds", "that bet is more than your balance")
            )
            return None
        except LimitPassed as passed:
            # The player's own limit, held by the store with every other table's chips
            # (placed meanwhile, here or on another process): the bet was never accepted.
            await self._restore(entries)
            self._refuse(item, commit.limit_refusal(self.table, passed))
            return None
        except Exception as exc:
            self._refuse(item, await self._not_written(w, exc))
            return None
        self._written(w, result)
        return happened

    def _to_write(
        self,
        entries: list[Entry],
        records: list[dict[str, Any]],
        stored: list[Event],
        guards: list[LimitGuard],
    ) -> Write:
        """A step (or a burst) as the store will keep it (:func:`commit.to_write`)."""
        return commit.to_write(
            self.table,
            self.seamless,
            self._last_state,
            self._parts,
            entries,
            records,
            stored,
            guards,
        )

    async def _write(self, w: Write) -> CommitResult:
        """One commit with the owner's epoch (raises what the store raises)."""
        return await commit.write(self.store, self.table, self.config, self.epoch, w)

    def _written(self, w: Write, result: CommitResult) -> None:
        """Kept: the balances as the store has them, the step the last stored one."""
        self.wallet.load(result.balances.items())
        self._last_state = w.state
        recovery.put_parts(self._parts, w.parts)
        if self.store_failures:
            self._store_recovered()
        if w.calls and self.hooks.on_calls is not None:
            self.hooks.on_calls(w.calls)  # credits and rollbacks stored: the courier sends

    async def _not_written(self, w: Write, exc: Exception) -> ChemmyError:
        """Nothing of the step was stored, so nothing of it may be sent (§8): back to the
        last stored step; the refusal says whether the store could not be reached
        (store_unavailable) or refused. Not reached, it may have kept the step all the
        same (a reply lost on the way back): the next step first looks (_settle_doubt)."""
        self._store_failed(exc)
        if isinstance(exc, StoreUnavailable):
            kept = dict(self._parts)
            recovery.put_parts(kept, w.parts)
            self._doubt = InDoubt(w.state, kept, w.stored)
        await self._restore(w.entries)
        return store_refusal(exc)

    def _deliver(self, item: Item, happened: Happened) -> None:
        """A stored step goes out: its events on the bus, then the sender's reply."""
        cmd, step, events = happened.command, happened.step, happened.events
        record = item.record
        self.failures, self.retry_at = 0, None
        if events:
            self.bus.publish(self.table_id, events)
        self._tell_closed()  # the operator closed it: this actor's last step
        if record is not None:
            reply = answer(self, record, step)
            if reply is not None:
                # (the step's events, published above, come first at its gateway)
                self.bus.reply(reply.answering(self.table_id, step.seq))
        if item.done is not None and not item.done.done():
            item.done.set_result(events)
        if self.hooks.on_step is not None:
            self.hooks.on_step(self, cmd, events)

    def _tell_closed(self) -> None:
        """Tell the croupier once that the table closed (its close step is stored)."""
        if self.closed and not self._told_closed:
            self._told_closed = True
            if self.hooks.on_closed is not None:
                self.hooks.on_closed(self)

    # -- failures ------------------------------------------------------------------------
    def _lose(self, item: Item) -> None:
        log.warning(
            "table %s: a newer owner took over (epoch %d is stale); stopping here",
            self.table_id,
            self.epoch,
            extra={"table": self.table_id, "epoch": self.epoch},
        )
        self.lost = True
        self.wallet.drain()
        self._refuse_waiting()  # this item (the current one) and the queued ones
        if self.hooks.on_lost is not None:
            self.hooks.on_lost(self)

    def _store_failed(self, exc: Exception) -> None:
        """One line per episode, not per attempt; timers retry with a growing delay."""
        self.store_failures += 1
        if self.store_failures == 1:
            log.error(
                "table %s: the store refused a step (%s); undone, retrying with backoff",
                self.table_id,
                exc,
                extra={"table": self.table_id},
            )
            if self.hooks.on_store is not None:
                self.hooks.on_store(self, False)
        self._backoff()

    def _backoff(self) -> None:
        self.failures += 1
        self.retry_at = self.clock() + backoff(self.failures)

    def _store_recovered(self) -> None:
        log.warning(
            "table %s: the store works again after %d failed steps",
            self.table_id,
            self.store_failures,
            extra={"table": self.table_id},
        )
        self.store_failures = 0
        if self.hooks.on_store is not None:
            self.hooks.on_store(self, True)

    async def _settle_doubt(self) -> None:
        """Find out whether the step in doubt was kept (:func:`recovery.was_kept`). Not
        kept: it was undone rightly. Kept: it happened, so the table takes it up again,
        and its events go out now, late but in order, before anything newer; its sender,
        told ``store_unavailable``, retries with the same id and hears ``duplicate``.
        Raises :class:`StoreError` while the store cannot be read (still in doubt)."""
        doubt = self._doubt
        assert doubt is not None
        kept = await recovery.was_kept(self.store, doubt, self.table_id)
        self._doubt = None
        if not kept:
            return
        log.warning(
            "table %s: a step whose commit seemed to fail was kept; taken up again",
            self.table_id,
            extra={"table": self.table_id},
        )
        self.table = await recovery.taken_up(self.store, doubt, self.table)
        self._last_state = doubt.state
        self._parts = doubt.parts
        self._summary = None
        if doubt.events:
            self.bus.publish(self.table_id, doubt.events)
        self._tell_closed()

    async def _restore(self, undone: Sequence[Entry] = ()) -> None:
        """Undo the step that was not stored (:func:`recovery.rebuilt`): the table as the
        last stored step left it, its wallet as before the step."""
        self.table = await recovery.rebuilt(
            self.store, self.table, self._last_state, self._parts, undone
        )
