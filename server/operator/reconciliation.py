"""Reconciliation (docs/wallet.md §4): every call Chemmy made to the operator's wallet,
and their totals, for the operator to compare with their own books.

``GET /operator/v1/transactions`` lists the calls newest first (filters ``state``,
``kind``, ``player``, ``table``, ``round_id``; ``limit`` 1-1000; ``cursor`` from the
last page's ``next_cursor``); ``GET /operator/v1/transactions/totals`` sums them per
day (UTC), table, currency, kind and state (``since``, ``until``: Unix seconds). Served
on the one operator router (``server.operator.api``) in every wallet mode (in the
ledger modes the list is empty: no call is ever made). Reads only: it never changes a
call (a person does that: ``server.operator.wallet``). ``chemmy transactions``
prints the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from server.operator.api import OperatorAPI, OperatorCall, OperatorRefusal
from server.protocol.errors import StoreError
from server.store.base import WALLET_CALL_KINDS, WALLET_CALL_STATES, Store

__all__ = ["PUBLIC_FIELDS", "install", "public"]

#: What a listed call shows (its request ``body`` and the wallet's ``answer`` too: the
#: operator reconciles against exactly what was sent and what came back).
PUBLIC_FIELDS = (
    "seq",
    "transaction_id",
    "request_id",
    "kind",
    "player",
    "table",
    "round_id",
    "amount",
    "currency",
    "state",
    "attempts",
    "created",
    "updated",
    "reference",
    "reason",
    "error",
    "body",
    "answer",
    "resolutions",
)
_FILTERS = {"state": WALLET_CALL_STATES, "kind": WALLET_CALL_KINDS}


def public(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored call as it is listed (:data:`PUBLIC_FIELDS`; ``resolutions`` ``[]`` for a
    call nobody resolved)."""
    listed = {k: row.get(k) for k in PUBLIC_FIELDS}
    listed["resolutions"] = list(row.get("resolutions") or [])
    return listed


def _one(call: OperatorCall, name: str) -> str | None:
    values = call.request.query.get(name, [])
    if len(values) > 1:
        raise OperatorRefusal(400, "bad_request", f"give {name}= at most once")
    return values[0] if values else None


def _number(call: OperatorCall, name: str, low: float, high: float) -> float | None:
    text = _one(call, name)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not low <= value <= high:
        raise OperatorRefusal(400, "bad_request", f"{name} is a number from {low:g} to {high:g}")
    return value


def install(api: OperatorAPI, store: Store) -> None:
    """Add the reconciliation routes to ``api``."""

    async def transactions(call: OperatorCall) -> Mapping[str, Any]:
        filters: dict[str, Any] = {}
        for name in ("state", "kind", "player", "table", "round_id"):
            value = _one(call, name)
            allowed = _FILTERS.get(name)
            if value is not None and allowed is not None and value not in allowed:
                raise OperatorRefusal(400, "bad_request", f"{name} is one of {', '.join(allowed)}")
            if value is not None:
                filters[name] = value
        limit = int(_number(call, "limit", 1, 1000) or 100)
        cursor = _number(call, "cursor", 1, 2**53)
        try:
            rows = await store.wallet_calls(
                **filters, limit=limit, before_seq=None if cursor is None else int(cursor)
            )
        except StoreError as exc:
            raise OperatorRefusal(503, "store_unavailable", str(exc)) from None
        listed = [public(row) for row in rows]
        more = len(rows) == limit and rows
        return {"transactions": listed, "next_cursor": rows[-1]["seq"] if more else None}

    async def totals(call: OperatorCall) -> Mapping[str, Any]:
        since = _number(call, "since", 0, 2**40)
        until = _number(call, "until", 0, 2**40)
        try:
            rows = await store.wallet_totals(since=since, until=until)
        except StoreError as exc:
            raise OperatorRefusal(503, "store_unavailable", str(exc)) from None
        return {"totals": rows}

    api.add("GET", "/operator/v1/transactions", transactions)
    api.add("GET", "/operator/v1/transactions/totals", totals)
