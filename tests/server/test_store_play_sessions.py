"""The store contract of a player's play session (responsible play), on every store.

SQLite (a real file) and a real Redis (the ``redis_url`` fixture). A session
begins at a player's first hello and goes on through reconnects: it ends only when no
connection of theirs was seen for more than the gap (``touch_play_sessions`` keeps an
open connection's session going). Its reality checks come every period from its start;
one due stays due until answered (``ack_reality_check``), and the next is timed from the
session's start, not from the answer. Its baseline is the player's flows of the day
when it began. Two stores over one database (two processes) opening at the same moment
start one session; bad arguments are refused and change nothing; it survives the store
being opened again, and an expired guest's goes with them. The rules themselves
(``open_play``, ``ack_play``, ``next_reminder``) are tested pure, with a property.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.ledger.accounts import Entry
from server.protection.rules import ack_play, next_reminder, open_play, play_due
from server.protocol.errors import StoreError
from server.store import Store
from server.store.players import (
    play_baseline,
)
from tests.server.conftest import Clock, make_store

DAY = 86_400.0
NOON = 1_767_268_800.0  # 2026-01-01 12:00 UTC
GAP = 900.0  # 15 minutes
EVERY = 1800.0  # a reality check every 30 minutes


@pytest.fixture
async def clocked(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Store]:
    """An open store of ``kind`` whose clock (the day its commits' flows go to) is NOON."""
    made = make_store(kind, request, tmp_path, clock=Clock(NOON))
    await made.open()
    yield made
    await made.close()


def hold(rid: str, player: str, amount: int) -> list[Entry]:
    """A wager of ``amount`` placed and held (staked ``amount``, net ``-amount``)."""
    return [
        Entry(f"{rid}:stake", f"player:{player}", f"stake:t1:{player}", amount, "stake", rid),
        Entry(f"{rid}:hold", f"stake:t1:{player}", "held:t1", amount, "hold", rid),
    ]


# -- the rules, pure ----------------------------------------------------------------------


def test_next_reminder_is_a_period_of_the_session_after_the_time_given() -> None:
    assert next_reminder(100.0, 60.0, 100.0) == 160.0
    assert next_reminder(100.0, 60.0, 159.9) == 160.0
    assert next_reminder(100.0, 60.0, 160.0) == 220.0  # strictly after
    assert next_reminder(100.0, 60.0, 405.0) == 460.0
    assert next_reminder(100.0, 60.0, 50.0) == 160.0  # never before the first


@given(
    started=st.floats(1e9, 2e9),
    every=st.floats(1.0, 86_400.0),
    later=st.floats(0.0, 1e6),
)
def test_next_reminder_is_the_first_period_after(
    started: float, every: float, later: float
) -> None:
    after = started + later
    due = next_reminder(started, every, after)
    assert due > after
    assert due - every <= after + 1e-6 or due == started + every  # the first one after
    periods = (due - started) / every
    assert abs(periods - round(periods)) < 1e-6 and round(periods) >= 1


def test_a_session_goes_on_within_the_gap_and_ends_after_it() -> None:
    first = open_play(None, NOON, GAP, EVERY, {"staked": 5, "net": -5})
    assert first == {
        "started": NOON,
        "seen": NOON,
        "every": EVERY,
        "next": NOON + EVERY,
        "baseline": {"staked": 5, "net": -5},
    }
    again = open_play(first, NOON + GAP, GAP, None, {"staked": 99, "net": 99})
    assert again == {**first, "seen": NOON + GAP}  # the same session, its own baseline
    assert open_play(again, NOON + 10, GAP, EVERY, {})["seen"] == NOON + GAP  # never back
    new = open_play(again, NOON + 2 * GAP + 1, GAP, None, {})
    assert new["started"] == NOON + 2 * GAP + 1 and new["next"] is None
    assert new["baseline"] == {"staked": 0, "net": 0}


def test_a_session_keeps_its_period_and_one_without_takes_a_later_one() -> None:
    first = open_play(None, NOON, GAP, EVERY, {})
    assert open_play(first, NOON + 60, GAP, 60.0, {})["every"] == EVERY
    none = {**open_play(None, NOON, GAP, None, {}), "seen": NOON + 3990}  # (kept going)
    later = open_play(none, NOON + 4000, GAP, EVERY, {})
    assert later["every"] == EVERY and later["next"] == NOON + 3 * EVERY  # from the start


def test_a_due_check_stays_due_until_answered_then_the_next_is_a_period_of_the_session() -> None:
    session = open_play(None, NOON, GAP, EVERY, {})
    assert not play_due(session, NOON + EVERY - 1) and play_due(session, NOON + EVERY)
    assert ack_play(session, NOON + 10) is None  # none due: nothing to answer
    session["seen"] = NOON + EVERY  # (a connection was open all along)
    reconnected = open_play(session, NOON + EVERY + 100, GAP, EVERY, {})
    assert play_due(reconnected, NOON + EVERY + 100)  # a reconnect does not answer it
    answered = ack_play(reconnected, NOON + EVERY + 100)
    assert answered is not None and answered["next"] == NOON + 2 * EVERY
    late = ack_play(answered, NOON + 3.5 * EVERY)
    assert late is not None and late["next"] == NOON + 4 * EVERY
    assert not play_due(None, NOON) and not play_due(open_play(None, NOON, GAP, None, {}), 1e12)


def test_the_baseline_counts_the_day_the_session_began() -> None:
    days = {"2025-12-31": (100, -100, 0), "2026-01-01": (30, -10, 500)}
    assert play_baseline(days, NOON) == {"staked": 30, "net": -10}
    assert play_baseline({}, NOON) == {"staked": 0, "net": 0}


# -- the stores -------------------------------------------------------------------------


async def test_none_until_opened(store: Store) -> None:
    assert await store.play_session("ann") is None
    await store.touch_play_sessions(["ann"], NOON)  # a touch makes none
    assert await store.play_session("ann") is None
    assert await store.ack_reality_check("ann", NOON, rule=ack_play) is None


async def test_a_session_goes_on_through_reconnects(store: Store) -> None:
    first = await store.open_play_session("ann", NOON, GAP, EVERY, rule=open_play)
    assert first == open_play(None, NOON, GAP, EVERY, {})
    assert await store.play_session("ann") == first
    again = await store.open_play_session("ann", NOON + GAP, GAP, 60.0, rule=open_play)
    assert again == {**first, "seen": NOON + GAP}
    assert await store.play_session("ann") == again
    assert await store.play_session("bob") is None
    new = await store.open_play_session("ann", NOON + 2 * GAP + 0.5, GAP, None, rule=open_play)
    assert new["started"] == NOON + 2 * GAP + 0.5 and new["every"] is None
    assert await store.play_session("ann") == new


async def test_an_open_connection_keeps_its_session_going(store: Store) -> None:
    await store.open_play_session("ann", NOON, GAP, EVERY, rule=open_play)
    await store.open_play_session("bob", NOON, GAP, EVERY, rule=open_play)
    for n in range(1, 4):  # an hour with a connection open: touched every 10 minutes
        await store.touch_play_sessions(["ann", "cat", "ann"], NOON + n * 600)
    await store.touch_play_sessions(["ann"], NOON + 5)  # never back
    assert (await store.play_session("ann") or {})["seen"] == NOON + 1800
    assert (await store.play_session("bob") or {})["seen"] == NOON
    assert await store.play_session("cat") is None
    await store.touch_play_sessions([], NOON + 1e6)
    ann = await store.open_play_session("ann", NOON + 1800 + GAP, GAP, EVERY, rule=open_play)
    bob = await store.open_play_session("bob", NOON + 1800 + GAP, GAP, EVERY, rule=open_play)
    assert ann["started"] == NOON  # went on
    assert bob["started"] == NOON + 1800 + GAP  # ended: a new one


async def test_a_due_reality_check_stays_until_answered(store: Store) -> None:
    await store.open_play_session("ann", NOON, GAP, EVERY, rule=open_play)
    assert (
        await store.ack_reality_check("ann", NOON + EVERY - 1, rule=ack_play) is None
    )  # not due yet
    await store.touch_play_sessions(["ann"], NOON + EVERY)  # (a connection open all along)
    # Due at NOON + EVERY; a reconnect after it leaves it due.
    again = await store.open_play_session("ann", NOON + EVERY + 60, GAP, EVERY, rule=open_play)
    assert again["next"] == NOON + EVERY and play_due(again, NOON + EVERY + 60)
    answered = await store.ack_reality_check("ann", NOON + EVERY + 90, rule=ack_play)
    assert answered is not None and answered["next"] == NOON + 2 * EVERY
    assert await store.play_session("ann") == answered
    assert (
        await store.ack_reality_check("ann", NOON + EVERY + 91, rule=ack_play) is None
    )  # answered once
    late = await store.ack_reality_check("ann", NOON + 3.2 * EVERY, rule=ack_play)
    assert late is not None and late["next"] == NOON + 4 * EVERY
    assert late["started"] == NOON and late["seen"] == NOON + EVERY + 60


async def test_the_baseline_is_the_days_flows_when_it_began(clocked: Store) -> None:
    store = clocked
    await store.ensure_player("ann", "Ann", 10_000)
    await store.commit(entries=hold("r1", "ann", 300))
    started = await store.open_play_session("ann", NOON, GAP, EVERY, rule=open_play)
    assert started["baseline"] == {"staked": 300, "net": -300}
    await store.commit(entries=hold("r2", "ann", 200))
    again = await store.open_play_session("ann", NOON + 60, GAP, EVERY, rule=open_play)
    assert again["baseline"] == {"staked": 300, "net": -300}  # the session's, kept
    new = await store.open_play_session("ann", NOON + 2 * GAP, GAP, EVERY, rule=open_play)
    assert new["baseline"] == {"staked": 500, "net": -500}
    tomorrow = await store.open_play_session("ann", NOON + DAY, GAP, EVERY, rule=open_play)
    assert tomorrow["baseline"] == {"staked": 0, "net": 0}  # a new day: none of it yet


async def test_opening_at_once_starts_one_session(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, store: Store
) -> None:
    # A second store over the same database (another process).
    other = make_store(kind, request, tmp_path)
    await other.open()
    try:
        opened = await asyncio.gather(
            *(
                (store if n % 2 else other).open_play_session(
                    "ann", NOON + n * 0.001, GAP, EVERY, rule=open_play
                )
                for n in range(12)
            )
        )
        started = {session["started"] for session in opened}
        assert len(started) == 1, started
        assert (await store.play_session("ann") or {})["started"] in started
        assert (await other.play_session("ann") or {})["seen"] == NOON + 0.011
        acks = await asyncio.gather(
            store.ack_reality_check("ann", NOON + EVERY + 1, rule=ack_play),
            other.ack_reality_check("ann", NOON + EVERY + 1, rule=ack_play),
        )
        assert sum(ack is not None for ack in acks) == 1  # answered once
    finally:
        if other is not store:
            await other.close()


@pytest.mark.parametrize(
    ("player", "now", "gap", "every"),
    [
        ("", NOON, GAP, EVERY),
        (None, NOON, GAP, EVERY),
        ("ann", math.nan, GAP, EVERY),
        ("ann", math.inf, GAP, EVERY),
        ("ann", "noon", GAP, EVERY),
        ("ann", True, GAP, EVERY),
        ("ann", NOON, -1.0, EVERY),
        ("ann", NOON, math.nan, EVERY),
        ("ann", NOON, GAP, 0.0),
        ("ann", NOON, GAP, -60.0),
        ("ann", NOON, GAP, "30"),
    ],
)
async def test_bad_arguments_are_refused_and_change_nothing(
    store: Store, player: Any, now: Any, gap: Any, every: Any
) -> None:
    await store.open_play_session("bob", NOON, GAP, EVERY, rule=open_play)
    with pytest.raises(StoreError):
        await store.open_play_session(player, now, gap, every, rule=open_play)
    with pytest.raises(StoreError):
        await store.touch_play_sessions(["bob"], math.nan)
    with pytest.raises(StoreError):
        await store.ack_reality_check("bob", math.inf, rule=ack_play)
    assert await store.play_session("ann") is None
    assert await store.play_session("bob") == open_play(None, NOON, GAP, EVERY, {})


async def test_an_expired_guest_takes_their_session_along(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    clock = Clock(NOON)
    store = make_store(kind, request, tmp_path, clock=clock)
    await store.open()
    try:
        await store.ensure_player("guest-1", "Guest", 1000, guest=True)
        await store.open_play_session("guest-1", NOON, GAP, EVERY, rule=open_play)
        await store.open_play_session("ann", NOON, GAP, EVERY, rule=open_play)
        clock.now = NOON + 2 * DAY
        assert await store.expire_guests(DAY) == 1
        assert await store.play_session("guest-1") is None
        assert await store.play_session("ann") is not None
    finally:
        await store.close()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_it_survives_opening_again(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    first = make_store(kind, request, tmp_path)
    await first.open()
    await first.open_play_session("ann", NOON, GAP, EVERY, rule=open_play)
    await first.touch_play_sessions(["ann"], NOON + 60)
    await first.close()
    again = make_store(kind, request, tmp_path)
    await again.open()
    try:
        found = await again.play_session("ann")
        assert found == {**open_play(None, NOON, GAP, EVERY, {}), "seen": NOON + 60}
        assert play_due(found, NOON + EVERY)
    finally:
        await again.close()
