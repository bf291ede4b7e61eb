"""Commands and replies as records: what travels between a gateway and a table's owner.

A gateway (``server.gateway``) never holds a table and never hands the table side a Python
closure. It sends a :class:`CommandRecord` — the command in its wire form, the table,
the authenticated player and a reply :class:`Address` — and the table's owner
(``server.croupier``) answers with a :class:`ReplyRecord` addressed back to it. Both are
plain data that encode to msgpack (:func:`pack` / :func:`unpack`), so the same records
cross a process boundary over the bus (``server.bus``) or stay in one process.

Record kinds are the wire names of the table commands (``bet``, ``sit``, ``turn``...)
plus the ones a gateway sends on a client's behalf:

- ``join`` (fields ``name``): the player joins, or comes back (decided by the table);
  the reply carries the joiner's snapshot;
- ``leave``: the player leaves the table;
- ``disconnect``: the player's last connection to the table went away (the table
  decides: a seat is held for the grace period, a spectator leaves); no reply;
- ``roads``: the table's roads and the public composition of what remains in the shoe
  (no change to the table);
- ``close``: the operator closes the table;
- ``void`` (fields ``round_id``, ``reason``): the operator voids the table's current
  round (refused ``not_found``, ``already_settled``); ``pause``, ``resume``: the
  operator pauses the table (no new coup) or resumes it.

This module is pure: no I/O, no table code, no numpy. A client or a generator in
another language can load it alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import msgpack

from server.protocol.errors import ChemmyError, ProtocolError

__all__ = [
    "GATEWAY_KINDS",
    "Address",
    "CommandRecord",
    "ReplyRecord",
    "pack",
    "unpack",
]

#: Record kinds a gateway sends on a client's behalf, besides the table commands.
GATEWAY_KINDS: Final = frozenset(
    {"join", "leave", "disconnect", "roads", "chat", "close", "void", "pause", "resume", "refresh"}
)

RequestId = str | int | None


@dataclass(frozen=True, slots=True)
class Address:
    """Where a reply goes: a gateway (process), one of its connections, the request id."""

    gateway: str
    conn: int
    request: RequestId = None


@dataclass(frozen=True, slots=True)
class CommandRecord:
    """One command for one table, in wire form, from an authenticated player."""

    table: str
    kind: str
    player: str
    id: RequestId = None
    fields: dict[str, Any] = field(default_factory=dict)
    reply_to: Address | None = None
    #: Whose the command is, for the table's queue to be fair to (the client's address;
    #: the player when empty): each origin has its own line there, served in turn.
    origin: str = ""

    def to_wire(self) -> dict[str, Any]:
        return {
            "t": "cmd",
            "table": self.table,
            "kind": self.kind,
            "player": self.player,
            "id": self.id,
            "fields": self.fields,
            "reply_to": _address_out(self.reply_to),
            "origin": self.origin,
        }


@dataclass(frozen=True, slots=True)
class ReplyRecord:
    """The owner's answer: ``result`` when ``error`` is None, else the error's code and
    message (and details). ``result`` holds what the asker needs (``seq``, ``duplicate``, a joiner's
    snapshot...)."""

    to: Address
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: ``(table, seq)`` of the stored step that answered the command: its gateway hands
    #: the reply on only once it has delivered that table's events up to ``seq`` (if it
    #: listens to the table), so a step's events always come before its reply.
    after: tuple[str, int] | None = None

    @classmethod
    def ok(cls, to: Address, **result: Any) -> ReplyRecord:
        return cls(to, result=result)

    @classmethod
    def refused(cls, to: Address, err: ChemmyError) -> ReplyRecord:
        return cls(to, error=err.to_dict())

    def answering(self, table: str, seq: int) -> ReplyRecord:
        """This reply, to be handed on after ``table``'s step ``seq`` (:attr:`after`):
        ``dataclasses.replace`` made the same at several times the cost, every command."""
        return ReplyRecord(to=self.to, result=self.result, error=self.error, after=(table, seq))

    def to_wire(self) -> dict[str, Any]:
        return {
            "t": "reply",
            "to": _address_out(self.to),
            "result": self.result,
            "error": self.error,
            "after": None if self.after is None else list(self.after),
        }


def _address_out(address: Address | None) -> list[Any] | None:
    return None if address is None else [address.gateway, address.conn, address.request]


def _address_in(value: Any) -> Address | None:
    if value is None:
        return None
    if not isinstance(value, list | tuple) or len(value) != 3:
        raise ProtocolError("bad_record", "an address is [gateway, connection, request]")
    gateway, conn, request = value
    if not isinstance(gateway, str) or not isinstance(conn, int) or isinstance(conn, bool):
        raise ProtocolError("bad_record", "an address is [gateway, connection, request]")
    if request is not None and (isinstance(request, bool) or not isinstance(request, str | int)):
        raise ProtocolError("bad_record", "a request id is a string or an integer")
    return Address(gateway, conn, request)


def _after_in(value: Any) -> tuple[str, int] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not isinstance(value[0], str)
        or not isinstance(value[1], int)
        or isinstance(value[1], bool)
    ):
        raise ProtocolError("bad_record", "a reply's after is [table, seq]")
    return (value[0], value[1])


def pack(record: CommandRecord | ReplyRecord) -> bytes:
    """A record as msgpack bytes."""
    out: bytes = msgpack.packb(record.to_wire(), use_bin_type=True)
    return out


def unpack(data: bytes) -> CommandRecord | ReplyRecord:
    """The record :func:`pack` made; :class:`ProtocolError` (``bad_record``) for anything
    else."""
    try:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except Exception as exc:
        raise ProtocolError("bad_record", f"not a record: {type(exc).__name__}") from None
    if not isinstance(raw, dict):
        raise ProtocolError("bad_record", "a record is a map")
    try:
        if raw.get("t") == "cmd":
            fields = raw["fields"]
            if not isinstance(fields, dict):
                raise ProtocolError("bad_record", "a command's fields are a map")
            table, kind, player = raw["table"], raw["kind"], raw["player"]
            origin = raw.get("origin", "")
            if not all(isinstance(v, str) for v in (table, kind, player, origin)):
                raise ProtocolError("bad_record", "table, kind, player and origin are strings")
            return CommandRecord(
                table, kind, player, raw["id"], fields, _address_in(raw["reply_to"]), origin
            )
        if raw.get("t") == "reply":
            to = _address_in(raw["to"])
            if to is None:
                raise ProtocolError("bad_record", "a reply has an address")
            return ReplyRecord(to, raw["result"], raw["error"], _after_in(raw.get("after")))
    except KeyError as exc:
        raise ProtocolError("bad_record", f"a record lacks {exc.args[0]!r}") from None
    raise ProtocolError("bad_record", "a record is a command or a reply")
