"""The gateway's table requests: the lobby, joining and leaving, table commands, roads,
chat, and the operators' ``create_table`` and ``close_table``.

Everything that concerns one table travels as a record to the table's owner (over the
bus) and comes back as a reply record; the gateway then answers the client, and for a
``join`` subscribes the connection to the table's events from the ``seq`` the reply
names, so the client sees every event after its snapshot exactly once. Chat is not a
table event: it is fanned out by the hub to everyone watching, and not stored; its text
passes the same check as names (``server.protocol.text``: no control, bidi or zero-width
character reaches a watcher's screen).
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from server.croupier.actor import GUEST_FIELD
from server.protocol.errors import ProtocolError, Refused
from server.protocol.records import ReplyRecord
from server.protocol.text import clean_text
from server.store.base import StoreError
from server.table import TableOptions
from server.table.events import Event
from server.table.options import OptionsError
from server.table.views import view_event

from .context import Continuation
from .hub import Subscriber, envelope

if TYPE_CHECKING:
    from .context import Replies, TablesContext
    from .session import Session

#: A table request's handler: (context, session, request id, checked fields).
TableHandler = Callable[["TablesContext", "Session", Any, dict[str, Any]], Awaitable[None]]

__all__ = [
    "TableHandler",
    "chat",
    "close_table",
    "create_table",
    "join",
    "leave",
    "lobby",
    "roads",
    "table_command",
]

TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


async def _known(server: TablesContext, tid: str) -> str:
    if not await server.lobby.has(tid):
        raise Refused("no_table", f"there is no table {tid[:40]!r}")
    return tid


async def _joined(server: TablesContext, session: Session, tid: str) -> str:
    if tid not in session.tables:
        await _known(server, tid)
        raise Refused("not_joined", "join the table first")
    return tid


def _answer(server: Replies, session: Session, mid: Any) -> Continuation:
    """The continuation of a plain command: the reply record, as the client's reply."""

    def then(reply: ReplyRecord) -> None:
        if reply.error is not None:
            server.error(session, mid, Refused(reply.error["code"], reply.error["message"]))
        else:
            server.ok(session, mid, **(reply.result or {}))

    return then


def table_command(kind: str) -> TableHandler:
    """The handler of a table command (``bet``, ``sit``, ``turn``...): it goes to the
    table's owner, and the owner's reply is the client's."""

    async def relay(
        server: TablesContext, session: Session, mid: Any, fields: dict[str, Any]
    ) -> None:
        tid = await _joined(server, session, fields["table"])
        args = {k: v for k, v in fields.items() if k != "table"}
        then = _answer(server, session, mid)
        if kind == "sit" and not session.persisted:
            # A guest not yet stored: the table's owner stores them once the sit is
            # allowed (a refused sit writes nothing).
            assert session.identity is not None
            guest = {"name": session.identity.name, "funds": server.config.guest_balance}
            args[GUEST_FIELD] = guest
            answer = then

            def then(reply: ReplyRecord) -> None:
                if reply.error is None:
                    session.persisted = True
                answer(reply)

        server.relay(session, tid, kind, mid, args, then)

    return relay


async def lobby(server: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    server.ok(session, mid, tables=await server.lobby.tables())


async def join(server: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    """Join a table: the reply carries a snapshot, or with ``since`` (a resume) the events
    missed since then, from this process's recent log or else the table's stored log."""
    tid = await _known(server, fields["table"])
    since = fields.get("since")
    player = session.player

    def then(reply: ReplyRecord) -> None:
        if reply.error is not None:
            server.error(session, mid, Refused(reply.error["code"], reply.error["message"]))
            return
        result = reply.result or {}
        seq = int(result["seq"])
        if since is None or not 0 <= since <= seq:
            answer(seq, None, result.get("snapshot"))
            return
        missed = [] if since == seq else server.hub.since(tid, since)
        if missed is not None:
            answer(seq, missed, None)
            return
        # Not in this process's recent log (a restart, a failover): the stored log.
        server.background(stored(seq, result.get("snapshot")))

    async def stored(seq: int, snapshot: Any) -> None:
        try:
            found = await server.bus.events_after(tid, since or 0)
        except StoreError:
            found = None
        if session.id in server.sessions:
            answer(seq, found, snapshot)
        else:  # closed while the stored log was read
            server.left_table(session, tid)

    def answer(seq: int, missed: list[Event] | None, snapshot: Any) -> None:
        if missed is not None:
            server.ok(session, mid, table=tid, resumed=True, seq=seq)
            for event in missed:
                if event.seq <= seq:
                    server.send(session, envelope(tid, view_event(event, player)))
        else:
            if not session.persisted and isinstance(snapshot, dict) and "you" in snapshot:
                # A guest not yet in the store: the play money they will get at their seat.
                money = server.config.guest_balance
                snapshot["you"] = {**snapshot["you"], "balance": money, "available": money}
            server.ok(session, mid, table=tid, resumed=False, seq=seq, snapshot=snapshot)
        session.tables.add(tid)
        # Watched again: a notice that a table of this id closed may have come in while
        # this join travelled (the table was closed and created again meanwhile).
        server.watch_table(tid)
        server.hub.subscribe(tid, Subscriber(session.conn, player, session.fmt), after=seq)

    assert session.identity is not None
    server.watch_table(tid)  # this process fans the table's events out from now on
    server.relay(session, tid, "join", None, {"name": session.identity.name}, then)


async def leave(server: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    tid = await _joined(server, session, fields["table"])

    def then(reply: ReplyRecord) -> None:
        if reply.error is not None:
            server.error(session, mid, Refused(reply.error["code"], reply.error["message"]))
            return
        session.tables.discard(tid)
        server.hub.unsubscribe(tid, session.conn)
        server.ok(session, mid, seq=(reply.result or {}).get("seq"))

    server.relay(session, tid, "leave", mid, {}, then)


async def roads(server: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    tid = await _known(server, fields["table"])
    server.relay(session, tid, "roads", None, {}, _answer(server, session, mid))


async def chat(server: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    tid = await _joined(server, session, fields["table"])
    config = server.config
    try:
        text = clean_text(fields["text"])  # the one check names pass too
    except ValueError as exc:
        raise Refused("bad_chat", str(exc)) from None
    if not text:
        raise Refused("bad_chat", "say something")
    if len(text) > config.chat_max_len:
        raise Refused("chat_too_long", f"at most {config.chat_max_len} characters")
    now = time.monotonic()
    session.chat_times = [t for t in session.chat_times if now - t < 10]
    if len(session.chat_times) >= config.chat_rate:
        raise Refused("chat_rate", "wait a moment before chatting again")
    session.chat_times.append(now)
    assert session.identity is not None
    message = {
        "type": "chat",
        "table": tid,
        "player": session.player,
        "name": session.identity.name,
        "text": text,
        "time": time.time(),
    }
    server.hub.send_all(tid, message)
    server.ok(session, mid)


def _operator(session: Session) -> None:
    assert session.identity is not None
    if "operator" not in session.identity.roles:
        raise Refused("not_allowed", "only an operator does that")


async def create_table(
    server: TablesContext, session: Session, mid: Any, fields: dict[str, Any]
) -> None:
    _operator(session)
    options = dict(fields.get("options") or {})
    croupier = server.croupier
    taken = {t["table"] for t in await server.lobby.tables()}
    tid = fields.get("table") or next(
        f"t{n}" for n in range(1, len(taken) + 2) if f"t{n}" not in taken
    )
    if not TABLE_ID.fullmatch(tid):
        raise ProtocolError("bad_message", "a table id is 1-32 letters, digits, - or _")
    if tid in taken:
        raise Refused("table_exists", f"there is already a table {tid!r}")
    try:
        opts = TableOptions.from_dict(options)
    except (OptionsError, TypeError, ValueError) as exc:
        raise Refused("bad_options", str(exc)) from None
    summary = await croupier.create_table(tid, opts)
    server.watch_table(tid)
    server.ok(session, mid, table=summary)


async def close_table(
    server: TablesContext, session: Session, mid: Any, fields: dict[str, Any]
) -> None:
    _operator(session)
    tid = await _known(server, fields["table"])

    def then(reply: ReplyRecord) -> None:
        if reply.error is not None:
            server.error(session, mid, Refused(reply.error["code"], reply.error["message"]))
            return
        # (Its ``closed`` event, before this reply, ended the table here.)
        server.ok(session, mid, table=tid, closed=True)

    server.relay(session, tid, "close", mid, {}, then)
