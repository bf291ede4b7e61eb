"""Where players' money lives: Chemmy's own ledger, or the operator's wallet (docs/wallet.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Wallet

if TYPE_CHECKING:
    from server.net.config import ServerConfig
    from server.store.base import Store

__all__ = ["Wallet", "make_wallet"]


def make_wallet(config: ServerConfig, store: Store) -> Wallet:
    """The wallet ``--wallet`` names."""
    if config.wallet == "seamless":
        from .seamless import SeamlessWallet

        assert config.wallet_url is not None and config.wallet_secret is not None
        return SeamlessWallet(
            config.wallet_url, config.wallet_secret, call_timeout=config.wallet_call_timeout
        )
    from .ledger import LedgerWallet

    return LedgerWallet(store, config.wallet)
