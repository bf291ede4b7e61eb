"""Whole coups on a seamless wallet: a real Chemmy server calling the reference operator
wallet (examples/wallet, a real subprocess over HTTP) while it fails on cue.

After each test, the books are closed and compared (:func:`check_books`): every debit
the wallet applied has exactly one credit or rollback, Chemmy's records and the
wallet's agree to the minor unit, each player's mirror equals the wallet's balance, no
credit was applied twice, and Chemmy's own ledger audits clean.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from server.net.server import ChemmyServer
from tests.kit import scaled
from tests.kit.client import Client
from tests.kit.game import Game
from tests.kit.inproc import Net
from tests.kit.tables import table_def
from tests.wallet.seamless_helpers import (
    PLAYERS,
    check_wallet_books,
    play_seamless_coup,
    wait_until,
)
from tests.wallet.wallet_helpers import ReferenceWallet


@pytest.fixture
async def net(tmp_path: Path) -> AsyncIterator[Net]:
    n = Net(tmp_path)
    try:
        yield n
    finally:
        await n.close()


async def seamless_server(net: Net, wallet: ReferenceWallet, **over: Any) -> ChemmyServer:
    settings: dict[str, Any] = {
        "wallet": "seamless",
        "wallet_url": wallet.url,
        "wallet_secret": wallet.secret,
        "wallet_timeout": scaled(1.5),
        "guest": False,
        "tables": (table_def("t1", currency="EUR", timers={"betting": 30}),),
    }
    settings.update(over)
    return await net.start(**settings)


async def seat_players(net: Net, server: ChemmyServer) -> dict[str, Client]:
    clients: dict[str, Client] = {}
    for seat, pid in enumerate(PLAYERS, start=1):
        client = await net.player(server, pid, currency="EUR")
        await client.join("t1")
        await client.call("sit", table="t1", seat=seat)
        clients[pid] = client
    return clients


async def chemmy_calls(server: ChemmyServer) -> list[dict[str, Any]]:
    return await server.store.wallet_calls(limit=1000)


async def quiet(server: ChemmyServer) -> None:
    """Every wallet call delivered (none pending)."""

    async def done() -> bool:
        return not await server.store.wallet_calls(state="pending", limit=1)

    await wait_until(done, timeout=60, what="the pending wallet calls")


async def check_books(server: ChemmyServer, wallet: ReferenceWallet) -> dict[str, Any]:
    """Chemmy's records and the wallet's agree (:func:`check_wallet_books`)."""
    await quiet(server)
    return await check_wallet_books(server.store, wallet)


async def test_coups_on_a_seamless_wallet_debit_once_per_player_and_credit_every_debit(
    net: Net, wallet: ReferenceWallet
) -> None:
    server = await seamless_server(net, wallet)
    clients = await seat_players(net, server)
    game = Game("t1", clients, clients["alice"], rng=random.Random(7))
    bets = {"alice": {"banker": 1000}, "bob": {"player": 500, "tie": 100}, "carol": {"player": 700}}
    for _ in range(3):
        outcome = await play_seamless_coup(game, bets)
        assert outcome["kind"] == "dealt" and outcome["refused"] == {}
    books = await check_books(server, wallet)
    debits = [r for r in wallet.log() if r["endpoint"] == "debit"]
    assert len(debits) == 9  # one per player per coup, all areas in one call
    assert {c["kind"] for c in books["calls"]} == {"debit", "credit"}
    # Every client showed the wallet's money: the snapshot balance is the mirror.
    snap = await clients["bob"].join("t1")
    assert snap["snapshot"]["you"]["balance"] == wallet.balance("bob")


async def test_faults_through_the_shoe_leave_the_books_exact(
    net: Net, wallet: ReferenceWallet
) -> None:
    server = await seamless_server(net, wallet)
    clients = await seat_players(net, server)
    game = Game("t1", clients, clients["alice"], rng=random.Random(11))
    bets = {"alice": {"banker": 1000}, "bob": {"player": 500}, "carol": {"player": 700}}
    faults: list[tuple[list[dict[str, Any]], dict[str, str]]] = [
        # A 500, then the same debit again (same ids) within the deadline: it stands.
        ([{"endpoint": "debit", "fault": "http500", "count": 1, "player": "bob"}], {}),
        # Connections reset before the wallet read them: tried again, it stands.
        ([{"endpoint": "debit", "fault": "reset", "count": 2, "player": "alice"}], {}),
        # Applied, its answer lost: the retry is answered as the repeat it is.
        ([{"endpoint": "debit", "fault": "lost_answer", "count": 1, "player": "carol"}], {}),
        # No answer in time: refused wallet_unavailable, and rolled back (the rollback
        # itself failing twice first).
        (
            [
                {"endpoint": "debit", "fault": "timeout", "seconds": 30, "player": "carol"},
                {"endpoint": "rollback", "fault": "http500", "count": 2},
            ],
            {"carol": "wallet_unavailable"},
        ),
        # Refusals with each code.
        (
            [
                {
                    "endpoint": "debit",
                    "fault": "refuse",
                    "code": "insufficient_funds",
                    "player": "bob",
                },
                {
                    "endpoint": "debit",
                    "fault": "refuse",
                    "code": "player_blocked",
                    "player": "carol",
                },
            ],
            {"bob": "insufficient_funds", "carol": "player_blocked"},
        ),
        (
            [{"endpoint": "debit", "fault": "refuse", "code": "limit_reached", "player": "bob"}],
            {"bob": "limit_reached"},
        ),
        # Credits that fail, are reset, lose their answer or come slowly: retried until
        # acknowledged, and applied once.
        (
            [
                {"endpoint": "credit", "fault": "http500", "count": 1, "player": "alice"},
                {"endpoint": "credit", "fault": "reset", "count": 1, "player": "bob"},
                {"endpoint": "credit", "fault": "lost_answer", "count": 1, "player": "carol"},
            ],
            {},
        ),
        # Everyone refused: no coup, the next round opens.
        (
            [{"endpoint": "debit", "fault": "refuse", "code": "insufficient_funds"}],
            {p: "insufficient_funds" for p in PLAYERS},
        ),
    ]
    for rules, expected in faults:
        wallet.faults(*rules, latency=0.005)
        outcome = await play_seamless_coup(game, bets)
        assert outcome["refused"] == expected, (rules, outcome)
        assert outcome["kind"] == ("none" if len(expected) == len(PLAYERS) else "dealt")
        await quiet(server)  # the retries ran into the faults before they are lifted
        wallet.reset()
    # Every fault was met.
    met = {(r["endpoint"], r["fault"]) for r in wallet.log() if r.get("fault")}
    wanted = {(rule["endpoint"], rule["fault"]) for rules, _ in faults for rule in rules}
    assert met == wanted, wanted - met
    await check_books(server, wallet)
    # A debit that timed out was rolled back, even though the wallet may have applied it.
    calls = await chemmy_calls(server)
    assert any(c["kind"] == "rollback" and c["reason"] == "debit_unanswered" for c in calls)
    # The lost answers were delivered again with the same ids, and applied once.
    log = wallet.log()
    repeats = [r for r in log if r.get("repeat")]
    assert repeats, "no call was ever repeated"
    for r in repeats:
        first = [x for x in log if x["transaction_id"] == r["transaction_id"]]
        assert len({x["request_id"] for x in first}) == 1  # the same request id each time
