"""The client's pure parts: money text, the table model fed a snapshot and events in
seq order (stale ones ignored, a gap detected), and the drawings of cards and roads."""

from __future__ import annotations

from typing import Any

import pytest

from client_cli.history import history_net, round_summary
from client_cli.model import Applied, TableModel, apply_event, reduce
from client_cli.money import format_money, parse_money
from client_cli.render import (
    card_art,
    odds_text,
    render_hands,
    render_layout,
    render_roads,
    render_seats,
    squeeze_art,
)
from client_cli.sentences import card_text, result_text
from client_cli.tui import chip_values
from server.engine.roads import parse_results, roads

ME = "guest-me"
OTHER = "guest-bo"


@pytest.mark.parametrize(
    ("minor", "text"),
    [
        (0, "0.00"),
        (5, "0.05"),
        (950, "9.50"),
        (123456, "1,234.56"),
        (-5, "-0.05"),
        (-100000, "-1,000.00"),
    ],
)
def test_format_money(minor: int, text: str) -> None:
    assert format_money(minor) == text


def test_format_money_refuses_floats() -> None:
    with pytest.raises(TypeError):
        format_money(9.5)  # type: ignore[arg-type]
    assert format_money(950, sign=True) == "+9.50"
    assert format_money(0, sign=True) == "0.00"


@pytest.mark.parametrize(
    ("text", "minor"), [("25", 2500), ("12.5", 1250), ("0.01", 1), ("1,000", 100000)]
)
def test_parse_money(text: str, minor: int) -> None:
    assert parse_money(text) == minor


@pytest.mark.parametrize("text", ["1.234", "abc", "", "nan", "inf"])
def test_parse_money_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_money(text)


def test_card_text_and_results() -> None:
    assert card_text("Td") == "10♦" and card_text("As") == "A♠" and card_text(None) == "??"
    assert (
        result_text({"outcome": "banker", "banker_total": 7, "player_total": 5})
        == "Banker wins 7 to 5"
    )
    assert result_text(
        {"outcome": "player", "banker_total": 3, "player_total": 8, "natural": True}
    ) == ("Player wins 8 to 3 (natural)")
    assert result_text({"outcome": "tie", "banker_total": 6, "player_total": 6}) == "Tie 6 to 6"


def snapshot(seq: int = 10, **over: Any) -> dict[str, Any]:
    snap: dict[str, Any] = {
        "table": "t1",
        "seq": seq,
        "phase": "betting",
        "deadline": 1000.0,
        "options": {
            "name": "Salon",
            "decks": 8,
            "areas": ["player", "banker", "tie", "player_pair", "banker_pair"],
            "limits": {"min": 100, "max": 10000, "tie_max": 1500, "side_max": 1500},
        },
        "shoe": {"no": 1, "commitment": "ab" * 32, "cards_left": 400, "cut": 200},
        "coup_no": 3,
        "holder": OTHER,
        "house_holds": False,
        "offer": None,
        "cutter": None,
        "seats": [
            {
                "seat": 1,
                "player": OTHER,
                "name": "Bo",
                "connected": True,
                "bets": {"banker": 500},
                "done": False,
                "holder": True,
            },
            {
                "seat": 2,
                "player": ME,
                "name": "Me",
                "connected": True,
                "bets": {},
                "done": False,
                "holder": False,
            },
        ],
        "spectators": 1,
        "coup": None,
        "last_result": None,
        "roads": roads(parse_results("BPB")),
        "you": {
            "player": ME,
            "seat": 2,
            "balance": 100000,
            "available": 100000,
            "bets": {},
            "last_bets": {},
        },
    }
    snap.update(over)
    return snap


def ev(seq: int, kind: str, **data: Any) -> dict[str, Any]:
    return {"type": "event", "table": "t1", "seq": seq, "kind": kind, "data": data}


def snap(s: dict[str, Any]) -> dict[str, Any]:
    return {"type": "snapshot", "table": s["table"], "seq": s["seq"], "snapshot": s}


def loaded(s: dict[str, Any] | None = None, me: str | None = None) -> TableModel:
    return reduce(TableModel(me=me), snap(s or snapshot()))


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


def play_a_coup(m: TableModel) -> TableModel:
    seq = m.seq or 0

    def nxt(kind: str, **data: Any) -> None:
        nonlocal seq, m
        seq += 1
        m, applied = apply_event(m, ev(seq, kind, **data))
        assert applied is Applied.APPLIED, kind

    nxt("bets", player=ME, seat=2, bets={"player": 1000}, change="place", available=99000)
    nxt("done", player=ME)
    nxt(
        "betting_closed",
        round_id="t1-1-3",
        bets={ME: {"player": 1000}, OTHER: {"banker": 500}},
        totals={},
        balance=99000,
    )
    nxt("dealt", round_id="t1-1-3", player=2, banker=2, turners={"player": ME, "banker": OTHER})
    assert m.phase == "turn" and m.coup is not None and m.coup.player[0].card is None
    nxt("turn", hand="player", turner=ME, third=False, deadline=2000.0)
    assert m.my_turn == "player" and "Your turn" in m.message
    nxt("squeeze", hand="player", style="peek", turner=ME, cards={"1": "9h", "2": "Kd"})
    assert m.coup.private == {("player", 1): "9h", ("player", 2): "Kd"}
    assert m.coup.seen("player", 1) == "9h" and m.coup.player[0].card is None  # still face down
    nxt("progress", hand="player", card=1, percent=50, turner=ME)
    assert m.coup.progress[("player", 1)] == 50
    nxt("card", hand="player", index=1, card="9h", by=ME, on_behalf=None, total=9)
    nxt("card", hand="player", index=2, card="Kd", by=ME, on_behalf=None, total=9)
    assert m.my_turn is None and m.coup is not None and m.coup.total("player") == 9
    nxt("turn", hand="banker", turner=OTHER, third=False, deadline=2001.0)
    assert m.my_turn is None and "Bo turns the Banker cards" in m.message
    nxt("squeeze", hand="banker", style="side", turner=OTHER)
    nxt("progress", hand="banker", card=2, percent=40, turner=OTHER)
    nxt("card", hand="banker", index=1, card="3c", by=OTHER, on_behalf=None, total=3)
    nxt("card", hand="banker", index=2, card="4c", by="croupier", on_behalf=OTHER, total=7)
    nxt(
        "result",
        round_id="t1-1-3",
        coup_no=3,
        player=["9h", "Kd"],
        banker=["3c", "4c"],
        player_total=9,
        banker_total=7,
        outcome="player",
        natural=True,
        player_pair=False,
        banker_pair=False,
    )
    assert m.message == "Player wins 9 to 7 (natural)"
    nxt("settled", round_id="t1-1-3", payouts=[], balance=101000, net=1000)
    return m


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
    m = loaded(snapshot(phase="turn", coup=coup))
    assert m.coup is not None and m.my_turn == "player"
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


def test_history_summaries() -> None:
    record = {
        "round_id": "t1-1-3",
        "table": "t1",
        "player": ["9h", "Kd"],
        "banker": ["3c", "4c"],
        "player_total": 9,
        "banker_total": 7,
        "outcome": "player",
        "natural": True,
        "bets": [
            {"player": ME, "area": "player", "stake": 1000, "returned": 2000},
            {"player": ME, "area": "tie", "stake": 100, "returned": 0},
        ],
        "balance": {"before": 10000, "after": 10900},
    }
    s = round_summary(record, ME)
    assert s["net"] == 900 and s["stake"] == 1100 and s["bets"] == {"player": 1000, "tie": 100}
    assert s["balance_after"] == 10900 and s["result"].startswith("Player wins 9 to 7")
    assert history_net([record, record], ME) == 1800
    assert history_net([record], OTHER) == 0


def test_drawings() -> None:
    assert card_art("Td")[1] == "│10     │" and len(card_art(None)) == 7
    assert all(len(line) == 9 for line in squeeze_art("9h", "peek", 40))
    assert "9" not in "".join(squeeze_art("9h", "side", 0)) and "9" in "".join(
        squeeze_art("9h", "side", 100)
    )
    quick = squeeze_art("9h", "quick", 40)
    assert "9" in quick[5] and "9" not in quick[1]  # the bottom first
    m = play_a_coup(loaded())
    hands = render_hands(m).plain
    assert "PLAYER  9" in hands and "BANKER  7" in hands and "You won 10.00" in hands
    seats = render_seats(m).plain
    assert next(line for line in seats.splitlines() if "Bo" in line).startswith("◆")
    assert "Player" in render_layout(m).plain
    road = render_roads(roads(parse_results("BPPPBTB")), width=20).plain
    assert "Bead plate" in road and "Big road" in road and "Big eye boy"[:6] in road
    assert "B1" in road  # the tie counted on the latest Banker entry
    assert "Banker 45.00%" in odds_text({"banker": 0.45, "player": 0.44, "tie": 0.11}).plain
    assert chip_values(m) == [100, 500, 1000, 2500, 5000]


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
