"""The one contract every wallet mode keeps (server.wallet.base.Wallet), run on all three:
``internal`` and ``transfer`` over a real SQLite store, ``seamless`` against the
reference operator wallet (a real subprocess over HTTP).

- Money that reaches the player by the mode's own route (the cashier's play money, the
  operator's transfer, the operator's wallet) is what ``balance`` reports, once: the
  same movement again (its key, its transaction id) changes nothing.
- The flags say how the mode works, and the table and the croupier read only them:
  only ``internal`` takes play-money deposits; only ``seamless`` confirms holds.
- A wallet that confirms holds takes a coup's wagers by ``debit`` (applied once, the
  same answer to a repeat, refused with the wallet's own code), and ``deliver``s
  credits and rollbacks; one that does not refuses to be asked (its money moves in
  the table's own commit).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from server.ledger.accounts import CASHIER, OPERATOR, Entry, player_account
from server.ledger.rules import (
    ledger_key,
)
from server.store.base import (
    Store,
)
from server.store.sqlite import SQLiteStore
from server.wallet.base import OK, Wallet, WalletError
from server.wallet.calls import credit_call, debit_call, rollback_call
from server.wallet.ledger import LedgerWallet
from server.wallet.seamless import SeamlessWallet
from tests.wallet.wallet_helpers import ReferenceWallet, reference_wallet

MODES = ("internal", "transfer", "seamless")
#: The game code Chemmy's calls carry (``--wallet-game``'s default).
GAME = "chemmy"
Fund = Callable[[str, int, str], Awaitable[None]]


class Mode:
    """One mode's wallet, and the mode's own way for money to reach a player."""

    def __init__(self, wallet: Wallet, fund: Fund, store: Store, ref: ReferenceWallet | None):
        self.wallet, self.fund, self.store, self.ref = wallet, fund, store, ref


@pytest.fixture(params=MODES)
async def mode(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Mode]:
    store = SQLiteStore(tmp_path / "chemmy.sqlite3")
    await store.open()
    name = str(request.param)
    try:
        if name == "seamless":
            with reference_wallet(tmp_path, start_balance=0) as ref:
                wallet = SeamlessWallet(ref.url, ref.secret)

                async def fund_at_operator(player: str, amount: int, key: str) -> None:
                    if key not in funded:  # the operator's own books: once per key
                        funded.add(key)
                        ref.set_player(player, balance=ref_balance(ref, player) + amount)

                funded: set[str] = set()
                yield Mode(wallet, fund_at_operator, store, ref)
                await wallet.close()
        else:
            source = CASHIER if name == "internal" else OPERATOR

            async def fund_in_ledger(player: str, amount: int, key: str) -> None:
                entry = Entry(ledger_key(name, key), source, player_account(player), amount, name)
                await store.commit(entries=[entry])

            yield Mode(LedgerWallet(store, name), fund_in_ledger, store, None)
    finally:
        await store.close()


def ref_balance(ref: ReferenceWallet, player: str) -> int:
    players = ref.state()["players"]
    return int(players[player]["balance"]) if player in players else 0


async def test_money_that_reaches_a_player_is_their_balance_once(mode: Mode) -> None:
    wallet = mode.wallet
    await mode.fund("ann", 2500, "first")
    assert await wallet.balance("ann", "EUR") == 2500
    await mode.fund("ann", 2500, "first")  # the same movement again
    await mode.fund("ann", 700, "second")
    assert await wallet.balance("ann", "EUR") == 3200
    assert await wallet.balance("bea", "EUR") == 0  # nobody sent her anything


async def test_the_flags_say_how_the_mode_works(mode: Mode) -> None:
    wallet = mode.wallet
    assert wallet.mode in MODES
    assert wallet.takes_deposits == (wallet.mode == "internal")
    assert wallet.confirms_holds == (wallet.mode == "seamless")
    assert "secret" not in repr(wallet) and (
        mode.ref is None or mode.ref.secret not in repr(wallet)
    )


async def test_a_coups_wagers_are_debited_once_and_closed_once(mode: Mode) -> None:
    wallet = mode.wallet
    await mode.fund("ann", 5000, "in")
    now = time.time()
    debit = debit_call("t1", "t1-1-1", "ann", {"banker": 1000, "tie": 200}, "EUR", now, game=GAME)
    deadline = time.monotonic() + 5
    if not wallet.confirms_holds:
        with pytest.raises(WalletError):  # the ledger's own commit moves the money
            await wallet.debit(debit, deadline)
        with pytest.raises(WalletError):
            await wallet.deliver(credit_call("t1", "t1-1-1", "ann", [], "EUR", now, game=GAME))
        return
    first = await wallet.debit(debit, deadline)
    assert first.status == OK and first.balance == 3800
    again = await wallet.debit(debit, deadline)  # a retry: the same answer, nothing moved
    assert again.status == OK and again.balance == 3800
    assert await wallet.balance("ann", "EUR") == 3800
    payouts = [
        {"player": "ann", "area": "banker", "stake": 1000, "returned": 1950},
        {"player": "ann", "area": "tie", "stake": 200, "returned": 0},
    ]
    credit = credit_call("t1", "t1-1-1", "ann", payouts, "EUR", now, game=GAME)
    assert (await wallet.deliver(credit)).status == OK
    assert (await wallet.deliver(credit)).status == OK  # delivered twice, applied once
    assert await wallet.balance("ann", "EUR") == 3800 + 1950
    # Too much: refused with the wallet's code, nothing moved.
    big = debit_call("t1", "t1-1-2", "ann", {"banker": 10**6}, "EUR", now, game=GAME)
    refused = await wallet.debit(big, deadline)
    assert refused.clear and refused.status == "insufficient_funds"
    # A rollback of a debit the wallet never saw: answered, and the debit can no longer land.
    lost = debit_call("t1", "t1-1-3", "ann", {"player": 500}, "EUR", now, game=GAME)
    back = rollback_call("t1", "t1-1-3", "ann", 500, "EUR", now, "debit_unanswered", game=GAME)
    assert (await wallet.deliver(back)).status == OK
    late = await wallet.debit(lost, deadline)
    assert late.clear and late.status == "rolled_back"
    assert await wallet.balance("ann", "EUR") == 3800 + 1950


async def test_the_courier_retries_until_acknowledged_and_gives_up_only_on_a_4xx(
    tmp_path: Path,
) -> None:
    """A credit refused with a 200 (the player's account locked for a moment) is retried;
    one the wallet refuses for good (a 4xx: here a rollback of another player's debit)
    is ``failed``, logged, and retried no more."""
    from server.wallet.courier import Courier

    store = SQLiteStore(tmp_path / "chemmy.sqlite3")
    await store.open()
    with reference_wallet(tmp_path, start_balance=5000) as ref:
        wallet = SeamlessWallet(ref.url, ref.secret)
        courier = Courier(store, wallet)
        now = time.time()
        debit = debit_call("t1", "t1-1-1", "ann", {"banker": 1000}, "EUR", now, game=GAME)
        assert (await wallet.debit(debit, time.monotonic() + 5)).status == OK
        payouts = [{"player": "ann", "area": "banker", "stake": 1000, "returned": 1950}]
        credit = credit_call("t1", "t1-1-1", "ann", payouts, "EUR", now, game=GAME)
        wrong = rollback_call("t1", "t1-1-1", "bea", 1000, "EUR", now, "voided", game=GAME)
        wrong["body"]["debit_transaction_id"] = "t1-1-1:ann:debit"  # not bea's debit
        await store.commit(calls=[credit, wrong])
        ref.faults({"endpoint": "credit", "fault": "refuse", "code": "player_blocked", "count": 1})
        await courier.round()
        assert (await store.wallet_call(credit["transaction_id"]))["state"] == "pending"  # type: ignore[index]
        assert (await store.wallet_call(wrong["transaction_id"]))["state"] == "failed"  # type: ignore[index]
        await store.update_wallet_call(credit["transaction_id"], {"next_at": now})
        assert await courier.round() == 1  # only the credit is due; the failed one is not
        done = await store.wallet_call(credit["transaction_id"])
        assert done is not None and done["state"] == "acknowledged" and done["attempts"] == 2
        assert ref_balance(ref, "ann") == 5000 - 1000 + 1950
        await wallet.close()
    await store.close()
