"""Table options: every table setting of GAME_RULES.md with its default.

Pure data. ``TableOptions.from_dict`` is the one place a table definition (from the
config file or an operator's ``create_table``) is checked; a bad value raises
:class:`OptionsError` naming the setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from server.engine.payouts import Area, Paytable
from server.engine.shoe import MIN_STOP_OFFSET

__all__ = ["TIERS", "Limits", "OptionsError", "TableOptions", "Timers"]

MAX_SEATS = 16  # §5


class OptionsError(ValueError):
    """A table definition with a value the rules do not allow."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-area limits in minor units (§3): Player/Banker min and max, lower maxima for
    Tie and each side bet. The minimum applies to every area."""

    min: int = 100
    max: int = 10_000
    tie_max: int = 1_500
    side_max: int = 1_500

    def max_for(self, area: Area) -> int:
        if area in (Area.PLAYER, Area.BANKER):
            return self.max
        if area is Area.TIE:
            return self.tie_max
        return self.side_max


# §3 "Tables come in limit tiers": 1-100 / Tie 15, 10-1,000 / 150, 100-10,000 / 1,500
# (in whole currency units; stored in cents).
TIERS: dict[str, Limits] = {
    "1-100": Limits(100, 10_000, 1_500, 1_500),
    "10-1000": Limits(1_000, 100_000, 15_000, 15_000),
    "100-10000": Limits(10_000, 1_000_000, 150_000, 150_000),
}


@dataclass(frozen=True, slots=True)
class Timers:
    """Seconds (§6): betting 15, squeeze 12 per hand, third card 8, offer 10, cut 15."""

    betting: float = 15.0
    squeeze: float = 12.0
    third_card: float = 8.0
    shoe_offer: float = 10.0
    cut: float = 15.0
    grace: float = 60.0


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
        """Build options from a definition; unknown keys and bad values are refused."""
        data = dict(data)
        data.pop("id", None)
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known - {"min", "max", "tie_max", "side_max"}
        if unknown:
            raise OptionsError(f"unknown table setting(s): {', '.join(sorted(unknown))}")
        tier = str(data.get("tier", "1-100"))
        if tier not in TIERS:
            raise OptionsError(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
        limits = TIERS[tier]
        lim = data.pop("limits", None)
        if lim is not None:
            if not isinstance(lim, Mapping):
                raise OptionsError("limits must be a table of min, max, tie_max, side_max")
            odd = set(lim) - {"min", "max", "tie_max", "side_max"}
            if odd:
                raise OptionsError(f"unknown limit(s): {', '.join(sorted(map(str, odd)))}")
            data.update(lim)
        for k in ("min", "max", "tie_max", "side_max"):
            if k in data:
                limits = replace(limits, **{k: _int(data.pop(k), k, 1)})
        if limits.min > min(limits.max, limits.tie_max, limits.side_max):
            raise OptionsError("each maximum must be at least the minimum")
        tim = data.pop("timers", None) or {}
        if not isinstance(tim, Mapping):
            raise OptionsError("timers must be a table of seconds")
        timers = Timers()
        for k, v in tim.items():
            if k not in {f.name for f in fields(Timers)}:
                raise OptionsError(f"unknown timer {k!r}")
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 3600:
                raise OptionsError(f"timer {k} must be 0-3600 seconds")
            timers = replace(timers, **{k: float(v)})
        opts = cls(
            name=_str(data.get("name", "Chemmy"), "name"),
            decks=_int(data.get("decks", 8), "decks", 6, 8),
            commission=_bool(data.get("commission", True), "commission"),
            pairs=_bool(data.get("pairs", True), "pairs"),
            super6=_bool(data.get("super6", False), "super6"),
            dragon=_bool(data.get("dragon", False), "dragon"),
            seats=_int(data.get("seats", 14), "seats", 1, MAX_SEATS),
            limits=limits,
            timers=timers,
            stop_offset=_int(data.get("stop_offset", 16), "stop_offset", MIN_STOP_OFFSET, 100),
            holder_must_bet_banker=_bool(
                data.get("holder_must_bet_banker", False), "holder_must_bet_banker"
            ),
            tier=tier,
        )
        if opts.decks not in (6, 8):
            raise OptionsError("decks must be 6 or 8")
        if opts.super6 and opts.commission:
            raise OptionsError("Super 6 is for no-commission tables")
        return opts


def _int(v: Any, name: str, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        rng = f"{lo}-{hi}" if hi is not None else f"at least {lo}"
        raise OptionsError(f"{name} must be a whole number {rng}, not {v!r}")
    return v


def _bool(v: Any, name: str) -> bool:
    if not isinstance(v, bool):
        raise OptionsError(f"{name} must be true or false, not {v!r}")
    return v


def _str(v: Any, name: str) -> str:
    if not isinstance(v, str) or not 1 <= len(v.strip()) <= 40:
        raise OptionsError(f"{name} must be 1-40 characters")
    return v.strip()
