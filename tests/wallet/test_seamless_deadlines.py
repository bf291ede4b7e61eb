"""The seamless wallet keeps its promises (issue 33, points 7-11): a real Chemmy server
(in this process, on a real port) calling the reference wallet (examples/wallet, a real
subprocess over HTTP) that dribbles, holds and loses its answers on cue.

- ``--wallet-timeout`` bounds the whole debit phase, however slowly an answer comes;
- each credit and rollback goes on its own, bounded by ``--wallet-call-timeout``;
- a balance that may be a repeated answer's is never taken: ``/balance`` is asked;
- a player's credits and rollbacks reach the wallet before their next debit;
- a round no debit of which stood is recorded (void, undealt) for the operator.

Every test closes the books after (tests/wallet/seamless_helpers.py
``check_wallet_books``: every debit the wallet took has one credit or rollback, the
balances match to the minor unit, the ledger audits clean).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest

from server.croupier.seamless import HELD_BACK
from server.gateway.server import ChemmyServer
from server.ledger.accounts import player_account
from server.wallet.signing import HEADER, signature_header
from tests.kit import scaled
from tests.kit.client import Client
from tests.kit.game import Game
from tests.kit.inproc import Net
from tests.kit.tables import table_def
from tests.wallet.seamless_helpers import (
    PLAYERS,
    START,
    check_wallet_books,
    debit_outcome,
    debit_phase,
    place_and_close,
    play_seamless_coup,
    refusals,
    settle_dealt,
    wait_until,
)
from tests.wallet.wallet_helpers import ReferenceWallet

pytestmark = pytest.mark.slow  # a wallet subprocess, and deadlines run out on purpose

#: The debits' deadline in these tests, and what the phase may take past it (the
#: answers stored, the rollbacks written, the table's step).
TIMEOUT = 1.0
MARGIN = 0.5
#: The same for a whole shoe's 20-odd deadlines in a row (ended 4-9 ms past the deadline
#: alone; two clean-clone runs of the suite, its three workers on two cores, saw one go
#: 0.55 and 0.71 s past): still far below the 30 s its held answers would take.
SHOE_MARGIN = 1.0
KEY = "deadline-tests-operator-key-0123456789abcdef"


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
        "wallet_timeout": scaled(TIMEOUT),
        "guest": False,
        "operator_key": KEY,
        "tables": (table_def("t1", currency="EUR", timers={"betting": 30}),),
    }
    settings.update(over)
    return await net.start(**settings)


async def seated(net: Net, server: ChemmyServer, seed: int) -> Game:
    clients: dict[str, Client] = {}
    for seat, pid in enumerate(PLAYERS, start=1):
        clients[pid] = client = await net.player(server, pid, currency="EUR")
        await client.join("t1")
        await client.call("sit", table="t1", seat=seat)
    return Game("t1", clients, clients["alice"], rng=random.Random(seed))


async def quiet(server: ChemmyServer, player: str | None = None) -> None:
    """No call (of ``player``'s) is waiting for the wallet's answer."""

    async def done() -> bool:
        return not await server.store.wallet_calls(state="pending", player=player, limit=1)

    await wait_until(done, timeout=30, what="the pending wallet calls")


async def mirrors_match(server: ChemmyServer, wallet: ReferenceWallet) -> None:
    """Each player's mirror comes to the wallet's balance (a /balance asked after a
    repeated answer lands a moment after the call is acknowledged)."""

    async def same() -> bool:
        state = wallet.state()["players"]
        for pid in PLAYERS:
            mine = (await server.store.balances([player_account(pid)]))[player_account(pid)]
            if pid in state and mine != state[pid]["balance"]:
                return False
        return True

    await wait_until(same, timeout=10, what="the mirrors to match the wallet")


async def books(
    server: ChemmyServer, wallet: ReferenceWallet, players: tuple[str, ...] = PLAYERS
) -> dict[str, Any]:
    """No fault any more, every call delivered, the mirrors the wallet's: the books of
    ``players`` (whose money moved only by Chemmy's calls) close exactly."""
    wallet.reset()
    await quiet(server)
    await mirrors_match(server, wallet)
    return await check_wallet_books(server.store, wallet, players)


async def operator_get(server: ChemmyServer, path: str, **query: Any) -> httpx.Response:
    target = path + ("?" + urlencode(query) if query else "")
    header = signature_header(KEY.encode(), time.time(), "GET", target, b"")
    async with httpx.AsyncClient(timeout=scaled(10)) as http:
        return await http.get(f"http://127.0.0.1:{server.port}{target}", headers={HEADER: header})


async def sent_once(server: ChemmyServer, wallet: ReferenceWallet, rid: str) -> None:
    """Every credit and rollback of round ``rid`` has reached the wallet at least once
    (answered or not): sent, as they are, without waiting for the next coup."""

    async def sent() -> bool:
        calls = await server.store.wallet_calls(round_id=rid, limit=100)
        seen = {r["transaction_id"] for r in wallet.log()}
        return all(
            c["transaction_id"] in seen for c in calls if c["kind"] in ("credit", "rollback")
        )

    await wait_until(sent, timeout=10, what=f"the credits and rollbacks of {rid}")


def stored(calls: list[dict[str, Any]], txn: str) -> dict[str, Any]:
    return next(c for c in calls if c["transaction_id"] == txn)


# -- 7: one deadline for the whole debit phase ----------------------------------------------
async def test_a_dripped_debit_answer_holds_the_table_no_longer_than_the_wallet_timeout(
    net: Net, wallet: ReferenceWallet
) -> None:
    """Bob's debit is answered one byte every 0.5 s (a minute for the whole answer):
    the cards come at ``--wallet-timeout``, bob left out and his debit (which the
    wallet took) rolled back; alice and carol play."""
    server = await seamless_server(net, wallet)
    game = await seated(net, server, seed=21)
    wallet.faults({"endpoint": "debit", "fault": "drip", "seconds": 0.5, "player": "bob"})
    opened = await place_and_close(game, {"alice": {"banker": 1000}, "bob": {"player": 500}})
    rid, start = opened["data"]["round_id"], opened["start"]
    await wait_until(
        lambda: debit_outcome(game, rid, start) is not None,
        timeout=TIMEOUT + 5,
        what="the cards (the dripped debit still holding the table)",
    )
    phase = debit_phase(game, rid, start)
    assert phase is not None and phase <= scaled(TIMEOUT + MARGIN), phase
    assert await refusals(game, rid, start) == {"bob": "wallet_unavailable"}
    outcome = debit_outcome(game, rid, start)
    assert outcome is not None and outcome["kind"] == "dealt"
    assert sorted(outcome["bets"]) == ["alice"]
    await settle_dealt(game, rid, opened["data"]["coup_no"], start, outcome["bets"])
    dripped = [r for r in wallet.log() if r["fault"] == "drip"]
    assert [r["transaction_id"] for r in dripped] == [f"{rid}:bob:debit"]  # one try: no time
    closing = await books(server, wallet)
    assert wallet.balance("bob") == START  # the wallet took it; the rollback gave it back
    rollback = stored(closing["calls"], f"{rid}:bob:rollback")
    assert rollback["reason"] == "debit_unanswered" and rollback["state"] == "acknowledged"


# -- 8: calls go independently, each with its own timeout --------------------------------
async def test_a_held_credit_delays_no_other_credit_and_is_given_up_at_the_call_timeout(
    net: Net, wallet: ReferenceWallet
) -> None:
    """Alice's credit is applied and its answer held for a minute. The next coup's
    credits (bob's, carol's) are acknowledged at once all the same, and alice's is given
    up at ``--wallet-call-timeout`` and sent again (the wallet answers the repeat)."""
    call_timeout = scaled(2.0)
    server = await seamless_server(net, wallet, wallet_call_timeout=call_timeout)
    game = await seated(net, server, seed=22)
    wallet.faults({"endpoint": "credit", "fault": "held", "seconds": 60, "player": "alice"})
    first = await play_seamless_coup(game, {"alice": {"banker": 1000}, "bob": {"player": 500}})
    assert first["kind"] == "dealt"
    held = f"{first['round_id']}:alice:credit"
    await asyncio.to_thread(wallet.wait_for_log, lambda r: r["transaction_id"] == held)
    sent_at = time.monotonic()
    second = await play_seamless_coup(game, {"bob": {"player": 600}, "carol": {"banker": 700}})
    assert second["kind"] == "dealt" and second["refused"] == {}
    settled_at = time.monotonic()
    rid = second["round_id"]

    async def credited() -> bool:
        calls = await server.store.wallet_calls(round_id=rid, kind="credit")
        return len(calls) == 2 and all(c["state"] == "acknowledged" for c in calls)

    await wait_until(credited, timeout=call_timeout, what="the second coup's credits")
    waited = time.monotonic() - settled_at
    assert waited < scaled(1.0), waited  # not behind alice's held one
    first_try = await server.store.wallet_call(held)
    assert first_try is not None
    if time.monotonic() - sent_at < call_timeout:  # (the machine was quick enough to see it)
        assert first_try["state"] == "pending"
    # Given up at the call's own timeout, then sent again: the repeat is acknowledged.
    repeat = await asyncio.to_thread(
        wallet.wait_for_log, lambda r: r["transaction_id"] == held and r["repeat"]
    )
    tries = [r for r in wallet.log() if r["transaction_id"] == held]
    gap = repeat["time"] - tries[0]["time"]
    assert call_timeout <= gap + 0.05 and gap <= call_timeout + 0.6 + scaled(MARGIN), gap
    await books(server, wallet)
    done = await server.store.wallet_call(held)
    assert done is not None and done["state"] == "acknowledged" and done["attempts"] == 2


# -- 9: a repeated answer's balance is never the player's balance ------------------------
async def test_a_repeated_credit_answer_does_not_set_the_balance_the_wallet_is_asked(
    net: Net, wallet: ReferenceWallet
) -> None:
    """Bob's credit is applied but its answer lost; by the time Chemmy's retry gets the
    repeat (with the first answer's balance), bob has paid 50.00 EUR in on the
    operator's site. Chemmy's mirror of his balance must be the wallet's, not the
    repeated answer's."""
    server = await seamless_server(net, wallet)
    game = await seated(net, server, seed=23)
    wallet.faults(
        {"endpoint": "credit", "fault": "lost_answer", "count": 1, "player": "bob"},
        {"endpoint": "credit", "fault": "http500", "count": 2, "player": "bob"},
    )
    coup = await play_seamless_coup(game, {"alice": {"banker": 1000}, "bob": {"player": 500}})
    txn = f"{coup['round_id']}:bob:credit"
    await asyncio.to_thread(
        wallet.wait_for_log, lambda r: r["transaction_id"] == txn and r["fault"] == "lost_answer"
    )
    credited = wallet.balance("bob")  # what the lost answer said, and every repeat says
    wallet.set_player("bob", balance=credited + 5000)  # a deposit, at the operator

    async def acknowledged() -> bool:
        call = await server.store.wallet_call(txn)
        return call is not None and call["state"] == "acknowledged"

    await wait_until(acknowledged, timeout=15, what="bob's credit")
    call = await server.store.wallet_call(txn)
    assert call is not None and call["answer"]["balance"] == credited  # a repeat's
    await mirrors_match(server, wallet)  # the wallet's balance, not the repeat's
    mirror = (await server.store.balances([player_account("bob")]))[player_account("bob")]
    assert mirror == wallet.balance("bob") == credited + 5000
    assert [r for r in wallet.log() if r["endpoint"] == "balance" and r["player"] == "bob"]
    await books(server, wallet, ("alice", "carol"))  # (bob's money moved at the operator too)


# -- 10: a player's credit before their next debit -----------------------------------------
async def test_a_players_credit_reaches_the_wallet_before_their_next_debit(
    net: Net, wallet: ReferenceWallet
) -> None:
    """Bob's credit fails twice (its next try would be seconds away) and carol's is held
    by the wallet past the next debits' deadline. Bob's next debit goes only once his
    credit is acknowledged; carol's is never sent (she is told wallet_unavailable and
    her debit is rolled back), so no debit of theirs overtakes their credit."""
    server = await seamless_server(net, wallet, wallet_timeout=scaled(1.5))
    game = await seated(net, server, seed=24)
    wallet.faults(
        {"endpoint": "credit", "fault": "http500", "count": 3, "player": "bob"},
        {"endpoint": "credit", "fault": "timeout", "seconds": 30, "player": "carol"},
    )
    bets = {"alice": {"banker": 1000}, "bob": {"player": 500}, "carol": {"player": 700}}
    first = await play_seamless_coup(game, bets)
    assert first["kind"] == "dealt" and first["refused"] == {}
    second = await play_seamless_coup(game, bets)
    assert second["refused"] == {"carol": "wallet_unavailable"}
    log = wallet.log()

    def at(txn: str, **match: Any) -> int:
        found = [
            i
            for i, r in enumerate(log)
            if r["transaction_id"] == txn and all(r[k] == v for k, v in match.items())
        ]
        assert found, (txn, match, log)
        return found[0]

    one, two = first["round_id"], second["round_id"]
    for pid in ("alice", "bob"):
        assert at(f"{one}:{pid}:credit", http=200, status="ok") < at(f"{two}:{pid}:debit")
    assert not [r for r in log if r["transaction_id"] == f"{two}:carol:debit"]  # never sent
    calls = await server.store.wallet_calls(round_id=two, limit=100)
    held = stored(calls, f"{two}:carol:debit")
    assert held["error"] == HELD_BACK and held["answer"] is None
    closing = await books(server, wallet)
    back = stored(closing["calls"], f"{two}:carol:rollback")
    assert back["reason"] == "debit_unanswered" and back["state"] == "acknowledged"
    assert stored(closing["calls"], f"{two}:carol:debit")["state"] == "rolled_back"


# -- 11: an undealt round is recorded -------------------------------------------------------
async def test_an_undealt_round_is_recorded_void_and_the_operator_finds_it(
    net: Net, wallet: ReferenceWallet
) -> None:
    """Alice's debit is refused, bob's unanswered: no wager stands, no card is dealt.
    The round is recorded void (``undealt``, each player's refusal and wagers), found by
    ``/operator/v1/rounds/{id}`` and the player filter, with one rollback (bob's)."""
    server = await seamless_server(net, wallet)
    game = await seated(net, server, seed=25)
    wallet.faults(
        {"endpoint": "debit", "fault": "refuse", "code": "insufficient_funds", "player": "alice"},
        {"endpoint": "debit", "fault": "timeout", "seconds": 30, "player": "bob"},
    )
    coup = await play_seamless_coup(game, {"alice": {"banker": 1000}, "bob": {"player": 500}})
    assert coup["kind"] == "none"
    rid = coup["round_id"]
    answer = await operator_get(server, f"/operator/v1/rounds/{quote(rid)}")
    assert answer.status_code == 200, answer.text
    record = answer.json()["round"]
    assert record["void"] is True and record["undealt"] is True
    assert record["reason"] == "undealt" and record["voided_in"] == "debiting"
    assert record["refused"] == {"alice": "insufficient_funds", "bob": "wallet_unavailable"}
    assert record["wagers"] == {"alice": {"banker": 1000}, "bob": {"player": 500}}
    assert record["players"] == ["alice", "bob"] and record["bets"] == []
    assert record["player"] == [] and record["outcome"] is None
    assert answer.json()["money"]["house_result"] == 0
    listed = await operator_get(server, "/operator/v1/rounds", player="bob")
    assert [r["round_id"] for r in listed.json()["rounds"]] == [rid]
    # Its players see it in their history, void with the reason, and only their own refusal.
    for pid, reason in (("alice", "insufficient_funds"), ("bob", "wallet_unavailable")):
        (mine,) = (await game.players[pid].call("history"))["rounds"]
        assert (mine["round_id"], mine["void"], mine["reason"]) == (rid, True, "undealt")
        assert mine["refused"] == {pid: reason} and list(mine["wagers"]) == [pid]
    closing = await books(server, wallet)
    closers = [
        (c["player"], c["kind"], c["reason"]) for c in closing["calls"] if c["kind"] != "debit"
    ]
    assert closers == [("bob", "rollback", "debit_unanswered")]  # the record closes nothing
    # The next round opens under a new id and plays.
    after = await play_seamless_coup(game, {"carol": {"player": 700}})
    assert after["kind"] == "dealt" and after["round_id"] != rid


# -- a whole shoe, every fault, every deadline ---------------------------------------------
#: The faults in force, coup after coup (each set replaces the last; what a set holds
#: goes on being held): on debits, credits, rollbacks and balances, for each player.
SHOE_FAULTS: list[list[dict[str, Any]]] = [
    [{"endpoint": "debit", "fault": "drip", "seconds": 0.5, "player": "bob", "count": 1}],
    [{"endpoint": "credit", "fault": "held", "seconds": 30, "player": "alice", "count": 1}],
    [
        {"endpoint": "credit", "fault": "drip", "seconds": 0.5, "player": "carol", "count": 1},
        {"endpoint": "debit", "fault": "http500", "player": "alice", "count": 1},
    ],
    [
        {"endpoint": "debit", "fault": "timeout", "seconds": 30, "player": "carol", "count": 1},
        {"endpoint": "rollback", "fault": "timeout", "seconds": 30, "count": 1},
    ],
    [
        {"endpoint": "credit", "fault": "lost_answer", "player": "bob", "count": 1},
        {"endpoint": "debit", "fault": "reset", "player": "alice", "count": 1},
    ],
    [
        {"endpoint": "debit", "fault": "held", "seconds": 30, "player": "alice", "count": 1},
        {"endpoint": "rollback", "fault": "http500", "count": 1},
    ],
    [
        {"endpoint": "debit", "fault": "slow", "seconds": 0.2, "player": "bob", "count": 1},
        {"endpoint": "debit", "fault": "lost_answer", "player": "carol", "count": 1},
        {"endpoint": "balance", "fault": "drip", "seconds": 0.5, "count": 1},
    ],
    [
        {"endpoint": "debit", "fault": "refuse", "code": "insufficient_funds", "player": "bob"},
        {"endpoint": "credit", "fault": "http500", "count": 2},
    ],
    [],
]


@pytest.mark.xdist_group("elapsed")  # asserts how long each debit phase took
async def test_a_whole_shoe_with_every_fault_keeps_every_debit_deadline_and_the_books(
    net: Net, wallet: ReferenceWallet, capsys: pytest.CaptureFixture[str]
) -> None:
    """A whole (short) shoe with the faults of :data:`SHOE_FAULTS` in turn, never waiting
    for the calls they hold between coups: every coup's debit phase ends within
    ``--wallet-timeout`` and a margin, and the books close exactly after."""
    timeout, call_timeout = scaled(0.5), scaled(1.0)
    server = await seamless_server(
        net,
        wallet,
        wallet_timeout=timeout,
        wallet_call_timeout=call_timeout,
        tables=(table_def("t1", currency="EUR", decks=6, stop_offset=100, timers={"betting": 30}),),
    )
    game = await seated(net, server, seed=26)
    bets = {"alice": {"banker": 1000}, "bob": {"player": 500}, "carol": {"tie": 100}}
    phases: list[float] = []
    refused: dict[str, int] = {}
    while not game.watcher.events("t1", "shoe_ended"):
        rules = SHOE_FAULTS[len(phases) % len(SHOE_FAULTS)]
        # A debit fault needs its debit sent: a player's debit waits for their earlier
        # credits and rollbacks (33.10), which the faults before may still hold.
        for pid in {f["player"] for f in rules if f["endpoint"] == "debit"}:
            await quiet(server, pid)
        wallet.faults(*rules, latency=0.005)
        opened = await place_and_close(game, bets)
        rid, start = opened["data"]["round_id"], opened["start"]
        await wait_until(
            lambda rid=rid, start=start: debit_outcome(game, rid, start) is not None,
            timeout=timeout + 5,
            what=f"the debits of {rid}",
        )
        phase = debit_phase(game, rid, start)
        assert phase is not None and phase <= timeout + scaled(SHOE_MARGIN), (rid, phase)
        phases.append(phase)
        outcome = debit_outcome(game, rid, start)
        assert outcome is not None
        for reason in (await refusals(game, rid, start)).values():
            refused[reason] = refused.get(reason, 0) + 1
        if outcome["kind"] == "dealt":
            await settle_dealt(game, rid, opened["data"]["coup_no"], start, outcome["bets"])
        await sent_once(server, wallet, rid)  # under this coup's faults, not the next's
    met = {(r["endpoint"], r["fault"]) for r in wallet.log() if r.get("fault")}
    # (/balance is asked only after an answer that may be a repeat, when the calls in
    # flight have landed: whether one falls in its coup's turn is up to the timing.)
    wanted = {
        (f["endpoint"], f["fault"])
        for rules in SHOE_FAULTS
        for f in rules
        if f["endpoint"] != "balance"
    }
    assert wanted <= met, wanted - met
    closing = await books(server, wallet)
    assert refused.get("wallet_unavailable") and refused.get("insufficient_funds")
    phases.sort()
    with capsys.disabled():
        print(
            f"\n{len(phases)} coups, --wallet-timeout {timeout:g} s: debit phase median "
            f"{phases[len(phases) // 2]:.3f} s, max {phases[-1]:.3f} s; "
            f"refused {refused}; {len(closing['calls'])} calls, books exact"
        )
