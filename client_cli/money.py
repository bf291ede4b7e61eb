"""Money as the client shows it and reads it back.

Money is integer minor units (cents) end to end (GAME_RULES §3). :func:`format_money`
is the only place an amount becomes text, with two decimals, and :func:`parse_money`
the only way back. Neither ever goes through a float.

Both follow the current language (:mod:`client_cli.i18n`), with Babel's locale data
(CLDR, as the page's ``Intl.NumberFormat``): ``1,234.56`` in English, ``1 234,56`` in
French, ``1.234,56`` in German.
"""

from __future__ import annotations

import functools
from decimal import Decimal, InvalidOperation

from babel.numbers import format_decimal, get_decimal_symbol, get_group_symbol

from client_cli.i18n import current_language

__all__ = ["format_money", "parse_money"]


def format_money(minor: int, *, sign: bool = False, lang: str | None = None) -> str:
    """Minor units as currency with two decimals: ``1250`` -> ``"12.50"``,
    ``123456`` -> ``"1,234.56"``, ``-5`` -> ``"-0.05"``; ``sign`` adds ``+`` when
    positive; ``lang`` (default: the current language) says how (``"1 234,56"`` in
    French). Decimal arithmetic only: money is never a float."""
    if isinstance(minor, bool) or not isinstance(minor, int):
        raise TypeError(f"money is an integer number of minor units, not {minor!r}")
    prefix = "-" if minor < 0 else "+" if sign and minor > 0 else ""
    digits = format_decimal(
        Decimal(abs(minor)).scaleb(-2), format="#,##0.00", locale=lang or current_language()
    )
    return f"{prefix}{digits}"


@functools.cache
def _symbols(lang: str) -> tuple[str, str]:
    """The language's decimal and group separators."""
    return get_decimal_symbol(lang), get_group_symbol(lang)


def parse_money(text: str) -> int:
    """Currency text to minor units, exactly: ``"12.5"`` -> ``1250``, ``"1,000"`` ->
    ``100000`` (``"12,5"`` in French). Raises :class:`ValueError` for more than two decimals or non-numbers."""
    decimal, group = _symbols(current_language())
    cleaned = text.strip().replace("_", "")
    if decimal == ",":  # "1 234,56", "1.234,56": the group marks go, the comma is the point
        for mark in {group, ".", " ", "\u202f", "\u00a0"}:
            cleaned = cleaned.replace(mark, "")
        cleaned = cleaned.replace(",", ".")
    else:
        cleaned = cleaned.replace(",", "")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None
    if not value.is_finite():
        raise ValueError(f"not an amount: {text!r}")
    minor = value * 100
    if minor != minor.to_integral_value():
        raise ValueError(f"at most two decimals: {text!r}")
    return int(minor)
