"""The shared table: a pure, deterministic state machine (GAME_RULES §3-§8).

Rules of this file:

- Every input is a command (:mod:`server.table.commands`) handed to
  :meth:`Table.handle` with the current time ``now``; every output is a
  :class:`~server.table.events.Step`: the events it caused, with gap-free per-table
  sequence numbers, and what the shell needs to know after it.
- A command the rules do not allow raises :class:`~server.table.errors.TableError`
  and changes nothing. ``handle`` checks the phase once against
  :data:`server.table.rules.ALLOWED`; then each command's *check* (``_check_<name>``:
  who, how much, which card) runs before its *do* (``_do_<name>``) changes anything.
  :meth:`Table.verify` and :meth:`Table.can` run the same checks and change nothing
  (pokerkit's verify / can / do).
- Time comes only from ``now``; randomness only from the shoe's seed, which arrives in
  a :class:`~server.table.commands.StartShoe` command. No I/O, no clock, no global
  random: the same commands at the same times always give the same events.
- Money moves only through the injected :class:`~server.table.wallet.Wallet`, as
  ledger entries keyed by round, player and area (or the table's counter); a refused
  transfer raises, it is never ignored.
- Hidden cards never enter an event's public data; a turner's view of a squeezed card
  travels in the event's private overlay, and what each viewer sees is decided in
  :mod:`server.table.views`.

The phases (:class:`~server.table.state.Phase`) and the flow between them::

    SHUFFLE --StartShoe--> SHOE_OFFER (no holder) | CUT (the holder keeps the shoe)
                           | WAITING (nobody seated)
    WAITING --someone sits--> SHOE_OFFER | CUT | BETTING (where it left off)
    SHOE_OFFER --accepted, or every seated player declined (the house holds)-->
                           CUT (a new shoe) | BETTING (between coups)
    CUT --cut, or the croupier's on timeout; the burn--> BETTING
    BETTING --everyone DONE with a bet, or the timer with a bet--> TURN
    BETTING --the holder passes, stands up or leaves--> SHOE_OFFER
    TURN --settled--> BETTING (next coup) | SHOE_OFFER (the shoe passes)
                      | SHUFFLE (the shoe is over: seed revealed)
    SHOE_OFFER | CUT | BETTING --the last seated player goes--> WAITING
    any phase --CloseTable--> CLOSED

(A stacked shoe has no cut and no burn.) Within BETTING
(:class:`~server.table.state.BettingStep`): OPEN, the timer running, or
WAITING_FOR_BET, no deadline until a first bet (§7). Within TURN, each coup stage
(:class:`~server.table.state.CoupStage`: PLAYER, BANKER, PLAYER_THIRD, BANKER_THIRD)
has two moments (:class:`~server.table.state.TurnStep`): CHOOSE (TOSS or pick a
squeeze) and SQUEEZE (turn the cards one at a time).

``_advance`` is the one place that moves the table on after any command; the coup's
stages live in ``_advance_coup``. Settlement and records are in
:mod:`server.table.settlement`, storage in :mod:`server.table.persistence`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.engine.payouts import Area
from server.engine.roads import Result, Roads
from server.engine.shoe import Shoe, ShoeError, check_cut, timeout_cut

from . import commands as c
from . import persistence, rules, settlement, turning
from .actions import SentActions, watch
from .errors import TableError, refuse
from .events import EVENT_KINDS, Event, Step
from .options import TableOptions
from .state import BettingStep, CardSlot, CoupState, Offer, Phase, PlayerState
from .wallet import Wallet, held_account, player_account, stake_account

__all__ = ["Phase", "Table"]

RECENT_IDS = 64  # command ids remembered per player for idempotent retries
# Players no longer at the table whose ids are still remembered (a retry after they
# left, or across a restart that sent them away), oldest forgotten first.
RECENT_ID_PLAYERS = 256
PROGRESS_INTERVAL = 0.25  # squeeze progress: at most 4 updates a second per card


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
        self.wallet = wallet
        self.seq = seq_before
        self.phase = Phase.SHUFFLE
        self.deadline: float | None = None
        self.players: dict[str, PlayerState] = {}
        self.shoe: Shoe | None = None
        self.shoe_no = shoes_before
        self.shoe_coups: list[dict[str, Any]] = []
        self.results: list[Result] = []
        self.last_coup_next = False
        self.burned = False
        self.holder: str | None = None
        self.house_holds = False
        self.holder_coups = 0
        self.offer_needed = True
        self.offer: Offer | None = None
        self.anchor_seat = 0
        self.coup: CoupState | None = None
        self.coup_no = 0
        self.round_open = False
        self.counter = 0
        self.draining = False
        self.recent_ids: dict[str, list[str]] = {}
        self.last_result: dict[str, Any] | None = None
        self.cut_by: dict[str, str | None] | None = None  # who cut this shoe (§4, §6)
        self.cut_offered_to: str | None = None
        # Steps the croupier did for a player between coups (a shoe offer or a cut that
        # timed out): the next round's record carries them (§6, §8).
        self.between_on_behalf: list[dict[str, Any]] = []
        # The actions last sent to each tracked player (server.table.actions).
        self.sent_actions = SentActions()
        self._seated: list[PlayerState] | None = None  # seated(), until a seat changes
        self._roads: Roads | None = None  # made from results when first asked for
        self._events: list[Event] = []
        self._records: list[dict[str, Any]] = []
        self._now = 0.0

    # ------------------------------------------------------------------ public API
    def handle(self, cmd: c.Command, now: float) -> Step:
        """Apply one command at time ``now``; return the :class:`Step` it made.

        Raises TableError (state unchanged) when the rules refuse it. A command whose
        ``id`` this player already used changes nothing and is a duplicate step.
        """
        if cmd.id is not None and cmd.id in self.recent_ids.get(cmd.player, ()):
            return Step((), True, self.seq, self.coup is not None)
        check, do = self._verify(cmd)
        ctx = check(self, cmd)
        self._events = []
        self._now = now
        watched = watch(self)
        unchanged = do(self, cmd, ctx)
        self._advance()
        if cmd.id is not None:
            self._remember(cmd.player, cmd.id)
        if self._events:
            self.sent_actions.refresh(self, cmd, watched, self._events)
        events, self._events = tuple(self._events), []
        return Step(events, unchanged, self.seq, self.coup is not None)

    def verify(self, cmd: c.Command) -> None:
        """Raise the TableError ``handle`` would raise for ``cmd`` now; change nothing.
        (A repeated command id is not a refusal: ``handle`` answers it as a duplicate.)"""
        check, _ = self._verify(cmd)
        check(self, cmd)

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
        """When the croupier should next send a Tick."""
        times = [p.grace_deadline for p in self.players.values() if p.grace_deadline is not None]
        if self.deadline is not None:
            times.append(self.deadline)
        if self.coup is not None and self.coup.deadline is not None:
            times.append(self.coup.deadline)
        if self.offer is not None:
            times.append(self.offer.deadline)
        return min(times) if times else None

    @property
    def wants_shoe(self) -> bool:
        return self.phase is Phase.SHUFFLE

    @property
    def betting_step(self) -> BettingStep | None:
        """In BETTING: OPEN (the timer runs) or WAITING_FOR_BET (§7); None otherwise."""
        if self.phase is not Phase.BETTING:
            return None
        return BettingStep.OPEN if self.deadline is not None else BettingStep.WAITING_FOR_BET

    def seated(self) -> list[PlayerState]:
        """The seated players in seat order (a list the caller must not change)."""
        if self._seated is None:
            self._seated = sorted(
                (p for p in self.players.values() if p.seat is not None), key=_seat_key
            )
        return self._seated

    def free_seats(self) -> list[int]:
        taken = {p.seat for p in self.players.values() if p.seat is not None}
        return [s for s in range(1, self.options.seats + 1) if s not in taken]

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

    # ------------------------------------------------------------------ money
    def available(self, pid: str) -> int:
        """``player:<id>``: the player's money on no table, what they may still place."""
        return self.wallet.balance("player:" + pid)

    def _stake(self, pid: str) -> int:
        """The chips ``pid`` has placed here and not yet held (``stake:<table>:<id>``)."""
        return self.wallet.balance(stake_account(self.table_id, pid))

    def _balance(self, pid: str) -> int:
        """A player's balance as this table shows it: money on no table plus the chips
        placed here (for one table, the same figure as before chips moved any money)."""
        return self.available(pid) + self._stake(pid)

    def money(self, pid: str) -> dict[str, int]:
        """A player's own money, for the private part of an event and their snapshot:
        ``balance`` (:meth:`_balance`) and ``available`` (:meth:`available`)."""
        available = self.available(pid)
        return {"balance": available + self._stake(pid), "available": available}

    def _move_stake(self, p: PlayerState, amount: int) -> None:
        """Move ``amount`` from ``player:<id>`` to this table's stake (``amount`` < 0:
        back), so the stake is always the chips on the felt (§7). The funds were checked
        before anything changed; a refused transfer raises and is never ignored."""
        if amount == 0:
            return
        self.counter += 1
        player, stake = player_account(p.id), stake_account(self.table_id, p.id)
        rid = self._round_id
        if amount > 0:
            key = f"{rid}:{p.id}:stake:{self.counter}"
            self.wallet.transfer(key, player, stake, amount, "stake", rid)
        else:
            key = f"{rid}:{p.id}:unstake:{self.counter}"
            self.wallet.transfer(key, stake, player, -amount, "unstake", rid)

    # ------------------------------------------------------------------ the checks
    def check(self, cmd: c.Command) -> None:
        """Raise the TableError :meth:`handle` would raise for ``cmd``, changing nothing
        (a caller may then do what the command needs done first, such as storing a
        guest who may sit)."""
        if cmd.id is not None and cmd.id in self.recent_ids.get(cmd.player, ()):
            return
        check, _do = self._verify(cmd)
        check(self, cmd)

    def _verify(self, cmd: c.Command) -> tuple[Callable[..., Any], Callable[..., bool]]:
        """The one phase check (rules.ALLOWED); returns the command's check and do."""
        kind = type(cmd)
        pair = _HANDLERS.get(kind)
        if pair is None:
            raise TableError("unknown_command", f"the table does not take {kind.__name__}")
        if kind in rules.CROUPIER_ONLY and cmd.player != c.CROUPIER:
            raise TableError("not_allowed", "only the croupier does that")
        if self.draining and kind in rules.DRAINING_REFUSES:
            raise TableError("draining", "the server is closing; no new bets")
        if kind not in rules.ALLOWED[self.phase]:
            if self.phase is Phase.CLOSED:
                raise TableError("table_closed", "this table is closed")
            raise TableError("wrong_phase", f"not now: the table is in {self.phase.value}")
        return pair

    def _player(self, pid: str) -> PlayerState:
        p = self.players.get(pid)
        if p is None:
            raise TableError("not_joined", "join the table first")
        return p

    def _seated_player(self, pid: str) -> PlayerState:
        p = self._player(pid)
        if p.seat is None:
            raise TableError("not_seated", "take a seat first")
        return p

    def wager_in_play(self, p: PlayerState) -> bool:
        """Whether ``p``'s wager (or the shoe they hold) is in the coup being dealt."""
        coup = self.coup
        return coup is not None and (p.id in coup.held or p.id == coup.holder)

    def _check_can_stand(self, p: PlayerState) -> None:
        refuse(rules.stand_refusal(self, p))

    def _area(self, name: str) -> str:
        if name not in self.open_areas:
            raise TableError("bad_area", f"{name} is not open at this table")
        return name

    def same_bets(self, p: PlayerState) -> dict[str, int]:
        """``p``'s previous round's bets on the areas open here ("SAME BET", §7)."""
        return rules.same_bets(self, p)

    def _check_offeree(self, pid: str) -> PlayerState:
        p = self._seated_player(pid)
        refuse(rules.offer_refusal(self, pid))
        return p

    # ------------------------------------------------------------------ emitting
    def _emit(
        self, kind: str, data: dict[str, Any], private: dict[str, dict[str, Any]] | None = None
    ) -> None:
        """Add an event. Its ``data`` and ``private`` are the event's own: every caller
        builds them fresh and copies any container of the table's state it puts in
        them, so changing an event can never change the table (tests/table check it
        after every step)."""
        assert kind in EVENT_KINDS, kind  # a new kind is documented first
        self.seq += 1
        self._events.append(Event(self.seq, kind, data, private or None))

    def _remember(self, pid: str, cid: str) -> None:
        """Keep ``cid`` among ``pid``'s last ids, for whoever sent it (docs/protocol.md
        §5): kept when they leave and across restarts, oldest departed forgotten first."""
        ids = self.recent_ids.pop(pid, [])
        ids.append(cid)
        del ids[:-RECENT_IDS]
        self.recent_ids[pid] = ids  # most recent last
        if len(self.recent_ids) > RECENT_ID_PLAYERS + len(self.players):
            for old in list(self.recent_ids):
                if len(self.recent_ids) <= RECENT_ID_PLAYERS + len(self.players):
                    break
                if old not in self.players:
                    del self.recent_ids[old]

    # ------------------------------------------------------------------ players
    def _check_join(self, cmd: c.Join) -> bool:
        if cmd.player in self.players:
            if cmd.rejoin:
                return True
            raise TableError("already_joined", "you are already at this table")
        return False

    def _do_join(self, cmd: c.Join, rejoin: bool) -> bool:
        if rejoin:
            return self._back(self.players[cmd.player])
        name = (cmd.name or cmd.player)[:32]
        # Watching is not news: no event, so an audience of thousands arriving costs
        # each of them nothing (the lobby and snapshots count spectators). Sitting is.
        self.players[cmd.player] = PlayerState(cmd.player, name)
        return False

    def _check_leave(self, cmd: c.Leave) -> PlayerState:
        p = self._player(cmd.player)
        if p.seat is not None:
            self._check_can_stand(p)
        return p

    def _do_leave(self, cmd: c.Leave, p: PlayerState) -> bool:
        self._stand(p, "left")  # a seated player's leaving is news: "stood", reason "left"
        del self.players[p.id]
        return False

    def _check_sit(self, cmd: c.Sit) -> tuple[PlayerState, int]:
        p = self._player(cmd.player)
        if p.seat is not None:
            raise TableError("already_seated", f"you are already in seat {p.seat}")
        free = self.free_seats()
        if cmd.seat is None:
            if not free:
                raise TableError("table_full", "every seat is taken")
            return p, free[0]
        if cmd.seat > self.options.seats:
            raise TableError("bad_seat", f"seats are 1-{self.options.seats}")
        if cmd.seat not in free:
            raise TableError("seat_taken", f"seat {cmd.seat} is taken")
        return p, cmd.seat

    def _do_sit(self, cmd: c.Sit, ctx: tuple[PlayerState, int]) -> bool:
        p, seat = ctx
        p.seat = seat
        self._seated = None
        p.connected = True
        p.grace_deadline = None
        self._emit(
            "sat",
            {"player": p.id, "name": p.name, "seat": seat, "free_seats": self.free_seats()},
            {p.id: self.money(p.id)},
        )
        return False

    def _check_stand(self, cmd: c.Stand) -> PlayerState:
        p = self._seated_player(cmd.player)
        self._check_can_stand(p)
        return p

    def _do_stand(self, cmd: c.Stand, p: PlayerState) -> bool:
        self._stand(p, "stood")
        return False

    def _stand(self, p: PlayerState, reason: str) -> None:
        """Take a player out of their seat: chips placed come back, the shoe moves on."""
        if p.seat is None:
            return
        seat = p.seat
        if p.bets:  # placed chips come back: stake -> player
            p.bets.clear()
            p.bet_order.clear()
            self._move_stake(p, -self._stake(p.id))
        p.seat, p.done, p.leaving, p.grace_deadline = None, False, False, None
        self._seated = None
        self._emit(
            "stood",
            {"player": p.id, "seat": seat, "reason": reason, "free_seats": self.free_seats()},
        )
        if self.holder == p.id:
            self._lose_shoe(p, reason, seat)
        if self.offer is not None and self.offer.current == p.id:
            self._declined(p.id, seat, timeout=False)
        if (
            self.phase is Phase.BETTING
            and self.round_open
            and self.coup is None
            and self.offer is None
            and not self.offer_needed
        ):
            self._maybe_close_betting()  # §7: the one not yet done may have just left

    def _gone(self, p: PlayerState) -> None:
        """Grace ran out (§5): the seat is lost and the player, still away, leaves."""
        self._stand(p, "timeout")
        del self.players[p.id]

    def _lose_shoe(self, p: PlayerState, reason: str, seat: int | None = None) -> None:
        """§5: the holder passes, stands, leaves or times out: offer the shoe onward."""
        self._emit("shoe_passed", {"player": p.id, "reason": reason})
        self.anchor_seat = seat or p.seat or self.anchor_seat
        self.holder = None
        self.house_holds = False
        self.offer_needed = True

    def _check_disconnect(self, cmd: c.Disconnect) -> PlayerState:
        return self._player(cmd.player)

    def _do_disconnect(self, cmd: c.Disconnect, p: PlayerState) -> bool:
        """The table decides what a lost connection means: a spectator leaves (no
        event, as when they came); a seated player keeps the seat for the grace period
        (§5). A shoe already offered to them waits for its timer (they may be back in
        time); one offered to them while they are away is declined at once."""
        if p.seat is None:
            del self.players[p.id]
            return False
        if not p.connected:
            return True
        self._away(p)
        return False

    def _away(self, p: PlayerState) -> None:
        """A seated player is gone, for now: the grace period starts (§5). The one path
        for a lost connection and a restart (Restored)."""
        p.connected = False
        p.grace_deadline = self._now + self.options.timers.grace
        self._emit("disconnected", {"player": p.id, "grace_deadline": p.grace_deadline})

    def _check_reconnect(self, cmd: c.Reconnect) -> PlayerState:
        return self._player(cmd.player)

    def _do_reconnect(self, cmd: c.Reconnect, p: PlayerState) -> bool:
        return self._back(p)

    def _back(self, p: PlayerState) -> bool:
        if p.connected:
            return True
        p.connected = True
        p.grace_deadline = None
        p.leaving = False
        self._emit("reconnected", {"player": p.id})
        return False

    def _do_restored(self, cmd: c.Restored, ctx: None) -> bool:
        """After a restart nobody is connected: spectators are gone (they are not
        stored, and reconnect as spectators), seated players are away from now on, by
        the same path as a lost connection (so, before any Tick, nobody away is taken
        for present: a shoe offered to them from now on is declined at once)."""
        for q in list(self.players.values()):
            if q.seat is None and not q.bets:
                del self.players[q.id]
        for q in self.seated():
            if q.connected:
                self._away(q)
        self.draining = False  # a new process: not draining until told so
        return False

    def _do_set_draining(self, cmd: c.SetDraining, ctx: None) -> bool:
        if self.draining == cmd.on:
            return True
        self.draining = cmd.on
        self._emit("draining", {"on": cmd.on})
        return False

    # ------------------------------------------------------------------ the shoe
    def _check_start_shoe(self, cmd: c.StartShoe) -> Shoe:
        try:
            if cmd.cards is not None:
                # A stacked shoe has its stop card too (§4), so it never runs short.
                return Shoe.stacked(cmd.cards, stop_offset=self.options.stop_offset)
            assert cmd.seed is not None
            return Shoe.from_seed(cmd.seed, self.options.decks)
        except (ShoeError, ValueError) as exc:
            raise TableError("bad_command", str(exc)) from None

    def _do_start_shoe(self, cmd: c.StartShoe, shoe: Shoe) -> bool:
        self.shoe = shoe
        self.cut_by = None
        self.shoe_no += 1
        self.coup_no = 0  # coups are numbered per shoe, as on every scoreboard
        self.shoe_coups = []
        self.results = []
        self._roads = None
        self.last_coup_next = False
        self.burned = cmd.cards is not None
        self._emit(
            "shoe_started",
            {
                "shoe_no": self.shoe_no,
                "commitment": shoe.commitment,
                "decks": self.options.decks if cmd.cards is None else None,
                "cards": shoe.size,
                "stacked": cmd.cards is not None,
            },
        )
        return False

    def _rotation(self, after: int) -> list[PlayerState]:
        """Seated players in offer order: the seats after ``after``, wrapping (§5)."""
        return sorted(self.seated(), key=lambda q: ((q.seat or 0) <= after, q.seat))

    def _start_offer(self) -> None:
        self.offer_needed = False
        order = self._rotation(self.anchor_seat)
        if order:
            self._offer_to(order[0], [])

    def _offer_to(self, p: PlayerState, declined: list[str]) -> None:
        assert p.seat is not None
        deadline = self._now + self.options.timers.shoe_offer
        self.offer = Offer(p.id, p.seat, deadline, declined)
        self._emit("shoe_offered", {"player": p.id, "seat": p.seat, "deadline": deadline})
        if not p.connected:  # nobody there to answer: declined on their behalf at once
            self.between_on_behalf.append({"step": "decline the shoe", "player": p.id})
            self._declined(p.id, p.seat, timeout=True)

    def _declined(self, pid: str, seat: int | None, *, timeout: bool) -> None:
        """§5: ``pid`` declined (or could not answer): the next occupied seat whose
        player has not declined is offered the shoe; when every seated player has
        declined, the house holds it."""
        offer = self.offer
        assert offer is not None
        self._emit("shoe_declined", {"player": pid, "seat": seat, "timeout": timeout})
        declined = [*offer.declined, pid]
        for q in self._rotation(offer.seat):
            if q.id not in declined:
                self._offer_to(q, declined)
                return
        self._house_takes_shoe()

    def _house_takes_shoe(self) -> None:
        """§5: nobody (else) takes the shoe: the croupier holds it until a Player win."""
        self.offer = None
        self.holder = None
        self.house_holds = True
        self.holder_coups = 0
        self._emit("shoe_held_by_house", {})

    def _check_accept_shoe(self, cmd: c.AcceptShoe) -> PlayerState:
        return self._check_offeree(cmd.player)

    def _do_accept_shoe(self, cmd: c.AcceptShoe, p: PlayerState) -> bool:
        self.offer = None
        self.holder, self.house_holds, self.holder_coups = p.id, False, 0
        self.anchor_seat = p.seat or 0
        self._emit("shoe_accepted", {"player": p.id, "seat": p.seat})
        return False

    def _check_decline_shoe(self, cmd: c.DeclineShoe) -> PlayerState:
        return self._check_offeree(cmd.player)

    def _do_decline_shoe(self, cmd: c.DeclineShoe, p: PlayerState) -> bool:
        self._declined(p.id, p.seat, timeout=False)
        return False

    def _check_pass_shoe(self, cmd: c.PassShoe) -> PlayerState:
        p = self._seated_player(cmd.player)
        refuse(rules.pass_refusal(self, p))
        return p

    def _do_pass_shoe(self, cmd: c.PassShoe, p: PlayerState) -> bool:
        """§5: a voluntary pass goes to the next occupied seat other than the holder's,
        and never back to them: the offer starts at once with the passer counted as
        having declined; with nobody else seated the house holds the shoe."""
        assert p.seat is not None
        self._lose_shoe(p, "passed")
        self.offer_needed = False
        others = [q for q in self._rotation(p.seat) if q.id != p.id]
        if others:
            self._offer_to(others[0], [p.id])
        else:
            self._house_takes_shoe()
        return False

    def _check_cut(self, cmd: c.Cut) -> None:
        self._seated_player(cmd.player)
        assert self.shoe is not None
        refuse(rules.cut_refusal(self, cmd.player))
        try:
            check_cut(cmd.position, self.shoe.size)  # the bounds of rules.cut_range
        except ShoeError as exc:
            raise TableError("bad_cut", str(exc)) from None

    def _do_cut(self, cmd: c.Cut, ctx: None) -> bool:
        self._apply_cut(cmd.position, cmd.player, None)
        return False

    def _apply_cut(self, position: int, by: str, on_behalf: str | None) -> None:
        assert self.shoe is not None
        self.shoe.apply_cut(position)
        self.cut_by = {"by": by, "on_behalf": on_behalf}
        self.deadline = None
        self._emit("shoe_cut", {"position": position, "by": by, "on_behalf": on_behalf})

    # ------------------------------------------------------------------ betting
    def _set_bets(self, p: PlayerState, bets: dict[str, int], change: str) -> None:
        for name in set(p.bets) | set(bets):
            if p.bets.get(name, 0) != bets.get(name, 0):
                self.counter += 1
                p.bet_order[name] = self.counter
        p.bets = {k: v for k, v in bets.items() if v}
        p.bet_order = {k: v for k, v in p.bet_order.items() if k in p.bets}
        p.done = False
        self._move_stake(p, sum(p.bets.values()) - self._stake(p.id))
        self._emit(
            "bets",
            {"player": p.id, "seat": p.seat, "bets": dict(p.bets), "change": change},
            {p.id: {"available": self.available(p.id)}},
        )
        if self.deadline is None and p.bets:  # §7: the table waited for a bet; time it now
            self.deadline = self._now + self.options.timers.betting
            self._emit("betting_timer", {"deadline": self.deadline})

    def _check_place_bet(self, cmd: c.PlaceBet) -> tuple[PlayerState, dict[str, int]]:
        p = self._seated_player(cmd.player)
        area = self._area(cmd.area)
        refuse(rules.bet_refusal(self, p, area, cmd.amount))
        return p, {**p.bets, area: p.bets.get(area, 0) + cmd.amount}

    def _do_place_bet(self, cmd: c.PlaceBet, ctx: tuple[PlayerState, dict[str, int]]) -> bool:
        self._set_bets(*ctx, "place")
        return False

    def _check_remove_bet(self, cmd: c.RemoveBet) -> tuple[PlayerState, dict[str, int]]:
        p = self._seated_player(cmd.player)
        area = self._area(cmd.area)
        refuse(rules.remove_refusal(self, p, area, cmd.amount))
        have = p.bets[area]
        return p, {**p.bets, area: have - (have if cmd.amount is None else cmd.amount)}

    def _do_remove_bet(self, cmd: c.RemoveBet, ctx: tuple[PlayerState, dict[str, int]]) -> bool:
        self._set_bets(*ctx, "remove")
        return False

    def _check_clear_bets(self, cmd: c.ClearBets) -> PlayerState:
        p = self._seated_player(cmd.player)
        refuse(rules.clear_refusal(p))
        return p

    def _do_clear_bets(self, cmd: c.ClearBets, p: PlayerState) -> bool:
        self._set_bets(p, {}, "clear")
        return False

    def _check_same_bet(self, cmd: c.SameBet) -> tuple[PlayerState, dict[str, int]]:
        p = self._seated_player(cmd.player)
        refuse(rules.same_bet_refusal(self, p))
        return p, rules.same_bets(self, p)

    def _do_same_bet(self, cmd: c.SameBet, ctx: tuple[PlayerState, dict[str, int]]) -> bool:
        self._set_bets(*ctx, "same")
        return False

    def _check_done(self, cmd: c.Done) -> PlayerState:
        p = self._seated_player(cmd.player)
        refuse(rules.done_refusal(self, p))
        return p

    def _do_done(self, cmd: c.Done, p: PlayerState) -> bool:
        if p.done:
            return True  # pressed already: nothing changes (answered as a duplicate)
        p.done = True
        self._emit("done", {"player": p.id})
        self._maybe_close_betting()
        return False

    def _maybe_close_betting(self) -> None:
        """§7: close early once everyone seated pressed DONE, and there is a bet."""
        seated = self.seated()
        if any(q.bets for q in seated) and all(q.done for q in seated):
            self._close_betting()

    def _open_betting(self) -> None:
        if not self.round_open:
            self.coup_no += 1
            self.round_open = True
            for q in self.players.values():
                q.done = False
        self.phase = Phase.BETTING
        self.deadline = self._now + self.options.timers.betting
        self._emit(
            "betting_opened",
            {"coup_no": self.coup_no, "round_id": self._round_id, "deadline": self.deadline},
        )

    @property
    def _round_id(self) -> str:
        return f"{self.table_id}-{self.shoe_no}-{self.coup_no}"

    def _close_betting(self) -> None:
        """Hold every wager (§7), deal four cards face down, name the turners (§6)."""
        assert self.shoe is not None
        rid = self._round_id
        held: dict[str, dict[str, int]] = {}
        before: dict[str, int] = {}
        table = held_account(self.table_id)
        for q in self.seated():
            if not q.bets:
                continue
            before[q.id] = self._balance(q.id)
            stake = stake_account(self.table_id, q.id)  # the chips on the felt (§7)
            for area, amount in sorted(q.bets.items()):
                self.wallet.transfer(f"{rid}:{q.id}:{area}:hold", stake, table, amount, "hold", rid)
            held[q.id] = dict(q.bets)
        player_turner = self._player_turner(held)
        shoe = self.shoe
        cards = [shoe.draw() for _ in range(4)]
        forfeits = (
            self.options.holder_must_bet_banker
            and self.holder is not None
            and not held.get(self.holder, {}).get(Area.BANKER.value)
        )
        self.coup = CoupState(
            round_id=rid,
            coup_no=self.coup_no,
            player=[CardSlot(cards[0]), CardSlot(cards[2])],
            banker=[CardSlot(cards[1]), CardSlot(cards[3])],
            turners={"player": player_turner, "banker": self.holder},
            held=held,
            balances_before=before,
            holder=self.holder,
            last=self.last_coup_next,
            holder_forfeits=bool(forfeits),
        )
        self.phase = Phase.TURN
        self.deadline = None
        self.round_open = False
        totals: dict[str, int] = {}
        for bets in held.values():
            for area, amount in bets.items():
                totals[area] = totals.get(area, 0) + amount
        self._emit(
            "betting_closed",
            {"round_id": rid, "bets": {pid: dict(b) for pid, b in held.items()}, "totals": totals},
            {pid: self.money(pid) for pid in held},
        )
        self._emit(
            "dealt",
            {"round_id": rid, "player": 2, "banker": 2, "turners": dict(self.coup.turners)},
        )

    def _player_turner(self, held: dict[str, dict[str, int]]) -> str | None:
        """§6: the highest Player bet turns; on equal amounts, whoever reached it first."""
        ranked = sorted(
            (-held[q.id]["player"], q.bet_order.get("player", 0), q.id)
            for q in self.seated()
            if held.get(q.id, {}).get("player")
        )
        return ranked[0][2] if ranked else None

    # ------------------------------------------------------------------ turning

    # ------------------------------------------------------------------ settlement

    # ------------------------------------------------------------------ time
    def _do_tick(self, cmd: c.Tick, ctx: None) -> bool:
        now = self._now
        for q in sorted(self.players.values(), key=lambda q: q.id):
            if q.grace_deadline is not None and now >= q.grace_deadline:
                q.grace_deadline = None
                if self.wager_in_play(q):
                    q.leaving = True
                else:
                    self._gone(q)
        offer = self.offer
        if offer is not None and now >= offer.deadline:
            self.between_on_behalf.append({"step": "decline the shoe", "player": offer.current})
            self._declined(offer.current, offer.seat, timeout=True)
        if self.phase is Phase.CUT and self.deadline is not None and now >= self.deadline:
            assert self.shoe is not None and self.shoe.seed is not None
            who = self.cutter
            self._apply_cut(timeout_cut(self.shoe.seed, self.shoe.size), c.CROUPIER, who)
            if who is not None:
                self.between_on_behalf.append({"step": "cut the shoe", "player": who})
        if self.phase is Phase.BETTING and self.deadline is not None and now >= self.deadline:
            if any(q.bets for q in self.seated()):
                self._close_betting()
            else:  # §7: no bet at all, the table waits; the next bet restarts the timer
                self.deadline = None
                self._emit("betting_waiting", {})
        coup = self.coup
        if coup is not None and coup.deadline is not None and now >= coup.deadline:
            turner = coup.turners[coup.stage_hand]
            turning.reveal_stage(self, coup, c.CROUPIER, turner)
        return False

    # ------------------------------------------------------------------ closing
    def _do_close_table(self, cmd: c.CloseTable, ctx: None) -> bool:
        coup = self.coup
        if coup is not None:  # §8: only an operator's close refunds a round in progress
            settlement.refund(self.wallet, self.table_id, coup)
        for q in self.players.values():
            if q.bets and (coup is None or q.id not in coup.held):  # placed, not held
                self._move_stake(q, -self._stake(q.id))
            q.bets = {}
        self.coup = None
        self.offer = None
        self.deadline = None
        if self.shoe is not None:
            settlement.end_shoe(self, complete=False)
        self.phase = Phase.CLOSED
        self._emit("closed", {"refunded": coup is not None})
        return False

    # ------------------------------------------------------------------ the flow
    def _advance(self) -> None:
        """Move the table on from wherever the last command left it."""
        while self.phase is not Phase.CLOSED:
            if self.coup is not None:
                if not turning.advance_coup(self):
                    return
                continue
            if self.shoe is None:
                if self.phase is not Phase.SHUFFLE:
                    self.phase, self.deadline = Phase.SHUFFLE, None
                return
            if not self.seated():
                if self.phase is not Phase.WAITING:
                    self.phase, self.deadline, self.offer = Phase.WAITING, None, None
                    self._emit("waiting", {})
                return
            if self.offer is None and (
                self.offer_needed or (self.holder is None and not self.house_holds)
            ):
                self._start_offer()
            if self.offer is not None:
                if self.phase is not Phase.SHOE_OFFER:
                    self.phase, self.deadline = Phase.SHOE_OFFER, None
                return
            if self.shoe.cut is None:
                # §4: the cut is offered to the cutter; offered again if that changes
                # (the cutter stood up), with a fresh timer.
                if self.phase is not Phase.CUT or self.cut_offered_to != self.cutter:
                    self.cut_offered_to = self.cutter
                    self.phase = Phase.CUT
                    self.deadline = self._now + self.options.timers.cut
                    self._emit("cut_offered", {"player": self.cutter, "deadline": self.deadline})
                return
            if not self.burned:
                face, count = self.shoe.burn()
                self.shoe.place_stop(self.options.stop_offset)
                self.burned = True
                self._emit(
                    "burned",
                    {"card": face, "count": count, "stop_offset": self.options.stop_offset},
                )
            if self.phase is not Phase.BETTING or not self.round_open:
                self._open_betting()
            return

    # ------------------------------------------------------------------ storage
    def to_state(self, *, spectators: bool = True) -> dict[str, Any]:
        """The whole internal state, secrets included: for the store only, never a client
        (:func:`server.table.persistence.to_state`)."""
        return persistence.to_state(self, spectators=spectators)

    @classmethod
    def from_state(cls, state: dict[str, Any], wallet: Wallet) -> Table:
        """Rebuild a table from :meth:`to_state` (:func:`server.table.persistence.from_state`)."""
        return persistence.from_state(cls, state, wallet)


def _seat_key(p: PlayerState) -> int:
    return p.seat or 0


def _no_check(table: Table, cmd: c.Command) -> None:
    return None


def _snake(name: str) -> str:
    """``PlaceBet`` -> ``place_bet``: a command's name in its handlers' names."""
    return "".join(f"_{ch.lower()}" if ch.isupper() else ch for ch in name).lstrip("_")


#: Each command's check (``Table._check_<name>``: raises TableError, changes nothing;
#: returns what do needs; none for the croupier's Tick, CloseTable, SetDraining and
#: Restored) and do (``Table._do_<name>``: changes the table; returns True when it
#: changed nothing at all), found by name for every command of :mod:`.commands`.
#: The sub-machines that hold some commands' handlers as functions over the table
#: (``check_<name>`` / ``do_<name>``); the rest are the table's own methods.
_MACHINES: tuple[Any, ...] = (turning,)


def _handler(prefix: str, cls: type[c.Command]) -> Callable[..., Any] | None:
    name = _snake(cls.__name__)
    found = getattr(Table, f"_{prefix}_{name}", None)
    for machine in _MACHINES:
        found = found or getattr(machine, f"{prefix}_{name}", None)
    return found


_HANDLERS: dict[type[c.Command], tuple[Callable[..., Any], Callable[..., bool]]] = {
    cls: (_handler("check", cls) or _no_check, _handler("do", cls))  # type: ignore[misc]
    for cls in c.COMMANDS
}
