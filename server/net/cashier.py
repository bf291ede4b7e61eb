"""The cashier's window: a player's balance, deposits, their history and shoe records.

These requests go to the store, not to a table. A deposit is stored before anything
else changes, keyed by the player and the request id, so a retry with the same id
deposits once. History is filtered to what the player may see of their own rounds
(``server.table.views``); shoe records are public once the shoe is revealed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from server.protocol.errors import ProtocolError, Refused
from server.store.base import StoreError
from server.table.wallet import CASHIER, Entry, player_account

if TYPE_CHECKING:
    from .server import ChemmyServer
    from .session import Session

__all__ = ["balance", "deposit", "history", "shoe_record"]

log = logging.getLogger("chemmy.cashier")


async def balance(server: ChemmyServer, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    pid = session.player
    wallet = server.croupier.wallet
    server.ok(
        session, mid, balance=wallet.balance(player_account(pid)), available=wallet.available(pid)
    )


async def deposit(server: ChemmyServer, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    amount = fields["amount"]
    limit = server.config.max_deposit
    if amount <= 0 or amount > limit:
        raise Refused("bad_amount", f"a deposit is 1 to {limit} minor units")
    if mid is None:
        raise ProtocolError("bad_message", "a deposit needs an id (it is its idempotency key)")
    pid = session.player
    key = f"deposit:{pid}:{mid}"
    account = player_account(pid)
    wallet = server.croupier.wallet
    duplicate = wallet.has_key(key) or await server.store.has_entry(key)
    if not duplicate:
        # The store first: if it fails, nothing changed anywhere and a retry with the
        # same id deposits once. Then the same entry in memory (already stored).
        try:
            await server.store.commit(entries=[Entry(key, CASHIER, account, amount, "deposit")])
        except StoreError:
            log.exception("storing a deposit failed", extra={"player": pid, "conn": session.id})
            raise Refused("store_failed", "the deposit could not be saved; try again") from None
        wallet.transfer(key, CASHIER, account, amount, "deposit")
        wallet.drain()
    server.ok(session, mid, balance=wallet.balance(account), duplicate=duplicate)


async def history(server: ChemmyServer, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    limit = fields.get("limit", 100)
    if not 1 <= limit <= 100:
        raise Refused("bad_limit", "history holds your last 1-100 rounds")
    pid = session.player
    rounds = await server.store.history(pid, limit)
    server.ok(session, mid, rounds=[_own_round(r, pid) for r in rounds])


async def shoe_record(
    server: ChemmyServer, session: Session, mid: Any, fields: dict[str, Any]
) -> None:
    record = await server.store.shoe_record(fields["table"], fields.get("shoe"))
    if record is None:
        raise Refused("no_record", "no revealed shoe yet at that table")
    server.ok(session, mid, record=record)


def _own_round(record: dict[str, Any], player: str) -> dict[str, Any]:
    """A round record as one player may see it (§8): the cards and result are public;
    of the money, only their own bets, payouts and balances."""
    out = {
        k: v for k, v in record.items() if k not in ("bets", "balances", "players", "commission")
    }
    out["bets"] = [b for b in record.get("bets", []) if b.get("player") == player]
    out["commission"] = sum(b.get("commission", 0) for b in out["bets"])
    out["balance"] = record.get("balances", {}).get(player)
    return out
