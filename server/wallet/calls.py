"""The calls Chemmy makes to a seamless wallet, as the store keeps them (docs/wallet.md §3).

A call is a plain dict (the store's outbox row, ``server.store.base``): its
``transaction_id`` is made from the round, the player and the kind, and its
``request_id`` from the transaction id, so every retry of a call, by any process,
after any restart, carries the same two ids. ``body`` is exactly what is sent.

:func:`closing_calls` says which credits and rollbacks a table step makes: the credits
of a settled coup (one per debited player, ``0`` for one who lost everything) and the
rollbacks of a coup that ended unsettled (the table closed mid-coup, or the operator
voided the round: its record says ``void``). They go into the
step's own commit, so a stored settlement always has its credits waiting. Pure.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "closing_calls",
    "credit_call",
    "debit_call",
    "new_call",
    "rollback_call",
    "round_of",
    "transaction_id",
]

_IDS = uuid.UUID("6f0a3c1e-2f4b-4d8e-9a57-c4e1d2b3a091")  # the namespace of request ids


def transaction_id(round_id: str, player: str, kind: str) -> str:
    return f"{round_id}:{player}:{kind}"


def new_call(
    kind: str,
    *,
    player: str,
    table: str,
    round_id: str,
    amount: int,
    currency: str | None,
    now: float,
    extra: Mapping[str, Any] | None = None,
    reference: str | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """A pending call, due now."""
    txn = transaction_id(round_id, player, kind)
    request_id = str(uuid.uuid5(_IDS, txn))
    body: dict[str, Any] = {
        "request_id": request_id,
        "transaction_id": txn,
        "player": player,
        "currency": currency,
        "amount": amount,
        "round_id": round_id,
        "table": table,
        **(extra or {}),
    }
    if reference is not None:
        body["debit_transaction_id"] = reference
    if reason is not None:
        body["reason"] = reason
    return {
        "transaction_id": txn,
        "kind": kind,
        "request_id": request_id,
        "player": player,
        "table": table,
        "round_id": round_id,
        "amount": amount,
        "currency": currency,
        "state": "pending",
        "attempts": 0,
        "next_at": now,
        "created": now,
        "updated": now,
        "body": body,
        "answer": None,
        "reference": reference,
        "reason": reason,
        "error": None,
    }


def debit_call(
    table: str,
    round_id: str,
    player: str,
    bets: Mapping[str, int],
    currency: str | None,
    now: float,
) -> dict[str, Any]:
    """One player's wagers of a coup, all areas in one call."""
    return new_call(
        "debit",
        player=player,
        table=table,
        round_id=round_id,
        amount=sum(bets.values()),
        currency=currency,
        now=now,
        extra={"bets": [{"area": a, "amount": v} for a, v in sorted(bets.items())]},
    )


def credit_call(
    table: str,
    round_id: str,
    player: str,
    payouts: Sequence[Mapping[str, Any]],
    currency: str | None,
    now: float,
) -> dict[str, Any]:
    """What a settled coup returns to ``player`` (stakes back and winnings; may be 0)."""
    mine = [
        {"area": p["area"], "stake": p["stake"], "returned": p["returned"]}
        for p in payouts
        if p["player"] == player
    ]
    return new_call(
        "credit",
        player=player,
        table=table,
        round_id=round_id,
        amount=sum(p["returned"] for p in mine),
        currency=currency,
        now=now,
        extra={"payouts": mine},
        reference=transaction_id(round_id, player, "debit"),
    )


def rollback_call(
    table: str,
    round_id: str,
    player: str,
    amount: int,
    currency: str | None,
    now: float,
    reason: str,
) -> dict[str, Any]:
    """Undo ``player``'s debit of ``round_id``: ``debit_unanswered`` or ``voided``."""
    return new_call(
        "rollback",
        player=player,
        table=table,
        round_id=round_id,
        amount=amount,
        currency=currency,
        now=now,
        reference=transaction_id(round_id, player, "debit"),
        reason=reason,
    )


def round_of(state: Mapping[str, Any]) -> str:
    """The round id of a stored table state (as ``Table.round_id``)."""
    return f"{state['table_id']}-{state['shoe_no']}-{state['coup_no']}"


def closing_calls(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    currency: str | None,
    now: float,
) -> list[dict[str, Any]]:
    """The credits and rollbacks of one step, from the table's stored state before and
    after it and the step's records: a coup that was dealt and is no longer (settled:
    a credit per player; closed unsettled or voided: a rollback per player), and wagers
    being debited when the table closed or the round was voided (a rollback each)."""
    table = str(before["table_id"])
    out: list[dict[str, Any]] = []
    coup = before.get("coup")
    after_coup = after.get("coup")
    if coup is not None and (after_coup is None or after_coup["round_id"] != coup["round_id"]):
        rid = coup["round_id"]
        held: dict[str, dict[str, int]] = coup["held"]
        record = next(
            (r for r in records if r.get("kind") == "round" and r.get("round_id") == rid), None
        )
        for pid in sorted(held):
            if record is not None and not record.get("void"):
                out.append(credit_call(table, rid, pid, record["bets"], currency, now))
            else:
                stake = sum(held[pid].values())
                out.append(rollback_call(table, rid, pid, stake, currency, now, "voided"))
    debiting = before.get("debiting")
    voided = any(  # by the operator (an undealt round's record closes nothing: §3)
        r.get("kind") == "round"
        and r.get("void")
        and not r.get("undealt")
        and r.get("round_id") == round_of(before)
        for r in records
    )
    if debiting is not None and (after.get("phase") == "closed" or voided):
        rid = round_of(before)
        for pid in sorted(debiting):
            stake = sum(debiting[pid].values())
            out.append(rollback_call(table, rid, pid, stake, currency, now, "voided"))
    return out
