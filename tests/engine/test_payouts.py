"""Payouts in integer minor units, every area and outcome (GAME_RULES §3).

"X:1" pays X times the stake and returns the stake; ``returned`` is what goes back to the
player (0 lost, the stake on a push, stake + win when won).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.engine.cards import full_deck
from server.engine.coup import Coup, resolve_coup
from server.engine.payouts import AREAS, Area, Bet, BetResult, Paytable, settle, settle_bet

COMMISSION = Paytable()
NO_COMMISSION = Paytable(commission=False, super6=True)
DRAGON = Paytable(dragon=True)

# Coups by what they are (cards in dealing order P B P B [P3] [B3]).
PLAYER_WINS = resolve_coup(["9s", "2h", "Kd", "3c", "5s", "5h"])  # P 9 nat v B 5
BANKER_WINS = resolve_coup(["3s", "4h", "3d", "3c", "Ks", "Kh"])  # P 6 v B 7, both stand
TIE = resolve_coup(["3s", "2h", "3d", "4c", "Ks", "Kh"])  # 6 v 6, both stand
BANKER_WINS_WITH_6 = resolve_coup(["2s", "3h", "2d", "3c", "Ks", "Kh"])  # P 4+0 v B 6
PLAYER_PAIR = resolve_coup(["7s", "2h", "7h", "3c", "Ks", "Kh"])  # P 7s 7h
BANKER_PAIR = resolve_coup(["2s", "7s", "3d", "7h", "Ks", "Kh"])  # B 7s 7h
NOT_A_PAIR = resolve_coup(["Ks", "Kh", "Qd", "Jc", "5s", "5h"])  # K Q / K J: value 0, no pair


def test_named_coups_are_what_they_say() -> None:
    assert PLAYER_WINS.outcome == "player"
    assert BANKER_WINS.outcome == "banker" and BANKER_WINS.banker_total == 7
    assert TIE.outcome == "tie"
    assert BANKER_WINS_WITH_6.outcome == "banker" and BANKER_WINS_WITH_6.banker_total == 6
    assert PLAYER_PAIR.player_pair and not PLAYER_PAIR.banker_pair
    assert BANKER_PAIR.banker_pair and not BANKER_PAIR.player_pair
    assert not NOT_A_PAIR.player_pair and not NOT_A_PAIR.banker_pair


def returned(area: Area | str, stake: int, coup: Coup, paytable: Paytable = COMMISSION) -> int:
    return settle_bet(area, stake, coup, paytable).returned


# -- Player and Banker ----------------------------------------------------------------------


def test_player_bet() -> None:
    # §3: Player pays 1:1; on a Tie, Player and Banker bets push.
    assert returned("player", 1000, PLAYER_WINS) == 2000
    assert returned("player", 1000, BANKER_WINS) == 0
    assert returned("player", 1000, TIE) == 1000
    assert returned("player", 7, PLAYER_WINS, NO_COMMISSION) == 14


def test_banker_commission_1000_returns_1950() -> None:
    # §3: "a winning Banker stake of 1000 returns 1000 + 950".
    r = settle_bet("banker", 1000, BANKER_WINS, COMMISSION)
    assert (r.returned, r.win, r.commission, r.outcome, r.net) == (1950, 950, 50, "win", 950)


@pytest.mark.parametrize(
    ("stake", "win"),
    [
        (1, 0),  # 0.95 rounds down to 0
        (19, 18),  # 18.05 -> 18
        (20, 19),
        (21, 19),  # 19.95 -> 19
        (99, 94),  # 94.05 -> 94
        (100, 95),
        (101, 95),  # 95.95 -> 95
        (12345, 11727),  # 11727.75 -> 11727
    ],
)
def test_banker_commission_rounds_the_win_down(stake: int, win: int) -> None:
    # §3: commission is taken on the win and the win is rounded down to the minor unit.
    r = settle_bet("banker", stake, BANKER_WINS, COMMISSION)
    assert r.win == win
    assert r.returned == stake + win
    assert r.commission == stake - win


def test_banker_loses_and_pushes() -> None:
    assert returned("banker", 1000, PLAYER_WINS) == 0
    assert returned("banker", 1000, TIE) == 1000  # §3: push on a Tie
    assert returned("banker", 1000, TIE, NO_COMMISSION) == 1000


def test_banker_commission_table_winning_with_6_is_ordinary() -> None:
    # §3: the half-pay on 6 is only the no-commission table's rule.
    assert returned("banker", 1000, BANKER_WINS_WITH_6, COMMISSION) == 1950


def test_no_commission_banker() -> None:
    # §3: no-commission table: Banker pays 1:1, but 1:2 when Banker wins with 6.
    assert returned("banker", 1000, BANKER_WINS, NO_COMMISSION) == 2000
    r = settle_bet("banker", 1000, BANKER_WINS_WITH_6, NO_COMMISSION)
    assert (r.returned, r.win, r.commission) == (1500, 500, 0)


@pytest.mark.parametrize(("stake", "win"), [(1, 0), (3, 1), (19, 9), (1001, 500)])
def test_no_commission_banker_6_half_rounds_down(stake: int, win: int) -> None:
    assert returned("banker", stake, BANKER_WINS_WITH_6, NO_COMMISSION) == stake + win


# -- Tie, pairs, Super 6 -------------------------------------------------------------------


def test_tie_bet() -> None:
    # §3: Tie pays 8:1.
    assert returned("tie", 100, TIE) == 900
    assert returned("tie", 100, PLAYER_WINS) == 0
    assert returned("tie", 100, BANKER_WINS) == 0


def test_pair_bets() -> None:
    # §3: pairs pay 11:1 when that side's first two cards have the same rank.
    assert returned("player_pair", 100, PLAYER_PAIR) == 1200
    assert returned("player_pair", 100, BANKER_PAIR) == 0
    assert returned("banker_pair", 100, BANKER_PAIR) == 1200
    assert returned("banker_pair", 100, PLAYER_PAIR) == 0
    assert returned("player_pair", 100, NOT_A_PAIR) == 0  # K Q is no pair
    assert returned("banker_pair", 100, NOT_A_PAIR) == 0


def test_pair_settles_whatever_the_outcome() -> None:
    tie_with_pair = resolve_coup(["3s", "2h", "3d", "4c", "Ks", "Kh"])
    assert tie_with_pair.outcome == "tie" and tie_with_pair.player_pair
    assert returned("player_pair", 10, tie_with_pair) == 120


def test_super6() -> None:
    # §3: Super 6 pays 12:1 when Banker wins with 6.
    assert returned("super6", 100, BANKER_WINS_WITH_6, NO_COMMISSION) == 1300
    assert returned("super6", 100, BANKER_WINS, NO_COMMISSION) == 0
    assert returned("super6", 100, PLAYER_WINS, NO_COMMISSION) == 0
    assert returned("super6", 100, TIE, NO_COMMISSION) == 0
    six_six = resolve_coup(["3s", "3h", "3d", "3c", "Ks", "Kh"])  # a 6-6 tie is no Super 6
    assert six_six.outcome == "tie" and six_six.banker_total == 6
    assert returned("super6", 100, six_six, NO_COMMISSION) == 0


def test_paytable_sets_the_multiples() -> None:
    custom = Paytable(tie_pays=9, pair_pays=25, super6_pays=15, commission=False)
    assert returned("tie", 10, TIE, custom) == 100
    assert returned("player_pair", 10, PLAYER_PAIR, custom) == 260
    assert returned("super6", 10, BANKER_WINS_WITH_6, custom) == 160
    four = Paytable(commission_percent=4)
    assert returned("banker", 1000, BANKER_WINS, four) == 1960


# -- Dragon Bonus --------------------------------------------------------------------------


def _coup(player: tuple[str, ...], banker: tuple[str, ...]) -> Coup:
    """A coup from the two hands as dealt (P B P B P3 B3)."""
    order = [player[0], banker[0], player[1], banker[1]]
    rest = list(player[2:]) + list(banker[2:])
    coup = resolve_coup(order + rest)
    assert coup.player == player and coup.banker == banker, "not how the tableau deals"
    return coup


@pytest.mark.parametrize("side", ["player", "banker"])
def test_dragon_natural_win_pays_1_to_1(side: str) -> None:
    # §3 Dragon Bonus: that side wins with a natural: 1:1 (even by 1 point).
    nat9, nat8 = ("9s", "Kh"), ("4s", "4d")
    p, b = (nat9, nat8) if side == "player" else (nat8, nat9)
    coup = _coup(p, b)
    assert coup.margin == 1
    assert returned(f"dragon_{side}", 100, coup, DRAGON) == 200
    other = "banker" if side == "player" else "player"
    assert returned(f"dragon_{other}", 100, coup, DRAGON) == 0


@pytest.mark.parametrize("side", ["player", "banker"])
def test_dragon_natural_tie_pushes(side: str) -> None:
    coup = _coup(("4s", "4d"), ("5s", "3d"))  # 8 v 8, both natural
    assert coup.outcome == "tie" and coup.natural
    assert returned(f"dragon_{side}", 100, coup, DRAGON) == 100


@pytest.mark.parametrize("side", ["player", "banker"])
def test_dragon_non_natural_tie_loses(side: str) -> None:
    assert not TIE.natural
    assert returned(f"dragon_{side}", 100, TIE, DRAGON) == 0


# (Player hand, Banker hand) for each non-natural margin, winner Player then Banker.
# Pays per §3: 9/8/7/6/5/4 points -> 30/10/6/4/2/1 :1, 1-3 points lose.
_MARGIN_PAYS = {9: 30, 8: 10, 7: 6, 6: 4, 5: 2, 4: 1, 3: 0, 2: 0, 1: 0}


def _hands_with_margin(margin: int, winner: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A non-natural coup the winner takes by ``margin`` points (found by search)."""
    deck = [r + "s" for r in "A23456789K"]
    for a in deck:
        for b in deck:
            for c in deck:
                for d in deck:
                    for e in deck:
                        for f in deck:
                            coup = resolve_coup([a, b, c, d, e, f])
                            if (
                                not coup.natural
                                and coup.outcome == winner
                                and coup.margin == margin
                            ):
                                return coup.player, coup.banker
    raise AssertionError("no such coup")


@pytest.mark.parametrize("winner", ["player", "banker"])
@pytest.mark.parametrize("margin", range(1, 10))
def test_dragon_non_natural_margins(margin: int, winner: str) -> None:
    coup = _coup(*_hands_with_margin(margin, winner))
    assert not coup.natural and coup.outcome == winner and coup.margin == margin
    pays = _MARGIN_PAYS[margin]
    want = 100 + 100 * pays if pays else 0
    loser = "banker" if winner == "player" else "player"
    assert returned(f"dragon_{winner}", 100, coup, DRAGON) == want
    assert returned(f"dragon_{loser}", 100, coup, DRAGON) == 0


def test_dragon_examples_by_hand() -> None:
    # Player 2+2+5 = 9 against Banker 0+0+0: non-natural win by 9 pays 30:1.
    coup = _coup(("2s", "2h", "5d"), ("Ks", "Qh", "Jd"))
    assert returned("dragon_player", 10, coup, DRAGON) == 310
    # Banker 2+K+7 = 9 against Player K+K+K: Banker by 9 without a natural, 30:1.
    coup = _coup(("Ks", "Kh", "Kd"), ("2s", "Qh", "7d"))
    assert returned("dragon_banker", 10, coup, DRAGON) == 310
    # Banker 5 v Player 0: Banker by 5 pays 2:1.
    coup = _coup(("Ks", "Kh", "Kd"), ("2s", "3h"))
    assert (coup.outcome, coup.margin) == ("banker", 5)
    assert returned("dragon_banker", 10, coup, DRAGON) == 30
    # Player 7 stands, Banker 6 stands: Player by 1, loses.
    coup = _coup(("3s", "4h"), ("2s", "4d"))
    assert (coup.outcome, coup.margin, coup.natural) == ("player", 1, False)
    assert returned("dragon_player", 10, coup, DRAGON) == 0


# -- invalid stakes, settle(), Paytable ------------------------------------------------------


@pytest.mark.parametrize("stake", [0, -1, -1000, True, False, 1.5, 10.0, "10", None])
def test_invalid_stakes_raise(stake: object) -> None:
    with pytest.raises(ValueError):
        settle_bet("player", stake, PLAYER_WINS, COMMISSION)  # type: ignore[arg-type]


@pytest.mark.parametrize("area", ["", "Player", "pair", "dragon"])
def test_unknown_area_raises(area: str) -> None:
    with pytest.raises(ValueError):
        settle_bet(area, 10, PLAYER_WINS, COMMISSION)


def test_settle_many() -> None:
    bets = [Bet(Area.PLAYER, 100), Bet(Area.BANKER, 1000), Bet(Area.TIE, 10)]
    results = settle(bets, BANKER_WINS, COMMISSION)
    assert [r.returned for r in results] == [0, 1950, 0]
    assert [r.outcome for r in results] == ["lose", "win", "lose"]
    assert results[1].net == 950 and results[0].net == -100


def test_bet_result_outcome() -> None:
    assert BetResult(Area.TIE, 5, 0, 0, 0).outcome == "lose"
    assert BetResult(Area.TIE, 5, 5, 0, 0).outcome == "push"
    assert BetResult(Area.TIE, 5, 45, 40, 0).outcome == "win"


def test_paytable_areas() -> None:
    assert tuple(a.value for a in Area) == AREAS
    assert COMMISSION.areas() == (
        Area.PLAYER,
        Area.BANKER,
        Area.TIE,
        Area.PLAYER_PAIR,
        Area.BANKER_PAIR,
    )
    # §3: Super 6 only on no-commission tables.
    assert Area.SUPER6 not in Paytable(super6=True).areas()
    assert Area.SUPER6 in NO_COMMISSION.areas()
    assert Area.DRAGON_PLAYER in DRAGON.areas() and Area.DRAGON_BANKER in DRAGON.areas()
    assert Area.PLAYER_PAIR not in Paytable(pairs=False).areas()
    assert Paytable().to_dict()["commission_percent"] == 5


# -- property: money is conserved ----------------------------------------------------------

_PAYTABLES = st.builds(
    Paytable,
    commission=st.booleans(),
    super6=st.booleans(),
    dragon=st.booleans(),
    commission_percent=st.integers(0, 50),
)


@settings(max_examples=300, deadline=None)
@given(
    cards=st.lists(st.sampled_from(full_deck()), min_size=6, max_size=6),
    bets=st.lists(
        st.tuples(st.sampled_from(AREAS), st.integers(min_value=1, max_value=10**9)),
        max_size=12,
    ),
    paytable=_PAYTABLES,
)
def test_money_is_conserved(
    cards: list[str], bets: list[tuple[str, int]], paytable: Paytable
) -> None:
    coup = resolve_coup(cards)
    results = settle([Bet(Area(a), s) for a, s in bets], coup, paytable)
    assert len(results) == len(bets)
    total_returned = sum(r.returned for r in results)
    assert total_returned >= 0
    for (area, stake), r in zip(bets, results, strict=True):
        assert r.area == area and r.stake == stake
        assert r.returned in (0, stake, stake + r.win)
        assert r.win >= 0 and r.commission >= 0
        assert isinstance(r.returned, int) and not isinstance(r.returned, bool)
        if r.commission:
            # §3: commission only on a winning Banker bet, on the win.
            assert area == "banker" and paytable.commission and coup.outcome == "banker"
            assert r.win + r.commission == stake
    player_net = sum(r.returned - r.stake for r in results)
    house_net = sum(s for _, s in bets) - total_returned
    assert player_net + house_net == 0


def test_winning_areas_are_the_areas_a_bet_on_wins() -> None:
    """result.won (docs/protocol.md): what a client lights, every rule from settle_bet."""
    from server.engine.coup import finish_coup
    from server.engine.payouts import winning_areas

    super6 = Paytable(commission=False, super6=True)
    banker_6 = finish_coup(["2h", "3c", "Kd"], ["Qs", "6d"])  # 5 against Banker's 6
    assert [a.value for a in winning_areas(banker_6, super6)] == ["banker", "super6"]
    tie = finish_coup(["9h", "Kc"], ["9d", "Qs"])  # a natural tie: Dragon bets push
    dragons = Paytable(dragon=True)
    assert [a.value for a in winning_areas(tie, dragons)] == ["tie"]
    pair = finish_coup(["6h", "6c", "Qd"], ["Js", "Kd", "Ad"])
    assert [a.value for a in winning_areas(pair, Paytable())] == ["player", "player_pair"]
    by_nine = finish_coup(["Kh", "Qc", "9d"], ["Js", "Kd", "Qh"])  # Player by 9: Dragon 30:1
    assert "dragon_player" in [a.value for a in winning_areas(by_nine, dragons)]
    for coup in (banker_6, tie, pair, by_nine):
        for table in (super6, dragons, Paytable()):
            won = set(winning_areas(coup, table))
            for area in table.areas():
                assert (area in won) == (settle_bet(area, 100, coup, table).outcome == "win")
