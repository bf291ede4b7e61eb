"""Cards: parsing, printing, baccarat values and burn values (GAME_RULES §1, §4 "Burn")."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.engine.cards import (
    RANKS,
    SUITS,
    CardError,
    burn_count,
    card_value,
    full_deck,
    hand_total,
    parse_card,
    parse_cards,
    rank_of,
    shoe_cards,
)

# §1, written out by hand: "Ace = 1, 2-9 = face value, 10/J/Q/K = 0".
VALUES = {
    "A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9,
    "T": 0, "J": 0, "Q": 0, "K": 0,
}  # fmt: skip
# §4 "Burn": "A = 1, 2-9 face, 10/J/Q/K = 10".
BURNS = {
    "A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9,
    "T": 10, "J": 10, "Q": 10, "K": 10,
}  # fmt: skip


def test_ranks_and_suits_are_as_written_in_the_rules() -> None:
    # §1: ranks A 2-9 T J Q K, suits s h d c.
    assert list(RANKS) == ["A", "2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K"]
    assert list(SUITS) == ["s", "h", "d", "c"]


@pytest.mark.parametrize("card", full_deck())
def test_canonical_cards_parse_to_themselves(card: str) -> None:
    assert parse_card(card) == card


@pytest.mark.parametrize(
    ("text", "card"),
    [
        ("as", "As"),
        ("AS", "As"),
        ("aS", "As"),
        ("10h", "Th"),
        ("10H", "Th"),
        ("th", "Th"),
        ("1c", "Ac"),
        ("  Kd ", "Kd"),
        ("qc", "Qc"),
        ("Ts\n", "Ts"),
    ],
)
def test_parse_card_accepts_common_spellings(text: str, card: str) -> None:
    assert parse_card(text) == card


@pytest.mark.parametrize(
    "text",
    ["", " ", "A", "s", "Xs", "1", "11h", "As9", "Ax", "0s", "Tss", "AsKd", "♠A", "10", "T s"],
)
def test_parse_card_rejects_non_cards(text: str) -> None:
    with pytest.raises(CardError):
        parse_card(text)


@pytest.mark.parametrize("thing", [None, 5, b"As", ["As"]])
def test_parse_card_rejects_non_strings(thing: object) -> None:
    with pytest.raises(CardError):
        parse_card(thing)  # type: ignore[arg-type]


def test_card_error_is_a_value_error() -> None:
    assert issubclass(CardError, ValueError)


def test_parse_cards_from_a_string_or_an_iterable() -> None:
    assert parse_cards("As 9d Th Kc") == ["As", "9d", "Th", "Kc"]
    assert parse_cards("as, 9D,10h  kc") == ["As", "9d", "Th", "Kc"]
    assert parse_cards(["as", "10d"]) == ["As", "Td"]
    assert parse_cards("") == []
    with pytest.raises(CardError):
        parse_cards("As Zz")


@pytest.mark.parametrize("card", full_deck())
def test_card_value_every_card(card: str) -> None:
    # §1: Ace 1, pips face value, tens and faces 0.
    assert card_value(card) == VALUES[card[0]]


@pytest.mark.parametrize("card", full_deck())
def test_burn_count_every_card(card: str) -> None:
    # §4: the face-up burn card's value, tens and faces counting 10.
    assert burn_count(card) == BURNS[card[0]]


@pytest.mark.parametrize("bad", ["", "Xs", "1s", None, 7])
def test_values_of_non_cards_raise(bad: object) -> None:
    with pytest.raises(CardError):
        card_value(bad)  # type: ignore[arg-type]
    with pytest.raises(CardError):
        burn_count(bad)  # type: ignore[arg-type]


def test_rank_of() -> None:
    assert rank_of("Qh") == "Q"
    assert rank_of("7s") == "7"


@pytest.mark.parametrize(
    ("cards", "total"),
    [
        # §1's own examples: 8+6 -> 4, 3+7 -> 0, 8+9 -> 7.
        (["8s", "6h"], 4),
        (["3s", "7h"], 0),
        (["8s", "9h"], 7),
        (["Ks", "Qh"], 0),
        (["As", "Th"], 1),
        (["9s", "9h", "9d"], 7),
        (["5s", "5h", "Jd"], 0),
        ([], 0),
    ],
)
def test_hand_total(cards: list[str], total: int) -> None:
    assert hand_total(cards) == total


@given(st.lists(st.sampled_from(full_deck()), max_size=6))
def test_hand_total_is_the_sum_of_values_mod_10(cards: list[str]) -> None:
    # §1: "a hand's value is its card total modulo 10".
    assert hand_total(cards) == sum(VALUES[c[0]] for c in cards) % 10


def test_full_deck_is_52_distinct_cards_in_canonical_order() -> None:
    deck = full_deck()
    assert len(deck) == 52 == len(set(deck))
    # canonical order: suits s h d c, ranks A..K within each suit
    assert deck[:13] == [r + "s" for r in "A23456789TJQK"]
    assert deck[13] == "Ah"
    assert deck[-1] == "Kc"
    assert " ".join(deck[:3]) == "As 2s 3s"


@pytest.mark.parametrize("decks", [1, 6, 8])
def test_shoe_cards_is_decks_copies(decks: int) -> None:
    # §4: 8 decks, 6 optional.
    cards = shoe_cards(decks)
    assert len(cards) == 52 * decks
    assert cards[:52] == full_deck()
    assert cards[52 * (decks - 1) :] == full_deck()
    assert set(Counter(cards).values()) == {decks}


@pytest.mark.parametrize("decks", [0, -1])
def test_shoe_cards_needs_a_deck(decks: int) -> None:
    with pytest.raises(CardError):
        shoe_cards(decks)
