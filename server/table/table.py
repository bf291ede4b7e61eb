"""The shared table: a pure, deterministic state machine (GAME_RULES §3-§8).

Rules of this file:

- Every input is a command (:mod:`server.table.commands`) handed to
  :meth:`Table.handle` with the current time ``now``; every output is a list of
  :class:`~server.table.events.Event` with gap-free per-table sequence numbers.
- A command the rules do not allow raises :class:`~server.table.errors.TableError`
  and changes nothing: handlers check everything before they change anything.
- Time comes only from ``now``; randomness only from the shoe's seed, which arrives in
  a :class:`~server.table.commands.StartShoe` command. No I/O, no clock, no global
  random: the same commands at the same times always give the same events.
- Money moves only through the injected :class:`~server.table.wallet.Wallet`, as
  idempotent ledger entries keyed by round, player and area.
- Hidden cards never enter an event's public data; a turner's view of a squeezed card
  travels in the event's private overlay, and snapshots are made per viewer by
  :meth:`Table.view`.

The phases (``Phase``) and the flow between them::

    SHUFFLE --StartShoe--> [SHOE_OFFER] --> [CUT] --burn--> BETTING --close--> TURN
       ^                                                      ^                 |
       |                                                      +--settle---------+
       +--------------- last coup settled (seed revealed) ----------------------+

``_advance`` is the one place that moves the table on after any command; the turn
stages (Player, Banker, Player's third card, Banker's third card) live in ``_advance_coup``.
"""

from __future__ import annotations

from typing import Any

from server.engine.cards import card_value, hand_total
from server.engine.coup import banker_draws, finish_coup, is_natural, player_draws
from server.engine.payouts import Area
from server.engine.roads import Result, Roads
from server.engine.shoe import Shoe, ShoeError, check_cut, timeout_cut

from . import commands as c
from . import persistence, settlement
from .errors import TableError
from .events import Event
from .options import TableOptions
from .state import CardSlot, CoupState, Offer, Phase, PlayerState
from .wallet import Wallet, held_account, player_account, stake_account

__all__ = ["Phase", "Table"]

RECENT_IDS = 64  # command ids remembered per player for idempotent retries
STYLES = ("peek", "side", "quick")
HANDS = ("player", "banker")


class Table:
    """One table. ``handle`` commands, read ``view`` snapshots; see the module docstring."""

    def __init__(
        self, table_id: str, options: TableOptions, wallet: Wallet, *, shoes_before: int = 0
    ) -> None:
        """``shoes_before``: shoes an earlier table of the same id dealt, so that round
        ids (and with them ledger keys) and shoe numbers are never used twice."""
        self.table_id = table_id
        self.options = options
        self._options_dict = options.to_dict()  # options never change; asdict is slow
        self.wallet = wallet
        self.seq = 0
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
        self.recent_ids: dict[str, list[str]] = {}
        self.last_result: dict[str, Any] | None = None
        self._roads = Roads()
        self._events: list[Event] = []
        self._records: list[dict[str, Any]] = []
        self._now = 0.0
        self.duplicate = False  # whether the last command was a retried id
        self.cut_by: dict[str, str | None] | None = None  # who cut this shoe (§4, §6)
        self.cut_offered_to: str | None = None
        # Steps the croupier did for a player between coups (a shoe offer or a cut that
        # timed out): the next round's record carries them (§6, §8).
        self.between_on_behalf: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ public API
    def handle(self, cmd: c.Command, now: float) -> list[Event]:
        """Apply one command at time ``now``; return the events it caused.

        Raises TableError (state unchanged) when the rules refuse it. A command whose
        ``id`` this player already used returns no events and changes nothing.
        """
        if cmd.id is not None and cmd.id in self.recent_ids.get(cmd.player, ()):
            self.duplicate = True
            return []
        self.duplicate = False
        self._events = []
        self._now = now
        handler = _HANDLERS.get(type(cmd))
        if handler is None:
            raise TableError("unknown_command", f"the table does not take {type(cmd).__name__}")
        if self.phase is Phase.CLOSED:
            raise TableError("table_closed", "this table is closed")
        handler(self, cmd)
        self._advance()
        if cmd.id is not None:
            ids = self.recent_ids.setdefault(cmd.player, [])
            ids.append(cmd.id)
            del ids[:-RECENT_IDS]
        events, self._events = self._events, []
        return events

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

    def seated(self) -> list[PlayerState]:
        return sorted((p for p in self.players.values() if p.seat is not None), key=_seat_key)

    def roads(self) -> dict[str, Any]:
        return self._roads.to_dict()

    # ------------------------------------------------------------------ emitting
    def _emit(
        self, kind: str, data: dict[str, Any], private: dict[str, dict[str, Any]] | None = None
    ) -> None:
        self.seq += 1
        self._events.append(Event(self.seq, kind, data, private or None))

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

    def _stake(self, pid: str) -> int:
        """The chips ``pid`` has placed here and not yet held (``stake:<table>:<id>``)."""
        return self.wallet.balance(stake_account(self.table_id, pid))

    def _balance(self, pid: str) -> int:
        """A player's balance as this table shows it: money on no table plus the chips
        placed here (the same figure as before a bet moved any money, for one table)."""
        return self.wallet.balance(player_account(pid)) + self._stake(pid)

    def money(self, pid: str) -> dict[str, int]:
        """A player's own money, for the private part of an event and their snapshot:
        ``balance`` (:meth:`_balance`) and ``available`` (``player:<id>``, what they may
        still place)."""
        available = self.wallet.balance(player_account(pid))
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

    # ------------------------------------------------------------------ players
    def _join(self, cmd: c.Join) -> None:
        if cmd.player in self.players:
            if cmd.rejoin:
                self._reconnect(c.Reconnect(player=cmd.player))
                return
            raise TableError("already_joined", "you are already at this table")
        name = (cmd.name or cmd.player)[:32]
        # Watching is not news: no event, so an audience of thousands arriving costs
        # each of them nothing (the lobby and snapshots count spectators). Sitting is.
        self.players[cmd.player] = PlayerState(cmd.player, name)

    def _leave(self, cmd: c.Leave) -> None:
        p = self._player(cmd.player)
        if p.seat is not None:
            self._check_can_stand(p)
        self._stand(p, "left")  # a seated player's leaving is news: "stood", reason "left"
        del self.players[cmd.player]
        self.recent_ids.pop(cmd.player, None)

    def _sit(self, cmd: c.Sit) -> None:
        p = self._player(cmd.player)
        if p.seat is not None:
            raise TableError("already_seated", f"you are already in seat {p.seat}")
        taken = {q.seat for q in self.players.values() if q.seat is not None}
        if cmd.seat is None:
            free = [s for s in range(1, self.options.seats + 1) if s not in taken]
            if not free:
                raise TableError("table_full", "every seat is taken")
            seat = free[0]
        else:
            seat = cmd.seat
            if (
                isinstance(seat, bool)
                or not isinstance(seat, int)
                or not 1 <= seat <= self.options.seats
            ):
                raise TableError("bad_seat", f"seats are 1-{self.options.seats}")
            if seat in taken:
                raise TableError("seat_taken", f"seat {seat} is taken")
        p.seat = seat
        p.connected = True
        p.grace_deadline = None
        self._emit("sat", {"player": p.id, "name": p.name, "seat": seat}, {p.id: self.money(p.id)})

    def _check_can_stand(self, p: PlayerState) -> None:
        if self.coup is not None and (p.id in self.coup.held or p.id == self.coup.holder):
            raise TableError("wager_in_play", "wait until this coup is settled")

    def _stand_cmd(self, cmd: c.Stand) -> None:
        p = self._seated_player(cmd.player)
        self._check_can_stand(p)
        self._stand(p, "stood")

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
        self._emit("stood", {"player": p.id, "seat": seat, "reason": reason})
        if self.holder == p.id:
            self._lose_shoe(p, reason, seat)
        if self.offer is not None and self.offer.current == p.id:
            self._emit("shoe_declined", {"player": p.id, "seat": seat, "timeout": False})
            self._next_offer()
        elif self.offer is not None and p.id in self.offer.queue:
            self.offer.queue.remove(p.id)
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
        self.recent_ids.pop(p.id, None)

    def _lose_shoe(self, p: PlayerState, reason: str, seat: int | None = None) -> None:
        """§5: the holder passes, stands, leaves or times out: offer the shoe onward."""
        self._emit("shoe_passed", {"player": p.id, "reason": reason})
        self.anchor_seat = seat or p.seat or self.anchor_seat
        self.holder = None
        self.house_holds = False
        self.offer_needed = True

    def _disconnect(self, cmd: c.Disconnect) -> None:
        p = self._player(cmd.player)
        if not p.connected:
            return
        p.connected = False
        if p.seat is not None:
            p.grace_deadline = self._now + self.options.timers.grace
        self._emit("disconnected", {"player": p.id, "grace_deadline": p.grace_deadline})

    def _reconnect(self, cmd: c.Reconnect) -> None:
        p = self._player(cmd.player)
        if p.connected:
            return
        p.connected = True
        p.grace_deadline = None
        p.leaving = False
        self._emit("reconnected", {"player": p.id})

    # ------------------------------------------------------------------ the shoe
    def _start_shoe(self, cmd: c.StartShoe) -> None:
        if cmd.player != c.CROUPIER:
            raise TableError("not_allowed", "only the croupier starts a shoe")
        if self.phase is not Phase.SHUFFLE:
            raise TableError("wrong_phase", "the current shoe is not finished")
        try:
            if cmd.cards is not None:
                # A stacked shoe has its stop card too (§4), so it never runs short.
                shoe = Shoe.stacked(cmd.cards, stop_offset=self.options.stop_offset)
            elif cmd.seed is not None:
                shoe = Shoe.from_seed(cmd.seed, self.options.decks)
            else:
                raise TableError("bad_command", "a shoe needs a seed or its cards")
        except (ShoeError, ValueError) as exc:
            raise TableError("bad_command", str(exc)) from None
        self.shoe = shoe
        self.cut_by = None
        self.shoe_no += 1
        self.coup_no = 0  # coups are numbered per shoe, as on every scoreboard
        self.shoe_coups = []
        self.results = []
        self._roads = Roads()
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

    def _start_offer(self) -> None:
        seats = sorted(self.seated(), key=lambda q: ((q.seat or 0) <= self.anchor_seat, q.seat))
        queue = [q.id for q in seats]
        self.offer_needed = False
        if not queue:
            return
        self.offer = Offer(queue[1:], queue[0], self._now + self.options.timers.shoe_offer)
        self._offer_to(queue[0])

    def _offer_to(self, pid: str) -> None:
        assert self.offer is not None
        self.offer.current = pid
        self.offer.deadline = self._now + self.options.timers.shoe_offer
        p = self.players[pid]
        self._emit("shoe_offered", {"player": pid, "seat": p.seat, "deadline": self.offer.deadline})
        if not p.connected:  # nobody there to answer: declined on their behalf at once
            self._emit("shoe_declined", {"player": pid, "seat": p.seat, "timeout": True})
            self.between_on_behalf.append({"step": "decline the shoe", "player": pid})
            self._next_offer()

    def _next_offer(self) -> None:
        assert self.offer is not None
        if self.offer.queue:
            self._offer_to(self.offer.queue.pop(0))
            return
        self.offer = None
        self.holder = None
        self.house_holds = True
        self.holder_coups = 0
        self._emit("shoe_held_by_house", {})

    def _check_offeree(self, pid: str) -> PlayerState:
        p = self._seated_player(pid)
        if self.offer is None or self.offer.current != pid:
            raise TableError("not_offered", "the shoe is not being offered to you")
        return p

    def _accept(self, cmd: c.AcceptShoe) -> None:
        p = self._check_offeree(cmd.player)
        self.offer = None
        self.holder, self.house_holds, self.holder_coups = p.id, False, 0
        self.anchor_seat = p.seat or 0
        self._emit("shoe_accepted", {"player": p.id, "seat": p.seat})

    def _decline(self, cmd: c.DeclineShoe) -> None:
        p = self._check_offeree(cmd.player)
        self._emit("shoe_declined", {"player": p.id, "seat": p.seat, "timeout": False})
        self._next_offer()

    def _pass(self, cmd: c.PassShoe) -> None:
        p = self._seated_player(cmd.player)
        if self.holder != p.id:
            raise TableError("not_holder", "only the shoe holder passes the shoe")
        if self.phase is not Phase.BETTING:
            raise TableError("wrong_phase", "the shoe is passed between coups")
        if self.holder_coups < 1:
            raise TableError("too_early", "deal at least one coup before passing the shoe")
        self._lose_shoe(p, "passed")

    @property
    def cutter(self) -> str | None:
        """§4: the shoe holder cuts, or with the house holding, the first seated player."""
        if self.holder is not None:
            return self.holder
        seated = self.seated()
        return seated[0].id if seated else None

    def _cut(self, cmd: c.Cut) -> None:
        self._seated_player(cmd.player)
        if self.phase is not Phase.CUT or self.shoe is None:
            raise TableError("wrong_phase", "the shoe is not waiting for a cut")
        if cmd.player != self.cutter:
            raise TableError("not_cutter", "it is not your cut")
        try:
            check_cut(cmd.position, self.shoe.size)
        except ShoeError as exc:
            raise TableError("bad_cut", str(exc)) from None
        self._apply_cut(cmd.position, cmd.player, None)

    def _apply_cut(self, position: int, by: str, on_behalf: str | None) -> None:
        assert self.shoe is not None
        self.shoe.apply_cut(position)
        self.cut_by = {"by": by, "on_behalf": on_behalf}
        self.deadline = None
        self._emit("shoe_cut", {"position": position, "by": by, "on_behalf": on_behalf})

    # ------------------------------------------------------------------ betting
    def _area(self, name: str) -> Area:
        try:
            area = Area(name)
        except ValueError:
            raise TableError("bad_area", f"there is no bet area {name!r}") from None
        if area not in self.options.paytable.areas():
            raise TableError("bad_area", f"{area.value} is not open at this table")
        return area

    def _betting_player(self, pid: str) -> PlayerState:
        p = self._seated_player(pid)
        if self.phase is not Phase.BETTING:
            raise TableError("wrong_phase", "betting is closed")
        return p

    def _check_bets(self, p: PlayerState, bets: dict[str, int]) -> None:
        """Every area within its limits and the whole within the balance (§3, §7)."""
        lim = self.options.limits
        for name, amount in bets.items():
            area = Area(name)
            if amount < lim.min:
                raise TableError("below_min", f"the minimum on {name} is {lim.min}")
            if amount > lim.max_for(area):
                raise TableError("over_max", f"the maximum on {name} is {lim.max_for(area)}")
        # §3, §7: what the new chips add to the stake must come from the balance.
        if sum(bets.values()) - self._stake(p.id) > self.wallet.balance(player_account(p.id)):
            raise TableError("insufficient_funds", "that bet is more than your balance")

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
            {p.id: {"available": self.wallet.balance(player_account(p.id))}},
        )
        if self.deadline is None and p.bets:  # §7: the table waited for a bet; time it now
            self.deadline = self._now + self.options.timers.betting
            self._emit("betting_timer", {"deadline": self.deadline})

    @staticmethod
    def _amount(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise TableError("bad_amount", "an amount is a positive whole number of minor units")
        return value

    def _place(self, cmd: c.PlaceBet) -> None:
        p = self._betting_player(cmd.player)
        area = self._area(cmd.area)
        amount = self._amount(cmd.amount)
        bets = dict(p.bets)
        bets[area.value] = bets.get(area.value, 0) + amount
        self._check_bets(p, bets)
        self._set_bets(p, bets, "place")

    def _remove(self, cmd: c.RemoveBet) -> None:
        p = self._betting_player(cmd.player)
        area = self._area(cmd.area)
        have = p.bets.get(area.value, 0)
        if not have:
            raise TableError("no_bet", f"you have no bet on {area.value}")
        amount = have if cmd.amount is None else self._amount(cmd.amount)
        if amount > have:
            raise TableError("bad_amount", f"you have {have} on {area.value}")
        bets = dict(p.bets)
        bets[area.value] = have - amount
        if 0 < bets[area.value] < self.options.limits.min:
            raise TableError(
                "below_min", f"the minimum on {area.value} is {self.options.limits.min}"
            )
        self._set_bets(p, bets, "remove")

    def _clear(self, cmd: c.ClearBets) -> None:
        p = self._betting_player(cmd.player)
        if not p.bets:
            raise TableError("no_bet", "you have no bets to clear")
        self._set_bets(p, {}, "clear")

    def _same(self, cmd: c.SameBet) -> None:
        p = self._betting_player(cmd.player)
        if not p.last_bets:
            raise TableError("no_previous_bets", "you have no previous round's bets to repeat")
        bets = {a: b for a, b in p.last_bets.items() if Area(a) in self.options.paytable.areas()}
        self._check_bets(p, bets)
        self._set_bets(p, bets, "same")

    def _done(self, cmd: c.Done) -> None:
        p = self._betting_player(cmd.player)
        if (
            self.options.holder_must_bet_banker
            and p.id == self.holder
            and not p.bets.get(Area.BANKER.value)
        ):
            raise TableError("holder_must_bet_banker", "the shoe holder bets on Banker here")
        if p.done:
            return
        p.done = True
        self._emit("done", {"player": p.id})
        self._maybe_close_betting()

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
            {"round_id": rid, "bets": held, "totals": totals},
            {pid: self.money(pid) for pid in held},
        )
        self._emit(
            "dealt",
            {"round_id": rid, "player": 2, "banker": 2, "turners": dict(self.coup.turners)},
        )

    @staticmethod
    def _ranked_player_bets(
        players: list[PlayerState], held: dict[str, dict[str, int]]
    ) -> list[tuple[int, int, str]]:
        return sorted(
            (-held[q.id]["player"], q.bet_order.get("player", 0), q.id)
            for q in players
            if held.get(q.id, {}).get("player")
        )

    def _player_turner(self, held: dict[str, dict[str, int]]) -> str | None:
        """§6: the highest Player bet turns; on equal amounts, whoever reached it first."""
        ranked = self._ranked_player_bets(self.seated(), held)
        return ranked[0][2] if ranked else None

    # ------------------------------------------------------------------ turning
    def _turning(self, pid: str, hand: str) -> CoupState:
        if self.phase is not Phase.TURN or self.coup is None:
            raise TableError("wrong_phase", "no cards are waiting to be turned")
        coup = self.coup
        if hand not in HANDS:
            raise TableError("bad_hand", "the hand is player or banker")
        if hand != coup.stage_hand:
            raise TableError("not_your_turn", f"the {coup.stage_hand} hand is being turned now")
        if coup.turners[hand] != pid:
            raise TableError("not_your_turn", f"you do not turn the {hand} cards")
        return coup

    def _squeeze(self, cmd: c.Squeeze) -> None:
        coup = self._turning(cmd.player, cmd.hand)
        if cmd.style not in STYLES:
            raise TableError("bad_style", "squeeze styles are peek, side and quick")
        if coup.style is not None:
            raise TableError("already_squeezing", "you are already squeezing these cards")
        coup.style = cmd.style
        slots = coup.hand(cmd.hand)
        private = {str(i + 1): slots[i].card for i in coup.stage_slots() if not slots[i].up}
        self._emit(
            "squeeze",
            {"hand": cmd.hand, "style": cmd.style, "turner": cmd.player},
            {cmd.player: {"cards": private}},
        )

    def _turn_index(self, coup: CoupState, card: object) -> int:
        if (
            isinstance(card, bool)
            or not isinstance(card, int)
            or card - 1 not in coup.stage_slots()
        ):
            allowed = " or ".join(str(i + 1) for i in coup.stage_slots())
            raise TableError("bad_card", f"turn card {allowed}")
        if coup.hand(coup.stage_hand)[card - 1].up:
            raise TableError("card_already_turned", f"card {card} is already face up")
        return card - 1

    def _turn_card(self, cmd: c.TurnCard) -> None:
        coup = self._turning(cmd.player, cmd.hand)
        index = self._turn_index(coup, cmd.card)
        if coup.style is None:
            raise TableError("not_squeezing", "choose a squeeze style (or TOSS) first")
        self._reveal(coup, cmd.hand, index, cmd.player, None)

    def _toss(self, cmd: c.Toss) -> None:
        coup = self._turning(cmd.player, cmd.hand)
        self._reveal_stage(coup, cmd.player, None)

    def _progress(self, cmd: c.Progress) -> None:
        coup = self._turning(cmd.player, cmd.hand)
        if coup.style is None:
            raise TableError("not_squeezing", "choose a squeeze style first")
        index = self._turn_index(coup, cmd.card)
        pct = cmd.percent
        if isinstance(pct, bool) or not isinstance(pct, int) or not 0 <= pct <= 100:
            raise TableError("bad_amount", "progress is 0-100")
        self._emit(
            "progress",
            {"hand": cmd.hand, "card": index + 1, "percent": pct, "turner": cmd.player},
        )

    def _reveal(
        self, coup: CoupState, hand: str, index: int, by: str, on_behalf: str | None
    ) -> None:
        slot = coup.hand(hand)[index]
        slot.up, slot.by, slot.on_behalf = True, by, on_behalf
        if on_behalf is not None:
            coup.on_behalf.append({"step": f"turn {hand} card {index + 1}", "player": on_behalf})
        total = hand_total(s.card for s in coup.hand(hand) if s.up)
        self._emit(
            "card",
            {
                "hand": hand,
                "index": index + 1,
                "card": slot.card,
                "by": by,
                "on_behalf": on_behalf,
                "total": total,
            },
        )

    def _reveal_stage(self, coup: CoupState, by: str, on_behalf: str | None) -> None:
        hand = coup.stage_hand
        for i in coup.stage_slots():
            if not coup.hand(hand)[i].up:
                self._reveal(coup, hand, i, by, on_behalf)

    def _advance_coup(self) -> bool:
        """Move the coup on until a turner must act; True once it is settled (§2, §6)."""
        coup = self.coup
        assert coup is not None and self.shoe is not None
        while True:
            hand = coup.stage_hand
            slots = coup.hand(hand)
            if all(slots[i].up for i in coup.stage_slots()):
                coup.style, coup.deadline = None, None
                nxt = self._next_stage(coup)
                if nxt is None:
                    self._settle()
                    return True
                coup.stage = nxt
                continue
            turner = coup.turners[hand]
            if turner is None:  # §6: no Player bet / the house holds: the croupier turns
                self._reveal_stage(coup, c.CROUPIER, None)
                continue
            if coup.deadline is None:
                third = coup.stage.endswith("third")
                timers = self.options.timers
                coup.deadline = self._now + (timers.third_card if third else timers.squeeze)
                self._emit(
                    "turn",
                    {"hand": hand, "turner": turner, "third": third, "deadline": coup.deadline},
                )
            return False

    def _next_stage(self, coup: CoupState) -> str | None:
        """The tableau (§2), step by step; deals a third card face down when one is drawn."""
        assert self.shoe is not None
        pt = hand_total(s.card for s in coup.player)
        bt = hand_total(s.card for s in coup.banker)
        if coup.stage == "player":
            return "banker"
        if coup.stage == "banker":
            if is_natural(pt) or is_natural(bt):
                return None
            if player_draws(pt):
                self._deal_third(coup, "player")
                return "player_third"
            if banker_draws(bt, None):
                self._deal_third(coup, "banker")
                return "banker_third"
            return None
        if coup.stage == "player_third":
            bt2 = hand_total(s.card for s in coup.banker[:2])
            if banker_draws(bt2, card_value(coup.player[2].card)):
                self._deal_third(coup, "banker")
                return "banker_third"
        return None

    def _deal_third(self, coup: CoupState, hand: str) -> None:
        assert self.shoe is not None
        coup.hand(hand).append(CardSlot(self.shoe.draw()))
        self._emit("third_card", {"hand": hand})

    # ------------------------------------------------------------------ settlement
    def _settle(self) -> None:
        """Pay every held wager (§3), record the coup (§8), move the shoe on (§4, §5)."""
        coup = self.coup
        assert coup is not None and self.shoe is not None
        result = finish_coup([s.card for s in coup.player], [s.card for s in coup.banker])
        rid = coup.round_id
        payouts = settlement.pay(self.wallet, self.table_id, coup, result, self.options.paytable)
        summary = {"round_id": rid, "coup_no": coup.coup_no, **result.to_dict()}
        self._emit("result", summary)
        self._emit(
            "settled",
            {"round_id": rid, "payouts": payouts},
            {pid: {**self.money(pid), "net": net} for pid, net in settlement.nets(payouts).items()},
        )
        for pid, bets in coup.held.items():
            if pid in self.players:
                q = self.players[pid]
                q.last_bets = dict(bets)
                q.bets, q.bet_order, q.done = {}, {}, False
        self.results.append(Result.from_coup(result))
        self._roads = self._roads.add(self.results[-1])
        self.shoe_coups.append({"player": list(result.player), "banker": list(result.banker)})
        self.last_result = summary
        self._records.append(
            settlement.round_record(
                table_id=self.table_id,
                shoe_no=self.shoe_no,
                coup=coup,
                result=result,
                payouts=payouts,
                on_behalf=[*self.between_on_behalf, *coup.on_behalf],
                balances_after={pid: self._balance(pid) for pid in coup.held},
                time=self._now,
            )
        )
        self.between_on_behalf = []
        self.coup = None
        self.phase = Phase.BETTING  # between coups; _advance decides what comes next
        self.round_open = False
        # §5: the shoe holder keeps the shoe on Banker or Tie, passes it on Player.
        if coup.holder is not None and coup.holder == self.holder:
            self.holder_coups += 1
        if result.outcome == "player" or coup.holder_forfeits:
            if self.holder is not None:
                self._lose_shoe(
                    self.players[self.holder],
                    "player_won" if result.outcome == "player" else "no_banker_bet",
                )
            elif self.house_holds:
                self.offer_needed = True
        for q in list(self.players.values()):
            if q.leaving:
                self._gone(q)
        # §4: the stop card's coup is finished, one more is dealt, then the shoe ends.
        if coup.last:
            self._end_shoe()
        elif self.shoe.stop_card_out and not self.last_coup_next:
            self.last_coup_next = True
            self._emit("stop_card", {"coups_left": 1})

    def _end_shoe(self, complete: bool = True) -> None:
        """Reveal the seed (§4): anyone can now recompute every card dealt."""
        shoe = self.shoe
        assert shoe is not None
        record = settlement.shoe_record(
            table_id=self.table_id,
            shoe_no=self.shoe_no,
            shoe=shoe,
            cut_by=self.cut_by,
            coups=self.shoe_coups,
            complete=complete,
        )
        self._records.append(record)
        self._emit("shoe_ended", {k: v for k, v in record.items() if k != "kind"})
        self.shoe = None
        self.burned = False
        self.last_coup_next = False

    # ------------------------------------------------------------------ time
    def _tick(self, cmd: c.Tick) -> None:
        now = self._now
        for q in sorted(self.players.values(), key=lambda q: q.id):
            if q.grace_deadline is not None and now >= q.grace_deadline:
                q.grace_deadline = None
                if self.coup is not None and (q.id in self.coup.held or q.id == self.coup.holder):
                    q.leaving = True
                else:
                    self._gone(q)
        if self.offer is not None and now >= self.offer.deadline:
            p = self.players[self.offer.current]
            self._emit("shoe_declined", {"player": p.id, "seat": p.seat, "timeout": True})
            self.between_on_behalf.append({"step": "decline the shoe", "player": p.id})
            self._next_offer()
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
            self._reveal_stage(coup, c.CROUPIER, turner)

    # ------------------------------------------------------------------ closing
    def _close(self, cmd: c.CloseTable) -> None:
        if cmd.player != c.CROUPIER:
            raise TableError("not_allowed", "only the operator closes a table")
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
            self._end_shoe(complete=False)
        self.phase = Phase.CLOSED
        self._emit("closed", {"refunded": coup is not None})

    # ------------------------------------------------------------------ the flow
    def _advance(self) -> None:
        """Move the table on from wherever the last command left it."""
        while self.phase is not Phase.CLOSED:
            if self.coup is not None:
                if not self._advance_coup():
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


_HANDLERS: dict[type[c.Command], Any] = {
    c.Join: Table._join,
    c.Leave: Table._leave,
    c.Sit: Table._sit,
    c.Stand: Table._stand_cmd,
    c.PlaceBet: Table._place,
    c.RemoveBet: Table._remove,
    c.ClearBets: Table._clear,
    c.SameBet: Table._same,
    c.Done: Table._done,
    c.AcceptShoe: Table._accept,
    c.DeclineShoe: Table._decline,
    c.PassShoe: Table._pass,
    c.Cut: Table._cut,
    c.Squeeze: Table._squeeze,
    c.TurnCard: Table._turn_card,
    c.Toss: Table._toss,
    c.Progress: Table._progress,
    c.Disconnect: Table._disconnect,
    c.Reconnect: Table._reconnect,
    c.StartShoe: Table._start_shoe,
    c.Tick: Table._tick,
    c.CloseTable: Table._close,
}
