"""The lobby as a gateway sees it: which tables exist, with their summary lines.

In one process the croupier knows every table (:class:`LocalLobby`). In a cluster each
table's owner keeps its summary line in Redis and any gateway reads them all
(:class:`SharedLobby`, cached for a moment so a burst of ``tables`` requests costs one
read). Either way the gateway learns about tables without reading one. Redis that
cannot be read is :class:`~server.store.base.StoreUnavailable` here, as in the store,
so the gateway answers ``store_unavailable`` and the connection lives on.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from server.protocol.errors import StoreUnavailable

if TYPE_CHECKING:
    from server.croupier.cluster import Leases
    from server.croupier.host import Croupier

__all__ = ["Lobby", "LocalLobby", "SharedLobby"]


class Lobby(Protocol):
    async def tables(self) -> list[dict[str, Any]]:
        """Every open table's summary line, in a stable order."""

    async def has(self, table: str) -> bool:
        """Whether ``table`` is open."""

    async def line(self, table: str) -> dict[str, Any] | None:
        """``table``'s summary line (its currency among the rest), or None: not open."""


class LocalLobby:
    """Every table runs in this process."""

    def __init__(self, croupier: Croupier) -> None:
        self.croupier = croupier

    async def tables(self) -> list[dict[str, Any]]:
        return self.croupier.lobby()

    async def has(self, table: str) -> bool:
        return self.croupier.has(table)

    async def line(self, table: str) -> dict[str, Any] | None:
        actor = self.croupier.actors.get(table)
        return None if actor is None else actor.summary()


class SharedLobby:
    """The summary lines every owner keeps in Redis."""

    def __init__(self, leases: Leases, *, fresh_for: float = 0.25) -> None:
        self.leases = leases
        self.fresh_for = fresh_for
        self._cache: dict[str, dict[str, Any]] = {}
        self._read = -1e9

    def stale(self) -> None:
        """Read again next time (a notice said tables changed)."""
        self._read = -1e9

    async def _lines(self) -> dict[str, dict[str, Any]]:
        if time.monotonic() - self._read > self.fresh_for:
            try:
                self._cache = await self.leases.summaries()
            except StoreUnavailable as exc:  # (Redis' errors, translated by Leases)
                raise StoreUnavailable(f"the lobby cannot be read: {exc}") from None
            self._read = time.monotonic()
        return self._cache

    async def tables(self) -> list[dict[str, Any]]:
        lines = await self._lines()
        return [lines[t] for t in sorted(lines, key=_table_order)]

    async def has(self, table: str) -> bool:
        return await self.line(table) is not None

    async def line(self, table: str) -> dict[str, Any] | None:
        found = (await self._lines()).get(table)
        if found is None:
            self.stale()  # created a moment ago elsewhere? look once more
            found = (await self._lines()).get(table)
        return found


def _table_order(table: str) -> tuple[int, str]:
    """t1, t2, ..., t10, then the others by name."""
    return (int(table[1:]), "") if table[:1] == "t" and table[1:].isdigit() else (10**9, table)
