"""A cluster in seamless mode loses a table's owner mid-coup: three ``chemmy-server``
processes over a real ``redis-server``, one reference operator wallet (examples/wallet)
for all, three players whose tokens are in euros at a table in euros.

The table's owner is killed (``kill -9``) once while the table is ``debiting`` (the
wallet holding every debit) and once at settlement with the credits pending (the
wallet answering every credit 500). Another process takes the table over; the players
on the other processes keep their connections, carol (on the dead one) comes back
through another and resumes; the new owner debits again with the same ids (the wallet
answers each as the repeat it is) and the coup goes on, or its courier delivers the
credits the dead one could not. Then the books close: Chemmy's wallet calls and the
wallet's state agree to the minor unit, every debit applied at the wallet has exactly
one credit or rollback, none twice (:func:`~tests.wallet.seamless_helpers.check_wallet_books`),
and the ledger in Redis is conserved with every round paid as its record says
(:func:`tests.kit.cluster.check_books`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from server.store.redis import RedisStore
from tests.kit import ServerProcess, scaled
from tests.kit.cluster import Cluster, check_books, come_back
from tests.kit.game import Game
from tests.wallet.seamless_helpers import (
    BETS,
    PLAYERS,
    TABLE,
    check_wallet_books,
    debit_outcome,
    debits_seen,
    no_call_pending,
    operator_calls,
    place_and_close,
    play_seamless_coup,
    seamless_flags,
    seamless_table,
    seat_players,
    settle_dealt,
    wait_until,
)
from tests.wallet.wallet_helpers import SECRET, ReferenceWallet, reference_wallet

pytestmark = pytest.mark.slow  # server processes, Redis and the wallet: seconds each


@pytest.fixture
def wallet(tmp_path: Path) -> Iterator[ReferenceWallet]:
    """The reference wallet the whole cluster calls (as tests/wallet/conftest.py's)."""
    with reference_wallet(tmp_path, SECRET) as running:
        yield running


class Spread:
    """The players over the cluster: alice (who watches) and bob on the two processes
    that do not own the table, carol on its owner."""

    def __init__(self, cluster: Cluster, game: Game, where: dict[str, ServerProcess]) -> None:
        self.cluster = cluster
        self.game = game
        self.where = where

    @classmethod
    async def seat(cls, cluster: Cluster) -> Spread:
        await cluster.ready()
        owner = cluster.owner(TABLE)
        assert owner is not None
        first, second = cluster.others(owner)
        where = {"alice": first, "bob": second, "carol": owner}
        clients = await seat_players({pid: node.url for pid, node in where.items()})
        game = Game(TABLE, clients, clients["alice"], rng=random.Random(9))
        for pid in PLAYERS:  # every process relayed every seat to alice
            await clients["alice"].wait_event(
                "sat", lambda e, p=pid: e["data"]["player"] == p, table=TABLE
            )
        return cls(cluster, game, where)

    async def kill_owner(
        self, then: Callable[[], None] = lambda: None
    ) -> tuple[ServerProcess, ServerProcess]:
        """``kill -9`` the table's owner (and ``then()`` at once, before another process
        takes the table); once another process holds the table, those who were on the
        dead one come back through another and resume. (The dead one, the new owner.)"""
        owner = self.cluster.owner(TABLE)
        assert owner is not None and self.where["carol"] is owner
        old = self.cluster.node_name(owner)
        owner.kill()
        then()
        new = await self.cluster.new_owner(TABLE, old)
        for pid, node in list(self.where.items()):
            if node is owner:
                elsewhere = self.cluster.others(owner)[0]
                reply = await come_back(self.game.players[pid], elsewhere.url, TABLE)
                assert reply["resumed"] is True, reply  # the events missed, not a snapshot
                self.where[pid] = elsewhere
        return owner, new

    async def close(self) -> None:
        for client in self.game.players.values():
            client.assert_clean()  # every event once, in order, across the failover
            await client.close()


def seamless_cluster(make_cluster: Callable[..., Cluster], wallet: ReferenceWallet) -> Cluster:
    return make_cluster(
        3,
        [seamless_table()],
        args=seamless_flags(wallet, timeout=8),  # the kill comes before any deadline
        guest=False,
        command_timeout=scaled(3),
    )


async def close_books(cluster: Cluster, wallet: ReferenceWallet) -> dict[str, Any]:
    """Once nothing is pending: the calls in Redis against the wallet, and the ledger."""
    node = cluster.others()[0]
    await no_call_pending(node.port)
    store = RedisStore(cluster.url)
    await store.open()
    try:
        books = await check_wallet_books(store, wallet)
    finally:
        await store.close()
    await check_books(cluster.url, tables=[TABLE])
    return books


def credits_sent(node: ServerProcess) -> int:
    """The credits a process posted to the wallet (its httpx log lines)."""
    return sum(1 for line in node.log if "POST" in line and "/credit " in line)


async def test_the_owner_killed_while_debiting_the_new_owner_debits_again_and_plays_on(
    make_cluster: Callable[..., Cluster], wallet: ReferenceWallet
) -> None:
    cluster = seamless_cluster(make_cluster, wallet)
    spread = await Spread.seat(cluster)
    game = spread.game
    try:
        assert (await play_seamless_coup(game, BETS))["kind"] == "dealt"
        await no_call_pending(spread.where["alice"].port)
        wallet.faults({"endpoint": "debit", "fault": "slow", "seconds": scaled(60)})
        opened = await place_and_close(game, BETS)
        rid, start = opened["data"]["round_id"], opened["start"]
        debits = sorted(f"{rid}:{pid}:debit" for pid in PLAYERS)
        await wait_until(
            lambda: wallet.state()["faults"]["rules"][0]["fired"] == len(PLAYERS),
            what="the debits at the wallet",
        )
        assert game.watcher.events(TABLE, "debiting", start=start)
        stored = await operator_calls(spread.where["alice"].port, round_id=rid)
        assert {c["transaction_id"]: c["state"] for c in stored} == dict.fromkeys(debits, "pending")
        # Killed; then the held debits go on: applied, for a process that is gone.
        _dead, new = await spread.kill_owner(then=wallet.reset)
        await wait_until(lambda: debit_outcome(game, rid, start) is not None, what="the debits")
        assert (debit_outcome(game, rid, start) or {})["kind"] == "dealt"
        settled = await settle_dealt(game, rid, opened["data"]["coup_no"], start)
        assert {p["player"] for p in settled.payouts} == set(PLAYERS), settled.payouts
        for txn, tried in debits_seen(wallet, debits).items():
            assert len(tried) >= 2, (txn, tried)  # the dead owner's, and the new one's
            assert {r["request_id"] for r in tried} == {tried[0]["request_id"]}
            assert [r["status"] for r in tried if not r["repeat"]] == ["ok"], tried
        assert (await play_seamless_coup(game, BETS))["kind"] == "dealt"  # it goes on
        books = await close_books(cluster, wallet)
        calls = {c["transaction_id"]: c for c in books["calls"]}
        assert all(calls[t]["state"] == "acknowledged" for t in debits)
        assert credits_sent(new) > 0
    finally:
        await spread.close()


async def test_the_owner_killed_with_credits_pending_the_new_owner_delivers_them(
    make_cluster: Callable[..., Cluster], wallet: ReferenceWallet
) -> None:
    cluster = seamless_cluster(make_cluster, wallet)
    spread = await Spread.seat(cluster)
    game = spread.game
    try:
        assert (await play_seamless_coup(game, BETS))["kind"] == "dealt"
        await no_call_pending(spread.where["alice"].port)
        wallet.faults({"endpoint": "credit", "fault": "http500"})  # every try, until lifted
        outcome = await play_seamless_coup(game, BETS)
        assert outcome["kind"] == "dealt" and outcome["refused"] == {}, outcome
        credits = sorted(f"{outcome['round_id']}:{pid}:credit" for pid in PLAYERS)

        async def each_refused() -> bool:  # every credit tried, failed, and stored so
            pending = await operator_calls(spread.where["alice"].port, state="pending")
            assert {c["transaction_id"] for c in pending} <= set(credits), pending
            return sorted(c["transaction_id"] for c in pending if c["attempts"] >= 1) == credits

        await wait_until(each_refused, what="a failed try of each credit, stored")
        tried = debits_seen(wallet, credits)
        assert all(any(r["http"] == 500 for r in tried[t]) for t in credits), tried
        _dead, new = await spread.kill_owner()
        before = {id(node): credits_sent(node) for node in cluster.others()}
        wallet.reset()
        await no_call_pending(new.port, "the credits, delivered by the new owner")
        for txn, tried in debits_seen(wallet, credits).items():
            ok = [r for r in tried if r["http"] == 200]
            assert len(ok) == 1 and not ok[0]["repeat"], (txn, tried)
        # The new owner's courier sent them; the other process, which owns nothing, not.
        (other,) = cluster.others(new)
        assert credits_sent(new) > before[id(new)]
        assert credits_sent(other) == before[id(other)]
        assert (await play_seamless_coup(game, BETS))["kind"] == "dealt"  # it goes on
        await close_books(cluster, wallet)
    finally:
        await spread.close()
