"""Where players' money lives: Chemmy's own ledger, or the operator's wallet (docs/wallet.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Wallet

if TYPE_CHECKING:
    from server.process.config import ServerConfig
    from server.store.base import (
        Store,
    )

    from .signing import Signer

__all__ = ["Wallet", "make_wallet", "wallet_signer"]


def wallet_signer(config: ServerConfig) -> Signer:
    """What signs Chemmy's calls to the operator's wallet (``--wallet-signature``): the
    shared ``--wallet-secret``, or the private key of ``--wallet-signing-key-file``
    under ``--wallet-key-id`` (read and checked once more: ``load_config`` did)."""
    from server.process.config import wallet_signing_key

    from .signing import HmacSigner, KeySigner

    if config.wallet_signature == "hmac":
        assert config.wallet_secret is not None
        return HmacSigner(config.wallet_secret.encode("utf-8"))
    assert config.wallet_key_id is not None
    return KeySigner(wallet_signing_key(config), config.wallet_key_id)


def make_wallet(config: ServerConfig, store: Store) -> Wallet:
    """The wallet ``--wallet`` names."""
    if config.wallet == "seamless":
        from .seamless import SeamlessWallet

        assert config.wallet_url is not None
        return SeamlessWallet(
            config.wallet_url,
            wallet_signer(config),
            game=config.wallet_game,
            call_timeout=config.wallet_call_timeout,
        )
    from .ledger import LedgerWallet

    return LedgerWallet(store, config.wallet)
