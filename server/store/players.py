"""The pure checks of a player's rows the stores keep for player protection and the
cashier: a currency, a restriction's kinds, the limits' shape, a play session's times and
baseline (a player's per-day flows and the guards a commit holds on them are the
ledger's: ``server.ledger.flows``).

They check shapes and measure; they must never decide a rule of protection (those are
``server.protection.rules``'s, handed in as ``rule=``) nor do I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Final

from server.ledger.flows import flow_day
from server.ledger.rules import MAX_AMOUNT
from server.protocol.errors import (  # (the error tree: defined there, named here too)
    StoreError,
)
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
