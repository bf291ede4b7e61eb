"""The coup: the tableau, checked exhaustively against an independent transcription (GAME_RULES §2).

The expected results here do not come from server.engine.coup: the §2 Banker table is
copied below literally, as strings, and parsed; the dealing order and the natural and
Player rules are re-implemented naively. Then every Banker decision (totals 0-9 x Player
third card None/0-9) and every start (10^4 value combinations of the first four cards,
with every Player third card and every Banker third card that can follow) is compared
with :func:`resolve_coup`, :func:`banker_draws` and :func:`player_draws`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.engine.cards import CardError, full_deck
from server.engine.coup import Coup, banker_draws, is_natural, player_draws, resolve_coup

# -- GAME_RULES §2, Banker when Player drew, copied literally ----------------------------
#   | Banker total | draws when p3 is | stands when p3 is |
SECTION_2_TABLE = """
| 0–2 | any | – |
| 3 | 0–7, 9 | 8 |
| 4 | 2–7 | 0, 1, 8, 9 |
| 5 | 4–7 | 0–3, 8, 9 |
| 6 | 6–7 | 0–5, 8, 9 |
| 7 | – | always stands |
"""  # noqa: RUF001 (the en dashes are the rules' own)
EN_DASH = "\u2013"


def _parse_values(text: str) -> set[int]:
    """``"0-7, 9"`` -> {0..7, 9}; ``"any"``/``"always stands"`` -> 0..9; a dash -> {}.

    Ranges and the empty cell are written with en dashes, as in GAME_RULES.md.
    """
    text = text.strip()
    if text in ("any", "always stands"):
        return set(range(10))
    if text == EN_DASH:
        return set()
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition(EN_DASH)
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _parse_table(table: str) -> dict[int, tuple[set[int], set[int]]]:
    rows: dict[int, tuple[set[int], set[int]]] = {}
    for line in table.strip().splitlines():
        totals, draws, stands = (cell.strip() for cell in line.strip().strip("|").split("|"))
        for total in _parse_values(totals):
            rows[total] = (_parse_values(draws), _parse_values(stands))
    return rows


TABLEAU = _parse_table(SECTION_2_TABLE)


def test_transcribed_table_is_complete_and_consistent() -> None:
    # Every Banker total 0-7 has a row, and each row splits p3 = 0..9 into draws/stands.
    assert sorted(TABLEAU) == list(range(8))
    for draws, stands in TABLEAU.values():
        assert draws.isdisjoint(stands)
        assert draws | stands == set(range(10))


# -- an independent, naive coup ------------------------------------------------------------


@dataclass(frozen=True)
class Naive:
    player: tuple[int, ...]
    banker: tuple[int, ...]
    player_total: int
    banker_total: int
    outcome: str
    natural: bool


def naive_banker_draws(banker_total: int, p3: int | None) -> bool:
    """§2: Banker on 8-9 never draws (natural); Player stood -> 0-5 draws; else the table."""
    if banker_total >= 8:
        return False
    if p3 is None:
        return banker_total in (0, 1, 2, 3, 4, 5)
    draws, _ = TABLEAU[banker_total]
    return p3 in draws


def naive_coup(values: list[int]) -> Naive:
    """Deal P, B, P, B, [P3], [B3] from a list of card values (§2)."""
    deck = iter(values)
    p = [next(deck)]
    b = [next(deck)]
    p.append(next(deck))
    b.append(next(deck))
    pt = (p[0] + p[1]) % 10
    bt = (b[0] + b[1]) % 10
    natural = pt in (8, 9) or bt in (8, 9)
    if not natural:
        p3 = None
        if pt in (0, 1, 2, 3, 4, 5):  # Player: 0-5 draws, 6-7 stands
            p3 = next(deck)
            p.append(p3)
        if naive_banker_draws(bt, p3):
            b.append(next(deck))
    pt, bt = sum(p) % 10, sum(b) % 10
    outcome = "player" if pt > bt else "banker" if bt > pt else "tie"
    return Naive(tuple(p), tuple(b), pt, bt, outcome, natural)


def card_for(value: int, position: int) -> str:
    """A card of the given value; zeros cycle T J Q K and suits cycle with the position."""
    rank = "TJQK"[position % 4] if value == 0 else "A23456789"[value - 1]
    return rank + "shdc"[position % 4]


# §1, by hand: A = 1, 2-9 face value, T J Q K = 0.
VALUE = {"A": 1, **{str(n): n for n in range(2, 10)}, "T": 0, "J": 0, "Q": 0, "K": 0}


def _values_of(cards: tuple[str, ...] | list[str]) -> tuple[int, ...]:
    return tuple(VALUE[c[0]] for c in cards)


def _check(values: list[int]) -> list[str]:
    cards = [card_for(v, i) for i, v in enumerate(values)]
    want = naive_coup(values)
    got = resolve_coup(cards)
    bad: list[str] = []
    if (
        _values_of(got.player) != want.player
        or _values_of(got.banker) != want.banker
        or got.player_total != want.player_total
        or got.banker_total != want.banker_total
        or got.outcome != want.outcome
        or got.natural != want.natural
        or got.cards_used != len(want.player) + len(want.banker)
        or got.player_drew != (len(want.player) == 3)
        or got.banker_drew != (len(want.banker) == 3)
    ):
        bad.append(f"{' '.join(cards)}: got {got}, want {want}")
    return bad


# -- every Banker decision ---------------------------------------------------------------


@pytest.mark.parametrize("p3", [None, *range(10)])
@pytest.mark.parametrize("banker_total", range(10))
def test_banker_draws_every_decision(banker_total: int, p3: int | None) -> None:
    # §2: natural 8/9 stands; Player stood -> 0-5 draw; Player drew -> the tableau.
    assert banker_draws(banker_total, p3) == naive_banker_draws(banker_total, p3)


@pytest.mark.parametrize("total", range(10))
def test_player_draws_every_total(total: int) -> None:
    # §2 "Player: 0-5 draws, 6-7 stands" (8-9 are naturals, handled by resolve_coup).
    assert player_draws(total) == (total <= 5)


@pytest.mark.parametrize("total", range(10))
def test_is_natural(total: int) -> None:
    assert is_natural(total) == (total in (8, 9))


def test_tableau_rows_spelled_out() -> None:
    # §2 again, row by row as the table reads, so a mistake in the parser cannot hide one.
    draws = {t: {p3 for p3 in range(10) if banker_draws(t, p3)} for t in range(8)}
    assert draws[0] == draws[1] == draws[2] == set(range(10))
    assert draws[3] == {0, 1, 2, 3, 4, 5, 6, 7, 9}
    assert draws[4] == {2, 3, 4, 5, 6, 7}
    assert draws[5] == {4, 5, 6, 7}
    assert draws[6] == {6, 7}
    assert draws[7] == set()
    assert [banker_draws(t, None) for t in range(10)] == [True] * 6 + [False] * 4


# -- every start -------------------------------------------------------------------------


@pytest.mark.slow
def test_every_start_and_every_third_card() -> None:
    """All 10^4 first-four-card value combinations; where Player draws every p3 = 0..9,
    where Banker draws every b3 = 0..9 (§2). 339,400 coups in all."""
    bad: list[str] = []
    checked = 0
    for a in range(10):
        for b in range(10):
            for c in range(10):
                for d in range(10):
                    start = [a, b, c, d]
                    first = naive_coup([*start, 0, 0])
                    p_thirds: list[int | None] = (
                        list(range(10)) if len(first.player) == 3 else [None]
                    )
                    for p3 in p_thirds:
                        head = start if p3 is None else [*start, p3]
                        again = naive_coup([*head, 0, 0])
                        b_thirds = range(10) if len(again.banker) == 3 else [0]
                        for b3 in b_thirds:
                            bad += _check([*head, b3, 0][:6])
                            checked += 1
    assert checked == 339_400
    assert not bad, f"{len(bad)} mismatches, first: {bad[:3]}"


def test_every_start_cards_used_exact() -> None:
    """Passing exactly ``cards_used`` cards works; one fewer raises CardError (§2)."""
    for a in range(10):
        for b in range(10):
            for c in range(10):
                for d in range(10):
                    values = [a, b, c, d, (a + d) % 10, (b + c) % 10]
                    want = naive_coup(values)
                    n = len(want.player) + len(want.banker)
                    cards = [card_for(v, i) for i, v in enumerate(values)]
                    assert resolve_coup(cards[:n]).cards_used == n
                    if n > 4:
                        with pytest.raises(CardError):
                            resolve_coup(cards[: n - 1])


# -- named cases --------------------------------------------------------------------------


def test_dealing_order() -> None:
    # §2: first and third card to Player, second and fourth to Banker, then P3, then B3.
    coup = resolve_coup(["2s", "3h", "2d", "Kc", "5s", "7h"])
    assert coup.player == ("2s", "2d", "5s")
    assert coup.banker == ("3h", "Kc", "7h")
    assert coup.cards == ("2s", "3h", "2d", "Kc", "5s", "7h")
    assert (coup.player_total, coup.banker_total) == (9, 0)
    assert coup.outcome == "player"
    assert coup.margin == 9
    assert coup.winner_total == 9


@pytest.mark.parametrize(
    ("cards", "outcome", "p", "b"),
    [
        # Player natural 8 against Banker 5: Banker would draw on 5 but does not.
        (["4s", "3h", "4d", "2c", "9s", "9h"], "player", 8, 5),
        # Banker natural 9 against Player 0: Player would draw on 0 but does not.
        (["Ks", "9h", "Qd", "Kc", "5s", "5h"], "banker", 0, 9),
        # Player natural against Banker 0: Banker would draw on 0 but does not.
        (["9s", "Kh", "Qd", "Qc", "5s", "5h"], "player", 9, 0),
        # Both natural: 8 v 8 tie, nobody draws.
        (["4s", "5h", "4d", "3c", "Ks", "Kh"], "tie", 8, 8),
        # Natural 8 loses to natural 9.
        (["4s", "5h", "4d", "4c", "Ks", "Kh"], "banker", 8, 9),
    ],
)
def test_naturals_override_drawing(cards: list[str], outcome: str, p: int, b: int) -> None:
    # §2: "if either side totals 8 or 9 on two cards, both stand. This overrides all."
    coup = resolve_coup(cards)
    assert coup.natural
    assert coup.cards_used == 4
    assert not coup.player_drew and not coup.banker_drew
    assert (coup.outcome, coup.player_total, coup.banker_total) == (outcome, p, b)
    assert coup.player_natural == (p >= 8)
    assert coup.banker_natural == (b >= 8)


def test_natural_needs_exactly_two_cards() -> None:
    # A three-card 9 is not a natural (§2 "on two cards").
    coup = resolve_coup(["2s", "3h", "2d", "Kc", "5s", "7h"])
    assert coup.player_total == 9
    assert not coup.natural and not coup.player_natural and not coup.banker_natural


def test_player_stands_banker_draws_on_5() -> None:
    # §2: Player 6-7 stands; Banker, when Player stood, draws on 0-5.
    coup = resolve_coup(["3s", "2h", "3d", "3c", "9s", "9h"])
    assert coup.player == ("3s", "3d")
    assert coup.banker == ("2h", "3c", "9s")
    assert coup.cards_used == 5
    assert (coup.player_total, coup.banker_total, coup.outcome) == (6, 4, "player")


def test_banker_3_stands_on_player_third_8() -> None:
    # §2 table: Banker 3 stands when p3 is 8.
    coup = resolve_coup(["Ks", "Kh", "2d", "3c", "8s", "9h"])
    assert coup.player == ("Ks", "2d", "8s")
    assert coup.banker == ("Kh", "3c")
    assert (coup.player_total, coup.banker_total, coup.outcome) == (0, 3, "banker")


@pytest.mark.parametrize(
    ("first_two", "pair"),
    [
        (("7s", "7h"), True),  # §3's own example: 7s 7h is a pair
        (("Ks", "Qh"), False),  # §3: K Q is not (same value, different rank)
        (("Ts", "Jh"), False),
        (("As", "Ac"), True),
        (("Ks", "Ks"), True),  # same card twice: 8 decks hold 8 of each
        (("9s", "8s"), False),  # same suit, different rank
    ],
)
def test_pair_flags(first_two: tuple[str, str], pair: bool) -> None:
    # §3 Player Pair / Banker Pair: the side's first two cards have the same rank.
    x, y = first_two
    as_player = resolve_coup([x, "2c", y, "4c", "5d", "5h"])
    assert as_player.player_pair is pair
    assert as_player.banker_pair is False
    as_banker = resolve_coup(["2c", x, "4c", y, "5d", "5h"])
    assert as_banker.banker_pair is pair
    assert as_banker.player_pair is False


def test_pair_ignores_the_third_card() -> None:
    coup = resolve_coup(["2s", "3h", "3d", "Kc", "2c", "3c"])
    assert len(coup.player) == 3 and coup.player[2][0] == "2"
    assert not coup.player_pair and not coup.banker_pair


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_too_few_cards(n: int) -> None:
    with pytest.raises(CardError):
        resolve_coup(["As", "2s", "3s"][:n])


def test_fewer_cards_than_the_draws_need() -> None:
    # Player 4 draws, needs a 5th card.
    with pytest.raises(CardError):
        resolve_coup(["2s", "Kh", "2d", "Kc"])
    # Player draws a 2, Banker 3 draws (§2 table), needs a 6th card.
    with pytest.raises(CardError):
        resolve_coup(["9s", "Kd", "5h", "3c", "2d"])


def test_bad_card_raises() -> None:
    with pytest.raises(CardError):
        resolve_coup(["As", "Xx", "3s", "4s", "5s", "6s"])


def test_extra_cards_are_not_used_or_parsed() -> None:
    coup = resolve_coup(["9s", "Kh", "Qd", "Qc", "5s", "5h", "not a card"])
    assert coup.cards_used == 4


def test_cards_are_normalised() -> None:
    coup = resolve_coup(["9S", "kh", "10d", "qc"])
    assert coup.player == ("9s", "Td")
    assert coup.banker == ("Kh", "Qc")


def test_coup_to_dict() -> None:
    coup = resolve_coup(["7s", "2h", "7h", "3c", "9s", "9h"])
    d = coup.to_dict()
    assert d["player"] == ["7s", "7h", "9s"]
    assert d["player_pair"] is True
    assert d["outcome"] == coup.outcome
    assert isinstance(coup, Coup)


@given(st.lists(st.sampled_from(full_deck()), min_size=6, max_size=6))
def test_random_coups_agree_with_naive_code(cards: list[str]) -> None:
    want = naive_coup(list(_values_of(cards)))
    got = resolve_coup(cards)
    assert (got.player_total, got.banker_total, got.outcome) == (
        want.player_total,
        want.banker_total,
        want.outcome,
    )
    assert got.cards == tuple(cards[: got.cards_used])
    assert got.player_pair == (cards[0][0] == cards[2][0])
    assert got.banker_pair == (cards[1][0] == cards[3][0])
