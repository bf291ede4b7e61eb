"""Money as the client shows it and reads it back.

Money is integer minor units end to end (GAME_RULES §3). :func:`format_money`
is the only place an amount becomes text, and :func:`parse_money` the only way back.
Neither ever goes through a float.

Both follow the current language (:mod:`client_cli.i18n`), with Babel's locale data
(CLDR, as the page's ``Intl.NumberFormat``): ``1,234.56`` in English, ``1 234,56`` in
French, ``1.234,56`` in German; and the current currency (:func:`set_currency`, from
the ``hello`` reply: the player's, and so their tables'). Play money (no currency, every
guest's) is two decimals and no symbol, as above; a currency is written as the language
writes it, with as many decimals as its minor units have: ``€1,234.56``, ``1 234,56 €``,
``¥1,234`` (JPY has none), ``KWD1.234`` (three).

The current currency is the process's, like the language: the connection sets it at
each ``hello`` (:class:`~client_cli.connection.Connection`).
"""

from __future__ import annotations

import functools
from decimal import Decimal, InvalidOperation

from babel.numbers import (
    format_currency,
    format_decimal,
    get_currency_precision,
    get_currency_symbol,
    get_decimal_symbol,
    get_group_symbol,
    is_currency,
)

from client_cli.i18n import current_language

__all__ = [
    "PLAY_MONEY_DECIMALS",
    "current_currency",
    "current_decimals",
    "format_money",
    "parse_money",
    "set_currency",
]

#: Play money's minor units are cents, as before currencies.
PLAY_MONEY_DECIMALS = 2

_current: tuple[str | None, int] = (None, PLAY_MONEY_DECIMALS)


def set_currency(code: str | None, decimals: int | None = None) -> str | None:
    """Show money in ``code`` (an ISO 4217 code; ``None``: play money) from now on, its
    minor units ``decimals`` digits (default: Babel's, as the server's). A code the
    client does not know is shown as play money. Returns the currency now used."""
    global _current
    if code is None or not isinstance(code, str) or not is_currency(code):
        _current = (None, PLAY_MONEY_DECIMALS)
        return None
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 6:
        decimals = int(get_currency_precision(code))
    _current = (code, decimals)
    return code


def current_currency() -> str | None:
    """The currency money is shown in (``None``: play money)."""
    return _current[0]


def current_decimals() -> int:
    """How many digits the current currency's minor units have (play money: 2)."""
    return _current[1]


def format_money(
    minor: int,
    *,
    sign: bool = False,
    lang: str | None = None,
    currency: str | bool | None = True,
) -> str:
    """Minor units as money: in play money ``1250`` -> ``"12.50"``, ``123456`` ->
    ``"1,234.56"``, ``-5`` -> ``"-0.05"``; in euros ``"€12.50"``, in yen ``1250`` ->
    ``"¥1,250"``. ``sign`` adds ``+`` when positive; ``lang`` (default: the current
    language) says how (``"1 234,56"`` in French); ``currency`` (default: the current
    one, :func:`set_currency`; ``None``: play money) in what. Decimal arithmetic only:
    money is never a float."""
    if isinstance(minor, bool) or not isinstance(minor, int):
        raise TypeError(f"money is an integer number of minor units, not {minor!r}")
    code, decimals = _current if currency is True else _chosen(currency)
    locale = lang or current_language()
    prefix = "-" if minor < 0 else "+" if sign and minor > 0 else ""
    amount = Decimal(abs(minor)).scaleb(-decimals)
    if code is None:
        return f"{prefix}{format_decimal(amount, format='#,##0.00', locale=locale)}"
    # Babel's digits for the currency (CLDR's: the server's ``decimals`` come from them).
    return f"{prefix}{format_currency(amount, code, locale=locale)}"


def _chosen(currency: str | bool | None) -> tuple[str | None, int]:
    if isinstance(currency, str) and is_currency(currency):
        return currency, int(get_currency_precision(currency))
    return None, PLAY_MONEY_DECIMALS


@functools.cache
def _symbols(lang: str) -> tuple[str, str]:
    """The language's decimal and group separators."""
    return get_decimal_symbol(lang), get_group_symbol(lang)


def parse_money(text: str, *, currency: str | bool | None = True) -> int:
    """Money text to minor units, exactly, in the current currency (or ``currency``;
    ``None``: play money): ``"12.5"`` -> ``1250``, ``"1,000"`` -> ``100000``
    (``"12,5"`` in French); in yen ``"1,000"`` -> ``1000``. The currency's symbol or
    code may be written too (``"€12.50"``). Raises :class:`ValueError` for more decimals
    than the currency's minor units have (JPY: none) or non-numbers."""
    code, decimals = _current if currency is True else _chosen(currency)
    lang = current_language()
    decimal, group = _symbols(lang)
    cleaned = text.strip().replace("_", "")
    if code is not None:
        for mark in (code, get_currency_symbol(code, lang)):
            cleaned = cleaned.replace(mark, "")
        cleaned = cleaned.strip()
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
    minor = value.scaleb(decimals)
    if minor != minor.to_integral_value():
        if decimals == 0:
            raise ValueError(f"no decimals in {code}: {text!r}")
        words = {1: "one", 2: "two", 3: "three", 4: "four"}.get(decimals, str(decimals))
        raise ValueError(f"at most {words} decimals: {text!r}")
    return int(minor)
