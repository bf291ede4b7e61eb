"""Money as the client shows it and reads it back.

Money is integer minor units (cents) end to end (GAME_RULES §3). :func:`format_money`
is the only place an amount becomes text, with two decimals, and :func:`parse_money`
the only way back. Neither ever goes through a float.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

__all__ = ["format_money", "parse_money"]


def format_money(minor: int, *, sign: bool = False) -> str:
    """Minor units as currency with two decimals: ``1250`` -> ``"12.50"``,
    ``123456`` -> ``"1,234.56"``, ``-5`` -> ``"-0.05"``; ``sign`` adds ``+`` when
    positive. Integer arithmetic only: money is never a float."""
    if isinstance(minor, bool) or not isinstance(minor, int):
        raise TypeError(f"money is an integer number of minor units, not {minor!r}")
    prefix = "-" if minor < 0 else "+" if sign and minor > 0 else ""
    whole, cents = divmod(abs(minor), 100)
    return f"{prefix}{whole:,}.{cents:02d}"


def parse_money(text: str) -> int:
    """Currency text to minor units, exactly: ``"12.5"`` -> ``1250``, ``"1,000"`` ->
    ``100000``. Raises :class:`ValueError` for more than two decimals or non-numbers."""
    cleaned = text.strip().replace(",", "").replace("_", "")
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
