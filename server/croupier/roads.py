"""A table's answer to a ``roads`` query: the roads, and between coups the exact odds of
the next coup from what the players know remains in the shoe (the public cards out; never
the burned cards, GAME_RULES §4); and the road its lobby line shows.

The odds take a few ms of numpy: computed off the event loop, once per public
composition, and answered when ready, so the table never waits. It never steps the table
and never changes it: it reads the table it is given and answers through the bus.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from server.bus.base import Bus
from server.engine.odds import exact_odds
from server.protocol.records import Address, ReplyRecord
from server.table import Table, views

__all__ = ["Roads"]

log = logging.getLogger("chemmy.croupier")


class Roads:
    """Answers one table's ``roads`` queries, keeping the odds last computed."""

    def __init__(self, bus: Bus, table_id: str) -> None:
        self.bus = bus
        self.table_id = table_id
        self._odds: tuple[tuple[Any, ...], dict[str, Any] | None] | None = None
        self._lobby: tuple[Table, tuple[int, int], dict[str, Any]] | None = None
        self._background: set[asyncio.Task[None]] = set()

    def lobby(self, table: Table) -> dict[str, Any]:
        """``table``'s road as its lobby line shows it (:func:`views.lobby_road`), made
        again only after a result or a new shoe (a table's results are only appended to,
        and a new shoe starts them again): a cluster's owner makes the line after every
        stored step, to share it when it changed, and the roads were most of it (issue 36)."""
        made_from = (table.shoe_no, len(table.results))
        kept = self._lobby
        if kept is None or kept[0] is not table or kept[1] != made_from:
            kept = self._lobby = (table, made_from, views.lobby_road(table))
        return kept[2]

    def answer(self, table: Table, to: Address) -> None:
        """Answer ``to`` with ``table``'s roads and odds (now, or once computed)."""
        roads = table.roads()
        counts = views.public_composition(table)
        if counts is None or table.shoe is None:
            self.bus.reply(ReplyRecord.ok(to, table=self.table_id, roads=roads, odds=None))
            return
        # Keyed by what the odds are computed from: the public composition (the burn card
        # turned up at the cut changes it before any card is dealt).
        key = (table.shoe_no, *sorted(counts.items()))
        if self._odds is not None and self._odds[0] == key:
            self.bus.reply(ReplyRecord.ok(to, table=self.table_id, roads=roads, odds=self._odds[1]))
            return
        decks, paytable = table.options.decks, table.options.paytable

        async def compute() -> None:
            try:
                odds = _plain(
                    await asyncio.to_thread(exact_odds, decks, counts=counts, paytable=paytable)
                )
            except Exception:
                log.exception(
                    "table %s: odds failed", self.table_id, extra={"table": self.table_id}
                )
                odds = None
            else:
                self._odds = (key, odds)
            self.bus.reply(ReplyRecord.ok(to, table=self.table_id, roads=roads, odds=odds))

        self._spawn(compute())

    def _spawn(self, job: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(job)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _plain(value: Any) -> Any:
    """Odds as plain JSON/msgpack-able data (no tuples of big ints, no numpy scalars)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if k != "exact"}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool | int | str) or value is None:
        return value
    return float(value)
