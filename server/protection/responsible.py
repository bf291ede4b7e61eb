"""Responsible play: a player's time-out or self-exclusion (issue 21).

A player takes a break (``take_break`` with a ``period`` of :data:`PERIODS`: 24 hours, a
week, a month) or excludes themselves (six months, a year, five years); ``responsible``
reads what is in force. An operator sets or lifts either through
``/operator/v1/players/{player}/restriction`` (``server.operator.protection``). The restriction is the
store's (``Store.set_player_restriction``: shared by a cluster's processes and kept
across restarts), and a player only lengthens one, never shortens it.

While one is in force the gateway refuses the player's ``sit``, ``bet``, ``same_bet``
and ``accept_shoe`` with ``player_blocked`` (:func:`refuse_blocked`, read from the store
on each of them, so it holds on every process at once). When one is set, the chips the
player has placed go back: every open table is sent a ``clear_bets`` and then a
``stand`` on their behalf (the tables the connection joined through the player's own
line, after what they sent before; every other straight to its owner, whichever process
it is; an operator's through the bus, :func:`return_chips`); a table where they have
nothing refuses it, unheard. The ``stand`` is marked ``on_break`` (:data:`ON_BREAK`, a
field only a gateway sets): where the player's wager is in a coup, the table stands them
once it is settled instead of refusing (``stand_after_coup``, kept in the table's
state), and never offers them the shoe meanwhile; their chips held in it play out.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

from server.protection.context import Relay, S, S_contra, Submitter, TableList
from server.protection.rules import merge_restriction
from server.protocol.errors import ChemmyError, Refused, StoreError, player_blocked, store_refusal
from server.protocol.records import CommandRecord, ReplyRecord

if TYPE_CHECKING:
    from server.store.base import (
        Store,
    )

__all__ = [
    "BLOCKED_COMMANDS",
    "PERIODS",
    "refuse_blocked",
    "refuse_restricted",
    "responsible",
    "return_chips",
    "return_chips_of",
    "take_break",
]

DAY: Final = 86_400
#: ``take_break``'s periods: (the restriction's kind, its length in seconds).
PERIODS: Final[Mapping[str, tuple[str, int]]] = {
    "24h": ("break", DAY),
    "week": ("break", 7 * DAY),
    "month": ("break", 30 * DAY),
    "exclude_6m": ("exclusion", 183 * DAY),
    "exclude_1y": ("exclusion", 365 * DAY),
    "exclude_5y": ("exclusion", 1826 * DAY),
}

#: The table commands a blocked player may not send (standing, clearing their chips and
#: watching stay allowed; the shoe is never theirs to take on a break).
BLOCKED_COMMANDS: Final = frozenset({"sit", "bet", "same_bet", "accept_shoe"})

#: The ``stand`` sent on a player's behalf when they stop play: ``on_break`` (the field of
#: ``server.vocabulary.commands.Stand`` only a gateway fills in), so that a wager in a coup
#: makes it wait for the coup's end, not refuse it.
ON_BREAK: Final[Mapping[str, Any]] = {"on_break": True}
#: What is sent to every open table, in order, when a player stops play.
_RETURN: Final[tuple[tuple[str, Mapping[str, Any]], ...]] = (
    ("clear_bets", {}),
    ("stand", ON_BREAK),
)


class ResponsibleContext(Relay[S_contra], Protocol[S_contra]):
    """What ``take_break`` and ``responsible`` use of the gateway."""

    @property
    def store(self) -> Store: ...

    @property
    def lobby(self) -> TableList: ...


async def refuse_blocked(store: Store, player: str) -> None:
    """Raise ``player_blocked`` if ``player`` is timed out or excluded now (read from the
    store: a store that cannot be read refuses too, ``store_unavailable``)."""
    try:
        found = await store.player_restriction(player)
    except StoreError as exc:
        raise store_refusal(exc) from None
    refuse_restricted(found)


def refuse_restricted(found: Mapping[str, Any] | None) -> None:
    """Raise ``player_blocked`` for a restriction in force (``found``, as the store
    answered it; None: none)."""
    if found is not None:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(found["until"]))
        raise player_blocked(found["kind"], when)


async def return_chips(bus: Submitter, lobby: TableList, player: str) -> None:
    """Send every open table a ``clear_bets`` and a ``stand`` (``on_break``) on
    ``player``'s behalf (no reply asked: a table where they have no chips or no seat
    refuses it, unheard)."""
    for table in await _open_tables(lobby):
        for kind, fields in _RETURN:
            with contextlib.suppress(ChemmyError):
                bus.submit(CommandRecord(table, kind, player, None, dict(fields), None, ""))


async def _open_tables(lobby: TableList) -> list[str]:
    try:
        return [str(line["table"]) for line in await lobby.tables()]
    except StoreError:
        return []  # (the tables cannot be listed now; the restriction holds all the same)


async def return_chips_of(ctx: ResponsibleContext[S], session: S) -> None:
    """``clear_bets`` and ``stand`` for ``session``'s player at every open table: at the
    ones the connection joined through the player's line (``relay`` with a reply), after
    every command they sent before, so a bet sent just before the break is cleared too;
    at the others (watched from another connection or process) straight to the owner."""

    def ignore(reply: ReplyRecord) -> None:
        """(A table where they have no chips or no seat refuses: nothing to do.)"""

    for table in await _open_tables(ctx.lobby):
        then = ignore if table in session.tables else None
        for kind, fields in _RETURN:
            with contextlib.suppress(ChemmyError):
                ctx.relay(session, table, kind, None, dict(fields), then)


async def take_break(
    ctx: ResponsibleContext[S], session: S, mid: Any, fields: dict[str, Any]
) -> None:
    """A break (``24h``, ``week``, ``month``) or a self-exclusion (``exclude_6m``,
    ``exclude_1y``, ``exclude_5y``) from now; one in force is only ever lengthened."""
    period = PERIODS.get(fields["period"])
    if period is None:
        raise Refused("bad_period", f"a period is one of {', '.join(PERIODS)}")
    kind, seconds = period
    pid = session.player
    try:
        kept = await ctx.store.set_player_restriction(
            pid, kind, time.time() + seconds, "player", rule=merge_restriction
        )
    except StoreError as exc:
        raise store_refusal(exc) from None
    await return_chips_of(ctx, session)
    ctx.ok(session, mid, restriction=kept)


async def responsible(
    ctx: ResponsibleContext[S], session: S, mid: Any, fields: dict[str, Any]
) -> None:
    """The time-out or self-exclusion in force for the player, or ``null``."""
    try:
        found = await ctx.store.player_restriction(session.player)
    except StoreError as exc:
        raise store_refusal(exc) from None
    ctx.ok(session, mid, restriction=found)
