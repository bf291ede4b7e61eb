"""The shared table: a pure, deterministic state machine (GAME_RULES §3-§8).

Rules of this file:

- Every input is a command (:mod:`server.vocabulary.commands`) handed to
  :meth:`Table.handle` with the current time ``now``; every output is a
  :class:`~server.vocabulary.events.Step`: the events it caused, with gap-free per-table
  sequence numbers, and what the shell needs to know after it.
- A command the rules do not allow raises :class:`~server.vocabulary.errors.TableError`
  and changes nothing. ``handle`` checks the phase once against
  :data:`server.table.rules.ALLOWED`; then the command's *check* (who, how much,
  which card, raising what the rules' refusals return) runs before its *do* changes
  anything, both named in :data:`server.table.dispatch.HANDLERS`.
  :meth:`Table.verify` and :meth:`Table.can` run the same checks and change nothing
  (pokerkit's verify / can / do).
- Time comes only from ``now``; randomness only from the shoe's seed, which arrives in
  a :class:`~server.vocabulary.commands.StartShoe` command. No I/O, no clock, no global
  random: the same commands at the same times always give the same events.
- Money moves only through the injected :class:`~server.ledger.accounts.Wallet`, as
  ledger entries keyed by round, player and area (or the table's counter); a refused
  transfer raises, it is never ignored.
- Hidden cards never enter an event's public data; a turner's view of a squeezed card
  travels in the event's private overlay, and what each viewer sees is decided in
  :mod:`server.table.views`.

The phases and the flow between them are drawn in :mod:`.flow`'s docstring; where each
command's check and do live, in :mod:`.dispatch`'s; the other modules, in the package's.
This class keeps the way in (``handle``, ``verify``, ``can``), the felt (:mod:`.felt`)
and the money it shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from server.engine.roads import Result, Roads
from server.engine.shoe import Shoe
from server.ledger.accounts import Wallet, stake_account
from server.vocabulary import commands as c
from server.vocabulary.errors import TableError
from server.vocabulary.events import EVENT_KINDS, TRANSIENT_KINDS, Event, Outcome, Step
from server.vocabulary.options import TableOptions

from . import betting, flow, persistence, rules, settlement, turning
from .actions import SentActions, watch
from .dispatch import HANDLERS, Handler
from .felt import Felt
from .state import Contributions, CoupState, Holding, Modes, Offer, Phase, PlayerState

__all__ = ["Phase", "Table"]

RECENT_IDS = 64  # command ids remembered per player for idempotent retries
# Players no longer at the table whose ids are still remembered (a retry after they
# left, or across a restart that sent them away), oldest forgotten first; as many
# spectators' are stored with the row (persistence.py).
RECENT_ID_PLAYERS = persistence.RECENT_ID_PLAYERS


class Table:
    """One table: ``handle`` commands; see the module docstring."""

    def __init__(
        self,
        table_id: str,
        options: TableOptions,
        wallet: Wallet,
        *,
        shoes_before: int = 0,
        seq_before: int = 0,
    ) -> None:
        """``shoes_before``: shoes an earlier table of the same id dealt, so that round
        ids (and with them ledger keys) and shoe numbers are never used twice;
        ``seq_before``: the last ``seq`` of that earlier table, so that its events are
        numbered on from there (no gateway, log or client can take one for the
        other's)."""
        self.table_id = table_id
        self.options = options
        self._options_dict = options.to_dict()  # options never change; asdict is slow
        self.open_areas: tuple[str, ...] = tuple(a.value for a in options.paytable.areas())
        self.area_max = {a: options.limits.max_for(a) for a in self.open_areas}
        self.most_on_an_area = max(self.area_max.values(), default=0)  # (actions' funds)
        self.wallet = wallet
        self.seq = seq_before
        self.phase = Phase.SHUFFLE
        self.deadline: float | None = None
        self.players: dict[str, PlayerState] = {}
        self.shoe: Shoe | None = None
        self.shoe_no = shoes_before
        # The shoe's coups and results: only appended to, or replaced whole (the stored
        # state's copies of them are made once each: persistence.Copies).
        self.shoe_coups: list[dict[str, Any]] = []
        self.results: list[Result] = []
        self.last_coup_next = False
        self.burned = False
        #: Who holds the shoe, and whether it is to be offered (flow.NEXT reads it).
        self.holding: Holding = Holding()
        self.offer: Offer | None = None
        self.anchor_seat = 0
        self.coup: CoupState | None = None
        #: Betting closed and the wallet is debiting these wagers (player -> area ->
        #: amount) before the cards: only with a wallet that confirms holds.
        self.debiting: dict[str, dict[str, int]] | None = None
        self.coup_no = 0
        self.round_open = False
        self.counter = 0
        #: Paused by the operator (no new coup starts), draining (no new bets).
        self.modes: Modes = Modes()
        self.recent_ids: dict[str, list[str]] = {}
        self.last_result: dict[str, Any] | None = None
        self.cut_by: dict[str, str | None] | None = None  # who cut this shoe (§4, §6)
        self.cut_offered_to: str | None = None
        #: The players' contributions to a seeded shoe until it ends (fairness.md §9).
        self.contributions: Contributions | None = None
        # Steps the croupier did for a player between coups (a shoe offer or a cut that
        # timed out): the next round's record carries them (§6, §8).
        self.between_on_behalf: list[dict[str, Any]] = []
        # The actions last sent to each tracked player (server.table.actions).
        self.sent_actions = SentActions()
        self._seated: list[PlayerState] | None = None  # seated(), until a seat changes
        self._free: tuple[list[PlayerState], list[int]] | None = None  # free_seats()'s
        self._seats: tuple[list[PlayerState], tuple[int | None, ...]] | None = None  # seats()'s
        self.chips: Felt = Felt()  # the chips on the felt (§5, §7), kept as they are laid
        # Bettors' parts, stored apart from the row (persistence.py): changed; stored.
        self._dirty: set[str] = set()
        self._parted: set[str] = set()
        self._copies = persistence.Copies()  # what to_state need not copy again
        self._roads: Roads | None = None  # made from results when first asked for
        self._events: list[Event] = []
        self._records: list[dict[str, Any]] = []
        self.now = 0.0
        self.deferred: dict[str, str] | None = None  # betting.defer: whose chips, what change
        self.deferred_watch: tuple[Any, ...] = ()

    # ------------------------------------------------------------------ public API
    def handle(self, cmd: c.Command, now: float) -> Step:
        """Apply one command at time ``now``; return the :class:`Step` it made.

        Raises TableError (state unchanged) when the rules refuse it. A command whose
        ``id`` this player already used changes nothing and is a duplicate step.
        """
        if cmd.id is not None and cmd.id in self.recent_ids.get(cmd.player, ()):
            return Step((), True, self.seq, self.in_coup)
        handler = self._verify(cmd)
        ctx = handler.check(self, cmd)
        self._events = []
        self.now = now
        self._dirty.add(cmd.player)  # (their command ids, at least, change)
        watched = watch(self)
        outcome: Outcome = handler.do(self, cmd, ctx)
        flow.advance(self)
        if cmd.id is not None:
            self._remember(cmd.player, cmd.id)
        if any(not e.transient for e in self._events):  # (a bend changes no one's actions)
            self.sent_actions.refresh(self, cmd, watched, self._events)
        if cmd.player not in self.players:  # gone (a spectator leaves without an event)
            self.sent_actions.forget(cmd.player)
        events, self._events = tuple(self._events), []
        return Step(events, outcome is Outcome.ALREADY, self.seq, self.in_coup)

    def defer_bettors(self) -> None:  # (until flush_bettors: betting.defer)
        betting.defer(self)

    def flush_bettors(self, cmd: c.Command) -> Step:
        """The ``bets`` of the bettors deferred, ``cmd`` the burst's last command."""
        self._events = []
        told = betting.flush(self)
        if self._events:  # (their actions, and anyone's the burst changed)
            self.sent_actions.refresh(self, cmd, self.deferred_watch, self._events, told)
        events, self._events = tuple(self._events), []
        return Step(events, not events, self.seq, self.in_coup)

    def verify(self, cmd: c.Command) -> None:
        """Raise the TableError ``handle`` would raise for ``cmd`` now; change nothing.
        (A repeated command id is not a refusal: ``handle`` answers it as a duplicate.)
        A caller may then do what the command needs done first, such as storing a guest
        who may sit."""
        if cmd.id is not None and cmd.id in self.recent_ids.get(cmd.player, ()):
            return
        self._verify(cmd).check(self, cmd)

    def can(self, cmd: c.Command) -> bool:
        """Whether ``handle`` would accept ``cmd`` now; changes nothing."""
        try:
            self.verify(cmd)
        except TableError:
            return False
        return True

    def actions(self, pid: str) -> dict[str, Any]:
        """The wire commands ``pid`` may send now, with their bounds (``you.actions``)."""
        return rules.actions(self, pid)

    def drain_records(self) -> list[dict[str, Any]]:
        """Round and shoe records made since the last call (for the store)."""
        out, self._records = self._records, []
        return out

    @property
    def next_deadline(self) -> float | None:
        """When the croupier should next send a Tick (only a seat has a grace period)."""
        times = [p.grace_deadline for p in self.seated() if p.grace_deadline is not None]
        if self.deadline is not None:
            times.append(self.deadline)
        if self.coup is not None and self.coup.deadline is not None:
            times.append(self.coup.deadline)
        if self.offer is not None:
            times.append(self.offer.deadline)
        times += [due for due in [turning.bends_due(self)] if due is not None]
        return min(times) if times else None

    @property
    def wants_shoe(self) -> bool:
        return self.phase is Phase.SHUFFLE

    def seated(self) -> list[PlayerState]:
        """The seated players in seat order (a list the caller must not change)."""
        if self._seated is None:
            self._seated = sorted(
                (p for p in self.players.values() if p.seat is not None), key=lambda p: p.seat or 0
            )
        return self._seated

    def seats(self) -> tuple[int | None, ...]:
        """The seats taken, in seat order (made again only when a seat changes: the
        table's watch reads it before and after every step, actions.watch)."""
        seated = self.seated()
        if self._seats is None or self._seats[0] is not seated:
            self._seats = (seated, tuple(p.seat for p in seated))
        return self._seats[1]

    def free_seats(self) -> list[int]:
        seated = self.seated()  # (made again only when a seat changes: each watcher's sit)
        if self._free is None or self._free[0] is not seated:
            taken = {p.seat for p in seated}
            self._free = (seated, [s for s in range(1, self.options.seats + 1) if s not in taken])
        return list(self._free[1])

    def roads(self) -> dict[str, Any]:
        """The current shoe's roads (§9), made when someone looks (not at every coup)."""
        if self._roads is None:
            self._roads = Roads.of(self.results)
        return self._roads.to_dict()

    @property
    def cutter(self) -> str | None:
        """§4: the shoe holder cuts, or with the house holding, the first seated player."""
        if self.holder is not None:
            return self.holder
        seated = self.seated()
        return seated[0].id if seated else None

    # ------------------------------------------------------------------ the records' flags
    # Read here; changed only through ``holding`` and ``modes`` (state.Holding, Modes).
    @property
    def holder(self) -> str | None:
        return self.holding.holder  # the player holding the shoe (§5)

    @property
    def house_holds(self) -> bool:
        return self.holding.house

    @property
    def holder_coups(self) -> int:
        return self.holding.coups

    @property
    def offer_needed(self) -> bool:
        return self.holding.to_offer

    @property
    def shoe_unsettled(self) -> bool:
        """The shoe is being offered, or must be (§5): no coup may be dealt until it is
        settled (the SHOE_OFFER phase of :data:`server.table.flow.NEXT`)."""
        return self.offer is not None or self.holding.needs_offer

    @property
    def paused(self) -> bool:
        return self.modes.paused  # the operator paused the table: no new coup

    @property
    def draining(self) -> bool:
        return self.modes.draining  # the server is closing: no new bets

    # ------------------------------------------------------------------ the felt (§5, §7)
    def lay(self, p: PlayerState, bets: dict[str, int]) -> None:
        """``p``'s chips become ``bets`` (the caller moves the stake): the felt follows."""
        self.chips.lay(p, bets)
        self._dirty.add(p.id)

    def bettor_count(self) -> int:  # bettors without a seat in (Felt.bettors)
        return self.chips.bettors(self.seated())

    def felt(self) -> dict[str, Any]:  # what everyone sees of the felt (§5)
        return self.chips.public(self.seated())

    def is_bettor(self, p: PlayerState) -> bool:
        """No seat, and chips on the felt or a wager in play (§5): stored in a part."""
        return p.seat is None and (bool(p.bets) or self.wager_in_play(p))

    def touch_all(self, pids: Iterable[str]) -> None:
        self._dirty.update(pids)  # whose stored part (a bettor's) is to write again

    # ------------------------------------------------------------------ money
    def available(self, pid: str) -> int:
        """``player:<id>``: the player's money on no table, what they may still place."""
        return self.wallet.balance("player:" + pid)

    def stake(self, pid: str) -> int:
        """The chips ``pid`` has placed here and not yet held (``stake:<table>:<id>``)."""
        return self.wallet.balance(stake_account(self.table_id, pid))

    def balance(self, pid: str) -> int:
        """A player's balance as this table shows it: money on no table plus the chips
        placed here (for one table, the same figure as before chips moved any money)."""
        return self.available(pid) + self.stake(pid)

    def money(self, pid: str) -> dict[str, int]:
        """A player's own money, for the private part of an event and their snapshot:
        ``balance`` (:meth:`balance`) and ``available`` (:meth:`available`)."""
        available = self.available(pid)
        return {"balance": available + self.stake(pid), "available": available}

    def move_stake(self, p: PlayerState, amount: int) -> None:
        """Move ``amount`` from ``player:<id>`` to this table's stake (``amount`` < 0:
        back), so the stake is always the chips on the felt (§7). The funds were checked
        before anything changed; a refused transfer raises and is never ignored."""
        if amount == 0:
            return
        self.counter += 1
        settlement.move_stake(self.wallet, self.table_id, self.round_id, self.counter, p.id, amount)

    # ------------------------------------------------------------------ the checks
    def _verify(self, cmd: c.Command) -> Handler[Any, Any]:
        """The one phase check (rules.ALLOWED); returns the command's check and do
        (:data:`~server.table.dispatch.HANDLERS`)."""
        kind = type(cmd)
        handler = HANDLERS.get(kind)
        if handler is None:
            raise TableError("unknown_command", f"the table does not take {kind.__name__}")
        if kind in rules.CROUPIER_ONLY and cmd.player != c.CROUPIER:
            raise TableError("not_allowed", "only the croupier does that")
        if self.draining and kind in rules.DRAINING_REFUSES:
            raise TableError("draining", "the server is closing; no new bets")
        if kind not in rules.ALLOWED[self.phase]:
            if self.phase is Phase.CLOSED:
                raise TableError("table_closed", "this table is closed")
            raise TableError("wrong_phase", f"not now: the table is in {self.phase.value}")
        return handler

    def joined_player(self, pid: str) -> PlayerState:
        p = self.players.get(pid)
        if p is None:
            raise TableError("not_joined", "join the table first")
        return p

    def seated_player(self, pid: str) -> PlayerState:
        p = self.joined_player(pid)
        if p.seat is None:
            raise TableError("not_seated", "take a seat first")
        return p

    @property
    def in_coup(self) -> bool:
        """A coup is being dealt, or its wagers debited (a drain waits for it)."""
        return self.coup is not None or self.debiting is not None

    def wager_in_play(self, p: PlayerState) -> bool:
        """Whether ``p``'s wager (or the shoe they hold) is in the coup being dealt."""
        coup, debiting = self.coup, self.debiting
        if debiting is not None and (p.id in debiting or p.id == self.holder):
            return True
        return coup is not None and (p.id in coup.held or p.id == coup.holder)

    def open_area(self, name: str) -> str:
        """``name``, if it is a bet area open at this table (``bad_area`` if not)."""
        if name not in self.open_areas:
            raise TableError("bad_area", f"{name} is not open at this table")
        return name

    # ------------------------------------------------------------------ emitting
    def emit(
        self, kind: str, data: dict[str, Any], private: dict[str, dict[str, Any]] | None = None
    ) -> None:
        """Add an event. Its ``data`` and ``private`` are the event's own: every caller
        builds them fresh and copies any container of the table's state it puts in
        them, so changing an event can never change the table (tests/table check it
        after every step)."""
        if kind in TRANSIENT_KINDS:  # shown, never stored: no seq of its own
            assert not private, kind
            self._events.append(Event(self.seq, kind, data, None, True))
            return
        assert kind in EVENT_KINDS, kind  # a new kind is documented first
        self.seq += 1
        self._events.append(Event(self.seq, kind, data, private or None))

    def _remember(self, pid: str, cid: str) -> None:
        """Keep ``cid`` among ``pid``'s last ids, for whoever sent it (docs/protocol.md
        §5): kept when they leave and across restarts, oldest departed forgotten first."""
        # Most recent last; a new list, never changed in place: the rows share it (_row_ids).
        self.recent_ids[pid] = [*self.recent_ids.pop(pid, ()), cid][-RECENT_IDS:]
        if len(self.recent_ids) > RECENT_ID_PLAYERS + len(self.players):
            for old in list(self.recent_ids):
                if len(self.recent_ids) <= RECENT_ID_PLAYERS + len(self.players):
                    break
                if old not in self.players:
                    del self.recent_ids[old]

    # ------------------------------------------------------------------ the shoe
    @property
    def round_id(self) -> str:
        return f"{self.table_id}-{self.shoe_no}-{self.coup_no}"

    # ------------------------------------------------------------------ storage
    def to_state(self, *, spectators: bool = True) -> dict[str, Any]:
        """The whole internal state, secrets included: for the store only, never a client
        (:func:`server.table.persistence.to_state`; ``spectators=False``: the row)."""
        return persistence.to_state(self, spectators=spectators)

    def take_parts(self) -> dict[str, dict[str, Any] | None]:
        """The bettors' parts to store with the row (:func:`persistence.take_parts`)."""
        return persistence.take_parts(self)

    @classmethod
    def from_state(
        cls,
        state: dict[str, Any],
        wallet: Wallet,
        parts: Mapping[str, dict[str, Any]] | None = None,
    ) -> Table:
        """Rebuild a table from :meth:`to_state` (:func:`persistence.from_state`)."""
        return persistence.from_state(cls, state, wallet, parts)
