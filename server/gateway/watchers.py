"""Who watches each table at this gateway: the tables whose events this process must hear.

A connection watches a table from the moment its ``join`` is on its way (the gateway
then has the bus listen to the table, ``bus.watch``, before the join is sent) until it
leaves, its join is refused, or it closes. :class:`Watchers` counts them per table and
says when a table has nobody left (the gateway then calls ``bus.unwatch``). A join on
its way and a joined connection are counted apart, so that a refused second join does
not end the watching of a connection already at the table, and a leave that is
answered while a new join waits in the player's line does not end the new one's.
"""

from __future__ import annotations

__all__ = ["Watchers"]


class Watchers:
    """Per table, the connections (session ids) that joined it here or whose join is on
    its way. Each method that can end a table's last watcher returns whether it did."""

    def __init__(self) -> None:
        # table -> session id -> [joined (0 or 1), joins on their way]
        self._at: dict[str, dict[int, list[int]]] = {}
        self._of: dict[int, set[str]] = {}  # session id -> its tables here

    def tables(self) -> set[str]:
        """The tables someone here watches."""
        return set(self._at)

    def watching(self, table: str) -> int:
        """How many connections here watch ``table`` (joined, or joining)."""
        return len(self._at.get(table, ()))

    def joining(self, sid: int, table: str) -> None:
        """Session ``sid`` sends a join for ``table``."""
        entry = self._at.setdefault(table, {}).setdefault(sid, [0, 0])
        entry[1] += 1
        self._of.setdefault(sid, set()).add(table)

    def answered(self, sid: int, table: str, joined: bool) -> bool:
        """``sid``'s join for ``table`` was answered (``joined``: it is at the table now)."""
        entry = self._at.get(table, {}).get(sid)
        if entry is None:
            return False
        entry[1] = max(0, entry[1] - 1)
        if joined:
            entry[0] = 1
        return self._settle(sid, table)

    def left(self, sid: int, table: str) -> bool:
        """``sid`` left ``table`` (or its connection no longer watches it)."""
        entry = self._at.get(table, {}).get(sid)
        if entry is None:
            return False
        entry[0] = 0
        return self._settle(sid, table)

    def gone(self, sid: int) -> list[str]:
        """``sid``'s connection closed: the tables it leaves with nobody watching."""
        emptied = []
        for table in self._of.pop(sid, set()):
            sessions = self._at.get(table)
            if sessions is None:
                continue
            sessions.pop(sid, None)
            if not sessions:
                del self._at[table]
                emptied.append(table)
        return emptied

    def drop(self, table: str) -> None:
        """``table`` closed: nobody watches it."""
        for sid in self._at.pop(table, {}):
            tables = self._of.get(sid)
            if tables is not None:
                tables.discard(table)
                if not tables:
                    del self._of[sid]

    def _settle(self, sid: int, table: str) -> bool:
        sessions = self._at[table]
        joined, on_the_way = sessions[sid]
        if joined or on_the_way:
            return False
        del sessions[sid]
        tables = self._of.get(sid)
        if tables is not None:
            tables.discard(table)
            if not tables:
                del self._of[sid]
        if sessions:
            return False
        del self._at[table]
        return True
