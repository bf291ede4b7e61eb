"""One vocabulary of commands: every registry is made from one list, and they agree.

The client messages are :data:`server.protocol.messages.SCHEMAS` (the relayed table
commands marked there, :data:`~server.protocol.messages.TABLE_COMMANDS`); the table's
commands are :data:`server.vocabulary.commands.COMMANDS`, each naming itself on the wire
(:data:`~server.vocabulary.commands.WIRE_COMMANDS`). Everything else is made from those two:
the gateway's handlers, the owner's relayed commands, the table's handlers, the bounds
of ``you.actions``. This holds the two lists to each other, field by field.
"""

from __future__ import annotations

import dataclasses

from server.croupier import kinds
from server.gateway.handlers import HANDLERS
from server.protocol.messages import SCHEMAS, TABLE_COMMANDS, parse
from server.table import rules
from server.table.dispatch import HANDLERS as _HANDLERS
from server.table.flow import ENTER as _ENTER
from server.table.flow import NEXT
from server.table.state import Phase
from server.vocabulary import commands as c

#: The table commands the table actor builds itself (with the gateway's bookkeeping).
OWNERS_OWN = {"leave"}


def test_the_table_commands_on_the_wire_are_the_protocols() -> None:
    assert set(c.WIRE_COMMANDS) == TABLE_COMMANDS | OWNERS_OWN
    assert rules.WIRE_COMMANDS is c.WIRE_COMMANDS
    assert {k: v for k, v in c.WIRE_COMMANDS.items() if k in TABLE_COMMANDS} == kinds.WIRE_COMMANDS


def test_a_table_commands_schema_has_the_commands_fields() -> None:
    for kind, cls in c.WIRE_COMMANDS.items():
        fields = {f.name for f in dataclasses.fields(cls)} - {"player", "id"}
        assert set(SCHEMAS[kind]) - {"table"} == fields - c.GATEWAY_FIELDS, kind
        assert c.GATEWAY_FIELDS.isdisjoint(SCHEMAS[kind]), kind
        assert SCHEMAS[kind]["table"] == (str, True), kind
        required = {
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        assert {n for n, (_, req) in SCHEMAS[kind].items() if req} - {"table"} == required, kind


def test_every_message_has_one_handler_and_every_command_its_check_and_do() -> None:
    assert set(HANDLERS) | {"hello", "ping"} == set(SCHEMAS)
    assert set(_HANDLERS) == set(c.COMMANDS)
    named = [getattr(c, n) for n in c.__all__]
    subclasses = {k for k in named if isinstance(k, type) and issubclass(k, c.Command)}
    assert len(c.COMMANDS) == len(set(c.COMMANDS)) and set(c.COMMANDS) == subclasses - {c.Command}
    for cls, handler in _HANDLERS.items():
        assert handler.do.__name__.lstrip("_").startswith("do_"), cls


def test_every_command_is_taken_in_some_phase_and_every_wire_command_has_bounds() -> None:
    taken = set().union(*rules.ALLOWED.values())
    assert taken == set(c.COMMANDS)
    assert set().union(*(kinds for kinds, _ in rules._BOUNDS)) == set(c.WIRE_COMMANDS.values())
    assert rules.CROUPIER_ONLY.isdisjoint(c.WIRE_COMMANDS.values())


def test_a_relayed_message_parses_into_its_tables_command() -> None:
    examples = {"bet": {"area": "tie", "amount": 100}, "cut": {"position": 40}}
    for kind in sorted(TABLE_COMMANDS):
        fields = {
            "sit": {"seat": 2},
            "remove_bet": {"area": "tie"},
            "squeeze": {"hand": "player", "style": "peek"},
            "turn": {"hand": "player", "card": 1},
            "toss": {"hand": "banker"},
            "progress": {"hand": "player", "card": 2, "percent": 40},
            "contribute": {"commitment": "0" * 64},
            **examples,
        }.get(kind, {})
        _, _, checked = parse({"type": kind, "id": 1, "table": "t1", **fields})
        checked.pop("table")
        cmd = kinds.WIRE_COMMANDS[kind](player="ann", id="1", **checked)
        assert type(cmd) is c.WIRE_COMMANDS[kind]


def test_every_phase_but_closed_is_entered_by_one_transition() -> None:
    """flow.NEXT (the state-triggered transitions) names each phase the table moves to
    by itself once, the last always holds, and the table has an entry for each."""
    targets = [phase for _, phase in NEXT]
    assert len(targets) == len(set(targets)) and set(targets) == set(Phase) - {Phase.CLOSED}
    assert set(_ENTER) == set(targets)
    assert NEXT[-1][0](None)  # type: ignore[arg-type]  # otherwise: betting


def test_a_name_no_message_takes_is_refused_however_the_rest_is_given() -> None:
    """A name the schema does not take is refused (``bad_message``) whether the message
    has an ``id`` or not and whether its optional fields are given, null or left out
    (the names it holds are counted, and looked at only when there are too many)."""
    from server.protocol.errors import ProtocolError

    values = {str: "x", int: 1, bool: True, dict: {}}
    for kind in sorted(SCHEMAS):
        schema = SCHEMAS[kind]
        required = {n: values[t] for n, (t, needed) in schema.items() if needed}
        given = {n: values[t] for n, (t, needed) in schema.items() if not needed}
        nulls = dict.fromkeys(given)
        for rest in ({}, {"id": 7}, nulls, {"id": None, **nulls}, given, {"id": "r", **given}):
            message = {"type": kind, **required, **rest}
            assert parse(message)[0] == kind
            try:
                parse({**message, "extra": 1})
            except ProtocolError as err:
                assert (err.code, err.message) == ("bad_message", f"{kind} does not take extra")
            else:
                raise AssertionError(f"{kind} took a name it does not take: {message}")
