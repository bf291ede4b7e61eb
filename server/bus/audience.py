"""Whether a table's steps must go out on Redis: another process hears the table (issue 36).

An owner publishes each stored step's events on the table's channel for the other
processes whose clients watch it (``server.bus.redis``). Under placement by players
(``placement = "players"``, the shape deploy/ ships: a load balancer that routes a table's
connections to one process, and tables placed where their watchers are) most tables'
watchers are all on their owner: the ``SPUBLISH`` of every step, a bend's too, reaches
nobody. It was a tenth of a routed cluster's Redis commands and a round trip a step.

So an owner with an :class:`Audience` publishes a table's step only while another process
may hear it:

- **the members' lines**: every process placing by players publishes how many of its
  connections watch each table (``chemmy:watching``, written and read with the owners by
  ``server.croupier.cluster`` every 2 s, at rest or not); a table another member's line lists is heard
  there, and a live member with no line at all (a process placing by hash during the
  switch to players, one of a version before the lines, one whose line was dropped
  while it was away) hears every table;
- **a mark**, for :data:`HOLD` seconds: set when a command for the table comes from
  another process (a watcher's ``join`` is relayed to the owner once that process's
  subscription is confirmed, so the join's own step and every one after it go out), and
  when this process starts serving the table (the previous owner's watchers, and a table
  that moved here, are heard until the lines say otherwise). :data:`HOLD` is five reads
  of the lines: by then the watcher's line, written at its next read, has been read here.

What the lines show late costs time, never events: after each read of the lines the owner
sends again the last step it kept home of each table now heard (``server.bus.redis``
``lines_read``), and the process that hears it fills what it missed from the table's
stream (events are stored; pub/sub only carries them). Under placement by hash
there is no :class:`Audience`: every step goes out.

This module never decides a rule and never looks inside an event's data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from server.vocabulary.events import Event

__all__ = ["HOLD", "Audience"]

#: Seconds a mark keeps a table's steps going out (five reads of the members' lines,
#: ``server.croupier.cluster.OWNERS_EVERY``, 2 s: a watcher's line is written at its next
#: read and read here at this process's next).
HOLD = 10.0


class Audience:
    """One owner's view of which of its tables other processes hear (see the module
    docstring), from the members' lines as last :meth:`read`."""

    def __init__(self, node: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.node = node
        self._clock = clock
        self._marks: dict[str, float] = {}  # table -> when it was last marked
        self._elsewhere: frozenset[str] = frozenset()
        self._everything = False  # a member with no line: it may hear any table
        self._kept: dict[str, list[Event]] = {}  # table -> the last step kept home (stored)

    def read(self, lines: Mapping[str, Mapping[str, int] | None]) -> None:
        """The members' lines were read: every live member's watchers a table, ``None``
        for one with no line (this process's own left out here)."""
        others = [counts for member, counts in lines.items() if member != self.node]
        self._everything = any(counts is None for counts in others)
        self._elsewhere = frozenset(
            table for counts in others if counts for table, count in counts.items() if count > 0
        )

    def mark(self, table: str) -> None:
        """Another process may hear ``table`` now (a command came from it; this process
        began to serve it): its steps go out for :data:`HOLD` seconds at least."""
        self._marks[table] = self._clock()

    def heard(self, table: str) -> bool:
        """Whether ``table``'s next step must be published on Redis."""
        marked = self._marks.get(table)
        if marked is not None:
            if self._clock() - marked < HOLD:
                return True
            del self._marks[table]
        return self._everything or table in self._elsewhere

    def goes_out(self, table: str, events: Sequence[Event], subscribed: bool = False) -> bool:
        """Whether a step of ``table`` is published (``subscribed``: this process still
        listens to the table's channel, waiting for its own first step to come back, so
        it is). One that is not is kept, its stored events, until one that is."""
        if subscribed or self.heard(table):
            self._kept.pop(table, None)
            return True
        stored = [e for e in events if not e.transient]  # (a bend is never sent late)
        if stored:
            self._kept[table] = stored
        return False

    def due(self) -> list[tuple[str, list[Event]]]:
        """After a read of the lines: the steps kept home of the tables now heard (each
        once), to be published late; whoever hears one fills what it missed first."""
        out = [(table, events) for table, events in self._kept.items() if self.heard(table)]
        for table, _events in out:
            del self._kept[table]
        return out

    def forget(self, table: str) -> None:
        """This process no longer serves ``table``."""
        self._kept.pop(table, None)
        self._marks.pop(table, None)
