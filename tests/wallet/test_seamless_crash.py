"""A real ``chemmy-server`` in seamless mode, killed mid-coup, and the wallet killed
under it: the money is audited after each.

Each test runs ``chemmy-server --wallet seamless --no-guest`` as a subprocess (the test
kit's launcher) on a SQLite file of its own, against the reference operator wallet
(examples/wallet, a real subprocess too), with three players whose tokens are in euros
at a table in euros. Then:

- ``kill -9`` at settlement while the credits cannot be delivered (the wallet answers
  every credit 500): the settlement's credits are in the store, pending; restarted on
  the same file, the server's courier delivers each, and the wallet applies each once;
- ``kill -9`` while the table is ``debiting`` (the wallet holding every debit): the
  restarted server debits again with the same ids; the wallet answers each as the
  repeat it is and the coup goes on, or (still holding them) the debits are refused
  ``wallet_unavailable``, rolled back, and the late ones find themselves rolled back;
- the wallet ``kill -9``-ed mid-shoe, with credits waiting, and a coup while it is away
  (every debit refused ``wallet_unavailable``, rolled back), then restarted: the
  rollbacks and credits are retried until acknowledged.

After each, once the server stopped, its SQLite file and the wallet's state are
compared (:func:`~tests.wallet.seamless_helpers.check_wallet_books`): every debit the
wallet applied has exactly one credit or rollback, the two agree to the minor unit, no
credit was applied twice, and the store's audit is clean. (While the server runs, its
calls are read over ``GET /operator/v1/transactions``, signed with ``--operator-key``.)
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from server.store import open_store
from server.wallet.calls import rollback_call
from tests.kit import scaled
from tests.kit.game import Game
from tests.kit.launch import ServerProcess
from tests.kit.tables import SECRET, server_toml
from tests.wallet.seamless_helpers import (
    BETS,
    PLAYERS,
    TABLE,
    after_restart,
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
from tests.wallet.wallet_helpers import ReferenceWallet

pytestmark = pytest.mark.slow  # server and wallet subprocesses: seconds each


def start_server(tmp_path: Path, wallet: ReferenceWallet, timeout: float = 1.5) -> ServerProcess:
    """``chemmy-server`` on ``tmp_path/chemmy/chemmy.sqlite3``, seamless on ``wallet``
    with ``timeout`` (scaled) for a coup's debits; started."""
    config = server_toml([seamless_table()], jwt_secret=SECRET)
    server = ServerProcess(tmp_path / "chemmy", config, *seamless_flags(wallet, timeout))
    server.start()
    return server


async def seat(server: ServerProcess, *, sit: bool = True, seed: int = 5) -> Game:
    """The three players on ``server`` (seated, or with ``sit`` False back in their
    seats after a restart), driven by the kit's Game, alice watching."""
    clients = await seat_players(dict.fromkeys(PLAYERS, server.url), sit=sit)
    return Game(TABLE, clients, clients["alice"], rng=random.Random(seed))


async def leave(game: Game) -> None:
    for client in game.players.values():
        await client.abort()  # the server is gone, or going: no goodbye


async def books_of(server: ServerProcess, wallet: ReferenceWallet) -> dict[str, Any]:
    """The stopped server's SQLite file against the wallet (check_wallet_books)."""
    assert not server.running
    store = await open_store(server.db)
    try:
        return await check_wallet_books(store, wallet)
    finally:
        await store.close()


def set_timeout(server: ServerProcess, seconds: float) -> None:
    """The next start's ``--wallet-timeout``."""
    server.args[server.args.index("--wallet-timeout") + 1] = str(scaled(seconds))


async def test_kill_9_at_settlement_with_credits_pending_they_are_delivered_after_restart(
    tmp_path: Path, wallet: ReferenceWallet
) -> None:
    server = start_server(tmp_path, wallet)
    try:
        game = await seat(server)
        assert (await play_seamless_coup(game, BETS))["kind"] == "dealt"
        await no_call_pending(server.port)  # that coup's credits delivered before the fault
        wallet.faults({"endpoint": "credit", "fault": "http500"})  # no count: every try
        outcome = await play_seamless_coup(game, BETS)
        assert outcome["kind"] == "dealt" and outcome["refused"] == {}, outcome
        rid = outcome["round_id"]
        credits = sorted(f"{rid}:{pid}:credit" for pid in PLAYERS)

        async def each_refused() -> bool:  # every credit tried, failed, and stored so
            pending = await operator_calls(server.port, state="pending")
            assert {c["transaction_id"] for c in pending} <= set(credits), pending
            return sorted(c["transaction_id"] for c in pending if c["attempts"] >= 1) == credits

        await wait_until(each_refused, what="a failed try of each credit, stored")
        tried = debits_seen(wallet, credits)
        assert all(any(r["http"] == 500 for r in tried[t]) for t in credits), tried
        server.kill()
        await leave(game)
        applied = {t["transaction_id"] for t in wallet.state()["transactions"]}
        assert not applied & set(credits), "a credit refused 500 was applied"
        wallet.reset()
        server.start()  # the same SQLite file: the outbox is there
        await no_call_pending(server.port, "the credits, after the restart")
        for txn, tried in debits_seen(wallet, credits).items():
            ok = [r for r in tried if r["http"] == 200]
            assert len(ok) == 1 and not ok[0]["repeat"], (txn, tried)
            assert {r["request_id"] for r in tried} == {tried[0]["request_id"]}
        delivered = {c["transaction_id"]: c for c in await operator_calls(server.port)}
        for txn in credits:
            assert delivered[txn]["state"] == "acknowledged", delivered[txn]
            assert delivered[txn]["attempts"] >= 2, delivered[txn]
        game = await seat(server, sit=False)  # the table goes on
        assert (await play_seamless_coup(game, BETS))["kind"] == "dealt"
        await no_call_pending(server.port)
        await leave(game)
        server.terminate()
    finally:
        server.stop()
    await books_of(server, wallet)


@pytest.mark.parametrize("wallet_after", ["answers", "still_slow"])
async def test_kill_9_while_debiting_the_restart_debits_again_with_the_same_ids(
    tmp_path: Path, wallet: ReferenceWallet, wallet_after: str
) -> None:
    """``answers``: the wallet is itself again before the restart (the held debits are
    applied late); the repeats are answered ok and the coup goes on. ``still_slow``: it
    still holds every debit past the restarted server's deadline: refused
    ``wallet_unavailable`` and rolled back, and the held ones, let go, are refused."""
    server = start_server(tmp_path, wallet, timeout=8)  # the kill comes first
    try:
        game = await seat(server)
        wallet.faults({"endpoint": "debit", "fault": "slow", "seconds": scaled(60)})
        opened = await place_and_close(game, BETS)
        rid, start = opened["data"]["round_id"], opened["start"]
        debits = sorted(f"{rid}:{pid}:debit" for pid in PLAYERS)

        def held() -> int:
            return int(wallet.state()["faults"]["rules"][0]["fired"])

        await wait_until(lambda: held() == len(PLAYERS), what="the debits at the wallet")
        assert game.watcher.events(TABLE, "debiting", start=start)  # the table waits
        stored = await operator_calls(server.port, kind="debit", round_id=rid)
        assert sorted(c["transaction_id"] for c in stored) == debits
        assert {c["state"] for c in stored} == {"pending"}, stored
        server.kill()
        await leave(game)
        if wallet_after == "answers":
            wallet.reset()  # the held debits go on now: applied, their answers lost

            def applied() -> bool:
                rows = {t["transaction_id"]: t for t in wallet.state()["transactions"]}
                return all(rows.get(t, {}).get("state") == "applied" for t in debits)

            await wait_until(applied, what="the late debits")
        else:
            set_timeout(server, 1.5)
        server.start()
        game = await seat(server, sit=False)
        await wait_until(lambda: after_restart(game, rid) is not None, what=f"{rid} going on")
        status = after_restart(game, rid)
        if wallet_after == "answers":
            assert status == "dealt", status
            since = game.watcher.snapshot_at[TABLE]
            settled = await settle_dealt(game, rid, opened["data"]["coup_no"], since)
            assert {p["player"] for p in settled.payouts} == set(PLAYERS), settled.payouts
        else:
            assert status == "none", status
            await no_call_pending(server.port, "the rollbacks")  # before the late debits
            holding = held()  # before the kill, and the restart's tries
            assert holding >= 2 * len(PLAYERS), holding
            wallet.reset()
            await wait_until(
                lambda: sum(len(v) for v in debits_seen(wallet, debits).values()) == holding,
                what="the held debits, let go",
            )
        calls = {c["transaction_id"]: c for c in await operator_calls(server.port)}
        for txn, tried in debits_seen(wallet, debits).items():
            assert len(tried) >= 2, (txn, tried)  # sent before the kill, and again after
            assert {r["request_id"] for r in tried} == {tried[0]["request_id"]}
            first = [r for r in tried if not r["repeat"]]
            assert len(first) == 1, (txn, tried)  # applied (or refused) once
            if wallet_after == "answers":
                assert first[0]["status"] == "ok", tried
                assert calls[txn]["state"] == "acknowledged", calls[txn]
            else:
                assert "ok" not in {r["status"] for r in tried}, tried
                assert calls[txn]["state"] == "rolled_back", calls[txn]
                rollback = calls[txn.removesuffix(":debit") + ":rollback"]
                assert rollback["reason"] == "debit_unanswered", rollback
        wallet.reset()
        assert (await play_seamless_coup(game, BETS))["kind"] == "dealt"  # it goes on
        await no_call_pending(server.port)
        await leave(game)
        server.terminate()
    finally:
        server.stop()
    await books_of(server, wallet)


async def test_the_wallet_killed_mid_shoe_refusals_rolled_back_credits_retried(
    tmp_path: Path, wallet: ReferenceWallet
) -> None:
    server = start_server(tmp_path, wallet)
    try:
        game = await seat(server)
        assert (await play_seamless_coup(game, BETS))["kind"] == "dealt"
        # The debits stand; the wallet dies before the cards are turned.
        opened = await place_and_close(game, BETS)
        dealt, start = opened["data"]["round_id"], opened["start"]
        await wait_until(lambda: debit_outcome(game, dealt, start) is not None, what="debits")
        assert (debit_outcome(game, dealt, start) or {})["kind"] == "dealt"
        wallet.kill()
        await settle_dealt(game, dealt, opened["data"]["coup_no"], start)
        # A coup while it is away: nobody's debit is answered; no coup.
        away = await play_seamless_coup(game, BETS)
        assert away["kind"] == "none", away
        assert away["refused"] == dict.fromkeys(PLAYERS, "wallet_unavailable"), away
        down = away["round_id"]
        pending = {c["transaction_id"] for c in await operator_calls(server.port, state="pending")}
        for pid in PLAYERS:  # waiting: the credits, the rollbacks and their debits
            assert {f"{dealt}:{pid}:credit", f"{down}:{pid}:rollback"} <= pending, pending
        wallet.restart()  # the same database and port
        await no_call_pending(server.port, "the credits and rollbacks")
        calls = {c["transaction_id"]: c for c in await operator_calls(server.port)}
        for pid in PLAYERS:
            credit = calls[f"{dealt}:{pid}:credit"]
            assert credit["state"] == "acknowledged" and credit["attempts"] >= 2, credit
            rollback = calls[f"{down}:{pid}:rollback"]
            assert rollback["state"] == "acknowledged", rollback
            assert rollback["reason"] == "debit_unanswered", rollback
            assert calls[f"{down}:{pid}:debit"]["state"] == "rolled_back"
        assert (await play_seamless_coup(game, BETS))["kind"] == "dealt"  # back to normal
        await no_call_pending(server.port)
        await leave(game)
        server.terminate()
    finally:
        server.stop()
    books = await books_of(server, wallet)
    applied = {t["transaction_id"]: t for t in books["wallet"]["transactions"]}
    for pid in PLAYERS:  # the debits the wallet never heard moved nothing there
        assert applied.get(f"{down}:{pid}:debit", {}).get("state") != "applied"


async def test_kill_9_after_the_debits_were_given_up_the_restart_does_not_debit_again(
    tmp_path: Path, wallet: ReferenceWallet
) -> None:
    """The dead server had given up on the coup's debits (its deadline passed: refused
    ``wallet_unavailable``, their rollbacks stored) but died before the table stepped
    on, so the store has the table still ``debiting`` and the rollbacks pending. Written
    here into the file the killed server left, as it would have. The held debits are
    then applied late, and the rollbacks cannot be delivered yet (500). The restarted
    server must not debit again: the repeat would be answered ``ok`` and the coup dealt
    on wagers the wallet is about to give back. It refuses them as the dead one did."""
    server = start_server(tmp_path, wallet, timeout=8)
    try:
        game = await seat(server)
        wallet.faults({"endpoint": "debit", "fault": "slow", "seconds": scaled(60)})
        opened = await place_and_close(game, BETS)
        rid = opened["data"]["round_id"]
        await wait_until(
            lambda: wallet.state()["faults"]["rules"][0]["fired"] == len(PLAYERS),
            what="the debits at the wallet",
        )
        server.kill()
        await leave(game)
        store = await open_store(server.db)
        try:  # what the dead server stored once its deadline passed
            now = time.time()
            given_up = [
                rollback_call(
                    TABLE,
                    rid,
                    pid,
                    sum(bets.values()),
                    "EUR",
                    now,
                    "debit_unanswered",
                    game="chemmy",
                )
                for pid, bets in sorted(BETS.items())
            ]
            await store.commit(calls=given_up)  # type: ignore[call-arg]
            (row,) = await store.load_tables()
            assert row.state is not None and row.state["phase"] == "debiting"
        finally:
            await store.close()
        wallet.reset()  # the held debits go on: applied, late
        wallet.faults({"endpoint": "rollback", "fault": "http500"})
        server.start()
        game = await seat(server, sit=False)
        await wait_until(lambda: after_restart(game, rid) is not None, what=f"{rid} going on")
        assert after_restart(game, rid) == "none", "dealt on debits being rolled back"
        debits = [f"{rid}:{pid}:debit" for pid in PLAYERS]
        assert all(len(tried) == 1 for tried in debits_seen(wallet, debits).values())
        wallet.reset()
        await no_call_pending(server.port, "the rollbacks")
        assert (await play_seamless_coup(game, BETS))["kind"] == "dealt"  # it goes on
        await no_call_pending(server.port)
        await leave(game)
        server.terminate()
    finally:
        server.stop()
    books = await books_of(server, wallet)
    calls = {c["transaction_id"]: c for c in books["calls"]}
    for pid in PLAYERS:
        assert calls[f"{rid}:{pid}:debit"]["state"] == "rolled_back"
        assert f"{rid}:{pid}:credit" not in calls
