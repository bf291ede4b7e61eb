"""The shoe simulator (server/engine/simulate.py): the fast path deals exactly the coups
of the scalar reference path, follows the shoe rules of GAME_RULES §4, and its
frequencies agree with the exact odds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from server.engine.cards import CardError, burn_count, shoe_cards
from server.engine.odds import coup_table as odds_coup_table
from server.engine.odds import exact_odds
from server.engine.simulate import (
    BATCH,
    SimulationResult,
    coup_record,
    coup_table,
    deal_orders,
    deal_shoe,
    decode_record,
    shoe_orders,
    simulate_shoes,
    simulate_shoes_reference,
)


def records_of(cards: list[str], stop_offset: int) -> list[int]:
    return [coup_record(c) for c in deal_shoe(cards, stop_offset=stop_offset)]


def assert_paths_agree(shoes: int, decks: int, seed: bytes | int, stop_offset: int) -> int:
    """Both paths deal the same coups, shoe by shoe; returns the fewest cards any shoe
    had left after its last coup (never negative: no shoe runs short, §4)."""
    deck = shoe_cards(decks)
    fewest_left = len(deck)
    for orders in shoe_orders(shoes, decks=decks, seed=seed):
        fast = deal_orders(orders, decks=decks, stop_offset=stop_offset)
        for order, row in zip(orders.tolist(), fast, strict=True):
            cards = [deck[i] for i in order]
            expected = records_of(cards, stop_offset)
            assert row[row >= 0].tolist() == expected
            coups = deal_shoe(cards, stop_offset=stop_offset)
            used = 1 + burn_count(cards[0]) + sum(c.cards_used for c in coups)
            before_last = used - coups[-1].cards_used
            before_that = before_last - coups[-2].cards_used
            # §4: the coup before the last drew the card behind the stop card; the one
            # before it had not.
            assert before_that <= len(cards) - stop_offset < before_last
            fewest_left = min(fewest_left, len(cards) - used)
    fast_total = simulate_shoes(shoes, decks=decks, seed=seed, stop_offset=stop_offset)
    reference = simulate_shoes_reference(shoes, decks=decks, seed=seed, stop_offset=stop_offset)
    assert fast_total == reference
    assert fast_total.shoes == shoes
    return fewest_left


def test_coup_table_is_shared_with_odds() -> None:
    assert coup_table() is odds_coup_table()
    assert coup_table().dtype == np.int16
    assert not coup_table().flags.writeable


@pytest.mark.slow  # eight decks of coups: a second or more
def test_fast_path_deals_the_same_coups_as_resolve_coup_8_decks() -> None:
    assert_paths_agree(shoes=300, decks=8, seed=2024, stop_offset=16)


def test_fast_path_deals_the_same_coups_as_resolve_coup_6_decks() -> None:
    assert_paths_agree(shoes=100, decks=6, seed=b"\x01\x02", stop_offset=14)


def test_paths_agree_at_the_minimum_stop_offset_and_never_run_short() -> None:
    # The stop card at its minimum, 12 from the end of a 1-deck shoe (§4): the last coup
    # always has its cards, and some shoes use all but a few of them.
    assert 0 <= assert_paths_agree(shoes=400, decks=1, seed=7, stop_offset=12) <= 2


def test_stop_card_one_more_coup_after_the_coup_that_draws_it() -> None:
    # Burn card 2s: two cards burned; dealing starts at card 3. Every coup is a natural
    # of 4 cards (P 9 9 -> 8, B T T -> 0), so coups start at 3, 7, 11, 15, ...
    natural = ["9s", "Ts", "9h", "Th"]
    cards = ["2s", "Kd", "Kc", *natural * 12]  # 51 cards
    size = len(cards)
    # Stop card before card 23: the coup on cards 23-26 draws it, and one more follows.
    coups = deal_shoe(cards, stop_offset=size - 23)
    assert len(coups) == 7  # coups from 3, 7, 11, 15, 19, 23 (draws it), 27 (last)
    # Stop card before card 22: the coup on cards 19-22 draws it.
    assert len(deal_shoe(cards, stop_offset=size - 22)) == 6
    assert all(c.outcome == "player" and c.natural for c in coups)


def test_stop_card_rules_in_the_fast_path_on_a_stacked_deck() -> None:
    deck = shoe_cards(1)
    # Stack a deck: the burn card first, then the rest in canonical order.
    order = [deck.index("Kd"), *[i for i, c in enumerate(deck) if c != "Kd"]]
    orders = np.array([order], dtype=np.int16)
    cards = [deck[i] for i in order]
    for stop_offset in (12, 13, 16, 25, 32):
        row = deal_orders(orders, decks=1, stop_offset=stop_offset)[0]
        assert row[row >= 0].tolist() == records_of(cards, stop_offset)


def test_simulated_frequencies_match_the_exact_odds() -> None:
    result = simulate_shoes(5000, seed=1)
    assert result.shoes == 5000
    assert 75 <= result.coups / result.shoes <= 85
    assert result.banker + result.player + result.tie == result.coups
    exact = exact_odds(8)
    freq = result.frequencies()
    for key in ("banker", "player", "tie", "player_pair", "banker_pair", "banker_six"):
        p = exact[key]
        sigma = math.sqrt(p * (1 - p) / result.coups)
        assert abs(freq[key] - p) < 4 * sigma, (key, freq[key], p)


def test_same_seed_same_shoes_and_prefix_stable() -> None:
    a = np.concatenate(list(shoe_orders(BATCH + 20, seed=5)))
    b = np.concatenate(list(shoe_orders(30, seed=5)))
    assert a.shape == (BATCH + 20, 416)
    assert np.array_equal(a[:30], b)
    assert (np.sort(a, axis=1) == np.arange(416)).all()  # every card once per shoe
    c = next(shoe_orders(30, seed=6))
    assert not np.array_equal(b, c)
    assert simulate_shoes(40, seed=b"abc") == simulate_shoes(40, seed=b"abc")


def test_progress_reports_shoes_done() -> None:
    seen: list[int] = []
    simulate_shoes(2 * BATCH + 3, seed=0, progress=seen.append)
    assert seen == [BATCH, 2 * BATCH, 2 * BATCH + 3]
    seen.clear()
    simulate_shoes_reference(3, seed=0, progress=seen.append)
    assert seen == [3]


def test_frequencies_and_records() -> None:
    empty = simulate_shoes(0)
    assert empty == SimulationResult(0, 0, 0, 0, 0, 0, 0, 0)
    assert set(empty.frequencies().values()) == {0.0}
    # Burn As (one card, Kd); P 7s Qc stands on 7; B 7h 7d (a pair) draws Ts on 4.
    coup = deal_shoe(["As", "Kd", "7s", "7h", "Qc", "7d", *["Ts"] * 30])[0]
    assert coup.cards_used == 5
    assert decode_record(coup_record(coup)) == ("player", 7, 4, False, True)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        simulate_shoes(10, stop_offset=11)  # §4: at least 12 from the end
    with pytest.raises(ValueError):
        simulate_shoes(-1)
    with pytest.raises(ValueError):
        simulate_shoes(1, seed=-3)
    with pytest.raises(CardError):
        simulate_shoes(1, decks=0)
    with pytest.raises(ValueError):
        deal_orders(np.zeros((2, 10), dtype=np.int16))
