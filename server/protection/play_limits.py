"""Responsible play: the limits a player sets on their own play, and the reality check.

**Limits** (issue 21). A player (``set_limit``, ``remove_limit``; ``limits`` reads them)
or an operator (``/operator/v1/players/{player}/limits``, ``server.operator.protection``) sets any of
:data:`~server.store.base.LIMIT_KINDS`: how much they may deposit, lose or wager in a
day, a week or a month (minor units), and how long a session may last (minutes). The
store keeps them (``Store.set_player_limits``, by the rule of
:func:`~server.protection.rules.merge_limits`: a player's lower limit applies at once, a
higher one or a removal only 24 hours later; an operator's at once), so they hold on
every process and across restarts.

What a player has used is the store's per-day flows (``Store.player_days``, kept by each
commit): ``staked`` (chips placed, from the moment they are on the felt), ``net`` (what
came back less what was placed: a wager counts as lost until it is settled) and
``deposited``, by UTC day. A window is the day itself, the last 7 days or the last 30
days, today included (:data:`WINDOWS`): a daily limit starts again at midnight UTC. A
wager limit counts what was staked, a loss limit the net loss (``max(0, -net)``:
winnings never raise it above the limit); the chips on the felt at every table are in
them already.

**Held where the usage is counted.** Each limit is a reservation the store holds in the
very commit that places the chips or makes the deposit (``guards``:
``server.store.base.LimitGuard``, checked in the commit's transaction or script): a
commit whose chips or deposit would pass one is refused whole (``LimitPassed``), so two
bets at two tables, on two processes, or eight deposits at once can never pass a limit
together, on every store; no lock is held anywhere. The gateway also finds the nearest
limit (the **allowance**, :func:`bet_allowance`) and sends it with the ``bet`` or
``same_bet`` beside the guards; the table refuses chips beyond it first,
``limit_reached`` with the limit and what remains (``server.table.rules.limit_refusal``),
changing nothing, and the commit's guards refuse what raced past that check. A deposit's
guards are the deposit limits (:func:`deposit_guards`), for the cashier and the transfer
API. The session limit refuses bets once the player's play session
(``server.protection.play_session``: the player's, kept in the store, through reconnects and on
every process) has lasted that long.

**The reality check** is ``server.protection.play_session``'s: a bet is refused
``reality_check_due`` while one is due and unanswered, before any limit is looked at.

Nothing here decides a rule of the game; it reads the store and answers.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from server.ledger.flows import LimitGuard
from server.protection import play_session
from server.protection.context import S, S_contra
from server.protection.play_session import ClockContext, shown
from server.protection.responsible import ResponsibleContext
from server.protection.rules import current_limits, merge_limits, play_due
from server.protocol.errors import LimitPassed, Refused, StoreError, limit_reached, store_refusal
from server.store.base import BetReads
from server.store.players import (
    LIMIT_KINDS,
)
from server.vocabulary.options import show_money

if TYPE_CHECKING:
    from server.store.base import (
        Store,
    )

__all__ = [
    "BET_KINDS",
    "DEPOSIT_KINDS",
    "MAX_LIMIT",
    "MAX_SESSION_MINUTES",
    "WINDOWS",
    "Allowance",
    "bet_allowance",
    "deposit_guards",
    "deposit_refusal",
    "guards",
    "limit_change",
    "limits",
    "nearest",
    "remove_limit",
    "set_limit",
    "used",
]

#: A window's days, today included.
WINDOWS: Final = {"day": 1, "week": 7, "month": 30}
BET_KINDS: Final = tuple(k for k in LIMIT_KINDS if k.startswith(("loss_", "wager_")))
DEPOSIT_KINDS: Final = tuple(k for k in LIMIT_KINDS if k.startswith("deposit_"))
#: The largest money limit (minor units) and session limit (minutes: a day).
MAX_LIMIT: Final = 10**12
MAX_SESSION_MINUTES: Final = 1440


# ------------------------------------------------------------------ the arithmetic (pure)
def today(now: float) -> dt.date:
    return dt.datetime.fromtimestamp(now, dt.UTC).date()


def first_day(now: float, days: int = WINDOWS["month"]) -> str:
    """The first UTC day (``YYYY-MM-DD``) of a window of ``days`` ending today (made
    once a day for each window: every bet asks it)."""
    seconds = math.floor(now)
    if round((now - seconds) * 1e6) == 1_000_000:  # (as the calendar rounds: to the µs)
        seconds += 1
    return _first_day(seconds // 86_400, days)


@functools.lru_cache(maxsize=16)
def _first_day(epoch_day: int, days: int) -> str:
    """:func:`first_day` of UTC day number ``epoch_day`` (days since 1970-01-01)."""
    return (_EPOCH + dt.timedelta(days=epoch_day - days + 1)).isoformat()


_EPOCH: Final = dt.date(1970, 1, 1)


def used(kind: str, days: Mapping[str, Mapping[str, int]], now: float) -> int:
    """What the flows ``days`` (``Store.player_days``) count against the money limit
    ``kind`` in its window ending today."""
    what, period = kind.split("_")
    since = first_day(now, WINDOWS[period])
    rows = [row for day, row in days.items() if day >= since]
    if what == "wager":
        return sum(row["staked"] for row in rows)
    if what == "loss":
        return max(0, -sum(row["net"] for row in rows))
    return sum(row["deposited"] for row in rows)


def nearest(
    limits: Mapping[str, Mapping[str, Any]],
    days: Mapping[str, Mapping[str, int]],
    now: float,
    kinds: tuple[str, ...],
) -> dict[str, Any] | None:
    """The limit among ``kinds`` that leaves the least: ``{"kind", "amount",
    "remaining"}`` (maybe negative), or None when the player set none of them."""
    found: dict[str, Any] | None = None
    for kind in kinds:
        if kind not in limits:
            continue
        amount = int(limits[kind]["amount"])
        remaining = amount - used(kind, days, now)
        if found is None or remaining < found["remaining"]:
            found = {"kind": kind, "amount": amount, "remaining": remaining}
    return found


# ------------------------------------------------------------------ the gateway's checks
class PlayContext(ResponsibleContext[S_contra], ClockContext[S_contra], Protocol[S_contra]):
    """What the limits and the reality check use of the gateway."""


async def _read(job: Any) -> Any:
    """A store read, its failure refused ``store_unavailable`` / ``store_failed``."""
    try:
        return await job
    except StoreError as exc:
        raise store_refusal(exc) from None


class Allowance(NamedTuple):
    """What a ``bet`` carries to its table from the player's own limits: ``nearest``,
    the limit that leaves the least for new chips (``{"kind", "amount", "remaining"}``:
    the table refuses chips past it, ``server.table.rules.limit_refusal``), and
    ``guards``, every wager and loss limit as the store holds them in the bet's commit
    (``[[kind, cap, since], ...]``: two bets racing at two tables, or on two
    processes, can never pass one together)."""

    nearest: dict[str, Any]
    guards: list[list[Any]]


def guards(
    limits: Mapping[str, Mapping[str, Any]], now: float, kinds: tuple[str, ...]
) -> list[list[Any]]:
    """``[kind, cap, since]`` of each of the player's ``limits`` among ``kinds``: its cap
    over its window ending today (:data:`WINDOWS`), for the store to hold
    (``server.store.base.LimitGuard``)."""
    return [
        [kind, int(limits[kind]["amount"]), first_day(now, WINDOWS[kind.split("_")[1]])]
        for kind in kinds
        if kind in limits
    ]


async def bet_allowance(
    ctx: PlayContext[S], session: S, reads: BetReads, now: float
) -> Allowance | None:
    """Check a ``bet`` or ``same_bet`` of ``session``'s player against the reality check
    and their limits, from what the store said of them (``reads``: ``Store.bet_reads``
    of today's window, ``now``): raise ``reality_check_due`` or ``limit_reached`` (the
    session's), or return the :class:`Allowance` the bet carries (None: no wager or
    loss limit). A store that cannot say refuses (``store_unavailable``)."""
    found = await _read(play_session.current(ctx, session, reads.play))
    if play_due(found, now):
        assert found is not None
        play_session.remind(ctx, session, found)  # (if this connection was not told yet)
        raise Refused(
            "reality_check_due", "answer the reality check (continue or leave) to bet again"
        )
    limit_set = reads.limits
    if "session" in limit_set and found is not None:
        minutes = int(limit_set["session"]["amount"])
        if now - found["started"] >= minutes * 60:
            raise limit_reached("session", minutes, 0, f"{minutes} minutes", "0")
    # (The chips on the felt at every table are in the days' flows already: a stake
    # counts from the moment it is placed, server.store.base.entry_flow.)
    nearest_ = nearest(limit_set, reads.days, now, BET_KINDS)
    if nearest_ is None:
        return None
    return Allowance(nearest_, guards(limit_set, now, BET_KINDS))


def deposit_guards(player: str, limit_set: Mapping[str, Mapping[str, Any]]) -> list[LimitGuard]:
    """The guards a deposit of ``player``'s commits with: each deposit limit they set,
    held by the store in the deposit's own commit (concurrent deposits can never pass
    one together); on :class:`~server.store.base.LimitPassed` the caller refuses
    ``limit_reached`` (:func:`deposit_refusal`)."""
    now = time.time()
    return [LimitGuard(player, *guard) for guard in guards(limit_set, now, DEPOSIT_KINDS)]


def deposit_refusal(passed: LimitPassed, decimals: int) -> Refused:
    """``limit_reached`` for a deposit the store held to a deposit limit."""
    said, left = show_money(passed.cap, decimals), show_money(passed.remaining, decimals)
    return limit_reached(passed.kind, passed.cap, passed.remaining, said, left)


async def view(store: Store, player: str, found: dict[str, Any] | None) -> dict[str, Any]:
    """Every limit of ``player``'s with what is used and what remains, and their play
    session ``found`` (``Store.play_session``; None: none to show) as
    :func:`~.play_session.shown` says it (``limits``' reply; docs/protocol.md). The
    chips on the felt at every table count as used (a stake counts when it is
    placed)."""
    now = play_session.now()
    limit_set = await store.player_limits(player, rule=current_limits)
    days: dict[str, Any] = {}
    if any(kind != "session" for kind in limit_set):
        days = await store.player_days(player, first_day(now))
    lines: dict[str, Any] = {}
    for kind, limit in sorted(limit_set.items()):
        if kind == "session":
            spent = 0 if found is None else int((now - found["started"]) // 60)
        else:
            spent = used(kind, days, now)
        lines[kind] = {**limit, "used": spent, "remaining": max(0, int(limit["amount"]) - spent)}
    return {"limits": lines, "session": shown(found, now)}


# ------------------------------------------------------------------ the handlers
def limit_change(kind: str, amount: int | None) -> dict[str, int | None]:
    """A player's change, checked: ``bad_limit`` for a kind or amount out of bounds."""
    if kind not in LIMIT_KINDS:
        raise Refused("bad_limit", f"a limit is one of {', '.join(LIMIT_KINDS)}")
    top = MAX_SESSION_MINUTES if kind == "session" else MAX_LIMIT
    if amount is not None and not 1 <= amount <= top:
        what = "minutes" if kind == "session" else "minor units"
        raise Refused("bad_limit", f"a {kind} limit is 1 to {top} {what}")
    return {kind: amount}


async def limits(ctx: PlayContext[S], session: S, mid: Any, fields: dict[str, Any]) -> None:
    """Every limit in force, what is used of each and what remains, and the session."""
    await _answer(ctx, session, mid)


async def set_limit(ctx: PlayContext[S], session: S, mid: Any, fields: dict[str, Any]) -> None:
    """Set a limit: lower (or a first one) at once, higher only in 24 hours."""
    await _write(ctx, session, mid, limit_change(fields["kind"], fields["amount"]))


async def remove_limit(ctx: PlayContext[S], session: S, mid: Any, fields: dict[str, Any]) -> None:
    """Remove a limit: it goes in 24 hours (as a raise does)."""
    await _write(ctx, session, mid, limit_change(fields["kind"], None))


async def _write(ctx: PlayContext[S], session: S, mid: Any, change: dict[str, int | None]) -> None:
    await _read(ctx.store.set_player_limits(session.player, change, "player", rule=merge_limits))
    await _answer(ctx, session, mid)


async def _answer(ctx: PlayContext[S], session: S, mid: Any) -> None:
    """The limits' reply (its ``session`` is a field: sent as the ``ok`` it is)."""
    found = await _read(play_session.current(ctx, session))
    reply = await _read(view(ctx.store, session.player, found))
    ctx.send(session, {"type": "ok", "id": mid, **reply})


# ------------------------------------------------------------------ the operator's route
