"""The in-process bus: one process owns every table and serves every client.

Every call goes straight through, synchronously, on the event loop's thread: a submitted
record reaches the owning actor's queue at once (``busy`` is raised to the submitter),
a published step reaches every subscribed handler before ``publish`` returns, and a
reply reaches the gateway's handler before ``reply`` returns. So the single-process
path is exactly actor -> hub -> connections, with nothing serialized or copied, and a
step's events are delivered before its reply because the actor publishes first.

Catch-up reads the store's event log (the events are stored with each step).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from server.protocol.errors import no_table
from server.protocol.records import CommandRecord, ReplyRecord
from server.vocabulary.events import Event

from .base import BusCounts, CommandHandler, ControlHandler, EventHandler, ReplyHandler, Subscribers

__all__ = ["LocalBus"]

log = logging.getLogger("chemmy.bus")

EventSource = Callable[[str, int], Awaitable[list[Event] | None]]


class LocalBus:
    """:class:`~server.bus.base.Bus` within one process."""

    def __init__(self, node: str = "local", events_after: EventSource | None = None) -> None:
        self.node = node
        self._owners: dict[str, CommandHandler] = {}
        self._subscribers = Subscribers()
        self._replies: ReplyHandler | None = None
        self._events_after = events_after

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    # -- owner -------------------------------------------------------------------------
    def serve(self, table: str, handler: CommandHandler) -> None:
        self._owners[table] = handler

    def unserve(self, table: str) -> None:
        self._owners.pop(table, None)

    def publish(self, table: str, events: Sequence[Event]) -> None:
        self._subscribers.deliver(table, events)

    def reply(self, record: ReplyRecord) -> None:
        if record.to.gateway == self.node and self._replies is not None:
            try:
                self._replies(record)
            except Exception:
                log.exception("handling a reply failed")

    # -- gateway -----------------------------------------------------------------------
    def submit(self, record: CommandRecord) -> None:
        owner = self._owners.get(record.table)
        if owner is None:
            raise no_table(record.table)
        owner(record)

    def on_replies(self, handler: ReplyHandler) -> None:
        self._replies = handler

    def subscribe(self, table: str, handler: EventHandler) -> None:
        self._subscribers.add(table, handler)

    def unsubscribe(self, table: str, handler: EventHandler) -> None:
        self._subscribers.remove(table, handler)

    async def watch(self, table: str) -> None:
        return None  # one process hears every table

    def unwatch(self, table: str) -> None:
        return None

    async def events_after(self, table: str, seq: int) -> list[Event] | None:
        if self._events_after is None:
            return None
        return await self._events_after(table, seq)

    async def catch_up(self, table: str) -> None:
        return None  # one process delivers every event it publishes, at once

    # -- one process: always ready, nobody else to tell, nothing relayed ----------------
    def not_ready(self) -> str | None:
        return None

    def on_control(self, handler: ControlHandler) -> None:
        pass  # no other process sends notices

    def control(self, notice: dict[str, Any]) -> None:
        pass  # no other process to tell

    def counts(self) -> BusCounts | None:
        return None
