"""The store's commits and the shared limits' bucket asks on connections of their own
(issue 36 target 1): packed and written at once (``server.connect.redis.Lane`` and
``Asks``), not through redis-py's command machinery, on a real ``redis-server``.

- a commit, lone or in a group, is answered and fenced as before (its balances, a stale
  epoch refused, an overdrawn one refused alone), a script Redis forgot sent again as
  ``EVAL``, a connection Redis dropped or a Redis restarted taken again by the retry,
  and a stopped Redis answered ``StoreUnavailable``;
- the buckets' asks of one turn of the loop go in one write and fill the budgets; a
  caller that gave up is not sent; an error reply is its own caller's; a Redis that
  stops makes the limits fall back to the local ones, and they share again once back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis.asyncio as aioredis
import redis.asyncio.client as redis_client
from redis.exceptions import ResponseError

from server.connect.redis import Asks, Lane, connect
from server.ledger.accounts import Entry
from server.limits.shared import SharedLimits
from server.process.config import ServerConfig
from server.protocol.errors import Overdrawn, StaleEpoch, StoreUnavailable
from server.store import CommitResult, RedisStore, TableRow
from tests.kit.redis import RedisServer
from tests.kit.timing import scaled


@contextmanager
def redis_py_commands(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the commands sent through redis-py's client or pipelines inside."""
    sent: list[str] = []
    command = redis_client.Redis.execute_command
    execute = redis_client.Pipeline.execute

    async def counted(self: Any, *args: Any, **options: Any) -> Any:
        sent.append(str(args[0]).upper())
        return await command(self, *args, **options)

    async def counted_pipeline(self: Any, *args: Any, **options: Any) -> Any:
        sent.extend(str(c[0][0]).upper() for c in self.command_stack)
        return await execute(self, *args, **options)

    with monkeypatch.context() as patch:
        patch.setattr(redis_client.Redis, "execute_command", counted)
        patch.setattr(redis_client.Pipeline, "execute", counted_pipeline)
        yield sent


def stake(table: str, player: str, seq: int, amount: int = 10, epoch: int = 0) -> dict[str, Any]:
    """Table ``table``'s step ``seq``: ``player`` stakes ``amount``, with its row."""
    round_id = f"{table}-r{seq}"
    entry = Entry(
        f"{round_id}:{player}:stake",
        f"player:{player}",
        f"stake:{table}:{player}",
        amount,
        "stake",
        round_id,
    )
    row = TableRow(table, {"tier": "1-100"}, {"n": seq}, seq, epoch=epoch)
    return {"entries": [entry], "table": row}


async def test_commits_go_on_their_own_connection_answered_and_fenced_as_before(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisStore(redis_url)
    await store.open()
    try:
        for player in ("ann", "bob", "cy"):
            await store.ensure_player(player, player.title(), 1000)
        epoch = await store.claim_table("t1")
        with redis_py_commands(monkeypatch) as sent:
            lone = await store.commit(**stake("t1", "ann", 1, epoch=epoch))
            group = await asyncio.gather(
                store.commit(**stake("t2", "bob", 1)),
                store.commit(**stake("t3", "cy", 1, amount=5000)),  # more than cy has
                store.commit(**stake("t4", "cy", 1, amount=30)),
                return_exceptions=True,
            )
        assert "EVALSHA" not in sent and "EVAL" not in sent, sent
        assert lone == CommitResult(1, {"player:ann": 990})
        assert group[0] == CommitResult(1, {"player:bob": 990})
        assert isinstance(group[1], Overdrawn)  # refused alone: the others in its batch kept
        assert group[2] == CommitResult(1, {"player:cy": 970})
        # Fencing: a newer owner claimed the table; the old one's commit is refused.
        await store.claim_table("t1")
        with pytest.raises(StaleEpoch):
            await store.commit(**stake("t1", "ann", 2, epoch=epoch))
        assert (await store.balances(["player:ann"]))["player:ann"] == 990
        # A script Redis forgot (restarted): sent again as EVAL, then known again.
        await store._redis().script_flush()
        again = await store.commit(**stake("t2", "bob", 2))
        assert again == CommitResult(1, {"player:bob": 980})
        assert await store._redis().script_exists(store._scripts["commit"].sha) == [True]
        assert (await store.audit())["sum"] == 0
    finally:
        await store.close()


@pytest.mark.slow
async def test_a_commit_outlives_its_connection_and_a_redis_restart(
    make_redis: Callable[..., RedisServer],
) -> None:
    """Redis drops every client, then restarts (its data kept): the next commit is
    sent again on a new connection and answered, as redis-py's retry did; a Redis
    that stays down is ``StoreUnavailable`` after the retries, and the store goes on
    once it is back."""
    server = make_redis()  # (the kit's: AOF on, so a restart keeps what it had)
    store = RedisStore(server.url())
    await store.open()
    other = aioredis.Redis.from_url(server.url())
    try:
        await store.ensure_player("ann", "Ann", 1000)
        await store.commit(**stake("t1", "ann", 1))
        assert store._lane is not None and store._lane._connection is not None
        first = store._lane._connection
        await other.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        assert await store.commit(**stake("t1", "ann", 2)) == CommitResult(1, {"player:ann": 980})
        assert store._lane._connection is not first
        server.restart()
        assert await store.commit(**stake("t1", "ann", 3)) == CommitResult(1, {"player:ann": 970})
        server.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await store.commit(**stake("t1", "ann", 4))
        assert time.monotonic() - started < scaled(5)
        server.start()
        assert await store.commit(**stake("t1", "ann", 4)) == CommitResult(1, {"player:ann": 960})
        assert (await store.audit())["sum"] == 0
    finally:
        await other.aclose()
        await store.close()


async def test_asks_of_one_turn_go_in_one_write_each_answered_its_own(redis_url: str) -> None:
    client = connect(redis_url, socket_timeout=1.0)
    asks = Asks(client)
    batches: list[int] = []
    real = asks.lane.replies

    async def counted(commands: Any, *more: Any) -> list[Any]:
        batches.append(len(commands))
        return await real(commands, *more)

    asks.lane.replies = counted  # type: ignore[method-assign]
    script = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
    sha = await client.script_load(script)
    await client.script_flush()  # (Redis forgot it: the asks send it again as EVAL)
    await client.set("not-a-number", "x")
    try:
        gave_up = asks.ask(["INCR", "given-up"])
        gave_up.cancel()
        answers = await asyncio.gather(
            asks.ask(["INCR", "n"]),
            asks.ask(["INCR", "not-a-number"]),
            asks.ask(["EVALSHA", sha, "1", "n", "5"], script),
            asks.ask(["INCR", "n"]),
            return_exceptions=True,
        )
        assert batches == [4, 1]  # one write for the turn (not the one given up), one EVAL
        assert answers[0] == 1 and answers[3] == 2 and answers[2] == 7
        assert isinstance(answers[1], ResponseError)  # its own caller's, nobody else's
        assert await client.get("given-up") is None
        assert await asks.ask(["EVALSHA", sha, "1", "n", "1"], script) == 8  # (known now)
    finally:
        await asks.close()
        await client.aclose()


async def test_a_lanes_shared_replies_take_turns(redis_url: str) -> None:
    """Two tasks on one :class:`Lane`'s :meth:`Lane.replies` at once: each gets its own
    batch's replies, in order (a lock, not interleaved reads)."""
    client = connect(redis_url, socket_timeout=1.0)
    lane = Lane(client)
    try:
        first, second = await asyncio.gather(
            lane.replies([("INCR", "a"), ("INCR", "a"), ("GET", "a")]),
            lane.replies([("INCR", "b"), ("HGET", "a", "x"), ("GET", "b")]),
        )
        assert first == [1, 2, b"2"]
        assert second[0] == 1 and isinstance(second[1], ResponseError) and second[2] == b"1"
    finally:
        await lane.close()
        await client.aclose()


async def _beat(url: str, *nodes: str) -> None:
    r = aioredis.Redis.from_url(url)
    try:
        await r.zadd("chemmy:nodes", dict.fromkeys(nodes, int((time.time() + 60) * 1000)))
    finally:
        await r.aclose()


async def settle(lim: SharedLimits) -> None:
    """Let every chunk asked for arrive."""
    while lim._tasks:
        await asyncio.gather(*lim._tasks, return_exceptions=True)


async def test_the_buckets_asks_go_on_their_own_connection(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messages of three addresses and their players in one turn: every bucket asks for
    its first chunk, and the six asks go in one write, not through redis-py."""
    await _beat(redis_url, "n0")
    raw = aioredis.Redis.from_url(redis_url)
    try:
        await raw.script_flush()  # (an earlier test on this Redis may have loaded it)
    finally:
        await raw.aclose()
    config = ServerConfig(
        player_rate_limit=20, player_rate_burst=40, address_rate_limit=20, address_rate_burst=40
    )
    lim = SharedLimits(config, redis_url, "n0")
    writes: list[int] = []
    real = getattr(Lane, "replies", None)  # (none before the change: the asks were redis-py's)

    async def counted(self: Lane, commands: Any, *more: Any) -> list[Any]:
        writes.append(len(commands))
        assert real is not None
        return await real(self, commands, *more)  # type: ignore[no-any-return]

    monkeypatch.setattr(Lane, "replies", counted, raising=False)
    try:
        with redis_py_commands(monkeypatch) as sent:
            first = [lim.take(f"10.0.0.{n}", f"p{n}") for n in range(3)]
            await settle(lim)
            budgets = list(lim._budgets.values())
        assert first == [True] * 3  # (on credit while the chunks come)
        # One write for the six asks; Redis did not know the script yet: one of EVALs.
        assert writes == [6, 6] and "EVALSHA" not in sent, (writes, sent)
        # Each spent one on credit and asked for a chunk (4, a tenth of 40) and that one.
        assert len(budgets) == 6 and all(b.tokens == 4 for b in budgets), budgets
        assert lim.fallbacks == 0
    finally:
        await lim.close()


async def test_the_limits_fall_back_without_redis_and_share_again_once_back(
    make_redis: Callable[..., RedisServer],
) -> None:
    server = make_redis()
    await _beat(server.url(), "n0")
    config = ServerConfig(address_rate_limit=10, address_rate_burst=20)
    lim = SharedLimits(config, server.url(), "n0")
    try:
        assert lim.take("a", None)
        await settle(lim)
        assert lim.shared and lim.fallbacks == 0
        server.stop()
        for _ in range(3):  # spends the chunk: the next ask fails
            lim.take("a", None)
        await settle(lim)
        assert lim.fallbacks >= 1 and not lim.shared
        assert not all(lim.take("a", None) for _ in range(30))  # the local bucket decides
        server.start()
        await _beat(server.url(), "n0")
        async with asyncio.timeout(scaled(3)):  # the batch nobody waits for is given up
            while lim._asks._sender is not None:
                await asyncio.sleep(0.05)
        lim._down_until = budget_quiet = 0.0  # (RETRY_AFTER passed)
        budget = lim._budgets["chemmy:limits:rate:m:a:a"]
        budget.quiet_until = budget_quiet  # (and the bucket's dry spell)
        before = budget.tokens
        lim._ask(budget)
        await settle(lim)
        assert budget.tokens > before and lim.shared
    finally:
        await lim.close()
