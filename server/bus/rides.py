"""Replies that ride on their step's events over Redis (``server.bus.redis``, issue 36).

A command relayed to its table's owner is answered after the owner stored its step and
published the step's events on the table's channel. When the gateway that relayed it
hears that channel (clients of its own watch the table: a seated player always does),
the reply need not be a ``PUBLISH`` of its own to the gateway's channel: it goes in the
events' message, and the gateway hands it on once those events are delivered. That is
one Redis command and one pub/sub message read fewer per relayed command with events
(about a third of a cluster's ``PUBLISH``es at a casino's evening).

- The gateway marks a relayed command it may be answered that way (:func:`relay_data`:
  its map's last pair, ``"rides": True``; a process from before it ignores the key and
  replies as before), only while Redis confirmed its subscription to the table, and from
  then keeps the subscription (:class:`Awaited`) until the reply came or
  :data:`RIDE_MAX` passed: a reply cannot be lost because its gateway stopped hearing the
  table meanwhile.
- The owner puts the reply in the message of its step (:class:`StepMessage`) while that
  message still waits in its outbox (the reply follows its step's ``publish`` at once),
  and sends it on the gateway's channel as before otherwise.

This module never decides a rule and never looks inside an event's data.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Sequence
from typing import Any

import msgpack

from server.protocol.records import Address, CommandRecord
from server.vocabulary.events import Event

from .channels import event_channel

__all__ = ["RIDE_MAX", "Awaited", "Riders", "StepMessage", "publisher", "relay_data", "unpack_step"]

#: The relayed command's last pair, ``"rides": True``, as msgpack writes it (a str key of
#: 5 bytes, then true). A map whose last value is a string cannot end so: 0xc3 only starts
#: a UTF-8 character.
_FLAG = b"\xa5rides\xc3"
#: Seconds a gateway keeps hearing a table for a reply that may ride there (above the
#: gateway's own wait for a reply: a command answered later has been given up on).
RIDE_MAX = 30.0
#: Marked commands an owner remembers at most (their replies normally come at once).
REMEMBERED = 10_000


def relay_data(record: CommandRecord, rides: bool) -> bytes:
    """A relayed command's bytes; ``rides``: its reply may come in its step's message."""
    wire = record.to_wire()
    if rides:
        wire["rides"] = True
    out: bytes = msgpack.packb(wire, use_bin_type=True)
    return out


class Riders:
    """An owner's relayed commands whose gateways hear their tables (:func:`relay_data`):
    their replies may ride on their steps' messages."""

    def __init__(self) -> None:
        self._tables: dict[Address, str] = {}

    def remember(self, record: CommandRecord, data: bytes) -> None:
        if record.reply_to is not None and data.endswith(_FLAG):
            if len(self._tables) >= REMEMBERED:
                self._tables.clear()  # (commands never answered: forgotten, never wrong)
            self._tables[record.reply_to] = record.table

    def take(self, address: Address) -> str | None:
        """The table of the command ``address`` answers, if its reply may ride."""
        return self._tables.pop(address, None)


#: An array's header (its first byte) -> its length in bytes: a fixarray, array 16, 32.
_ARRAY = {**dict.fromkeys(range(0x90, 0xA0), 1), 0xDC: 3, 0xDD: 5}
#: A string's header past its first byte -> (its length's bytes): str 8, 16, 32.
_STR = {0xD9: 1, 0xDA: 2, 0xDB: 4}


def publisher(data: bytes) -> str:
    """The process that published an events message (read without decoding the rest):
    its first element, a string, read off the bytes (issue 36: a ``msgpack.Unpacker``
    made for it took about 40,000 instructions, zeroing its stack, at every step a
    process heard); anything else as msgpack reads it."""
    at = _ARRAY.get(data[0], 0) if data else 0
    if at and len(data) > at:
        head = data[at]
        if 0xA0 <= head <= 0xBF:
            start, size = at + 1, head & 0x1F
        elif head in _STR:
            width = _STR[head]
            start = at + 1 + width
            size = int.from_bytes(data[at + 1 : start], "big")
        else:
            start, size = 0, -1
        if size >= 0 and start + size <= len(data):
            return data[start : start + size].decode()
    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(data)
    unpacker.read_array_header()
    return str(unpacker.unpack())


def unpack_step(data: bytes) -> tuple[str, list[Event], float, list[list[Any]]]:
    """A step's message: its table, events, when it was sent, and the replies riding on it."""
    _node, table, at, body, *riding = msgpack.unpackb(data, raw=False)
    events = [Event(int(s), str(k), d, p, bool(t)) for s, k, d, p, *t in body]
    return str(table), events, float(at or 0.0), riding[0] if riding else []


class StepMessage:
    """A step's events waiting in the owner's outbox, packed when the writer sends them
    (``[node, table, at, events]``, and ``[gateway, reply]`` pairs after them when replies
    ride on it), so that replies made after the ``publish`` can still go in."""

    __slots__ = ("at", "channel", "events", "node", "replies", "sent", "table", "top")

    def __init__(self, table: str, events: Sequence[Event], node: str) -> None:
        self.channel, self.table, self.events, self.node = event_channel(table), table, events, node
        self.at = time.time()
        self.top = max(e.seq for e in events)
        self.replies: list[tuple[str, bytes]] = []
        self.sent = False

    def packed(self) -> tuple[str, bytes]:
        self.sent = True
        body = [
            [e.seq, e.kind, e.data, e.private, *([True] if e.transient else ())]
            for e in self.events
        ]
        message = [self.node, self.table, self.at, body]
        if self.replies:
            message.append([list(pair) for pair in self.replies])
        out: bytes = msgpack.packb(message, use_bin_type=True)
        return self.channel, out


class Awaited:
    """A gateway's relayed commands whose replies may ride on a table's events: while any
    is awaited, the table's channel is kept (see the module docstring)."""

    def __init__(self) -> None:
        self._tables: dict[Address, tuple[str, float]] = {}  # oldest first
        self._count: collections.Counter[str] = collections.Counter()

    def add(self, address: Address, table: str) -> list[str]:
        """Await ``address``'s reply on ``table``; the tables no longer held (their
        oldest replies waited past :data:`RIDE_MAX`)."""
        now = time.monotonic()
        freed = self.expire(now)
        if address not in self._tables:
            self._tables[address] = (table, now)
            self._count[table] += 1
        return freed

    def done(self, address: Address) -> str | None:
        """``address``'s reply came: its table, if nothing else holds it now."""
        entry = self._tables.pop(address, None)
        return None if entry is None else self._release(entry[0])

    def holds(self, table: str) -> bool:
        return self._count[table] > 0 if table in self._count else False

    def _release(self, table: str) -> str | None:
        self._count[table] -= 1
        if self._count[table] > 0:
            return None
        del self._count[table]
        return table

    def expire(self, now: float) -> list[str]:
        """Forget the replies awaited past :data:`RIDE_MAX` (their owner died or lost the
        table, the gateway timed the command out); the tables no longer held."""
        freed: list[str] = []
        while self._tables:
            address, (table, since) = next(iter(self._tables.items()))
            if now - since < RIDE_MAX:
                break
            del self._tables[address]
            if self._release(table) is not None:
                freed.append(table)
        return freed
