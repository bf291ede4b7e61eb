"""The cluster's notices as a gateway hears them (docs/architecture.md §9): the lobby
may have changed; a table has a new owner (a failover, a handover), or the bus lost
Redis and is back; a player's reality check was answered on another process.

A table's new owner started as after a restart (everyone disconnected), so this
gateway's players there join it again and it knows they are here; after the bus came
back every table may have changed owner meanwhile (the notices said so while nobody
here listened), so the players join every table they are at again (a join where they
are known changes nothing). A reality check answered is told to the player's other
connections, here at once and on the other processes by a notice.

Nothing here decides a rule or reads a table; ``server.process.assemble`` hands the
croupier's notices to :func:`heard`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from server.protection import play_session
from server.protocol.errors import ChemmyError

if TYPE_CHECKING:
    from server.gateway.lobby import SharedLobby
    from server.gateway.server import ChemmyServer
    from server.gateway.session import Session
    from server.protocol.records import ReplyRecord

__all__ = ["answered", "heard"]


def heard(gateway: ChemmyServer, notice: dict[str, Any], lobby: SharedLobby) -> None:
    """A cluster notice (see the module docstring)."""
    kind = notice.get("kind")
    if kind == "reality_answered":
        if notice.get("node") != gateway.bus.node:  # this process told its own already
            _tell_answered(gateway, str(notice.get("player")), str(notice.get("choice")))
        return
    lobby.stale()
    if kind not in ("owner", "reconnected"):
        return
    table = str(notice.get("table"))
    for session in list(gateway.sessions.values()):
        for tid in list(session.tables) if kind == "reconnected" else [table]:
            _join_again(gateway, session, tid)


def answered(gateway: ChemmyServer, session: Session, choice: str) -> None:
    """``session`` answered its player's reality check: their other connections here
    are told at once, and those on the other processes of a cluster by a notice."""
    _tell_answered(gateway, session.player, choice, but=session)
    notice = {"kind": "reality_answered", "player": session.player, "choice": choice}
    gateway.bus.control({**notice, "node": gateway.bus.node})


def _tell_answered(
    gateway: ChemmyServer, player: str, choice: str, but: Session | None = None
) -> None:
    message = play_session.answered_message(choice)
    for other in list(gateway.sessions.values()):
        if other is not but and other.identity is not None and other.player == player:
            gateway.send(other, message)


def _join_again(gateway: ChemmyServer, session: Session, table: str) -> None:
    """Tell ``table``'s owner that ``session``'s player is here (a notice said it may
    not know it)."""
    if table in session.tables and session.identity is not None:
        with contextlib.suppress(ChemmyError):
            name = {"name": session.identity.name}
            gateway.relay(session, table, "join", None, name, _ignore)


def _ignore(reply: ReplyRecord) -> None:
    """A reply nobody waits for (a join made again after a table moved)."""
