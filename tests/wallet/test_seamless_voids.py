"""An operator's void on a seamless wallet (issue 21): the round's debits are rolled back
(reason ``voided``), never credited, and the books close (the reference wallet, a real
subprocess, against Chemmy's records: ``test_seamless_play.check_books``)."""

from __future__ import annotations

import random

import pytest

from server.wallet.calls import round_of
from tests.kit import scaled
from tests.kit.game import Game
from tests.kit.inproc import Net
from tests.server.test_operator_voids import Back
from tests.wallet.test_seamless_play import (
    PLAYERS,
    START,
    check_books,
    chemmy_calls,
    net,
    seamless_server,
    seat_players,
)
from tests.wallet.wallet_helpers import ReferenceWallet

__all__ = ["net"]  # the fixture, shared with test_seamless_play

KEY = "the-operators-key-for-the-void-tests-0123456789"


async def test_a_void_of_a_dealt_coup_rolls_its_debits_back(
    net: Net, wallet: ReferenceWallet
) -> None:
    server = await seamless_server(net, wallet, operator_key=KEY)
    clients = await seat_players(net, server)
    game = Game("t1", clients, clients["alice"], rng=random.Random(3))
    opened = await game.to_betting()
    rid = opened["data"]["round_id"]
    for pid, area in (("alice", "banker"), ("bob", "player")):
        await game.act(pid, "bet", area=area, amount=800)
    for pid in PLAYERS:
        await game.act(pid, "done")
    await clients["alice"].wait_event("dealt", table="t1")  # debited, dealt, not settled
    back = Back(server.port, KEY)
    try:
        answer = await back.void(rid, "the shoe jammed")
        assert answer.status_code == 200, answer.text
    finally:
        await back.http.aclose()
    await clients["bob"].wait_event("voided", table="t1")
    await check_books(server, wallet)
    calls = await chemmy_calls(server)
    rollbacks = sorted(
        (c["player"], c["reason"], c["amount"]) for c in calls if c["kind"] == "rollback"
    )
    assert rollbacks == [("alice", "voided", 800), ("bob", "voided", 800)]
    assert not [c for c in calls if c["kind"] == "credit"]
    assert all(wallet.balance(pid) == START for pid in ("alice", "bob"))  # as if never played


@pytest.mark.slow  # a wallet subprocess and whole coups: a second or more
async def test_a_void_while_the_wallet_debits_rolls_back_what_it_took(
    net: Net, wallet: ReferenceWallet
) -> None:
    server = await seamless_server(net, wallet, operator_key=KEY, wallet_timeout=scaled(5))
    clients = await seat_players(net, server)
    game = Game("t1", clients, clients["alice"], rng=random.Random(4))
    await game.to_betting()
    wallet.faults({"endpoint": "debit", "fault": "slow", "seconds": 1.0})
    await game.act("bob", "bet", area="player", amount=900)
    for pid in PLAYERS:
        await game.act(pid, "done")
    await clients["alice"].wait_event("debiting", table="t1")
    rid = round_of(server.actors["t1"].table.to_state())
    back = Back(server.port, KEY)
    try:
        assert (await back.void(rid, "the operator's wallet is stuck")).status_code == 200
    finally:
        await back.http.aclose()
    voided = await clients["bob"].wait_event("voided", table="t1")
    assert voided["data"]["refunded"] == {"bob": 900}
    await check_books(server, wallet)  # the slow debit landed, and was rolled back
    assert wallet.balance("bob") == START
    calls = await chemmy_calls(server)
    assert [(c["kind"], c["reason"]) for c in calls if c["kind"] == "rollback"] == [
        ("rollback", "voided")
    ]
    # The table plays on after it.
    opened = await game.to_betting()
    assert opened["data"]["round_id"] != rid
