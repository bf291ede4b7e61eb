"""SharedLimits on a real Redis: three "processes" (three SharedLimits of three node
names, in one loop) count the same connections and spend the same buckets; a node that
left stops counting; without Redis the local limits decide. (Over three real server
processes: tests/cluster/test_cluster_limits.py.)"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.limits.shared import FULL_EVERY, FULL_SOON, SharedLimits, chunk
from server.process.config import ServerConfig
from server.protocol.errors import Refused

NODES = ("n0", "n1", "n2")


async def _beat(url: str, *nodes: str, until: float | None = None) -> None:
    """Put ``nodes`` in the cluster's presence set, alive until ``until`` (epoch s)."""
    r = aioredis.Redis.from_url(url)
    try:
        when = int(((time.time() + 60) if until is None else until) * 1000)
        await r.zadd("chemmy:nodes", dict.fromkeys(nodes, when))
    finally:
        await r.aclose()


async def settle(*lims: SharedLimits) -> None:
    """Let every chunk asked for arrive."""
    for _ in range(100):
        tasks = [t for lim in lims for t in lim._tasks]
        if not tasks:
            return
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.fixture
async def three(redis_url: str) -> AsyncIterator[Any]:
    made: list[SharedLimits] = []

    async def make(**settings: Any) -> list[SharedLimits]:
        await _beat(redis_url, *NODES)
        config = ServerConfig(**settings)
        lims = [SharedLimits(config, redis_url, node) for node in NODES]
        made.extend(lims)
        return lims

    try:
        yield make
    finally:
        for lim in made:
            await lim.close()


async def test_a_players_connections_are_capped_over_every_process(three: Any) -> None:
    lims = await three(max_connections_per_player=5, max_connections_per_address=7)
    opened = 0
    for n in range(9):
        try:
            await lims[n % 3].open_player("ann")
            opened += 1
        except Refused as err:
            assert err.code == "too_many_connections"
    assert opened == 5
    lims[0].sign_out("ann")
    await settle(*lims)
    await lims[2].open_player("ann")  # a place freed on another process
    with pytest.raises(Refused):
        await lims[1].open_player("ann")
    # Addresses: 7 over the three, the 8th refused wherever it comes.
    results = [await lims[n % 3].open_connection("10.0.0.1") for n in range(10)]
    assert results.count(True) == 7
    assert all(not r for r in results[7:])
    assert sum(lim.addresses["10.0.0.1"].connections for lim in lims) == 7


async def test_a_process_that_left_counts_no_more(three: Any, redis_url: str) -> None:
    lims = await three(max_connections_per_player=4)
    for _ in range(3):
        await lims[2].open_player("bob")
    await lims[0].open_player("bob")
    with pytest.raises(Refused):
        await lims[1].open_player("bob")
    await _beat(redis_url, "n2", until=time.time() - 1)  # n2's heartbeat expired
    for _ in range(3):
        await lims[1].open_player("bob")
    with pytest.raises(Refused):
        await lims[0].open_player("bob")
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        fields = await r.hgetall("chemmy:limits:conn:p:bob")
    finally:
        await r.aclose()
    assert fields == {"n0": "1", "n1": "3"}  # n2's field was dropped


async def test_resync_puts_the_counts_right(three: Any, redis_url: str) -> None:
    lims = await three(max_connections_per_player=3)
    await lims[0].open_player("cy")
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        await lims[0].resync()  # (the first is a full one: the marker is not there yet)
        await r.hset("chemmy:limits:conn:p:cy", "n0", 3)  # a drift nobody saw
        with pytest.raises(Refused):
            await lims[1].open_player("cy")
        await lims[0].resync()  # only what may be wrong: nothing it knows of
        assert await r.hget("chemmy:limits:conn:p:cy", "n0") == "3"
        await lims[0].resync(full=True)  # (every FULL_EVERY seconds)
        assert await r.hget("chemmy:limits:conn:p:cy", "n0") == "1"
        await r.flushall()  # a Redis restarted empty: the next resync counts again
        await lims[0].resync()
        assert await r.hget("chemmy:limits:conn:p:cy", "n0") == "1"
        lims[0].sign_out("cy")
        await settle(*lims)
        await lims[0].resync()
        assert await r.hgetall("chemmy:limits:conn:p:cy") == {}
    finally:
        await r.aclose()


async def test_a_failed_call_brings_the_next_full_write_forward(three: Any) -> None:
    """Every count is written again FULL_EVERY seconds after the last such write, and
    FULL_SOON after it once a Redis call failed (a failover may have lost writes it
    acknowledged, a drift nobody sees), not at each resync while calls fail."""
    lim = (await three(max_connections_per_player=3))[0]
    await lim.open_player("cy")
    await lim.resync()  # (the first is a full one)
    now = [lim.clock()]
    lim.clock = lambda: now[0]
    now[0] += FULL_SOON + 1
    assert not lim.full_due()  # nothing failed
    lim._failed(RedisError("the primary went away"))
    assert lim.full_due()
    await lim.resync(full=True)
    assert not lim.full_due()
    now[0] += FULL_EVERY - 1
    assert not lim.full_due()
    now[0] += 1
    assert lim.full_due()


async def test_a_cluster_at_rest_writes_no_counts(three: Any, redis_url: str) -> None:
    """Once written, the counts are not written again while nothing may be wrong: a
    resync only checks the marker (issue 36: every count was rewritten every 5 s)."""
    lims = await three(max_connections_per_player=3, max_connections_per_address=9)
    for n in range(20):
        assert await lims[0].open_connection(f"10.0.0.{n}")
        await lims[0].open_player(f"p{n}")
    await lims[0].resync()  # the first, full
    r = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        before = await r.info("commandstats")
        for _ in range(3):
            await lims[0].resync()
        after = await r.info("commandstats")
    finally:
        await r.aclose()

    def calls(stats: dict[str, Any], name: str) -> int:
        return int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))

    assert calls(after, "exists") - calls(before, "exists") == 3
    assert all(calls(after, c) == calls(before, c) for c in ("hset", "pexpire", "hdel"))
    # A close whose decrement failed is written again, alone.
    lims[0]._dirty.add("chemmy:limits:conn:p:p3")
    await lims[0].resync()
    assert not lims[0]._dirty


async def test_an_addresss_hellos_share_one_bucket(three: Any) -> None:
    burst = 100
    lims = await three(hello_rate_limit=0.01, hello_rate_burst=burst)
    taken = [0, 0, 0]
    for n in range(3):  # each process in turn sends far more than the burst
        for _ in range(200):
            taken[n] += lims[n].take_hello("10.0.0.2")
            await settle(*lims)
    # The burst cluster-wide, give or take one chunk per process (each ran on credit
    # while its first chunk was on its way); one process alone would take 100 each.
    assert burst <= sum(taken) <= burst + 3 * chunk(burst), taken
    assert taken[0] >= burst - 3 * chunk(burst)


@pytest.mark.slow
@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_a_players_messages_share_one_bucket_at_its_rate(three: Any) -> None:
    lims = await three(
        rate_limit=1000.0, rate_burst=1000, player_rate_limit=50.0, player_rate_burst=50
    )
    start = time.monotonic()
    taken = 0
    while time.monotonic() - start < 1.0:
        for lim in lims:
            taken += lim.take("10.0.0.3", "dee") if "dee" in lim.players else 0
            if "dee" not in lim.players:
                await lim.open_player("dee")
        await asyncio.sleep(0.002)
    elapsed = time.monotonic() - start
    await settle(*lims)
    # burst + rate x time, + a chunk of credit per process at most.
    assert taken <= 50 + 50 * elapsed + 3 * chunk(50), taken
    assert taken >= 50 + 50 * (elapsed - 0.3) - 3 * chunk(50), taken


async def test_without_redis_the_local_limits_decide() -> None:
    config = ServerConfig(max_connections_per_address=2, hello_rate_burst=5)
    lim = SharedLimits(config, "redis://127.0.0.1:1/0", "n0")
    try:
        assert await lim.open_connection("a") and await lim.open_connection("a")
        assert not await lim.open_connection("a")  # the local cap still holds
        assert [lim.take_hello("a") for _ in range(6)] == [True] * 5 + [False]
        assert lim.fallbacks >= 1 and not lim.shared
        await lim.open_player("ann")
    finally:
        await lim.close()


async def test_a_players_deposits_share_one_allowance(three: Any) -> None:
    lims = await three(deposit_burst=10, deposits_per_day=50)
    made = 0
    for n in range(60):
        try:
            lims[n % 3].deposit("eve")
            made += 1
        except Refused as err:
            assert err.code == "rate_limited"
        await settle(*lims)
    # 10 at once for the cluster (+ one on credit per process), not 10 per process.
    assert 10 <= made <= 10 + 3 * chunk(10), made


async def test_credit_is_not_forgiven_when_a_budget_is_forgotten(three: Any) -> None:
    lims = await three(deposit_burst=2, deposits_per_day=1)
    for _ in range(2):  # the cluster's burst, on one process
        lims[0].deposit("fay")
        await settle(*lims)
    lim = lims[1]
    lim.deposit("fay")  # on credit: its chunk was on its way
    await settle(*lims)  # ... and the shared bucket was dry
    with pytest.raises(Refused):
        lim.deposit("fay")
    key = "chemmy:limits:rate:d:p:fay"
    assert lim._budgets[key].tokens == -chunk(2)
    lim._budgets[key].used -= 3600  # idle for an hour
    lim._budgets[key].quiet_until = 0
    lim.sweep()
    await settle(*lims)
    assert key in lim._budgets  # still owes its credit: not forgotten
    with pytest.raises(Refused):
        lim.deposit("fay")


async def test_no_cap_counts_nothing_in_redis(three: Any, redis_url: str) -> None:
    lims = await three(max_connections_per_player=0, max_connections_per_address=0)
    for _ in range(20):
        assert await lims[0].open_connection("10.0.0.9")
        await lims[1].open_player("gus")
    await lims[0].resync()
    await lims[1].resync()
    r = aioredis.Redis.from_url(redis_url)
    try:
        assert [k async for k in r.scan_iter("chemmy:limits:conn:*")] == []
    finally:
        await r.aclose()


#: The buckets' script before issue 36's change: a ``PEXPIRE`` at every ask (a process of
#: before, in a cluster being upgraded one process at a time).
_TAKE_BEFORE = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + tonumber(now[2]) / 1000
local rate, burst, want = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local saved = redis.call('HMGET', KEYS[1], 't', 's')
local tokens, stamp = tonumber(saved[1]), tonumber(saved[2])
if tokens == nil or stamp == nil then tokens, stamp = burst, now_ms end
tokens = math.min(burst, tokens + math.max(0, now_ms - stamp) * rate / 1000)
local got = math.max(0, math.min(want, math.floor(tokens)))
tokens = tokens - got
redis.call('HSET', KEYS[1], 't', tostring(tokens), 's', tostring(now_ms))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return got
"""


async def test_a_bucket_outlives_its_deficit_with_its_expiry_set_only_when_needed(
    redis_url: str,
) -> None:
    """Issue 36: an ask sets the bucket's expiry only when the moment it would be full
    again passes the one last set (a ``PEXPIRE`` an ask was a fifth of the asks'
    commands), and after an ask of a process of before (which set it itself); the bucket
    always lives until it would be full again, so no deficit is forgotten."""
    from redis.asyncio.client import Redis

    from server.limits.shared import _TAKE, TAKE_MARGIN

    raw: Redis = aioredis.Redis.from_url(redis_url)
    take, before = raw.register_script(_TAKE), raw.register_script(_TAKE_BEFORE)
    key, rate, burst = "chemmy:limits:rate:m:p:ann", 10.0, 100

    async def pexpires() -> int:
        stats = await raw.info("commandstats")
        return int(stats.get("cmdstat_pexpire", {}).get("calls", 0))

    async def lives_until_full() -> None:
        tokens = float(await raw.hget(key, "t") or burst)
        assert await raw.pttl(key) >= (burst - tokens) / rate * 1000, (tokens, await raw.pttl(key))

    try:
        first = await pexpires()
        for _ in range(20):
            assert await take(keys=[key], args=[rate, burst, 2]) == 2
            await lives_until_full()
        assert await pexpires() - first == 1  # (the first ask's: 30 s beyond 4 s of deficit)
        assert await raw.pttl(key) <= (burst - 60) / rate * 1000 + 1000 + TAKE_MARGIN
        # A process of before sets a short expiry: the next ask here sets it again.
        assert await before(keys=[key], args=[rate, burst, 2]) == 2
        again = await pexpires()
        assert await take(keys=[key], args=[rate, burst, 2]) == 2
        assert await pexpires() - again == 1
        await lives_until_full()
        # A deficit growing past what was set (a slow bucket: 1 token a second): set again.
        key, rate = "chemmy:limits:rate:d:p:ann", 1.0
        assert await take(keys=[key], args=[rate, burst, 2]) == 2  # (full in 3 s: 33 s set)
        grown = await pexpires()
        assert await take(keys=[key], args=[rate, burst, 20]) == 20  # (23 s: within)
        assert await pexpires() == grown
        assert await take(keys=[key], args=[rate, burst, 50]) == 50  # (73 s: past it)
        assert await pexpires() == grown + 1
        await lives_until_full()
    finally:
        await raw.aclose()


async def test_a_chunk_is_asked_for_once_the_last_is_spent(three: Any, redis_url: str) -> None:
    """Issue 36: a budget asks for its next chunk when the last is spent (the message that
    spends it runs on credit while it comes), not when half of one is left: one ask a
    chunk of messages, not one every half chunk."""
    lims = await three(rate_limit=1000.0, rate_burst=1000, player_rate_burst=80)
    lim = lims[0]
    await lim.open_player("ida")
    r = aioredis.Redis.from_url(redis_url)

    async def evalshas() -> int:
        stats = await r.info("commandstats")
        return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))

    try:
        first = await evalshas()
        for _ in range(80):
            assert lim.take("10.0.0.4", "ida")
            await settle(lim)
        asks = await evalshas() - first
        # The player's chunk is 8 (80 / 10), the address's 100: 80 / 8 + 1 asks (the first
        # message's on credit), not 80 / 4.
        assert asks <= 80 // chunk(80) + 2, asks
        budget = lim._budgets["chemmy:limits:rate:m:p:ida"]
        assert 0 < budget.tokens <= chunk(80)
    finally:
        await r.aclose()
