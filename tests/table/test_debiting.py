"""DEBITING: a wallet that confirms holds (an operator's seamless wallet) takes a coup's
wagers before the cards (docs/wallet.md §3). Pure: the croupier's answer is a command."""

from __future__ import annotations

from table_helpers import BANKER_WIN, PLAYER_WIN, TableHarness, stack

from server.table import MemoryWallet, Table
from server.table.table import Phase
from server.vocabulary import commands as c


def _harness() -> TableHarness:
    h = TableHarness(wallet=MemoryWallet(confirms_holds=True))
    h.setup({"alice": 1, "bob": 2, "carol": 3}, stack(BANKER_WIN, PLAYER_WIN), holder="alice")
    return h


def _close(h: TableHarness, bets: dict[str, dict[str, int]]) -> None:
    h.place(bets)
    h.done_all()


def test_betting_closes_into_debiting_and_nothing_is_dealt_until_the_wallet_answers() -> None:
    h = _harness()
    _close(h, {"alice": {"banker": 1000}, "bob": {"player": 500}, "carol": {"player": 700}})
    assert h.phase is Phase.DEBITING
    assert h.one("debiting").data == {
        "round_id": h.table.round_id,
        "players": ["alice", "bob", "carol"],
        "bettors": 0,
    }
    assert h.table.coup is None and "dealt" not in h.kinds()
    assert h.held() == 0 and h.stake("bob") == 500  # the chips wait on the felt
    # Nobody changes a wager being debited, nor stands up from it.
    h.refuse(c.PlaceBet(player="bob", area="tie", amount=100), "wrong_phase")
    h.refuse(c.Stand(player="bob"), "wager_in_play")
    # Only the croupier answers, and only for this round.
    h.refuse(c.Debited(player="bob", round_id=h.table.round_id), "not_allowed")
    h.refuse(c.Debited(round_id="t1-9-9"), "bad_command")


def test_a_refused_player_gets_their_chips_back_and_the_coup_goes_on_for_the_others() -> None:
    h = _harness()
    _close(h, {"alice": {"banker": 1000}, "bob": {"player": 900}, "carol": {"player": 700}})
    rid = h.table.round_id
    evs = h.do(c.Debited(round_id=rid, refused={"bob": "insufficient_funds"}))
    refused = h.one("debit_refused", evs)
    assert refused.data == {"round_id": rid, "player": "bob"}  # the reason is bob's alone
    assert refused.private == {
        "bob": {"reason": "insufficient_funds", "message": c.DEBIT_REFUSALS["insufficient_funds"]}
    }
    assert h.stake("bob") == 0 and h.available("bob") == 100_000
    closed = h.one("betting_closed", evs)
    assert set(closed.data["bets"]) == {"alice", "carol"}
    # The turner follows the wagers that stand: carol's Player bet, not bob's larger one.
    assert h.table.coup is not None and h.table.coup.turners["player"] == "carol"
    assert h.held() == 1700 and h.phase is Phase.TURN
    h.turn_all()
    assert h.wallet.total() == 0


def test_when_no_wager_stands_the_round_ends_undealt_and_the_next_opens() -> None:
    h = _harness()
    _close(h, {"bob": {"player": 900}})
    rid = h.table.round_id
    h.do(c.Debited(round_id=rid, refused={"bob": "wallet_unavailable"}))
    assert h.table.coup is None and h.phase is Phase.BETTING
    assert h.table.round_id != rid  # a new round: its debit ids are new too
    assert h.stake("bob") == 0 and h.available("bob") == 100_000
    assert h.wallet.total() == 0


def test_an_undealt_round_is_recorded_void_with_each_refusal_and_nothing_held() -> None:
    """Issue 33.11: a round whose debits all failed has its record (the operator finds
    the round of its debits and rollbacks); a dealt round's refusals make none."""
    h = _harness()
    h.table.drain_records()
    _close(h, {"alice": {"banker": 1000}, "bob": {"player": 900, "tie": 100}})
    rid = h.table.round_id
    refused = {"alice": "insufficient_funds", "bob": "wallet_unavailable"}
    h.do(c.Debited(round_id=rid, refused=refused))
    (record,) = h.table.drain_records()
    assert record["kind"] == "round" and record["round_id"] == rid
    assert record["void"] is True and record["undealt"] is True
    assert (record["reason"], record["voided_in"]) == ("undealt", "debiting")
    assert record["refused"] == refused and record["players"] == ["alice", "bob"]
    assert record["wagers"] == {"alice": {"banker": 1000}, "bob": {"player": 900, "tie": 100}}
    assert record["bets"] == [] and record["player"] == [] and record["outcome"] is None
    assert record["balances"]["bob"] == {"before": 100_000, "after": 100_000}
    _close(h, {"alice": {"banker": 1000}, "bob": {"player": 900}})
    h.do(c.Debited(round_id=h.table.round_id, refused={"bob": "limit_reached"}))
    assert h.table.drain_records() == []  # dealt: its record comes when it settles


def test_a_malformed_answer_is_refused() -> None:
    TableHarness.malformed(
        lambda: c.Debited(round_id="x", refused={"bob": "because"}), "bad_command"
    )
    TableHarness.malformed(lambda: c.Debited(round_id="x", refused=["bob"]), "bad_command")  # type: ignore[arg-type]


def test_debiting_survives_a_restart_and_a_close_returns_the_chips() -> None:
    h = _harness()
    _close(h, {"alice": {"banker": 1000}, "bob": {"player": 500}})
    state = h.table.to_state(spectators=False)
    t = Table.from_state(state, h.wallet)
    assert t.phase is Phase.DEBITING and t.debiting == {
        "alice": {"banker": 1000},
        "bob": {"player": 500},
    }
    step = t.handle(c.CloseTable(), h.now + 1)
    assert [e.data for e in step.events if e.kind == "closed"] == [{"refunded": True}]
    assert h.stake("bob") == 0 and h.available("bob") == 100_000 and h.wallet.total() == 0


def test_a_player_whose_grace_ran_out_while_debited_leaves_once_refused() -> None:
    h = _harness()
    _close(h, {"alice": {"banker": 1000}, "bob": {"player": 500}})
    h.do(c.Disconnect(player="bob"))
    h.tick(h.table.options.timers.grace + 1)  # grace over: bob leaves when free
    assert "bob" in h.table.players and h.table.players["bob"].leaving
    evs = h.do(c.Debited(round_id=h.table.round_id, refused={"bob": "insufficient_funds"}))
    assert "bob" not in h.table.players
    assert [e.data["reason"] for e in h.find("stood", evs)] == ["timeout"]
    assert h.available("bob") == 100_000 and h.wallet.total() == 0


def test_a_holder_whose_grace_ran_out_while_debited_keeps_the_shoe_for_the_coup() -> None:
    """A holder without a wager whose grace ran out while the wallet debited left when it
    answered, and the coup was dealt with nobody holding the shoe. The holder is in the
    coup (§5): they turn the Banker cards, or their timer does, and leave once it is
    settled, when the shoe is offered on."""
    h = _harness()
    h.do(c.Disconnect(player="alice"))
    _close(h, {"bob": {"player": 500}})
    h.tick(h.table.options.timers.grace + 1)
    assert h.table.players["alice"].leaving and h.table.holder == "alice"
    evs = h.do(c.Debited(round_id=h.table.round_id))
    assert h.find("dealt", evs) and not h.find("stood", evs) and not h.find("shoe_passed", evs)
    assert h.table.coup is not None and h.table.coup.holder == h.table.holder == "alice"
    evs = h.toss("bob", "player")
    evs += h.tick_to_deadline()  # alice's Banker turn, on her timer
    assert h.find("settled", evs)
    assert h.one("shoe_passed", evs).data == {"player": "alice", "reason": "timeout"}
    assert "alice" not in h.table.players and h.one("shoe_offered", evs).data["player"] == "bob"
