"""``you.actions``: what each player may do now, with its bounds, straight from the table.

For random reachable states (the property machine of test_properties.py: random
players sending random legal and illegal commands, timers, restores), after every step:

- every action listed is accepted by ``Table.can``, and every bound is tight: the
  bound is accepted, one past it is refused;
- every wire command not listed is refused;
- every tracked player's last actions received (the private ``actions`` overlay on a
  step's last event, or their snapshot: a join's) are their actions now (the seated,
  and in the reveal a spectator who committed), and a spectator's sit choices are the
  ``free_seats`` of the last ``sat``/``stood``;
- what an event carries is its own: emptying every container of every event of a step
  changes nothing in the table.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest
import test_properties as tp
from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant
from table_helpers import BANKER_WIN, TableHarness, stack

from server.engine.payouts import AREAS
from server.table import MemoryWallet, Table
from server.table.actions import actions_key, kept_current
from server.table.rules import WIRE_COMMANDS, bet_bounds, bets_refusal, same_bets
from server.table.views import view as snapshot
from server.vocabulary import commands as c

SIMPLE = {
    "stand": c.Stand,
    "leave": c.Leave,
    "accept_shoe": c.AcceptShoe,
    "decline_shoe": c.DeclineShoe,
    "pass_shoe": c.PassShoe,
    "clear_bets": c.ClearBets,
    "same_bet": c.SameBet,
    "done": c.Done,
}


def check_actions(t: Table, pid: str) -> dict[str, Any]:
    """Hold ``t.actions(pid)`` to what ``t.can`` says, bound by bound."""
    acts = t.actions(pid)
    assert set(acts) <= set(WIRE_COMMANDS), acts

    def ok(cmd: c.Command) -> None:
        assert t.can(cmd), (pid, cmd, acts)

    def no(cmd: c.Command) -> None:
        assert not t.can(cmd), (pid, cmd, acts)

    seats = acts.get("sit", {}).get("seats", [])
    assert ("sit" in acts) == bool(seats)
    for seat in range(1, t.options.seats + 2):
        (ok if seat in seats else no)(c.Sit(player=pid, seat=seat))
    (ok if seats else no)(c.Sit(player=pid))
    for name, cls in SIMPLE.items():
        (ok if name in acts else no)(cls(player=pid))
    if "same_bet" in acts:
        assert acts["same_bet"]["bets"] == same_bets(t, t.players[pid])
    if "cut" in acts:
        low, high = acts["cut"]["min"], acts["cut"]["max"]
        ok(c.Cut(player=pid, position=low))
        ok(c.Cut(player=pid, position=high))
        no(c.Cut(player=pid, position=low - 1))
        no(c.Cut(player=pid, position=high + 1))
    else:
        for position in (10, 100, 200, 302):
            no(c.Cut(player=pid, position=position))
    # a contribution (docs/fairness.md §9): a commitment nobody made is taken exactly
    # when ``commit`` is listed; a reveal is listed only to who committed
    step = acts.get("contribute", {}).get("step")
    assert step in (None, "commit", "reveal"), acts
    fresh = hashlib.sha256(b"fresh:" + pid.encode()).hexdigest()
    (ok if step == "commit" else no)(c.Contribute(player=pid, commitment=fresh))
    k = t.contributions
    if step == "reveal":
        assert k is not None and pid in k.commitments and pid not in k.values
    lim = t.options.limits
    bets = acts.get("bet", {}).get("areas", {})
    removes = acts.get("remove_bet", {}).get("areas", {})
    for area in AREAS:
        if area in bets:
            low, high = bets[area]["min"], bets[area]["max"]
            assert 1 <= low <= high
            ok(c.PlaceBet(player=pid, area=area, amount=low))
            ok(c.PlaceBet(player=pid, area=area, amount=high))
            if low > 1:
                no(c.PlaceBet(player=pid, area=area, amount=low - 1))
            no(c.PlaceBet(player=pid, area=area, amount=high + 1))
        else:
            for amount in {1, lim.min, lim.max, 10**7}:
                no(c.PlaceBet(player=pid, area=area, amount=amount))
        if area in removes:
            have, partial = removes[area]["have"], removes[area]["max_partial"]
            ok(c.RemoveBet(player=pid, area=area))
            ok(c.RemoveBet(player=pid, area=area, amount=have))
            no(c.RemoveBet(player=pid, area=area, amount=have + 1))
            if partial:
                ok(c.RemoveBet(player=pid, area=area, amount=partial))
            if partial + 1 < have:
                no(c.RemoveBet(player=pid, area=area, amount=partial + 1))
        else:
            no(c.RemoveBet(player=pid, area=area))
            no(c.RemoveBet(player=pid, area=area, amount=1))
    for hand in c.HANDS:
        for style in c.STYLES:
            allowed = acts.get("squeeze", {}).get("hand") == hand
            if allowed:
                assert style in acts["squeeze"]["styles"]
            (ok if allowed else no)(c.Squeeze(player=pid, hand=hand, style=style))
        (ok if acts.get("toss", {}).get("hand") == hand else no)(c.Toss(player=pid, hand=hand))
        for card in (1, 2, 3):
            turn = acts.get("turn", {})
            listed = turn.get("hand") == hand and card in turn["cards"]
            (ok if listed else no)(c.TurnCard(player=pid, hand=hand, card=card))
            prog = acts.get("progress", {})
            listed = prog.get("hand") == hand and card in prog["cards"]
            for percent in (0, 100):
                cmd = c.Progress(player=pid, hand=hand, card=card, percent=percent)
                (ok if listed else no)(cmd)
    return acts


def empty_out(value: Any) -> None:
    """Clear every dict and list inside ``value`` (an event's data), in place."""
    if isinstance(value, dict):
        for v in list(value.values()):
            empty_out(v)
        value.clear()
    elif isinstance(value, list):
        for v in value:
            empty_out(v)
        value.clear()


class ActionsMachine(tp.TableMachine):
    """The property machine, plus a client's-eye view of everyone's actions."""

    def apply(self, cmd: c.Command, dt: float = 0.0, expect_ok: bool = False) -> None:
        joins = isinstance(cmd, c.Join) and self.table.can(cmd)
        super().apply(cmd, dt, expect_ok)
        if joins and hasattr(self, "known"):  # the join's reply: a snapshot, with actions
            self.known[cmd.player] = snapshot(self.table, cmd.player)["you"]["actions"]

    def check_events(self, events, seed_before):  # type: ignore[no-untyped-def]
        super().check_events(events, seed_before)
        if not hasattr(self, "known"):
            self.known: dict[str, dict[str, Any]] = {}
            self.free_seats = list(range(1, self.options.seats + 1))
        for e in events:
            for pid, part in (e.private or {}).items():
                if "actions" in part:
                    assert e is events[-1], f"actions on {e.kind}, not the step's last event"
                    self.known[pid] = copy.deepcopy(part["actions"])
            if e.kind in ("sat", "stood"):
                self.free_seats = list(e.data["free_seats"])
        # An event's data is its own: emptying it changes nothing in the table.
        before = self.table.to_state()
        for e in copy.copy(events):
            empty_out(e.data)
            empty_out(e.private or {})
        assert self.table.to_state() == before, "an event shared data with the table"

    @invariant()
    def players_of_equal_keys_have_equal_actions(self):
        """What the table's overlays rely on to make each key's actions once a step
        (SentActions.refresh): whoever's ``actions_key`` is equal has equal actions."""
        t = self.table
        by_key: dict[Any, dict[str, Any]] = {}
        for pid, p in t.players.items():
            if kept_current(t, p):
                acts = by_key.setdefault(actions_key(t, p), t.actions(pid))
                assert t.actions(pid) == acts, (pid, actions_key(t, p))

    @invariant()
    def actions_are_what_the_table_takes(self):
        t = self.table
        for pid in [*t.players, tp.STRANGER]:
            acts = check_actions(t, pid)
            p = t.players.get(pid)
            if p is None:
                assert acts == {}
                continue
            if kept_current(t, p) and hasattr(self, "known"):
                # kept current by the overlays, without re-deriving a rule (the seated,
                # and in the reveal a committed spectator: issue 33)
                assert self.known.get(pid) == acts, (pid, self.known.get(pid), acts)
            if p.seat is None and "sit" in acts and hasattr(self, "known"):
                assert acts["sit"]["seats"] == self.free_seats
            assert snapshot(t, pid)["you"]["actions"] == acts


ActionsMachine.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestActionsProperties = pytest.mark.slow(ActionsMachine.TestCase)  # seconds of examples


# ---------------------------------------------------------------------- examples
def test_a_betting_players_actions_with_their_bounds() -> None:
    """The documented shape (docs/protocol.md "you.actions"), on a real example."""
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    h.bet("bob", "player", 500)
    h.bet("bob", "tie", 100)
    acts = check_actions(h.table, "bob")
    assert acts == {
        "stand": {},
        "leave": {},
        "bet": {
            "areas": {
                "player": {"min": 1, "max": 9_500},
                "banker": {"min": 100, "max": 10_000},
                "tie": {"min": 1, "max": 1_400},
                "player_pair": {"min": 100, "max": 1_500},
                "banker_pair": {"min": 100, "max": 1_500},
            }
        },
        "remove_bet": {
            "areas": {
                "player": {"have": 500, "max_partial": 400},
                "tie": {"have": 100, "max_partial": 0},
            }
        },
        "clear_bets": {},
        "done": {},
    }
    assert h.last[-1].private["bob"]["actions"] == acts  # sent with the bet


def test_funds_cap_the_bet_bounds() -> None:
    h = TableHarness()
    h.setup({"ann": 1}, stack(BANKER_WIN), holder="ann")
    h.join("bob", funds=350)
    h.sit("bob", 2)
    acts = check_actions(h.table, "bob")
    assert acts["bet"]["areas"]["player"] == {"min": 100, "max": 350}
    h.bet("bob", "player", 300)
    acts = check_actions(h.table, "bob")
    assert acts["bet"]["areas"] == {"player": {"min": 1, "max": 50}}  # 50 left: only topping up


def test_same_bets_are_held_to_the_bet_bounds_from_no_chips() -> None:
    """SAME BET's refusal (``bets_refusal``) is ``bet_bounds`` from no chips at all: the
    new chips replace what is on the felt, so an area's bounds do not depend on it."""
    h = TableHarness()
    h.setup({"ann": 1}, stack(BANKER_WIN), holder="ann")
    h.join("bob", funds=2_000)
    h.sit("bob", 2)
    h.bet("bob", "player", 900)
    t, bob = h.table, h.table.players["bob"]
    ranges, funds = bet_bounds(t, bob, {})
    assert funds == 2_000 and ranges["player"] == (100, t.area_max["player"])
    low, top = ranges["tie"]
    for bets, code in [
        ({"player": 500}, None),  # (900 already there: a top-up of 500 would be over)
        ({"player": 99}, "below_min"),
        ({"tie": low, "player": 100}, None),
        ({"tie": top + 1}, "over_max"),
        ({"player": 1_000, "banker": 1_000}, None),
        ({"player": 1_000, "banker": 1_001}, "insufficient_funds"),
    ]:
        refusal = bets_refusal(t, bob, bets)
        assert (refusal and refusal.code) == code, bets


def test_a_spectator_sees_free_seats_and_the_holder_can_pass_after_a_coup() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN, BANKER_WIN), holder="ann")
    h.join("spec")
    spec = check_actions(h.table, "spec")
    assert spec["sit"] == {"seats": list(range(3, 15))} and spec["leave"] == {}
    assert set(spec) == {"sit", "leave", "bet"}  # a bettor without a seat's (§5): no done
    assert "pass_shoe" not in check_actions(h.table, "ann")
    h.play_coup({"bob": {"banker": 100}})
    assert "pass_shoe" in check_actions(h.table, "ann")
    evs = h.sit("spec", 3)
    assert h.one("sat", evs).data["free_seats"] == list(range(4, 15))
    assert h.one("sat", evs).private["spec"]["actions"]["stand"] == {}


def test_turn_actions_follow_the_squeeze() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    h.bet("bob", "player", 500)
    h.done_all()
    acts = check_actions(h.table, "bob")
    assert acts == {
        "squeeze": {"hand": "player", "styles": ["peek", "side", "quick"]},
        "toss": {"hand": "player"},
    }
    evs = h.do(c.Squeeze(player="bob", hand="player", style="side"))
    assert (
        evs[-1].private["bob"]["actions"]
        == check_actions(h.table, "bob")
        == {
            "turn": {"hand": "player", "cards": [1, 2]},
            "progress": {"hand": "player", "cards": [1, 2]},
            "toss": {"hand": "player"},
        }
    )
    evs = h.do(c.TurnCard(player="bob", hand="player", card=2))
    assert evs[-1].private["bob"]["actions"]["turn"] == {"hand": "player", "cards": [1]}
    assert check_actions(h.table, "ann") == {}  # the holder waits for the Banker hand


def test_draining_takes_bets_away_and_tells_the_table() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    h.play_coup({"bob": {"player": 500}})
    h.bet("bob", "tie", 100)
    evs = h.do(c.SetDraining(on=True))
    assert h.one("draining", evs).data == {"on": True}
    acts = check_actions(h.table, "bob")
    assert "bet" not in acts and "same_bet" not in acts and "remove_bet" in acts
    assert evs[-1].private["bob"]["actions"] == acts
    h.refuse(c.PlaceBet(player="bob", area="player", amount=100), "draining")
    h.refuse(c.SameBet(player="bob"), "draining")
    assert h.do(c.SetDraining(on=True)) == [] and h.step.duplicate  # already draining


class LongActionsMachine(ActionsMachine):
    """Longer runs: shoes end and restart, restores happen mid-coup."""


LongActionsMachine.TestCase.settings = settings(
    max_examples=5,
    stateful_step_count=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestActionsPropertiesLong = pytest.mark.slow(LongActionsMachine.TestCase)


def test_funds_enter_the_actions_key_only_as_far_as_they_bound_the_actions() -> None:
    """A player's funds bound their actions up to the largest area maximum (a bet's
    ``max``) and the last bets' sum (SAME BET): funds of at least both share a key and
    have equal actions (issue 37 §3: a thousand bettors' unequal balances gave each their
    own key); one short of either has a key and actions of its own."""
    h = TableHarness()
    h.setup({"ann": 1}, stack(BANKER_WIN, BANKER_WIN, BANKER_WIN), holder="ann")
    t = h.table
    top = max(t.area_max.values())
    names = [f"s{i}" for i in range(4)]
    for pid in names:
        h.join(pid, funds=2 * top)
        h.bet(pid, "player", t.area_max["player"])
        h.bet(pid, "banker", t.area_max["banker"])
    h.bet("ann", "banker", 100)
    h.done_all()
    h.turn_all()  # Banker wins: their last bets are more than any area's maximum
    last = t.area_max["player"] + t.area_max["banker"]
    assert last > top and t.phase.value == "betting"
    for pid, funds in zip(names, (last - 1, last, last + 1, 3 * last), strict=True):
        assert h.available(pid) < funds
        h.fund(pid, funds - h.available(pid))
        assert h.available(pid) == funds
    h.join("s4", funds=top - 1)  # (no last bets)
    names.append("s4")
    keys = {pid: actions_key(t, t.players[pid]) for pid in names}
    acts = {pid: check_actions(t, pid) for pid in names}
    for a in names:
        for b in names:
            assert (keys[a] == keys[b]) == (acts[a] == acts[b]), (a, b)
    assert keys["s1"] == keys["s2"] == keys["s3"]  # enough for every bound
    assert "same_bet" in acts["s1"] and "same_bet" not in acts["s0"]  # one short of the sum
    assert acts["s4"]["bet"]["areas"]["player"]["max"] == top - 1 < top  # short of a max


def test_in_debiting_a_wager_or_the_shoe_being_debited_has_actions_of_its_own() -> None:
    """While the wallet debits the wagers, one whose wager (or shoe) is in the coup may
    not stand or leave, one without may: their actions' keys differ (they were the same,
    so the first computed went to both: the state machine found it on a confirming
    wallet)."""
    h = TableHarness(wallet=MemoryWallet(confirms_holds=True))
    h.setup({"ann": 1, "bob": 2, "cat": 3}, stack(BANKER_WIN), holder="ann")
    h.bet("cat", "player", 500)
    h.done_all()
    t = h.table
    assert t.phase.value == "debiting"
    acts = {pid: check_actions(t, pid) for pid in ("ann", "bob", "cat")}
    assert set(acts["bob"]) >= {"stand", "leave"}
    assert "stand" not in acts["cat"] and "stand" not in acts["ann"]
    keys = {pid: actions_key(t, t.players[pid]) for pid in acts}
    assert keys["bob"] != keys["cat"] and keys["bob"] != keys["ann"]
