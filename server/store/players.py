"""The pure checks of a player's rows the stores keep for player protection and the
cashier: a currency, a restriction's kinds, the per-day flows, the limit guards a commit
holds, the limits' shape, a play session's times and baseline.

They check shapes and measure; they must never decide a rule of protection (those are
``server.protection.rules``'s, handed in as ``rule=``) nor do I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Final

from server.ledger.rules import (
    FLOW_NAMES,
    MAX_AMOUNT,
    flow_day,
)
from server.protocol.errors import (  # (the error tree: defined there, named here too)
    LimitPassed,
    StoreError,
)
from server.store.base import LimitGuard
from server.store.records import _is_int


def check_currency(player_id: object, currency: object) -> None:
    """Refuse a player's currency no store may hold: a player id and three capital
    letters (the shape of an ISO 4217 code; whether the code exists is the caller's to
    check, with babel)."""
    if not isinstance(player_id, str) or not player_id:
        raise StoreError("a currency is kept for a player id")
    if not isinstance(currency, str) or not (
        len(currency) == 3 and currency.isascii() and currency.isalpha() and currency.isupper()
    ):
        raise StoreError("a currency is an ISO 4217 code: three capital letters")


#: A restriction's kinds: a time-out (``break``: 24 hours to a month) and a
#: self-exclusion (``exclusion``: six months or more).
RESTRICTION_KINDS: Final = frozenset({"break", "exclusion"})


# -- a player's usage: per-day flows, kept by commit (issue 21) ---------------------------


def check_day(day: object) -> str:
    """Refuse a day that is not ``"YYYY-MM-DD"`` (:class:`StoreError`)."""
    if not isinstance(day, str) or len(day) != 10:
        raise StoreError("a day is a UTC date, 'YYYY-MM-DD'")
    try:
        datetime.strptime(day, "%Y-%m-%d")
    except ValueError:
        raise StoreError("a day is a UTC date, 'YYYY-MM-DD'") from None
    return day


def flow_buckets(days: Mapping[str, Sequence[int]], since_day: str) -> dict[str, dict[str, int]]:
    """The answer of :meth:`Store.player_days` from a player's stored days (day ->
    ``(staked, net, deposited)``): those of ``since_day`` or later, oldest first."""
    return {
        day: dict(zip(FLOW_NAMES, (int(v) for v in days[day]), strict=True))
        for day in sorted(days)
        if day >= since_day
    }


# -- limits held by the commit itself (a reservation: issue 33) ---------------------------

#: What a guard caps, by the first part of its limit's kind: the index of the flow it
#: sums (:data:`FLOW_NAMES`) and whether the usage is the flow's opposite, floored at
#: 0 (a loss is ``max(0, -net)``: winnings never raise it above the cap).
GUARD_MEASURES: Final[dict[str, tuple[int, bool]]] = {
    "wager": (0, False),
    "loss": (1, True),
    "deposit": (2, False),
}


def check_guard(guard: object) -> LimitGuard:
    """Refuse a guard of the wrong shape (:class:`StoreError`); the guard."""
    if not isinstance(guard, LimitGuard):
        raise StoreError("a limit guard is a LimitGuard")
    if not isinstance(guard.player, str) or not guard.player:
        raise StoreError("a limit guard names its player")
    if not isinstance(guard.kind, str) or guard.kind.split("_")[0] not in GUARD_MEASURES:
        raise StoreError(f"a limit guard's kind is one of {sorted(GUARD_MEASURES)}_*")
    if not _is_int(guard.cap) or not 0 <= guard.cap <= MAX_AMOUNT:
        raise StoreError("a limit guard's cap is a whole number, 0 to 2**53 - 1")
    check_day(guard.since)
    return guard


def guard_measure(kind: str) -> tuple[int, bool]:
    """The flow a guard of ``kind`` sums and whether its usage is that flow's opposite."""
    return GUARD_MEASURES[kind.split("_")[0]]


def guard_breach(guard: LimitGuard, total: int, added: int) -> LimitPassed | None:
    """Whether a commit passes ``guard``: ``total`` is the guarded flow summed over the
    guard's days after the commit, ``added`` what the commit's new entries added to it.
    The refusal, or None when the usage did not rise or stays within the cap."""
    _index, opposite = guard_measure(guard.kind)
    sign = -1 if opposite else 1
    if added * sign <= 0:
        return None  # the usage did not rise: nothing to hold back

    def usage(flow: int) -> int:
        return max(0, flow * sign)

    if usage(total) <= guard.cap:
        return None
    return LimitPassed(guard.kind, guard.cap, max(0, guard.cap - usage(total - added)))


# -- a player's limits: stored and merged atomically (issue 21) ---------------------------

#: The limits a player may set: deposits, losses (``-net``) and wagers (``staked``) per
#: day, week and month (minor units), and a session's length (minutes).
LIMIT_KINDS: Final = (
    "deposit_day",
    "deposit_week",
    "deposit_month",
    "loss_day",
    "loss_week",
    "loss_month",
    "wager_day",
    "wager_week",
    "wager_month",
    "session",
)


def check_limit_changes(changes: Mapping[str, int | None], by: str) -> dict[str, int | None]:
    """Refuse (:class:`StoreError`) changes to a player's limits of the wrong shape: a
    kind not in :data:`LIMIT_KINDS`, an amount that is not a whole number from 1 to
    2**53 - 1 or ``None`` (remove), or a ``by`` that is neither ``"player"`` nor
    ``"operator:<name>"``. Returns them as a dict."""
    if not isinstance(by, str) or not (by == "player" or by.startswith("operator:")):
        raise StoreError("a limit is changed by 'player' or 'operator:<name>'")
    if not isinstance(changes, Mapping):
        raise StoreError(f"limit changes are a mapping, not {type(changes).__name__}")
    for kind, amount in changes.items():
        if kind not in LIMIT_KINDS:
            raise StoreError(f"{kind!r} is not a limit: one of {', '.join(LIMIT_KINDS)}")
        if amount is not None and (not _is_int(amount) or not 0 < amount <= MAX_AMOUNT):
            raise StoreError(
                f"limit {kind}: a whole number from 1 to 2**53 - 1, or None to remove it"
            )
    return dict(changes)


# -- a player's play session (responsible play) ----------------------------------------

#: The flows a play session's result counts (its ``baseline`` is their sum when it began).
PLAY_FLOWS: Final = ("staked", "net")


def check_play_time(value: object, what: str) -> float:
    """Refuse (:class:`StoreError`) a time that is not a finite number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise StoreError(f"a play session's {what} is a finite number of seconds")
    return float(value)


def check_play_open(
    player_id: object, now: object, gap: object, every: object
) -> tuple[float, float, float | None]:
    """Refuse (:class:`StoreError`) the arguments of :meth:`Store.open_play_session` of
    the wrong shape: an empty player id, a time that is not finite, a negative gap, a
    period that is neither None nor positive. Returns ``(now, gap, every)``."""
    if not isinstance(player_id, str) or not player_id:
        raise StoreError("a play session is kept for a player id")
    at, span = check_play_time(now, "time"), check_play_time(gap, "gap")
    if span < 0:
        raise StoreError("a play session's gap is not negative")
    if every is None:
        return at, span, None
    period = check_play_time(every, "reality check period")
    if period <= 0:
        raise StoreError("a reality check's period is positive seconds, or None")
    return at, span, period


def play_baseline(days: Mapping[str, Sequence[int]], now: float) -> dict[str, int]:
    """A new session's baseline: the ``staked`` and ``net`` of the stored days (day ->
    ``(staked, net, deposited)``) from the UTC day of ``now`` on."""
    since = flow_day(now)
    rows = [sums for day, sums in days.items() if day >= since]
    return {name: sum(int(row[n]) for row in rows) for n, name in enumerate(PLAY_FLOWS)}
