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
import dataclasses
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.bus.base import Bus
from server.engine.odds import exact_odds
from server.protocol.errors import ChemmyError, Refused, limit_reached, no_table
from server.protocol.messages import TABLE_COMMANDS
from server.protocol.records import CommandRecord, ReplyRecord
from server.store.base import (
    CommitResult,
    LimitGuard,
    LimitPassed,
    Overdrawn,
    StaleEpoch,
    Store,
    StoreError,
    StoreUnavailable,
    TableRow,
    dump_json,
)
from server.table import Table, TableError, views
from server.table import commands as c
from server.table.events import Event, Step
from server.table.state import Phase, PlayerState
from server.table.wallet import Entry, held_account, player_account, stake_account
from server.wallet.base import Wallet, WalletAnswer, WalletError
from server.wallet.calls import closing_calls, debit_call, rollback_call, transaction_id
from server.wallet.mirror import sync_mirror

from .fairqueue import FairQueue, QueueClosed, QueueFull
from .wallet import TableWallet

__all__ = ["WIRE_COMMANDS", "BeforeDebits", "Busy", "TableActor", "store_refusal"]

log = logging.getLogger("chemmy.croupier")

#: The first and the longest wait before a table's timers try the store again.
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 10.0

#: The table command each relayed wire message becomes: the table's own vocabulary
#: (``server.table.commands``) for the names the protocol relays (``TABLE_COMMANDS``;
#: ``join`` and ``leave`` are the actor's own, below). The record's fields are the
#: command's.
WIRE_COMMANDS: dict[str, type[c.Command]] = {
    kind: cls for kind, cls in c.WIRE_COMMANDS.items() if kind in TABLE_COMMANDS
}

#: The field of a ``sit`` (or ``bet``, ``same_bet``: a bettor without a seat's first bet,
#: GAME_RULES §5) record that carries a guest not yet stored (``name``, ``funds``): the
#: owner stores them once the command is allowed. A ``join`` carries it too: the table
#: then decides the guest's bets with the play money they would get (their actions).
GUEST_FIELD = "guest"
#: The field of a ``bet`` or ``same_bet`` record that carries the player's limits as
#: the store must hold them (``[[kind, cap, since], ...]``: ``server.protection.play_limits``):
#: the step's commit is refused ``limit_reached`` if its chips would pass one, so two
#: bets at two tables, or on two processes, can never pass a limit together.
GUARDS_FIELD = "guards"
#: The fields of a record that are the actor's, not the table command's.
_ACTOR_FIELDS = frozenset({GUEST_FIELD, GUARDS_FIELD})
#: Delivers the given players' unanswered credits and rollbacks before their debits,
#: until a deadline (``time.monotonic()``): for each player who has one, whether the
#: wallet answered all of them in time (server.wallet.courier.Courier.deliver_first).
BeforeDebits = Callable[[list[str], float], Awaitable[Mapping[str, Awaitable[bool]]]]
#: Why a debit was not sent: the player's earlier credit or rollback still unanswered at
#: the debits' deadline (docs/wallet.md §3, "The order of a player's calls").
HELD_BACK = "an earlier credit or rollback of the player's was not answered in time"
#: Commands that may need a player's latest balance: it is read before they are decided.
_FRESH_BALANCE = (c.Join, c.Sit)
#: Commands refused for want of funds that are tried once more with a fresh balance.
_FUNDED = (c.PlaceBet, c.SameBet)
#: A bettor without a seat's chips, and a spectator's chat line (shown, never stored):
#: queued together, they are stepped as one burst.
_BURST_KINDS = frozenset({"bet", "same_bet", "remove_bet", "clear_bets", "chat"})
#: The most commands of one burst (one commit, one ``bets`` event a kind of change).
BURST_MAX = 200


#: The line of the croupier's own commands in the table's queue (no client has it).
CROUPIER_LINE = "\x00croupier"


class Busy(Refused):
    """The table's command queue is full: refused, never dropped silently."""

    def __init__(self) -> None:
        super().__init__("busy", "the table is busy; try again")


@dataclass(slots=True)
class _Item:
    """One thing for the actor to do: a record from a gateway or a croupier command."""

    record: CommandRecord | None = None
    command: c.Command | None = None
    done: asyncio.Future[list[Event]] | None = None  # the croupier's own calls wait on it


@dataclass(slots=True)
class _Happened:
    """A step the store kept: the command, the table's step, and its events."""

    command: c.Command
    step: Step
    events: list[Event]


@dataclass(slots=True)
class _Write:
    """A step (or a burst of them) as one store commit keeps it."""

    entries: list[Entry]
    records: list[dict[str, Any]]
    stored: list[Event]
    state: dict[str, Any]
    parts: dict[str, dict[str, Any] | None]
    calls: list[dict[str, Any]]
    guards: list[LimitGuard]
    in_coup: bool


@dataclass(slots=True)
class _InDoubt:
    """A step whose commit failed in a way that does not say whether it was kept
    (:class:`StoreUnavailable`: Redis may have run the commit and lost the reply): the
    table was undone, and the stored row says, before the next step, which it was."""

    state: dict[str, Any]
    parts: dict[str, dict[str, Any]]  # the bettors' parts, had it been kept
    events: list[Event]
    coup_in_progress: bool


class TableActor:
    """Runs one table. ``submit`` queues a record, ``call``/``submit_command`` a
    croupier command; ``run`` is the task. :meth:`load` before :meth:`start`."""

    def __init__(
        self,
        table: Table,
        *,
        store: Store,
        bus: Bus,
        config: dict[str, Any] | None = None,
        queue_size: int = 256,
        clock: Callable[[], float] = time.time,
        new_seed: Callable[[], bytes] = lambda: secrets.token_bytes(32),
        on_step: Callable[[TableActor, c.Command, list[Event]], None] | None = None,
        on_closed: Callable[[TableActor], None] | None = None,
        on_store: Callable[[TableActor, bool], None] | None = None,
        on_lost: Callable[[TableActor], None] | None = None,
        epoch: int = 0,
        restored: bool = False,
        parts: Mapping[str, dict[str, Any]] | None = None,
        money: Wallet | None = None,
        wallet_timeout: float = 3.0,
        on_calls: Callable[[list[dict[str, Any]]], None] | None = None,
        before_debits: BeforeDebits | None = None,
        on_debits: Callable[[float, list[str]], None] | None = None,
    ) -> None:
        assert isinstance(table.wallet, TableWallet), "an actor's table has a TableWallet"
        self.table = table
        self.wallet: TableWallet = table.wallet
        self.store = store
        self.bus = bus
        self.config = config or {}
        self.queue: FairQueue[_Item] = FairQueue(queue_size)
        self.clock = clock
        self.new_seed = new_seed
        self.on_step = on_step
        self.on_closed = on_closed
        self.on_store = on_store
        self.on_lost = on_lost
        #: The epoch this owner claimed: every write carries it, and the store refuses
        #: it once a newer owner has claimed the table (fencing).
        self.epoch = epoch
        #: Restored after a stop: the table hears ``Restored`` before anything else.
        self.restored = restored
        self.closed = False
        self.lost = False
        #: Whether a coup is being dealt, from the last step (a drain waits for it).
        self.in_coup = table.in_coup
        #: Failed steps in a row (``store_failures`` of them the store's); while any,
        #: the croupier's own steps wait for ``retry_at`` (exponential backoff) instead
        #: of retrying an overdue timer in a tight loop.
        self.failures = 0
        self.store_failures = 0
        self.retry_at: float | None = None
        self._last_state = table.to_state(spectators=False)
        #: The parts of the table's bettors without a seat as stored (GAME_RULES §5):
        #: with the row, what the table is rebuilt from when a step is undone.
        self._parts: dict[str, dict[str, Any]] = dict(parts or {})
        table.take_parts()  # (what a restored table would write: stored already)
        self._summary: dict[str, Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self._odds: tuple[tuple[Any, ...], dict[str, Any] | None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._current: _Item | None = None  # the item being stepped, not answered yet
        self._bursting: list[_Item] = []  # a burst's other decided items, not answered yet
        self._doubt: _InDoubt | None = None  # a step that may have been kept after all
        #: The gateways through which each player watches this table (from their joins;
        #: not stored: after a takeover the gateways join their players again).
        self.watchers: dict[str, set[str]] = {}
        #: Where the players' money lives (docs/wallet.md); with one that confirms
        #: holds, a coup's debits run while the table waits in DEBITING, and each
        #: step's credits and rollbacks go into its commit (``on_calls``: stored).
        self.money = money
        self.wallet_timeout = wallet_timeout
        self.on_calls = on_calls
        #: Before a coup's debits: their players' unanswered credits and rollbacks
        #: delivered, until the debits' deadline; who still waits for one.
        self.before_debits = before_debits
        #: After a coup's debits: their time (seconds) and each answer's outcome.
        self.on_debits = on_debits
        self._debits: asyncio.Task[None] | None = None
        self._debited_round: str | None = None

    @property
    def table_id(self) -> str:
        return self.table.table_id

    def summary(self) -> dict[str, Any]:
        """The table's lobby line (made again only after a step changed something)."""
        if self._summary is None:
            self._summary = views.summary(self.table)
        return self._summary

    # -- money ---------------------------------------------------------------------------
    def _accounts(self, table: Table) -> set[str]:
        """The accounts ``table``'s state concerns: its held account, and for each of its
        players (and each player with a wager held, bettors without a seat included)
        their balance and stake here."""
        pids = set(table.players)
        if table.coup is not None:
            pids |= set(table.coup.held)
        accounts = {held_account(self.table_id)}
        for pid in pids:
            accounts |= {player_account(pid), stake_account(self.table_id, pid)}
        return accounts

    async def load(self) -> None:
        """Fill the table's wallet from the store (before the actor starts)."""
        self.wallet.load((await self.store.balances(self._accounts(self.table))).items())

    async def _refresh(self, players: Iterable[str]) -> bool:
        """Read players' balances (and stakes here) afresh; whether any changed."""
        accounts = set()
        for pid in players:
            accounts |= {player_account(pid), stake_account(self.table_id, pid)}
        fresh = await self.store.balances(accounts)
        changed = any(self.wallet.balance(a) != v for a, v in fresh.items())
        self.wallet.load(fresh.items())
        return changed

    # -- the queue -------------------------------------------------------------------
    def submit(self, record: CommandRecord) -> None:
        """Queue a gateway's record; raises :class:`Busy` when the queue is full."""
        self._put(_Item(record=record))

    def submit_command(self, command: c.Command) -> None:
        """Queue a croupier command, not waiting for it."""
        self._put(_Item(command=command))

    async def call(self, command: c.Command) -> list[Event]:
        """Queue a croupier command and wait for its events (or its refusal)."""
        done: asyncio.Future[list[Event]] = asyncio.get_running_loop().create_future()
        self._put(_Item(command=command, done=done))
        return await done

    def _put(self, item: _Item) -> None:
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
        if self._debits is not None:
            self._debits.cancel()  # the next owner debits again, with the same ids
        self._refuse_waiting()

    def _refuse_waiting(self) -> None:
        """Answer ``unavailable`` to every command this actor will never step: the one
        in progress (its step cancelled before it replied) and the queued ones."""
        items = [] if self._current is None else [self._current]
        items += self._bursting
        self._current, self._bursting = None, []
        self._refuse_queued(Refused("unavailable", "that table moved; try again"), items)

    def _refuse_queued(self, err: ChemmyError, items: list[_Item] | None = None) -> None:
        """Answer ``err`` to ``items`` and to every command still queued."""
        items = items or []
        while not self.queue.empty():
            items.append(self.queue.get_nowait())
        for item in items:
            self._refuse(item, err)

    async def stop(self) -> None:
        """Stop after the commands already queued (each step is stored)."""
        if self._debits is not None:
            self._debits.cancel()  # whoever runs the table next debits again, same ids
        if self._task is not None:
            self.queue.close()  # what is queued is stepped first
            try:
                await asyncio.wait_for(self._task, 5)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
                self._refuse_waiting()  # what it never stepped is answered, not dropped

    # -- the loop --------------------------------------------------------------------
    async def run(self) -> None:
        if self.restored:  # nobody is connected after a restart: the table decides (§5)
            await self._step(_Item(command=c.Restored()))
        await self._step(_Item(command=c.Tick()))  # a restarted table catches up its timers
        while not (self.closed or self.lost):
            self._maybe_debit()
            deadline = self.table.next_deadline
            if deadline is not None and self.retry_at is not None:
                deadline = max(deadline, self.retry_at)  # the store is failing: back off
            try:
                wait = None if deadline is None else max(0.0, deadline - self.clock())
                item = await self.queue.get(wait)
            except TimeoutError:
                item = _Item(command=c.Tick())
            if item is None:
                return
            burst = self._burst(item)
            if burst is None:
                await self._step(item)
            else:
                await self._step_burst(burst)
        if self.closed:  # what came in behind the close: answered at once, not dropped
            self._refuse_queued(no_table(self.table_id))

    def _command_of(self, record: CommandRecord) -> c.Command | None:
        """The table command a record asks for (None: answered without a step)."""
        kind, player = record.kind, record.player
        rid = None if record.id is None else str(record.id)
        cls = WIRE_COMMANDS.get(kind)
        if cls is not None:
            fields = {k: v for k, v in record.fields.items() if k not in _ACTOR_FIELDS}
            return cls(player=player, id=rid, **fields)
        if kind == "join":
            if record.reply_to is not None:
                self.watchers.setdefault(player, set()).add(record.reply_to.gateway)
            return c.Join(player=player, name=str(record.fields.get("name") or ""), rejoin=True)
        if kind == "leave":
            self.watchers.pop(player, None)
            return c.Leave(player=player, id=rid)
        if kind == "disconnect":
            # The player's last connection at that gateway went away: gone from the table
            # only when no other gateway still has them (the table decides what that
            # means: a seat is held for the grace period, a spectator leaves).
            gateways = self.watchers.get(player, set())
            gateways.discard(str(record.fields.get("gateway", "")))
            if gateways:
                return None
            self.watchers.pop(player, None)
            return c.Disconnect(player=player) if player in self.table.players else None
        if kind == "chat":  # (no id: a chat line is not a table command to retry)
            return c.Chat(player=player, text=str(record.fields.get("text", "")))
        if kind == "close":
            return c.CloseTable()
        if kind == "void":  # the operator's, on the table's current round (issue 21)
            f = record.fields
            return c.VoidRound(round_id=f.get("round_id", ""), reason=f.get("reason", ""))
        if kind == "pause":
            return c.Pause()
        if kind == "resume":
            return c.Resume()
        if kind in ("roads", "refresh"):
            return None
        raise Refused("unknown_command", f"the table does not take {kind[:40]!r}")

    def _answer(self, record: CommandRecord, step: Step) -> ReplyRecord | None:
        to = record.reply_to
        if to is None:
            return None
        if record.kind == "join":
            snapshot = views.view(self.table, record.player)
            return ReplyRecord.ok(to, table=self.table_id, seq=step.seq, snapshot=snapshot)
        if record.kind == "close":
            return ReplyRecord.ok(to, table=self.table_id, closed=True)
        if record.kind == "void":
            rid = record.fields.get("round_id")
            return ReplyRecord.ok(to, table=self.table_id, round_id=rid, voided=True, seq=step.seq)
        if record.kind in ("pause", "resume"):
            return ReplyRecord.ok(
                to, table=self.table_id, paused=self.table.paused, phase=self.table.phase.value
            )
        return ReplyRecord.ok(to, seq=step.seq, duplicate=step.duplicate)

    def _roads(self, to: Any) -> None:
        """Answer a ``roads`` query: the roads, and between coups the exact odds of the
        next coup from what the players know remains in the shoe (the public cards out;
        never the burned cards, §4). The odds take a few ms of numpy: computed off the
        loop, once per public composition, and answered when ready, so the table never waits."""
        table = self.table
        roads = table.roads()
        counts = views.public_composition(table)
        if counts is None or table.shoe is None:
            self.bus.reply(ReplyRecord.ok(to, table=self.table_id, roads=roads, odds=None))
            return
        # Keyed by what the odds are computed from: the public composition (the burn card
        # turned up at the cut changes it before any card is dealt).
        key = (table.shoe_no, *sorted(counts.items()))
        if self._odds is not None and self._odds[0] == key:
            self.bus.reply(ReplyRecord.ok(to, table=self.table_id, roads=roads, odds=self._odds[1]))
            return
        decks, paytable = table.options.decks, table.options.paytable

        async def compute() -> None:
            try:
                odds = _plain(
                    await asyncio.to_thread(exact_odds, decks, counts=counts, paytable=paytable)
                )
            except Exception:
                log.exception(
                    "table %s: odds failed", self.table_id, extra={"table": self.table_id}
                )
                odds = None
            else:
                self._odds = (key, odds)
            self.bus.reply(ReplyRecord.ok(to, table=self.table_id, roads=roads, odds=odds))

        self._spawn(compute())

    def _spawn(self, job: Any) -> None:
        task = asyncio.create_task(job)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _refuse(self, item: _Item, err: ChemmyError) -> None:
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
            shoe = table.handle(c.StartShoe(seed=self.new_seed()), now)
            step = Step(step.events + shoe.events, step.duplicate, shoe.seq, shoe.coup_in_progress)
        return step

    def _bursts(self, item: _Item) -> bool:
        """Whether ``item`` is a bettor without a seat's chips, which may be stepped in a
        burst (never while the store is failing or a step is in doubt)."""
        record = item.record
        if record is None or record.kind not in _BURST_KINDS or record.reply_to is None:
            return False
        p = self.table.players.get(record.player)
        return p is not None and p.seat is None and self._doubt is None and self.retry_at is None

    def _burst(self, item: _Item) -> list[_Item] | None:
        """``item`` and the bettors' commands queued right behind it (their turns come
        next: a thousand bettors betting at once), or None: ``item`` goes alone."""
        if not self._bursts(item):
            return None
        items = [item]
        while len(items) < BURST_MAX:
            following = self.queue.peek()
            if following is None or not self._bursts(following):
                break
            items.append(self.queue.get_nowait())
        return items if len(items) > 1 else None

    async def _step_burst(self, items: list[_Item]) -> None:
        """Bettors' chips queued together (issue 37 §3): each command decided in turn as
        :meth:`_step_item` decides one (a refused one answered at once: it moved
        nothing), the ``bets`` of them all told in one event a kind of change
        (:meth:`Table.flush_bettors`: not one event each to everyone watching), the
        whole burst stored in one commit, then delivered (store before send). A commit
        the store refuses for one of them (a balance or a limit passed meanwhile, at
        another table) is undone and the burst stepped again one command at a time."""
        table, now = self.table, self.clock()
        decided: list[tuple[_Item, c.Command, Step]] = []
        entries: list[Entry] = []
        guards: list[LimitGuard] = []
        table.defer_bettors()
        try:
            for item in items:
                self._current = item
                record = item.record
                assert record is not None
                try:
                    cmd = self._command_of(record)
                    assert cmd is not None  # (the kinds of _BURST_KINDS are table commands)
                    await self._prepare(cmd, record)
                    step = await self._decide_funded(cmd, now)
                except ChemmyError as err:
                    self.wallet.drain()  # a refused command moved no money
                    self._refuse(item, err)
                    continue
                except StoreError as exc:
                    self.wallet.drain()
                    self._store_failed(exc)
                    self._refuse(item, store_refusal(exc))
                    continue
                entries.extend(self.wallet.drain())
                if isinstance(cmd, _FUNDED):
                    guards.extend(_guards(record))
                decided.append((item, cmd, step))
                self._bursting.append(item)
            self._current = None
            if not decided:
                table.deferred = None
                return
            flushed = table.flush_bettors(decided[-1][1])
        except Exception:
            log.exception(
                "table %s failed in a burst; restored from its last step",
                self.table_id,
                extra={"table": self.table_id},
            )
            self._backoff()
            await self._restore(entries)
            self._refuse_burst(Refused("internal", "the table could not do that"))
            return
        await self._commit_burst(decided, flushed, entries, guards)

    def _refuse_burst(self, err: ChemmyError) -> None:
        """Answer ``err`` to the burst's item being decided and to every decided one."""
        items = [] if self._current is None else [self._current]
        items += self._bursting
        self._current, self._bursting = None, []
        for item in items:
            self._refuse(item, err)

    async def _commit_burst(
        self,
        decided: list[tuple[_Item, c.Command, Step]],
        flushed: Step,
        entries: list[Entry],
        guards: list[LimitGuard],
    ) -> None:
        """Store a burst's steps in one commit (as :meth:`_commit` does one), then
        deliver them: every event, then each command's reply at the burst's last ``seq``."""
        entries = [*entries, *self.wallet.drain()]
        records = self.table.drain_records()
        stored = [e for _i, _c, step in decided for e in step.stored] + flushed.stored
        if not (stored or entries or records):  # (chat lines alone: shown, never stored)
            self._deliver_burst(decided, flushed)
            return
        w = self._to_write(entries, records, stored, guards, flushed.coup_in_progress)
        try:
            result = await self._write(w)
        except StaleEpoch:
            self._current, self._bursting = self._bursting[0], self._bursting[1:]
            self._lose(self._current)
            return
        except (Overdrawn, LimitPassed):
            # One of them passed a balance or a limit the store holds: back to the last
            # stored step, and each command of the burst stepped alone (each told why).
            await self._restore(entries)
            items, self._bursting = self._bursting, []
            for item in items:
                await self._step(item)
            return
        except Exception as exc:
            self._refuse_burst(await self._not_written(w, exc))
            return
        self._written(w, result)
        self._deliver_burst(decided, flushed)

    def _deliver_burst(self, decided: list[tuple[_Item, c.Command, Step]], flushed: Step) -> None:
        """Every event of a stored burst goes out with its last command, then the others'
        replies (each at the burst's last seq: its events have all come first)."""
        self._bursting = []
        events = [e for _i, _c, step in decided for e in step.events] + list(flushed.events)
        last, cmd, step = decided[-1]
        seq, in_coup = flushed.seq, flushed.coup_in_progress
        self._deliver(
            last, _Happened(cmd, Step(tuple(events), step.duplicate, seq, in_coup), events)
        )
        for item, _cmd, step in decided[:-1]:
            self._answer_burst(item, Step((), step.duplicate, seq, in_coup))

    def _answer_burst(self, item: _Item, step: Step) -> None:
        """A burst's command answered (its events go out with the burst's last one)."""
        record = item.record
        if record is not None:
            reply = self._answer(record, step)
            if reply is not None:
                self.bus.reply(dataclasses.replace(reply, after=(self.table_id, step.seq)))

    async def _step(self, item: _Item) -> None:
        """Step one item; while it runs it is :attr:`_current` (it has not been answered:
        every await of a step comes before its reply)."""
        self._current = item
        try:
            await self._step_item(item)
        finally:
            if self._current is item:
                self._current = None

    async def _step_item(self, item: _Item) -> None:
        """A step in three parts: decide (the table's step, or a refusal), commit (store
        before send: what happened, or an undo), deliver (publish, then reply)."""
        if self._doubt is not None and not await self._doubt_settled(item):
            return
        decided = await self._decide_item(item)
        if decided is None:
            return
        happened = await self._commit(item, *decided)
        if happened is not None:
            self._deliver(item, happened)

    async def _doubt_settled(self, item: _Item) -> bool:
        """Settle the step in doubt before stepping ``item``; False (``item`` answered)
        while the store still cannot tell."""
        try:
            await self._settle_doubt()
        except StoreError as exc:  # still cannot tell: nothing more happens here yet
            self._store_failed(exc)
            self._refuse(item, store_refusal(exc))
            return False
        return True

    async def _decide_item(self, item: _Item) -> tuple[c.Command, Step] | None:
        """The command ``item`` asks for and the table's step for it; None when ``item``
        was answered without a step (a query, a refusal, a failure: nothing moved)."""
        now = self.clock()
        record = item.record
        try:
            cmd = item.command if record is None else self._command_of(record)
            if cmd is None:  # a query, or a disconnect of someone already gone
                if record is not None and record.kind == "roads" and record.reply_to is not None:
                    self._roads(record.reply_to)
                elif record is not None and record.kind == "refresh":
                    await self._refresh([record.player])
                return None
            await self._prepare(cmd, record)
            return cmd, await self._decide_funded(cmd, now)
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

    async def _prepare(self, cmd: c.Command, record: CommandRecord | None) -> None:
        """What the store must hold or say before ``cmd`` is decided: a guest sitting
        down stored, a joining or sitting player's balance read afresh."""
        guest = None if record is None else record.fields.get(GUEST_FIELD)
        if isinstance(cmd, c.Sit | c.PlaceBet | c.SameBet) and isinstance(guest, dict):
            # A guest is written to the store (with their play money) only once the
            # rules let them sit or bet: a refused command keeps nothing of theirs.
            self.table.verify(cmd)
            balance = await self.store.ensure_player(
                cmd.player, str(guest["name"]), int(guest["funds"]), guest=True
            )
            self.wallet.load([(player_account(cmd.player), balance)])
        if isinstance(cmd, c.Join) and self.money is not None and self.money.confirms_holds:
            session = None if record is None else record.fields.get(c.WALLET_SESSION_FIELD)
            await self._mirror(cmd.player, session if isinstance(session, dict) else None)
        if isinstance(cmd, _FRESH_BALANCE):
            await self._refresh([cmd.player])
        if isinstance(cmd, c.Join) and isinstance(guest, dict):
            await self._welcome(cmd.player, int(guest["funds"]))

    async def _welcome(self, player: str, funds: int) -> None:
        """A guest not yet stored joins: the table decides their bets (and says what they
        may bet: their actions) with the play money their first bet stores them with
        (GAME_RULES §5), as their snapshot shows it. The store is still the truth: the
        bet's commit is refused if they had less."""
        account = player_account(player)
        if self.wallet.balance(account) == 0 and await self.store.player_name(player) is None:
            self.wallet.load([(account, funds)])

    async def _decide_funded(self, cmd: c.Command, now: float) -> Step:
        """:meth:`_decide`, once more after reading the player's balance afresh when a bet
        was refused for want of funds and the balance has changed."""
        try:
            return self._decide(cmd, now)
        except TableError as err:
            # The balance this table knew may be out of date (a deposit, another
            # table): read it, and try once more if it changed.
            if not (
                err.code == "insufficient_funds"
                and isinstance(cmd, _FUNDED)
                and await self._refresh([cmd.player])
            ):
                raise
            return self._decide(cmd, now)

    async def _commit(self, item: _Item, cmd: c.Command, step: Step) -> _Happened | None:
        """Store the step (its entries, the table's state, its records and events) in one
        commit with the owner's epoch; what happened, or None when it was not kept (the
        step undone, ``item`` answered)."""
        table = self.table
        happened = _Happened(cmd, step, list(step.events))
        entries = self.wallet.drain()
        records = table.drain_records()
        stored = step.stored
        if not (stored or entries or records):
            # Nothing to keep (a duplicate, a coalesced bend, or only a transient event:
            # shown, never stored; the next stored step's row holds what it changed).
            return happened
        guards = _guards(item.record) if isinstance(cmd, _FUNDED) else []
        w = self._to_write(entries, records, stored, guards, step.coup_in_progress)
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
            self._refuse(item, self._limit_reached(passed))
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
        in_coup: bool,
    ) -> _Write:
        """A step (or a burst) as the store will keep it: the table's state (spectators are
        not kept), the bettors' parts it changed (§5), its wallet calls."""
        state = self.table.to_state(spectators=False)
        parts = self.table.take_parts()
        calls = self._closing_calls(state, records)
        return _Write(entries, records, stored, state, parts, calls, guards, in_coup)

    async def _write(self, w: _Write) -> CommitResult:
        """One commit with the owner's epoch (raises what the store raises)."""
        table = self.table
        return await self.store.commit(
            **({"calls": w.calls} if w.calls else {}),  # type: ignore[arg-type]
            **({"guards": w.guards} if w.guards else {}),  # type: ignore[arg-type]
            entries=w.entries,
            table=TableRow(
                self.table_id,
                self.config,
                w.state,
                table.seq,
                table.phase == Phase.CLOSED,
                self.epoch,
                w.parts or None,
            ),
            records=w.records,
            events=[event.to_dict() for event in w.stored],
        )

    def _written(self, w: _Write, result: CommitResult) -> None:
        """Kept: the balances as the store has them, the step the last stored one."""
        self.wallet.load(result.balances.items())
        self._last_state = w.state
        _put_parts(self._parts, w.parts)
        if self.store_failures:
            self._store_recovered()
        if w.calls and self.on_calls is not None:
            self.on_calls(w.calls)  # credits and rollbacks stored: the courier sends them

    async def _not_written(self, w: _Write, exc: Exception) -> ChemmyError:
        """Nothing of the step was stored, so nothing of it may be sent (§8): back to the
        last stored step; the refusal says whether the store could not be reached
        (store_unavailable) or refused. Not reached, it may have kept the step all the
        same (a reply lost on the way back): the next step first looks (_settle_doubt)."""
        self._store_failed(exc)
        if isinstance(exc, StoreUnavailable):
            kept = dict(self._parts)
            _put_parts(kept, w.parts)
            self._doubt = _InDoubt(w.state, kept, w.stored, w.in_coup)
        await self._restore(w.entries)
        return store_refusal(exc)

    def _closing_calls(
        self, state: dict[str, Any], records: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """With a wallet that confirms holds, the credits and rollbacks of the step from
        ``_last_state`` to ``state`` (every wager closed: the bettors' without a seat too,
        whose wagers are in their stored parts)."""
        if self.money is None or not self.money.confirms_holds:
            return []
        return closing_calls(
            self._last_state,
            state,
            records,
            self.currency,
            self.clock(),
            game=self.game,
            parts=self._parts,
        )

    def _limit_reached(self, passed: LimitPassed) -> Refused:
        """The player's refusal for a bet the store held to their limit, in the table's
        money."""
        show = self.table.options.money
        kind, cap, left = passed.kind, passed.cap, passed.remaining
        return limit_reached(kind, cap, left, show(cap), show(left))

    def _deliver(self, item: _Item, happened: _Happened) -> None:
        """A stored step goes out: its events on the bus, then the sender's reply."""
        cmd, step, events = happened.command, happened.step, happened.events
        record = item.record
        self.failures, self.retry_at = 0, None
        self.in_coup = step.coup_in_progress
        if events or isinstance(cmd, c.Join | c.Leave | c.Disconnect):
            self._summary = None  # the lobby line may have changed (watchers count too)
        if events:
            self.bus.publish(self.table_id, events)
        if self.table.phase == Phase.CLOSED and not self.closed:
            self.closed = True  # the operator closed it: this actor's last step
            if self.on_closed is not None:
                self.on_closed(self)
        if record is not None:
            reply = self._answer(record, step)
            if reply is not None:
                # (the step's events, published above, come first at its gateway)
                self.bus.reply(dataclasses.replace(reply, after=(self.table_id, step.seq)))
        if item.done is not None and not item.done.done():
            item.done.set_result(events)
        if self.on_step is not None:
            self.on_step(self, cmd, events)

    # -- an operator's wallet (docs/wallet.md §3) -----------------------------------------
    @property
    def currency(self) -> str | None:
        return getattr(self.table.options, "currency", None)

    @property
    def game(self) -> str | None:
        """The game code the operator's wallet calls carry (``--wallet-game``)."""
        return None if self.money is None else self.money.game

    def _session_of(self, player: str) -> dict[str, Any] | None:
        """The session at the operator the player's wagers here were placed under."""
        p = self.table.players.get(player)
        return None if p is None else p.wallet_session

    async def _mirror(self, player: str, session: dict[str, Any] | None = None) -> None:
        """Set the player's mirror from the operator's balance (a join, in the session
        the join came from). A wallet that cannot say leaves it as it was: the debit
        decides anyway."""
        assert self.money is not None
        try:
            async with asyncio.timeout(self.wallet_timeout):  # the table waits meanwhile
                balance = await self.money.balance(player, self.currency, session)
        except (WalletError, TimeoutError) as exc:
            log.warning(
                "table %s: no balance for %s from the wallet (%s)", self.table_id, player, exc
            )
            return
        await sync_mirror(self.store, player, balance, [self.table_id])

    def _maybe_debit(self) -> None:
        """The table waits in DEBITING: debit its wagers (once per round here; a new
        owner, after a failover, debits again with the same ids)."""
        table = self.table
        if table.phase is not Phase.DEBITING or table.debiting is None or self.money is None:
            return
        if self._debited_round == table.round_id:
            return
        self._debited_round = table.round_id
        self._debits = asyncio.create_task(
            self._debit(table.round_id, {p: dict(b) for p, b in table.debiting.items()}),
            name=f"debits-{self.table_id}",
        )

    async def _debit(self, rid: str, debiting: dict[str, dict[str, int]]) -> None:
        """One debit per player, all at once; the table hears who stands (Debited). A
        debit with no clear answer by the deadline is refused and rolled back."""
        try:
            refused = await self._debit_all(rid, debiting)
        except Exception:  # a bug here must not leave the table waiting for ever
            log.exception("table %s: debiting round %s failed", self.table_id, rid)
            refused = dict.fromkeys(debiting, "wallet_unavailable")
            await self._roll_back(rid, debiting, "debit_unanswered")
        await self._tell_debited(rid, refused)

    async def _debit_all(self, rid: str, debiting: dict[str, dict[str, int]]) -> dict[str, str]:
        """Debit the round's wagers: player -> the refusal of each who does not stand.
        One deadline, ``--wallet-timeout`` from now, bounds all of it (docs/wallet.md §3,
        "Timeouts"): storing the calls, each player's earlier credits and rollbacks
        delivered first (§3, "The order of a player's calls"), each debit's tries."""
        assert self.money is not None
        money = self.money
        started = time.monotonic()
        deadline = started + self.wallet_timeout
        now = self.clock()
        calls = [
            debit_call(
                self.table_id,
                rid,
                pid,
                bets,
                self.currency,
                now,
                session=self._session_of(pid),
                game=self.game,
            )
            for pid, bets in sorted(debiting.items())
        ]
        await self._store_calls(calls)  # written before they are sent: reconcilable
        # A debit an owner before a crash gave up on (its rollback stored) stays refused:
        # sent again, its repeat would be answered ok while the rollback undoes it.
        given_up = await self._given_up(calls)
        refused = dict.fromkeys(sorted(call["player"] for call in given_up), "wallet_unavailable")
        calls = [call for call in calls if call not in given_up]
        # A player's credit or rollback the wallet has not answered goes first: their
        # debit never overtakes it, and one still unanswered at the deadline holds the
        # debit back (each player's debit goes as soon as their own calls are answered).
        first: Mapping[str, Awaitable[bool]] = {}
        if self.before_debits is not None and calls:
            first = await self.before_debits([call["player"] for call in calls], deadline)

        async def debit(call: dict[str, Any]) -> WalletAnswer | None:
            ahead = first.get(call["player"])
            if ahead is not None and not await ahead:
                return None  # held back: never sent
            return await money.debit(call, deadline)

        answers = await asyncio.gather(*(debit(call) for call in calls))
        if self.on_debits is not None:
            outcomes = [
                "not_sent" if a is None else a.status if a.clear else "retry" for a in answers
            ]
            self.on_debits(time.monotonic() - started, outcomes)
        unanswered: dict[str, dict[str, int]] = {}
        results: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for call, answer in zip(calls, answers, strict=True):
            pid = call["player"]
            changes: dict[str, Any] = {"updated": self.clock()}
            if answer is None:  # never sent; rolled back all the same, so it never can be
                refused[pid] = "wallet_unavailable"
                unanswered[pid] = debiting[pid]
                changes["error"] = HELD_BACK
                results.append((call, changes))
                continue
            changes.update(attempts=1, answer=answer.to_dict())
            if answer.ok:
                changes["state"] = "acknowledged"
            else:
                refused[pid] = (
                    answer.status if answer.status in c.DEBIT_REFUSALS else "wallet_unavailable"
                )
                changes["error"] = answer.status
                if answer.clear:
                    changes["state"] = "refused"
                else:  # it may yet land: roll it back, so that it cannot
                    unanswered[pid] = debiting[pid]
            results.append((call, changes))
        for call, changes in results:
            with contextlib.suppress(StoreError):
                stored = await self.store.wallet_call(call["transaction_id"])
                if stored is not None and stored["state"] == "pending":  # not rolled back
                    await self.store.update_wallet_call(call["transaction_id"], changes)
        if unanswered:
            await self._roll_back(rid, unanswered, "debit_unanswered")
        return refused

    async def _roll_back(self, rid: str, wagers: dict[str, dict[str, int]], reason: str) -> None:
        now = self.clock()
        calls = [
            rollback_call(
                self.table_id,
                rid,
                pid,
                sum(bets.values()),
                self.currency,
                now,
                reason,
                session=self._session_of(pid),
                game=self.game,
            )
            for pid, bets in sorted(wagers.items())
        ]
        await self._store_calls(calls)
        if self.on_calls is not None:
            self.on_calls(calls)

    async def _tell_debited(self, rid: str, refused: dict[str, str]) -> None:
        """Step Debited, again after a failed step (the store down), while the table
        still waits for this round's debits."""
        wait = BACKOFF_FIRST
        while not (self.closed or self.lost):
            table = self.table
            if table.phase is not Phase.DEBITING or table.round_id != rid:
                return
            try:
                await self.call(c.Debited(round_id=rid, refused=refused))
                return
            except ChemmyError as err:
                log.warning("table %s: debits of %s not stepped yet (%s)", self.table_id, rid, err)
            await asyncio.sleep(wait)
            wait = min(BACKOFF_MAX, wait * 2)

    async def _given_up(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The debits of ``calls`` whose rollback is stored already (reading again while
        the store cannot say)."""
        wait = BACKOFF_FIRST
        while True:
            try:
                return [
                    call
                    for call in calls
                    if await self.store.wallet_call(
                        transaction_id(call["round_id"], call["player"], "rollback")
                    )
                    is not None
                ]
            except StoreError as exc:
                log.warning("table %s: wallet calls not read yet (%s)", self.table_id, exc)
                await asyncio.sleep(wait)
                wait = min(BACKOFF_MAX, wait * 2)

    async def _store_calls(self, calls: list[dict[str, Any]]) -> None:
        """Store ``calls`` (pending), trying again while the store cannot."""
        wait = BACKOFF_FIRST
        while True:
            try:
                await self.store.commit(calls=calls)  # type: ignore[call-arg]
                return
            except StoreError as exc:
                log.warning("table %s: wallet calls not stored yet (%s)", self.table_id, exc)
                await asyncio.sleep(wait)
                wait = min(BACKOFF_MAX, wait * 2)

    # -- failures ------------------------------------------------------------------------
    def _lose(self, item: _Item) -> None:
        log.warning(
            "table %s: a newer owner took over (epoch %d is stale); stopping here",
            self.table_id,
            self.epoch,
            extra={"table": self.table_id, "epoch": self.epoch},
        )
        self.lost = True
        self.wallet.drain()
        self._refuse_waiting()  # this item (the current one) and the queued ones
        if self.on_lost is not None:
            self.on_lost(self)

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
            if self.on_store is not None:
                self.on_store(self, False)
        self._backoff()

    def _backoff(self) -> None:
        self.failures += 1
        delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (self.failures - 1))
        self.retry_at = self.clock() + delay

    def _store_recovered(self) -> None:
        log.warning(
            "table %s: the store works again after %d failed steps",
            self.table_id,
            self.store_failures,
            extra={"table": self.table_id},
        )
        self.store_failures = 0
        if self.on_store is not None:
            self.on_store(self, True)

    async def _settle_doubt(self) -> None:
        """Find out whether the step in doubt was kept: the stored row is either the
        last step's or the one in doubt (a commit is all or nothing). Not kept: it was
        undone rightly. Kept: it happened, so the table takes it up again, and its
        events go out now, late but in order, before anything newer; its sender, told
        ``store_unavailable``, retries with the same id and hears ``duplicate``. Raises
        :class:`StoreError` while the store cannot be read (still in doubt)."""
        doubt = self._doubt
        assert doubt is not None
        row = await self.store.load_table(self.table_id)
        self._doubt = None
        if row is None or row.state is None or dump_json(row.state) != dump_json(doubt.state):
            return
        log.warning(
            "table %s: a step whose commit seemed to fail was kept; taken up again",
            self.table_id,
            extra={"table": self.table_id},
        )
        old = self.table
        wallet = TableWallet(confirms_holds=self.wallet.confirms_holds)
        table = Table.from_state(doubt.state, wallet, doubt.parts)
        wallet.load(
            (await self.store.balances(self._accounts(table) | self._accounts(old))).items()
        )
        self._carry_spectators(old, table)
        self.table, self.wallet = table, wallet
        self._last_state = doubt.state
        self._parts = doubt.parts
        self.in_coup = doubt.coup_in_progress
        self._summary = None
        if doubt.events:
            self.bus.publish(self.table_id, doubt.events)
        if table.phase == Phase.CLOSED and not self.closed:
            self.closed = True
            if self.on_closed is not None:
                self.on_closed(self)

    async def _restore(self, undone: Sequence[Entry] = ()) -> None:
        """Undo the step that was not stored: the table as the last stored step left it,
        its wallet as it was before the step (the ``undone`` entries and any still
        pending taken back), then read afresh from the store. A store that cannot be
        read now (Redis down) leaves the wallet as it was before the step: never with
        the undone step's money in it. Nothing of the undone step survives, so the same
        command retried posts each entry once."""
        balances = dict(self.wallet.balances)
        for entry in [*undone, *self.wallet.drain()]:
            balances[entry.src] = balances.get(entry.src, 0) + entry.amount
            balances[entry.dst] = balances.get(entry.dst, 0) - entry.amount
        old = self.table
        wallet = TableWallet(balances, confirms_holds=self.wallet.confirms_holds)
        table = Table.from_state(self._last_state, wallet, self._parts)
        accounts = self._accounts(table) | self._accounts(old)
        with contextlib.suppress(StoreError):  # the balances as before the step will do
            wallet.load((await self.store.balances(accounts)).items())
        self._carry_spectators(old, table)
        self.table, self.wallet = table, wallet

    @staticmethod
    def _carry_spectators(old: Table, table: Table) -> None:
        """Spectators are not stored: whoever the stored step does not know was watching
        then (or came since), and still is."""
        for pid, p in old.players.items():
            if pid not in table.players:
                table.players[pid] = PlayerState(pid, p.name, connected=p.connected)


def _put_parts(
    stored: dict[str, dict[str, Any]], changed: Mapping[str, dict[str, Any] | None]
) -> None:
    """The bettors' parts as stored once ``changed`` is (None: a part that goes)."""
    for pid, part in changed.items():
        if part is None:
            stored.pop(pid, None)
        else:
            stored[pid] = part


def _guards(record: CommandRecord | None) -> list[LimitGuard]:
    """The limits a bet's record carries for its commit (:data:`GUARDS_FIELD`)."""
    if record is None:
        return []
    found = record.fields.get(GUARDS_FIELD) or []
    return [LimitGuard(record.player, str(k), int(cap), str(since)) for k, cap, since in found]


def store_refusal(exc: BaseException) -> Refused:
    """What the sender of a step the store did not keep hears: ``store_unavailable`` when
    the store cannot be reached or cannot write now (Redis down, the SQLite lock wait
    ran out), else ``store_failed``. Either way nothing of the step was kept; a retry
    with the same id is applied once."""
    if isinstance(exc, StoreUnavailable):
        return Refused("store_unavailable", "the store cannot be reached now; try again")
    return Refused("store_failed", "that could not be saved; try again")


def _plain(value: Any) -> Any:
    """Odds as plain JSON/msgpack-able data (no tuples of big ints, no numpy scalars)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if k != "exact"}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool | int | str) or value is None:
        return value
    return float(value)
