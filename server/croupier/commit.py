"""One step's (or one burst's) store commit, as a table actor makes it: what the store
keeps — the ledger entries, the table's state row with the owner's epoch, the bettors'
parts it changed, the round records, the stored events, the seamless wallet's credits and
rollbacks, the limits the chips must not pass — and the one call that keeps it.

It never decides whether a step happened and never undoes one: what the store raises goes
up to the actor, which undoes, refuses or delivers (store before send, §8).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from server.ledger.accounts import Entry
from server.ledger.flows import LimitGuard
from server.protocol.errors import LimitPassed, Refused, limit_reached
from server.store.base import CommitResult, Store, TableRow
from server.store.records import dump_state
from server.table import Table
from server.table.state import Phase
from server.vocabulary.events import Event, Step

if TYPE_CHECKING:
    from .seamless import Seamless

__all__ = ["LARGE_STEP", "Write", "is_large", "limit_refusal", "to_write", "write"]

#: A step that moves more ledger entries or gives more players a private part than this
#: (a settlement or betting's opening at a table of a thousand bettors, issue 37 §3) lets
#: the event loop turn once between its decision and its commit's planning, so the
#: commands and writes waiting meanwhile wait for one of the two, not for both. (The table
#: is its actor's alone, and every await of a step comes before its commit and delivery:
#: nothing is stored or sent out of order.)
LARGE_STEP = 64

#: The parts of a table's state shared by the states taken until they change (the options,
#: the shoe, its coups and results, and each player's command ids in ``recent_ids``:
#: :class:`server.table.persistence.Copies`): their JSON is made once a change and spliced
#: into the row the store writes (an ``orjson.Fragment``: the same text), so a step does
#: not serialize a shoe's eighty coups nor every seated player's 64 ids again (issue 36).
SHARED = ("options", "shoe", "results", "shoe_coups")
_made: weakref.WeakKeyDictionary[Table, dict[str, Any]]
_made = weakref.WeakKeyDictionary()


@dataclass(slots=True)
class Write:
    """A step (or a burst of them) as one store commit keeps it."""

    entries: list[Entry]
    records: list[dict[str, Any]]
    stored: list[Event]
    state: dict[str, Any]
    parts: dict[str, dict[str, Any] | None]
    calls: list[dict[str, Any]]
    guards: list[LimitGuard]


def to_write(
    table: Table,
    seamless: Seamless | None,
    last_state: dict[str, Any],
    parts: Mapping[str, dict[str, Any]],
    entries: list[Entry],
    records: list[dict[str, Any]],
    stored: list[Event],
    guards: list[LimitGuard],
) -> Write:
    """``table``'s step (or burst) as the store will keep it: its state (spectators are
    not kept), the bettors' parts it changed (§5), and with a seamless wallet the credits
    and rollbacks from ``last_state`` (and the stored ``parts``) to it."""
    state = table.to_state(spectators=False)
    changed = table.take_parts()
    calls = [] if seamless is None else seamless.closing_calls(last_state, state, records, parts)
    return Write(entries, records, stored, state, changed, calls, guards)


async def write(
    store: Store, table: Table, config: dict[str, Any], epoch: int, w: Write
) -> CommitResult:
    """One commit of ``w`` with the owner's ``epoch`` (raises what the store raises)."""
    return await store.commit(
        **({"calls": w.calls} if w.calls else {}),  # type: ignore[arg-type]
        **({"guards": w.guards} if w.guards else {}),  # type: ignore[arg-type]
        entries=w.entries,
        table=TableRow(
            table.table_id,
            config,
            spliced(table, w.state),
            table.seq,
            table.phase == Phase.CLOSED,
            epoch,
            w.parts or None,
        ),
        records=w.records,
        events=[event.to_dict() for event in w.stored],
    )


def spliced(table: Table, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` as the store writes it: the same, but for its :data:`SHARED` parts and
    each player's command ids, each the JSON made when that list was new (it is never
    changed in place)."""
    made = _made.setdefault(table, {})
    out = dict(state)
    for key in SHARED:
        value = state[key]
        kept = made.get(key)
        if kept is None or kept[0] is not value:
            kept = made[key] = (value, orjson.Fragment(dump_state(value)))
        out[key] = kept[1]
    ids, now, fragments = made.get("ids", {}), {}, {}  # each player's command ids, likewise
    for pid, value in state["recent_ids"].items():
        kept = ids.get(pid)
        if kept is None or kept[0] is not value:
            kept = (value, orjson.Fragment(dump_state(value)))
        now[pid], fragments[pid] = kept, kept[1]
    made["ids"], out["recent_ids"] = now, fragments
    return out


def is_large(step: Step, entries: Sequence[Entry]) -> bool:
    """Whether ``step``, with its ledger ``entries``, is a large one (:data:`LARGE_STEP`)."""
    if len(entries) > LARGE_STEP:
        return True
    parts = 0
    for event in step.events:
        if event.private:
            parts += len(event.private)
            if parts > LARGE_STEP:
                return True
    return False


def limit_refusal(table: Table, passed: LimitPassed) -> Refused:
    """The player's refusal for a bet the store held to their limit, in the table's
    money."""
    show = table.options.money
    kind, cap, left = passed.kind, passed.cap, passed.remaining
    return limit_reached(kind, cap, left, show(cap), show(left))
