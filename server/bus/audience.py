"""Whether a table's steps must go out on Redis: another process hears the table (issue 36).

An owner publishes each stored step's events on the table's channel for the other
processes whose clients watch it (``server.bus.redis``). Under placement by players
(``placement = "players"``, the shape deploy/ ships: a load balancer that routes a table's
connections to one process, and tables placed where their watchers are) most tables'
watchers are all on their owner: the ``SPUBLISH`` of every step, a bend's too, reaches
nobody. It was a tenth of a routed cluster's Redis commands and a round trip a step.

So an owner with an :class:`Audience` publishes a table's step only while another process
may hear it:

- **the members' lines**: every process publishes how many of its connections watch each
  table (``chemmy:watching``, written and read with the owners every 2 s by
  ``server.croupier.cluster``); a table another member's line lists is heard there;
- **a mark**, for :data:`HOLD` seconds: set when a command for the table comes from
  another process (a watcher's ``join`` is relayed to the owner once that process's
  subscription is confirmed, so the join's own step and every one after it go out), and
  when this process starts serving the table (the previous owner's watchers, and a table
  that moved here, are heard until the lines say otherwise). :data:`HOLD` is five reads of
  the lines: by then the watcher's line, written at its next read, has been read here.

What the lines cannot see at once costs time, never events: a process that stalls past
:data:`HOLD` before its line lists a table it began to watch hears nothing of the table
until its line does; the next step published then shows a gap, which it fills from the
table's stream (``server.bus.redis``: events are stored, pub/sub only carries them).
Under placement by hash there are no lines, and no :class:`Audience`: every step goes out.

This module never decides a rule and never looks inside an event's data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

__all__ = ["HOLD", "Audience"]

#: Seconds a mark keeps a table's steps going out (five reads of the members' lines,
#: ``server.croupier.cluster.OWNERS_EVERY``, 2 s: a watcher's line is written at its next
#: read and read here at this process's next).
HOLD = 10.0

Lines = Mapping[str, Mapping[str, int]]


class Audience:
    """One owner's view of which of its tables other processes hear (see the module
    docstring). ``lines()`` gives every member's watchers a table as last read (this
    process's own line among them, left out here)."""

    def __init__(
        self,
        node: str,
        lines: Callable[[], Lines],
        *,
        hold: float = HOLD,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.node = node
        self._lines = lines
        self._hold = hold
        self._clock = clock
        self._marks: dict[str, float] = {}  # table -> when it was last marked
        self._read: Lines | None = None  # the lines ``_elsewhere`` was made from
        self._elsewhere: frozenset[str] = frozenset()

    def mark(self, table: str) -> None:
        """Another process may hear ``table`` now (a command came from it; this process
        began to serve it): its steps go out for :data:`HOLD` seconds at least."""
        self._marks[table] = self._clock()

    def heard(self, table: str) -> bool:
        """Whether ``table``'s next step must be published on Redis."""
        marked = self._marks.get(table)
        if marked is not None:
            if self._clock() - marked < self._hold:
                return True
            del self._marks[table]
        lines = self._lines()
        if lines is not self._read:  # (a new read: every 2 s at most)
            self._read = lines
            self._elsewhere = frozenset(
                table
                for member, counts in lines.items()
                if member != self.node
                for table, count in counts.items()
                if count > 0
            )
        return table in self._elsewhere
