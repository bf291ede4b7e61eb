"""A player's flows: what each entry adds to their responsible-play usage, summed per UTC
day, and the guards a commit holds on them.

- :func:`entry_flow` says what an entry moves (staked, net, deposited), :func:`add_flows`
  sums a commit's; a store keeps them per player and UTC day (:func:`flow_day`) for
  :data:`FLOW_DAYS` days (:func:`flow_cutoff`, :func:`pruned_days`) and answers them
  (:func:`flow_buckets`).
- A :class:`LimitGuard` caps a usage over a window of days; a commit whose new entries
  take a player past one is refused whole (:func:`guard_breach`: :class:`LimitPassed`),
  in the same transaction or script that adds the flows, so two tables racing can never
  both pass a limit. Which limits apply and their windows are player protection's
  (``server.protection``); here the usage is only summed and compared.

Pure: it formats the times it is handed and never reads a clock or does I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final, NamedTuple

from server.ledger.accounts import Entry
from server.ledger.rules import MAX_AMOUNT, PLAYER_PREFIX
from server.protocol.errors import LimitPassed, StoreError

__all__ = [
    "FLOW_DAYS",
    "FLOW_NAMES",
    "GUARD_MEASURES",
    "LimitGuard",
    "add_flows",
    "check_day",
    "check_guard",
    "entry_flow",
    "flow_buckets",
    "flow_cutoff",
    "flow_day",
    "guard_breach",
    "guard_measure",
    "pruned_days",
]


# -- flows: a player's usage, summed per UTC day ---------------------------------------------

#: How many UTC days of flows a store keeps per player: the day written and the 39
#: before it (a month's limit needs 31). Older days are pruned when a newer one is
#: written.
FLOW_DAYS: Final = 40
#: A flow's kinds as :meth:`Store.player_days` names them, in :func:`entry_flow`'s order.
FLOW_NAMES: Final = ("staked", "net", "deposited")


# The days below are formatted and parsed once each (cached): every commit of a bet
# asks for its day and cutoff, and ``strptime`` with two ``strftime`` were some 40 µs
# of a lone bet's 900 (bench.lone, issue 36 target 4).


def flow_day(now: float) -> str:
    """The UTC day (``"YYYY-MM-DD"``) of Unix time ``now``: a commit's flow bucket."""
    number, into = divmod(now, 86_400)
    if into > 86_399.999_999:  # (a time the microsecond rounds into the next day)
        return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")
    return _day_numbered(int(number))


@functools.lru_cache(maxsize=16)
def _day_numbered(number: int) -> str:
    return datetime.fromtimestamp(number * 86_400, UTC).strftime("%Y-%m-%d")


@functools.lru_cache(maxsize=16)
def flow_cutoff(day: str) -> str:
    """The oldest day kept when ``day`` is written: :data:`FLOW_DAYS` days in all."""
    then = _parsed_day(day).replace(tzinfo=UTC)
    return (then - timedelta(days=FLOW_DAYS - 1)).strftime("%Y-%m-%d")


@functools.lru_cache(maxsize=64)
def _parsed_day(day: str) -> datetime:
    """``"YYYY-MM-DD"`` parsed (ValueError otherwise, never cached)."""
    return datetime.strptime(day, "%Y-%m-%d")


def pruned_days(days: Iterable[str], cutoff: str) -> list[str]:
    """Of a player's stored ``days``, those their first flow of a day drops: the days
    before ``cutoff``, :func:`flow_cutoff` of that day (the plan's ``cutoff``). Only a
    player's first flow of a day prunes (no row of that day yet); SQLite deletes the
    same range, and Redis's Lua, handed the plan's cutoff."""
    return [old for old in days if old < cutoff]


def entry_flow(entry: Entry) -> tuple[str, int, int, int] | None:
    """(player, staked sign, net sign, deposited sign) that ``entry`` moves for a player's
    responsible-play usage, or None.

    Chips count from the moment they are placed, so that what a limit counts and the
    chips it caps are one sum, checked in one commit (:class:`LimitGuard`): a ``stake``
    (``player:<id>`` to ``stake:<table>:<id>``: chips placed) is staked and, until it
    comes back, lost: ``(id, +1, -1, 0)``; an ``unstake`` (chips taken back, or sent
    back when the player stands) undoes it: ``(id, -1, +1, 0)``. A ``hold`` moves chips
    already counted from the felt into the coup: nothing. A ``return`` or ``win`` (into
    ``player:<id>``) comes back: ``(id, 0, +1, 0)``. A ``refund`` or ``void`` gives a
    wager back that was never wagered: ``(id, -1, +1, 0)``. A ``deposit`` or
    ``transfer_deposit`` is deposited: ``(id, 0, 0, +1)``. Every other kind (a loss, a
    welcome, a wallet's sync, a withdrawal) moves nothing, and so does an entry whose
    account is not of the shape its kind expects. The flow is ``amount`` times each
    sign."""
    if entry.kind == "stake":
        player = entry.src.removeprefix(PLAYER_PREFIX)
        if player == entry.src or not player:
            return None
        return player, 1, -1, 0
    signs = _FLOW_SIGNS.get(entry.kind)
    player = entry.dst.removeprefix(PLAYER_PREFIX)
    if signs is None or player == entry.dst or not player:
        return None
    return (player, *signs)


#: The signs of the kinds paid into ``player:<id>`` (:func:`entry_flow`).
_FLOW_SIGNS: Final[dict[str, tuple[int, int, int]]] = {
    "unstake": (-1, 1, 0),
    "return": (0, 1, 0),
    "win": (0, 1, 0),
    "refund": (-1, 1, 0),
    "void": (-1, 1, 0),
    "deposit": (0, 0, 1),
    "transfer_deposit": (0, 0, 1),
}


def add_flows(flows: dict[str, list[int]], entries: Iterable[Entry]) -> dict[str, list[int]]:
    """Add the flows of ``entries`` (newly inserted) to ``flows`` (player ->
    ``[staked, net, deposited]``) and return it."""
    for entry in entries:
        flow = entry_flow(entry)
        if flow is not None:
            player, *signs = flow
            sums = flows.setdefault(player, [0, 0, 0])
            for n, sign in enumerate(signs):
                sums[n] += entry.amount * sign
    return flows


# -- a player's days, as a store keeps them ------------------------------------------------


def check_day(day: object) -> str:
    """Refuse a day that is not ``"YYYY-MM-DD"`` (:class:`StoreError`)."""
    if not isinstance(day, str) or len(day) != 10:
        raise StoreError("a day is a UTC date, 'YYYY-MM-DD'")
    try:
        _parsed_day(day)
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


# -- the guards: limits held by the commit itself --------------------------------------------


class LimitGuard(NamedTuple):
    """A cap a commit must not take a player past: the usage of ``kind`` (its first
    part names the measure, :data:`GUARD_MEASURES`: ``wager_week`` sums ``staked``)
    summed over the player's days from ``since`` (``YYYY-MM-DD``, UTC) on, today
    included, after the commit, at most ``cap``. Checked only when the commit's newly
    inserted entries raise that usage (chips placed, a deposit): taking chips back, a
    settlement or a retried commit passes whatever the usage is."""

    player: str
    kind: str
    cap: int
    since: str


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
    if (
        not (isinstance(guard.cap, int) and not isinstance(guard.cap, bool))
        or not 0 <= guard.cap <= MAX_AMOUNT
    ):
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
