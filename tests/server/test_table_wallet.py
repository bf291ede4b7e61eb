"""The croupier's per-table wallet (server/croupier/wallet.py) and issue 8's defects 0
and 4: nothing of a step outlives it (its entries go to the commit, no key is kept), so
a long-running server's memory does not grow with the ledger, and a step retried after
a failed commit posts each entry again (the store, not memory, knows what is posted)."""

from __future__ import annotations

from typing import Any

import pytest

from server.croupier.wallet import TableWallet
from server.ledger.accounts import DuplicateEntry, InsufficientFunds
from tests.kit import Game


def test_a_step_forgets_its_keys_once_drained() -> None:
    wallet = TableWallet({"player:ann": 1_000})
    wallet.transfer("k1", "player:ann", "stake:t1:ann", 300, "stake")
    with pytest.raises(DuplicateEntry):  # twice in one step: a bug
        wallet.transfer("k1", "player:ann", "stake:t1:ann", 300, "stake")
    (entry,) = wallet.drain()
    assert entry.key == "k1" and wallet.pending == [] and wallet.drain() == []
    # Undone and retried (the wallet reloaded from the store): posted again, once.
    wallet.load([("player:ann", 1_000), ("stake:t1:ann", 0)])
    wallet.transfer("k1", "player:ann", "stake:t1:ann", 300, "stake")
    assert [e.key for e in wallet.drain()] == ["k1"]


def test_player_and_stake_accounts_never_go_below_zero_here() -> None:
    wallet = TableWallet({"player:ann": 100})
    with pytest.raises(InsufficientFunds):
        wallet.transfer("k", "player:ann", "stake:t1:ann", 101, "stake")
    with pytest.raises(InsufficientFunds):
        wallet.transfer("k", "stake:t1:ann", "held:t1", 1, "hold")
    wallet.transfer("w", "house", "player:ann", 50, "win")  # the house may go below zero
    assert (wallet.balance("house"), wallet.balance("player:ann")) == (-50, 150)
    with pytest.raises(ValueError):
        wallet.transfer("z", "player:ann", "house", 0, "lose")


async def test_a_long_game_keeps_no_entries_in_memory(net: Any) -> None:
    server = await net.start(rate_limit=10_000.0, rate_burst=10_000)  # the driver is quick
    ann = await net.player(server, "ann")
    bob = await net.player(server, "bob", "msgpack")
    players = {"ann": ann, "bob": bob}
    for client in players.values():
        await client.join("t1")
        await client.call("sit", table="t1")
    game = Game("t1", players, ann)
    actor = server.actors["t1"]
    sizes = []
    for _ in range(6):
        await game.play_coup({"ann": {"banker": 500}, "bob": {"player": 300, "tie": 100}})
        sizes.append(len(actor.wallet.balances))
        assert actor.wallet.pending == []  # every entry went to its step's commit
    assert len(set(sizes[1:])) == 1, sizes  # the accounts it knows do not grow per coup
    assert not hasattr(actor.wallet, "entries")
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"] and audit["holds_ok"]
