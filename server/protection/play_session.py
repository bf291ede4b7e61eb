"""The player's play session at the gateway: the reality check and the session's length.

A **play session** is the player's, not a connection's: it is kept in the store
(``Store.open_play_session``, ``play_session``, ``touch_play_sessions``,
``ack_reality_check``), so every connection of the player, on every process of a
cluster and across a restart, sees the same one. It begins at the player's first
``hello`` and goes on through reconnects and second connections; it ends only when no
connection of theirs was seen for more than ``--session-gap`` minutes (15 by default):
the next ``hello`` then begins a new one. While a connection is open, its process
touches its player's session (every :func:`touch_every` seconds, and once more when
the connection closes), so a player who stays connected stays in one session however
long they play, and a process that died stops counting for them.

**The reality check.** Every ``reality_check`` minutes *of the session* (from its
start: the token's claim, else the server's ``--reality-check``, as the hello that
began the session gave it; a session without one takes the first a later hello
brings), a reality check comes due. The store says when (``next``); due means
``next`` has passed and nobody answered. Until it is answered, every ``bet`` and
``same_bet`` of the player, from any connection, is refused ``reality_check_due``; a
``reality_ack`` from any connection answers it for all, and the next one is the
session's next period after the answer. A store that cannot be read refuses the bet
(``store_unavailable``): a bet never slips past a reality check the store could not
check.

Each connection has a timer (:class:`~server.protection.context.PlayClock`) that only pushes the
``reality_check`` message: it wakes at the stored due time, reads the store, and sends
the message if a check is due that this connection was not yet sent (once per due time
per connection); a connection that says hello while one is due is sent it at once, and
so is one whose bet is refused for it before its timer woke. The truth is the store's.

Nothing here decides a rule of the game; it reads the store and answers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol

from server.ledger.flows import flow_day
from server.protection.context import Replies, S, S_contra
from server.protection.responsible import ResponsibleContext, return_chips_of
from server.protection.rules import ack_play, next_reminder, open_play, play_due
from server.protocol.errors import Refused, StoreError, store_refusal

if TYPE_CHECKING:
    from server.store.base import (
        Store,
    )

__all__ = [
    "CHOICES",
    "RETRY",
    "TOUCH_CHUNK",
    "TOUCH_EVERY",
    "AckContext",
    "ClockContext",
    "Touches",
    "answered_message",
    "begin",
    "current",
    "follow",
    "minutes",
    "now",
    "reality_ack",
    "remind",
    "shown",
    "touch",
    "touch_every",
]

CHOICES: Final = ("continue", "leave")
#: A connection's process touches its players' sessions at most this far apart (seconds).
TOUCH_EVERY: Final = 60.0
#: The most players one touch names (a Redis script runs alone: keep each one short).
TOUCH_CHUNK: Final = 500
#: A timer that could not read the store looks again this much later (seconds).
RETRY: Final = 5.0
#: A timer wakes this much after the due time it waits for (the loop's clock is coarse).
SLACK: Final = 0.01

log = logging.getLogger("chemmy.net")
#: The process's periodic work logs here (:class:`Touches`).
_process_log = logging.getLogger("chemmy.server")


def now() -> float:
    """The time the play sessions are reckoned by, Unix seconds (one place to move it)."""
    return time.time()


def minutes(seconds: float | None) -> float | None:
    """A period as the wire says it: minutes (three decimals), or None."""
    return None if seconds is None else round(seconds / 60, 3)


def touch_every(gap: float) -> float:
    """How often an open connection's session is touched with a gap of ``gap`` seconds:
    a quarter of it, at most :data:`TOUCH_EVERY` (so a session ends within a quarter of
    a gap of its last connection, even one whose process died)."""
    return min(TOUCH_EVERY, gap / 4)


class ClockContext(Replies[S_contra], Protocol[S_contra]):
    """What the play session uses of the gateway: its reminders come in the background."""

    @property
    def store(self) -> Store: ...

    def background(self, job: Coroutine[Any, Any, None]) -> None: ...


# ------------------------------------------------------------------ the session's truth
async def begin(
    store: Store, player: str, persisted: bool, every: float | None, gap: float
) -> dict[str, Any] | None:
    """A connection of ``player`` says hello: their stored session goes on, or a new one
    begins (None for a guest not stored yet: they have one once stored, at their first
    bet). Raises :class:`StoreError` when the store cannot say."""
    if not persisted:
        return None
    return await store.open_play_session(player, now(), gap, every, rule=open_play)


#: :func:`current`'s ``read``: not read yet (read it).
UNREAD: Any = object()


async def current(
    ctx: ClockContext[S], session: S, read: dict[str, Any] | None = UNREAD
) -> dict[str, Any] | None:
    """The player's stored session, for a check of this connection's (``read``: as
    already read from the store with the check's other reads): opened now if the store
    has none (a guest stored since their hello; a guest not stored yet has none).
    Raises :class:`StoreError`."""
    clock = session.play
    if clock is None:
        return None
    found = await ctx.store.play_session(session.player) if read is UNREAD else read
    if found is None and session.persisted:
        found = await ctx.store.open_play_session(
            session.player, now(), clock.gap, clock.every, rule=open_play
        )
        follow(ctx, session, found)
    return found


def shown(found: dict[str, Any] | None, at: float) -> dict[str, Any] | None:
    """The ``limits`` reply's ``session`` (docs/protocol.md §6): when the player's
    session began, its length so far, the reality check's period (minutes), whether one
    is due, and when the next one is (or is) due (Unix seconds; None: none)."""
    if found is None:
        return None
    return {
        "started": found["started"],
        "seconds": int(at - found["started"]),
        "reality_check": minutes(found["every"]),
        "reality_check_due": play_due(found, at),
        "next_reality_check": found["next"],
    }


# ------------------------------------------------------------------ the reminders
def follow(ctx: ClockContext[S], session: S, found: dict[str, Any] | None) -> None:
    """Act on the player's stored session ``found`` for this connection: send the
    reality check if one is due that it was not sent, and time its next look at the
    store (the due time, or while one waits for its answer, the session's next period)."""
    clock = session.play
    if clock is None or clock.closed or found is None:
        return
    at = now()
    wake = found["next"]
    if play_due(found, at):
        remind(ctx, session, found)
        every = found["every"]
        wake = None if every is None else next_reminder(found["started"], every, at)
    _arm(ctx, session, wake, at)


def remind(ctx: ClockContext[S], session: S, found: dict[str, Any]) -> None:
    """Send the reality check now due in ``found`` to this connection, unless it was
    sent it for this due time already."""
    clock = session.play
    if clock is None or clock.reminded == found["next"]:
        return
    clock.reminded = found["next"]
    ctx.background(_send_reminder(ctx, session, found))


def _arm(ctx: ClockContext[S], session: S, wake: float | None, at: float) -> None:
    clock = session.play
    if clock is None or clock.closed:
        return
    clock.stop_timer()
    if wake is None:
        return
    loop = asyncio.get_running_loop()
    delay = max(0.0, wake - at) + SLACK
    clock.timer = loop.call_later(delay, lambda: ctx.background(_wake(ctx, session)))


async def _wake(ctx: ClockContext[S], session: S) -> None:
    """The timer: read the store and act on what it says."""
    clock = session.play
    if clock is None or clock.closed:
        return
    clock.timer = None
    try:
        found = await ctx.store.play_session(session.player)
    except StoreError as exc:
        log.debug("the play session of a connection could not be read: %s", exc)
        _arm(ctx, session, now() + RETRY, now())  # (its bets are refused meanwhile)
        return
    follow(ctx, session, found)


async def _send_reminder(ctx: ClockContext[S], session: S, found: dict[str, Any]) -> None:
    """The ``reality_check`` message: the session's length and its result so far."""
    totals = await _totals(ctx.store, session.player, found["started"])
    base = found["baseline"]
    ctx.send(
        session,
        {
            "type": "reality_check",
            "session_seconds": int(now() - found["started"]),
            "net": None if totals is None else totals["net"] - base["net"],
            "staked": None if totals is None else totals["staked"] - base["staked"],
            "every": minutes(found["every"]),
        },
    )


async def _totals(store: Store, player: str, since: float) -> dict[str, int] | None:
    """The player's ``staked`` and ``net`` summed from the UTC day of ``since`` (None:
    the store cannot say now)."""
    try:
        days = await store.player_days(player, flow_day(since))
    except StoreError:
        return None
    return {
        "staked": sum(row["staked"] for row in days.values()),
        "net": sum(row["net"] for row in days.values()),
    }


# ------------------------------------------------------------------ the answer
class AckContext(ResponsibleContext[S_contra], ClockContext[S_contra], Protocol[S_contra]):
    """What the reality check's answer uses of the gateway."""

    def reality_answered(self, session: S_contra, choice: str) -> None:
        """Tell the player's other connections, on every process, that ``session``
        answered the reality check (:func:`answered_message`)."""


async def reality_ack(ctx: AckContext[S], session: S, mid: Any, fields: dict[str, Any]) -> None:
    """The player read the reality check: ``continue`` (bets are taken again, from every
    connection; the next check is the session's next period) or ``leave`` (their chips
    go back and they stand up at every table, as with a break)."""
    choice = fields["choice"]
    if choice not in CHOICES:
        raise Refused("bad_choice", "a reality check is answered continue or leave")
    try:
        found = await current(ctx, session)
    except StoreError as exc:
        raise store_refusal(exc) from None
    if not play_due(found, now()):
        raise Refused("no_reality_check", "no reality check is waiting for an answer")
    if choice == "leave":
        await return_chips_of(ctx, session)
    try:
        after = await ctx.store.ack_reality_check(session.player, now(), rule=ack_play)
    except StoreError as exc:
        raise store_refusal(exc) from None
    # (None: another connection answered it meanwhile; answered either way.)
    follow(ctx, session, after)
    ctx.ok(session, mid, choice=choice)
    ctx.reality_answered(session, choice)


def answered_message(choice: str) -> dict[str, Any]:
    """What each other connection of a player who answered the reality check is sent,
    so that it stops asking (docs/protocol.md §6 ``reality_ack``)."""
    return {"type": "reality_answered", "choice": choice}


# ------------------------------------------------------------------ keeping it going
async def touch(store: Store, players: Iterable[str], at: float | None = None) -> None:
    """The players ``players`` have a connection open here at ``at`` (None: now; or had
    one until then): their sessions go on (raises :class:`StoreError`)."""
    wanted, when = sorted(set(players)), now() if at is None else at
    for first in range(0, len(wanted), TOUCH_CHUNK):  # (one short store call each)
        await store.touch_play_sessions(wanted[first : first + TOUCH_CHUNK], when)


class Touches:
    """Keeping going the play sessions of the players connected to one process: every
    :attr:`interval` seconds (:meth:`due`), and when a connection closes (its gap counts
    from then). A failure is one log line until a touch works again (their sessions
    then go on as if touched: a connection was open all along)."""

    def __init__(self, store: Store, gap: float) -> None:
        self.store = store
        #: How often (seconds): :func:`touch_every` of the gap (seconds) that ends one.
        self.interval = touch_every(gap)
        self._next = 0.0
        self._failed = False

    def due(self, now: float) -> bool:
        """Whether the periodic touch is due at ``now`` (``time.monotonic``); if so the
        next is :attr:`interval` later."""
        if now < self._next:
            return False
        self._next = now + self.interval
        return True

    async def touch(self, players: list[str], at: float | None = None) -> None:
        """Keep ``players``' play sessions going (:func:`touch`), as seen at ``at``
        (None: now)."""
        try:
            await touch(self.store, players, at)
        except StoreError as exc:
            if not self._failed:
                _process_log.warning("the players' play sessions could not be kept going: %s", exc)
            self._failed = True
            return
        if self._failed:
            _process_log.info("the players' play sessions are kept going again")
        self._failed = False
