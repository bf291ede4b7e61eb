"""Player protection's rules (responsible play; docs/architecture.md §5): how a
restriction, a player's limits and a play session change. Pure functions of the value
stored, the change and the time.

The store keeps these values and applies a change atomically, but never decides how:
its ``set_player_restriction``, ``set_player_limits``, ``open_play_session`` and
``ack_reality_check`` are handed the rule here by their caller (``rule=``), and run it
inside their transaction; its ``player_limits`` and ``bet_reads`` are handed
:func:`current_limits` (a pending change takes effect when due) the same way. This module never does I/O, reads a clock or imports the
gateway.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from server.protocol.errors import StoreError
from server.store.players import (
    PLAY_FLOWS,
    RESTRICTION_KINDS,
    check_limit_changes,
)

__all__ = [
    "RAISE_DELAY",
    "ack_play",
    "current_limits",
    "merge_limits",
    "merge_restriction",
    "next_reminder",
    "open_play",
    "play_due",
    "play_ended",
]


def merge_restriction(
    old: Mapping[str, Any] | None, kind: str, until: float, by: str, now: float
) -> dict[str, Any] | None:
    """The restriction to keep when ``by`` sets ``kind`` until ``until`` over ``old``
    (the stored one, maybe expired), at ``now``; ``None``: keep none. A player
    (``by == "player"``) never shortens one in force: a shorter or equal ``until`` keeps
    ``old``. Anyone else (an operator) sets it as given, and lifts it with an ``until``
    not after ``now``. Raises :class:`StoreError` for a kind, time or ``by`` of the wrong
    shape."""
    if kind not in RESTRICTION_KINDS:
        raise StoreError(f"a restriction is one of {sorted(RESTRICTION_KINDS)}")
    if isinstance(until, bool) or not isinstance(until, int | float) or not math.isfinite(until):
        raise StoreError("a restriction's until is Unix seconds")
    if not isinstance(by, str) or not by:
        raise StoreError("a restriction says who set it")
    active = dict(old) if old is not None and float(old["until"]) > now else None
    if by == "player" and active is not None and float(until) <= float(active["until"]):
        return active
    if float(until) <= now:
        return None if by != "player" else active
    return {"kind": kind, "until": float(until), "by": by, "since": now}


def current_limits(stored: Mapping[str, Any] | None, now: float) -> dict[str, Any]:
    """``stored`` limits as they stand at ``now``: every pending change due by then
    (``pending["from"] <= now``) applied (its amount set, or the limit removed when it
    is ``None``, ``since`` its ``from``). A copy: ``stored`` is not changed."""
    out: dict[str, Any] = {}
    for kind, limit in (stored or {}).items():
        pending = limit.get("pending")
        if pending is None or float(pending["from"]) > now:
            out[kind] = {**limit, **({} if pending is None else {"pending": dict(pending)})}
        elif pending["amount"] is not None:
            out[kind] = {
                "amount": pending["amount"],
                "since": float(pending["from"]),
                "by": "player",
            }
    return out


#: How long a player's raise (or removal) of a limit waits before it applies (seconds).
RAISE_DELAY: Final = 86_400.0


def merge_limits(
    old: Mapping[str, Any] | None, changes: Mapping[str, int | None], by: str, now: float
) -> dict[str, Any]:
    """The limits to keep when ``by`` makes ``changes`` (kind -> amount, ``None``:
    remove) over ``old`` (the stored value) at ``now``; due pendings of ``old`` are
    applied first (:func:`current_limits`).

    A player (``by == "player"``) may only tighten at once: a new limit, or a lower one,
    is set now (any pending change dropped); the same amount drops any pending change; a
    higher one, or a removal, keeps the limit in force and waits :data:`RAISE_DELAY` as
    its ``pending`` (a newer one replaces it and starts the wait again); removing a limit
    there is not does nothing. An operator (``"operator:<name>"``) sets or removes at
    once, dropping any pending change. Raises :class:`StoreError` (see
    :func:`check_limit_changes`) and then changes nothing."""
    changes = check_limit_changes(changes, by)
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
        raise StoreError("now is Unix seconds")
    now = float(now)
    limits = current_limits(old, now)
    for kind, amount in changes.items():
        found = limits.get(kind)
        if by != "player" or found is None or (amount is not None and amount < found["amount"]):
            if amount is None:
                limits.pop(kind, None)
            else:
                limits[kind] = {"amount": amount, "since": now, "by": by}
        elif amount == found["amount"]:
            found.pop("pending", None)
        else:  # a raise, or a removal: it waits
            found["pending"] = {"amount": amount, "from": now + RAISE_DELAY}
    return limits


def next_reminder(started: float, every: float, after: float) -> float:
    """The first reality check of a session begun at ``started`` with one every
    ``every`` seconds that comes after ``after``: ``started + k * every``, ``k >= 1``."""
    k = max(1, math.floor((after - started) / every) + 1)
    due = started + k * every
    return due if due > after else due + every  # (rounding)


def play_due(session: Mapping[str, Any] | None, now: float) -> bool:
    """Whether a reality check of ``session`` is due at ``now`` and not yet answered."""
    return session is not None and session["next"] is not None and float(session["next"]) <= now


def play_ended(session: Mapping[str, Any], now: float, gap: float) -> bool:
    """Whether ``session`` has ended at ``now``: no connection of the player was seen
    for more than ``gap`` seconds (the next hello begins a new one)."""
    return now - float(session["seen"]) > gap


def open_play(
    old: Mapping[str, Any] | None,
    now: float,
    gap: float,
    every: float | None,
    baseline: Mapping[str, int],
) -> dict[str, Any]:
    """The play session to keep when a connection says hello at ``now`` over ``old``
    (the stored one, or None). A session goes on through reconnects: it has ended only
    when no connection of the player was seen for more than ``gap`` seconds
    (``now - seen > gap``), and then a new one begins now, its first reality check
    ``every`` seconds later, its ``baseline`` the player's flows so far today. One that
    goes on keeps its start, its period and its due reality check (a later
    connection's period does not change them; a session without one takes it, timed
    from the session's start); its ``seen`` becomes ``now`` (never earlier)."""
    if old is None or play_ended(old, now, gap):
        return {
            "started": now,
            "seen": now,
            "every": every,
            "next": None if every is None else now + every,
            "baseline": {name: int(baseline.get(name, 0)) for name in PLAY_FLOWS},
        }
    kept = {**old, "seen": max(float(old["seen"]), now), "baseline": dict(old["baseline"])}
    if kept["every"] is None and every is not None:
        kept["every"] = every
        kept["next"] = next_reminder(float(kept["started"]), every, now)
    return kept


def ack_play(old: Mapping[str, Any] | None, now: float) -> dict[str, Any] | None:
    """The play session after its reality check is answered at ``now``: the next one
    is the session's next period after ``now`` (every ``every`` seconds from its start,
    not from the answer); None when none is due (nothing to answer)."""
    if old is None or not play_due(old, now):
        return None
    every = old["every"]
    after = None if every is None else next_reminder(float(old["started"]), float(every), now)
    return {**old, "next": after, "baseline": dict(old["baseline"])}
