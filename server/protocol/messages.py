"""The client messages: their names, fields and types, checked in one place.

Every client message is a map with ``type`` and a client-chosen ``id`` (a string or an
integer, echoed by the reply). :data:`SCHEMAS` is the one list of the messages: the
gateway's handlers (``server.gateway.handlers``) and the relayed table commands
(:data:`TABLE_COMMANDS`) are made from it, and tests/server/test_vocabulary.py holds the
table's own vocabulary to it. :func:`parse` checks a decoded message against
:data:`SCHEMAS` and returns ``(type, id, fields)`` or raises
:class:`~server.protocol.errors.ProtocolError` (a malformed message: ``bad_message``,
``unknown_command``). Whether the move is allowed is the table's business, not this
module's.

Pure: no I/O, no table code, no numpy. Shared by the server and the client (the client
uses the names); another language's generator can load it alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ProtocolError

__all__ = ["SCHEMAS", "TABLE_COMMANDS", "TableSchema", "parse"]

# field -> (type(s), required). ``int`` never accepts a bool; amounts are int only.
_Field = tuple[type | tuple[type, ...], bool]
_TABLE: dict[str, _Field] = {"table": (str, True)}


class TableSchema(dict[str, _Field]):
    """The schema of a table command: a message the gateway relays to the table's owner
    as it is, which makes it the table's command of the same wire name
    (``server.vocabulary.commands.WIRE_COMMANDS``, with these fields but ``table``)."""


def _table_command(**fields: _Field) -> TableSchema:
    return TableSchema(_TABLE, **fields)


SCHEMAS: dict[str, dict[str, _Field]] = {
    "hello": {
        "token": (str, False),
        "guest": (bool, False),
        "name": (str, False),
        "resume": (str, False),
    },
    "ping": {},
    "tables": {},
    "create_table": {"table": (str, False), "options": (dict, False)},
    "close_table": {**_TABLE},
    "join": {**_TABLE, "since": (int, False)},
    "leave": {**_TABLE},
    "sit": _table_command(seat=(int, False)),
    "stand": _table_command(),
    "bet": _table_command(area=(str, True), amount=(int, True)),
    "remove_bet": _table_command(area=(str, True), amount=(int, False)),
    "clear_bets": _table_command(),
    "same_bet": _table_command(),
    "done": _table_command(),
    "accept_shoe": _table_command(),
    "decline_shoe": _table_command(),
    "pass_shoe": _table_command(),
    "cut": _table_command(position=(int, True)),
    "contribute": _table_command(commitment=(str, False), value=(str, False)),
    "squeeze": _table_command(hand=(str, True), style=(str, True)),
    "turn": _table_command(hand=(str, True), card=(int, True)),
    "toss": _table_command(hand=(str, True)),
    "progress": _table_command(hand=(str, True), card=(int, True), percent=(int, True)),
    "chat": {**_TABLE, "text": (str, True)},
    "balance": {},
    "deposit": {"amount": (int, True)},
    "history": {"limit": (int, False)},
    "roads": {**_TABLE},
    "shoe_record": {**_TABLE, "shoe": (int, False)},
    "take_break": {"period": (str, True)},
    "responsible": {},
    "limits": {},
    "set_limit": {"kind": (str, True), "amount": (int, True)},
    "remove_limit": {"kind": (str, True)},
    "reality_ack": {"choice": (str, True)},
}

#: The wire names of the table commands (their schemas are :class:`TableSchema`): a
#: gateway relays these to the table's owner, which turns each into the table's own
#: command (``server.croupier``).
TABLE_COMMANDS: frozenset[str] = frozenset(
    kind for kind, schema in SCHEMAS.items() if isinstance(schema, TableSchema)
)

MAX_ID_LEN = 64


def parse(message: Mapping[str, Any]) -> tuple[str, str | int | None, dict[str, Any]]:
    """Check a decoded client message; return ``(type, id, fields)``."""
    kind = message.get("type")
    if not isinstance(kind, str):
        raise ProtocolError("bad_message", "a message is a map with a string 'type'")
    schema = SCHEMAS.get(kind)
    if schema is None:
        raise ProtocolError("unknown_command", f"there is no command {kind[:40]!r}")
    mid = message.get("id")
    if mid is not None and (
        isinstance(mid, bool)
        or not isinstance(mid, str | int)
        or (isinstance(mid, str) and len(mid) > MAX_ID_LEN)
        or (isinstance(mid, int) and not -(2**53) < mid < 2**53)
    ):
        raise ProtocolError(
            "bad_message", f"'id' is a string of at most {MAX_ID_LEN} characters or an integer"
        )
    fields: dict[str, Any] = {}
    known = 2 if "id" in message else 1  # (the names the message holds that are taken)
    for name, (types, required) in schema.items():
        if name not in message or message[name] is None:
            if required:
                raise ProtocolError("bad_message", f"{kind} needs '{name}'")
            known += name in message
            continue
        value = message[name]
        if isinstance(value, bool) and bool not in _as_tuple(types):
            raise ProtocolError("bad_message", f"'{name}' must be {_type_names(types)}")
        if not isinstance(value, types):
            raise ProtocolError("bad_message", f"'{name}' must be {_type_names(types)}")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**53:
            raise ProtocolError("bad_message", f"'{name}' is out of range")
        if isinstance(value, str) and len(value) > 1000:
            raise ProtocolError("bad_message", f"'{name}' is too long")
        fields[name] = value
    if known + len(fields) < len(message):  # a name it does not take: which?
        _refuse_extra(kind, message, schema)
    return kind, mid, fields


def _refuse_extra(kind: str, message: Mapping[str, Any], schema: Mapping[str, _Field]) -> None:
    """Refuse ``message`` if it holds a name ``kind``'s schema does not take."""
    extra = set(message) - set(schema) - {"type", "id"}
    if extra:
        raise ProtocolError(
            "bad_message", f"{kind} does not take {', '.join(sorted(map(str, extra)))[:80]}"
        )


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _type_names(types: type | tuple[type, ...]) -> str:
    names = {int: "an integer", str: "a string", bool: "true or false", dict: "a map"}
    return " or ".join(names.get(t, t.__name__) for t in _as_tuple(types))
