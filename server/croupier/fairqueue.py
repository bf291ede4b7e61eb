"""A table's command queue that is fair to its senders.

One queue for everyone let a flood fill it: sixteen addresses, each with its share of
places at the gateway (``server.limits.local.Lines``), held all 256 places and another
player's ``bet`` was answered ``busy``. Here each sender (a client address; a command's
``origin``) has a line of its own, and the lines are served in turn, one command each, so
a player waits behind at most one command of each other sender, however many commands
those senders queued. When the queue is full, the longest line gives up its newest
command to make room (it is answered ``busy``: its own sender's flood is what costs),
unless the newcomer's line is itself the longest, whose command is then refused.

This is "longest queue drop" with round-robin service (the shape of fair queueing that
fq_codel and Redis's client output limits use): it keeps no clock and no weights. The
order of one sender's commands is kept. Nothing here knows a command; items are opaque.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

__all__ = ["FairQueue", "QueueClosed", "QueueFull"]

T = TypeVar("T")


class QueueFull(Exception):
    """The queue is full and the newcomer's own line is the longest."""


class QueueClosed(Exception):
    """The queue was closed: it takes nothing more."""


class FairQueue(Generic[T]):
    """At most ``size`` items in lines by sender, served in turn (see the module)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a queue holds at least one item")
        self.size = size
        self._lines: dict[str, deque[T]] = {}
        self._turns: deque[str] = deque()  # senders with items, in serving order
        self._count = 0
        self._closed = False
        #: The one consumer's wait (:meth:`get`), woken by :meth:`put` and :meth:`close`.
        self._waiter: asyncio.Future[None] | None = None

    def __len__(self) -> int:
        return self._count

    def empty(self) -> bool:
        return self._count == 0

    def put(self, sender: str, item: T) -> T | None:
        """Queue ``item`` in ``sender``'s line. Returns the item pushed out to make room
        (the newest of the longest line: the caller answers it ``busy``), or None.
        Raises :class:`QueueFull` when ``sender``'s own line is the longest, and
        :class:`QueueClosed` once closed."""
        if self._closed:
            raise QueueClosed
        pushed: T | None = None
        if self._count >= self.size:
            longest = max(self._lines, key=lambda k: len(self._lines[k]))
            mine = len(self._lines.get(sender, ()))
            if len(self._lines[longest]) <= mine + 1:
                raise QueueFull
            pushed = self._lines[longest].pop()
            self._count -= 1
            if not self._lines[longest]:
                del self._lines[longest]
                self._turns.remove(longest)
        line = self._lines.get(sender)
        if line is None:
            line = self._lines[sender] = deque()
            self._turns.append(sender)
        line.append(item)
        self._count += 1
        self._wake()
        return pushed

    def get_nowait(self) -> T:
        """The next item: the first of the line whose turn it is. IndexError if empty."""
        if not self._count:
            raise IndexError("the queue is empty")
        sender = self._turns.popleft()
        line = self._lines[sender]
        item = line.popleft()
        self._count -= 1
        if line:
            self._turns.append(sender)  # its next command waits for the others' turns
        else:
            del self._lines[sender]
        return item

    def peek(self) -> T | None:
        """The item :meth:`get_nowait` would give next, left where it is (None: empty)."""
        if not self._count:
            return None
        return self._lines[self._turns[0]][0]

    async def get(self, timeout: float | None = None) -> T | None:
        """The next item, waiting for one; None once :meth:`close` d and empty. With
        ``timeout`` (seconds, from now), :class:`TimeoutError` when none came by then.

        One consumer (a table's actor) waits at a time. The wait is one future and, with
        a timeout, one timer handle: a table waits like this before every command, so it
        is not an ``asyncio.timeout`` block around an ``asyncio.Event`` (a context
        manager, a timer, the task's cancel bookkeeping and a future each time), and an
        item already queued is taken with no wait at all."""
        while not self._count:
            if self._closed:
                return None
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = None if timeout is None else loop.call_later(timeout, _expire, waiter)
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
            if waiter.result() is _EXPIRED and not self._count and not self._closed:
                raise TimeoutError
        return self.get_nowait()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        """Take nothing more: :meth:`get` returns None once the queue is empty (the
        items already queued are served first)."""
        self._closed = True
        self._wake()


#: What a timed-out wait's future holds (:meth:`FairQueue.get`).
_EXPIRED: object = object()


def _expire(waiter: asyncio.Future[object]) -> None:
    if not waiter.done():
        waiter.set_result(_EXPIRED)
