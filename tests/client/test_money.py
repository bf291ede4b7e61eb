"""Money as text and back: integer minor units, never a float (GAME_RULES §3)."""

from __future__ import annotations

import pytest

from client_cli.money import format_money, parse_money


@pytest.mark.parametrize(
    ("minor", "text"),
    [
        (0, "0.00"),
        (5, "0.05"),
        (950, "9.50"),
        (123456, "1,234.56"),
        (-5, "-0.05"),
        (-100000, "-1,000.00"),
    ],
)
def test_format_money(minor: int, text: str) -> None:
    assert format_money(minor) == text


def test_format_money_refuses_floats() -> None:
    with pytest.raises(TypeError):
        format_money(9.5)  # type: ignore[arg-type]
    assert format_money(950, sign=True) == "+9.50"
    assert format_money(0, sign=True) == "0.00"


@pytest.mark.parametrize(
    ("text", "minor"), [("25", 2500), ("12.5", 1250), ("0.01", 1), ("1,000", 100000)]
)
def test_parse_money(text: str, minor: int) -> None:
    assert parse_money(text) == minor


@pytest.mark.parametrize("text", ["1.234", "abc", "", "nan", "inf"])
def test_parse_money_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_money(text)
