"""What player protection needs of the gateway, named once: a player's connection
(:class:`Player`), answering it (:class:`Replies`), sending a command record to a
table's owner (:class:`Relay`, :class:`Submitter`), the open tables (:class:`TableList`)
-- each a :class:`~typing.Protocol`, generic in the connection (``S``), that the
gateway's ``ChemmyServer`` and its ``Session`` satisfy -- and a connection's part in
its player's play session (:class:`PlayClock`, the one piece of state protection keeps
on a connection).

This module only names what protection depends on; it never imports the gateway.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from server.protocol.errors import ChemmyError
    from server.protocol.records import CommandRecord, ReplyRecord

__all__ = [
    "Continuation",
    "PlayClock",
    "Player",
    "Relay",
    "Replies",
    "S",
    "S_contra",
    "Submitter",
    "TableList",
]

#: What the gateway does with a table's reply record when it comes back.
Continuation = Callable[["ReplyRecord"], None]


@dataclass(eq=False)
class PlayClock:
    """A connection's part in its player's play session (responsible play; the session
    itself is the store's, ``server.protection.play_session``): the reality check's period its
    hello asked for (seconds; None: none), the gap that ends a session (seconds), the
    due time of the last reality check it was sent, and the timer of its next look at
    the store."""

    every: float | None = None
    gap: float = 900.0
    reminded: float | None = None
    timer: Any = None  # an asyncio.TimerHandle while it waits
    #: The connection closed: no timer after this.
    closed: bool = False

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def stop(self) -> None:
        """No reminder after this (the connection closed)."""
        self.closed = True
        self.stop_timer()


class Player(Protocol):
    """A connection of a player, as player protection reads it (after ``hello``)."""

    @property
    def player(self) -> str: ...

    @property
    def persisted(self) -> bool: ...

    @property
    def tables(self) -> Collection[str]: ...

    @property
    def play(self) -> PlayClock | None: ...


#: A connection (the gateway's ``Session``): ``S`` in the functions, ``S_contra`` in
#: the protocols that take one.
S = TypeVar("S", bound=Player)
S_contra = TypeVar("S_contra", bound=Player, contravariant=True)


class Replies(Protocol[S_contra]):
    """Answering a client: a message, an ``ok`` or an ``error`` echoing its id."""

    def send(self, session: S_contra, message: dict[str, Any]) -> None: ...

    def ok(self, session: S_contra, mid: Any, /, **result: Any) -> None: ...

    def error(self, session: S_contra, mid: Any, err: ChemmyError) -> None: ...


class Relay(Replies[S_contra], Protocol[S_contra]):
    """Sending a command record to a table's owner through the player's line (``then``
    gets its reply)."""

    def relay(
        self,
        session: S_contra,
        table: str,
        kind: str,
        mid: Any = None,
        fields: dict[str, Any] | None = None,
        then: Continuation | None = None,
    ) -> None: ...


class Submitter(Protocol):
    """Sending a command record straight to its table's owner (the bus)."""

    def submit(self, record: CommandRecord) -> None: ...


class TableList(Protocol):
    """The open tables (the lobby)."""

    async def tables(self) -> list[dict[str, Any]]: ...
