"""Table options: every table setting of GAME_RULES.md with its default, and the one check
of a table definition.

What it is for: a :class:`TableOptions` is always valid. It checks itself when made
(``__post_init__``), whoever makes it, and :meth:`TableOptions.from_dict` turns a
definition (a ``[[tables]]`` entry of the config file, an operator's ``create_table``,
a stored table being restored) into one, refusing unknown keys. So the config file,
``create_table`` and restore all accept and refuse exactly the same definitions, with an
:class:`OptionsError` naming the setting.

What it must never do: read a file, or decide anything but whether a setting is allowed.

Limit tiers (§3 "Tables come in limit tiers, for example 1-100 with Tie max 15, 10-1,000
/ 150, 100-10,000 / 1,500"): a tier is ``"N-M"`` in whole currency units, with
``1 <= N < M <= 100,000,000``; its limits in minor units (cents) are min ``100 N``,
max ``100 M``, and Tie and side-bet max 15% of ``M`` (``15 M``), as in the three
examples. Every maximum must reach the minimum, so a tier needs ``15% of M >= N``
(``M`` at least about 6.7 ``N``: ``5-50`` is a tier, ``10-50`` is not).
``min``, ``max``, ``tie_max`` and ``side_max`` override a tier's limits.

Currency: ``currency`` is an ISO 4217 code (``"EUR"``, ``"JPY"``, ``"KWD"``, as Babel's
CLDR data knows them: :func:`babel.numbers.is_currency`), or ``None`` for play money (the
default: shown with two decimals and no symbol). Only players of that currency join the
table. Limits (and so a tier's) stay integers in the currency's minor units, whatever it
is: a tier ``"N-M"`` is min ``100 N`` minor units, which is ``N`` euros but ``100 N`` yen
(JPY has no minor unit) and ``N / 10`` dinars (KWD has three decimals); set ``min`` and
``max`` for other limits. :func:`currency_decimals` is how many digits a currency's minor
units have (JPY 0, EUR 2, KWD 3; play money 2).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from babel.numbers import get_currency_precision, is_currency

from server.engine.payouts import Area, Paytable
from server.engine.shoe import MIN_STOP_OFFSET
from server.protocol.text import clean_text

__all__ = [
    "MAX_BETTORS",
    "MAX_LIMIT",
    "MAX_SEATS",
    "MAX_STOP_OFFSET",
    "TIERS",
    "Limits",
    "OptionsError",
    "TableOptions",
    "Timers",
    "check_currency",
    "currency_decimals",
    "show_money",
    "tier_limits",
]

MAX_SEATS = 16  # §5
#: The most bettors without a seat a table may take (§5, option ``bettors``).
MAX_BETTORS = 100_000
MAX_STOP_OFFSET = 100  # well inside a 6-deck shoe of 312 cards
MAX_TIER_UNITS = 100_000_000  # a tier's maximum, in whole units
MAX_LIMIT = 100 * MAX_TIER_UNITS  # any limit, in minor units (far below 2**53)
MAX_TIMER = 3600.0  # seconds
_TIER = re.compile(r"([0-9]{1,9})-([0-9]{1,9})")
_CURRENCY = re.compile(r"[A-Z]{3}")
#: The digits of play money's minor units (cents): two, as before currencies.
PLAY_MONEY_DECIMALS = 2


class OptionsError(ValueError):
    """A table definition with a value the rules do not allow."""


def _int(v: Any, name: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise OptionsError(f"{name} must be a whole number {lo}-{hi}, not {v!r}")
    return v


def _shown(text: str) -> str:
    """``text`` as :func:`clean_text` normalizes it (NFC, one space between words), or
    as it is when it has what no name may have (then refused, with the reason)."""
    try:
        return clean_text(text)
    except ValueError:
        return text


def check_currency(code: object) -> str | None:
    """``code`` if it is ``None`` (play money) or an ISO 4217 code Babel knows (three
    capital letters: ``"EUR"``); else :class:`OptionsError`, in one line."""
    if code is None:
        return None
    if not isinstance(code, str) or not _CURRENCY.fullmatch(code) or not is_currency(code):
        raise OptionsError(
            f"currency must be an ISO 4217 code such as EUR or JPY (or absent: play money), "
            f"not {code!r}"
        )
    return code


def show_money(minor: int, decimals: int) -> str:
    """Minor units as people read them, with ``decimals`` digits after the point and no
    symbol: ``show_money(123456, 2) == "1,234.56"``, ``show_money(500, 0) == "500"``."""
    sign, minor = ("-" if minor < 0 else ""), abs(minor)
    if decimals == 0:
        return f"{sign}{minor:,}"
    whole, part = divmod(minor, 10**decimals)
    return f"{sign}{whole:,}.{part:0{decimals}d}"


def currency_decimals(code: str | None) -> int:
    """How many digits the minor units of ``code`` have (Babel's CLDR data): JPY 0,
    EUR 2, KWD 3; play money (``None``) 2."""
    checked = check_currency(code)
    if checked is None:
        return PLAY_MONEY_DECIMALS
    return int(get_currency_precision(checked))


def _bool(v: Any, name: str) -> bool:
    if not isinstance(v, bool):
        raise OptionsError(f"{name} must be true or false, not {v!r}")
    return v


def _seconds(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise OptionsError(f"timer {name} must be 0-{MAX_TIMER:.0f} seconds, not {v!r}")
    return float(v)


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-area limits in minor units (§3): Player/Banker min and max, lower maxima for
    Tie and each side bet. The minimum applies to every area."""

    min: int = 100
    max: int = 10_000
    tie_max: int = 1_500
    side_max: int = 1_500

    def __post_init__(self) -> None:
        for name in ("min", "max", "tie_max", "side_max"):
            _int(getattr(self, name), name, 1, MAX_LIMIT)
        if self.min > min(self.max, self.tie_max, self.side_max):
            raise OptionsError("each maximum must be at least the minimum")

    def max_for(self, area: Area | str) -> int:
        if area in (Area.PLAYER, Area.BANKER):
            return self.max
        if area == Area.TIE:
            return self.tie_max
        return self.side_max


def tier_limits(tier: object) -> Limits:
    """The limits of tier ``"N-M"`` (see the module docstring), or OptionsError."""
    m = _TIER.fullmatch(tier) if isinstance(tier, str) else None
    if m is None:
        raise OptionsError(f"tier must look like 10-1000 (whole units), not {tier!r}")
    low, high = int(m[1]), int(m[2])
    if not 1 <= low < high <= MAX_TIER_UNITS:
        raise OptionsError(
            f"tier {tier}: the minimum must be at least 1 and below the maximum, "
            f"which is at most {MAX_TIER_UNITS:,}"
        )
    if 15 * high < 100 * low:
        raise OptionsError(
            f"tier {tier}: the Tie maximum, 15% of {high}, must reach the minimum {low}"
        )
    return Limits(100 * low, 100 * high, 15 * high, 15 * high)


# The three tiers of §3's example: 1-100 / Tie 15, 10-1,000 / 150, 100-10,000 / 1,500.
TIERS: dict[str, Limits] = {t: tier_limits(t) for t in ("1-100", "10-1000", "100-10000")}


@dataclass(frozen=True, slots=True)
class Timers:
    """Seconds (§6): betting 15, squeeze 12 per hand, third card 8, offer 10, cut 15;
    the grace a disconnected player keeps a seat (§5); and the reveal of the players'
    contributions after the cut, 5 (docs/fairness.md §9)."""

    betting: float = 15.0
    squeeze: float = 12.0
    third_card: float = 8.0
    shoe_offer: float = 10.0
    cut: float = 15.0
    grace: float = 60.0
    #: After the cut, for the players who committed a contribution to reveal it
    #: (docs/fairness.md §9): their clients do it by themselves, at once.
    reveal: float = 5.0

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or not math.isfinite(v)
                or not 0 <= v <= MAX_TIMER
            ):
                raise OptionsError(f"timer {f.name} must be 0-{MAX_TIMER:.0f} seconds, not {v!r}")


@dataclass(frozen=True, slots=True)
class TableOptions:
    name: str = "Chemmy"
    decks: int = 8
    commission: bool = True
    pairs: bool = True
    super6: bool = False
    dragon: bool = False
    seats: int = 14
    limits: Limits = field(default_factory=Limits)
    timers: Timers = field(default_factory=Timers)
    stop_offset: int = 16
    holder_must_bet_banker: bool = False
    tier: str = "1-100"
    #: ISO 4217 code, or None: play money (stored states from before have none).
    currency: str | None = None
    #: Bettors without a seat (§5): how many spectators may have chips on the felt at
    #: once; 0: only seated players bet (stored states from before take the default).
    bettors: int = 1_000

    def __post_init__(self) -> None:
        """The one check of a table definition (every rule of GAME_RULES.md it names)."""
        if not isinstance(self.name, str) or not 1 <= len(self.name.strip()) <= 40:
            raise OptionsError(f"name must be 1-40 characters, not {self.name!r}")
        try:  # shown on every screen: the one text check of player names and chat
            if clean_text(self.name) != self.name:
                raise ValueError("a name is written as it is shown: one space between words")
        except ValueError as exc:
            raise OptionsError(f"name: {exc}") from None
        if _int(self.decks, "decks", 6, 8) not in (6, 8):  # §4
            raise OptionsError("decks must be 6 or 8")
        for flag in ("commission", "pairs", "super6", "dragon", "holder_must_bet_banker"):
            _bool(getattr(self, flag), flag)
        _int(self.seats, "seats", 1, MAX_SEATS)  # §5
        _int(self.bettors, "bettors", 0, MAX_BETTORS)  # §5 "Bettors without a seat"
        _int(self.stop_offset, "stop_offset", MIN_STOP_OFFSET, MAX_STOP_OFFSET)  # §4
        if not isinstance(self.limits, Limits):
            raise OptionsError("limits must be Limits")
        if not isinstance(self.timers, Timers):
            raise OptionsError("timers must be Timers")
        tier_limits(self.tier)
        check_currency(self.currency)
        if self.super6 and self.commission:  # §3
            raise OptionsError("Super 6 is for no-commission tables")

    @property
    def decimals(self) -> int:
        """The digits of the table's minor units (:func:`currency_decimals`)."""
        return currency_decimals(self.currency)

    def money(self, minor: int) -> str:
        """``minor`` units of the table's currency as people read them (:func:`show_money`)."""
        return show_money(minor, self.decimals)

    @property
    def paytable(self) -> Paytable:
        return Paytable(
            commission=self.commission, pairs=self.pairs, super6=self.super6, dragon=self.dragon
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_definition(self) -> dict[str, Any]:
        """A definition :meth:`from_dict` accepts and that gives these options back:
        only known keys with checked values (what the store keeps)."""
        return self.definition_of(self.to_dict())

    @staticmethod
    def definition_of(options: Mapping[str, Any]) -> dict[str, Any]:
        """Turn a :meth:`to_dict` (as stored in a table's state) into a definition."""
        out = dict(options)
        out.update(out.pop("limits"))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TableOptions:
        """Build options from a definition; unknown keys and bad values are refused
        with :class:`OptionsError` (never another exception). An ``id`` key is ignored
        (a ``[[tables]]`` entry carries one)."""
        if not isinstance(data, Mapping):
            raise OptionsError("a table definition is a table of settings")
        data = {k: v for k, v in data.items() if k != "id"}
        known = {f.name for f in fields(cls)}
        limit_keys = {"min", "max", "tie_max", "side_max"}
        unknown = {str(k) for k in data} - known - limit_keys
        if unknown:
            raise OptionsError(f"unknown table setting(s): {', '.join(sorted(unknown))}")
        tier = data.pop("tier", "1-100")
        limits = tier_limits(tier)
        lim = data.pop("limits", None)
        if lim is not None:
            if not isinstance(lim, Mapping):
                raise OptionsError("limits must be a table of min, max, tie_max, side_max")
            odd = {str(k) for k in lim} - limit_keys
            if odd:
                raise OptionsError(f"unknown limit(s): {', '.join(sorted(odd))}")
            data.update(lim)
        # (each checked by Limits itself, as any limits are)
        limits = replace(limits, **{k: data.pop(k) for k in limit_keys & set(data)})
        tim = data.pop("timers", None) or {}
        if not isinstance(tim, Mapping):
            raise OptionsError("timers must be a table of seconds")
        odd = {str(k) for k in tim} - {f.name for f in fields(Timers)}
        if odd:
            raise OptionsError(f"unknown timer(s): {', '.join(sorted(odd))}")
        timers = Timers(**{k: _seconds(v, k) for k, v in tim.items()})
        name = data.pop("name", "Chemmy")
        return cls(
            name=_shown(name) if isinstance(name, str) else name,
            limits=limits,
            timers=timers,
            tier=str(tier),
            **data,
        )
