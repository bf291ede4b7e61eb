"""A ``bet``'s store reads before it is relayed (issue 23: they go to the store
together, ``server.net.tables._bet_checks``): the refusals stay those of the checks in
their order (the restriction first, then the reality check, then the limits), a reality
check that cannot be read refuses the bet (fail closed), and a read that was not needed
never leaves an unretrieved failure or a pending task behind."""

from __future__ import annotations

import asyncio
import gc
import time
from types import SimpleNamespace
from typing import Any

import pytest

from server.net.session import PlayClock
from server.net.tables import _bet_checks
from server.protocol.errors import Refused
from server.store.base import StoreUnavailable


class Reads:
    """The reads, each answered after ``delay`` seconds, or failing: the restriction,
    the limits and the play session (``play``; a reality check due or not)."""

    def __init__(self, restriction: Any, limits: Any, delay: float = 0.0, play: Any = None) -> None:
        self.restriction, self.limits, self.delay = restriction, limits, delay
        self.play = play if play is not None else played(due=False)
        self.asked: list[str] = []
        self.asked_by_then: list[str] = []  # the reads asked when the restriction's answered

    async def _answer(self, value: Any) -> Any:
        await asyncio.sleep(self.delay)
        if isinstance(value, BaseException):
            raise value
        return value

    async def player_restriction(self, player: str) -> Any:
        self.asked.append("restriction")
        await asyncio.sleep(self.delay)  # (answered after the other reads)
        self.asked_by_then = list(self.asked)
        return await self._answer(self.restriction)

    async def player_limits(self, player: str) -> Any:
        self.asked.append("limits")
        return await self._answer(self.limits)

    async def play_session(self, player: str) -> Any:
        self.asked.append("play")
        return await self._answer(self.play)


def played(due: bool) -> dict[str, Any]:
    """A stored play session begun a minute ago, its reality check due or not."""
    now = time.time()
    return {
        "started": now - 60,
        "seen": now,
        "every": 60.0,
        "next": now - 1 if due else now + 59,
        "baseline": {"staked": 0, "net": 0},
    }


def _ctx(store: Reads) -> Any:
    return SimpleNamespace(store=store, lobby=None, background=lambda job: job.close())


def _session() -> Any:
    return SimpleNamespace(player="ann", play=PlayClock(60.0), persisted=True)


BLOCK = {"kind": "break", "until": time.time() + 3600}


async def test_no_restriction_and_no_limits_allow_the_bet_both_read_at_once() -> None:
    store = Reads(None, {}, delay=0.01)
    assert await _bet_checks(_ctx(store), _session(), "t1") is None
    assert sorted(store.asked_by_then) == ["limits", "play", "restriction"]  # together


async def test_a_restriction_refuses_first_even_when_the_limits_cannot_be_read() -> None:
    store = Reads(BLOCK, StoreUnavailable("down"), play=played(due=True))
    with pytest.raises(Refused) as caught:
        await _bet_checks(_ctx(store), _session(), "t1")
    assert caught.value.code == "player_blocked"


async def test_a_restriction_refuses_while_the_limits_are_still_read() -> None:
    store = Reads(BLOCK, {})
    store.delay = 0.0

    async def slow_limits(player: str) -> Any:
        await asyncio.sleep(10)

    store.player_limits = slow_limits  # type: ignore[method-assign]
    with pytest.raises(Refused) as caught:
        await asyncio.wait_for(_bet_checks(_ctx(store), _session(), "t1"), 1)
    assert caught.value.code == "player_blocked"
    await asyncio.sleep(0)
    pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert not [t for t in pending if "slow_limits" in repr(t)]  # cancelled, not left


async def test_then_the_reality_check_then_the_limits_store() -> None:
    due = played(due=True)
    with pytest.raises(Refused) as caught:
        await _bet_checks(_ctx(Reads(None, StoreUnavailable("down"), play=due)), _session(), "t1")
    assert caught.value.code == "reality_check_due"
    with pytest.raises(Refused) as caught:
        await _bet_checks(_ctx(Reads(None, StoreUnavailable("down"))), _session(), "t1")
    assert caught.value.code == "store_unavailable"
    with pytest.raises(Refused) as caught:
        await _bet_checks(_ctx(Reads(StoreUnavailable("down"), {})), _session(), "t1")
    assert caught.value.code == "store_unavailable"


async def test_a_play_session_that_cannot_be_read_refuses_the_bet() -> None:
    """Fail closed: with the limits readable (none set) but not the play session, the bet
    is refused store_unavailable, never let through unchecked for a reality check."""
    store = Reads(None, {}, play=StoreUnavailable("down"))
    with pytest.raises(Refused) as caught:
        await _bet_checks(_ctx(store), _session(), "t1")
    assert caught.value.code == "store_unavailable"
    assert await _bet_checks(_ctx(Reads(None, {})), _session(), "t1") is None  # (readable)


async def test_an_unneeded_failed_read_is_retrieved() -> None:
    loop = asyncio.get_running_loop()
    heard: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: heard.append(context))
    try:
        for _ in range(3):
            with pytest.raises(Refused):
                await _bet_checks(
                    _ctx(Reads(BLOCK, StoreUnavailable("down"), 0.01)), _session(), "t1"
                )
        await asyncio.sleep(0)
        gc.collect()
    finally:
        loop.set_exception_handler(None)
    assert heard == []
