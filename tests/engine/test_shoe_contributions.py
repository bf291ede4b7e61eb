"""The players' contributions to a shoe (issue 24, docs/fairness.md "Contributions").

The key is ``HMAC-SHA256(seed, "chemmy-contributions-v1" || sorted values)`` (the seed
itself with no value); the shuffle and the timeout cut use it in place of the seed. The
test vector here is the one docs/fairness.md gives; the properties: the key is a function
of the seed and the *set* of values, and changes when any one of them does.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.engine.coup import resolve_coup
from server.engine.shoe import (
    Shoe,
    ShoeError,
    commitment,
    contribution_key,
    cut_order,
    shuffle_order,
    timeout_cut,
    verify,
)

ROOT = Path(__file__).resolve().parents[2]
FAIRNESS_DOC = ROOT / "docs" / "fairness.md"

# -- the test vector of docs/fairness.md -------------------------------------------------
SEED = bytes(range(32))
#: In the order they arrived: 0x33..., 0x11..., 0x22... (sorted: 11, 22, 33).
VALUES = [bytes([b]) * 32 for b in (0x33, 0x11, 0x22)]
COMMITMENTS = [
    "deb0e38ced1e41de6f92e70e80c418d2d356afaaa99e26f5939dbc7d3ef4772a",
    "02d449a31fbb267c8f352e9968a79e3e5fc95c1bbeaa502fd6454ebde5a4bedc",
    "9f72ea0cf49536e3c66c787f705186df9a4378083753ae9536d65b3ad7fcddc4",
]
KEY = "aac9587c7a46aa2f97986bd560212480f19616b86cf48c708655ca2d99405fd2"
FIRST_20_1_DECK = "8h Jd 3d Kh 8d Ac 3s Ts 7c Ah 6s Tc 4s 2d Jc Th 6d 8s Jh 4c"
FIRST_20_8_DECKS = "5s Ad Ah 8c 2h 7s Jc 3d 9h Jd 8h As Jd 6d 7c 8s Th 5h Qs 5h"
TIMEOUT_CUT_1_DECK = 39
TIMEOUT_CUT_8_DECKS = 66
AFTER_CUT_FIRST_12 = "9d 6h 5h As 5s Qc 9h Qs 4d 8c 2s Qh"

values32 = st.binary(min_size=32, max_size=32)


def test_the_vector() -> None:
    assert [commitment(v) for v in VALUES] == COMMITMENTS
    key = contribution_key(SEED, VALUES)
    assert key.hex() == KEY
    # the definition, written out
    message = b"chemmy-contributions-v1" + b"".join(sorted(VALUES))
    assert key == hmac.new(SEED, message, hashlib.sha256).digest()
    assert " ".join(shuffle_order(key, 1)[:20]) == FIRST_20_1_DECK
    assert " ".join(shuffle_order(key, 8)[:20]) == FIRST_20_8_DECKS
    assert timeout_cut(key, 52) == TIMEOUT_CUT_1_DECK
    assert timeout_cut(key, 416) == TIMEOUT_CUT_8_DECKS
    after = cut_order(shuffle_order(key, 1), TIMEOUT_CUT_1_DECK)
    assert " ".join(after[:12]) == AFTER_CUT_FIRST_12
    shoe = Shoe.from_seed(SEED, 1)
    shoe.mix(VALUES)
    assert shoe.key == key and " ".join(shoe.cards[:20]) == FIRST_20_1_DECK


def test_fairness_doc_states_the_vector() -> None:
    text = FAIRNESS_DOC.read_text(encoding="utf-8")
    for value in (
        *(v.hex() for v in VALUES),
        *COMMITMENTS,
        KEY,
        FIRST_20_1_DECK,
        FIRST_20_8_DECKS,
        AFTER_CUT_FIRST_12,
        f"timeout cut: {TIMEOUT_CUT_1_DECK}",
        f"timeout cut: {TIMEOUT_CUT_8_DECKS}",
    ):
        assert value in text, value


def test_no_contribution_is_the_seed() -> None:
    assert contribution_key(SEED, []) == SEED
    shoe = Shoe.from_seed(SEED, 1)
    before = list(shoe.cards)
    shoe.mix([])
    assert shoe.key is None and shoe.cards == before and shoe.shuffle_key == SEED


@settings(max_examples=60, deadline=None)
@given(
    seed=values32, values=st.lists(values32, min_size=1, max_size=6, unique=True), data=st.data()
)
def test_the_key_is_a_function_of_the_seed_and_the_set(
    seed: bytes, values: list[bytes], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(values))
    assert contribution_key(seed, shuffled) == contribution_key(seed, values)


@settings(max_examples=60, deadline=None)
@given(
    seed=values32,
    values=st.lists(values32, min_size=1, max_size=6, unique=True),
    data=st.data(),
)
def test_the_key_changes_when_any_one_changes(
    seed: bytes, values: list[bytes], data: st.DataObject
) -> None:
    key = contribution_key(seed, values)
    assert key != seed
    i = data.draw(st.integers(0, len(values) - 1))
    other = data.draw(values32.filter(lambda v: v not in values))
    changed = [*values[:i], other, *values[i + 1 :]]
    assert contribution_key(seed, changed) != key
    assert contribution_key(seed, values[:i] + values[i + 1 :]) != key  # one left out
    other_seed = data.draw(values32.filter(lambda s: s != seed))
    assert contribution_key(other_seed, values) != key


@pytest.mark.parametrize("bad", [b"", b"x" * 31, b"x" * 33])
def test_a_contribution_is_32_bytes(bad: bytes) -> None:
    with pytest.raises(ShoeError):
        contribution_key(SEED, [bad])


def test_mix_comes_before_the_cut() -> None:
    shoe = Shoe.from_seed(SEED, 1)
    shoe.apply_cut(20)
    with pytest.raises(ShoeError):
        shoe.mix(VALUES)
    with pytest.raises(ShoeError):
        Shoe.stacked(["As"] * 30).mix(VALUES)


def test_a_mixed_shoe_is_stored_and_restored() -> None:
    shoe = Shoe.from_seed(SEED, 1)
    shoe.mix(VALUES)
    assert Shoe.from_dict(json.loads(json.dumps(shoe.to_dict()))) == shoe


# -- the record -------------------------------------------------------------------------
def deal(key_values: list[bytes], withheld: list[bytes], cut: int | None) -> dict[str, Any]:
    """A whole 1-deck shoe mixed with ``key_values`` (revealed) and a record of it that
    lists ``withheld`` too (committed, never revealed)."""
    shoe = Shoe.from_seed(SEED, 1)
    shoe.mix(key_values)
    by = "croupier" if cut is None else "ann"
    cut = timeout_cut(shoe.shuffle_key or SEED, 52) if cut is None else cut
    shoe.apply_cut(cut)
    face, count = shoe.burn()
    shoe.place_stop(16)
    coups, last = [], None
    while last is None or len(coups) <= last:
        coup = resolve_coup(shoe.cards[shoe.position : shoe.position + 6])
        for _ in range(coup.cards_used):
            shoe.draw()
        coups.append({"player": list(coup.player), "banker": list(coup.banker)})
        if last is None and shoe.stop_card_out:
            last = len(coups)
    names = iter(["ann", "bob", "cy", "dee", "eve"])
    return {
        "decks": 1,
        "commitment": commitment(SEED),
        "seed": SEED.hex(),
        "cut": cut,
        "cut_by": by,
        "stop_offset": 16,
        "burn_card": face,
        "burned": count,
        "coups": coups,
        "contributions": [
            {"player": next(names), "commitment": commitment(v), "value": v.hex()}
            for v in key_values
        ]
        + [{"player": next(names), "commitment": commitment(v), "value": None} for v in withheld],
        "withheld": ["ann", "bob", "cy", "dee", "eve"][len(key_values) :][: len(withheld)],
    }


@pytest.mark.parametrize("cut", [None, 25])
def test_verify_accepts_a_mixed_shoe(cut: int | None) -> None:
    record = deal(VALUES, [], cut)
    report = verify(record)
    assert report.ok, str(report)
    assert report.contributions == 3
    assert "3 player contributions match their commitments" in str(report)


def test_verify_accepts_a_withheld_reveal() -> None:
    record = deal(VALUES[:2], VALUES[2:], None)
    assert record["withheld"] == ["cy"]
    report = verify(record)
    assert report.ok and report.contributions == 2, str(report)


def test_verify_refuses_a_value_that_is_not_its_commitments() -> None:
    record = deal(VALUES, [], 25)
    record["contributions"][1]["value"] = (b"\x44" * 32).hex()
    report = verify(record)
    assert not report.ok
    assert "bob's contribution does not match their commitment" in report.problems


def test_verify_refuses_a_shoe_without_its_contributions() -> None:
    record = deal(VALUES, [], 25)
    for gone in ({"contributions": []}, {"contributions": record["contributions"][:2]}):
        bad = {**copy.deepcopy(record), **gone, "withheld": []}
        assert not verify(bad).ok


def test_verify_refuses_a_wrong_withheld_list_or_timeout_cut() -> None:
    record = deal(VALUES[:2], VALUES[2:], None)
    assert not verify({**record, "withheld": []}).ok
    assert not verify({**record, "withheld": ["ann"]}).ok
    # a timeout cut must be the key's, not the seed's (nor any other)
    honest = record["cut"]
    shoe_key = contribution_key(SEED, VALUES[:2])
    assert honest == timeout_cut(shoe_key, 52)
    report = verify({**record, "cut": timeout_cut(SEED, 52)})
    assert not report.ok


def test_verify_reports_an_unreadable_contribution() -> None:
    record = deal(VALUES, [], 25)
    for bad in ("zz", None):
        broken = copy.deepcopy(record)
        broken["contributions"][0] = {"player": "ann", "value": bad}
        assert not verify(broken).ok
