"""A small, pure harness for the table state machine (no event loop, no clock).

``TableHarness`` owns a :class:`Table` over a funded :class:`MemoryWallet`, a fake
clock (``now``) and the list of every event emitted. It joins and seats players,
stacks shoes, moves time on and can play a whole coup (bets -> DONE -> turners TOSS).

Stacked shoes are composed from coup blocks whose outcome is checked with
:func:`server.engine.coup.resolve_coup` when the block is made, so a test states the
outcome it relies on and the harness proves the cards give it.

conftest.py registers this module as ``table_helpers`` (a unique name, so another test
folder's ``helpers.py`` can never shadow it).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pytest

from server.engine.cards import parse_card
from server.engine.coup import Coup, resolve_coup
from server.table import MemoryWallet, Table, TableError, TableOptions, Timers, view_event
from server.table.persistence import VERSION
from server.table.table import Phase
from server.vocabulary import commands as c
from server.vocabulary.events import Event, Step

CASHIER = "cashier"
HOUSE = "house"
DEFAULT_FUNDS = 100_000


# ---------------------------------------------------------------------- coup blocks
def coup_block(cards: str | Sequence[str], outcome: str | None = None) -> list[str]:
    """The cards of one coup in shoe order, checked: ``outcome`` must be what they give.

    Exactly the cards the coup uses (4-6) must be given: extra cards would be dealt
    to the next coup.
    """
    seq = cards.split() if isinstance(cards, str) else list(cards)
    seq = [parse_card(x) for x in seq]
    coup = resolve_coup([*seq, "Kc", "Kc"])  # pad: resolve_coup needs the draws' cards
    assert coup.cards_used == len(seq), f"{seq} uses {coup.cards_used} cards, not {len(seq)}"
    if outcome is not None:
        assert coup.outcome == outcome, f"{seq} gives {coup.outcome}, not {outcome}"
    return seq


def resolved(block: Sequence[str]) -> Coup:
    return resolve_coup([*block, "Kc", "Kc"])


# Player 9 (natural) against Banker 2.
PLAYER_WIN = coup_block("9s Ks Th 2d", "player")
# Banker 9 (natural) against Player 0.
BANKER_WIN = coup_block("Ks 9s Th Kd", "banker")
# 9 - 9 naturals.
TIE = coup_block("9s 9h Ks Kh", "tie")
# Player 2+3 = 5 draws 4 -> 9; Banker K+6 = 6 stands on a third card of 4: Player 9-6.
PLAYER_WIN_THIRD = coup_block("2s Ks 3s 6s 4s", "player")
# Player A+2 = 3 draws 5 -> 8; Banker K+2 = 2 draws on anything: 7 -> 9; Banker 9-8.
BANKER_WIN_BOTH_THIRD = coup_block("As Kh 2s 2h 5s 7h", "banker")
# Player 7+K = 7 stands; Banker 2+3 = 5 draws (Player stood): 2 -> 7. 7-7 tie.
TIE_BANKER_THIRD = coup_block("7s 2h Kd 3h 2c", "tie")
# Player 4+4 (pair) = 8 natural; Banker 6+K = 6. Player wins with a Player pair.
PLAYER_PAIR_WIN = coup_block("4s 6h 4d Kh", "player")
# Banker wins with 6: Player 7+K = 7? no: Player 5+K = 5 draws K -> 5; Banker 6+K = 6
# stands on a third card of 0: Banker 6-5 (no-commission pays half; Super 6).
BANKER_SIX = coup_block("5s 6h Kd Kh Ks", "banker")

FILLER = BANKER_WIN  # what a stacked shoe deals after the planned coups


def stack(*blocks: Sequence[str], pad: int = 24) -> tuple[str, ...]:
    """A stacked shoe: the blocks in order, then ``pad`` cards of Banker-winning coups.

    With the default padding the stop card (16 from the end) lies inside the padding,
    so the planned coups never bring it out.
    """
    cards: list[str] = [x for b in blocks for x in b]
    filler: list[str] = []
    while len(filler) < pad:
        filler.extend(FILLER)
    return tuple(cards + filler[:pad])


# ---------------------------------------------------------------------- options
def fast_timers(**over: float) -> Timers:
    """Every timer at 0 (a Tick at the same ``now`` fires it), unless overridden."""
    base = {f: 0.0 for f in ("betting", "squeeze", "third_card", "shoe_offer", "cut", "grace")}
    base.update(over)
    return Timers(**base)


# ---------------------------------------------------------------------- the harness
class TableHarness:
    """A table, its wallet, a clock and the events emitted so far."""

    def __init__(
        self,
        options: TableOptions | None = None,
        *,
        table_id: str = "t1",
        wallet: MemoryWallet | None = None,
        now: float = 1000.0,
    ) -> None:
        self.wallet = wallet if wallet is not None else MemoryWallet()
        self.options = options or TableOptions()
        self.table = Table(table_id, self.options, self.wallet)
        self.table_id = table_id
        self.now = now
        self.events: list[Event] = []
        self.last: list[Event] = []
        self.step: Step | None = None  # the last handled command's result
        self._ids = 0

    # -- money -----------------------------------------------------------------------
    def fund(self, player: str, amount: int = DEFAULT_FUNDS) -> None:
        """Deposit play money from the cashier (the cashier goes negative: sum stays 0)."""
        self.wallet.balances[CASHIER] = self.wallet.balance(CASHIER) - amount
        acct = f"player:{player}"
        self.wallet.balances[acct] = self.wallet.balance(acct) + amount

    def balance(self, player: str) -> int:
        """The player's balance as this table shows it: money on no table + stake here."""
        return self.available(player) + self.stake(player)

    def available(self, player: str) -> int:
        """``player:<id>``: what the player may still place (§7)."""
        return self.wallet.balance(f"player:{player}")

    def stake(self, player: str) -> int:
        """``stake:<table>:<id>``: the chips placed at this table, not yet held."""
        return self.wallet.balance(f"stake:{self.table_id}:{player}")

    def held(self) -> int:
        return self.wallet.balance(f"held:{self.table_id}")

    # -- commands ----------------------------------------------------------------------
    def do(self, cmd: c.Command, dt: float = 0.0) -> list[Event]:
        """Handle one command ``dt`` seconds after the last; remember its events."""
        self.now += dt
        self.step = self.table.handle(cmd, self.now)
        evs = list(self.step.events)
        assert self.step.seq == self.table.seq
        if evs:
            # Stored events rise by one; a transient one (a bend) has the seq before it.
            seq = self.events[-1].seq if self.events else evs[0].seq - (not evs[0].transient)
            for e in evs:
                seq += not e.transient
                assert e.seq == seq, "seq gap"
            assert seq == self.table.seq
        self.events.extend(evs)
        self.last = evs
        return evs

    def refuse(self, cmd: c.Command, code: str, dt: float = 0.0) -> TableError:
        """``cmd`` must raise TableError(code) and change nothing at all; ``verify``
        and ``can`` must say so beforehand, without changing anything either."""
        before = self.snapshot()
        assert not self.table.can(cmd), f"can() accepts {cmd}"
        with pytest.raises(TableError) as verified:
            self.table.verify(cmd)
        assert verified.value.code == code, f"verify({cmd}): {verified.value!r}"
        with pytest.raises(TableError) as info:
            self.table.handle(cmd, self.now + dt)
        assert info.value.code == code, f"{cmd}: {info.value!r}, expected {code!r}"
        assert self.snapshot() == before, f"{cmd} was refused but changed the table"
        return info.value

    @staticmethod
    def malformed(make: Callable[[], c.Command], code: str) -> TableError:
        """Making the command must raise TableError(code): it checks its own shape."""
        with pytest.raises(TableError) as info:
            make()
        assert info.value.code == code, f"{info.value!r}, expected {code!r}"
        return info.value

    def snapshot(self) -> dict[str, Any]:
        """Everything a refused command must leave alone: table state and money."""
        return {
            "state": self.table.to_state(),
            "balances": dict(self.wallet.balances),
            "entries": len(self.wallet.entries),
        }

    def tick(self, dt: float = 0.0) -> list[Event]:
        return self.do(c.Tick(), dt)

    def tick_to_deadline(self) -> list[Event]:
        """Move the clock to the table's next deadline and Tick."""
        deadline = self.table.next_deadline
        assert deadline is not None, "no timer is running"
        return self.do(c.Tick(), max(0.0, deadline - self.now))

    def next_id(self) -> str:
        self._ids += 1
        return f"cmd-{self._ids}"

    # -- players -----------------------------------------------------------------------
    def join(self, player: str, *, funds: int | None = DEFAULT_FUNDS) -> list[Event]:
        if funds:
            self.fund(player, funds)
        return self.do(c.Join(player=player, name=player.title()))

    def sit(self, player: str, seat: int | None = None) -> list[Event]:
        return self.do(c.Sit(player=player, seat=seat))

    def seat(self, players: Mapping[str, int] | Iterable[str], funds: int = DEFAULT_FUNDS) -> None:
        """Join, fund and seat players: ``{"alice": 3, ...}`` or names (lowest free seats)."""
        items = players.items() if isinstance(players, Mapping) else ((p, None) for p in players)
        for p, s in items:
            self.join(p, funds=funds)
            self.sit(p, s)

    def start(
        self, cards: Sequence[str] | None = None, *, seed: bytes | None = None
    ) -> list[Event]:
        if cards is not None:
            return self.do(c.StartShoe(cards=tuple(cards)))
        return self.do(c.StartShoe(seed=seed))

    def accept(self, player: str) -> list[Event]:
        return self.do(c.AcceptShoe(player=player))

    def decline(self, player: str) -> list[Event]:
        return self.do(c.DeclineShoe(player=player))

    def bet(self, player: str, area: str, amount: int) -> list[Event]:
        return self.do(c.PlaceBet(player=player, area=area, amount=amount))

    def done(self, player: str) -> list[Event]:
        return self.do(c.Done(player=player))

    def toss(self, player: str, hand: str) -> list[Event]:
        return self.do(c.Toss(player=player, hand=hand))

    def setup(
        self,
        players: Mapping[str, int] | Iterable[str],
        cards: Sequence[str],
        holder: str | None = None,
    ) -> None:
        """Seat players, start a stacked shoe; ``holder`` accepts (earlier seats decline)."""
        self.seat(players)
        self.start(cards)
        if holder is not None:
            self.take_shoe(holder)

    def take_shoe(self, holder: str) -> None:
        """Decline the offer round until ``holder`` is offered the shoe, who accepts."""
        for _ in range(len(self.table.players) + 1):
            offer = self.table.offer
            assert offer is not None, "no shoe offer in progress"
            if offer.current == holder:
                self.accept(holder)
                return
            self.decline(offer.current)
        raise AssertionError(f"{holder} was never offered the shoe")

    # -- a coup --------------------------------------------------------------------------
    def place(self, bets: Mapping[str, Mapping[str, int]]) -> None:
        for player, areas in bets.items():
            for area, amount in areas.items():
                self.bet(player, area, amount)

    def done_all(self) -> list[Event]:
        out: list[Event] = []
        for q in self.table.seated():
            if self.table.phase is not Phase.BETTING:
                break
            if not q.done:
                out += self.done(q.id)
        return out

    def turn_all(self) -> list[Event]:
        """Every turner TOSSes their stage until the coup is settled."""
        out: list[Event] = []
        while self.table.coup is not None:
            coup = self.table.coup
            hand = coup.stage_hand
            turner = coup.turners[hand]
            assert turner is not None, "the croupier turns without waiting"
            out += self.toss(turner, hand)
        return out

    def play_coup(self, bets: Mapping[str, Mapping[str, int]]) -> list[Event]:
        """Place ``bets``, everyone seated presses DONE, the turners TOSS. The coup's events."""
        assert self.table.phase is Phase.BETTING, self.table.phase
        start = len(self.events)
        self.place(bets)
        self.done_all()
        assert "betting_closed" in self.kinds(self.events[start:]), "betting did not close"
        self.turn_all()
        return self.events[start:]

    # -- reading events ------------------------------------------------------------------
    def kinds(self, events: Iterable[Event] | None = None) -> list[str]:
        return [e.kind for e in (self.events if events is None else events)]

    def find(self, kind: str, events: Iterable[Event] | None = None) -> list[Event]:
        return [e for e in (self.events if events is None else events) if e.kind == kind]

    def one(self, kind: str, events: Iterable[Event] | None = None) -> Event:
        found = self.find(kind, events)
        assert len(found) == 1, f"{len(found)} {kind!r} events: {self.kinds(events)}"
        return found[0]

    def result(self, events: Iterable[Event] | None = None) -> dict[str, Any]:
        return self.find("result", events)[-1].data

    @property
    def phase(self) -> Phase:
        return self.table.phase


# ---------------------------------------------------------------------- the stored state
def rebuilt_state(t: Table, *, spectators: bool = True) -> dict[str, Any]:
    """What ``t.to_state(spectators=...)`` must equal, copied the long way: every field
    deep-copied afresh, nothing cached (the table's to_state copies the cheap way and
    keeps copies between steps: the two are held together). The stored row
    (``spectators=False``) keeps the seated players, in seat order, and of the wagers,
    command ids and actions sent only theirs and those of players gone: a bettor
    without a seat is in their own part (:func:`check_parts`)."""
    coup = t.coup
    deep = copy.deepcopy

    def stored(pid: str) -> bool:
        q = t.players.get(pid)
        return spectators or q is None or q.seat is not None

    kept = list(t.players.values()) if spectators else t.seated()
    coup_state = None
    if coup is not None:
        coup_state = dataclasses.asdict(coup)
        coup_state["stage"] = coup.stage.value
        coup_state["held"] = {p: b for p, b in coup_state["held"].items() if stored(p)}
        before = coup_state["balances_before"]
        coup_state["balances_before"] = {p: v for p, v in before.items() if stored(p)}
    sent = t.sent_actions.stored()
    return {
        "version": VERSION,
        "table_id": t.table_id,
        "options": t.options.to_dict(),
        "seq": t.seq,
        "phase": t.phase.value,
        "deadline": t.deadline,
        "players": [dataclasses.asdict(q) for q in kept],
        "shoe": None if t.shoe is None else deep(t.shoe.to_dict()),
        "shoe_no": t.shoe_no,
        "shoe_coups": [{h: list(v) for h, v in x.items()} for x in t.shoe_coups],
        "results": [dataclasses.asdict(r) for r in t.results],
        "last_coup_next": t.last_coup_next,
        "burned": t.burned,
        "holder": t.holder,
        "house_holds": t.house_holds,
        "holder_coups": t.holder_coups,
        "offer_needed": t.offer_needed,
        "offer": None if t.offer is None else dataclasses.asdict(t.offer),
        "anchor_seat": t.anchor_seat,
        "coup": coup_state,
        "debiting": None
        if t.debiting is None
        else {p: deep(b) for p, b in t.debiting.items() if stored(p)},
        "coup_no": t.coup_no,
        "round_open": t.round_open,
        "counter": t.counter,
        "draining": t.draining,
        "paused": t.paused,
        "recent_ids": deep(t.recent_ids) if spectators else _row_ids(t),
        "sent_actions": deep(sent)
        if spectators
        else {q.id: sent[q.id] for q in kept if q.id in sent},
        "last_result": deep(t.last_result),
        "cut_by": deep(t.cut_by),
        "cut_offered_to": t.cut_offered_to,
        "between_on_behalf": deep(t.between_on_behalf),
        "contributions": None if t.contributions is None else dataclasses.asdict(t.contributions),
    }


def containers(obj: Any, skip: Iterable[Any] = ()) -> set[int]:
    """The ids of every dict and list reachable from ``obj`` (through containers and
    objects' attributes), but those under the objects in ``skip``."""
    out: set[int] = set()
    seen = {id(x) for x in skip}
    todo = [obj]
    while todo:
        x = todo.pop()
        if type(x) in _SCALARS or id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, dict):
            out.add(id(x))
            todo.extend(v for v in x.values() if type(v) not in _SCALARS)
        elif isinstance(x, list):
            out.add(id(x))
            todo.extend(v for v in x if type(v) not in _SCALARS)
        elif isinstance(x, tuple | set | frozenset):
            todo.extend(x)
        else:
            todo.extend(getattr(x, "__dict__", {}).values())
            for name in getattr(type(x), "__slots__", ()):
                todo.append(getattr(x, name, None))
    return out


_SCALARS = {str, bytes, int, float, bool, type(None)}


def check_stored_state(t: Table, earlier: dict[str, Any] | None = None) -> dict[str, Any]:
    """``t.to_state()`` and the stored ``to_state(spectators=False)`` equal
    :func:`rebuilt_state` (and in the same key order, so the stored row is the same
    text); every dict and list in them is their own (none of the table's, none of
    ``earlier``'s, another state taken before), but the last coup's result and the
    players' lists of command ids, which the table never changes in place. (The rows
    share some parts while unchanged: tests/table/test_stored_state.py.) Returns the
    stored state."""
    for spectators in (True, False):
        state = t.to_state(spectators=spectators)
        want = rebuilt_state(t, spectators=spectators)
        assert state == want
        assert json.dumps(state, default=repr) == json.dumps(want, default=repr)
        shared = t.last_result
        mine = containers(state, skip=[shared])
        ids = list(t.recent_ids.values())  # (the row shares them: never changed in place)
        table = containers(t, skip=[shared, t.wallet, t.options, t._records, t._copies, *ids])
        assert not mine & table, "aliases the table"
        if earlier is not None:
            assert not mine & containers(earlier, skip=[shared]), "aliases an earlier state"
        earlier = state
    assert earlier is not None
    return earlier


def _row_ids(t: Table) -> dict[str, Any]:
    """The ids the stored row keeps, the long way: the seated players', and the 256 most
    recent of the others but the bettors without a seat (theirs are in their parts)."""
    seated = {q.id for q in t.seated()}
    others = [
        p
        for p in t.recent_ids
        if p not in seated and not (p in t.players and t.is_bettor(t.players[p]))
    ][-256:]
    keep = seated | set(others)
    return {p: copy.deepcopy(v) for p, v in t.recent_ids.items() if p in keep}


def check_parts(t: Table, parts: dict[str, dict[str, Any]]) -> None:
    """The stored row and the bettors' parts, as a store keeps them (``parts``: every
    part written so far, updated here with the table's latest), rebuild the table:
    everyone but the plain spectators (who are not stored), every wager and command id,
    the felt (GAME_RULES §5, §8)."""
    # (the row before the parts are taken, as the actor's commit makes them: while the
    # step's touched players are still marked, the row asks only them who bets)
    row = json.loads(json.dumps(t.to_state(spectators=False)))
    assert row["recent_ids"] == _row_ids(t)
    for pid, part in t.take_parts().items():
        if part is None:
            assert pid in parts, f"{pid}'s part goes, but none was stored"
            del parts[pid]
        else:
            parts[pid] = json.loads(json.dumps(part))
    back = Table.from_state(row, MemoryWallet(), parts)
    want = t.to_state()
    got = back.to_state()
    bettors = {q.id for q in t.players.values() if t.is_bettor(q)}
    assert set(parts) == bettors, (sorted(parts), sorted(bettors))
    stored = {q.id for q in t.players.values() if q.seat is not None} | bettors
    kept_ids = set(_row_ids(t)) | {p for p in bettors if p in t.recent_ids}
    for state in (want, got):
        state["players"] = sorted(
            (p for p in state["players"] if p["id"] in stored), key=lambda p: p["id"]
        )
        state["recent_ids"] = {p: v for p, v in state["recent_ids"].items() if p in kept_ids}
        state["sent_actions"] = {}  # (a bettor's are not stored: sent again after a restart)
    assert got == want
    assert back.chips.totals == t.chips.totals and back.bettor_count() == t.bettor_count()


def card_strings(obj: Any) -> list[str]:
    """Every string in a JSON-like value that is a card (``As``, ``Td``...)."""
    out: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, str):
            if len(x) == 2 and x[0] in "A23456789TJQK" and x[1] in "shdc":
                out.append(x)
        elif isinstance(x, Mapping):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, list | tuple):
            for v in x:
                walk(v)

    walk(obj)
    return out


def has_key(obj: Any, key: str) -> bool:
    if isinstance(obj, Mapping):
        return key in obj or any(has_key(v, key) for v in obj.values())
    if isinstance(obj, list | tuple):
        return any(has_key(v, key) for v in obj)
    return False


def viewed(events: Iterable[Event], viewer: str | None) -> list[dict[str, Any]]:
    return [view_event(e, viewer) for e in events]


def dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


__all__ = [
    "BANKER_SIX",
    "BANKER_WIN",
    "BANKER_WIN_BOTH_THIRD",
    "CASHIER",
    "DEFAULT_FUNDS",
    "FILLER",
    "HOUSE",
    "PLAYER_PAIR_WIN",
    "PLAYER_WIN",
    "PLAYER_WIN_THIRD",
    "TIE",
    "TIE_BANKER_THIRD",
    "TableHarness",
    "card_strings",
    "check_stored_state",
    "containers",
    "coup_block",
    "dumps",
    "fast_timers",
    "has_key",
    "rebuilt_state",
    "resolved",
    "stack",
    "viewed",
]
