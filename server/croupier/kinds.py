"""What a table actor makes of each record a gateway sends it: the table commands the
protocol relays (:data:`WIRE_COMMANDS`) and, beside them, the gateway's own kinds
(:data:`GATEWAY_COMMANDS`: a join, a leave, a chat line, an operator's void...), each with
the command it becomes, the query it answers without a step, and its reply.

Tables of data and the small functions they name: it never steps the table, never
writes to the store and never decides a rule (a command it builds is still the table's to
refuse). ``tests/server/test_actor_parts.py`` holds both tables to what the gateway sends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from server.ledger.flows import LimitGuard
from server.protocol.errors import Refused
from server.protocol.messages import TABLE_COMMANDS
from server.protocol.records import CommandRecord, ReplyRecord
from server.table import views
from server.vocabulary import commands as c
from server.vocabulary.events import Step

if TYPE_CHECKING:
    from .actor import TableActor

__all__ = [
    "ACTOR_FIELDS",
    "FUNDED",
    "GATEWAY_COMMANDS",
    "GUARDS_FIELD",
    "GUEST_FIELD",
    "WIRE_COMMANDS",
    "GatewayKind",
    "answer",
    "command_of",
    "guards_of",
]

#: The table command each relayed wire message becomes: the table's own vocabulary
#: (``server.vocabulary.commands``) for the names the protocol relays (``TABLE_COMMANDS``;
#: ``join``, ``leave`` and the gateway's other kinds are in :data:`GATEWAY_COMMANDS`).
#: The record's fields are the command's.
WIRE_COMMANDS: dict[str, type[c.Command]] = {
    kind: cls for kind, cls in c.WIRE_COMMANDS.items() if kind in TABLE_COMMANDS
}

#: The field of a ``sit`` (or ``bet``, ``same_bet``: a bettor without a seat's first bet,
#: GAME_RULES §5) record that carries a guest not yet stored (``name``, ``funds``): the
#: owner stores them once the command is allowed. A ``join`` carries it too: the table
#: then decides the guest's bets with the play money they would get (their actions).
GUEST_FIELD = "guest"
#: The field of a ``bet`` or ``same_bet`` record that carries the player's limits as
#: the store must hold them (``[[kind, cap, since], ...]``: ``server.protection.play_limits``):
#: the step's commit is refused ``limit_reached`` if its chips would pass one, so two
#: bets at two tables, or on two processes, can never pass a limit together.
GUARDS_FIELD = "guards"
#: The fields of a record that are the actor's, not the table command's.
ACTOR_FIELDS = frozenset({GUEST_FIELD, GUARDS_FIELD})
#: Commands that put chips down: refused for want of funds, they are tried once more
#: with a fresh balance, and their commit carries the player's limits.
FUNDED = (c.PlaceBet, c.SameBet)

#: A record -> the table command it asks for (None: answered without a step).
Builder = Callable[["TableActor", CommandRecord], c.Command | None]
#: A stored step's reply to its record's sender (at this address).
Answerer = Callable[["TableActor", CommandRecord, Step], ReplyRecord]
#: What a record that asked for no step is answered with (a query).
Query = Callable[["TableActor", CommandRecord], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class GatewayKind:
    """One of the gateway's own record kinds, as the table actor takes it."""

    what: str  # what it is for, in a line
    command: Builder
    answer: Answerer | None = None  # None: the usual ``seq``/``duplicate`` reply
    query: Query | None = None  # run when ``command`` asked for no step


def _rid(record: CommandRecord) -> str | None:
    return None if record.id is None else str(record.id)


def _join(actor: TableActor, record: CommandRecord) -> c.Command:
    if record.reply_to is not None:
        actor.watchers.setdefault(record.player, set()).add(record.reply_to.gateway)
    name = str(record.fields.get("name") or "")
    return c.Join(player=record.player, name=name, rejoin=True)


def _leave(actor: TableActor, record: CommandRecord) -> c.Command:
    actor.watchers.pop(record.player, None)
    return c.Leave(player=record.player, id=_rid(record))


def _disconnect(actor: TableActor, record: CommandRecord) -> c.Command | None:
    # The player's last connection at that gateway went away: gone from the table only
    # when no other gateway still has them (the table decides what that means: a seat is
    # held for the grace period, a spectator leaves).
    player = record.player
    gateways = actor.watchers.get(player, set())
    gateways.discard(str(record.fields.get("gateway", "")))
    if gateways:
        return None
    actor.watchers.pop(player, None)
    return c.Disconnect(player=player) if player in actor.table.players else None


def _void(actor: TableActor, record: CommandRecord) -> c.Command:
    f = record.fields
    return c.VoidRound(round_id=f.get("round_id", ""), reason=f.get("reason", ""))


def _no_step(actor: TableActor, record: CommandRecord) -> None:
    return None


async def _roads(actor: TableActor, record: CommandRecord) -> None:
    if record.reply_to is not None:
        actor.roads.answer(actor.table, record.reply_to)


async def _refresh(actor: TableActor, record: CommandRecord) -> None:
    await actor.refresh([record.player])


def _joined(actor: TableActor, record: CommandRecord, step: Step) -> ReplyRecord:
    assert record.reply_to is not None
    snapshot = views.view(actor.table, record.player)
    return ReplyRecord.ok(record.reply_to, table=actor.table_id, seq=step.seq, snapshot=snapshot)


def _closed(actor: TableActor, record: CommandRecord, step: Step) -> ReplyRecord:
    assert record.reply_to is not None
    return ReplyRecord.ok(record.reply_to, table=actor.table_id, closed=True)


def _voided(actor: TableActor, record: CommandRecord, step: Step) -> ReplyRecord:
    assert record.reply_to is not None
    rid = record.fields.get("round_id")
    return ReplyRecord.ok(
        record.reply_to, table=actor.table_id, round_id=rid, voided=True, seq=step.seq
    )


def _paused(actor: TableActor, record: CommandRecord, step: Step) -> ReplyRecord:
    assert record.reply_to is not None
    table = actor.table
    return ReplyRecord.ok(
        record.reply_to, table=actor.table_id, paused=table.paused, phase=table.phase.value
    )


#: The gateway's own record kinds (``server.protocol.records.GATEWAY_KINDS``), beside the
#: relayed table commands of :data:`WIRE_COMMANDS`: what each becomes at the table.
GATEWAY_COMMANDS: dict[str, GatewayKind] = {
    "join": GatewayKind("a player watches the table (again)", _join, _joined),
    "leave": GatewayKind("a player stops watching (a seat is given up)", _leave),
    "disconnect": GatewayKind("a gateway lost the player's last connection", _disconnect),
    "chat": GatewayKind(
        "a chat line (no id: not a table command to retry)",
        lambda a, r: c.Chat(player=r.player, text=str(r.fields.get("text", ""))),
    ),
    "close": GatewayKind("an operator closes the table", lambda a, r: c.CloseTable(), _closed),
    "void": GatewayKind("an operator voids the table's current round", _void, _voided),
    "pause": GatewayKind("an operator pauses the table", lambda a, r: c.Pause(), _paused),
    "resume": GatewayKind("an operator resumes the table", lambda a, r: c.Resume(), _paused),
    "roads": GatewayKind("the roads and the next coup's odds", _no_step, query=_roads),
    "refresh": GatewayKind(
        "the player's balance moved elsewhere: read it afresh", _no_step, query=_refresh
    ),
}


def command_of(actor: TableActor, record: CommandRecord) -> c.Command | None:
    """The table command a record asks for (None: answered without a step)."""
    kind = record.kind
    cls = WIRE_COMMANDS.get(kind)
    if cls is not None:
        fields = {k: v for k, v in record.fields.items() if k not in ACTOR_FIELDS}
        return cls(player=record.player, id=_rid(record), **fields)
    own = GATEWAY_COMMANDS.get(kind)
    if own is None:
        raise Refused("unknown_command", f"the table does not take {kind[:40]!r}")
    return own.command(actor, record)


def guards_of(cmd: c.Command, record: CommandRecord | None) -> list[LimitGuard]:
    """The limits a bet's record carries for its commit (:data:`GUARDS_FIELD`)."""
    if record is None or not isinstance(cmd, FUNDED):
        return []
    found = record.fields.get(GUARDS_FIELD) or []
    return [LimitGuard(record.player, str(k), int(cap), str(since)) for k, cap, since in found]


def answer(actor: TableActor, record: CommandRecord, step: Step) -> ReplyRecord | None:
    """The reply to ``record``'s sender for its stored ``step`` (None: no reply asked)."""
    to = record.reply_to
    if to is None:
        return None
    own = GATEWAY_COMMANDS.get(record.kind)
    if own is not None and own.answer is not None:
        return own.answer(actor, record, step)
    return ReplyRecord.ok(to, seq=step.seq, duplicate=step.duplicate)
