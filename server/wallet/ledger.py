"""Chemmy's own ledger as the wallet: ``internal`` (play money) and ``transfer`` (money
the operator moved in through the transfer API). docs/wallet.md.

A coup's money moves in the table's own commit here (the store checks every entry
atomically where the balances live), so nothing is confirmed from outside: the table
deals as soon as betting closes, and there are no calls to deliver.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.store.base import (
    Store,
)

from .base import WalletAnswer, WalletError

__all__ = ["LedgerWallet"]


class LedgerWallet:
    """A :class:`~server.wallet.base.Wallet` over Chemmy's store."""

    confirms_holds = False
    game: str | None = None  # no calls are made

    def __init__(self, store: Store, mode: str = "internal") -> None:
        if mode not in ("internal", "transfer"):
            raise ValueError(f"a ledger wallet is internal or transfer, not {mode!r}")
        self.store = store
        self.mode = mode
        #: Only play money comes from the cashier; real money comes from the operator.
        self.takes_deposits = mode == "internal"

    def __repr__(self) -> str:
        return f"LedgerWallet({self.mode!r})"

    async def balance(
        self, player: str, currency: str | None, session: Mapping[str, Any] | None = None
    ) -> int:
        """The player's money on no table, as the store has it."""
        return (await self.store.player_money(player))[1]

    async def debit(self, call: dict[str, Any], deadline: float) -> WalletAnswer:
        raise WalletError("a ledger wallet's wagers are held in the table's own commit")

    async def deliver(self, call: dict[str, Any]) -> WalletAnswer:
        raise WalletError("a ledger wallet has no calls to deliver")

    async def close(self) -> None:
        return None
