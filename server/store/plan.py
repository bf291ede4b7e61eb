"""A commit planned once, in Python, before any store touches its data.

:func:`plan_commit` checks and serializes everything :meth:`Store.commit` is given —
the entries (:func:`server.store.ledger.check_entry`), the limit guards, the table row
and its parts, the events, the round and shoe records, the wallet calls — and says
which player balances the commit reports and on which UTC day its flows land. Every
store commits a :class:`CommitPlan` and keeps only what must be atomic with its data:
each entry's key absent or equal (:func:`server.store.ledger.stored_again`), each
guarded balance not negative and every balance in range
(:func:`server.store.ledger.check_balance`), the row's epoch not older
(:func:`server.store.ledger.check_epoch`) and the guards' caps held over the stored
usage. A plan that cannot be made raises :class:`StoreError` and nothing is written.

This module never does I/O and never reads a store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.store.base import (
    LimitGuard,
    RoundIndex,
    ShoeIndex,
    TableRow,
)
from server.store.calls import (
    prepare_wallet_call,
)
from server.store.ledger import Entry, check_entry, flow_cutoff, flow_day, player_accounts
from server.store.players import (
    check_guard,
)
from server.store.records import (
    check_events,
    check_parts,
    check_row,
    dump_json,
    index_record,
)

__all__ = ["CommitPlan", "plan_commit"]


@dataclass(frozen=True, slots=True)
class CommitPlan:
    """One commit, checked and serialized.

    ``entries`` in order (each checked), ``guards`` (each checked); ``table`` with its
    ``row`` (config and state as JSON) and its ``parts`` (drop all first, then each
    key's JSON or ``None`` to drop it), both ``None`` without a table; ``events``
    (``(seq, JSON)``); ``records`` (each one's indexed fields and JSON); ``calls`` (each
    wallet call checked, and its JSON); ``report``: the ``player:<id>`` accounts whose
    balance the commit answers; ``day`` and ``cutoff``: the UTC day the new entries'
    flows are added to, and the oldest day a player keeps once that day is written."""

    entries: tuple[Entry, ...]
    guards: tuple[LimitGuard, ...]
    table: TableRow | None
    row: tuple[str, str] | None
    parts: tuple[bool, list[tuple[str, str | None]]] | None
    events: list[tuple[int, str]]
    records: list[tuple[RoundIndex | ShoeIndex, str]]
    calls: list[tuple[dict[str, Any], str]]
    report: list[str]
    day: str
    cutoff: str


def plan_commit(
    now: float,
    entries: Sequence[Entry],
    table: TableRow | None,
    records: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    calls: Sequence[Mapping[str, Any]],
    guards: Sequence[LimitGuard],
) -> CommitPlan:
    """The plan of :meth:`Store.commit`'s arguments (in its order) at Unix time ``now``
    (the store's clock: the day of its flows); :class:`StoreError` for anything no store
    may hold."""
    checked_guards = tuple(check_guard(guard) for guard in guards)
    checked = tuple(entries)
    for entry in checked:
        check_entry(entry)
    row = None if table is None else check_row(table)
    parts = None if table is None else check_parts(table)
    prepared_events = check_events(table, events)
    prepared = [(index_record(record), dump_json(record)) for record in records]
    prepared_calls = [prepare_wallet_call(call) for call in calls]
    day = flow_day(now)
    return CommitPlan(
        checked,
        checked_guards,
        table,
        row,
        parts,
        prepared_events,
        prepared,
        prepared_calls,
        player_accounts(checked),
        day,
        flow_cutoff(day),
    )
