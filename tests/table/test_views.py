"""One place decides what a viewer sees (server/table/views.py): a scripted session walks
every event kind a table emits and every reply that carries game data (the snapshot of
``join``, the lobby line of ``tables``, a player's ``history``, the ``roads`` and the
public composition the odds come from) through it, for every viewer: each seated
player, a spectator and an anonymous watcher. Nothing anyone receives holds an undealt
card, a face-down card (but the squeezing turner's own), a face-down burned card, a
shoe's seed before ``shoe_ended``, another player's money or another player's actions.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

import pytest
from table_helpers import PLAYER_WIN_THIRD, TableHarness, card_strings, stack

from server.engine.cards import shoe_cards
from server.table import TableOptions, Timers
from server.table.table import Phase
from server.table.views import (
    own_round,
    public_composition,
    summary,
    view,
    view_event,
)
from server.vocabulary import commands as c
from server.vocabulary.events import EVENT_KINDS, TRANSIENT_KINDS, Event

SEED = bytes(range(32))
MONEY = {"balance", "available", "net", "balances"}
# Where a card may appear in an event's public data: it is face up (or revealed) there.
CARD_EVENTS = {"card", "result", "shoe_ended", "burned"}


def walk(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    out = [(path, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += walk(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += walk(v, (*path, i))
    return out


class Session:
    """A table played through every event kind, with everything checked as it goes."""

    def __init__(self) -> None:
        timers = Timers(betting=10, squeeze=5, third_card=5, shoe_offer=5, cut=5, grace=30)
        self.h = TableHarness(TableOptions(decks=6, stop_offset=100, timers=timers, seats=4))
        self.viewers: list[str | None] = ["ann", "bob", "cat", "spec", None]
        self.kinds: Counter[str] = Counter()
        self.snapshots = 0

    def do(self, cmd: c.Command, dt: float = 0.0) -> list[Event]:
        seed = self.seed()
        evs = self.h.do(cmd, dt)
        for e in evs:
            self.kinds[e.kind] += 1
            for v in self.viewers:
                check_event(e, v, seed)
        for v in self.viewers:
            self.check_snapshot(v, seed)
        return evs

    def seed(self) -> str | None:
        shoe = self.h.table.shoe
        return shoe.seed.hex() if shoe is not None and shoe.seed is not None else None

    def check_snapshot(self, viewer: str | None, seed: str | None) -> None:
        t = self.h.table
        snap = view(t, viewer)
        self.snapshots += 1
        text = json.dumps(snap)
        assert seed is None or seed not in text, "the seed in a snapshot"
        coup = t.coup
        squeezer = coup.turners[coup.stage_hand] if coup is not None and coup.style else None
        for path, value in walk(snap):
            if isinstance(value, str) and card_strings([value]):
                where = path[:2]
                if where == ("shoe", "burn"):
                    continue  # the face-up burn card
                if path[0] == "last_result":
                    continue  # a finished coup's cards
                assert path[0] == "coup" and path[1] in ("player", "banker"), path
                assert coup is not None
                slot = coup.hand(path[1])[path[2]]
                assert slot.up or (viewer == squeezer and path[1] == coup.stage_hand), path
            if path and path[-1] in MONEY:
                assert path[:1] == ("you",), f"money at {path} for {viewer}"
        you = snap.get("you")
        if viewer in t.players:
            assert you is not None and you["player"] == viewer
            assert you["actions"] == t.actions(viewer)
        else:
            assert you is None


def check_event(e: Event, viewer: str | None, seed: str | None) -> None:
    assert e.kind in (TRANSIENT_KINDS if e.transient else EVENT_KINDS)
    assert not (e.transient and e.private), "a transient event has no private part"
    seen = view_event(e, viewer)
    data = seen["data"]
    own = (e.private or {}).get(viewer or "", {})
    assert set(data) == set(e.data) | set(own), "private parts to someone else"
    if e.kind != "shoe_ended":
        assert seed is None or seed not in json.dumps(data), f"seed in {e.kind}"
    for path, value in walk(data):
        if (path and path[-1] in MONEY) or path[:1] == ("actions",):
            assert path[0] in own, f"{e.kind}: {path} for {viewer}"
        if isinstance(value, str) and card_strings([value]):
            if e.kind == "squeeze":
                assert path[0] == "cards" and viewer == e.data["turner"], (e.kind, viewer)
            else:
                assert e.kind in CARD_EVENTS, f"a card in {e.kind} for {viewer}"
    if e.kind == "shoe_ended":
        assert data["seed"] is not None  # revealed here, and only here


@pytest.mark.slow
def test_every_event_and_reply_kind_passes_through_views() -> None:
    s = Session()
    h = s.h
    for name, seat in (("ann", 1), ("bob", 2)):
        h.fund(name)
        s.do(c.Join(player=name, name=name.title()))
        s.do(c.Sit(player=name, seat=seat))
    h.fund("cat")
    s.do(c.Join(player="cat", name="Cat"))
    s.do(c.Join(player="spec", name="Spec"))
    s.do(c.Chat(player="spec", text="good luck"))  # (transient: shown, never stored)
    s.do(c.StartShoe(seed=SEED))
    s.do(c.DeclineShoe(player="ann"))
    s.do(c.DeclineShoe(player="bob"))  # the house holds; ann cuts
    assert h.phase is Phase.CUT
    values = {"ann": bytes([1]) * 32, "bob": bytes([2]) * 32}
    for name, value in values.items():  # contribution_committed
        s.do(c.Contribute(player=name, commitment=hashlib.sha256(value).hexdigest()))
    s.do(c.Cut(player="ann", position=120))  # reveal_opened
    for name, value in values.items():  # contribution_revealed; contributions_closed,
        s.do(c.Contribute(player=name, value=value.hex()))  # shoe_cut, burned, betting
    s.do(c.Tick(), 10)  # betting_waiting
    s.do(c.PlaceBet(player="bob", area="player", amount=500))  # betting_timer
    s.do(c.PlaceBet(player="ann", area="banker", amount=300))
    s.do(c.Disconnect(player="ann"))
    s.do(c.Reconnect(player="ann"))
    s.do(c.Sit(player="cat", seat=3))
    s.do(c.Stand(player="cat"))
    s.do(c.Done(player="ann"))
    s.do(c.Done(player="bob"))  # betting_closed, dealt, turn
    s.do(c.Squeeze(player="bob", hand="player", style="peek"))
    s.do(c.Progress(player="bob", hand="player", card=1, percent=50))
    s.do(c.TurnCard(player="bob", hand="player", card=1))
    s.do(c.Stand(player="ann", on_break=True))  # stand_after_coup: her wager is in play
    s.do(c.Tick(), 5)  # the croupier turns the rest on bob's behalf
    while h.table.coup is not None:
        s.do(c.Tick(), 5)
    assert h.table.players["ann"].seat is None  # settled: she stood (her copy: "break")
    s.do(c.Sit(player="ann", seat=1))
    # Play on to the end of the shoe: offers, passes, third cards, the stop card.
    shoes = h.table.shoe_no
    h.wallet.confirms_holds = True  # one coup through an operator's wallet's debits
    while h.table.shoe_no == shoes and h.table.shoe is not None:
        t = h.table
        if t.phase is Phase.DEBITING:
            s.do(c.Debited(round_id=t.round_id, refused={"ann": "limit_reached"}))
            h.wallet.confirms_holds = False
        elif t.offer is not None:
            s.do(c.AcceptShoe(player=t.offer.current))
        elif t.phase is Phase.CUT:
            assert t.cutter is not None
            s.do(c.Cut(player=t.cutter, position=150))
        elif t.phase is Phase.BETTING:
            if t.holder is not None and t.holder_coups >= 1 and s.kinds["shoe_passed"] == 0:
                s.do(c.PassShoe(player=t.holder))
                continue
            if s.kinds["voided"] == 0:  # the operator pauses, voids, resumes
                s.do(c.PlaceBet(player="bob", area="player", amount=100))
                s.do(c.Pause())  # paused: the round on the felt goes on...
                s.do(c.VoidRound(round_id=t.round_id, reason="a test void"))  # voided
                assert h.phase is Phase.PAUSED  # ... voided, nothing opens
                s.do(c.Resume())  # resumed: betting opens again
                continue
            s.do(c.PlaceBet(player="bob", area="player", amount=100))
            s.do(c.PlaceBet(player="ann", area="banker", amount=100))
            for q in ("ann", "bob"):
                if h.table.phase is Phase.BETTING:
                    s.do(c.Done(player=q))
        elif t.phase is Phase.TURN:
            assert t.coup is not None
            turner = t.coup.turners[t.coup.stage_hand]
            assert turner is not None
            s.do(c.Toss(player=turner, hand=t.coup.stage_hand))
    s.do(c.StartShoe(seed=bytes(range(1, 33))))
    s.do(c.SetDraining(on=True))
    s.do(c.Stand(player="ann"))
    s.do(c.Stand(player="bob"))  # nobody seated: waiting
    s.do(c.Sit(player="ann", seat=1))
    s.do(c.CloseTable())
    missing = (EVENT_KINDS | TRANSIENT_KINDS) - set(s.kinds)
    assert not missing, f"the walk missed {missing}"

    # The replies that carry game data: the lobby line (the same for everyone)...
    line = summary(h.table)
    assert not card_strings(line) and not MONEY & {p[-1] for p, _ in walk(line) if p}
    # ... and each player's recall of every round.
    records = [r for r in h.table.drain_records() if r["kind"] == "round"]
    assert records
    for record in records:
        for player in ("ann", "bob", "cat"):
            mine = own_round(record, player)
            assert "players" not in mine and "balances" not in mine
            assert all(b["player"] == player for b in mine["bets"])
            assert mine["balance"] == record["balances"].get(player)
            assert mine["commission"] == sum(b["commission"] for b in mine["bets"])
            assert {
                k: v for k, v in mine.items() if k not in ("bets", "balance", "commission")
            } == {
                k: v
                for k, v in record.items()
                if k not in ("bets", "balances", "players", "commission")
            }  # the cards, the result, the turners: public


def test_the_public_composition_leaves_out_what_nobody_has_seen() -> None:
    h = TableHarness(TableOptions(decks=6))
    assert public_composition(h.table) is None  # no shoe yet
    h.seat({"ann": 1})
    h.start(seed=SEED)
    h.accept("ann")
    h.do(c.Cut(player="ann", position=100))
    shoe = h.table.shoe
    assert shoe is not None and shoe.burn_card is not None and shoe.burned >= 1
    counts = public_composition(h.table)
    assert counts is not None
    full = Counter(card[0] for card in shoe_cards(6))
    assert sum(counts.values()) == len(shoe_cards(6)) - 1  # the face-down burned: unknown
    assert counts[shoe.burn_card[0]] == full[shoe.burn_card[0]] - 1
    h.bet("ann", "banker", 100)
    h.done("ann")
    assert public_composition(h.table) is None  # a coup is being dealt
    h.turn_all()
    counts = public_composition(h.table)
    assert counts is not None
    assert sum(counts.values()) == len(shoe_cards(6)) - 1 - len(shoe.dealt)
    stacked = TableHarness()
    stacked.seat({"ann": 1})
    stacked.start(("As",) * 20)
    assert public_composition(stacked.table) is None  # a stacked shoe: composition unknown


def test_a_snapshot_mid_coup_gives_each_hands_total_of_its_face_up_cards() -> None:
    """A client that joins mid-coup reads the totals (docs/protocol.md, snapshot
    ``coup.totals``), as each ``card`` event's ``total`` says: it copies no rule."""
    h = TableHarness()
    h.setup({"ann": 1}, stack(PLAYER_WIN_THIRD), holder="ann")
    h.place({"ann": {"player": 500}})
    h.done_all()
    assert h.phase is Phase.TURN
    assert view(h.table, None)["coup"]["totals"] == {"player": None, "banker": None}
    h.do(c.Squeeze(player="ann", hand="player", style="peek"))
    evs = h.do(c.TurnCard(player="ann", hand="player", card=1))  # 2s
    card = h.one("card", evs).data
    for viewer in (None, "ann"):
        totals = view(h.table, viewer)["coup"]["totals"]
        assert totals == {"player": card["total"], "banker": None} == {"player": 2, "banker": None}
