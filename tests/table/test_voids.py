"""The operator's controls of a table (issue 21): voiding a round that has not settled,
pausing and resuming. Pure: the croupier sends them on the operator's behalf."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from table_helpers import (
    BANKER_WIN,
    BANKER_WIN_BOTH_THIRD,
    PLAYER_WIN,
    TableHarness,
    stack,
)

import server.table
from server.engine.shoe import verify
from server.ledger.audit import hold_problems
from server.table import MemoryWallet, Table
from server.table.table import Phase
from server.table.views import summary, view
from server.vocabulary import commands as c
from server.wallet.calls import closing_calls


def _harness(*, seamless: bool = False, cards: tuple[str, ...] | None = None) -> TableHarness:
    h = TableHarness(wallet=MemoryWallet(confirms_holds=seamless))
    h.setup({"alice": 1, "bob": 2}, cards or stack(BANKER_WIN, PLAYER_WIN), holder="alice")
    return h


def _audit(h: TableHarness) -> None:
    """The books as the store's audit reads them: the sum 0, every hold has exactly one
    outcome, and nothing is held between coups."""
    assert h.wallet.total() == 0
    records = [r["round_id"] for r in h.records if r["kind"] == "round"]
    held = {k: v for k, v in h.wallet.balances.items() if k.startswith("held:")}
    assert hold_problems(h.wallet.entries, records, held) == []
    assert h.held() == 0


def _void(h: TableHarness, reason: str = "the card reader failed") -> list[Any]:
    return h.do(c.VoidRound(round_id=h.table.round_id, reason=reason))


def _drain(h: TableHarness) -> None:
    h.records = [*getattr(h, "records", []), *h.table.drain_records()]


def test_a_void_during_betting_gives_every_chip_back_and_opens_a_new_round() -> None:
    h = _harness()
    h.place({"alice": {"banker": 1000}, "bob": {"player": 500, "tie": 100}})
    rid = h.table.round_id
    evs = _void(h)
    voided = h.one("voided", evs)
    assert voided.data == {
        "round_id": rid,
        "reason": "the card reader failed",
        "refunded": {"alice": 1000, "bob": 600},
        "cards": None,
        "totals": {},  # the felt, empty (§5)
        "bettors": 0,
    }
    assert voided.private == {
        "alice": {**h.table.money("alice"), "own": 1000},
        "bob": {**h.table.money("bob"), "own": 600},
    }
    assert h.balance("bob") == h.available("bob") == 100_000 and h.stake("alice") == 0
    assert h.phase is Phase.BETTING and h.table.round_id != rid
    assert h.one("betting_opened", evs).data["round_id"] == h.table.round_id
    assert all(not q.bets for q in h.table.players.values())
    _drain(h)
    (record,) = [r for r in h.records if r["kind"] == "round"]
    assert record["void"] is True and record["reason"] == "the card reader failed"
    assert record["voided_in"] == "betting" and record["players"] == ["alice", "bob"]
    assert {(b["player"], b["area"], b["returned"]) for b in record["bets"]} == {
        ("alice", "banker", 1000),
        ("bob", "player", 500),
        ("bob", "tie", 100),
    }
    _audit(h)
    h.play_coup({"alice": {"banker": 100}})  # the table plays on
    _drain(h)
    _audit(h)


def test_a_void_mid_squeeze_gives_every_held_wager_back_as_its_one_outcome() -> None:
    h = _harness(cards=stack(BANKER_WIN_BOTH_THIRD, PLAYER_WIN))
    h.place({"alice": {"banker": 1000}, "bob": {"player": 500}})
    h.done_all()
    coup = h.table.coup
    assert coup is not None and h.held() == 1500
    h.do(c.Squeeze(player="bob", hand="player", style="peek"))
    h.do(c.TurnCard(player="bob", hand="player", card=1))
    rid = coup.round_id
    evs = _void(h)
    voided = h.one("voided", evs)
    # The coup's whole tableau is shown (its third cards drawn): the shoe deals on as
    # its seed says, and nobody's money depends on these cards any more.
    assert voided.data["cards"] == {"player": ["As", "2s", "5s"], "banker": ["Kh", "2h", "7h"]}
    assert h.held() == 0 and h.balance("alice") == h.balance("bob") == 100_000
    voids = [e for e in h.wallet.entries if e.kind == "void"]
    assert sorted((e.key, e.amount) for e in voids) == [
        (f"{rid}:alice:banker:void", 1000),
        (f"{rid}:bob:player:void", 500),
    ]
    assert h.table.coup is None and h.phase is Phase.BETTING and h.table.round_id != rid
    assert h.table.holder == "alice"  # the holder keeps the shoe
    _drain(h)
    (record,) = [r for r in h.records if r["kind"] == "round"]
    assert record["voided_in"] == "turn" and record["outcome"] is None
    assert record["dealt"]["player"][0] == {"card": "As", "up": True, "by": "bob"}
    assert record["dealt"]["banker"][0]["up"] is False
    assert record["balances"]["bob"] == {"before": 100_000, "after": 100_000}
    _audit(h)
    # The next coup deals the next cards: the PLAYER_WIN block.
    evs = h.play_coup({"bob": {"player": 100}})
    assert h.result(evs)["outcome"] == "player"
    _drain(h)
    _audit(h)
    # The shoe's record, revealed at its end, still verifies with the voided coup in it.
    h.do(c.CloseTable())
    _drain(h)
    (shoe,) = [r for r in h.records if r["kind"] == "shoe"]
    assert shoe["coups"][0] == {"player": ["As", "2s", "5s"], "banker": ["Kh", "2h", "7h"]}


def test_a_seeded_shoe_verifies_after_a_void() -> None:
    h = TableHarness()
    h.seat({"alice": 1, "bob": 2})
    h.do(c.StartShoe(seed=bytes(range(32))))
    while h.table.offer is not None:
        h.decline(h.table.offer.current)
    if h.phase is Phase.CUT:
        assert h.table.cutter is not None
        h.do(c.Cut(player=h.table.cutter, position=100))
    h.place({"alice": {"player": 300}})
    h.done_all()
    assert h.phase is Phase.TURN
    _void(h, "a test")
    for _ in range(3):
        h.play_coup({"bob": {"banker": 100}})
    h.do(c.CloseTable())
    _drain(h)
    (shoe,) = [r for r in h.records if r["kind"] == "shoe"]
    report = verify(shoe)
    assert report.ok, report.problems
    assert report.coups_checked == 4
    _audit(h)


def test_a_void_while_debiting_returns_the_chips_and_rolls_the_debits_back() -> None:
    h = _harness(seamless=True)
    h.place({"alice": {"banker": 1000}, "bob": {"player": 500}})
    h.done_all()
    assert h.phase is Phase.DEBITING
    before = h.table.to_state(spectators=False)
    rid = h.table.round_id
    evs = _void(h)
    assert h.one("voided", evs).data["refunded"] == {"alice": 1000, "bob": 500}
    assert h.stake("alice") == 0 and h.available("alice") == 100_000
    assert h.table.debiting is None and h.phase is Phase.BETTING and h.table.round_id != rid
    records = h.table.drain_records()
    calls = closing_calls(before, h.table.to_state(spectators=False), records, None, 1.0)
    assert sorted((x["kind"], x["player"], x["amount"], x["reason"]) for x in calls) == [
        ("rollback", "alice", 1000, "voided"),
        ("rollback", "bob", 500, "voided"),
    ]
    # The wallet's late answer for the voided round is refused: the round is over.
    h.refuse(c.Debited(round_id=rid), "wrong_phase")
    h.records = records
    _audit(h)


def test_a_seamless_void_of_a_dealt_coup_rolls_back_and_never_credits() -> None:
    h = _harness(seamless=True)
    h.place({"alice": {"banker": 1000}, "bob": {"player": 500}})
    h.done_all()
    h.do(c.Debited(round_id=h.table.round_id))
    assert h.phase is Phase.TURN
    before = h.table.to_state(spectators=False)
    _void(h)
    records = h.table.drain_records()
    calls = closing_calls(before, h.table.to_state(spectators=False), records, None, 1.0)
    assert sorted((x["kind"], x["player"], x["amount"], x["reason"]) for x in calls) == [
        ("rollback", "alice", 1000, "voided"),
        ("rollback", "bob", 500, "voided"),
    ]
    h.records = records
    _audit(h)


def test_a_settled_round_cannot_be_voided_and_an_unknown_one_is_not_found() -> None:
    h = _harness()
    h.play_coup({"alice": {"banker": 1000}})
    _drain(h)
    settled = next(r["round_id"] for r in h.records if r["kind"] == "round")
    h.refuse(c.VoidRound(round_id=settled, reason="too late"), "already_settled")
    h.refuse(c.VoidRound(round_id="t1-99-1", reason="never"), "not_found")
    h.refuse(c.VoidRound(round_id="t2-1-1", reason="elsewhere"), "not_found")
    h.refuse(c.VoidRound(round_id="nonsense", reason="elsewhere"), "not_found")
    # Only the croupier voids, and only with a reason of 1-200 characters.
    h.refuse(c.VoidRound(player="bob", round_id=h.table.round_id, reason="x"), "not_allowed")
    TableHarness.malformed(lambda: c.VoidRound(round_id="t1-1-2", reason=""), "bad_reason")
    TableHarness.malformed(lambda: c.VoidRound(round_id="t1-1-2", reason="x" * 201), "bad_reason")
    # A voided round is over too.
    rid = h.table.round_id
    _void(h)
    h.refuse(c.VoidRound(round_id=rid, reason="twice"), "already_settled")
    _drain(h)
    _audit(h)


def test_pause_stops_the_next_coup_and_resume_starts_it() -> None:
    h = _harness()
    h.place({"bob": {"player": 500}})
    evs = h.do(c.Pause())
    assert h.one("paused", evs).data == {"coup_finishes": True}
    assert h.phase is Phase.BETTING  # the chips on the felt: that round goes on
    assert view(h.table, "bob")["paused"] is True and summary(h.table)["paused"] is True
    h.done_all()
    h.turn_all()  # settled...
    assert h.phase is Phase.PAUSED  # ... and nothing new opens
    assert "betting_opened" not in h.kinds(h.events[-3:])
    h.refuse(c.PlaceBet(player="bob", area="player", amount=100), "wrong_phase")
    h.tick(3600)
    assert h.phase is Phase.PAUSED and h.table.next_deadline is None
    assert h.do(c.Pause()) == [] and h.step is not None and h.step.duplicate
    # Paused survives a restart.
    t = Table.from_state(h.table.to_state(), h.wallet)
    assert t.paused and t.phase is Phase.PAUSED
    evs = h.do(c.Resume())
    assert h.kinds(evs)[0] == "resumed" and "betting_opened" in h.kinds(evs)
    assert h.phase is Phase.BETTING and view(h.table, "bob")["paused"] is False
    h.play_coup({"alice": {"banker": 100}})
    assert h.phase is Phase.SHOE_OFFER  # Player won: the shoe passes, play goes on
    h.refuse(c.Pause(player="alice"), "not_allowed")
    h.refuse(c.Resume(player="alice"), "not_allowed")


def test_a_pause_with_nothing_on_the_felt_is_at_once_and_leaves_no_round_to_void() -> None:
    h = _harness()
    rid = h.table.round_id
    evs = h.do(c.Pause())
    assert h.one("paused", evs).data == {"coup_finishes": False}
    assert h.phase is Phase.PAUSED
    # Nobody plays the round that was open: nothing to void (no record without wagers),
    # and the lobby line names no round in play; it opens again on resume, same number.
    assert summary(h.table)["round_id"] is None
    h.refuse(c.VoidRound(round_id=rid, reason="nothing here"), "not_found")
    h.do(c.Resume())
    assert h.phase is Phase.BETTING and h.table.round_id == rid
    h.play_coup({"alice": {"banker": 100}})
    _drain(h)
    assert not any(r.get("void") for r in h.records if r["kind"] == "round")
    _audit(h)


def test_an_empty_table_waiting_for_players_has_no_round_to_void() -> None:
    """Everyone stood during betting (issue 34 §6): the table waits for players, its
    lobby line (the back office's) names no round, and a void of the round that was
    open is refused and writes nothing; the next player to sit bets on that round."""
    h = _harness()
    rid = h.table.round_id
    assert summary(h.table)["round_id"] == rid  # betting open, players seated
    h.do(c.Stand(player="alice"))
    h.do(c.Stand(player="bob"))
    assert h.phase is Phase.WAITING and summary(h.table)["round_id"] is None
    h.refuse(c.VoidRound(round_id=rid, reason="empty table"), "not_found")
    _drain(h)
    assert not [r for r in h.records if r["kind"] == "round"]
    h.sit("alice", 1)
    if h.table.offer is not None:
        h.take_shoe("alice")
    assert h.phase is Phase.BETTING and h.table.round_id == rid
    assert summary(h.table)["round_id"] == rid
    _audit(h)


def test_a_pause_during_the_shoe_offer_stops_its_timer_and_offers_again_on_resume() -> None:
    h = TableHarness()
    h.seat({"alice": 1, "bob": 2})
    h.start(stack(BANKER_WIN, PLAYER_WIN))
    assert h.phase is Phase.SHOE_OFFER and h.table.offer is not None
    h.do(c.Pause())
    assert h.phase is Phase.PAUSED and h.table.offer is None
    assert h.table.next_deadline is None
    h.tick(3600)
    assert "shoe_declined" not in h.kinds()
    evs = h.do(c.Resume())
    assert h.phase is Phase.SHOE_OFFER and h.one("shoe_offered", evs).data["player"] == "alice"
    h.accept("alice")
    h.play_coup({"alice": {"banker": 100}})
    assert h.wallet.total() == 0


def test_the_lobby_line_names_the_round_in_play() -> None:
    """``round_id`` of the lobby line (the operator's ``GET /operator/v1/tables``): the
    round an operator may void while it is bet on or dealt, ``None`` once none is."""
    h = _harness()
    h.place({"bob": {"player": 500}})
    rid = h.table.round_id
    assert summary(h.table)["round_id"] == rid  # bets open on it
    h.done_all()
    assert h.phase is Phase.TURN and summary(h.table)["round_id"] == rid  # being dealt
    _void(h)
    following = h.table.round_id
    assert following != rid and summary(h.table)["round_id"] == following  # opened at once
    h.place({"bob": {"banker": 500}})
    h.do(c.Pause())
    assert summary(h.table)["round_id"] == following  # paused, its chips on the felt
    h.done_all()
    h.turn_all()  # settled, and nothing new opens while paused
    assert h.phase is Phase.PAUSED and summary(h.table)["round_id"] is None
    h.refuse(c.VoidRound(round_id=following, reason="too late"), "already_settled")
    _drain(h)
    _audit(h)


def test_only_settlement_makes_ledger_entries() -> None:
    """docs/architecture.md: settlement alone moves money. No other module of the table
    calls a wallet's ``transfer`` (voiding's held wagers go back through
    ``settlement.refund(..., "void")``)."""
    calls = []
    for path in sorted(Path(server.table.__file__).parent.glob("*.py")):
        if path.name in ("settlement.py", "wallet.py"):  # (wallet.py: the transfer itself)
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "transfer":
                calls.append(f"{path.name}:{node.lineno}")
    assert not calls, calls
