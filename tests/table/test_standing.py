"""Standing up during betting (§5, §7): the shoe moves on before betting may close, so
no coup is ever dealt with a shoe holder who has left the seat."""

from __future__ import annotations

from table_helpers import BANKER_WIN, TableHarness, stack

from server.table import Phase
from server.vocabulary import commands as c


def test_the_holder_standing_last_passes_the_shoe_before_betting_closes() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    h.bet("bob", "banker", 500)
    h.done("bob")  # everyone but the holder is done
    evs = h.do(c.Stand(player="ann"))
    kinds = h.kinds(evs)
    assert "betting_closed" not in kinds  # not dealt under a holder who has gone
    assert kinds.index("shoe_passed") < kinds.index("shoe_offered")
    assert h.phase is Phase.SHOE_OFFER and h.table.coup is None
    h.accept("bob")
    assert h.table.holder == "bob"
    assert h.phase is Phase.BETTING  # betting reopens with bob's chips still placed
    assert h.table.players["bob"].bets == {"banker": 500}


def test_a_player_standing_last_closes_betting_for_the_others() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2, "cat": 3}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    h.bet("ann", "banker", 500)
    h.done("ann")
    h.done("bob")
    evs = h.do(c.Stand(player="cat"))
    assert h.find("betting_closed", evs)
    assert h.table.coup is not None and h.table.coup.turners["banker"] == "ann"


def test_the_cut_is_offered_again_when_the_cutter_stands_up() -> None:
    # §4: with the house holding, the first seated player cuts; if they stand up, the
    # next one is asked, with a fresh timer.
    h = TableHarness()
    h.seat({"ann": 1, "bob": 2})
    h.start(seed=bytes(range(32)))
    h.decline("ann")
    h.decline("bob")  # the house holds: ann (seat 1) cuts
    assert h.phase is Phase.CUT and h.table.cutter == "ann"
    first = h.one("cut_offered")
    evs = h.do(c.Stand(player="ann"), dt=5.0)
    again = h.one("cut_offered", evs)
    assert again.data["player"] == "bob" and again.data["deadline"] > first.data["deadline"]
    h.do(c.Cut(player="bob", position=200))
    assert h.phase is Phase.BETTING


def test_offer_and_cut_timeouts_are_in_the_next_round_record() -> None:
    # §6, §8: a step the croupier did for a player when a timer ran out is recorded as
    # done on their behalf; shoe offers and the cut come between coups, so the next
    # coup's round record carries them.
    h = TableHarness()
    h.seat({"ann": 1, "bob": 2})
    h.start(seed=bytes(range(32)))
    h.tick_to_deadline()  # ann does not answer the offer: declined for her
    h.accept("bob")
    h.tick_to_deadline()  # bob does not cut: the croupier cuts for him
    assert h.one("shoe_cut").data == {
        **h.one("shoe_cut").data,
        "by": "croupier",
        "on_behalf": "bob",
    }
    h.play_coup({"ann": {"banker": 500}})
    (record,) = [r for r in h.table.drain_records() if r["kind"] == "round"]
    assert record["on_behalf"][:2] == [
        {"step": "decline the shoe", "player": "ann"},
        {"step": "cut the shoe", "player": "bob"},
    ]
    h.play_coup({"ann": {"banker": 500}})  # carried once, not again
    (again,) = [r for r in h.table.drain_records() if r["kind"] == "round"]
    assert not any(x["step"] in ("decline the shoe", "cut the shoe") for x in again["on_behalf"])
