"""A player's money as the gateway reads it for its clients: the balance and what is
available (the store's), a guest written to the store before their first seat or
deposit, and, where the operator's wallet holds the money (seamless), its balance asked
first and mirrored (docs/wallet.md §3).

:class:`Purse` is the gateway's (``ChemmyServer.purse``); the handlers reach it through
their contexts (``money``, ``session_money``, ``ask_wallet``, ``persist``:
``server.gateway.context``). Nothing here moves money between accounts (the table and
the operator's API do) or decides a rule.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from server.wallet.base import Wallet, WalletError
from server.wallet.mirror import sync_mirror

if TYPE_CHECKING:
    from server.gateway.lobby import Lobby
    from server.gateway.session import Session
    from server.process.config import ServerConfig
    from server.store.base import Store

__all__ = ["Purse"]

log = logging.getLogger("chemmy.server")


@dataclass(eq=False)
class Purse:
    """A player's money for the gateway (see the module docstring). ``wallet_of`` gives
    the operator's wallet (None: the ledger's); ``refresh`` tells the tables a player
    watches here to read their balance again."""

    config: ServerConfig
    store: Store
    lobby: Lobby
    wallet_of: Callable[[], Wallet | None]
    refresh: Callable[[str], None]

    async def persist(self, session: Session) -> None:
        """Write a guest to the store (with the welcome play money) before their first
        seat or deposit."""
        if session.persisted:
            return
        assert session.identity is not None
        ident = session.identity
        await self.store.ensure_player(
            ident.player_id, ident.name, self.config.welcome_balance, guest=True
        )
        session.persisted = True

    async def session_money(self, session: Session) -> tuple[int, int]:
        """:meth:`money` of a session's player (a guest not yet stored has the play money
        they will get), the operator's wallet asked first where it holds the money."""
        if not session.persisted:
            return self.config.welcome_balance, self.config.welcome_balance
        if session.identity is not None:
            ident = session.identity
            await self.ask_wallet(session.player, ident.currency, ident.wallet_session)
        return await self.money(session.player)

    async def ask_wallet(
        self, player: str, currency: str | None, session: Mapping[str, Any] | None = None
    ) -> None:
        """Where the operator's wallet holds the money (seamless), set the player's mirror
        from the balance it reports now (docs/wallet.md §3), asked in the player's
        ``session`` at the operator; a wallet that does not answer within
        ``--wallet-timeout`` leaves the mirror as it was."""
        wallet = self.wallet_of()
        if wallet is None or not wallet.confirms_holds:
            return
        try:
            async with asyncio.timeout(self.config.wallet_timeout):
                balance = await wallet.balance(player, currency, session)
        except (WalletError, TimeoutError) as exc:
            log.warning("no balance for %s from the operator's wallet (%s)", player, exc)
            return
        tables = [line["table"] for line in await self.lobby.tables()]
        if await sync_mirror(self.store, player, balance, tables):
            self.refresh(player)

    async def money(self, player: str) -> tuple[int, int]:
        """``(balance, available)`` as the store has them: ``available`` is the player's
        money on no table, ``balance`` adds the chips they placed at every table."""
        tables = [line["table"] for line in await self.lobby.tables()]
        return await self.store.player_money(player, tables)
