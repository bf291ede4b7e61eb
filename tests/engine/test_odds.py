"""Exact odds (server/engine/odds.py) against GAME_RULES §10, the scalar tableau, and
brute force over the actual cards of tiny shoes."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.engine.cards import CardError, shoe_cards
from server.engine.coup import Coup, resolve_coup
from server.engine.odds import (
    TABLE_SIZE,
    code_of,
    counts_after,
    coup_table,
    decode,
    exact_odds,
    full_counts,
)
from server.engine.payouts import AREAS, Paytable, settle_bet

# A card of each value 0..9, for the tableau check (suits do not matter to it).
VALUE_CARD = ["Ts", "As", "2s", "3s", "4s", "5s", "6s", "7s", "8s", "9s"]


def fraction(pair: tuple[int, int]) -> Fraction:
    return Fraction(*pair)


# -- GAME_RULES §10 -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decks", "banker", "player", "tie"),
    [
        (8, 0.458597423, 0.446246609, 0.095155968),
        (6, 0.458652719, 0.446278570, 0.095068711),
    ],
)
def test_full_shoe_matches_rules_section_10(
    decks: int, banker: float, player: float, tie: float
) -> None:
    odds = exact_odds(decks)
    assert odds["cards"] == 52 * decks
    assert odds["banker"] == pytest.approx(banker, abs=5e-10)
    assert odds["player"] == pytest.approx(player, abs=5e-10)
    assert odds["tie"] == pytest.approx(tie, abs=5e-10)
    exact = odds["exact"]
    assert fraction(exact["banker"]) + fraction(exact["player"]) + fraction(exact["tie"]) == 1


def test_house_edges_8_decks_match_rules_section_10() -> None:
    odds = exact_odds(8)
    edges = odds["edges"]
    assert set(edges) == set(AREAS)
    assert edges["banker"] * 100 == pytest.approx(1.0579, abs=5e-5)
    assert edges["player"] * 100 == pytest.approx(1.2351, abs=5e-5)
    assert edges["tie"] * 100 == pytest.approx(14.3596, abs=5e-5)
    assert edges["player_pair"] * 100 == pytest.approx(10.3614, abs=5e-5)
    assert edges["banker_pair"] == edges["player_pair"]
    assert odds["exact"]["player_pair"] == (31, 415)
    assert fraction(odds["exact_edges"]["player_pair"]) == 1 - 12 * Fraction(31, 415)


def test_no_commission_banker_edge_8_decks() -> None:
    odds = exact_odds(8, paytable=Paytable(commission=False))
    assert odds["edges"]["banker"] * 100 == pytest.approx(1.4581, abs=5e-5)
    # The paytable changes only the Banker edge.
    assert odds["edges"]["player"] == exact_odds(8)["edges"]["player"]


def test_counts_of_a_full_shoe_give_the_full_shoe_odds() -> None:
    assert exact_odds(counts=full_counts(8)) == exact_odds(8)
    assert exact_odds(3, counts=full_counts(6)) == exact_odds(6)


# -- the vectorized tableau against resolve_coup --------------------------------------


def table_index(values: Sequence[int]) -> int:
    return int(sum(v * 10 ** (5 - i) for i, v in enumerate(values)))


def code_of_coup(coup: Coup) -> int:
    return code_of(coup.cards_used, coup.natural, coup.player_total, coup.banker_total)


@pytest.mark.slow
def test_coup_table_equals_resolve_coup_for_every_start_and_third_card() -> None:
    table = coup_table()
    assert table.shape == (TABLE_SIZE,)
    checked = 0

    def check(values: tuple[int, ...]) -> Coup:
        nonlocal checked
        coup = resolve_coup([VALUE_CARD[v] for v in values])
        assert int(table[table_index(values)]) == code_of_coup(coup), values
        checked += 1
        return coup

    for start in itertools.product(range(10), repeat=4):
        if check((*start, 0, 0)).cards_used == 4:
            continue
        for p3 in range(10):  # the fifth card: Player's third, or Banker's if Player stood
            if check((*start, p3, 0)).cards_used == 6:
                for b3 in range(1, 10):  # Banker's third after Player's
                    check((*start, p3, b3))
    assert checked > 10**4

    # Every other entry differs only in cards the coup does not use: same code.
    index = np.arange(TABLE_SIZE)
    used = table // 1000
    canonical = np.where(
        used == 4, index - index % 100, np.where(used == 5, index - index % 10, index)
    )
    assert np.array_equal(table[canonical], table)


def test_coup_codes_decode() -> None:
    coup = decode(4183)
    assert (coup.cards_used, coup.natural, coup.player_total, coup.banker_total) == (4, True, 8, 3)
    assert coup.outcome == "player"
    assert coup.margin == 5
    assert decode(code_of(6, False, 2, 2)).outcome == "tie"
    assert decode(code_of(5, False, 1, 7)).outcome == "banker"


# -- brute force over the actual cards of a tiny shoe ---------------------------------


def brute_force(cards: Sequence[str]) -> dict[str, Fraction]:
    """Probabilities and edges by dealing every ordered 6-card draw of the actual cards.

    Each physical card is distinct; coups that use fewer than 6 cards are counted once
    per ordering of the unused cards, which weighs every coup alike.
    """
    draws = Counter(tuple(c[0] for c in p) for p in itertools.permutations(cards, 6))
    total = sum(draws.values())
    # Group the draws by everything a bet can depend on; settle each group once.
    groups: Counter[tuple[object, ...]] = Counter()
    sample: dict[tuple[object, ...], Coup] = {}
    for ranks, n in draws.items():
        coup = resolve_coup([r + "s" for r in ranks])
        key = (
            coup.player_total,
            coup.banker_total,
            coup.player_natural,
            coup.banker_natural,
            coup.player_pair,
            coup.banker_pair,
        )
        groups[key] += n
        sample.setdefault(key, coup)
    counts: Counter[str] = Counter()
    net: Counter[str] = Counter()
    stake = 100  # 5% and one half of 100 are whole: no rounding in the expectation
    tables = {"commission": Paytable(), "no_commission": Paytable(commission=False)}
    for group, n in groups.items():
        coup = sample[group]
        counts[coup.outcome] += n
        counts["player_pair"] += n * coup.player_pair
        counts["banker_pair"] += n * coup.banker_pair
        counts["banker_six"] += n * (coup.outcome == "banker" and coup.banker_total == 6)
        counts["natural"] += n * coup.natural
        for name, paytable in tables.items():
            for area in AREAS:
                net[f"{name}:{area}"] += n * settle_bet(area, stake, coup, paytable).net
    out = {k: Fraction(v, total) for k, v in counts.items()}
    out.update({k: -Fraction(v, total * stake) for k, v in net.items()})
    return out


def assert_matches_brute_force(cards: Sequence[str]) -> None:
    expected = brute_force(cards)
    counts = Counter(c[0] for c in cards)
    for name, paytable in (
        ("commission", Paytable()),
        ("no_commission", Paytable(commission=False)),
    ):
        odds = exact_odds(counts=counts, paytable=paytable)
        assert odds["cards"] == len(cards)
        for key in (
            "banker",
            "player",
            "tie",
            "player_pair",
            "banker_pair",
            "banker_six",
            "natural",
        ):
            assert fraction(odds["exact"][key]) == expected.get(key, 0), key
        for area in AREAS:
            assert fraction(odds["exact_edges"][area]) == expected[f"{name}:{area}"], (name, area)


def test_part_dealt_shoe_matches_brute_force_over_its_cards() -> None:
    assert_matches_brute_force(["As", "Ad", "7h", "7c", "2s", "5d", "8h", "9c", "Th", "Ks"])


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(shoe_cards(1)), min_size=6, max_size=9))
def test_any_small_composition_matches_brute_force(cards: list[str]) -> None:
    assert_matches_brute_force(cards)


def test_odds_of_a_part_dealt_shoe() -> None:
    dealt = shoe_cards(8)[:200]
    odds = exact_odds(counts=counts_after(8, dealt))
    assert odds["cards"] == 416 - 200
    total = sum(fraction(odds["exact"][k]) for k in ("banker", "player", "tie"))
    assert total == 1
    assert 0 < odds["natural"] < 1


# -- counts_after and input errors -----------------------------------------------------


def test_counts_after() -> None:
    counts = counts_after(8, ["As", "ah", "Kd", "10c"])
    assert counts["A"] == 30
    assert counts["K"] == 31
    assert counts["T"] == 31
    assert counts["Q"] == 32
    assert sum(counts.values()) == 416 - 4
    assert counts_after(6, []) == full_counts(6)


def test_counts_after_refuses_a_card_dealt_more_often_than_the_shoe_holds() -> None:
    counts_after(2, ["As", "As"])
    with pytest.raises(CardError):
        counts_after(2, ["As", "As", "As"])
    with pytest.raises(CardError):
        counts_after(1, ["Kd", "Kh", "Kd"])
    with pytest.raises(CardError):
        counts_after(8, ["Xx"])
    with pytest.raises(CardError):
        counts_after(0, [])


def test_exact_odds_refuses_bad_compositions() -> None:
    with pytest.raises(CardError):
        exact_odds(counts={"A": 3, "K": 2})  # 5 cards: a coup may need 6
    with pytest.raises(CardError):
        exact_odds(counts={"Z": 10})
    with pytest.raises(CardError):
        exact_odds(counts={"A": -1, "K": 10})
    with pytest.raises(CardError):
        exact_odds(0)
    assert exact_odds(counts={"A": 3, "K": 3})["cards"] == 6
