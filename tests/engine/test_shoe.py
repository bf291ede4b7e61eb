"""The shoe: shuffle, cut, burn, stop card, storage and verification (GAME_RULES §4).

Includes the worked test vector of docs/fairness.md and a chi-square test that the
shuffle puts every card in every position equally often.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import re
from collections import Counter
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.engine.cards import RANKS, burn_count, full_deck, shoe_cards
from server.engine.coup import resolve_coup
from server.engine.shoe import (
    MIN_CUT,
    MIN_STOP_OFFSET,
    Shoe,
    ShoeError,
    commitment,
    cut_order,
    record_json,
    shuffle_order,
    timeout_cut,
    verify,
)

ROOT = Path(__file__).resolve().parents[2]
FAIRNESS_DOC = ROOT / "docs" / "fairness.md"

seeds = st.binary(min_size=32, max_size=32)


def seed_of(label: str) -> bytes:
    return hashlib.sha256(label.encode()).digest()


def deal_record(
    seed: bytes, decks: int = 8, cut: int | None = None, stop_offset: int = 16
) -> dict[str, Any]:
    """Deal a whole shoe as a table does (§4) and return its revealed record.

    Cut (the timeout cut unless given), burn, stop card; coups until the stop card comes
    out, the coup in progress finished, then one more coup.
    """
    shoe = Shoe.from_seed(seed, decks)
    cut = timeout_cut(seed, shoe.size) if cut is None else cut
    shoe.apply_cut(cut)
    face, count = shoe.burn()
    shoe.place_stop(stop_offset)
    coups: list[dict[str, list[str]]] = []
    last: int | None = None
    while last is None or len(coups) <= last:
        coup = resolve_coup(shoe.cards[shoe.position : shoe.position + 6])
        for _ in range(coup.cards_used):
            shoe.draw()
        coups.append({"player": list(coup.player), "banker": list(coup.banker)})
        if last is None and shoe.stop_card_out:
            last = len(coups)  # §4: one more coup after this one
    return {
        "decks": decks,
        "commitment": commitment(seed),
        "seed": seed.hex(),
        "cut": cut,
        "stop_offset": stop_offset,
        "burn_card": face,
        "burned": count,
        "coups": coups,
    }


# -- the shuffle ---------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(seed=seeds, decks=st.sampled_from([6, 8]))
def test_shuffle_is_a_permutation_of_the_decks(seed: bytes, decks: int) -> None:
    # §4: 8 decks (6 optional); no card appears twice beyond its copies.
    order = shuffle_order(seed, decks)
    assert len(order) == 52 * decks
    assert Counter(order) == Counter(shoe_cards(decks))
    assert set(Counter(order).values()) == {decks}


@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_same_seed_same_order(seed: bytes) -> None:
    assert shuffle_order(seed) == shuffle_order(bytes(seed)) == shuffle_order(bytearray(seed))  # type: ignore[arg-type]


@settings(max_examples=25, deadline=None)
@given(a=seeds, b=seeds)
def test_different_seeds_different_orders(a: bytes, b: bytes) -> None:
    if a != b:
        assert shuffle_order(a) != shuffle_order(b)
        assert shuffle_order(a, 1) != shuffle_order(b, 1)


def test_shuffle_actually_shuffles() -> None:
    assert shuffle_order(bytes(32), 1) != full_deck()
    assert shuffle_order(bytes(32), 8) != shoe_cards(8)


@pytest.mark.parametrize("bad", [b"", bytes(31), bytes(33), "00" * 32, None])
def test_seed_must_be_32_bytes(bad: object) -> None:
    with pytest.raises(ShoeError):
        shuffle_order(bad)  # type: ignore[arg-type]
    with pytest.raises(ShoeError):
        timeout_cut(bad, 416)  # type: ignore[arg-type]


def test_commitment_is_sha256_of_the_seed() -> None:
    # §4: a SHA-256 commitment to the shoe's secret seed.
    seed = seed_of("commit")
    assert commitment(seed) == hashlib.sha256(seed).hexdigest()
    assert Shoe.from_seed(seed).commitment == hashlib.sha256(seed).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", commitment(seed))


# -- the cut -------------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [10, 11, 26, 41, 42])
def test_cut_moves_the_first_cards_to_the_back(cut: int) -> None:
    order = shuffle_order(seed_of("cut"), 1)
    cut_cards = cut_order(order, cut)
    assert cut_cards == order[cut:] + order[:cut]
    assert cut_cards[0] == order[cut]
    assert cut_cards[-1] == order[cut - 1]


@pytest.mark.parametrize("cut", [-1, 0, 9, 43, 52, 100, True, 10.0, "10", None])
def test_cut_at_least_10_from_either_end(cut: object) -> None:
    # §4: the cut point is at least 10 cards from either end.
    order = shoe_cards(1)
    with pytest.raises(ShoeError):
        cut_order(order, cut)  # type: ignore[arg-type]


def test_cut_bounds_for_8_decks() -> None:
    order = shoe_cards(8)
    assert len(cut_order(order, MIN_CUT)) == 416
    assert len(cut_order(order, 416 - MIN_CUT)) == 416
    for bad in (MIN_CUT - 1, 416 - MIN_CUT + 1):
        with pytest.raises(ShoeError):
            cut_order(order, bad)


def test_shoe_is_cut_once() -> None:
    shoe = Shoe.from_seed(seed_of("once"))
    before = list(shoe.cards)
    shoe.apply_cut(100)
    assert shoe.cards == before[100:] + before[:100]
    assert shoe.cut == 100
    with pytest.raises(ShoeError):
        shoe.apply_cut(50)


@settings(max_examples=50, deadline=None)
@given(seed=seeds, size=st.sampled_from([52, 312, 416]))
def test_timeout_cut_in_range_and_deterministic(seed: bytes, size: int) -> None:
    # §4: on timeout the table cuts at random, within the same bounds.
    cut = timeout_cut(seed, size)
    assert MIN_CUT <= cut <= size - MIN_CUT
    assert timeout_cut(seed, size) == cut
    cut_order(shoe_cards(size // 52), cut)  # accepted


def test_timeout_cut_reaches_both_ends() -> None:
    cuts = {timeout_cut(seed_of(f"t{i}"), 21) for i in range(200)}
    assert cuts == {10, 11}  # size 21: only 10 and 11 are allowed


# -- burn and stop card ---------------------------------------------------------------------


@pytest.mark.parametrize("rank", list(RANKS))
def test_burn_count_per_rank(rank: str) -> None:
    # §4: A = 1, 2-9 face, T J Q K = 10 cards burned face down after the face-up card.
    want = {"A": 1, "T": 10, "J": 10, "Q": 10, "K": 10}.get(rank) or int(rank)
    shoe = Shoe.stacked([rank + "h", *shoe_cards(1)])
    face, count = shoe.burn()
    assert (face, count) == (rank + "h", want)
    assert shoe.position == 1 + want
    assert (shoe.burn_card, shoe.burned) == (face, count)
    assert shoe.draw() == shoe.cards[1 + want]
    assert shoe.dealt == [shoe.cards[1 + want]]  # burned cards are not "dealt"


def test_burn_comes_first_and_never_runs_past_the_end() -> None:
    shoe = Shoe.stacked(["Ks", "2h", "3h"])
    assert shoe.burn() == ("Ks", 2)
    shoe = Shoe.stacked(["As", "2h", "3h"])
    shoe.draw()
    with pytest.raises(ShoeError):
        shoe.burn()


def test_stop_card_comes_out_at_the_right_card() -> None:
    # §4: the stop card sits 16 cards from the end (at least 12); it comes out with the
    # first card behind it.
    cards = shoe_cards(1)[:30]
    shoe = Shoe.stacked(cards, stop_offset=12)
    assert shoe.stop_index == 18
    for _ in range(18):
        shoe.draw()
        assert not shoe.stop_card_out
    assert shoe.remaining == 12
    assert shoe.draw() == cards[18]
    assert shoe.stop_card_out
    for _ in range(11):
        shoe.draw()
    with pytest.raises(ShoeError):
        shoe.draw()


def test_stop_card_default_offset_on_a_real_shoe() -> None:
    shoe = Shoe.from_seed(seed_of("stop"))
    shoe.apply_cut(200)
    shoe.burn()
    shoe.place_stop(16)
    assert shoe.stop_index == 400
    while shoe.position < 400:
        assert not shoe.stop_card_out
        shoe.draw()
    assert not shoe.stop_card_out and shoe.remaining == 16
    shoe.draw()
    assert shoe.stop_card_out


@pytest.mark.parametrize("offset", [-1, 0, 7, 11, 52, 60, True, 12.0])
def test_stop_card_offset_bounds(offset: Any) -> None:
    shoe = Shoe.stacked(shoe_cards(1))
    with pytest.raises(ShoeError):
        shoe.place_stop(offset)
    assert MIN_STOP_OFFSET == 12  # §4: the coup in progress and one more, 6 cards each
    shoe.place_stop(12)
    shoe.place_stop(51)


@settings(max_examples=300, deadline=None)
@given(
    cards=st.lists(st.sampled_from(shoe_cards(1)), min_size=13, max_size=60),
    data=st.data(),
)
@pytest.mark.slow
def test_a_shoe_never_runs_short_of_cards(cards: list[str], data: st.DataObject) -> None:
    """§4: with the stop card at least 12 from the end, every coup up to the one that
    draws the card behind it, and the one more coup after it, finds its cards, whatever
    the cards: the shoe never ends early for want of cards."""
    offset = data.draw(st.integers(MIN_STOP_OFFSET, len(cards) - 1), label="stop_offset")
    shoe = Shoe.stacked(cards, stop_offset=offset)
    if data.draw(st.booleans(), label="burn"):
        if burn_count(cards[0]) + 1 > shoe.stop_index:
            return  # a burn past the stop card: a real shoe is hundreds of cards long
        shoe.burn()
    last = False
    while True:
        assert shoe.remaining >= 6, (shoe.position, shoe.stop_index, len(cards))
        coup = resolve_coup(shoe.cards[shoe.position : shoe.position + 6])
        for _ in range(coup.cards_used):
            shoe.draw()
        if last:
            break
        last = shoe.stop_card_out
    assert shoe.remaining >= 0


@settings(max_examples=40, deadline=None)
@given(
    seed=st.binary(min_size=32, max_size=32),
    decks=st.sampled_from([6, 8]),
    cut=st.integers(10, 302),
    offset=st.integers(MIN_STOP_OFFSET, 100),
)
def test_a_real_shoe_deals_to_its_last_coup(seed: bytes, decks: int, cut: int, offset: int) -> None:
    """Real shoes with any cut and stop card the options allow: every coup has its
    cards, and verify() accepts the record of the whole shoe."""
    shoe = Shoe.from_seed(seed, decks)
    shoe.apply_cut(cut)
    face, count = shoe.burn()
    shoe.place_stop(offset)
    coups = []
    last = False
    while True:
        assert shoe.remaining >= 6
        coup = resolve_coup(shoe.cards[shoe.position : shoe.position + 6])
        for _ in range(coup.cards_used):
            shoe.draw()
        coups.append({"player": list(coup.player), "banker": list(coup.banker)})
        if last:
            break
        last = shoe.stop_card_out
    record = {
        "decks": decks,
        "commitment": commitment(seed),
        "seed": seed.hex(),
        "cut": cut,
        "stop_offset": offset,
        "burn_card": face,
        "burned": count,
        "coups": coups,
    }
    report = verify(record)
    assert report.ok, report
    assert report.coups_checked == len(coups)


def test_peek_remaining_counts() -> None:
    shoe = Shoe.stacked(["As", "Ah", "Kd", "2c"])
    shoe.draw()
    assert shoe.peek_remaining_counts() == {"A": 1, "K": 1, "2": 1}


# -- storage -------------------------------------------------------------------------------


def test_to_dict_from_dict_round_trip() -> None:
    shoe = Shoe.from_seed(seed_of("store"), 6)
    shoe.apply_cut(123)
    shoe.burn()
    shoe.place_stop(16)
    for _ in range(25):
        shoe.draw()
    data = json.loads(json.dumps(shoe.to_dict()))
    again = Shoe.from_dict(data)
    assert again == shoe
    assert again.to_dict() == shoe.to_dict()
    assert again.draw() == shoe.draw()


def test_to_dict_from_dict_round_trip_stacked_and_fresh() -> None:
    stacked = Shoe.stacked(["As", "Kd", "2c", "3h", "9s"])
    assert Shoe.from_dict(json.loads(json.dumps(stacked.to_dict()))) == stacked
    fresh = Shoe.from_seed(seed_of("fresh"), 8)
    assert Shoe.from_dict(fresh.to_dict()) == fresh


# -- verify --------------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(seed=seeds, decks=st.sampled_from([6, 8]), data=st.data())
def test_verify_accepts_a_genuine_shoe(seed: bytes, decks: int, data: st.DataObject) -> None:
    cut = data.draw(st.integers(MIN_CUT, 52 * decks - MIN_CUT) | st.none())
    stop = data.draw(st.sampled_from([16, 20, 30]))
    record = deal_record(seed, decks, cut, stop)
    report = verify(record)
    assert report.ok, str(report)
    assert report.coups_checked == len(record["coups"])
    assert str(report).startswith("OK")
    # the published form (canonical JSON) verifies too
    assert verify(json.loads(record_json(record))).ok


def test_verify_genuine_shoe_details() -> None:
    record = deal_record(seed_of("genuine"))
    assert 60 < len(record["coups"]) < 100
    report = verify(record)
    assert report.ok and report.problems == ()


def _tampered(record: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    out.update(changes)
    return out


@pytest.fixture(scope="module")
def genuine() -> dict[str, Any]:
    return deal_record(seed_of("tamper"), 8, 150)


def test_verify_rejects_a_wrong_seed(genuine: dict[str, Any]) -> None:
    report = verify(_tampered(genuine, seed=seed_of("other").hex()))
    assert not report.ok
    assert "the seed does not match the commitment" in report.problems
    assert str(report).startswith("FAILED")


def test_verify_rejects_a_wrong_seed_with_its_own_commitment(genuine: dict[str, Any]) -> None:
    other = seed_of("other")
    report = verify(_tampered(genuine, seed=other.hex(), commitment=commitment(other)))
    assert not report.ok
    assert "coup 1" in report.problems[-1]


def test_verify_rejects_a_wrong_commitment(genuine: dict[str, Any]) -> None:
    report = verify(_tampered(genuine, commitment="0" * 64))
    assert not report.ok
    assert report.problems == ("the seed does not match the commitment",)
    assert verify(_tampered(genuine, commitment=genuine["commitment"].upper())).ok


def test_verify_rejects_a_tampered_card(genuine: dict[str, Any]) -> None:
    record = copy.deepcopy(genuine)
    card = record["coups"][10]["banker"][0]
    record["coups"][10]["banker"][0] = ("Q" if card[0] != "Q" else "K") + card[1]
    report = verify(record)
    assert not report.ok
    assert report.coups_checked == 10
    assert report.problems[0].startswith("coup 11:")


def test_verify_rejects_a_swapped_coup(genuine: dict[str, Any]) -> None:
    record = copy.deepcopy(genuine)
    coups = record["coups"]
    coups[4], coups[5] = coups[5], coups[4]
    report = verify(record)
    assert not report.ok and report.problems[0].startswith("coup 5:")


def test_verify_rejects_an_extra_coup_after_the_last(genuine: dict[str, Any]) -> None:
    # §4: after the stop card, the coup in progress is finished, ONE more coup is dealt.
    shoe = Shoe.from_seed(seed_of("tamper"), 8)
    shoe.apply_cut(150)
    shoe.burn()
    used = sum(len(c["player"]) + len(c["banker"]) for c in genuine["coups"])
    start = shoe.position + used
    coup = resolve_coup(shoe.cards[start : start + 6])  # the card-true next coup
    record = copy.deepcopy(genuine)
    record["coups"].append({"player": list(coup.player), "banker": list(coup.banker)})
    report = verify(record)
    assert not report.ok
    n = len(record["coups"])
    assert report.problems == (f"coup {n} was dealt after the last coup of the shoe",)


def test_verify_rejects_a_wrong_burn(genuine: dict[str, Any]) -> None:
    wrong = "As" if genuine["burn_card"] != "As" else "2s"
    assert not verify(_tampered(genuine, burn_card=wrong)).ok
    assert not verify(_tampered(genuine, burned=genuine["burned"] + 1)).ok
    # burn fields are optional
    record = copy.deepcopy(genuine)
    del record["burn_card"], record["burned"]
    assert verify(record).ok


def test_verify_rejects_a_wrong_cut(genuine: dict[str, Any]) -> None:
    assert not verify(_tampered(genuine, cut=151)).ok
    report = verify(_tampered(genuine, cut=5))
    assert not report.ok and "cut" in report.problems[-1]


@pytest.mark.parametrize(
    "change",
    [
        {"seed": "not hex"},
        {"seed": "00"},
        {"cut": "x"},
        {"decks": 0},
        {"stop_offset": 3},
        {"stop_offset": 11},
    ],
)
def test_verify_reports_unusable_records(genuine: dict[str, Any], change: dict[str, Any]) -> None:
    report = verify(_tampered(genuine, **change))
    assert not report.ok and report.problems


@pytest.mark.parametrize("missing", ["seed", "cut", "commitment"])
def test_verify_missing_fields(genuine: dict[str, Any], missing: str) -> None:
    record = copy.deepcopy(genuine)
    del record[missing]
    report = verify(record)
    assert not report.ok
    assert report.problems[0].startswith("not a shoe record")


def test_verify_unreadable_coup(genuine: dict[str, Any]) -> None:
    record = copy.deepcopy(genuine)
    record["coups"][3] = {"player": ["Zz", "As"], "banker": ["As", "As"]}
    report = verify(record)
    assert not report.ok and "coup 4: unreadable" in report.problems[0]


def test_verify_rejects_a_truncated_record(genuine: dict[str, Any]) -> None:
    record = copy.deepcopy(genuine)
    record["coups"].pop()
    assert not verify(record).ok


def test_verify_refuses_a_coup_after_the_last_without_raising(genuine: dict[str, Any]) -> None:
    # A record claiming one coup more than the shoe deals: the shoe ends one coup after
    # the stop card's coup (§4), so the extra coup is a problem, never an exception.
    record = copy.deepcopy(genuine)
    record["coups"].append({"player": ["As", "2s"], "banker": ["3s", "4s"]})
    report = verify(record)
    assert not report.ok
    assert "after the last coup of the shoe" in report.problems[0]


# -- docs/fairness.md worked test vector ------------------------------------------------------

VECTOR_SEED = bytes(range(32))
VECTOR_COMMITMENT = "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
VECTOR_FIRST_10 = "4c 2h Ah Qs 3c Qc 5s 8s 9c Kh"
VECTOR_TIMEOUT_CUT = 28
VECTOR_AFTER_CUT_FIRST_10 = "Ts 9d Qd 2s Jd 2c 8h Jh 4s Tc"
VECTOR_8_DECKS_FIRST_10 = "Ah Td 3h Ad Qd Qh Qd As 5h Jc"
VECTOR_8_DECKS_TIMEOUT_CUT = 365


def test_fairness_vector() -> None:
    assert VECTOR_SEED.hex() == "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    assert commitment(VECTOR_SEED) == VECTOR_COMMITMENT
    order = shuffle_order(VECTOR_SEED, decks=1)
    assert " ".join(order[:10]) == VECTOR_FIRST_10
    assert timeout_cut(VECTOR_SEED, 52) == VECTOR_TIMEOUT_CUT
    after = cut_order(order, VECTOR_TIMEOUT_CUT)
    assert " ".join(after[:10]) == VECTOR_AFTER_CUT_FIRST_10
    shoe = Shoe.from_seed(VECTOR_SEED, 1)
    shoe.apply_cut(VECTOR_TIMEOUT_CUT)
    assert shoe.burn() == ("Ts", 10)
    assert " ".join(shuffle_order(VECTOR_SEED, 8)[:10]) == VECTOR_8_DECKS_FIRST_10
    assert timeout_cut(VECTOR_SEED, 416) == VECTOR_8_DECKS_TIMEOUT_CUT


def test_fairness_doc_states_the_vector() -> None:
    text = FAIRNESS_DOC.read_text(encoding="utf-8")
    for value in (
        VECTOR_SEED.hex(),
        VECTOR_COMMITMENT,
        VECTOR_FIRST_10,
        VECTOR_AFTER_CUT_FIRST_10,
        VECTOR_8_DECKS_FIRST_10,
        f"timeout cut: {VECTOR_TIMEOUT_CUT}",
        f"timeout cut: {VECTOR_8_DECKS_TIMEOUT_CUT}",
    ):
        assert value in text, value


def test_fairness_doc_example_record_verifies() -> None:
    text = FAIRNESS_DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", text, flags=re.S)
    assert blocks, "docs/fairness.md has no ```json example"
    record = json.loads(blocks[0])
    assert record == deal_record(VECTOR_SEED, 1)
    assert verify(record).ok


# -- the shuffle is unbiased: chi-square ---------------------------------------------------

CHI_SEEDS = 5200  # 100 expected per (card, position) cell
CHI_ALPHA = 0.001  # family-wise significance over all 52 cards (Bonferroni)


def wilson_hilferty(df: int, alpha: float) -> float:
    """Upper ``alpha`` point of chi-square(df), Wilson-Hilferty approximation:
    ``df * (1 - 2/(9 df) + z * sqrt(2/(9 df)))**3``, z the normal upper-alpha point.
    Within 0.3% of the exact value for df = 51 down to alpha = 1e-5."""
    z = NormalDist().inv_cdf(1 - alpha)
    h = 2 / (9 * df)
    return float(df * (1 - h + z * h**0.5) ** 3)


def chi2_critical(df: int, alpha: float) -> float:
    """Upper ``alpha`` point of chi-square(df): scipy when installed, else Wilson-Hilferty."""
    try:
        from scipy.stats import chi2  # type: ignore[import-untyped]
    except ImportError:
        return wilson_hilferty(df, alpha)
    return float(chi2.ppf(1 - alpha, df))


@pytest.mark.slow
def test_chi2_critical_values() -> None:
    # Published table value: chi-square, df = 51, alpha = 0.001 -> 87.968.
    assert wilson_hilferty(51, 0.001) == pytest.approx(87.968, rel=2e-3)
    assert chi2_critical(51, 0.001) == pytest.approx(87.968, rel=2e-3)
    # The approximation at the Bonferroni level used below (exact: 103.573).
    assert wilson_hilferty(51, 0.001 / 52) == pytest.approx(103.573, rel=3e-3)
    assert chi2_critical(51, 0.001 / 52) == pytest.approx(103.573, rel=3e-3)


@pytest.mark.slow  # many shuffles: a second or more
def test_shuffle_is_unbiased_chi_square() -> None:
    """Each card's landing position is uniform over the 52 positions of a 1-deck shoe.

    For each of the 52 cards, the chi-square statistic of its positions over a fixed list
    of 5,200 seeds (sha256(b"chi" || i)) against uniform, df = 51, is below the critical
    value at alpha = 0.001/52, so the test as a whole has significance 0.001.
    """
    deck = full_deck()
    counts = {card: [0] * 52 for card in deck}
    for i in range(CHI_SEEDS):
        seed = hashlib.sha256(b"chi" + i.to_bytes(4, "big")).digest()
        for pos, card in enumerate(shuffle_order(seed, decks=1)):
            counts[card][pos] += 1
    expected = CHI_SEEDS / 52
    critical = chi2_critical(51, CHI_ALPHA / 52)
    worst = max((sum((o - expected) ** 2 / expected for o in counts[card]), card) for card in deck)
    assert worst[0] < critical, f"{worst[1]}: chi-square {worst[0]:.1f} >= {critical:.1f}"
    # and positions per card sum as they must
    assert all(sum(row) == CHI_SEEDS for row in counts.values())


def test_chi_square_would_catch_a_biased_shuffle() -> None:
    """The same statistic flags a Fisher-Yates stopped halfway (a shuffle too short)."""
    rng = random.Random(0)
    as_pos = [0] * 52
    for _ in range(520):
        cards = full_deck()
        for i in range(51, 25, -1):
            j = rng.randrange(i + 1)
            cards[i], cards[j] = cards[j], cards[i]
        as_pos[cards.index("As")] += 1
    expected = 520 / 52
    stat = sum((o - expected) ** 2 / expected for o in as_pos)
    assert stat > chi2_critical(51, CHI_ALPHA / 52)


def test_a_shoe_is_stored_as_card_strings_and_reads_older_lists_too() -> None:
    shoe = Shoe.from_seed(bytes(range(32)), 1)
    shoe.apply_cut(20)
    shoe.burn()
    stored = shoe.to_dict()
    assert isinstance(stored["cards"], str) and len(stored["cards"]) == 2 * 52
    assert Shoe.from_dict(stored) == shoe
    older = {**stored, "cards": list(shoe.cards), "dealt": list(shoe.dealt)}
    assert Shoe.from_dict(older) == shoe
