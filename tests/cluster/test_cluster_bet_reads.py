"""The per-bet reads of a cluster process kept in process while Redis says their keys did
not change (issue 36: a script of four or five reads before every bet, the second most of
a cluster's Redis commands per bet after the commit's): ``server.connect.tracking``, on a
real ``redis-server``. Another process's change (a restriction, limits, a play session, a
stake of a player with limits) is seen at the next bet; a change nothing reads (a touch,
a stake of a player without limits) keeps the answer; a lost listener keeps nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
import redis.asyncio as aioredis

from server.ledger.accounts import Entry
from server.ledger.flows import flow_day
from server.protection.rules import current_limits, merge_limits, merge_restriction, open_play
from server.store import open_store
from server.store.base import BetReads
from tests.cluster.test_cluster_redis_calls import calls, spent

DAY = 86_400.0


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 2.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.01)


def stake(key: str, player: str, amount: int) -> Entry:
    return Entry(key, f"player:{player}", f"stake:t1:{player}", amount, "stake", "r")


@pytest.mark.slow
async def test_bet_reads_are_kept_until_redis_says_what_they_read_changed(redis_url: str) -> None:
    here, there = await open_store(redis_url), await open_store(redis_url)
    raw = aioredis.Redis.from_url(redis_url)
    today = flow_day(time.time())

    async def reads(player: str) -> BetReads:
        return await here.bet_reads(player, today, rule=current_limits)

    async def tracking() -> bool:
        """Whether the tracked connections are made (in the background, at a first read)."""
        await reads("ann")
        return getattr(getattr(here, "_tracked", None), "_reader", True) is not None

    try:
        for name in ("ann", "bob"):
            await there.ensure_player(name, name.title(), 1000)
        await eventually(tracking)
        assert await reads("ann") == BetReads(None, {}, None, {})
        await reads("bob")
        before = await calls(redis_url)
        for _ in range(20):
            assert await reads("ann") == BetReads(None, {}, None, {})
            await reads("bob")
        used = spent(before, await calls(redis_url))
        assert not any(used.values()), used  # (40 bets' reads: nothing asked of Redis)

        # What another process writes is read at the next bet (a moment after: heard).
        until = time.time() + DAY
        await there.set_player_restriction("ann", "break", until, "player", rule=merge_restriction)
        await eventually(lambda: _has(reads("ann"), lambda r: r.restriction is not None), 0.5)
        await there.set_player_limits("ann", {"loss_day": 5000}, "player", rule=merge_limits)
        await eventually(lambda: _has(reads("ann"), lambda r: "loss_day" in r.limits), 0.5)
        await there.open_play_session("ann", time.time(), 900.0, 1800.0, rule=open_play)
        await eventually(lambda: _has(reads("ann"), lambda r: r.play is not None), 0.5)
        await there.commit(entries=[stake("s1", "ann", 300)])  # (ann has limits: her days)
        await eventually(lambda: _has(reads("ann"), lambda r: bool(r.days)), 0.5)
        assert await reads("ann") == await there.bet_reads("ann", today, rule=current_limits)

        # Changes no bet's check reads keep the answers: bob's stake (no limits), a touch.
        await reads("bob")
        await reads("ann")
        await there.commit(entries=[stake("s2", "bob", 100)])
        await there.touch_play_sessions(["ann", "bob"], time.time())
        await asyncio.sleep(0.05)
        before = await calls(redis_url)
        assert (await reads("bob")).days == {}
        await reads("ann")
        assert not any(spent(before, await calls(redis_url)).values())

        # The listener lost: nothing kept is used (a change meanwhile is read), then kept again.
        await raw.client_kill_filter(_type="pubsub")
        await asyncio.sleep(0.05)
        await there.set_player_restriction("bob", "break", until, "player", rule=merge_restriction)
        assert (await reads("bob")).restriction is not None
        hits = here._tracked.hits
        await eventually(tracking, 3.0)
        await reads("bob")
        await reads("bob")
        assert here._tracked.hits > hits
    finally:
        await raw.aclose()
        await here.close()
        await there.close()


async def _has(found: Awaitable[BetReads], check: Callable[[BetReads], bool]) -> bool:
    return check(await found)


@pytest.mark.slow
@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_a_listener_that_stops_answering_keeps_nothing(redis_url: str) -> None:
    """A Redis that stops answering (``CLIENT PAUSE``: a frozen primary, a partition) leaves
    the kept reads unheard: within a second and a half of silence nothing kept is used, and
    once the listener's ping goes unanswered the pair is dropped, made again after."""
    from server.connect.tracking import BEAT

    store = await open_store(redis_url)
    raw = aioredis.Redis.from_url(redis_url)
    today = flow_day(time.time())
    tracked = store._tracked

    async def made() -> bool:
        await store.bet_reads("ann", today, rule=current_limits)
        return tracked._reader is not None and bool(tracked._kept)

    try:
        await store.ensure_player("ann", "Ann", 1000)
        await eventually(made)
        await asyncio.sleep(4 * BEAT)  # (pinged and answered meanwhile)
        hits = tracked.hits
        await store.bet_reads("ann", today, rule=current_limits)
        assert tracked.hits == hits + 1
        await raw.execute_command("CLIENT", "PAUSE", "3000", "ALL")
        start = time.monotonic()
        while tracked._reader is not None:
            assert time.monotonic() - start < 2.5, "the silent listener was not found lost"
            await asyncio.sleep(0.05)
        assert not tracked._kept
        await eventually(made, 6.0)  # (the pause over: made again)
    finally:
        await raw.aclose()
        await store.close()


async def test_a_process_reads_its_own_writes_at_its_next_bet(redis_url: str) -> None:
    """What this process itself wrote (a commit moving a player's flows, their restriction,
    limits or play session) is read at the very next bet, not when the listener hears of
    it: a read kept from before is dropped as the write's reply comes (it was stale about
    one read in five right after a commit, review of issue 36)."""
    store = await open_store(redis_url)
    today = flow_day(time.time())

    async def reads() -> BetReads:
        return await store.bet_reads("ann", today, rule=current_limits)

    async def kept() -> bool:
        await reads()
        return store._tracked._reader is not None and "ann" in store._tracked._kept

    try:
        await store.ensure_player("ann", "Ann", 100_000)
        await store.set_player_limits("ann", {"loss_day": 50_000}, "player", rule=merge_limits)
        await eventually(kept)
        staked = 0
        for n in range(30):
            await store.commit(entries=[stake(f"own{n}", "ann", 10)])
            staked += 10
            days = (await reads()).days
            assert sum(day["staked"] for day in days.values()) == staked, (n, days)
            await eventually(kept)
        until = time.time() + DAY
        await store.set_player_restriction("ann", "break", until, "player", rule=merge_restriction)
        assert (await reads()).restriction is not None
        await store.open_play_session("ann", time.time(), 900.0, 1800.0, rule=open_play)
        assert (await reads()).play is not None
    finally:
        await store.close()


async def test_a_ping_after_a_quiet_spell_reads_nothing_from_under_the_listener(
    redis_url: str,
) -> None:
    """The listener makes no health check of its own (redis-py's, on a ``PING`` sent from a
    bet's task after 30 s without a reply, read the listener beneath its waiting task: a
    ``RuntimeError`` the bet took for an internal error)."""
    store = await open_store(redis_url)
    today = flow_day(time.time())
    tracked = store._tracked
    try:
        await store.ensure_player("ann", "Ann", 1000)
        await eventually(lambda: _made(store, today))
        for connection in (tracked._listener, tracked._reader):
            assert connection.health_check_interval == 0
        tracked._changed(None)  # (nothing kept: the next kept answer pings the listener)
        tracked._listener.next_health_check = 0
        await store.bet_reads("ann", today, rule=current_limits)
        await store.bet_reads("ann", today, rule=current_limits)
        assert tracked._reader is not None and tracked.hits
    finally:
        await store.close()


async def _made(store: object, today: str) -> bool:
    await store.bet_reads("ann", today, rule=current_limits)  # type: ignore[attr-defined]
    return store._tracked._reader is not None  # type: ignore[attr-defined]


@pytest.mark.slow
async def test_a_processs_own_stake_keeps_the_reads_of_a_player_without_limits(
    redis_url: str,
) -> None:
    """A commit of this process that moves a player's flows (each bet's stake) drops their
    kept reads only when those read the flows (the player has limits): a player without
    limits bets again without a read of Redis (issue 36: the next bet read them again)."""
    store = await open_store(redis_url)
    today = flow_day(time.time())

    async def reads(player: str) -> BetReads:
        return await store.bet_reads(player, today, rule=current_limits)

    async def tracking() -> bool:
        await reads("ann")
        return store._tracked._reader is not None and "ann" in store._tracked._kept

    try:
        for name in ("ann", "bob"):
            await store.ensure_player(name, name.title(), 1000)
        await store.set_player_limits("ann", {"loss_day": 5000}, "player", rule=merge_limits)
        await eventually(tracking)
        await reads("bob")
        days = (await reads("ann")).days
        for n in range(5):
            await store.commit(entries=[stake(f"b{n}", "bob", 10), stake(f"a{n}", "ann", 10)])
            before = await calls(redis_url)
            assert (await reads("bob")).days == {}  # (no limits: his flows are not read)
            assert not any(spent(before, await calls(redis_url)).values())
            found = (await reads("ann")).days  # (read again: her day's flows moved)
            assert found != days, (n, found)
            days = found
    finally:
        await store.close()
