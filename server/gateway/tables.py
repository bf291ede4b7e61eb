"""The gateway's table requests: the lobby, joining and leaving, table commands, roads,
chat, and the operators' ``create_table`` and ``close_table``.

Everything that concerns one table travels as a record to the table's owner (over the
bus) and comes back as a reply record; the gateway then answers the client, and for a
``join`` subscribes the connection to the table's events from the ``seq`` the reply
names, so the client sees every event after its snapshot exactly once. Chat is not a
stored table event: it goes to the table's owner as a transient event (as a squeeze's
bends do), which fans it out to everyone watching and never stores it; its text
passes the same check as names (``server.protocol.text``: no control, bidi or zero-width
character reaches a watcher's screen).

Currencies: a table plays in one currency (its lobby line's ``currency``; ``None``: play
money) and a player in theirs (their token's, :class:`~server.process.auth.Identity`; every
guest plays with play money). The lobby shows a player only the tables of their currency,
and ``join`` and ``sit`` at a table of another one are refused ``wrong_currency`` here,
before anything reaches the table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from server.croupier.kinds import GUARDS_FIELD, GUEST_FIELD
from server.gateway.hub import Subscriber, envelope
from server.protection import play_session
from server.protection.context import Continuation
from server.protection.play_limits import Allowance, bet_allowance, first_day
from server.protection.responsible import BLOCKED_COMMANDS, refuse_blocked, refuse_restricted
from server.protection.rules import current_limits
from server.protocol.errors import (
    ChemmyError,
    ProtocolError,
    Refused,
    StoreError,
    no_table,
    store_refusal,
    wrong_currency,
)
from server.protocol.records import ReplyRecord
from server.protocol.text import clean_text
from server.table import TableOptions
from server.table.views import view_event
from server.vocabulary.commands import WALLET_SESSION_FIELD
from server.vocabulary.events import Event
from server.vocabulary.options import OptionsError

if TYPE_CHECKING:
    from server.gateway.context import Relay, TablesContext
    from server.gateway.session import Session

#: The commands the reality check and the player's wager and loss limits hold back, and
#: the field the allowance goes to the table in (``server.vocabulary.commands.PlaceBet``).
LIMITED_COMMANDS: Final = frozenset({"bet", "same_bet"})
ALLOWANCE_FIELD: Final = "allowance"

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
    "new_table",
    "roads",
    "table_command",
]

TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


async def _known(ctx: TablesContext, tid: str) -> str:
    if not await ctx.lobby.has(tid):
        raise no_table(tid)
    return tid


async def _same_currency(ctx: TablesContext, session: Session, tid: str) -> str:
    """``tid`` if it is open and plays in the player's currency: else ``no_table`` or
    ``wrong_currency``."""
    line = await ctx.lobby.line(tid)
    if line is None:
        raise no_table(tid)
    yours = _currency(session)
    if line.get("currency") != yours:
        raise wrong_currency(tid, line.get("currency"), yours)
    return tid


def _currency(session: Session) -> str | None:
    """The player's currency (``None``: play money)."""
    assert session.identity is not None
    return session.identity.currency


async def _joined(ctx: TablesContext, session: Session, tid: str) -> str:
    if tid not in session.tables:
        if ctx.saw_close(tid):  # closed while this command waited (a store read)
            raise no_table(tid)
        await _known(ctx, tid)
        raise Refused("not_joined", "join the table first")
    return tid


def _wallet_session(ctx: TablesContext, session: Session) -> dict[str, Any]:
    """With the operator's seamless wallet, the field that carries the player's session
    at the operator to the table (a bet's, a join's): the table keeps it with the
    wagers, and every wallet call of theirs carries it (docs/wallet.md §3)."""
    if ctx.config.wallet != "seamless" or session.identity is None:
        return {}
    return {WALLET_SESSION_FIELD: session.identity.wallet_session}


def _answer(ctx: Relay, session: Session, mid: Any, table: str | None = None) -> Continuation:
    """The continuation of a plain command: the reply record, as the client's reply.
    A ``not_joined`` from the owner of a ``table`` the connection did join means the
    owner does not know it yet (it took the table over, starting as after a restart,
    before this gateway's join again reached it): the gateway joins it again and the
    client hears ``unavailable``, to retry with the same id once the join is in."""

    def then(reply: ReplyRecord) -> None:
        if reply.error is None:
            ctx.ok(session, mid, **(reply.result or {}))
            return
        moved = reply.error.get("code") == "not_joined" and table in session.tables
        if moved and table is not None and session.identity is not None:
            with contextlib.suppress(ChemmyError):
                fields = {"name": session.identity.name}
                ctx.relay(session, table, "join", None, fields, _unheard)
            ctx.error(session, mid, Refused("unavailable", "the table just moved; try again"))
            return
        ctx.error(session, mid, Refused.from_dict(reply.error))

    return then


def _unheard(reply: ReplyRecord) -> None:
    """(A join again's reply: nothing to tell anyone.)"""


async def bet_checks(ctx: TablesContext, session: Session) -> Allowance | None:
    """A ``bet``'s or ``same_bet``'s checks before it is relayed, in their order: the
    player's time-out or self-exclusion (``player_blocked``), then the reality check and
    their own limits (``bet_allowance``). What they are checked against is read from the
    store on every such command, in one read (``Store.bet_reads``: one round trip, one
    Redis script, kept in process until Redis says a key it read changed:
    ``server.connect.tracking``), so an operator's exclusion, or a reality check due on
    another connection or process, holds everywhere as soon as it is written (on Redis,
    heard: a moment after)."""
    now = play_session.now()
    try:
        reads = await ctx.store.bet_reads(session.player, first_day(now), rule=current_limits)
    except StoreError as exc:
        raise store_refusal(exc) from None
    refuse_restricted(reads.restriction)
    return await bet_allowance(ctx, session, reads, now)


def table_command(kind: str) -> TableHandler:
    """The handler of a table command (``bet``, ``sit``, ``turn``...): it goes to the
    table's owner, and the owner's reply is the client's."""

    async def relay(ctx: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        if kind == "sit":  # (before not_joined: joining would be refused too)
            await _same_currency(ctx, session, fields["table"])
        tid = await _joined(ctx, session, fields["table"])
        args = {k: v for k, v in fields.items() if k != "table"}
        if kind in LIMITED_COMMANDS:  # (a time-out or self-exclusion, then the limits)
            allowance = await bet_checks(ctx, session)
            if allowance is not None:
                args[ALLOWANCE_FIELD] = allowance.nearest
                args[GUARDS_FIELD] = allowance.guards
            args.update(_wallet_session(ctx, session))
        elif kind in BLOCKED_COMMANDS:  # a time-out or self-exclusion: player_blocked
            await refuse_blocked(ctx.store, session.player)
        then = _answer(ctx, session, mid, tid)
        if kind in GUEST_COMMANDS and not session.persisted:
            # A guest not yet stored: the table's owner stores them once the sit (or, at
            # a table that takes bettors without a seat, their first bet: GAME_RULES
            # §5) is allowed (a refused one writes nothing).
            args[GUEST_FIELD] = _guest(ctx, session)
            answer = then

            def then(reply: ReplyRecord) -> None:
                if reply.error is None:
                    session.persisted = True
                answer(reply)

        ctx.relay(session, tid, kind, mid, args, then)

    return relay


#: The commands that store a guest not yet stored, once the table allows them: a seat,
#: and a bettor without a seat's first bet (GAME_RULES §5).
GUEST_COMMANDS: Final = frozenset({"sit", "bet", "same_bet"})


def _guest(ctx: TablesContext, session: Session) -> dict[str, Any]:
    """A guest not yet stored, as the table's owner stores them: their name and the play
    money they get (``--welcome``)."""
    assert session.identity is not None
    return {"name": session.identity.name, "funds": ctx.config.welcome_balance}


async def lobby(ctx: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    yours = _currency(session)
    lines = [line for line in await ctx.lobby.tables() if line.get("currency") == yours]
    ctx.ok(session, mid, tables=lines)


async def join(ctx: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    """Join a table: the reply carries a snapshot, or with ``since`` (a resume) the events
    missed since then, from this process's recent log or else the table's stored log."""
    tid = await _same_currency(ctx, session, fields["table"])
    since = fields.get("since")
    player = session.player

    def then(reply: ReplyRecord) -> None:
        ctx.attended(session, tid, reply.error is None)
        if reply.error is not None:
            ctx.error(session, mid, Refused.from_dict(reply.error))
            return
        result = reply.result or {}
        seq = int(result["seq"])
        if since is None or not 0 <= since <= seq:
            answer(seq, None, result.get("snapshot"))
            return
        missed = [] if since == seq else ctx.hub.since(tid, since)
        if missed is not None and (missed[-1].seq if missed else since) < seq:
            missed = None  # the recent log stops short (this process heard it for a while)
        if missed is not None:
            answer(seq, missed, None)
            return
        # Not in this process's recent log (a restart, a failover): the stored log.
        ctx.background(stored(seq, result.get("snapshot")))

    async def stored(seq: int, snapshot: Any) -> None:
        try:
            found = await ctx.bus.events_after(tid, since or 0)
        except StoreError:
            found = None
        if session.id in ctx.sessions:
            answer(seq, found, snapshot)
        else:  # closed while the stored log was read
            ctx.left_table(session, tid)

    def answer(seq: int, missed: list[Event] | None, snapshot: Any) -> None:
        if missed is not None:
            ctx.ok(session, mid, table=tid, resumed=True, seq=seq)
            for event in missed:
                if event.seq <= seq:
                    ctx.send(session, envelope(tid, view_event(event, player)))
        else:
            if not session.persisted and isinstance(snapshot, dict) and "you" in snapshot:
                # A guest not yet in the store: the play money they will get at their seat.
                money = ctx.config.welcome_balance
                snapshot["you"] = {**snapshot["you"], "balance": money, "available": money}
            ctx.ok(session, mid, table=tid, resumed=False, seq=seq, snapshot=snapshot)
        session.tables.add(tid)
        # Watched again: a notice that a table of this id closed may have come in while
        # this join travelled (the table was closed and created again meanwhile).
        ctx.watch_table(tid)
        ctx.hub.subscribe(tid, Subscriber(session.conn, player, session.fmt), after=seq)

    assert session.identity is not None
    ctx.watch_table(tid)  # this process fans the table's events out from now on
    await ctx.attend(session, tid)  # and hears them before the join goes
    fields = {"name": session.identity.name, **_wallet_session(ctx, session)}
    if not session.persisted:  # (what a guest would have to bet with, without a seat)
        fields[GUEST_FIELD] = _guest(ctx, session)
    try:
        ctx.relay(session, tid, "join", None, fields, then)
    except ChemmyError:
        ctx.attended(session, tid, False)
        raise


async def leave(ctx: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    tid = await _joined(ctx, session, fields["table"])

    def then(reply: ReplyRecord) -> None:
        if reply.error is not None:
            ctx.error(session, mid, Refused.from_dict(reply.error))
            return
        session.tables.discard(tid)
        ctx.hub.unsubscribe(tid, session.conn)
        ctx.unattend(session, tid)
        ctx.ok(session, mid, seq=(reply.result or {}).get("seq"))

    ctx.relay(session, tid, "leave", mid, {}, then)


async def roads(ctx: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    tid = await _known(ctx, fields["table"])
    ctx.relay(session, tid, "roads", None, {}, _answer(ctx, session, mid))


async def chat(ctx: TablesContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    tid = await _joined(ctx, session, fields["table"])
    config = ctx.config
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
    answer = _answer(ctx, session, mid, tid)

    def then(reply: ReplyRecord) -> None:  # (the client's ok says no more than ok)
        answer(reply if reply.error is not None else dataclasses.replace(reply, result={}))

    # Said through the table's owner, as a transient event: in its place among the
    # table's events, to its watchers on every process of a cluster, never stored.
    ctx.relay(session, tid, "chat", mid, {"text": text}, then)


def _operator(session: Session) -> None:
    assert session.identity is not None
    if "operator" not in session.identity.roles:
        raise Refused("not_allowed", "only an operator does that")


async def create_table(
    ctx: TablesContext, session: Session, mid: Any, fields: dict[str, Any]
) -> None:
    _operator(session)
    summary = await new_table(ctx, fields.get("table"), fields.get("options"))
    ctx.ok(session, mid, table=summary)


async def new_table(ctx: TablesContext, table: Any, options: Any) -> dict[str, Any]:
    """Create a table (``table``: its id, or None for the first free ``t<n>``) with
    ``options`` (:class:`TableOptions`' fields): its lobby line. The operators' one way
    to make a table, over the WebSocket (``create_table``) and over HTTP
    (``POST /operator/v1/tables``, ``server.operator.tables``). Raises
    ``bad_message`` (the id), ``table_exists``, ``bad_options``."""
    croupier = ctx.croupier
    taken = {t["table"] for t in await ctx.lobby.tables()}
    tid = table or next(f"t{n}" for n in range(1, len(taken) + 2) if f"t{n}" not in taken)
    if not isinstance(tid, str) or not TABLE_ID.fullmatch(tid):
        raise ProtocolError("bad_message", "a table id is 1-32 letters, digits, - or _")
    if tid in taken:
        raise Refused("table_exists", f"there is already a table {tid!r}")
    if options is not None and not isinstance(options, dict):
        raise Refused("bad_options", "the options are an object")
    try:
        opts = TableOptions.from_dict(dict(options or {}))
    except (OptionsError, TypeError, ValueError) as exc:
        raise Refused("bad_options", str(exc)) from None
    if opts.currency is not None and ctx.config.wallet == "internal":  # as at start (config)
        raise Refused(
            "bad_options",
            f"a table in {opts.currency} needs the operator's money (wallet transfer or "
            "seamless): with the internal wallet all money is play money",
        )
    summary = await croupier.create_table(tid, opts)
    ctx.watch_table(tid)
    return summary


async def close_table(
    ctx: TablesContext, session: Session, mid: Any, fields: dict[str, Any]
) -> None:
    _operator(session)
    tid = await _known(ctx, fields["table"])

    def then(reply: ReplyRecord) -> None:
        if reply.error is not None:
            ctx.error(session, mid, Refused.from_dict(reply.error))
            return
        # (Its ``closed`` event, before this reply, ended the table here.)
        ctx.ok(session, mid, table=tid, closed=True)

    ctx.relay(session, tid, "close", mid, {}, then)
