"""Whole coups on a seamless wallet: a real Chemmy server calling the reference operator
wallet (examples/wallet, a real subprocess over HTTP) while it fails on cue.

After each test, the books are closed and compared (:func:`check_books`, which is
tests/wallet/seamless_helpers.py's ``check_wallet_books`` once no call is pending): every debit
the wallet applied has exactly one credit or rollback, Chemmy's records and the
wallet's agree to the minor unit, each player's mirror equals the wallet's balance, no
credit was applied twice, and Chemmy's own ledger audits clean.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from client_cli.main import main as cli_main
from client_cli.operator import fetch
from server.gateway.server import ChemmyServer
from server.store.sqlite import SQLiteStore
from server.wallet.calls import rollback_call
from tests.kit import scaled
from tests.kit.client import Client, http_get
from tests.kit.game import CoupLog, Game
from tests.kit.inproc import Net
from tests.kit.tables import table_def
from tests.wallet.seamless_helpers import (
    PLAYERS,
    START,
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
    """Chemmy's records and the wallet's agree, once no call is pending."""
    await quiet(server)
    return await check_wallet_books(server.store, wallet)


@pytest.mark.slow  # a wallet subprocess and whole coups: a second or more
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
    # Counted for the operator's on-call engineer.
    _, _, body = await http_get(server.port, "/metrics")
    text = body.decode()
    assert 'chemmy_wallet_calls_total{kind="debit",outcome="ok"} 9.0' in text
    assert 'chemmy_wallet_calls_total{kind="credit",outcome="ok"} 9.0' in text
    assert "chemmy_wallet_debit_seconds_count 3.0" in text
    # Every client showed the wallet's money: the snapshot balance is the mirror.
    snap = await clients["bob"].join("t1")
    assert snap["snapshot"]["you"]["balance"] == wallet.balance("bob")


@pytest.mark.slow  # a wallet subprocess and whole coups: a second or more
async def test_bettors_without_a_seat_are_debited_and_credited_as_the_seated_are(
    net: Net, wallet: ReferenceWallet
) -> None:
    """GAME_RULES §5 on a seamless wallet: the wagers of bettors without a seat are
    debited with the seated players' (one call each), a refused bettor's chips go back
    (told in their copy of the one ``debit_refused`` for bettors, ``player`` null for
    the others) and the coup is dealt to the wagers that stand; each bettor who stood is
    credited, and the books of Chemmy and of the wallet agree."""
    server = await seamless_server(net, wallet)
    clients = await seat_players(net, server)
    bettors: dict[str, Client] = {}
    for pid in ("dee", "eve"):
        bettors[pid] = await net.player(server, pid, currency="EUR")
        await bettors[pid].join("t1")
    game = Game("t1", clients, clients["alice"], rng=random.Random(11), bettors=bettors)
    opened = await game.to_betting()
    rid, start = opened["data"]["round_id"], len(clients["alice"].frames)
    bets = {"alice": {"banker": 1000}, "dee": {"player": 800, "tie": 100}, "eve": {"banker": 300}}
    wallet.faults(
        {"endpoint": "debit", "fault": "refuse", "code": "insufficient_funds", "player": "eve"}
    )
    for pid, areas in bets.items():
        for area, amount in areas.items():
            await game.act(pid, "bet", area=area, amount=amount)
    for pid in clients:
        await game.act(pid, "done")  # (the bettors press nothing: they are not waited for)
    closed = await clients["alice"].wait_event("betting_closed", table="t1", timeout=scaled(10))
    wallet.reset()
    assert closed["data"]["bettors"] == 1 and closed["data"]["totals"] == {
        "banker": 1000,
        "player": 800,
        "tie": 100,
    }
    refused = await bettors["eve"].wait_event("debit_refused", table="t1")
    assert refused["data"] == {**refused["data"], "player": "eve", "reason": "insufficient_funds"}
    seen = clients["bob"].events("t1", "debit_refused")
    assert [e["data"] for e in seen] == [{"round_id": rid, "player": None}]
    await game.settle(CoupLog(rid, opened["data"]["coup_no"], game.holder(), {}), start)
    books = await check_books(server, wallet)
    calls = {(c["kind"], c["player"]) for c in books["calls"]}
    assert {("debit", "dee"), ("credit", "dee"), ("debit", "alice"), ("credit", "alice")} <= calls
    assert ("credit", "eve") not in calls
    for pid in ("dee", "eve"):
        snap = await bettors[pid].join("t1")
        assert snap["snapshot"]["you"]["balance"] == wallet.balance(pid)


@pytest.mark.slow
@pytest.mark.parametrize("part", [0, 1], ids=["even-rounds", "odd-rounds"])
async def test_faults_through_a_whole_shoe_leave_the_books_exact(
    net: Net, wallet: ReferenceWallet, part: int
) -> None:
    """The faults in turn, coup after coup, through a whole shoe, in two parts that run
    side by side: each part plays every other round of the fault list (``part``: the
    even rounds or the odd ones) and the coups of the rounds between with no fault, so
    that each part meets every fault, and the two together each as often as one shoe
    with no round left out."""
    server = await seamless_server(
        net,
        wallet,
        # The shortest shoe a table allows (6 decks, the stop card 100 from the end:
        # some 40 coups): each part meets each fault at least twice.
        tables=(table_def("t1", currency="EUR", decks=6, stop_offset=100, timers={"betting": 30}),),
        # The coups with no fault go as fast as the driver sends: no rate limit.
        rate_limit=10_000.0,
        rate_burst=10_000,
    )
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
    coups = 0
    while not game.watcher.events("t1", "shoe_ended"):  # a whole shoe, the faults in turn
        round_no, step = divmod(coups, len(faults))
        rules, expected = faults[step] if round_no % 2 == part else ([], {})
        wallet.faults(*rules, latency=0.005)
        outcome = await play_seamless_coup(game, bets)
        assert outcome["refused"] == expected, (rules, outcome)
        assert outcome["kind"] == ("none" if len(expected) == len(PLAYERS) else "dealt")
        await quiet(server)  # the retries ran into the faults before they are lifted
        wallet.reset()
        coups += 1
    assert coups > len(faults)
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


OPERATOR_KEY = "operator-key-for-the-tests-0123456789abcdef"


def documented_examples(section: str) -> list[Any]:
    """The JSON blocks of one section of docs/wallet.md."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "wallet.md").read_text()
    part = text[text.index(section) :]
    part = part[: part.index("\n## ", 1)]
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", part, re.S)]


def shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return None


@pytest.mark.slow  # a wallet subprocess and whole coups: a second or more
async def test_reconciliation_lists_every_call_as_documented(
    net: Net, wallet: ReferenceWallet, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await seamless_server(net, wallet, operator_key=OPERATOR_KEY)
    clients = await seat_players(net, server)
    game = Game("t1", clients, clients["alice"], rng=random.Random(5))
    wallet.faults(
        {"endpoint": "debit", "fault": "refuse", "code": "limit_reached", "player": "carol"}
    )
    bets = {"alice": {"banker": 1000}, "bob": {"player": 500, "tie": 100}, "carol": {"player": 700}}
    await play_seamless_coup(game, bets)
    await check_books(server, wallet)
    url = f"ws://127.0.0.1:{server.port}/"
    listed = await asyncio.to_thread(
        fetch, url, OPERATOR_KEY, "/operator/v1/transactions", {"player": "bob", "limit": 1}
    )
    totals = await asyncio.to_thread(
        fetch, url, OPERATOR_KEY, "/operator/v1/transactions/totals", {}
    )
    page, summed = documented_examples("## 4. Reconciliation")
    assert shape(listed) == shape(page) and shape(totals) == shape(summed)
    assert [c["transaction_id"] for c in listed["transactions"]] == ["t1-1-1:bob:credit"]
    rest = await asyncio.to_thread(
        fetch,
        url,
        OPERATOR_KEY,
        "/operator/v1/transactions",
        {"player": "bob", "cursor": listed["next_cursor"]},
    )
    assert [c["transaction_id"] for c in rest["transactions"]] == ["t1-1-1:bob:debit"]
    assert rest["next_cursor"] is None
    rows = {(t["kind"], t["state"]): (t["count"], t["amount"]) for t in totals["totals"]}
    assert rows[("debit", "refused")] == (1, 700)
    assert rows[("debit", "acknowledged")] == (2, 1600)
    # The same from the terminal, and nothing without the key.
    args = ["transactions", "--url", url, "--operator-key", OPERATOR_KEY, "--state", "refused"]
    assert await asyncio.to_thread(cli_main, args) == 0
    out = capsys.readouterr().out
    assert "t1-1-1:carol:debit" in out and "refused" in out and "bob" not in out
    bad = ["transactions", "--url", url, "--operator-key", "x" * 40]
    assert await asyncio.to_thread(cli_main, bad) == 2
    assert "401 the signature does not match" in capsys.readouterr().err


async def test_a_coup_voided_by_the_operator_rolls_its_debits_back(
    net: Net, wallet: ReferenceWallet
) -> None:
    server = await seamless_server(net, wallet)
    clients = await seat_players(net, server)
    game = Game("t1", clients, clients["alice"], rng=random.Random(3))
    await game.to_betting()
    for pid, area in (("alice", "banker"), ("bob", "player")):
        await game.act(pid, "bet", area=area, amount=800)
    for pid in PLAYERS:
        await game.act(pid, "done")
    await clients["alice"].wait_event("dealt", table="t1")  # debited, dealt, not settled
    op = await net.player(server, "boss", roles=("operator",), currency="EUR")
    await op.call("close_table", table="t1")
    await check_books(server, wallet)
    calls = await chemmy_calls(server)
    rollbacks = sorted((c["player"], c["reason"]) for c in calls if c["kind"] == "rollback")
    assert rollbacks == [("alice", "voided"), ("bob", "voided")]
    assert not [c for c in calls if c["kind"] == "credit"]
    assert all(wallet.balance(pid) == START for pid in ("alice", "bob"))  # as if never played


async def test_a_table_closed_while_debiting_rolls_back_what_the_wallet_took(
    net: Net, wallet: ReferenceWallet
) -> None:
    server = await seamless_server(net, wallet, wallet_timeout=scaled(5))
    clients = await seat_players(net, server)
    game = Game("t1", clients, clients["alice"], rng=random.Random(4))
    await game.to_betting()
    wallet.faults({"endpoint": "debit", "fault": "slow", "seconds": 1.0})
    await game.act("bob", "bet", area="player", amount=900)
    for pid in PLAYERS:
        await game.act(pid, "done")
    await clients["alice"].wait_event("debiting", table="t1")
    op = await net.player(server, "boss", roles=("operator",), currency="EUR")
    await op.call("close_table", table="t1")
    await check_books(server, wallet)  # the slow debit landed, and was rolled back
    assert wallet.balance("bob") == START
    calls = await chemmy_calls(server)
    assert [(c["kind"], c["reason"]) for c in calls if c["kind"] == "rollback"] == [
        ("rollback", "voided")
    ]


@pytest.mark.slow
async def test_a_debit_rolled_back_by_an_earlier_owner_is_never_sent_again(
    net: Net, wallet: ReferenceWallet, tmp_path: Path
) -> None:
    """A process stops while its table is debiting, having stored a rollback of bob's
    debit (it got no answer in time). The next process debits the round again with the
    same ids, but never bob's: the rollback may still be on its way to the wallet, and
    would undo a debit that the coup counted as standing."""
    db = str(tmp_path / "chemmy.sqlite3")
    server = await seamless_server(net, wallet, db=db, wallet_timeout=scaled(20))
    clients = await seat_players(net, server)
    game = Game("t1", clients, clients["alice"], rng=random.Random(9))
    await game.to_betting()
    wallet.faults({"endpoint": "debit", "fault": "slow", "seconds": 30.0})  # held till reset
    for pid, area in (("alice", "banker"), ("bob", "player")):
        await game.act(pid, "bet", area=area, amount=600)
    for pid in PLAYERS:
        await game.act(pid, "done")
    opened = await clients["alice"].wait_event("debiting", table="t1")
    rid = opened["data"]["round_id"]
    await net.stop(server)  # mid-debit: the table stays in DEBITING in the store
    wallet.reset()  # from here on a debit meets no fault
    rollback = rollback_call(
        "t1", rid, "bob", 600, "EUR", time.time(), "debit_unanswered", game="chemmy"
    )
    store = SQLiteStore(db)
    await store.open()
    await store.commit(calls=[rollback])  # as the earlier owner would have
    await store.close()
    server = await seamless_server(net, wallet, db=db, wallet_timeout=scaled(5))
    clients = {}
    for pid in PLAYERS:  # back at their seats (kept for them through the restart)
        clients[pid] = await net.player(server, pid, currency="EUR")
        await clients[pid].join("t1")
    watcher = clients["alice"]

    def settled() -> bool:
        return any(e["data"]["round_id"] == rid for e in watcher.events("t1", "settled"))

    game = Game("t1", clients, watcher, rng=random.Random(9))
    await wait_until(
        lambda: settled() or any(e["kind"] == "turn" for e in watcher.events("t1")),
        what="the coup dealt again",
    )
    for _ in range(10):
        if settled():
            break
        prompt = game.prompt()
        if prompt["kind"] == "turn":
            await game.turn_stage(prompt, CoupLog(rid, 1, None, {}))
        else:
            await asyncio.sleep(0.05)
    await wait_until(settled, what=f"{rid} settled")
    record = await server.store.round_record(rid)  # (the refusal came before anyone was back)
    assert record is not None and record["players"] == ["alice"]  # bob's wager never stood
    await check_books(server, wallet)
    # The first owner's debits ran into the slow fault; the second's found none.
    again = [r for r in wallet.log() if r["endpoint"] == "debit" and r["fault"] is None]
    assert [r["player"] for r in again] == ["alice"]  # bob's was never sent again
    assert wallet.balance("bob") == START


async def test_the_hello_and_the_cashier_show_the_operators_balance(
    net: Net, wallet: ReferenceWallet
) -> None:
    server = await seamless_server(net, wallet)
    wallet.set_player("dora", balance=43_210, currency="EUR")
    client = await net.player(server, "dora", currency="EUR")
    assert client.hello_reply["balance"] == 43_210  # asked at the hello, not Chemmy's 0
    assert client.hello_reply["deposits"] is False  # the operator's site takes deposits
    wallet.set_player("dora", balance=50_000)  # she deposited on the operator's site
    reply = await client.call("balance")
    assert reply["balance"] == reply["available"] == 50_000
    refused = await client.refused("deposits_closed", "deposit", msg_id="d1", amount=100)
    assert "operator" in refused["message"]
