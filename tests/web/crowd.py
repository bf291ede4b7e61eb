"""A full table for the web table's tests: players over the test kit's protocol client
(tests/kit) beside the browser pages, so that a page can be looked at with 14 seated.

- :class:`Loop` runs the kit's async clients from the sync Playwright tests, in an
  asyncio loop of a thread of its own.
- :class:`Crowd` seats players (long names by default, LONG_NAMES) at a table, bets and
  presses DONE for them, and squeezes for one of them as a player does in a page: a
  style, then bends every SEND interval until the card is open, then the card turned.

Nothing here decides a rule: each step is a command the server may refuse (the test
then fails with the refusal).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from web_helpers import SECRET, ServerProcess, scaled

from tests.kit import Client, open_player

T = TypeVar("T")

#: Thirteen of the longest names a player may have (32 characters at most).
LONG_NAMES = [
    "Maximiliano Fernández-Castellano",
    "Anna-Katharina Lichtenberg-Weiss",
    "Jean-Baptiste Delacroix-Montfort",
    "Oluwaseun Adebayo-Okonkwo Junior",
    "Konstantinos Papadopoulos-Ioanni",
    "Guðrún Sigurðardóttir-Magnússon",
    "Aleksandra Wiśniewska-Kowalczyk",
    "Bartholomew Ravenscroft-Whitmore",
    "Françoise Beaumarchais-Levasseur",
    "Siddharth Venkataraman Iyengar",
    "Ekaterina Vladimirovna Sokolova",
    "Mohammed Abdelrahman Al-Farsi",
    "Wilhelmina Vandenberghe-Janssens",
]
#: The shortest time between two bends a page sends (squeeze.js SEND_MS).
SEND = 0.28


class Loop:
    """An asyncio loop in a thread of its own, for the kit's async clients."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], seconds: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(scaled(seconds))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(scaled(10))
        self.loop.close()


class Crowd:
    """Players seated at ``table`` (seats ``seats``), each with a name of LONG_NAMES."""

    def __init__(
        self, loop: Loop, server: ServerProcess, table: str, seats: list[int], prefix: str
    ) -> None:
        self.loop = loop
        self.table = table
        self.players: dict[str, Client] = {}
        self.seats: dict[str, int] = {}
        loop.run(self._sit(server.ws, seats, prefix), seconds=60)

    async def _sit(self, url: str, seats: list[int], prefix: str) -> None:
        for n, seat in enumerate(seats):
            pid = f"{prefix}{seat}"
            client = await open_player(
                url, pid, secret=SECRET, name=LONG_NAMES[n % len(LONG_NAMES)]
            )
            await client.join(self.table)
            await client.call("sit", table=self.table, seat=seat)
            self.players[pid] = client
            self.seats[pid] = seat

    def at(self, seat: int) -> str:
        """The player in ``seat``."""
        return next(pid for pid, s in self.seats.items() if s == seat)

    def call(self, pid: str, kind: str, **fields: Any) -> dict[str, Any]:
        return self.loop.run(self.players[pid].call(kind, table=self.table, **fields))

    def rpc(self, pid: str, kind: str, **fields: Any) -> dict[str, Any]:
        """A command whose refusal is an answer too (one that came too late)."""
        return self.loop.run(self.players[pid].rpc(kind, table=self.table, **fields))

    def bet_and_done(self, bets: Mapping[str, Mapping[str, int]]) -> None:
        """Each player's chips (player -> area -> amount), then DONE for every one of them."""

        async def go() -> None:
            for pid, areas in bets.items():
                for area, amount in areas.items():
                    await self.players[pid].call("bet", table=self.table, area=area, amount=amount)
            for client in self.players.values():
                await client.call("done", table=self.table)

        self.loop.run(go(), seconds=60)

    def turn_event(self, pid: str, hand: str, seconds: float = 30) -> dict[str, Any]:
        """The ``turn`` event that gives ``hand`` to ``pid``."""
        return self.loop.run(
            self.players[pid].wait_event(
                "turn",
                lambda m: m["data"]["hand"] == hand and m["data"]["turner"] == pid,
                table=self.table,
                timeout=scaled(seconds),
            ),
            seconds=seconds + 5,
        )

    def squeeze(self, pid: str, hand: str, style: str, cards: list[int], seconds: float) -> None:
        """``pid`` squeezes ``hand`` in ``style``: each card bent from 0 to 100 percent
        over ``seconds``, a bend sent every SEND, then turned; the rest tossed."""

        async def go() -> None:
            client = self.players[pid]
            await client.call("squeeze", table=self.table, hand=hand, style=style)
            for card in cards:
                start = time.monotonic()
                percent = 0
                while percent < 100:
                    await asyncio.sleep(SEND)
                    percent = min(100, round((time.monotonic() - start) / seconds * 100))
                    if percent < 100:
                        await client.call(
                            "progress", table=self.table, hand=hand, card=card, percent=percent
                        )
                await client.call("turn", table=self.table, hand=hand, card=card)

        self.loop.run(go(), seconds=seconds * len(cards) + 30)

    def toss(self, pid: str, hand: str) -> None:
        self.call(pid, "toss", hand=hand)

    def close(self) -> None:
        async def go() -> None:
            for client in self.players.values():
                await client.close()

        self.loop.run(go())
