"""Table options: one check of a table definition (issue 8, defect 3), and the tier rule
of GAME_RULES §3 ("tables come in limit tiers, for example 1-100 with Tie max 15,
10-1,000 / 150, 100-10,000 / 1,500"): any ``N-M`` in whole units, ``1 <= N < M``, with
Tie and side-bet max 15% of ``M``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from table_helpers import BANKER_WIN, TableHarness, stack

from server.table import Limits, OptionsError, Table, TableOptions, Timers
from server.vocabulary.options import MAX_TIER_UNITS, TIERS, tier_limits


def test_the_three_tiers_of_section_3() -> None:
    # In cents: 1-100 / Tie 15, 10-1,000 / 150, 100-10,000 / 1,500.
    assert {
        "1-100": Limits(100, 10_000, 1_500, 1_500),
        "10-1000": Limits(1_000, 100_000, 15_000, 15_000),
        "100-10000": Limits(10_000, 1_000_000, 150_000, 150_000),
    } == TIERS


@given(low=st.integers(1, 10_000), extra=st.integers(0, 100_000))
def test_any_tier_of_whole_units_follows_the_rule(low: int, extra: int) -> None:
    high = -(-100 * low // 15) + extra  # the Tie maximum (15% of M) reaches the minimum
    limits = tier_limits(f"{low}-{high}")
    assert (limits.min, limits.max) == (100 * low, 100 * high)
    assert limits.tie_max == limits.side_max == high * 100 * 15 // 100  # 15% of M
    assert TableOptions.from_dict({"tier": f"{low}-{high}"}).limits == limits


@pytest.mark.parametrize(
    "tier",
    [
        "0-100",
        "100-100",
        "100-10",
        "-1-100",
        "1-",
        "cheap",
        "1 - 100",
        "1,000-10,000",
        5,
        None,
        f"1-{MAX_TIER_UNITS + 1}",
    ],
)
def test_bad_tiers_are_refused(tier: Any) -> None:
    with pytest.raises(OptionsError, match="tier"):
        tier_limits(tier)
    with pytest.raises(OptionsError, match="tier"):
        TableOptions.from_dict({"tier": tier})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stop_offset": 11},  # §4: at least 12
        {"stop_offset": 101},
        {"seats": 0},
        {"seats": 17},  # §5: at most 16
        {"decks": 7},
        {"decks": True},
        {"commission": 1},
        {"super6": True},  # Super 6 is for no-commission tables (§3)
        {"name": ""},
        {"name": "x" * 41},
        {"tier": "5-5"},
    ],
)
def test_options_check_themselves_however_they_are_made(kwargs: dict[str, Any]) -> None:
    with pytest.raises(OptionsError):
        TableOptions(**kwargs)
    with pytest.raises(OptionsError):
        TableOptions.from_dict(kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min": 0},
        {"max": 2**60},
        {"min": 500, "max": 400},
        {"tie_max": 1.5},
    ],
)
def test_limits_check_themselves(kwargs: dict[str, Any]) -> None:
    with pytest.raises(OptionsError):
        Limits(**kwargs)
    with pytest.raises(OptionsError):
        TableOptions.from_dict(kwargs)


@pytest.mark.parametrize("value", [-1, 3601, True, "15", float("nan"), float("inf")])
def test_timers_check_themselves(value: Any) -> None:
    with pytest.raises(OptionsError, match="betting"):
        Timers(betting=value)
    with pytest.raises(OptionsError, match="betting"):
        TableOptions.from_dict({"timers": {"betting": value}})


def test_a_definition_round_trips() -> None:
    opts = TableOptions.from_dict(
        {
            "id": "ignored",
            "name": "  Salon 5-50 ",
            "tier": "5-50",
            "tie_max": 500,
            "seats": 7,
            "commission": False,
            "super6": True,
            "stop_offset": 12,
            "timers": {"betting": 20},
        }
    )
    assert opts.name == "Salon 5-50" and opts.limits == Limits(500, 5_000, 500, 750)
    assert opts.timers.betting == 20.0 and opts.stop_offset == 12
    assert TableOptions.from_dict(opts.to_definition()) == opts


@pytest.mark.slow  # Hypothesis: a second or more
@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "name",
                "decks",
                "seats",
                "tier",
                "min",
                "max",
                "tie_max",
                "stop_offset",
                "commission",
                "super6",
                "timers",
                "limits",
                "bogus",
            ]
        ),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-5, 200),
            st.floats(allow_nan=True),
            st.text(max_size=12),
            st.sampled_from(["1-100", "5-50", "10-1000"]),
            st.dictionaries(st.text(max_size=8), st.integers(-5, 50), max_size=3),
        ),
        max_size=6,
    )
)
def test_a_definition_is_accepted_or_refused_with_options_error(data: dict[str, Any]) -> None:
    """Whatever an operator or a config file sends: options, or OptionsError (the one
    error config turns into ConfigError and create_table into bad_options)."""
    try:
        opts = TableOptions.from_dict(data)
    except OptionsError:
        return
    assert TableOptions.from_dict(opts.to_definition()) == opts


def test_restore_uses_the_same_check() -> None:
    """A stored table whose options the rules no longer allow is refused on restore,
    with the same error, not rebuilt half-valid."""
    h = TableHarness()
    h.setup({"ann": 1}, stack(BANKER_WIN))
    state = h.table.to_state()
    state["options"]["stop_offset"] = 7  # allowed before §4 asked for 12
    with pytest.raises(OptionsError, match="stop_offset"):
        Table.from_state(state, h.wallet)


# ---------------------------------------------------------------------------- currency


@pytest.mark.parametrize(("code", "decimals"), [("JPY", 0), ("EUR", 2), ("KWD", 3), (None, 2)])
def test_a_table_has_a_currency_and_its_minor_units(code: str | None, decimals: int) -> None:
    options = TableOptions.from_dict({"currency": code} if code else {})
    assert options.currency == code
    assert options.decimals == decimals
    assert TableOptions.from_dict(options.to_definition()) == options


def test_play_money_is_the_default_and_limits_stay_in_minor_units() -> None:
    assert TableOptions().currency is None
    jpy = TableOptions.from_dict({"currency": "JPY", "tier": "1-100"})
    assert jpy.limits == TIERS["1-100"]  # 100-10,000 yen: minor units, whatever the currency


@pytest.mark.parametrize("code", ["eur", "EURO", "ABC", "", 978, True, ["EUR"]])
def test_an_unknown_currency_is_refused_in_one_line(code: Any) -> None:
    with pytest.raises(OptionsError, match="currency must be an ISO 4217 code") as info:
        TableOptions.from_dict({"currency": code})
    assert "\n" not in str(info.value)
    with pytest.raises(OptionsError, match="currency"):
        TableOptions(currency=code)


def test_a_stored_table_from_before_currencies_loads_as_play_money() -> None:
    stored = TableOptions().to_dict()
    del stored["currency"]
    assert TableOptions.from_dict(TableOptions.definition_of(stored)).currency is None
