"""The cashier's window: a player's balance, deposits, their history and shoe records.

These requests go to the store, not to a table. A deposit is stored before anything
else changes, keyed by the player and the request id, so a retry with the same id
deposits once. History is filtered to what the player may see of their own rounds
(``server.table.views``); shoe records are public once the shoe is revealed.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from server.ledger.rules import deposit_entry
from server.protection.play_limits import deposit_guards, deposit_refusal
from server.protection.rules import current_limits
from server.protocol.errors import (
    ChemmyError,
    KeyConflict,
    LimitPassed,
    ProtocolError,
    Refused,
    StoreError,
    store_refusal,
)
from server.table.views import own_round
from server.vocabulary.options import PLAY_MONEY_DECIMALS

if TYPE_CHECKING:
    from server.gateway.context import CashierContext
    from server.gateway.session import Session

__all__ = ["balance", "deposit", "history", "shoe_record"]


async def balance(ctx: CashierContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    """``available``: the player's money on no table; ``balance``: that and the chips they
    have placed (not yet held) at every table."""
    balance_, available = await ctx.session_money(session)
    ctx.ok(session, mid, balance=balance_, available=available)


async def deposit(ctx: CashierContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    """Play money from the cashier, keyed by the player and the request id: a retry with
    the same id deposits once; the same id for another amount is refused. Closed
    (``deposits_closed``) unless the money is Chemmy's own play money (``wallet``
    internal)."""
    if ctx.config.wallet != "internal":
        # The money is the operator's: it comes in through their transfer API.
        raise Refused("deposits_closed", "deposits are made on the operator's site")
    amount = fields["amount"]
    limit = ctx.config.max_deposit
    if amount <= 0 or amount > limit:
        # Said in money, as a player reads it: 1 to 1000000 minor units is 0.01 to 10,000.00.
        raise Refused("bad_amount", f"a deposit is 0.01 to {_money(limit)}")
    if mid is None:
        raise ProtocolError("bad_message", "a deposit needs an id (it is its idempotency key)")
    pid = session.player
    try:  # the player's own deposit limits (server.protection.play_limits), held by the commit
        guards = deposit_guards(pid, await ctx.store.player_limits(pid, rule=current_limits))
    except StoreError as exc:
        raise store_refusal(exc) from None
    ctx.limits.deposit(pid)  # each is kept for good: a player may make only so many
    await ctx.persist(session)
    entry = deposit_entry(pid, str(mid), amount)
    try:
        result = await ctx.store.commit(entries=[entry], guards=guards)
    except LimitPassed as passed:  # (a retry of a deposit made is not: it adds nothing)
        raise deposit_refusal(passed, PLAY_MONEY_DECIMALS) from None
    except KeyConflict:
        raise Refused(
            "id_reused", "that deposit id was used for another amount; use a new id"
        ) from None
    except StoreError as exc:
        # Nothing was credited: store_unavailable (cannot reach it now) or store_failed.
        ctx.store_failed(exc)
        raise store_refusal(exc) from None
    ctx.store_works()
    duplicate = result.inserted == 0
    # The tables this player is at read their balance again (for what they show).
    for table in session.tables:
        with contextlib.suppress(ChemmyError):
            ctx.relay(session, table, "refresh")
    balance_, _available = await ctx.money(pid)
    ctx.ok(session, mid, balance=balance_, duplicate=duplicate)


def _money(minor: int) -> str:
    """Minor units as money with two decimals: 1000000 -> "10,000.00"."""
    whole, cents = divmod(minor, 100)
    return f"{whole:,}.{cents:02d}"


async def history(ctx: CashierContext, session: Session, mid: Any, fields: dict[str, Any]) -> None:
    limit = fields.get("limit", 100)
    if not 1 <= limit <= 100:
        raise Refused("bad_limit", "history holds your last 1-100 rounds")
    pid = session.player
    rounds = await ctx.store.history(pid, limit)
    ctx.ok(session, mid, rounds=[own_round(r, pid) for r in rounds])


async def shoe_record(
    ctx: CashierContext, session: Session, mid: Any, fields: dict[str, Any]
) -> None:
    record = await ctx.store.shoe_record(fields["table"], fields.get("shoe"))
    if record is None:
        raise Refused("no_record", "no revealed shoe yet at that table")
    ctx.ok(session, mid, record=record)
