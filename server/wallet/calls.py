"""The calls Chemmy makes to a seamless wallet, as the store keeps them (docs/wallet.md §3).

A call is a plain dict (the store's outbox row, ``server.store.base``): its
``transaction_id`` is made from the round, the player and the kind, and its
``request_id`` from the transaction id, so every retry of a call, by any process,
after any restart, carries the same two ids. ``body`` is exactly what is sent. Every
body names the game (``game``, ``--wallet-game``) and the player's session at the
operator that the wagers were placed under (``session``, ``brand``, ``jurisdiction``:
the token's, kept by the table with the player's bets), so that the operator's wallet
can refuse a debit of a session that has ended; a credit or rollback carries them too,
and the wallet must apply it whatever they say (docs/wallet.md §3).

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
    "SESSION_FIELDS",
    "closing_calls",
    "credit_call",
    "debit_call",
    "new_call",
    "rollback_call",
    "round_of",
    "session_fields",
    "transaction_id",
]

_IDS = uuid.UUID("6f0a3c1e-2f4b-4d8e-9a57-c4e1d2b3a091")  # the namespace of request ids


#: What every call's body says of where it comes from besides the player.
SESSION_FIELDS = ("game", "session", "brand", "jurisdiction")


def transaction_id(round_id: str, player: str, kind: str) -> str:
    return f"{round_id}:{player}:{kind}"


def session_fields(session: Mapping[str, Any] | None, game: str | None) -> dict[str, Any]:
    """The :data:`SESSION_FIELDS` of a body: the game code, and the player's session,
    brand and jurisdiction (``None`` for those the token did not have)."""
    given = session or {}
    return {
        "game": game,
        "session": given.get("session"),
        "brand": given.get("brand"),
        "jurisdiction": given.get("jurisdiction"),
    }


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
    session: Mapping[str, Any] | None = None,
    game: str | None = None,
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
        **session_fields(session, game),
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
    *,
    session: Mapping[str, Any] | None = None,
    game: str | None = None,
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
        session=session,
        game=game,
    )


def credit_call(
    table: str,
    round_id: str,
    player: str,
    payouts: Sequence[Mapping[str, Any]],
    currency: str | None,
    now: float,
    *,
    session: Mapping[str, Any] | None = None,
    game: str | None = None,
) -> dict[str, Any]:
    """What a settled coup returns to ``player`` (stakes back and winnings; may be 0)."""
    mine = [
        {"area": p["area"], "stake": p["stake"], "returned": p["returned"]}
        for p in payouts
        if p["player"] == player
    ]  # (a coup's closing calls hand each player only their own: closing_calls)
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
        session=session,
        game=game,
    )


def rollback_call(
    table: str,
    round_id: str,
    player: str,
    amount: int,
    currency: str | None,
    now: float,
    reason: str,
    *,
    session: Mapping[str, Any] | None = None,
    game: str | None = None,
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
        session=session,
        game=game,
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
    *,
    game: str | None = None,
    parts: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> list[dict[str, Any]]:
    """The credits and rollbacks of one step, from the table's stored state before and
    after it and the step's records: a coup that was dealt and is no longer (settled:
    a credit per player; closed unsettled or voided: a rollback per player), and wagers
    being debited when the table closed or the round was voided (a rollback each). Each
    carries the session the player's wagers were placed under (``wallet_session`` of
    their stored state). ``parts``: the stored parts of the bettors without a seat
    before the step (GAME_RULES §5; ``Table.take_parts``), whose wagers and sessions
    are not in the row: every wager is closed, a seated player's or a bettor's."""
    coup = before.get("coup")
    after_coup = after.get("coup")
    debiting = before.get("debiting")
    closes = coup is not None and (after_coup is None or after_coup["round_id"] != coup["round_id"])
    if not closes and debiting is None:
        return []  # (most steps: nothing closed, the bettors' parts never read)
    table = str(before["table_id"])
    sessions = {p["id"]: p.get("wallet_session") for p in before.get("players", ())}
    held: dict[str, dict[str, int]] = dict(coup["held"]) if coup is not None else {}
    debiting = None if debiting is None else dict(debiting)
    for pid, part in (parts or {}).items():
        if part is None:
            continue
        sessions[pid] = part["player"].get("wallet_session")
        if part.get("held") is not None:
            held[pid] = part["held"]
        if debiting is not None and part.get("debiting") is not None:
            debiting[pid] = part["debiting"]
    out: list[dict[str, Any]] = []
    if coup is not None and closes:
        rid = coup["round_id"]
        record = next(
            (r for r in records if r.get("kind") == "round" and r.get("round_id") == rid), None
        )
        paid: dict[str, list[Mapping[str, Any]]] = {}
        for pay in [] if record is None else record["bets"]:
            paid.setdefault(pay["player"], []).append(pay)
        for pid in sorted(held):
            session = sessions.get(pid)
            if record is not None and not record.get("void"):
                bets = paid.get(pid, [])
                call = credit_call(table, rid, pid, bets, currency, now, session=session, game=game)
            else:
                stake = sum(held[pid].values())
                call = rollback_call(
                    table, rid, pid, stake, currency, now, "voided", session=session, game=game
                )
            out.append(call)
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
            out.append(
                rollback_call(
                    table,
                    rid,
                    pid,
                    stake,
                    currency,
                    now,
                    "voided",
                    session=sessions.get(pid),
                    game=game,
                )
            )
    return out
