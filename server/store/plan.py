"""A commit planned once, in Python, before any store touches its data.

:func:`plan_commit` checks and serializes everything :meth:`Store.commit` is given —
the entries (:func:`server.ledger.rules.check_entry`), the limit guards, the table row
and its parts, the events, the round and shoe records, the wallet calls — and says
which player balances the commit reports and on which UTC day its flows land. Every
store commits a :class:`CommitPlan` and keeps only what must be atomic with its data:
each entry's key absent or equal (:func:`server.ledger.rules.stored_again`), each
guarded balance not negative and every balance in range
(:func:`server.ledger.rules.check_balance`), the row's epoch not older
(:func:`server.ledger.rules.check_epoch`) and the guards' caps held over the stored
usage. A plan that cannot be made raises :class:`StoreError` and nothing is written.

What a store keeps beside the commit is decided here too, and applied by each store in
the commit's transaction: a table's new events and the oldest it keeps
(:func:`new_events`, :func:`first_event_kept`) and the retention a store is built with
(:func:`check_retention`). Two more are set operations each store writes in its own
terms: a player's round index keeps their newest :data:`HISTORY_LIMIT` rounds
(SQLite's ``OFFSET`` delete, Redis's ``ZREMRANGEBYRANK``), and a wallet call is
inserted only when its transaction id is absent (``ON CONFLICT DO NOTHING``,
``HSETNX``); the contract suite and the SQLite-against-Redis test hold them equal.

This module never does I/O and never reads a store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.ledger.flows import LimitGuard, check_guard, flow_cutoff, flow_day
from server.ledger.rules import Entry, check_entry, player_accounts
from server.protocol.errors import StoreError
from server.store.base import HISTORY_LIMIT, RoundIndex, ShoeIndex, TableRow
from server.store.calls import prepare_wallet_call
from server.store.records import (
    check_events,
    check_parts,
    check_row,
    dump_json,
    index_record,
)

__all__ = [
    "CommitPlan",
    "check_retention",
    "first_event_kept",
    "new_events",
    "plan_commit",
]


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


# -- what a store keeps beside the commit ------------------------------------------------


def check_retention(event_retention: int, round_index: int) -> tuple[int, int]:
    """A store's retention: at least 1 event a table, and a player's round index at
    least :data:`HISTORY_LIMIT` rounds (GAME_RULES §8: the last 100 rounds are shown);
    :class:`StoreError` otherwise."""
    if event_retention < 1 or round_index < HISTORY_LIMIT:
        raise StoreError("retention keeps at least 1 event and 100 rounds a player")
    return event_retention, round_index


def new_events(events: Sequence[tuple[int, str]], last: int) -> list[tuple[int, str]]:
    """Of a step's ``events`` (``(seq, JSON)``), those to append after ``last``, the
    newest seq stored (-1: none): a retried commit's are stored already, and an older
    event pruned since never comes back."""
    return [event for event in events if event[0] > last]


def first_event_kept(newest: int, retention: int) -> int:
    """The oldest seq a table keeps once ``newest`` is stored: its newest ``retention``
    events (a table's seqs have no gaps, so a count is a range of seqs)."""
    return newest - retention + 1
