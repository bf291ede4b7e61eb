"""The transfer API (docs/wallet.md §2, ``--wallet transfer``): the operator moves real
money in and out of a player's Chemmy account.

Each transfer is one ledger entry, keyed by the operator's ``transaction_id``
(``ledger_key("transfer", id)``): a deposit ``operator -> player:<id>``, a withdrawal
``player:<id> -> operator``. So the store's idempotency is the API's: the same id with
the same fields again moves nothing and answers ``duplicate: true``; with other fields
it is ``id_reused`` (:class:`~server.store.base.KeyConflict`); and a withdrawal can never
take a player below zero (:class:`~server.store.base.Overdrawn`: ``insufficient_funds``,
of the money on no table), nor any transfer a balance past ±(2^53 - 1)
(:class:`~server.store.base.OutOfRange`: ``out_of_range``). The ``operator`` account is the other side of every
transfer: it goes below zero by what the operator moved in, and the books still sum to 0.

A player has one currency, fixed by their first deposit (``Store.set_player_currency``,
set once, atomically, before the money moves: of two first deposits in two currencies at
once, one is refused ``currency_mismatch``). A deposit to a player Chemmy has never seen
creates them, with nothing (no welcome money in transfer mode).

The routes are installed on the one operator router (``server.operator.api``) by
:func:`install`; every call is counted in ``chemmy_transfers{kind, status}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from babel.numbers import is_currency

from server.ledger.rules import (
    MAX_AMOUNT,
    transfer_entry,
)
from server.operator.api import OperatorAPI, OperatorCall, OperatorRefusal, Route
from server.operator.context import OperatorSide
from server.process.auth import GUEST_PREFIX, is_valid_player_id
from server.protection.play_limits import deposit_guards, deposit_refusal
from server.protection.rules import current_limits
from server.protocol.errors import (
    KeyConflict,
    LimitPassed,
    OutOfRange,
    Overdrawn,
    StoreError,
    StoreUnavailable,
)
from server.vocabulary.options import currency_decimals

__all__ = ["MAX_TRANSACTION_ID", "install"]

#: The longest ``transaction_id`` (printable ASCII characters).
MAX_TRANSACTION_ID = 128
_FIELDS = frozenset({"transaction_id", "player", "amount", "currency"})


@dataclass(frozen=True, slots=True)
class _Transfer:
    transaction_id: str
    player: str
    amount: int
    currency: str


def install(api: OperatorAPI, ctx: OperatorSide) -> None:
    """The transfer API's three routes on ``api``."""
    base = "/operator/v1/transfers/"
    api.add("POST", base + "deposit", _counted(ctx, "deposit", lambda call: _move(ctx, call, True)))
    api.add(
        "POST", base + "withdraw", _counted(ctx, "withdraw", lambda call: _move(ctx, call, False))
    )
    api.add("GET", base + "balance", _counted(ctx, "balance", lambda call: _balance(ctx, call)))


def _counted(
    ctx: OperatorSide,
    kind: str,
    route: Callable[[OperatorCall], Awaitable[Mapping[str, Any]]],
) -> Route:
    async def counted(call: OperatorCall) -> Mapping[str, Any]:
        try:
            answer = await route(call)
        except OperatorRefusal as refusal:
            ctx.metrics.transfers.labels(kind=kind, status=refusal.code).inc()
            raise
        except StoreError as exc:
            status = "store_unavailable" if isinstance(exc, StoreUnavailable) else "store_failed"
            ctx.metrics.transfers.labels(kind=kind, status=status).inc()
            raise
        status = "duplicate" if answer.get("duplicate") else "ok"
        ctx.metrics.transfers.labels(kind=kind, status=status).inc()
        return answer

    return counted


def _bad(message: str) -> OperatorRefusal:
    return OperatorRefusal(400, "bad_request", message)


def _player(value: object) -> str:
    if not is_valid_player_id(value) or value.startswith(GUEST_PREFIX):
        raise _bad("player is a player id: 1-64 of A-Z a-z 0-9 _ . : @ - (not a guest's)")
    return value


def _currency(value: object) -> str:
    if not (
        isinstance(value, str)
        and len(value) == 3
        and value.isascii()
        and value.isupper()
        and is_currency(value)
    ):
        raise _bad("currency is an ISO 4217 code, such as EUR")
    return value


def _parse(body: dict[str, Any]) -> _Transfer:
    missing = sorted(_FIELDS - body.keys())
    if missing:
        raise _bad(f"missing: {', '.join(missing)}")
    unknown = sorted(body.keys() - _FIELDS)
    if unknown:
        raise _bad(f"unknown fields: {', '.join(unknown)}")
    tid = body["transaction_id"]
    if not (
        isinstance(tid, str)
        and 1 <= len(tid) <= MAX_TRANSACTION_ID
        and all(" " <= ch <= "~" for ch in tid)
    ):
        raise _bad(f"transaction_id is 1-{MAX_TRANSACTION_ID} printable ASCII characters")
    amount = body["amount"]
    if not isinstance(amount, int) or isinstance(amount, bool) or not 1 <= amount <= MAX_AMOUNT:
        raise _bad("amount is a whole number of minor units, 1 to 2^53 - 1")
    return _Transfer(tid, _player(body["player"]), amount, _currency(body["currency"]))


async def _move(ctx: OperatorSide, call: OperatorCall, deposit: bool) -> Mapping[str, Any]:
    """A deposit (``deposit``) or a withdrawal: one entry, once."""
    transfer = _parse(call.json())
    store, pid = ctx.store, transfer.player
    known = await store.player_name(pid) is not None
    fixed: str | None
    if deposit:
        fixed = await store.set_player_currency(pid, transfer.currency)  # the first fixes it
        if not known:
            # Created with nothing: the deposit is their money (no welcome entry).
            await store.ensure_player(pid, pid[:32], 0)
    else:
        if not known:
            raise OperatorRefusal(404, "unknown_player", f"Chemmy has never seen {pid!r}")
        fixed = await store.player_currency(pid)
    if fixed != transfer.currency:
        said = "has no currency yet (no deposit)" if fixed is None else f"is in {fixed}"
        raise OperatorRefusal(409, "currency_mismatch", f"the player's money {said}")
    entry = transfer_entry(transfer.transaction_id, pid, transfer.amount, deposit=deposit)
    # The player's deposit limits, held by the deposit's own commit (server.protection.play_limits):
    # concurrent deposits can never pass one together.
    guards = (
        deposit_guards(pid, await store.player_limits(pid, rule=current_limits)) if deposit else []
    )
    try:
        result = await store.commit(entries=[entry], guards=guards)
    except LimitPassed as passed:  # (a retry of a deposit made is not: it adds nothing)
        refused = deposit_refusal(passed, currency_decimals(transfer.currency))
        raise OperatorRefusal(409, refused.code, refused.message, refused.details) from None
    except KeyConflict:
        raise OperatorRefusal(
            409, "id_reused", "that transaction_id was used for another transfer"
        ) from None
    except Overdrawn:
        raise OperatorRefusal(
            409, "insufficient_funds", "the player has less than that on no table"
        ) from None
    except OutOfRange:  # (no retry can help: not store_failed's "try again")
        raise OperatorRefusal(
            409,
            "out_of_range",
            "the transfer would take the player's or the operator account's balance past "
            "2^53 - 1 minor units, the most Chemmy keeps; nothing moved",
        ) from None
    duplicate = result.inserted == 0
    if not duplicate:
        ctx.refresh_player(pid)  # the tables they sit at show their money again
    balance, available = await ctx.money(pid)
    return {
        "status": "ok",
        "transaction_id": transfer.transaction_id,
        "player": pid,
        "amount": transfer.amount,
        "currency": transfer.currency,
        "balance": balance,
        "available": available,
        "duplicate": duplicate,
    }


async def _balance(ctx: OperatorSide, call: OperatorCall) -> Mapping[str, Any]:
    pid = _player(call.param("player"))
    if await ctx.store.player_name(pid) is None:
        raise OperatorRefusal(404, "unknown_player", f"Chemmy has never seen {pid!r}")
    currency = await ctx.store.player_currency(pid)
    balance, available = await ctx.money(pid)
    return {
        "status": "ok",
        "player": pid,
        "currency": currency,
        "balance": balance,
        "available": available,
    }
