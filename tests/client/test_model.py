"""The client's model as a pure reducer: a snapshot, then events in seq order (stale
ones ignored, a gap detected); every event kind; what the player may do (the server's
``actions``); and the model never changed in place."""

from __future__ import annotations

import ast
import contextlib
import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from client_helpers import ME, OTHER, ev, loaded, play_a_coup, snap, snapshot

from client_cli.model import EVENT_KINDS, Applied, TableModel, apply_event, reduce
from server.engine.roads import parse_results, roads

ROOT = Path(__file__).resolve().parents[2]


def test_snapshot_then_events_in_order() -> None:
    m = TableModel()
    assert (
        apply_event(m, ev(1, "done", player=ME))[1] is Applied.STALE
    )  # nothing before the snapshot
    m = reduce(m, snap(snapshot()))
    assert m.me == ME and m.my_seat == 2 and m.holder == OTHER and m.balance == 100000
    assert apply_event(m, ev(10, "done", player=OTHER))[1] is Applied.STALE  # at the snapshot's seq
    assert apply_event(m, ev(9, "done", player=OTHER))[1] is Applied.STALE
    m, applied = apply_event(
        m, ev(11, "bets", player=ME, seat=2, bets={"player": 1000}, change="place", available=99000)
    )
    assert applied is Applied.APPLIED
    assert m.my_bets == {"player": 1000} and m.available == 99000
    assert m.area_totals() == {"banker": 500, "player": 1000}
    assert m.stacks("banker") == [("Bo", 500)]
    assert apply_event(m, ev(11, "done", player=ME))[1] is Applied.STALE  # a duplicate
    m, applied = apply_event(m, ev(13, "done", player=ME))
    assert applied is Applied.GAP  # 12 is missing
    assert m.needs_resync and m.seq == 11
    m, applied = apply_event(m, ev(12, "done", player=ME))
    assert applied is Applied.GAP  # nothing more until resync
    m = reduce(m, snap(snapshot(seq=20)))
    assert not m.needs_resync and apply_event(m, ev(21, "done", player=ME))[1] is Applied.APPLIED


def test_a_whole_coup() -> None:
    m = play_a_coup(loaded())
    assert m.message == "Player wins 9 to 7 (natural) — You won 10.00"
    assert m.result_line == m.message and m.balance == 101000 and m.last_net == 1000
    assert m.coup is None and m.last_coup is not None and m.roads_stale
    assert m.last_bets == {"player": 1000} and m.my_bets == {}
    m = reduce(m, ev((m.seq or 0) + 1, "shoe_passed", player=OTHER, reason="player_won"))
    assert m.holder is None
    m = reduce(
        m, ev((m.seq or 0) + 1, "betting_opened", coup_no=4, round_id="t1-1-4", deadline=3000.0)
    )
    assert m.phase == "betting" and m.coup_no == 4 and "You won 10.00" in m.message
    m = reduce(
        m, {"type": "roads", "roads": roads(parse_results("BPBP")), "odds": {"banker": 0.45}}
    )
    assert len(m.roads["bead_plate"]) == 4 and not m.roads_stale


def test_a_snapshot_in_the_middle_of_my_squeeze() -> None:
    coup = {
        "round_id": "t1-1-3",
        "coup_no": 3,
        "stage": "player",
        "hand": "player",
        "player": [{"card": "9h", "up": False, "by": None}, {"card": "2c", "up": True, "by": ME}],
        "banker": [
            {"card": None, "up": False, "by": None},
            {"card": None, "up": False, "by": None},
        ],
        "turners": {"player": ME, "banker": OTHER},
        "style": "quick",
        "deadline": 5.0,
        "bets": {ME: {"player": 1000}},
    }
    you = {
        "player": ME,
        "seat": 2,
        "balance": 99000,
        "available": 99000,
        "bets": {},
        "last_bets": {"player": 1000},
        "actions": {
            "toss": {"hand": "player"},
            "turn": {"hand": "player", "cards": [1]},
            "progress": {"hand": "player", "cards": [1]},
        },
    }
    m = loaded(snapshot(phase="turn", coup=coup, you=you))
    assert m.coup is not None and m.my_turn == "player" and m.squeezing
    assert m.coup.private == {("player", 1): "9h"} and m.coup.player[0].card is None
    assert m.coup.face_down() == [1] and m.coup.squeezer == ME
    assert m.area_totals() == {"player": 1000}


def test_shoe_events() -> None:
    m = loaded(snapshot(phase="waiting", shoe=None, holder=None, seats=[]))
    seq = m.seq or 0
    for kind, data in [
        ("sat", {"player": ME, "name": "Me", "seat": 1, "balance": 5000, "available": 5000}),
        ("shoe_started", {"shoe_no": 2, "commitment": "cd" * 32, "decks": 8, "cards": 416}),
        ("shoe_offered", {"player": ME, "seat": 1, "deadline": 10.0}),
    ]:
        seq += 1
        m = reduce(m, ev(seq, kind, **data))
    assert (
        m.offered_to_me and m.balance == 5000 and m.shoe is not None and m.shoe["cards_left"] == 416
    )
    for kind, data in [
        ("shoe_accepted", {"player": ME, "seat": 1}),
        ("cut_offered", {"player": ME, "deadline": 11.0}),
    ]:
        seq += 1
        m = reduce(m, ev(seq, kind, **data))
    assert m.i_hold and m.i_cut and m.message == "Cut the shoe (u)"
    seq += 1
    m = reduce(m, ev(seq, "shoe_cut", position=200, by=ME, on_behalf=None))
    seq += 1
    m = reduce(m, ev(seq, "burned", card="5c", count=5, stop_offset=16))
    assert m.shoe is not None and m.shoe["cards_left"] == 410 and not m.i_cut
    seq += 1
    m = reduce(m, ev(seq, "shoe_ended", shoe_no=2, coups=[]))
    assert m.shoe is None and m.phase == "shuffle"


@pytest.mark.parametrize(
    ("reason", "said", "watching"),
    [
        ("stood", "Bo stood up", 2),
        ("left", "Bo left the table", 1),
        ("timeout", "Bo stood up (timed out) and left", 1),
    ],
)
def test_a_seat_empties_with_its_reason(reason: str, said: str, watching: int) -> None:
    m, applied = apply_event(loaded(me=ME), ev(11, "stood", player=OTHER, seat=1, reason=reason))
    assert applied is Applied.APPLIED
    assert OTHER not in m.seats and m.message.startswith(said)
    assert m.spectators == watching  # only a plain stand leaves one more watching


# ---------------------------------------------------------------------------- every event kind

COUP_VIEW: dict[str, Any] = {
    "round_id": "t1-1-3",
    "coup_no": 3,
    "stage": "player",
    "hand": "player",
    "player": [{"card": None, "up": False, "by": None}, {"card": "2c", "up": True, "by": ME}],
    "banker": [{"card": None, "up": False, "by": None}, {"card": None, "up": False, "by": None}],
    "turners": {"player": ME, "banker": OTHER},
    "style": None,
    "deadline": 5.0,
    "bets": {ME: {"player": 1000}, OTHER: {"banker": 500}},
}
IN_A_COUP: dict[str, Any] = {"phase": "turn", "coup": COUP_VIEW}
Check = Callable[[TableModel, TableModel], bool]

#: Each event kind: the snapshot to start from (changes to :func:`snapshot`), the
#: event's data, and what must hold of the model (before, after).
EVERY_KIND: dict[str, tuple[dict[str, Any], dict[str, Any], Check]] = {
    "sat": (
        {},
        {"player": "guest-cy", "name": "Cy", "seat": 3, "free_seats": [4]},
        lambda b, a: (
            a.seats["guest-cy"].seat == 3
            and a.spectators == b.spectators - 1
            and a.message == "Cy sits in seat 3"
        ),
    ),
    "stood": (
        {},
        {"player": OTHER, "seat": 1, "reason": "stood"},
        lambda b, a: OTHER not in a.seats and a.spectators == 2 and a.message == "Bo stood up",
    ),
    "stand_after_coup": (
        {},
        {"player": OTHER, "seat": 1},
        lambda b, a: a.seats == b.seats and a.message == "Bo stands up once this coup is settled",
    ),
    "disconnected": (
        {},
        {"player": OTHER, "grace_deadline": 60.0},
        lambda b, a: not a.seats[OTHER].connected and a.message == "Bo lost the connection",
    ),
    "reconnected": (
        {"seats": [{"seat": 1, "player": OTHER, "name": "Bo", "connected": False}]},
        {"player": OTHER},
        lambda b, a: a.seats[OTHER].connected and a.message == "Bo is back",
    ),
    "shoe_started": (
        {"phase": "shuffle", "shoe": None},
        {"shoe_no": 2, "commitment": "cd" * 32, "decks": 8, "cards": 416, "stacked": False},
        lambda b, a: (
            a.shoe is not None
            and a.shoe["no"] == 2
            and a.shoe["cards_left"] == 416
            and a.roads == {}
            and a.message.startswith("Shoe 2: a new shoe, commitment cdcdcdcdcdcd…")
        ),
    ),
    "shoe_offered": (
        {},
        {"player": ME, "seat": 2, "deadline": 9.0},
        lambda b, a: (
            a.offered_to_me
            and a.phase == "shoe_offer"
            and a.deadline == 9.0
            and a.message == "The shoe is offered to you: accept (y) or decline (n)"
        ),
    ),
    "shoe_accepted": (
        {"phase": "shoe_offer", "offer": {"player": ME, "deadline": 9.0}, "holder": None},
        {"player": ME, "seat": 2},
        lambda b, a: a.i_hold and a.offer is None and a.message == "You hold the shoe",
    ),
    "shoe_declined": (
        {"phase": "shoe_offer", "offer": {"player": OTHER, "deadline": 9.0}},
        {"player": OTHER, "seat": 1, "timeout": True},
        lambda b, a: a.offer is None and a.message == "Bo declined the shoe (time ran out)",
    ),
    "shoe_held_by_house": (
        {},
        {},
        lambda b, a: a.house_holds and a.holder is None and a.message == "The house holds the shoe",
    ),
    "shoe_passed": (
        {},
        {"player": OTHER, "reason": "passed"},
        lambda b, a: (
            a.holder is None
            and a.message == b.message  # the log only: the offer that follows says the rest
            and a.log[-1] == "The shoe leaves Bo (passed)"
        ),
    ),
    "cut_offered": (
        {"phase": "shoe_offer"},
        {"player": ME, "deadline": 7.0},
        lambda b, a: a.i_cut and a.phase == "cut" and a.message == "Cut the shoe (u)",
    ),
    "shoe_cut": (
        {"phase": "cut", "cutter": ME},
        {"position": 97, "by": "croupier", "on_behalf": ME},
        lambda b, a: (
            a.shoe is not None
            and a.shoe["cut"] == 97
            and a.cutter is None
            and a.message == "The shoe is cut at 97 by the croupier for you"
        ),
    ),
    "contribution_committed": (
        {"phase": "cut", "cutter": ME},
        {"player": OTHER, "commitment": "ab" * 32},
        lambda b, a: (
            a.shoe is not None
            and a.shoe["contributions"]
            == [{"player": OTHER, "commitment": "ab" * 32, "value": None}]
            and a.log[-1] == "Bo put randomness into the shoe"
        ),
    ),
    "reveal_opened": (
        {"phase": "cut", "cutter": ME},
        {"deadline": 12.0, "players": [ME, OTHER], "cut": 150, "cutter": ME},
        lambda b, a: (
            a.phase == "reveal"
            and a.deadline == 12.0
            and a.cutter == ME  # whose cut it is, as a snapshot in this phase says
            and a.shoe is not None
            and a.shoe["cut"] == 150
            and not a.i_cut
        ),
    ),
    "contribution_revealed": (
        {
            "phase": "reveal",
            "shoe": {
                "no": 1,
                "commitment": "cd" * 32,
                "cards_left": 416,
                "cut": None,
                "contributions": [{"player": OTHER, "commitment": "ab" * 32, "value": None}],
            },
        },
        {"player": OTHER, "value": "12" * 32},
        lambda b, a: (
            a.shoe is not None
            and a.shoe["contributions"][0]["value"] == "12" * 32
            and a.log[-1] == "Bo revealed their randomness"
        ),
    ),
    "contributions_closed": (
        {"phase": "reveal"},
        {"contributions": [{"player": ME, "value": "12" * 32}], "withheld": [OTHER]},
        lambda b, a: a.message == "Your randomness is in this shoe (1 in all) Withheld: Bo.",
    ),
    "burned": (
        {},
        {"card": "7d", "count": 7, "stop_offset": 16},
        lambda b, a: (
            a.shoe is not None
            and a.shoe["cards_left"] == 400 - 1 - 7
            and a.shoe["burn"] == {"card": "7d", "count": 7}
            and a.message == "Burn card 7♦: 7 cards burned"
        ),
    ),
    "waiting": (
        {"phase": "shoe_offer", "offer": {"player": OTHER, "deadline": 1.0}},
        {},
        lambda b, a: a.phase == "waiting" and a.offer is None and a.deadline is None,
    ),
    "stop_card": (
        {},
        {"coups_left": 1},
        lambda b, a: (
            a.shoe is not None
            and a.shoe["stop_card_out"]
            and a.message == "The stop card is out: one more coup, then a new shoe"
        ),
    ),
    "shoe_ended": (
        {},
        {"shoe_no": 1, "seed": "ab" * 32, "coups": [{}, {}], "complete": True},
        lambda b, a: (
            a.shoe is None
            and a.phase == "shuffle"
            and a.message == "Shoe 1 is over: its seed is revealed (2 coups)"
        ),
    ),
    "closed": (
        IN_A_COUP,
        {"refunded": True},
        lambda b, a: (
            a.closed
            and a.phase == "closed"
            and a.coup is None
            and a.message == "The table is closed: wagers refunded"
        ),
    ),
    "betting_opened": (
        {
            "phase": "shoe_offer",
            "seats": [{"seat": 1, "player": OTHER, "name": "Bo", "done": True}],
        },
        {"coup_no": 4, "round_id": "t1-1-4", "deadline": 30.0},
        lambda b, a: (
            a.phase == "betting"
            and a.coup_no == 4
            and a.deadline == 30.0
            and not a.seats[OTHER].done
            and a.message == "Coup 4: place your bets"
        ),
    ),
    "betting_timer": ({"deadline": None}, {"deadline": 42.0}, lambda b, a: a.deadline == 42.0),
    "betting_waiting": (
        {},
        {},
        lambda b, a: a.deadline is None and a.message == "Waiting for a bet",
    ),
    "bets": (
        {},
        {"player": OTHER, "seat": 1, "bets": {"banker": 700}, "change": "place"},
        lambda b, a: a.seats[OTHER].bets == {"banker": 700} and a.my_bets == b.my_bets,
    ),
    "draining": (
        {},
        {"on": True},
        lambda b, a: a.message == "The server is closing: no new bets; this coup finishes",
    ),
    "paused": (
        {},
        {"coup_finishes": False},
        lambda b, a: (
            a.phase == "paused" and a.message == "The table is paused: no new coup for now"
        ),
    ),
    "resumed": ({"phase": "paused"}, {}, lambda b, a: a.message == "The table resumes"),
    "voided": (
        IN_A_COUP,
        {
            "round_id": "t1-1-3",
            "reason": "the card reader failed",
            "refunded": {ME: 1000, OTHER: 500},
            "cards": {"player": ["9s", "2c"], "banker": ["Kd", "4h"]},
            "balance": 100_000,
            "available": 100_000,
        },
        lambda b, a: (
            a.coup is None
            and a.my_bets == {}
            and a.balance == 100_000
            and a.message == "Coup voided (the card reader failed): every bet was returned"
        ),
    ),
    "done": ({}, {"player": OTHER}, lambda b, a: a.seats[OTHER].done),
    "debiting": (
        {},
        {"round_id": "t1-1-3", "players": [ME, OTHER]},
        lambda b, a: (
            a.phase == "debiting" and a.message == "No more bets: the wallet is taking the bets"
        ),
    ),
    "debit_refused": (
        {"phase": "debiting"},
        {"round_id": "t1-1-3", "player": OTHER},
        lambda b, a: a.seats[OTHER].bets == {} and a.message == "Bo's bets were not placed",
    ),
    "betting_closed": (
        {},
        {"round_id": "t1-1-3", "bets": {OTHER: {"banker": 500}}, "totals": {"banker": 500}},
        lambda b, a: (
            a.phase == "turn"
            and a.coup is not None
            and a.coup.bets == {OTHER: {"banker": 500}}
            and a.message == "No more bets"
        ),
    ),
    "dealt": (
        {"phase": "turn"},
        {
            "round_id": "t1-1-3",
            "player": 2,
            "banker": 2,
            "turners": {"player": None, "banker": OTHER},
        },
        lambda b, a: (
            a.coup is not None
            and [c.up for c in a.coup.player + a.coup.banker] == [False] * 4
            and a.coup.turners == {"player": None, "banker": OTHER}
            and a.shoe is not None
            and a.shoe["cards_left"] == 396
        ),
    ),
    "turn": (
        IN_A_COUP,
        {"hand": "banker", "turner": OTHER, "third": False, "deadline": 50.0},
        lambda b, a: (
            a.coup is not None
            and a.coup.stage == "banker"
            and a.deadline == 50.0
            and a.message == "Bo turns the Banker cards"
        ),
    ),
    "squeeze": (
        IN_A_COUP,
        {"hand": "player", "style": "side", "turner": ME, "cards": {"1": "9h"}},
        lambda b, a: (
            a.coup is not None
            and a.coup.style == "side"
            and a.coup.private == {("player", 1): "9h"}
            and a.coup.player[0].card is None
        ),  # still face down: known to you alone
    ),
    "card": (
        IN_A_COUP,
        {"hand": "player", "index": 1, "card": "9h", "by": ME, "on_behalf": None, "total": 1},
        lambda b, a: (
            a.coup is not None
            and a.coup.player[0].card == "9h"
            and a.coup.total("player") == 1  # the server's count, taken as it is
            and a.message == "Player card 1: 9♥ — Player 1"
        ),
    ),
    "third_card": (
        IN_A_COUP,
        {"hand": "player"},
        lambda b, a: (
            a.coup is not None
            and len(a.coup.player) == 3
            and a.coup.stage == "player_third"
            and a.message == "Player draws a third card"
        ),
    ),
    "result": (
        IN_A_COUP,
        {"round_id": "t1-1-3", "player_total": 6, "banker_total": 6, "outcome": "tie"},
        lambda b, a: (
            a.last_result is not None
            and a.coup is not None
            and a.coup.total("banker") == 6
            and a.message == "Tie 6 to 6"
        ),
    ),
    "settled": (
        IN_A_COUP,
        {"round_id": "t1-1-3", "payouts": [], "balance": 99000, "available": 99000, "net": -1000},
        lambda b, a: (
            a.coup is None
            and a.last_coup == b.coup
            and a.balance == 99000
            and a.last_bets == {"player": 1000}
            and a.phase == "settled"
            and a.message == "Settled — You lost 10.00"
        ),
    ),
}


def test_my_refused_debit_says_why_in_plain_words() -> None:
    m, _ = apply_event(
        loaded(snapshot(phase="debiting"), me=ME),
        ev(11, "debit_refused", round_id="t1-1-3", player=ME, reason="limit_reached"),
    )
    assert m.my_bets == {}
    assert m.message == "Your bets were not placed: they would go over a limit on your account"
    m, _ = apply_event(
        m, ev(12, "debit_refused", round_id="t1-1-3", player=ME, reason="wallet_unavailable")
    )
    assert m.message.endswith("did not answer in time. Nothing was taken")


def test_my_refused_debit_stays_on_the_message_line() -> None:
    """The news that follows a refusal at once (the next round opens: nothing stood)
    comes after it on the message line, until I bet again."""
    refused = "Your bets were not placed: your account cannot place bets now"
    m = loaded(snapshot(phase="debiting"), me=ME)
    for seq, kind, data in [
        (11, "bets", {"player": ME, "seat": 2, "bets": {}, "change": "refused"}),
        (12, "debit_refused", {"round_id": "t1-1-3", "player": ME, "reason": "player_blocked"}),
        (13, "betting_opened", {"coup_no": 4, "round_id": "t1-1-4", "deadline": 2000.0}),
    ]:
        m, applied = apply_event(m, ev(seq, kind, **data))
        assert applied is Applied.APPLIED
    assert m.message == "Coup 4: place your bets"
    assert m.message_line == f"{refused} · Coup 4: place your bets"
    m, _ = apply_event(m, ev(14, "bets", player=ME, seat=2, bets={"banker": 100}, change="place"))
    assert m.notice == "" and m.message_line == m.message
    # Another player's refusal is news like any other.
    m, _ = apply_event(m, ev(15, "debit_refused", round_id="t1-1-4", player=OTHER))
    assert m.notice == "" and m.message_line == "Bo's bets were not placed"


def test_a_bend_is_shown_when_it_follows_the_models_last_event() -> None:
    """``progress`` is a message, not an event (never stored, no seq of its own): it
    is shown when its seq is the model's, and ignored before the snapshot it would
    follow, past a gap, or at another seq; the model given is never changed."""
    before = loaded(snapshot(**IN_A_COUP))
    kept = copy.deepcopy(before)
    bend = {"type": "progress", "table": "t1", "hand": "player", "card": 1, "percent": 30}
    after = reduce(before, {**bend, "seq": before.seq, "turner": ME})
    assert after.coup is not None and after.coup.progress == {("player", 1): 30}
    assert after.seq == before.seq and before == kept
    for seq in (None, "10", (before.seq or 0) - 1, (before.seq or 0) + 1):
        assert reduce(before, {**bend, "seq": seq, "turner": ME}) == before, seq
    gap, applied = apply_event(before, ev((before.seq or 0) + 2, "done", player=ME))
    assert applied is Applied.GAP
    assert reduce(gap, {**bend, "seq": gap.seq, "turner": ME}) == gap  # until a snapshot
    assert reduce(loaded(), {**bend, "seq": 10, "turner": ME}).coup is None  # no coup: none


def test_every_event_kind_has_a_case() -> None:
    assert set(EVERY_KIND) == EVENT_KINDS


@pytest.mark.parametrize("kind", sorted(EVERY_KIND))
def test_every_event_kind(kind: str) -> None:
    start, data, check = EVERY_KIND[kind]
    before = loaded(snapshot(**start))
    kept = copy.deepcopy(before)
    after, applied = apply_event(before, ev(11, kind, **data))
    assert applied is Applied.APPLIED and after.seq == 11
    assert check(before, after), after
    assert before == kept, "the model given is never changed"


def documented(section: str) -> str:
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    start = text.index(f"## {section}")
    return text[start : text.index("\n## ", start + 1)]


def test_the_model_follows_every_documented_event_kind() -> None:
    kinds = set(re.findall(r"^\*\*(\w+)\*\* —", documented("8. Events"), re.M))
    assert len(kinds) >= 30 and kinds == EVENT_KINDS


def test_the_documented_frames_apply() -> None:
    """Every event frame captured in docs/protocol.md (real server frames) goes through
    the reducer, from a snapshot one seq before it."""
    frames = []
    for line in (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8").splitlines():
        if line.startswith('{"type": "event"'):
            with contextlib.suppress(json.JSONDecodeError):  # some are trimmed with …
                frames.append(json.loads(line))
    assert len({f["kind"] for f in frames}) >= 25
    for frame in frames:
        before = loaded(snapshot(seq=frame["seq"] - 1))
        kept = copy.deepcopy(before)
        after, applied = apply_event(before, frame)
        assert applied is Applied.APPLIED and after.seq == frame["seq"], frame
        assert before == kept


def test_nothing_is_changed_in_place_during_a_whole_coup() -> None:
    m = loaded()
    for kind, data in WHOLE_COUP:
        kept = copy.deepcopy(m)
        after = reduce(m, ev((m.seq or 0) + 1, kind, **data))
        assert m == kept, f"{kind} changed the model it was given"
        m = after
    assert m.last_net == 1000 and m.message.endswith("You won 10.00")


WHOLE_COUP: list[tuple[str, dict[str, Any]]] = [
    ("bets", {"player": ME, "seat": 2, "bets": {"player": 1000}, "available": 99000}),
    ("done", {"player": ME}),
    ("betting_closed", {"round_id": "t1-1-3", "bets": {ME: {"player": 1000}}, "balance": 99000}),
    ("dealt", {"round_id": "t1-1-3", "player": 2, "banker": 2, "turners": {"player": ME}}),
    ("turn", {"hand": "player", "turner": ME, "third": False, "deadline": 1.0}),
    ("squeeze", {"hand": "player", "style": "peek", "turner": ME, "cards": {"1": "9h", "2": "Kd"}}),
    ("card", {"hand": "player", "index": 1, "card": "9h", "by": ME, "total": 9}),
    ("card", {"hand": "player", "index": 2, "card": "Kd", "by": ME, "total": 9}),
    ("card", {"hand": "banker", "index": 1, "card": "3c", "by": "croupier", "total": 3}),
    ("card", {"hand": "banker", "index": 2, "card": "4c", "by": "croupier", "total": 7}),
    ("result", {"player_total": 9, "banker_total": 7, "outcome": "player", "natural": True}),
    ("settled", {"payouts": [], "balance": 101000, "net": 1000}),
]


# ---------------------------------------------------------------------------- actions


BETTING_ACTIONS: dict[str, Any] = {
    "stand": {},
    "leave": {},
    "bet": {"areas": {"player": {"min": 100, "max": 9900}, "tie": {"min": 100, "max": 1500}}},
    "done": {},
}


def with_actions(actions: dict[str, Any] | None, **over: Any) -> TableModel:
    s = snapshot(**over)
    you = {**s["you"], "actions": actions} if actions is not None else s["you"]
    return loaded({**s, "you": you})


def test_actions_come_from_the_snapshot_and_overrule_the_clients_own_view() -> None:
    # Betting is open and the player is seated, but the server lists no "done" and no
    # Banker bet: the server's word is what the model says.
    m = with_actions({"bet": {"areas": {"player": {"min": 100, "max": 300}}}})
    assert m.server_actions is not None
    assert m.can("bet") and not m.can("done") and not m.can("remove_bet")
    assert m.action("bet")["areas"] == {"player": {"min": 100, "max": 300}}
    assert m.action("cut") == {} and m.my_turn is None


def test_a_private_actions_field_replaces_them_and_other_events_keep_them() -> None:
    m = with_actions(BETTING_ACTIONS)
    m = reduce(m, ev(11, "done", player=OTHER))  # no actions: unchanged
    assert m.actions == BETTING_ACTIONS
    after_bet = {
        "stand": {},
        "remove_bet": {"areas": {"player": {"have": 500, "max_partial": 400}}},
    }
    m = reduce(m, ev(12, "bets", player=ME, seat=2, bets={"player": 500}, actions=after_bet))
    assert m.actions == after_bet and m.my_bets == {"player": 500}


def test_the_turners_actions() -> None:
    m = with_actions(
        {"squeeze": {"hand": "banker", "styles": ["peek"]}, "toss": {"hand": "banker"}}
    )
    assert m.my_turn == "banker" and not m.squeezing
    m = reduce(
        m,
        ev(
            11,
            "squeeze",
            hand="banker",
            style="peek",
            turner=ME,
            actions={
                "turn": {"hand": "banker", "cards": [1, 2]},
                "toss": {"hand": "banker"},
                "progress": {"hand": "banker", "cards": [1, 2]},
            },
        ),
    )
    assert m.squeezing and m.action("turn")["cards"] == [1, 2]


def test_a_spectators_seats_follow_free_seats() -> None:
    watching = {"player": ME, "seat": None, "actions": {"sit": {"seats": [3, 4]}, "leave": {}}}
    others = [{"seat": 1, "player": OTHER, "name": "Bo"}]
    m = loaded({**snapshot(seats=others), "you": watching})
    assert not m.seated and m.action("sit") == {"seats": [3, 4]}
    m = reduce(m, ev(11, "sat", player="guest-cy", name="Cy", seat=3, free_seats=[4]))
    assert m.action("sit") == {"seats": [4]}
    m = reduce(m, ev(12, "sat", player="guest-di", name="Di", seat=4, free_seats=[]))
    assert not m.can("sit") and m.can("leave")
    m = reduce(m, ev(13, "stood", player=OTHER, seat=1, reason="left", free_seats=[1]))
    assert m.action("sit") == {"seats": [1]}


def test_a_seated_players_actions_ignore_free_seats() -> None:
    m = with_actions(BETTING_ACTIONS)
    m = reduce(m, ev(11, "sat", player="guest-cy", name="Cy", seat=3, free_seats=[4, 5]))
    assert m.actions == BETTING_ACTIONS


@pytest.mark.parametrize(
    ("reason", "left"), [("stood", {"leave": {}, "sit": {"seats": [2, 3]}}), ("left", {})]
)
def test_standing_up_leaves_a_spectators_actions(reason: str, left: dict[str, Any]) -> None:
    m = with_actions(BETTING_ACTIONS)
    m = reduce(m, ev(11, "stood", player=ME, seat=2, reason=reason, free_seats=[2, 3]))
    assert not m.seated and m.actions == left


def test_a_closed_table_allows_nothing() -> None:
    m = reduce(with_actions(BETTING_ACTIONS), ev(11, "closed", refunded=False))
    assert m.actions == {}


def test_the_model_modules_do_no_io() -> None:
    """model, sentences, money and history are pure: unit-testable without Textual, a
    socket or a clock."""
    forbidden = {
        "asyncio",
        "socket",
        "os",
        "time",
        "random",
        "textual",
        "websockets",
        "rich",
        "client_cli.connection",
        "client_cli.tui",
        "pathlib",
        "subprocess",
    }
    for name in ("model", "sentences", "money", "history"):
        tree = ast.parse((ROOT / "client_cli" / f"{name}.py").read_text(encoding="utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        bad = {i for i in imported if any(i == f or i.startswith(f + ".") for f in forbidden)}
        assert not bad, f"{name}.py imports {sorted(bad)}"


def test_a_bettor_without_a_seat_follows_the_felt_and_their_own_wager() -> None:
    """GAME_RULES §5: as a bettor without a seat, the model takes the felt's totals and
    the number of bettors from the server, its own bets and wager from its private
    copies, and names a bettor who turns from ``dealt``."""
    seats = [s for s in snapshot()["seats"] if s["player"] != ME]
    you = {**snapshot()["you"], "seat": None, "actions": {"bet": {"areas": {}}, "leave": {}}}
    felt = {"totals": {"banker": 500}, "bettors": 0}
    m = reduce(TableModel(), snap(snapshot(seats=seats, you=you, felt=felt)))
    assert not m.seated and m.can("bet") and m.area_totals() == {"banker": 500}
    # someone else's bet without a seat: the felt only
    m = reduce(m, ev(11, "bets", player=None, seat=None, bets=None, change="place",
                     totals={"banker": 500, "player": 300}, bettors=1))  # fmt: skip
    assert m.area_totals() == {"banker": 500, "player": 300} and m.bettors == 1
    assert m.my_bets == {} and not m.betting_without_a_seat
    # mine, as my private copy has it
    m = reduce(m, ev(12, "bets", player=ME, seat=None, bets={"player": 1000}, change="place",
                     totals={"banker": 500, "player": 1300}, bettors=2, available=99000))  # fmt: skip
    assert m.my_bets == {"player": 1000} and m.available == 99000 and m.betting_without_a_seat
    assert m.bettors == 2 and m.area_totals()["player"] == 1300
    m = reduce(m, ev(13, "betting_closed", round_id="t1-1-3", bets={OTHER: {"banker": 500}},
                     totals={"banker": 500, "player": 1300}, bettors=2, balance=99000,
                     available=99000, own={"player": 1000}))  # fmt: skip
    assert m.my_stake == {"player": 1000} and m.coup is not None
    assert m.stacks("banker") == [("Bo", 500)] and m.stacks("player") == [("you", 1000)]
    m = reduce(m, ev(14, "dealt", round_id="t1-1-3", player=2, banker=2,
                     turners={"player": "zoe", "banker": OTHER}, names={"zoe": "Zoe", OTHER: "Bo"}))  # fmt: skip
    assert m.name("zoe") == "Zoe"  # a bettor without a seat who turns
    m = reduce(m, ev(15, "debit_refused", round_id="t1-1-3", player=None))
    assert m.message != "" and m.my_stake == {"player": 1000}  # (not mine: nothing changes)
    m = reduce(m, ev(16, "settled", round_id="t1-1-3", payouts=[], totals={}, bettors=0,
                     balance=101000, available=101000, net=1000,
                     own=[{"player": ME, "area": "player", "stake": 1000, "returned": 2000,
                           "win": 1000, "commission": 0, "outcome": "win"}]))  # fmt: skip
    assert m.last_bets == {"player": 1000} and m.balance == 101000 and m.last_net == 1000
    assert m.area_totals() == {} and m.bettors == 0 and not m.betting_without_a_seat
