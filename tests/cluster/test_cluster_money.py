"""Money that two processes share (issue 10's race): one player at two tables owned by
two different ``chemmy-server`` processes over one real Redis bets at both at the same
instant, bets that together exceed her balance. Each process decides its table's bet
against its own cached copy of her balance, which both say is enough; the store checks
the stakes atomically where the balance lives, so exactly one bet is accepted and the
other refused ``insufficient_funds`` (GAME_RULES §3: refused, never accepted and
repaired later). Nothing is ever overdrawn, and the books balance.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from tests.kit import Client, Game, open_player, table_def
from tests.kit.cluster import Cluster, check_books, settle

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

FUNDS = 15_000
LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60}
RACES = 12


async def test_bets_at_two_processes_tables_never_spend_the_same_money_twice(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(
        2,
        [table_def("t1", timers=LONG), table_def("t2", timers=LONG)],
        guest_balance=FUNDS,
    )
    await cluster.ready(tables=2)
    await settle(lambda: len(set(cluster.owners().values())) == 2)  # one table each
    owners = {t: cluster.owner(t) for t in ("t1", "t2")}
    assert owners["t1"] is not owners["t2"]
    # One player, one connection to each table's own process: no relay in between.
    ann: dict[str, Client] = {}
    for table, node in owners.items():
        assert node is not None
        ann[table] = client = await open_player(node.url, "ann", label=f"ann@{table}")
        await client.join(table)
        await client.call("sit", table=table)
        await Game(table, {"ann": client}, client).to_betting()
    try:
        accepted: dict[str, int] = {"t1": 0, "t2": 0}
        for race in range(RACES):
            # Each bet fits the balance alone (each process's copy says so) and the
            # table's limit (10,000); the two together do not.
            amounts = {"t1": 10_000 - 100 * race, "t2": 6_000 + 200 * race}
            assert amounts["t1"] + amounts["t2"] > FUNDS
            order = ["t1", "t2"] if race % 2 else ["t2", "t1"]  # who sends first
            replies = await asyncio.gather(
                *(
                    ann[t].rpc(
                        "bet", msg_id=f"race-{race}-{t}", table=t, area="player", amount=amounts[t]
                    )
                    for t in order
                )
            )
            outcome = dict(zip(order, replies, strict=True))
            won = [t for t, r in outcome.items() if r["type"] == "ok"]
            lost = [t for t, r in outcome.items() if r["type"] == "error"]
            assert len(won) == 1 and len(lost) == 1, outcome
            assert outcome[lost[0]]["code"] == "insufficient_funds", outcome
            accepted[won[0]] += 1
            wallet = await ann["t1"].call("balance")
            assert wallet["balance"] == FUNDS
            assert wallet["available"] == FUNDS - amounts[won[0]], (wallet, outcome)
            # Chips off again: the money is all hers for the next race.
            await ann[won[0]].call("clear_bets", table=won[0])
            wallet = await ann["t2"].call("balance")
            assert (wallet["balance"], wallet["available"]) == (FUNDS, FUNDS)
        print("races won by each table:", accepted)
        for client in ann.values():
            you = (await client.call("join", table=client.label[-2:]))["snapshot"]["you"]
            assert you["bets"] == {}
            client.assert_clean()
    finally:
        for client in ann.values():
            await client.close()
    money = await check_books(cluster.url, tables=["t1", "t2"])
    assert money["balances"]["player:ann"] == FUNDS
