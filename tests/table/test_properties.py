"""Property tests: random players send random legal and illegal commands to one table.

A Hypothesis ``RuleBasedStateMachine`` drives 2-5 players (plus a stranger who was
never funded, and bettors without a seat: spectators who bet, GAME_RULES §5, at tables
taking 0, 1, 2 or a thousand of them) through joins, seats, bets of any size (illegal
ones too), regret,
DONE, shoe offers, contributions (commit and reveal), cuts, squeezes and turns by whoever,
stands on a break (the gateway's), disconnects and Ticks of
0-30 s, on seeded shoes (and sometimes short stacked slices of one, so shoes end and
new ones are fed whenever ``table.wants_shoe``). After every step it checks:

- money: the wallet sums to 0; players + held + house = what was deposited; the held
  account is exactly the wagers of the coup in play; each stake is the chips placed;
- state: the shoe is held by one player, or by the house, or on offer (never two);
  the holder, the one offered the shoe, the cutter and the Banker turner are seated
  (a bettor without a seat never is one), the Player turner has the highest Player
  wager; the felt's totals are everyone's chips, and no more bettors without a seat
  are in than the table takes; a coup exists exactly in the TURN phase; a timer runs
  whenever someone has to act; a player on a break is seated only while their wager
  is in play, and never offered the shoe;
- cards: what was dealt is exactly the shoe's order from the first card after the burn,
  and the coup's cards are the last ones dealt;
- hidden information: no view (every player and an anonymous spectator) and no event
  as seen by anyone shows a face-down card except to the turner squeezing it; the
  shoe's seed appears nowhere before its reveal;
- events: sequence numbers are gap-free across steps;
- the stored state: what copying the whole table afresh gives, sharing nothing with the
  table or the state stored before; the stored row and the bettors' parts (written only
  when they change) rebuild the table;
- refusals (TableError) and repeated command ids change nothing at all.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from table_helpers import card_strings, check_parts, check_stored_state, has_key

from server.engine.payouts import AREAS
from server.engine.shoe import shuffle_order
from server.ledger.audit import hold_problems
from server.table import MemoryWallet, Table, TableError, TableOptions, Timers, view_event
from server.table.table import Phase
from server.table.views import summary, summary_key
from server.table.views import view as snapshot
from server.vocabulary import commands as c
from server.vocabulary.events import TRANSIENT_KINDS

NAMES = ["p1", "p2", "p3", "p4", "p5"]
STRANGER = "zed"  # never funded; joins sometimes
TABLE = "prop"

who = st.integers(0, 5)
REFUSALS = sorted(c.DEBIT_REFUSALS)
ids = st.one_of(st.none(), st.none(), st.sampled_from(["i1", "i2", "i3"]))
areas = st.sampled_from([*AREAS, "player", "banker", "tie", "foo"])
amounts = st.one_of(
    st.sampled_from([100, 100, 200, 500, 1_000, 1_500, 1_501, 5_000, 10_000, 10_001]),
    st.sampled_from([0, -100, 99, True, 100.0, 2.5, "100", None]),
    st.integers(-10, 25_000),
)
hands = st.sampled_from(["player", "banker", "player", "banker", "dealer"])
styles = st.sampled_from(["peek", "side", "quick", "wiggle"])
dts = st.one_of(
    st.just(0.0), st.sampled_from([1.0, 5.0, 8.0, 10.0, 12.0, 15.0, 30.0]), st.floats(0, 30)
)


def _cmd(
    cls: type[c.Command], **fields: st.SearchStrategy[Any]
) -> st.SearchStrategy[tuple[type, dict]]:
    return st.tuples(st.just(cls), st.fixed_dictionaries(fields))


def make(spec: tuple[type, dict], player: str) -> c.Command | None:
    """The command, or None when it is malformed: a command checks its own shape when
    made, and refuses with the one documented error (TableError), nothing else."""
    cls, fields = spec
    try:
        return cls(player=player, **fields)
    except TableError as exc:
        assert exc.code in MALFORMED, exc
        return None


MALFORMED = {"bad_amount", "bad_area", "bad_seat", "bad_cut", "bad_hand", "bad_style", "bad_card"}


seat_commands = st.one_of(
    _cmd(c.Join, name=st.sampled_from(["", "Ann", "x" * 40])),
    _cmd(c.Sit, seat=st.one_of(st.none(), st.integers(-1, 7), st.just(True))),
    _cmd(c.Stand),
    _cmd(c.Stand, on_break=st.just(True)),  # the gateway's, for a player on a break
    _cmd(c.Leave),
    _cmd(c.Disconnect),
    _cmd(c.Reconnect),
)
bet_commands = st.one_of(
    _cmd(c.PlaceBet, area=areas, amount=amounts, id=ids),
    _cmd(c.RemoveBet, area=areas, amount=st.one_of(st.none(), amounts)),
    _cmd(c.ClearBets),
    _cmd(c.SameBet, id=ids),
    _cmd(c.Done, id=ids),
)
shoe_commands = st.one_of(
    _cmd(c.AcceptShoe),
    _cmd(c.DeclineShoe),
    _cmd(c.PassShoe),
    _cmd(c.Cut, position=st.one_of(st.integers(-5, 420), st.sampled_from([9, 10, 406, 407, True]))),
)
turn_commands = st.one_of(
    _cmd(c.Squeeze, hand=hands, style=styles),
    _cmd(c.TurnCard, hand=hands, card=st.one_of(st.integers(0, 4), st.just(True))),
    _cmd(c.Toss, hand=hands, id=ids),
    _cmd(
        c.Progress,
        hand=hands,
        card=st.integers(0, 4),
        percent=st.one_of(st.integers(-1, 101), st.just(50.5)),
    ),
)

# Where a card string may appear in an event (public data): anywhere else is a leak.
CARD_EVENTS = {"card", "result", "shoe_ended", "burned", "voided"}


class TableMachine(RuleBasedStateMachine):
    table: Table
    wallet: MemoryWallet

    @initialize(
        n=st.integers(2, 5),
        funds=st.lists(st.sampled_from([0, 150, 1_000, 5_000, 100_000]), min_size=5, max_size=5),
        seed=st.binary(min_size=32, max_size=32),
        short=st.integers(0, 2),
        fast=st.booleans(),
        holder_banker=st.booleans(),
        seated_from_start=st.sampled_from([True, True, True, False]),
        bettors=st.sampled_from([1_000, 1_000, 1_000, 2, 1, 0]),
        confirms=st.sampled_from([False, False, True]),
    )
    def setup(
        self, n, funds, seed, short, fast, holder_banker, seated_from_start, bettors, confirms
    ):
        self.names = NAMES[:n]
        # (confirms: an operator's seamless wallet, whose debits the croupier answers)
        self.wallet = MemoryWallet(confirms_holds=confirms)
        for name, amount in zip(self.names, funds, strict=False):
            if amount:
                self.wallet.balances["cashier"] = self.wallet.balance("cashier") - amount
                self.wallet.balances[f"player:{name}"] = amount
        self.deposited = sum(funds[:n])
        timers = (
            Timers(betting=5, squeeze=4, third_card=3, shoe_offer=3, cut=4, grace=20)
            if fast
            else Timers()
        )
        self.options = TableOptions(
            timers=timers, holder_must_bet_banker=holder_banker, seats=6, bettors=bettors
        )
        self.table = Table(TABLE, self.options, self.wallet)
        self.seed = seed
        self.short = short  # 0: real seeded shoes; 1-2: short stacked slices (shoes end)
        self.shoes = 0
        self.now = 0.0
        self.seq = 0
        self.steps = 0
        self.sent_with_id: list[c.Command] = []
        self.unique = 0
        self.stored: dict[str, Any] | None = None  # the last stored state checked
        self.line: tuple[tuple[Any, ...], dict[str, Any]] | None = None  # (key, lobby line)
        self.parts: dict[str, dict[str, Any]] = {}  # the bettors' parts, as stored
        self.turners: set[str] = set()  # the coup's turners (a bettor's bets: public)
        #: The shoe's contributors: each committed while seated, named in public then
        #: (docs/fairness.md §9), and named again in its reveal and its record.
        self.contributors: set[str] = set()
        #: Who cut the shoe, or on whose behalf the croupier did: named in public by
        #: ``shoe_cut`` while seated, and again in the shoe's record (``shoe_ended``).
        self.cutters: set[str] = set()
        self.feed_shoe()
        for name in self.names:  # most runs start with everyone seated: the game moves
            self.apply(c.Join(player=name, name=name.upper()), expect_ok=True)
            if seated_from_start:
                self.apply(c.Sit(player=name), expect_ok=True)

    # ------------------------------------------------------------------ plumbing
    def name(self, i: int) -> str:
        i %= len(self.names) + 1
        return self.names[i] if i < len(self.names) else STRANGER

    def next_seed(self) -> bytes:
        self.shoes += 1
        return bytes((b + self.shoes) % 256 for b in self.seed)

    def feed_shoe(self) -> None:
        if not self.table.wants_shoe:
            return
        seed = self.next_seed()
        if self.short:
            order = shuffle_order(seed, 8)
            cards = tuple(order[: 18 + 6 * self.short])  # 24 or 30 cards
            self.apply(c.StartShoe(cards=cards), expect_ok=True)
        else:
            self.apply(c.StartShoe(seed=seed), expect_ok=True)

    def state(self) -> dict[str, Any]:
        return {
            "table": self.table.to_state(),
            "balances": dict(self.wallet.balances),
            "entries": len(self.wallet.entries),
        }

    def apply(self, cmd: c.Command, dt: float = 0.0, expect_ok: bool = False) -> None:
        self.steps += 1
        self.now += dt
        before = self.state()
        seed_before = self.shoe_seed
        t = self.table
        self.bettors_before = {q.id for q in t.players.values() if t.is_bettor(q)}
        repeated = cmd.id is not None and cmd.id in self.table.recent_ids.get(cmd.player, ())
        allowed = self.table.can(cmd)  # pokerkit's can: answers without changing anything
        assert self.state() == before, f"can({cmd}) changed the table"
        try:
            step = self.table.handle(cmd, self.now)
        except TableError as exc:
            assert not expect_ok, f"{cmd} refused: {exc!r}"
            assert isinstance(exc.code, str) and exc.code
            assert not allowed, f"can() said yes to {cmd}, handle refused it ({exc.code})"
            assert self.state() == before, f"refused {cmd} ({exc.code}) changed the table"
            return
        events = list(step.events)
        assert step.seq == self.table.seq and step.coup_in_progress == self.table.in_coup
        if repeated:
            assert step.duplicate and events == [], f"repeated id {cmd.id} gave events"
            assert self.state() == before, f"repeated id {cmd.id} changed the table"
            return
        assert allowed, f"can() said no to {cmd}, handle took it"
        if step.duplicate:  # it changed nothing (a second DONE, a second disconnect)
            assert events == [] and self.state()["table"]["seq"] == before["table"]["seq"]
        if cmd.id is not None:
            self.sent_with_id.append(cmd)
        # Stored events rise by one; a transient one (a bend) has the seq of the stored
        # event before it, and only its kinds are transient.
        expected, seqs = self.seq, []
        for e in events:
            assert e.transient == (e.kind in TRANSIENT_KINDS), e
            expected += not e.transient
            seqs.append(e.seq)
            assert e.seq == expected, (self.seq, [(x.kind, x.seq) for x in events])
        assert [e.seq for e in step.stored] == list(range(self.seq + 1, expected + 1))
        self.seq = expected
        assert self.table.seq == self.seq
        self.check_events(events, seed_before)
        if self.table.wants_shoe:
            self.feed_shoe()

    # ------------------------------------------------------------------ event checks
    def check_events(self, events, seed_before: str | None) -> None:
        coup = self.table.coup
        viewers: list[str | None] = [*self.table.players, None, "outsider"]
        seated = {q.id for q in self.table.seated()}
        for e in events:  # (a coup's turners are named by its dealt, after betting_closed)
            if e.kind == "dealt":
                self.turners |= {x for x in e.data["turners"].values() if x is not None}
        for n, e in enumerate(events):
            if e.kind == "betting_opened":
                self.turners = set()
            elif e.kind == "shoe_started":
                self.contributors, self.cutters = set(), set()
            elif e.kind == "contribution_committed":
                self.contributors.add(e.data["player"])
            elif e.kind == "shoe_cut":
                self.cutters |= {e.data["by"], e.data["on_behalf"]} - {None}
            self.check_bettors_hidden(e, viewers, seated)
            if e.kind == "shoe_ended":
                assert e.data["seed"] == seed_before  # revealed here, and only here
                continue
            blob = json.dumps(e.to_dict())
            for seed in (seed_before, self.shoe_seed):
                assert seed is None or seed not in blob, f"seed in {e.kind}"
            for v in viewers:
                data = view_event(e, v)["data"]
                if e.kind == "squeeze":
                    has_cards = "cards" in data
                    assert has_cards == (v == e.data["turner"]), f"squeeze cards shown to {v}"
                    if has_cards:
                        assert data["cards"] and all(
                            card_strings([x]) for x in data["cards"].values()
                        )
                    rest = {k: x for k, x in data.items() if k != "cards"}
                    assert card_strings(rest) == [], f"cards in squeeze: {rest}"
                elif e.kind not in CARD_EVENTS:
                    assert card_strings(data) == [], f"{e.kind} shows cards to {v}: {data}"
                    shown = {k: x for k, x in data.items() if k != "actions"}  # (card numbers)
                    if has_key(shown, "cards"):
                        assert isinstance(data["cards"], int), f"{e.kind} has cards: {data}"
            if e.kind == "card":
                hand, index, card = e.data["hand"], e.data["index"], e.data["card"]
                later = [x.data for x in events[n + 1 :] if x.kind == "result"]
                if later:  # settled in this same step: its result names the card
                    assert later[0][hand][index - 1] == card
                else:
                    assert coup is not None
                    slot = coup.hand(hand)[index - 1]
                    assert slot.up and slot.card == card

    def check_bettors_hidden(self, e, viewers: list[str | None], seated: set[str]) -> None:
        """A bettor without a seat's chips are theirs (§5): no one else sees their name
        in an event, unless they turn (or sit down, or chat, or contributed to the shoe or
        cut it while seated: both are public, and named again in the shoe's record)."""
        if e.transient or e.kind == "sat":
            return
        t = self.table
        now = {q.id for q in t.players.values() if t.is_bettor(q)}
        for pid in now | self.bettors_before:
            if pid in seated or pid in self.turners or pid in self.contributors | self.cutters:
                continue
            for v in viewers:
                if v != pid:
                    assert f'"{pid}"' not in json.dumps(view_event(e, v)), (e, v)

    @property
    def shoe_seed(self) -> str | None:
        shoe = self.table.shoe
        return shoe.seed.hex() if shoe is not None and shoe.seed is not None else None

    # ------------------------------------------------------------------ rules: anyone, anything
    # Random commands by random players (legal or not): most are refused, which must
    # change nothing. Grouped in four rules so that the rules below, which move the game
    # on, are chosen often enough for coups to be dealt and shoes to end.
    @rule(i=who, spec=seat_commands)
    def seat_command(self, i, spec):
        cmd = make(spec, self.name(i))
        if cmd is not None:
            self.apply(cmd)

    @rule(i=who, spec=bet_commands)
    def bet_command(self, i, spec):
        cmd = make(spec, self.name(i))
        if cmd is not None:
            self.apply(cmd)

    @rule(i=who, spec=shoe_commands)
    def shoe_command(self, i, spec):
        cmd = make(spec, self.name(i))
        if cmd is not None:
            self.apply(cmd)

    @rule(i=who, spec=turn_commands)
    def turn_command(self, i, spec):
        cmd = make(spec, self.name(i))
        if cmd is not None:
            self.apply(cmd)

    # ------------------------------------------------------------------ rules: the game moves on
    @rule(
        i=who,
        area=st.sampled_from(["player", "banker", "player", "banker", "tie", "player_pair"]),
        amount=st.sampled_from([100, 200, 500, 1_000]),
    )
    def someone_bets(self, i, area, amount):
        self.unique += 1
        self.apply(c.PlaceBet(player=self.name(i), area=area, amount=amount, id=f"u{self.unique}"))

    @precondition(lambda self: self.sent_with_id)
    @rule(k=st.integers(0, 3))
    def resend_a_command(self, k):
        """A client retries a command it already sent (same id): no events, no change."""
        cmd = self.sent_with_id[-1 - k % len(self.sent_with_id)]
        self.apply(cmd)

    @rule(
        i=who,
        area=st.sampled_from(["player", "player", "banker", "tie"]),
        amount=st.sampled_from([100, 200, 500, 1_000, 1_500]),
    )
    def a_spectator_bets(self, i, area, amount):
        """A bettor without a seat (§5): a spectator, or a seated player standing up
        first when there is no coup, bets (refused ``seated_only`` or ``bettors_full``
        when the table takes no more)."""
        pid = self.name(i)
        q = self.table.players.get(pid)
        if q is None:
            self.apply(c.Join(player=pid, name=pid.upper()))
        elif q.seat is not None:
            self.apply(c.Stand(player=pid))
        self.unique += 1
        self.apply(c.PlaceBet(player=pid, area=area, amount=amount, id=f"b{self.unique}"))

    @rule()
    def everyone_done(self):
        for q in self.table.seated():
            if self.table.phase is not Phase.BETTING:
                break
            self.apply(c.Done(player=q.id))

    @rule(
        area=st.sampled_from(["player", "banker", "tie"]), amount=st.sampled_from([100, 300, 1_000])
    )
    def everyone_bets_and_is_done(self, area, amount):
        for q in self.table.seated():
            if self.table.phase is not Phase.BETTING:
                break
            a = (
                "banker"
                if self.options.holder_must_bet_banker and q.id == self.table.holder
                else area
            )
            self.apply(c.PlaceBet(player=q.id, area=a, amount=amount))
            self.apply(c.Done(player=q.id))

    @rule(take=st.booleans())
    def offeree_answers(self, take):
        if self.table.offer is not None:
            p = self.table.offer.current
            self.apply(c.AcceptShoe(player=p) if take else c.DeclineShoe(player=p))

    @rule(refuse=st.sets(st.integers(0, 5), max_size=3), reason=st.sampled_from(REFUSALS))
    def wallet_answers(self, refuse, reason):
        """The croupier's answer to the debits of the round: some refused, the rest stand."""
        debiting = self.table.debiting
        if debiting is not None:
            ids = sorted(debiting)
            refused = {ids[k % len(ids)]: reason for k in refuse} if ids else {}
            self.apply(c.Debited(round_id=self.table.round_id, refused=refused), expect_ok=True)

    @rule(i=who, reveal=st.booleans())
    def player_contributes(self, i, reveal):
        """A player commits to their value for the shoe, or reveals it (fairness.md §9)."""
        name = self.name(i)
        value = hashlib.sha256(f"{name}:{self.table.shoe_no}".encode()).digest()
        if reveal:
            self.apply(c.Contribute(player=name, value=value.hex()))
        else:
            self.apply(c.Contribute(player=name, commitment=hashlib.sha256(value).hexdigest()))

    @rule(position=st.integers(10, 406))
    def cutter_cuts(self, position):
        if self.table.phase is Phase.CUT and self.table.cutter is not None:
            self.apply(c.Cut(player=self.table.cutter, position=position), expect_ok=True)

    @rule(
        action=st.sampled_from(["toss", "squeeze", "squeeze", "card", "card", "progress"]),
        style=styles,
        card=st.integers(1, 3),
    )
    def turner_acts(self, action, style, card):
        coup = self.table.coup
        if coup is None:
            return
        hand = coup.stage_hand
        turner = coup.turners[hand]
        if turner is None:
            return
        if action == "toss":
            spec: tuple[type, dict] = (c.Toss, {"hand": hand})
        elif action == "squeeze":
            spec = (c.Squeeze, {"hand": hand, "style": style})
        elif action == "card":
            spec = (c.TurnCard, {"hand": hand, "card": card})
        else:
            spec = (c.Progress, {"hand": hand, "card": card, "percent": 50})
        cmd = make(spec, turner)
        if cmd is not None:
            self.apply(cmd)

    @rule(style=st.sampled_from(["peek", "side", "quick"]), pct=st.integers(0, 100))
    def turner_squeezes_one_card(self, style, pct):
        coup = self.table.coup
        if coup is None or coup.turners[coup.stage_hand] is None:
            return
        hand, turner = coup.stage_hand, coup.turners[coup.stage_hand]
        if coup.style is None:
            self.apply(c.Squeeze(player=turner, hand=hand, style=style), expect_ok=True)
        down = [i for i in coup.stage_slots() if not coup.hand(hand)[i].up]
        self.apply(
            c.Progress(player=turner, hand=hand, card=down[0] + 1, percent=pct), expect_ok=True
        )
        self.apply(c.TurnCard(player=turner, hand=hand, card=down[-1] + 1), expect_ok=True)

    @rule()
    def holder_passes(self):
        if self.table.holder is not None:
            self.apply(c.PassShoe(player=self.table.holder))

    # ------------------------------------------------------------------ rules: time
    @rule(dt=dts)
    def tick(self, dt):
        self.apply(c.Tick(), dt)

    @rule()
    def restore_from_snapshot(self):
        """A restart: the table is rebuilt from its stored state, on the same wallet."""
        state = json.loads(json.dumps(self.table.to_state()))
        views = {v: snapshot(self.table, v) for v in [*self.table.players, None]}
        balances = dict(self.wallet.balances)
        self.table = Table.from_state(state, self.wallet)
        self.parts = {}  # (a store starting afresh: every bettor's part written next)
        assert self.table.to_state() == state
        assert {v: snapshot(self.table, v) for v in views} == views
        assert self.wallet.balances == balances  # from_state never touches the wallet

    @precondition(lambda self: self.steps > 70 and self.table.phase is not Phase.CLOSED)
    @rule()
    def close(self):
        held_before = {
            pid: sum(b.values())
            for pid, b in (self.table.coup.held if self.table.coup else {}).items()
        }
        balances = {pid: self.wallet.balance(f"player:{pid}") for pid in held_before}
        self.apply(c.CloseTable(), expect_ok=True)
        assert self.table.phase is Phase.CLOSED
        assert self.wallet.balance(f"held:{TABLE}") == 0
        for pid, stake in held_before.items():
            assert self.wallet.balance(f"player:{pid}") == balances[pid] + stake
        self.apply(c.Tick(), 1.0)  # refused: table_closed, changes nothing

    # ------------------------------------------------------------------ the operator's
    @precondition(lambda self: self.steps > 20)
    @rule(k=st.integers(0, 4))
    def operator_voids(self, k):
        """An operator voids the current round (or a round it is not playing: refused)."""
        t = self.table
        rid = [t.round_id, f"{TABLE}-1-1", f"{TABLE}-9-9", t.round_id, t.round_id][k]
        held = {p: sum(b.values()) for p, b in (t.coup.held if t.coup else {}).items()}
        mine = {p: self.wallet.balance(f"player:{p}") for p in held}
        self.apply(c.VoidRound(round_id=rid, reason="a property test"))
        if held and self.table.coup is None:  # voided: every held wager came back
            assert self.wallet.balance(f"held:{TABLE}") == 0
            for pid, stake in held.items():
                assert self.wallet.balance(f"player:{pid}") == mine[pid] + stake

    @rule(on=st.booleans())
    def operator_pauses_or_resumes(self, on):
        self.apply(c.Pause() if on else c.Resume())
        if on and self.table.phase is not Phase.CLOSED:
            assert self.table.paused
            assert (
                self.table.phase is Phase.PAUSED
                or self.table.phase is Phase.REVEAL  # the short reveal finishes first
                or self.table.in_coup
                or any(q.bets for q in self.table.players.values())  # a bettor's too (§5)
            )

    # ------------------------------------------------------------------ invariants
    @invariant()
    def the_stored_state_is_copied_afresh(self):
        """to_state (copied the cheap way, some copies kept between steps) is what
        copying everything afresh gives, and shares nothing with the table or the last
        state taken."""
        self.stored = check_stored_state(self.table, self.stored)

    @invariant()
    def the_same_lobby_key_is_the_same_line(self):
        """The lobby line is made again only when its key changed (a cluster's owner keeps
        it by key, issue 36): whatever a step did, the same key must mean the same line."""
        key, line = summary_key(self.table), summary(self.table)
        if self.line is not None and self.line[0] == key:
            assert line == self.line[1], (key, self.line[1], line)
        self.line = (key, line)

    @invariant()
    def every_hold_has_one_outcome(self):
        t = self.table
        recorded = [r["round_id"] for r in t._records if r["kind"] == "round"]
        held = {f"held:{TABLE}": self.wallet.balance(f"held:{TABLE}")}
        assert hold_problems(self.wallet.entries, recorded, held) == []

    @invariant()
    def money_is_conserved(self):
        w = self.wallet
        assert w.total() == 0
        players = sum(v for k, v in w.balances.items() if k.startswith("player:"))
        stakes = sum(v for k, v in w.balances.items() if k.startswith(f"stake:{TABLE}:"))
        held = w.balance(f"held:{TABLE}")
        assert players + stakes + held + w.balance("house") == self.deposited
        assert all(v >= 0 for k, v in w.balances.items() if k.startswith(("player:", "stake:")))
        coup = self.table.coup
        in_play = sum(sum(b.values()) for b in coup.held.values()) if coup is not None else 0
        assert held == in_play
        for pid, q in self.table.players.items():
            stake = w.balance(f"stake:{TABLE}:{pid}")
            if coup is not None and pid in coup.held:  # held now, no longer staked
                assert stake == 0 and q.bets == coup.held[pid]
            else:  # the stake is exactly the chips on the felt (§7)
                assert stake == sum(q.bets.values())
        for account, amount in w.balances.items():
            if account.startswith(f"stake:{TABLE}:") and amount:
                assert account.split(":", 2)[2] in self.table.players

    @invariant()
    def one_shoe_holder(self):
        t = self.table
        seated = {q.id for q in t.seated()}
        seats = [q.seat for q in t.seated()]
        assert len(seats) == len(set(seats)) and all(1 <= s <= self.options.seats for s in seats)
        assert t.holder is None or t.holder in seated
        if t.phase is Phase.SHOE_OFFER:
            assert t.offer is not None and t.holder is None and t.offer.current in seated
            assert t.next_deadline is not None
        if t.offer is not None:
            assert t.phase is Phase.SHOE_OFFER
        if t.phase in (Phase.CUT, Phase.BETTING, Phase.DEBITING, Phase.TURN):
            assert (t.holder is not None) != t.house_holds, (t.holder, t.house_holds)
            # (a coup of bettors without a seat alone plays out if everyone stood up, and
            # is debited so)
            assert seated or (t.coup is not None and t.coup.held) or t.debiting, t.phase
        assert (t.coup is not None) == (t.phase is Phase.TURN)
        if t.coup is not None:
            assert t.coup.holder == t.holder
            assert t.coup.deadline is not None  # a turner is being waited for, on a timer
            banker, player = t.coup.turners["banker"], t.coup.turners["player"]
            assert banker is None or banker in seated  # the holder (§6)
            wagers = [b.get("player", 0) for b in t.coup.held.values()]
            if player is None:
                assert not any(wagers)
            else:  # the highest Player bet, seated or not (§6)
                assert t.coup.held[player]["player"] == max(wagers)
        if t.phase is Phase.CUT:
            assert t.deadline is not None and t.cutter in seated
        if t.phase is Phase.BETTING and t.deadline is None:
            assert not any(q.bets for q in t.seated())
        if t.phase is Phase.WAITING:
            assert not seated
        if t.phase is Phase.SHUFFLE:
            assert t.shoe is None
        if t.phase is not Phase.CLOSED:
            assert (t.shoe is None) == (t.phase is Phase.SHUFFLE)

    @invariant()
    def the_felt_is_everyones_chips(self):
        """The felt's totals are every chip on it, seated players' and bettors' (§5), and
        no more bettors without a seat are in than the table takes."""
        t = self.table
        totals: dict[str, int] = {}
        for q in t.players.values():
            for area, amount in q.bets.items():
                totals[area] = totals.get(area, 0) + amount
        assert t.chips.totals == totals
        bettors = [q for q in t.players.values() if q.seat is None and q.bets]
        assert t.bettor_count() == len(bettors) <= self.options.bettors
        assert t.felt() == {"totals": dict(sorted(totals.items())), "bettors": len(bettors)}
        for q in bettors:
            assert not q.done and q.id != t.holder and q.id != t.cutter

    @invariant()
    def stored_row_and_parts_rebuild_the_table(self):
        check_parts(self.table, self.parts)

    @invariant()
    def a_break_waits_only_for_a_coup(self):
        """A player who stopped play while their wager was in a coup is seated only
        until it is over, and is never offered the shoe (issue 33). (A closed table is
        over for everyone: its wagers went back, and nobody plays there again.)"""
        t = self.table
        if t.phase is Phase.CLOSED:
            return
        for q in t.players.values():
            if q.on_break:
                assert q.seat is not None and t.wager_in_play(q), q
        if t.offer is not None:
            assert not t.players[t.offer.current].on_break

    @invariant()
    def no_card_dealt_twice(self):
        shoe = self.table.shoe
        if shoe is None:
            return
        start = 1 + shoe.burned if shoe.burn_card is not None else 0
        if shoe.position:
            assert shoe.dealt == shoe.cards[start : shoe.position]
        else:
            assert shoe.dealt == []
        coup = self.table.coup
        if coup is not None:
            p, b = [s.card for s in coup.player], [s.card for s in coup.banker]
            order = [p[0], b[0], p[1], b[1]]
            # third cards leave the shoe Player first, then Banker
            order += p[2:] + b[2:]
            assert shoe.dealt[len(shoe.dealt) - len(order) :] == order

    @invariant()
    def views_hide_what_is_face_down(self):
        t = self.table
        coup = t.coup
        squeezer = (
            coup.turners[coup.stage_hand] if coup is not None and coup.style is not None else None
        )
        seed = self.shoe_seed
        for v in [*t.players, None, "outsider"]:
            view = snapshot(t, v)
            blob = json.dumps(view)
            if seed is not None:
                assert seed not in blob
            if coup is not None:
                for hand in ("player", "banker"):
                    for i, (slot, shown) in enumerate(
                        zip(coup.hand(hand), view["coup"][hand], strict=True)
                    ):
                        mine = (
                            v is not None
                            and v == squeezer
                            and hand == coup.stage_hand
                            and i in coup.stage_slots()
                        )
                        if slot.up or mine:
                            assert shown["card"] == slot.card
                        else:
                            assert shown["card"] is None, f"{v} sees face-down {hand} card {i + 1}"
            rest = {
                k: x for k, x in view.items() if k not in ("coup", "last_result", "roads", "shoe")
            }
            assert card_strings(rest) == [], rest
            if view["shoe"] is not None:
                shoe = {k: x for k, x in view["shoe"].items() if k != "burn"}
                assert card_strings(shoe) == []
            if view["coup"] is not None:
                others = {k: x for k, x in view["coup"].items() if k not in ("player", "banker")}
                assert card_strings(others) == []


TableMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestTableProperties = pytest.mark.slow(TableMachine.TestCase)  # seconds of examples


class LongTableMachine(TableMachine):
    """The same machine with longer runs: more coups per run, so shoes end and restart."""


LongTableMachine.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestTablePropertiesLong = pytest.mark.slow(LongTableMachine.TestCase)
