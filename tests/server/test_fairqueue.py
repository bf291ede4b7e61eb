"""The table's fair queue (server/croupier/fairqueue.py): lines by sender served in
turn, one sender's order kept, and when full the longest line gives up its newest."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.croupier.fairqueue import FairQueue, QueueClosed, QueueFull


def drain(q: FairQueue[str]) -> list[str]:
    out = []
    while not q.empty():
        out.append(q.get_nowait())
    return out


def test_lines_are_served_in_turn_each_in_its_order() -> None:
    q: FairQueue[str] = FairQueue(100)
    for n in range(5):
        q.put("flood", f"f{n}")
    q.put("ann", "a0")
    q.put("ann", "a1")
    q.put("bob", "b0")
    assert drain(q) == ["f0", "a0", "b0", "f1", "a1", "f2", "f3", "f4"]


def test_a_full_queue_makes_room_from_the_longest_line() -> None:
    q: FairQueue[str] = FairQueue(4)
    for n in range(4):
        assert q.put("flood", f"f{n}") is None
    assert q.put("ann", "a0") == "f3"  # the flood's newest pays
    assert len(q) == 4
    assert q.put("bob", "b0") == "f2"
    with pytest.raises(QueueFull):  # the flood's own line is the longest: refused
        q.put("flood", "f9")
    assert drain(q) == ["f0", "a0", "b0", "f1"]


def test_close_serves_what_is_queued_then_ends() -> None:
    async def run() -> list[str | None]:
        q: FairQueue[str] = FairQueue(4)
        q.put("a", "x")
        q.close()
        with pytest.raises(QueueClosed):
            q.put("a", "y")
        return [await q.get(), await q.get()]

    assert asyncio.run(run()) == ["x", None]


@given(st.lists(st.sampled_from("abcde"), max_size=200), st.integers(1, 20))
def test_fair_queue_properties(senders: list[str], size: int) -> None:
    q: FairQueue[tuple[str, int]] = FairQueue(size)
    kept: dict[str, list[int]] = {}
    for n, sender in enumerate(senders):
        lines = {k: len(v) for k, v in kept.items()}
        try:
            pushed = q.put(sender, (sender, n))
        except QueueFull:
            # refused only when full and the sender's own line is the longest
            assert sum(lines.values()) == size
            assert lines.get(sender, 0) + 1 >= max(lines.values())
            continue
        kept.setdefault(sender, []).append(n)
        if pushed is not None:
            owner, m = pushed
            assert kept[owner][-1] == m, "the newest of its line"
            assert lines[owner] == max(lines.values()) and lines[owner] > lines.get(sender, 0) + 1
            kept[owner].pop()
        assert len(q) == sum(len(v) for v in kept.values()) <= size
    out = drain(q)
    for sender, ns in kept.items():
        assert [m for s, m in out if s == sender] == ns, "each sender's order kept"


def test_a_wait_with_a_timeout_ends_in_timeout_or_the_item() -> None:
    async def run() -> list[object]:
        q: FairQueue[str] = FairQueue(4)
        out: list[object] = []
        try:
            await q.get(0.01)
        except TimeoutError:
            out.append("timeout")
        loop = asyncio.get_running_loop()
        loop.call_later(0.01, q.put, "a", "x")
        out.append(await q.get(5))  # woken by the put, long before the timeout
        q.put("a", "y")
        out.append(await q.get(0))  # already queued: taken, however short the timeout
        waiting = asyncio.ensure_future(q.get(5))
        await asyncio.sleep(0)
        waiting.cancel()  # a cancelled wait leaves the queue as it was
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        q.put("a", "z")
        out.append(await q.get())
        loop.call_later(0.01, q.close)
        out.append(await q.get(5))  # closed while waiting: None, not a timeout
        return out

    assert asyncio.run(run()) == ["timeout", "x", "y", "z", None]
