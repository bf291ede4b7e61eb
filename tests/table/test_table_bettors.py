"""Bettors without a seat (GAME_RULES §5, §6, §7; issue 37): spectators who bet on every
area within the table's limits, who never hold, are offered or cut the shoe, never hold
the betting round open, turn the Player cards when theirs is the highest Player bet, and
whose bets are their own: everyone sees the felt's totals and how many bettors are in.
Pure: the table alone, over a ledger wallet."""

from __future__ import annotations

import json
from typing import Any

import pytest
from table_helpers import (
    BANKER_WIN,
    DEFAULT_FUNDS,
    PLAYER_WIN,
    TableHarness,
    check_parts,
    stack,
)

from server.ledger.audit import hold_problems
from server.table import MemoryWallet, Table, TableOptions, Timers, view_event
from server.table.table import Phase
from server.table.views import own_round, summary, view
from server.vocabulary import commands as c
from server.wallet.calls import closing_calls


def _table(options: TableOptions | None = None, **kw: Any) -> TableHarness:
    """Ann (seat 1, holding the shoe) and Bob (seat 2) seated; Zoe and Yan watching."""
    h = TableHarness(options or TableOptions(**kw))
    h.setup({"ann": 1, "bob": 2}, stack(PLAYER_WIN, BANKER_WIN, BANKER_WIN), holder="ann")
    h.join("zoe")
    h.join("yan")
    return h


def _next_coup(h: TableHarness) -> None:
    """After a Player win the shoe passes (§5): each seated player offered it takes it."""
    while h.table.offer is not None:
        h.accept(h.table.offer.current)


def _audit(h: TableHarness) -> None:
    assert h.wallet.total() == 0
    records = [r["round_id"] for r in h.table.drain_records() if r["kind"] == "round"]
    h.records = [*getattr(h, "records", []), *records]
    held = {k: v for k, v in h.wallet.balances.items() if k.startswith("held:")}
    assert hold_problems(h.wallet.entries, h.records, held) == []


def test_a_spectator_bets_and_only_the_felts_totals_are_public() -> None:
    h = _table()
    h.bet("ann", "banker", 500)
    evs = h.bet("zoe", "player", 300)
    bets = h.one("bets", evs)
    # Everyone sees the felt: the totals per area and how many bettors are in (§5).
    public = {"player": None, "seat": None, "bets": None, "change": "place"}
    felt = {"totals": {"banker": 500, "player": 300}, "bettors": 1}
    assert bets.data == {**public, **felt}
    for viewer in ("ann", "bob", "yan", None):
        assert view_event(bets, viewer)["data"] == bets.data
    # Zoe sees her own, as a seated player sees theirs.
    mine = view_event(bets, "zoe")["data"]
    assert "bet" in mine.pop("actions")  # (her actions changed: on the step's last event)
    assert mine == {
        **felt,
        "player": "zoe",
        "seat": None,
        "bets": {"player": 300},
        "change": "place",
        "available": DEFAULT_FUNDS - 300,
    }
    assert h.stake("zoe") == 300 and h.available("zoe") == DEFAULT_FUNDS - 300
    # Snapshots: the felt for all, Zoe's bets in her own "you" only.
    assert view(h.table, "yan")["felt"] == felt == view(h.table, None)["felt"]
    assert "zoe" not in json.dumps(view(h.table, "yan"))
    you = view(h.table, "zoe")["you"]
    assert you["seat"] is None and you["bets"] == {"player": 300}
    assert set(you["actions"]) >= {"bet", "remove_bet", "clear_bets", "sit", "leave"}
    assert "done" not in you["actions"]  # a bettor without a seat never holds the round open
    assert summary(h.table)["bettors"] == 1 and summary(h.table)["bettors_max"] == 1_000
    # Every area, within the same limits as a seated player (§5).
    for area in ("banker", "tie", "player_pair", "banker_pair"):
        h.bet("zoe", area, 100)
    h.refuse(c.PlaceBet(player="zoe", area="tie", amount=1_401), "over_max")
    h.refuse(c.PlaceBet(player="yan", area="tie", amount=99), "below_min")
    h.join("xi", funds=500)
    h.refuse(c.PlaceBet(player="xi", area="player", amount=501), "insufficient_funds")
    h.refuse(c.PlaceBet(player="yan", area="dragon_player", amount=100), "bad_area")
    # The gateway's allowance (the player's own limit) holds a bettor's chips too.
    h.refuse(
        c.PlaceBet(
            player="yan",
            area="player",
            amount=500,
            allowance={"kind": "wager_day", "amount": 1_000, "remaining": 400},
        ),
        "limit_reached",
    )
    h.refuse(c.Done(player="zoe"), "not_seated")


def test_regret_clear_and_same_bet_without_a_seat() -> None:
    h = _table()
    h.bet("zoe", "player", 500)
    h.bet("zoe", "tie", 200)
    evs = h.do(c.RemoveBet(player="zoe", area="player", amount=200))
    assert view_event(h.one("bets", evs), "zoe")["data"]["bets"] == {"player": 300, "tie": 200}
    assert h.one("bets", evs).data["totals"] == {"player": 300, "tie": 200}
    evs = h.do(c.ClearBets(player="zoe"))
    assert h.one("bets", evs).data == {
        "player": None,
        "seat": None,
        "bets": None,
        "change": "clear",
        "totals": {},
        "bettors": 0,
    }
    assert h.stake("zoe") == 0 and h.available("zoe") == DEFAULT_FUNDS
    h.refuse(c.ClearBets(player="zoe"), "no_bet")
    h.bet("zoe", "player", 1_000)
    h.bet("ann", "banker", 100)
    h.done_all()
    h.turn_all()  # Player wins: Zoe's 1,000 returns 2,000
    assert h.available("zoe") == DEFAULT_FUNDS + 1_000
    _next_coup(h)
    evs = h.do(c.SameBet(player="zoe"))
    assert view_event(h.one("bets", evs), "zoe")["data"]["bets"] == {"player": 1_000}
    assert h.one("bets", evs).data["change"] == "same" and h.one("bets", evs).data["bets"] is None
    _audit(h)


def test_bettors_never_hold_the_round_open() -> None:
    """The seated players' DONE closes the betting, and a bettor's chips placed before
    count; the timer closes it with only bettors' chips (§5, §7)."""
    h = _table()
    h.bet("zoe", "player", 300)
    h.done("ann")
    assert h.phase is Phase.BETTING
    evs = h.done("bob")  # every seated player is done: Zoe is not waited for
    closed = h.one("betting_closed", evs)
    assert closed.data["totals"] == {"player": 300} and closed.data["bettors"] == 1
    assert h.table.coup is not None and h.table.coup.held == {"zoe": {"player": 300}}
    assert closed.private == {"zoe": {**h.table.money("zoe"), "own": {"player": 300}}}
    h.turn_all()
    # Only a bettor bets, nobody seated: the timer starts with the first bet and closes.
    h2 = TableHarness(TableOptions(timers=Timers(betting=10.0)))
    h2.setup({"ann": 1}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    h2.join("zoe")
    h2.tick_to_deadline()  # no bet at all: the table waits (§7)
    assert h2.table.deadline is None and h2.phase is Phase.BETTING
    evs = h2.bet("zoe", "banker", 200)
    assert "betting_timer" in h2.kinds(evs)  # a bettor's first bet restarts it
    evs = h2.tick_to_deadline()
    assert "betting_closed" in h2.kinds(evs)
    h2.turn_all()
    assert h2.available("zoe") == DEFAULT_FUNDS + 190  # Banker wins, 5% commission


@pytest.mark.parametrize("seated_first", [True, False])
def test_the_highest_player_bet_turns_seated_or_not(seated_first: bool) -> None:
    """§6: the highest Player bet turns; on equal amounts the first to reach it."""
    h = _table()
    first, second = ("bob", "zoe") if seated_first else ("zoe", "bob")
    h.bet(first, "player", 500)
    h.bet(second, "player", 300)
    h.bet(second, "player", 200)  # 500 too, reached later
    h.bet("yan", "player", 400)
    h.bet("ann", "banker", 100)
    evs = h.done_all()
    assert h.table.coup is not None and h.table.coup.turners == {"player": first, "banker": "ann"}
    dealt = h.one("dealt", evs)
    assert dealt.data["names"] == {first: first.title(), "ann": "Ann"}
    # The turner's bets are public (so are the seated players'); Yan's are not.
    closed = h.one("betting_closed", evs)
    assert set(closed.data["bets"]) == {"ann", "bob", first}
    assert closed.data["totals"] == {"player": 1_400, "banker": 100}
    assert view(h.table, None)["coup"]["bets"] == closed.data["bets"]
    assert view(h.table, "yan")["coup"]["bets"] == {**closed.data["bets"], "yan": {"player": 400}}


def test_a_bettor_who_turns_squeezes_and_nobody_else_sees_the_card() -> None:
    h = _table()
    h.bet("zoe", "player", 1_000)
    h.bet("ann", "banker", 100)
    h.done_all()
    coup = h.table.coup
    assert coup is not None and coup.turners["player"] == "zoe"
    assert "squeeze" in view(h.table, "zoe")["you"]["actions"]
    evs = h.do(c.Squeeze(player="zoe", hand="player", style="peek"))
    squeeze = h.one("squeeze", evs)
    cards = view_event(squeeze, "zoe")["data"]["cards"]
    assert cards == {"1": coup.player[0].card, "2": coup.player[1].card}
    for viewer in ("ann", "bob", "yan", None):
        assert "cards" not in view_event(squeeze, viewer)["data"]
        assert [x["card"] for x in view(h.table, viewer)["coup"]["player"]] == [None, None]
    assert [x["card"] for x in view(h.table, "zoe")["coup"]["player"]] == list(cards.values())
    h.refuse(c.Squeeze(player="yan", hand="player", style="peek"), "not_your_turn")
    h.turn_all()
    settled = h.one("settled")
    assert {p["player"] for p in settled.data["payouts"]} == {"ann", "zoe"}  # she turned


def test_settlement_pays_bettors_privately_and_records_their_round() -> None:
    h = _table()
    h.bet("ann", "banker", 100)
    h.bet("zoe", "player", 500)
    h.bet("yan", "player", 300)  # Zoe turns: Yan's bets are his own
    h.bet("yan", "tie", 100)
    h.done_all()
    evs = h.turn_all()  # Player wins 9-2
    settled = h.one("settled", evs)
    assert {p["player"] for p in settled.data["payouts"]} == {"ann", "zoe"}
    assert settled.data["totals"] == {} and settled.data["bettors"] == 0
    yan = view_event(settled, "yan")["data"]
    assert yan["net"] == 300 - 100 and {p["area"] for p in yan["own"]} == {"player", "tie"}
    assert yan["balance"] == yan["available"] == DEFAULT_FUNDS + 200
    assert "own" not in view_event(settled, "bob")["data"]
    assert "yan" not in json.dumps(view_event(settled, "bob"))
    record = [r for r in h.table.drain_records() if r["kind"] == "round"][-1]
    assert record["players"] == ["ann", "yan", "zoe"]
    mine = own_round(record, "yan")
    assert mine["balance"] == {"before": DEFAULT_FUNDS, "after": DEFAULT_FUNDS + 200}
    assert {b["area"] for b in mine["bets"]} == {"player", "tie"}
    assert h.table.players["yan"].last_bets == {"player": 300, "tie": 100}
    assert h.wallet.total() == 0 and h.held() == 0


def test_the_tables_bettors_option() -> None:
    h = _table(bettors=0)  # a seated-only table, as before
    h.refuse(c.PlaceBet(player="zoe", area="player", amount=100), "seated_only")
    h.refuse(c.SameBet(player="zoe"), "seated_only")
    assert "bet" not in view(h.table, "zoe")["you"]["actions"]
    h = _table(bettors=1)
    h.bet("zoe", "player", 100)
    err = h.refuse(c.PlaceBet(player="yan", area="player", amount=100), "bettors_full")
    assert "1 bettors" in err.message
    assert "bet" not in view(h.table, "yan")["you"]["actions"]
    h.bet("zoe", "banker", 100)  # one of them: more chips, as any bettor
    evs = h.do(c.ClearBets(player="zoe"))
    # Room again: Yan's actions say so at once (every spectator is kept current).
    assert "bet" in view_event(evs[-1], "yan")["data"]["actions"]
    h.bet("yan", "player", 100)
    with pytest.raises(ValueError, match="bettors"):
        TableOptions(bettors=-1)


def test_bettors_are_never_offered_the_shoe_nor_cut() -> None:
    h = TableHarness(TableOptions())
    h.join("zoe")
    h.start(stack(PLAYER_WIN, BANKER_WIN))
    assert h.phase is Phase.WAITING  # nobody seated: no round, no bet (§5)
    h.refuse(c.PlaceBet(player="zoe", area="player", amount=100), "wrong_phase")
    h.seat({"ann": 1})
    assert h.table.offer is not None and h.table.offer.current == "ann"
    h.refuse(c.AcceptShoe(player="zoe"), "not_seated")
    h.decline("ann")  # the house holds: the first seated player cuts
    h.refuse(c.Cut(player="zoe", position=100), "wrong_phase")
    assert h.phase is Phase.BETTING and h.table.cutter == "ann"
    h.bet("zoe", "player", 200)
    h.bet("ann", "banker", 100)
    h.done_all()
    h.turn_all()  # Player wins: the house holds, and offers the shoe to the seated only
    assert h.table.offer is not None and h.table.offer.current == "ann"
    h.refuse(c.PassShoe(player="zoe"), "wrong_phase")


def test_the_last_seated_player_leaving_gives_the_bettors_chips_back() -> None:
    h = _table()
    h.bet("zoe", "player", 300)
    h.bet("yan", "banker", 200)
    h.do(c.Disconnect(player="yan"))  # away: kept for his chips
    h.do(c.Leave(player="bob"))
    evs = h.do(c.Leave(player="ann"))
    assert h.phase is Phase.WAITING
    back = [e for e in evs if e.kind == "bets"][-1]
    assert back.data["change"] == "returned" and back.data["totals"] == {}
    assert set(back.private or {}) == {"zoe", "yan"}
    assert h.stake("zoe") == h.stake("yan") == 0
    assert "yan" not in h.table.players and "zoe" in h.table.players  # Yan had gone away
    assert h.wallet.balance("player:yan") == DEFAULT_FUNDS


def test_a_bettor_who_goes_away_keeps_wagers_that_are_settled_in_their_absence() -> None:
    """GAME_RULES §8: a lost connection leaves the wagers as they are; chips placed and
    not yet held stay too, and count when the betting closes. The bettor leaves once
    nothing of theirs is in play; one who comes back before stays."""
    h = _table()
    h.bet("zoe", "player", 500)
    h.bet("yan", "banker", 200)
    evs = h.do(c.Disconnect(player="zoe"))
    assert evs == []  # nobody else knew her: nothing to tell
    assert h.table.players["zoe"].leaving and h.stake("zoe") == 500
    h.do(c.Disconnect(player="yan"))
    h.do(c.Join(player="yan", name="Yan", rejoin=True))  # back before the coup
    h.bet("ann", "banker", 100)
    h.done_all()
    coup = h.table.coup
    assert coup is not None and set(coup.held) == {"ann", "zoe", "yan"}
    assert coup.turners["player"] == "zoe"  # away, her turn waits for its timer
    h.refuse(c.Leave(player="yan"), "wager_in_play")
    while h.table.coup is not None:
        h.tick_to_deadline()  # the croupier turns for her
    assert "zoe" not in h.table.players and "yan" in h.table.players
    assert h.wallet.balance("player:zoe") == DEFAULT_FUNDS + 500  # Player won: paid
    on_behalf = [r for r in h.table.drain_records() if r["kind"] == "round"][-1]["on_behalf"]
    assert {"step": "turn player card 1", "player": "zoe"} in on_behalf
    _next_coup(h)
    h.bet("yan", "player", 100)
    evs = h.do(c.Leave(player="yan"))  # chips not yet held come back with him
    assert h.one("bets", evs).data["change"] == "returned" and h.stake("yan") == 0
    assert h.wallet.total() == 0


def test_a_bettor_sitting_down_brings_their_chips() -> None:
    h = _table()
    h.bet("zoe", "player", 300)
    evs = h.sit("zoe", 5)
    sat = h.one("sat", evs)
    assert sat.data["bets"] == {"player": 300} and sat.data["bettors"] == 0
    assert sat.data["totals"] == {"player": 300}
    assert view(h.table, None)["seats"][-1]["bets"] == {"player": 300}
    assert "done" in view_event(evs[-1], "zoe")["data"]["actions"]


def test_the_seats_and_the_bettor_count_are_made_again_only_when_they_change() -> None:
    """Every step reads the seats taken and how many bettors are in, before and after
    it (the actions' watch): both are kept from one step to the next, and made again
    when a seat changes or chips are laid, so the count follows a bettor who sits down
    with their chips, and one who stands up."""
    h = _table()
    t = h.table
    seats = t.seats()
    assert seats == (1, 2)
    h.bet("ann", "banker", 100)
    h.bet("zoe", "player", 300)
    assert t.seats() is seats  # (the same tuple: not made again at every step)
    assert t.bettor_count() == 1 and h.one("bets", h.bet("yan", "tie", 100)).data["bettors"] == 2
    evs = h.sit("zoe", 5)  # her chips come with her: a seated player's now
    assert t.seats() == (1, 2, 5) and t.bettor_count() == 1
    assert h.one("sat", evs).data["bettors"] == 1
    h.do(c.RemoveBet(player="yan", area="tie"))
    assert t.bettor_count() == 0 and t.felt()["bettors"] == 0


def test_a_void_gives_bettors_their_wagers_back_privately() -> None:
    h = _table()
    h.bet("ann", "banker", 100)
    h.bet("zoe", "player", 500)
    h.bet("yan", "player", 300)
    h.done_all()
    evs = h.do(c.VoidRound(round_id=h.table.round_id, reason="a test"))
    voided = h.one("voided", evs)
    assert voided.data["refunded"] == {"ann": 100, "zoe": 500}  # Zoe turns: public
    assert view_event(voided, "yan")["data"]["own"] == 300
    assert h.wallet.balance("player:yan") == DEFAULT_FUNDS and h.held() == 0
    _audit(h)


def test_debits_for_bettors_and_one_event_for_every_refused_bettor() -> None:
    h = TableHarness(wallet=MemoryWallet(confirms_holds=True))
    h.setup({"ann": 1}, stack(BANKER_WIN, PLAYER_WIN), holder="ann")
    for name in ("zoe", "yan", "xi"):
        h.join(name)
        h.bet(name, "player", 200)
    h.bet("ann", "banker", 100)
    evs = h.done_all()
    debiting = h.one("debiting", evs)
    assert debiting.data == {"round_id": h.table.round_id, "players": ["ann"], "bettors": 3}
    assert h.table.debiting is not None and set(h.table.debiting) == {"ann", "zoe", "yan", "xi"}
    state = h.table.to_state(spectators=False)
    rid = h.table.round_id
    evs = h.do(
        c.Debited(round_id=rid, refused={"zoe": "insufficient_funds", "yan": "limit_reached"})
    )
    refused = h.one("debit_refused", evs)
    assert refused.data == {"round_id": rid, "player": None}
    assert view_event(refused, "zoe")["data"]["reason"] == "insufficient_funds"
    assert "reason" not in view_event(refused, "xi")["data"]
    assert h.table.coup is not None and set(h.table.coup.held) == {"ann", "xi"}
    assert h.stake("zoe") == 0 and h.table.chips.totals == {"player": 200, "banker": 100}
    # The closing calls (credits) cover every wager held, bettors' too.
    before, parts = h.table.to_state(spectators=False), h.table.take_parts()
    assert parts["xi"] is not None and parts["xi"]["held"] == {"player": 200}
    assert "xi" not in before["coup"]["held"] and state["debiting"] == {"ann": {"banker": 100}}
    h.turn_all()
    records = h.table.drain_records()
    after = h.table.to_state(spectators=False)
    calls = closing_calls(before, after, records, None, 1.0, parts=parts)
    assert sorted((x["kind"], x["player"]) for x in calls) == [("credit", "ann"), ("credit", "xi")]


def test_the_stored_row_does_not_grow_with_the_bettors() -> None:
    """A step writes the row and only the parts it changed: a thousand bettors are a
    thousand parts, written when each bets, never a row of a thousand players."""
    h = _table()
    h.bet("ann", "banker", 100)
    h.table.take_parts()
    small = len(json.dumps(h.table.to_state(spectators=False)))
    parts: dict[str, dict[str, Any]] = {}
    for n in range(1_000):
        pid = f"b{n:04d}"
        h.join(pid)
        h.do(c.PlaceBet(player=pid, area="player" if n % 2 else "banker", amount=100, id="x"))
        written = h.table.take_parts()
        assert list(written) == [pid]  # the bet's step writes one part
        parts.update({k: v for k, v in written.items() if v is not None})
    row = h.table.to_state(spectators=False)
    assert len(json.dumps(row)) < small + 2_000  # (the counter's digits, a deadline...)
    assert view(h.table, None)["felt"] == {
        "totals": {"banker": 100 + 500 * 100, "player": 500 * 100},
        "bettors": 1_000,
    }
    evs = h.done_all()  # one step holds every wager
    closed = h.one("betting_closed", evs)
    assert len(json.dumps(closed.data)) < 500 and len(closed.private or {}) == 1_001
    assert len(json.dumps(view_event(closed, "b0001"))) < 500
    parts.update(h.table.take_parts())  # every bettor's part: their wager held
    assert len(parts) == 1_000 and all(p is not None and p["held"] for p in parts.values())
    back = Table.from_state(
        json.loads(json.dumps(h.table.to_state(spectators=False))), h.wallet, parts
    )
    assert back.coup is not None and len(back.coup.held) == 1_001
    assert back.felt() == h.table.felt()
    evs = h.turn_all()  # Player wins: one settling step, every bettor paid
    settled = h.one("settled", evs)
    assert len(json.dumps(settled.data)) < 1_000 and len(settled.private or {}) == 1_001
    assert all(len(json.dumps(view_event(settled, p))) < 1_000 for p in ("b0001", "b0002"))
    gone = h.table.take_parts()
    assert len(gone) == 1_000 and all(v is None for v in gone.values())
    assert h.wallet.balance("player:b0001") == DEFAULT_FUNDS + 100
    assert h.wallet.balance("player:b0000") == DEFAULT_FUNDS - 100
    _audit(h)


def test_the_stored_rows_ids_ask_only_the_touched_players_who_bets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The row keeps the command ids of the seated and of the latest others but the
    bettors (theirs are in their parts): at a burst's commit it asks who is a bettor only
    of the players the burst touched, not of every bettor who ever bet (issue 37 §3: a
    step's cost must not grow with the bettors), and keeps the same ids."""
    h = _table()
    h.do(c.Chat(player="zoe", text="hello", id="z1"))
    for n in range(300):
        pid = f"b{n:03d}"
        h.join(pid)
        h.do(c.PlaceBet(player=pid, area="player", amount=100, id=f"x{n}"))
    h.table.take_parts()
    h.do(c.PlaceBet(player="b007", area="banker", amount=100, id="again"))
    h.do(c.Chat(player="yan", text="hi", id="y1"))
    asked: list[str] = []
    real = Table.is_bettor

    def counted(self: Table, p: Any) -> bool:
        asked.append(p.id)
        return real(self, p)

    monkeypatch.setattr(Table, "is_bettor", counted)
    row = h.table.to_state(spectators=False)
    assert len(asked) <= 4, len(asked)  # b007 and yan, who were touched
    assert set(row["recent_ids"]) == {"zoe", "yan"}  # (ann and bob sent no id)
    assert set(h.table.take_parts()) == {"b007"}


def test_a_restart_keeps_bettors_wagers_and_chips_and_sends_them_away() -> None:
    h = _table()
    parts: dict[str, dict[str, Any]] = {}
    h.bet("ann", "banker", 100)
    h.bet("zoe", "player", 500)
    h.done_all()
    h.join("wen")
    check_parts(h.table, parts)
    row = json.loads(json.dumps(h.table.to_state(spectators=False)))
    assert "zoe" not in json.dumps([row["players"], row["coup"]["held"]])  # in her part
    h.table = Table.from_state(row, h.wallet, parts)
    evs = h.do(c.Restored())
    assert all("zoe" not in json.dumps(e.data) for e in evs)
    assert "wen" not in h.table.players and h.table.players["zoe"].leaving
    assert h.table.coup is not None and h.table.coup.held["zoe"] == {"player": 500}
    h.do(c.Join(player="zoe", name="Zoe", rejoin=True))  # back: her turn is hers
    assert "squeeze" in view(h.table, "zoe")["you"]["actions"]
    check_parts(h.table, parts)
    h.turn_all()
    assert "zoe" in h.table.players and h.wallet.balance("player:zoe") == DEFAULT_FUNDS + 500
    check_parts(h.table, parts)
    assert parts == {}


def test_a_burst_of_bettors_chips_is_told_in_one_event_for_them_all() -> None:
    """A croupier stepping several bettors' commands together (the actor, when they
    queue up: issue 37 §3) tells them in one ``bets`` event per kind of change, each
    bettor's own copy with their chips and actions, and the table ends as it would one
    command at a time."""
    one_by_one, burst = _table(), _table()
    for h in (one_by_one, burst):
        h.join("xia")
        h.bet("ann", "banker", 500)
    cmds = [
        c.PlaceBet(player="zoe", area="player", amount=300),
        c.PlaceBet(player="yan", area="banker", amount=200),
        c.PlaceBet(player="zoe", area="tie", amount=100),
        c.PlaceBet(player="xia", area="player", amount=100),
        c.ClearBets(player="xia"),
    ]
    for cmd in cmds:
        one_by_one.do(cmd)
    t = burst.table
    seq = t.seq
    t.defer_bettors()
    steps = [t.handle(cmd, burst.now) for cmd in cmds]
    assert [s.events for s in steps] == [()] * 5 and t.seq == seq  # nothing told yet
    flushed = t.flush_bettors(cmds[-1])
    # One event per change, in the order the changes first came; every bettor's own
    # copy holds their chips as they are now.
    assert [(e.kind, e.data["change"]) for e in flushed.events] == [
        ("bets", "place"),
        ("bets", "clear"),
    ]
    placed, cleared = flushed.events
    assert set(placed.private or {}) >= {"zoe", "yan"} and set(cleared.private or {}) >= {"xia"}
    assert view_event(placed, "zoe")["data"]["bets"] == {"player": 300, "tie": 100}
    assert view_event(placed, "yan")["data"]["bets"] == {"banker": 200}
    assert view_event(cleared, "xia")["data"]["bets"] == {}
    for viewer in ("ann", "bob", None):  # the others see the felt, not who
        assert "zoe" not in json.dumps(view_event(placed, viewer))
    assert cleared.data["totals"] == one_by_one.table.felt()["totals"]
    assert flushed.seq == t.seq == seq + 2
    # The same table as one command at a time: chips, felt, money and actions.
    for pid in ("zoe", "yan", "xia", "ann"):
        assert t.players[pid].bets == one_by_one.table.players[pid].bets
        assert burst.available(pid) == one_by_one.available(pid)
        assert t.actions(pid) == one_by_one.table.actions(pid)
    assert t.felt() == one_by_one.table.felt()
    # Each bettor's actions went with the events (the last one carries the overlays).
    told = {
        pid: view_event(flushed.events[-1], pid)["data"].get("actions")
        for pid in ("zoe", "yan", "xia")
    }
    assert all(told[pid] == t.actions(pid) for pid in told), told
    _audit(burst)


def test_each_area_and_stake_is_settled_once_a_coup(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thousand bettors' wagers are a few dozen pairs of area and stake (issue 37): the
    settlement settles each pair once and pays every wager its result, as before."""
    from server.table import settlement

    h = _table()
    for i in range(12):
        h.join(f"w{i}")
        h.bet(f"w{i}", "player" if i % 3 else "banker", 100 * (1 + i % 2))
    h.bet("zoe", "player", 500)
    h.bet("yan", "player", 100)
    h.bet("yan", "tie", 100)
    h.bet("ann", "banker", 100)
    settled: list[tuple[str, int]] = []
    real = settlement.settle_bet

    def counted(area: str, stake: int, *rest: Any) -> Any:
        settled.append((area, stake))
        return real(area, stake, *rest)

    monkeypatch.setattr(settlement, "settle_bet", counted)
    h.done_all()
    evs = h.turn_all()  # Player wins 9-2
    assert sorted(settled) == sorted(set(settled))  # each pair once
    assert set(settled) == {("player", 100), ("player", 200), ("player", 500)} | {
        ("banker", 100),
        ("banker", 200),
        ("tie", 100),
    }
    paid = h.one("settled", evs)
    for i in range(12):
        mine = view_event(paid, f"w{i}")["data"]
        stake = 100 * (1 + i % 2)
        assert mine["net"] == (stake if i % 3 else -stake), i
    _audit(h)


def test_bettors_of_ample_but_unequal_funds_share_one_actions_at_a_settlement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bettor's actions hold their funds only up to what can bound them (a bet's ``max``
    is the area's room or the funds, whichever is less; SAME BET needs the last bets'
    sum): bettors whose balances differ but all pass that have the same actions, made once
    and given as one private part, where a thousand bettors' settlement made each one's
    apart (issue 37 §3). One whose funds are short still gets their own, bounded by them."""
    from server.table import rules

    h = _table()
    top = max(h.table.area_max.values())
    rich = [f"r{i}" for i in range(12)]
    for i, pid in enumerate(rich):
        h.join(pid, funds=top * 3 + 7 * i)  # each balance its own, all ample
    h.join("short", funds=top // 2)
    h.bet("ann", "banker", 100)
    h.done_all()
    made: list[str] = []
    real = rules.actions

    def counted(t: Table, pid: str) -> dict[str, Any]:
        made.append(pid)
        return real(t, pid)

    monkeypatch.setattr(rules, "actions", counted)
    h.turn_all()  # Player wins: the shoe passes, and is offered
    _next_coup(h)
    for pid in rich:
        h.bet(pid, "banker", 100)
    h.bet("short", "banker", 100)
    h.bet("ann", "banker", 100)
    h.done_all()
    made.clear()
    evs = h.turn_all()  # Banker wins: the holder keeps the shoe, betting opens in this step
    assert h.table.phase is Phase.BETTING and h.one("settled", evs)
    last = evs[-1]
    assert last.private is not None
    parts = [last.private[pid] for pid in rich]
    balances = {h.available(pid) for pid in rich}
    assert len(balances) == len(rich)  # (their money differs)
    assert all(part is parts[0] for part in parts)  # one part for all of them ...
    assert parts[0]["actions"] == real(h.table, rich[0])  # ... their actions
    assert all(real(h.table, pid) == parts[0]["actions"] for pid in rich)
    assert len([pid for pid in made if pid in rich]) == 1  # made once
    short = last.private["short"]["actions"]
    assert short == real(h.table, "short") and short != parts[0]["actions"]
    assert short["bet"]["areas"]["banker"]["max"] == h.available("short") < top
    _audit(h)
