"""A player's limits hold under concurrency (issue 33, a regulator's first test), over real
servers on port 0: on SQLite, on a real Redis, and across two servers over one Redis.

- Two bets of the whole daily loss limit sent at the same moment at two tables from two
  connections of one player: exactly one is taken, the other refused ``limit_reached``,
  fifty times over (the check and the chips it counts are one commit: the store holds
  the limit, ``server.store.base.LimitGuard``).
- Eight deposits at once under a daily deposit limit that takes one: exactly one goes
  through, at the operator's transfer API and at the cashier, fifty rounds.

The books are audited after each race. (tests/cluster/test_cluster_limit_races.py runs
the same races over server processes.)
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from server.gateway.server import ChemmyServer
from tests.kit import Game
from tests.kit.client import Client
from tests.kit.inproc import Net
from tests.kit.operator import KEY, audited
from tests.kit.operator import SignedOperator as Operator
from tests.kit.tables import table_def
from tests.kit.timing import TIMEOUT_FACTOR

TRIALS = 50
TABLES = (table_def("t1"), table_def("t2"))


async def _servers(net: Net, where: str, redis_url: str, **settings: Any) -> list[ChemmyServer]:
    """One server on SQLite, one on Redis, or two over one Redis (``where``), taking
    messages as fast as a race sends them."""
    settings = {"rate_limit": 10_000.0, "rate_burst": 10_000, **settings}
    if where == "sqlite":
        return [await net.start(tables=TABLES, **settings)]
    one = await net.start(store=redis_url, tables=TABLES, **settings)
    if where == "redis":
        return [one]
    servers = [one, await net.start(store=redis_url, tables=TABLES, **settings)]
    await _placed(servers)
    return servers


async def _placed(servers: list[ChemmyServer]) -> None:
    """Wait until each of the two servers owns one of the two tables (the cluster's
    placement, docs/architecture.md §9), so that no table moves during the race."""
    deadline = time.monotonic() + 10 * TIMEOUT_FACTOR
    while sorted(sorted(s.croupier.actors) for s in servers) != [["t1"], ["t2"]]:
        assert time.monotonic() < deadline, [sorted(s.croupier.actors) for s in servers]
        await asyncio.sleep(0.05)


@pytest.fixture(params=["sqlite", "redis", pytest.param("two servers", marks=pytest.mark.slow)])
def where(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def redis_or_none(where: str, request: pytest.FixtureRequest) -> str:
    """The session's Redis, emptied, when the servers need one."""
    return "" if where == "sqlite" else str(request.getfixturevalue("redis_url"))


async def _betting_at_two_tables(net: Net, servers: list[ChemmyServer]) -> tuple[Client, Client]:
    """Ann's two connections (on the first and the last server), one at t1 and one at t2,
    both seated with Bob and betting open at both tables."""
    first, last = servers[0], servers[-1]
    ann_t1 = await net.player(first, "ann", name="Ann")
    ann_t2 = await net.player(last, "ann", name="Ann")
    for table, ann, server in (("t1", ann_t1, first), ("t2", ann_t2, last)):
        bob = await net.player(server, "bob", name="Bob")
        for client in (ann, bob):
            await client.join(table)
            await client.call("sit", table=table)
        await Game(table, {"ann": ann, "bob": bob}, bob).to_betting()
    return ann_t1, ann_t2


async def test_two_bets_at_two_tables_never_pass_a_loss_limit(
    net: Net, where: str, redis_or_none: str
) -> None:
    servers = await _servers(net, where, redis_or_none)
    ann_t1, ann_t2 = await _betting_at_two_tables(net, servers)
    await ann_t1.call("set_limit", kind="loss_day", amount=1000)
    for trial in range(TRIALS):
        replies = await asyncio.gather(
            ann_t1.rpc("bet", table="t1", area="banker", amount=1000),
            ann_t2.rpc("bet", table="t2", area="player", amount=1000),
        )
        taken = [n for n, reply in enumerate(replies) if reply["type"] == "ok"]
        assert len(taken) == 1, (trial, replies)
        refused = replies[1 - taken[0]]
        assert refused["code"] == "limit_reached", (trial, refused)
        assert refused["limit"]["kind"] == "loss_day" and refused["limit"]["amount"] == 1000
        limits = await ann_t1.call("limits")
        assert limits["limits"]["loss_day"]["used"] == 1000, (trial, limits)
        # The chips taken back: the loss counted goes back to nothing for the next trial.
        client, table = (ann_t1, "t1") if taken[0] == 0 else (ann_t2, "t2")
        await client.call("clear_bets", table=table)
    assert (await ann_t1.call("limits"))["limits"]["loss_day"]["used"] == 0
    for server in servers:
        await audited(server)


async def test_a_wager_limit_holds_against_three_bets_racing(
    net: Net, where: str, redis_or_none: str
) -> None:
    """A weekly wager limit, one bet at one table and two at the other, all at once: the
    three never pass it together, and at least one is taken."""
    servers = await _servers(net, where, redis_or_none)
    ann_t1, ann_t2 = await _betting_at_two_tables(net, servers)
    await ann_t1.call("set_limit", kind="wager_week", amount=1500)
    for trial in range(TRIALS // 5):
        replies = await asyncio.gather(
            ann_t1.rpc("bet", table="t1", area="banker", amount=1000),
            ann_t2.rpc("bet", table="t2", area="banker", amount=600),
            ann_t2.rpc("bet", table="t2", area="player", amount=600),
        )
        used = (await ann_t1.call("limits"))["limits"]["wager_week"]["used"]
        taken = sum(reply["type"] == "ok" for reply in replies)
        assert 1 <= taken <= 2 and used <= 1500, (trial, replies, used)
        assert all(r["code"] == "limit_reached" for r in replies if r["type"] == "error"), replies
        for client, table in ((ann_t1, "t1"), (ann_t2, "t2")):
            cleared = await client.rpc("clear_bets", table=table)
            assert cleared["type"] == "ok" or cleared["code"] == "no_bet", cleared
    for server in servers:
        await audited(server)


@pytest.mark.slow
async def test_eight_transfer_deposits_at_once_pass_no_deposit_limit(
    net: Net, where: str, redis_or_none: str
) -> None:
    servers = await _servers(net, where, redis_or_none, wallet="transfer", operator_key=KEY)
    operators = [Operator(server.port) for server in servers]
    try:
        for trial in range(TRIALS):
            pid = f"p{trial}"
            first = {"transaction_id": f"{pid}-0", "player": pid, "amount": 1, "currency": "EUR"}
            assert (await operators[0].post("/operator/v1/transfers/deposit", first)).is_success
            path = f"/operator/v1/players/{pid}/limits"
            changed = await operators[-1].post(path, {"changes": {"deposit_day": 5100}})
            assert changed.status_code == 200, changed.text
            answers = await asyncio.gather(
                *(
                    operators[n % len(operators)].post(
                        "/operator/v1/transfers/deposit",
                        {**first, "transaction_id": f"{pid}-{n + 1}", "amount": 5000},
                    )
                    for n in range(8)
                )
            )
            codes = sorted(answer.status_code for answer in answers)
            assert codes == [200] + [409] * 7, (trial, [a.text for a in answers])
            assert all(
                a.json()["status"] == "limit_reached" for a in answers if a.status_code == 409
            )
            balance = await operators[0].get(f"/operator/v1/transfers/balance?player={pid}")
            assert balance.json()["available"] == 5001, balance.text
    finally:
        for operator in operators:
            await operator.aclose()
    for server in servers:
        await audited(server)


async def test_eight_cashier_deposits_at_once_pass_no_deposit_limit(
    net: Net, where: str, redis_or_none: str
) -> None:
    # (deposits_per_day 0: no count of deposits, whose shared bucket over Redis starts
    # empty and would refuse some of the eight rate_limited before the limit is reached)
    servers = await _servers(net, where, redis_or_none, deposits_per_day=0)
    for trial in range(TRIALS // 5):
        pid = f"p{trial}"
        clients = [await net.player(servers[n % len(servers)], pid) for n in range(8)]
        await clients[0].call("set_limit", kind="deposit_day", amount=5100)
        before = await clients[0].balance()
        replies = await asyncio.gather(
            *(c.rpc("deposit", amount=5000, msg_id=f"d{n}") for n, c in enumerate(clients))
        )
        assert sum(reply["type"] == "ok" for reply in replies) == 1, (trial, replies)
        assert all(r["code"] == "limit_reached" for r in replies if r["type"] == "error"), replies
        assert await clients[-1].balance() == before + 5000
        for client in clients:
            await client.close()
    for server in servers:
        await audited(server)
