"""Commands and replies as records (server.protocol.records): every kind a gateway sends
and every reply kind an owner answers round-trips through msgpack unchanged, and anything
else is refused with the one documented error."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.protocol.errors import ProtocolError, Refused
from server.protocol.messages import SCHEMAS, TABLE_COMMANDS
from server.protocol.records import (
    GATEWAY_KINDS,
    Address,
    CommandRecord,
    ReplyRecord,
    pack,
    unpack,
)

ADDRESS = Address("gw-1", 17, 42)

# One example of the fields of every table command, as the wire schema has them.
EXAMPLE_FIELDS: dict[str, dict[str, Any]] = {
    "sit": {"seat": 3},
    "stand": {},
    "bet": {"area": "player", "amount": 500},
    "remove_bet": {"area": "banker", "amount": 100},
    "clear_bets": {},
    "same_bet": {},
    "done": {},
    "accept_shoe": {},
    "decline_shoe": {},
    "pass_shoe": {},
    "cut": {"position": 120},
    "contribute": {"commitment": "ab" * 32},
    "squeeze": {"hand": "player", "style": "peek"},
    "turn": {"hand": "banker", "card": 2},
    "toss": {"hand": "player"},
    "progress": {"hand": "player", "card": 1, "percent": 40},
    "join": {"name": "Ann"},
    "leave": {},
    "disconnect": {},
    "roads": {},
    "chat": {"text": "good luck"},
    "close": {},
    "void": {"round_id": "t1-2-3", "reason": "the card reader failed"},
    "pause": {},
    "resume": {},
    "refresh": {},
}


def test_every_relayed_kind_has_an_example() -> None:
    assert set(EXAMPLE_FIELDS) == set(TABLE_COMMANDS) | GATEWAY_KINDS
    for kind in TABLE_COMMANDS:  # the examples use the schema's own field names
        assert set(EXAMPLE_FIELDS[kind]) <= set(SCHEMAS[kind]) - {"table"}


@pytest.mark.parametrize("kind", sorted(EXAMPLE_FIELDS))
@pytest.mark.parametrize("reply_to", [ADDRESS, None, Address("gw", 1, "req-7")])
def test_every_command_kind_round_trips(kind: str, reply_to: Address | None) -> None:
    record = CommandRecord("t1", kind, "ann", "id-1", EXAMPLE_FIELDS[kind], reply_to)
    assert unpack(pack(record)) == record


REPLIES = [
    ReplyRecord.ok(ADDRESS, seq=12, duplicate=False),
    ReplyRecord.ok(ADDRESS, seq=12, duplicate=True),
    ReplyRecord.ok(ADDRESS, table="t1", seq=3, snapshot={"table": "t1", "seats": [], "coup": None}),
    ReplyRecord.ok(ADDRESS, table="t1", roads={"bead": []}, odds=None),
    ReplyRecord.ok(ADDRESS, table="t1", closed=True),
    ReplyRecord.refused(ADDRESS, Refused("busy", "the table is busy; try again")),
    ReplyRecord.refused(Address("gw", 2, None), Refused("not_your_turn", "not yours")),
]


@pytest.mark.parametrize("reply", REPLIES, ids=lambda r: str(r.result or r.error)[:30])
def test_every_reply_kind_round_trips(reply: ReplyRecord) -> None:
    assert unpack(pack(reply)) == reply


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\xc1",
        msgpack.packb([1, 2]),
        msgpack.packb({"t": "other"}),
        msgpack.packb({"t": "cmd", "table": "t1"}),
        msgpack.packb(
            {
                "t": "cmd",
                "table": 1,
                "kind": "bet",
                "player": "a",
                "id": None,
                "fields": {},
                "reply_to": None,
            }
        ),
        msgpack.packb(
            {
                "t": "cmd",
                "table": "t1",
                "kind": "bet",
                "player": "a",
                "id": None,
                "fields": [],
                "reply_to": None,
            }
        ),
        msgpack.packb({"t": "reply", "to": None, "result": None, "error": None}),
        msgpack.packb({"t": "reply", "to": ["gw", True, 1], "result": None, "error": None}),
    ],
)
def test_anything_else_is_a_bad_record(raw: bytes) -> None:
    with pytest.raises(ProtocolError) as err:
        unpack(raw)
    assert err.value.code == "bad_record"


@given(st.binary(max_size=64))
def test_any_bytes_unpack_or_raise_the_one_error(raw: bytes) -> None:
    try:
        record = unpack(raw)
    except ProtocolError as err:
        assert err.code == "bad_record"
    else:
        assert isinstance(record, CommandRecord | ReplyRecord)
