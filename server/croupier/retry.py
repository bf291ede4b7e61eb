"""Trying a table's write again after the store (or the table's queue) could not take it:
one growing wait, written once, for every loop of the croupier that must not give up.

The wait starts at :data:`BACKOFF_FIRST` and doubles up to :data:`BACKOFF_MAX`: a store
that is down (Redis restarting, docs/operations.md §7) is not hammered in a tight loop,
and one that is back is tried again within seconds.

It never decides what to try or whether a failure is final: the caller names the errors
that mean "not yet" and when to stop; every other error goes up as it came.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["BACKOFF_FIRST", "BACKOFF_MAX", "backoff", "retrying"]

log = logging.getLogger("chemmy.croupier")

#: The first and the longest wait before the store is tried again.
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 10.0

T = TypeVar("T")


def backoff(failures: int) -> float:
    """The wait (seconds) after ``failures`` failed tries in a row (at least one)."""
    return min(BACKOFF_MAX, BACKOFF_FIRST * 2.0 ** min(failures - 1, 30))


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    *,
    errors: type[Exception] | tuple[type[Exception], ...],
    what: str,
    table_id: str,
    going_on: Callable[[], bool] = lambda: True,
) -> T | None:
    """``attempt()``'s result, trying again after :func:`backoff` while it raises one of
    ``errors`` (each failure logged: ``what`` says what is not done yet); None once
    ``going_on()`` is false before a try (the table moved on: nothing left to do)."""
    failures = 0
    while going_on():
        try:
            return await attempt()
        except errors as exc:
            log.warning("table %s: %s yet (%s)", table_id, what, exc)
        failures += 1
        await asyncio.sleep(backoff(failures))
    return None
