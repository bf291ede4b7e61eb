"""The bus: how commands reach a table's owner and how its events reach every gateway.

A process plays two parts. As a **gateway** it holds client connections: it submits
:class:`~server.protocol.records.CommandRecord` s for tables and receives the
:class:`~server.protocol.records.ReplyRecord` s addressed to it, and it subscribes to the
events of the tables its clients watch (its :class:`~server.gateway.hub.Hub` then fans them
out, per view and format). As an **owner** it runs table actors (``server.croupier``): it
serves the commands for the tables it owns, replies, and publishes each stored step's
events. :class:`Bus` is the one interface between the two parts (httpcore's shape: one
interface, one implementation per transport, one contract suite in
``tests/server/test_bus.py`` run against each):

- :class:`~server.bus.local.LocalBus`: one process, the default. Calls go straight
  through, synchronously: actor -> hub -> connections, exactly the single-process path.
- a Redis implementation for many processes (pub/sub plus each table's event stream).

The contract every implementation keeps:

- **Commands.** ``submit`` hands a record to the owner of its table, or raises
  :class:`~server.protocol.errors.Refused` when it can tell at once that it cannot
  (``no_table``; ``busy`` when a local owner's queue is full; ``unavailable`` when no
  owner can be reached). Otherwise the owner answers every record that has a
  ``reply_to`` exactly once, through ``reply`` (an error reply when it refuses); the
  reply reaches the handler given to ``on_replies`` on the gateway named in the address.
- **Events.** ``publish`` is called by the owner with a step's events *after* the step
  was stored. A process hears a table's events while it owns the table or *watches*
  it (``watch``, awaited before the first watcher's ``join`` is sent: once it returns,
  every step stored after the ``join`` reached the owner reaches this process, the
  ``join``'s snapshot covering the rest; ``unwatch`` when the last watcher left). A Redis
  owner placing by players publishes a step only while another process may hear it (a
  relayed ``join`` says so, then the process's line of watchers: ``server.bus.audience``;
  a step it kept home is sent late once one does). A handler subscribed to a table it
  hears receives that table's events in
  ``seq`` order, each once, with no gap from the first one it receives. A step's events
  are delivered before the reply to the command that caused them (a reply carries its
  step's ``(table, seq)`` in ``after``).
- **Catch-up.** ``events_after(table, seq)`` returns the stored events after ``seq``, or
  ``None`` when some are no longer retained (the caller then sends a snapshot).
  ``catch_up(table)`` is awaited by a process about to serve a table it took over:
  every stored event its subscribers have not had reaches them first (the last owner
  may have died between storing a step and publishing it), so what it publishes next
  follows without a gap. (A table created again under the id of a closed one numbers
  its events on from the closed one's last seq, so a bus needs to forget nothing.)

A bus never decides a rule and never looks inside an event's data.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from server.protocol.records import CommandRecord, ReplyRecord
from server.vocabulary.events import Event

__all__ = [
    "Bus",
    "BusCounts",
    "CommandHandler",
    "ControlHandler",
    "EventHandler",
    "ReplyHandler",
    "Subscribers",
]

#: (table id, the events of one step, in seq order)
EventHandler = Callable[[str, Sequence[Event]], None]
CommandHandler = Callable[[CommandRecord], None]
ReplyHandler = Callable[[ReplyRecord], None]
#: A cluster notice (``{"kind": "owner" | "tables" | ..., ...}``), as every croupier hears it.
ControlHandler = Callable[[dict[str, Any]], None]


class BusCounts(NamedTuple):
    """What a bus between processes counts for /metrics (docs/operations.md)."""

    relayed: int  # command records relayed to another process
    backfilled: int  # events read back from a table's stream
    received: Mapping[str, int]  # events heard, per table
    listening: int  # tables whose channel this process listens to
    unpublished: int = 0  # steps not published: no other process heard their table


log = logging.getLogger("chemmy.bus")


class Subscribers:
    """Who in this process gets each table's events: the part of ``subscribe`` and
    ``unsubscribe`` every bus shares (subscribing twice delivers once)."""

    def __init__(self) -> None:
        self._by_table: dict[str, list[EventHandler]] = {}

    def add(self, table: str, handler: EventHandler) -> None:
        handlers = self._by_table.setdefault(table, [])
        if handler not in handlers:
            handlers.append(handler)

    def remove(self, table: str, handler: EventHandler) -> None:
        handlers = self._by_table.get(table)
        if handlers and handler in handlers:
            handlers.remove(handler)
            if not handlers:
                del self._by_table[table]

    def deliver(self, table: str, events: Sequence[Event]) -> None:
        """Hand one step's events to each of ``table``'s handlers (a handler may
        unsubscribe while it runs; one that fails must not stop the table or the
        others)."""
        for handler in list(self._by_table.get(table, ())):
            try:
                handler(table, events)
            except Exception:
                log.exception("a subscriber of table %s failed", table, extra={"table": table})


class Bus(Protocol):
    """See the module docstring for the contract."""

    #: This process's name on the bus (the ``gateway`` of the addresses it hands out).
    node: str

    async def start(self) -> None:
        """Connect (a no-op in one process)."""

    async def close(self) -> None:
        """Disconnect; closing twice is harmless."""

    # -- the owner's side --------------------------------------------------------------
    def serve(self, table: str, handler: CommandHandler) -> None:
        """This process owns ``table`` now: its commands go to ``handler``."""

    def unserve(self, table: str) -> None:
        """This process no longer owns ``table``."""

    def publish(self, table: str, events: Sequence[Event]) -> None:
        """A stored step's events, to every subscriber of ``table``."""

    def reply(self, record: ReplyRecord) -> None:
        """An answer, to the gateway that asked."""

    # -- the gateway's side ------------------------------------------------------------
    def submit(self, record: CommandRecord) -> None:
        """Hand ``record`` to its table's owner (see the module docstring)."""

    def on_replies(self, handler: ReplyHandler) -> None:
        """Where the replies addressed to this process go."""

    def subscribe(self, table: str, handler: EventHandler) -> None:
        """Receive ``table``'s events from now on."""

    def unsubscribe(self, table: str, handler: EventHandler) -> None:
        """Stop receiving ``table``'s events."""

    async def watch(self, table: str) -> None:
        """Hear ``table``'s events from now on (clients of this process watch it): when
        this returns, every step stored from then on reaches this process's handlers."""

    def unwatch(self, table: str) -> None:
        """Nobody here watches ``table`` any more: stop hearing its events (unless this
        process owns it)."""

    async def events_after(self, table: str, seq: int) -> list[Event] | None:
        """The stored events of ``table`` after ``seq``, or None if some are gone."""

    async def catch_up(self, table: str) -> None:
        """Deliver the stored events of ``table`` this process's subscribers missed
        (before serving a table taken over from another process)."""

    # -- the process's side: readiness, the cluster's notices, counters ------------------
    def not_ready(self) -> str | None:
        """Why this process cannot serve through the bus now (``/ready``'s reason:
        ``"bus unreachable"``, ``"redis not answering"``), or None (always, in one
        process)."""

    def on_control(self, handler: ControlHandler) -> None:
        """Where the cluster's notices go (one process has none: never called)."""

    def control(self, notice: dict[str, Any]) -> None:
        """Tell every process of the cluster (this one too) ``notice``; nobody else to
        tell in one process (a no-op)."""

    def counts(self) -> BusCounts | None:
        """The counters /metrics shows for a bus between processes (None: one process,
        nothing relayed)."""
