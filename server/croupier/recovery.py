"""How a table actor gets back to what the store holds (docs/architecture.md §8): a step
the store did not keep undone, a step whose commit may or may not have been kept (in
doubt) settled by reading the stored row, and the accounts a table restarted from its
row reads its balances from.

Each function builds a fresh :class:`~server.table.Table` from a stored state and hands it
back; the actor puts it in place. It never steps a table, never writes to the store and
never publishes or answers anything: what happens next is the actor's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.ledger.accounts import Entry, held_account, player_account, stake_account
from server.protocol.errors import StoreError
from server.store.base import Store
from server.store.records import (
    dump_json,
)
from server.table import Table
from server.table.state import PlayerState
from server.vocabulary.events import Event

from .wallet import TableWallet

__all__ = ["InDoubt", "accounts", "put_parts", "rebuilt", "taken_up", "was_kept"]


@dataclass(slots=True)
class InDoubt:
    """A step whose commit failed in a way that does not say whether it was kept
    (:class:`~server.store.base.StoreUnavailable`: Redis may have run the commit and lost
    the reply): the table was undone, and the stored row says, before the next step,
    which it was."""

    state: dict[str, Any]
    parts: dict[str, dict[str, Any]]  # the bettors' parts, had it been kept
    events: list[Event]


def accounts(table: Table) -> set[str]:
    """The accounts ``table``'s state concerns: its held account, and for each of its
    players (and each player with a wager held, bettors without a seat included) their
    balance and stake there."""
    pids = set(table.players)
    if table.coup is not None:
        pids |= set(table.coup.held)
    found = {held_account(table.table_id)}
    for pid in pids:
        found |= {player_account(pid), stake_account(table.table_id, pid)}
    return found


def put_parts(
    stored: dict[str, dict[str, Any]], changed: Mapping[str, dict[str, Any] | None]
) -> None:
    """The bettors' parts as stored once ``changed`` is (None: a part that goes)."""
    for pid, part in changed.items():
        if part is None:
            stored.pop(pid, None)
        else:
            stored[pid] = part


def _wallet_of(table: Table) -> TableWallet:
    wallet = table.wallet
    assert isinstance(wallet, TableWallet), "an actor's table has a TableWallet"
    return wallet


async def rebuilt(
    store: Store,
    old: Table,
    last_state: dict[str, Any],
    parts: Mapping[str, dict[str, Any]],
    undone: Sequence[Entry] = (),
) -> Table:
    """The table as the last stored step left it (``last_state``, the bettors' ``parts``),
    its wallet as it was before the step that was not stored (the ``undone`` entries and
    any still pending in ``old``'s taken back), then read afresh from the store. A store
    that cannot be read now (Redis down) leaves the wallet as it was before the step:
    never with the undone step's money in it. Nothing of the undone step survives, so the
    same command retried posts each entry once."""
    before = _wallet_of(old)
    balances = dict(before.balances)
    for entry in [*undone, *before.drain()]:
        balances[entry.src] = balances.get(entry.src, 0) + entry.amount
        balances[entry.dst] = balances.get(entry.dst, 0) - entry.amount
    wallet = TableWallet(balances, confirms_holds=before.confirms_holds)
    table = Table.from_state(last_state, wallet, parts)
    with contextlib.suppress(StoreError):  # the balances as before the step will do
        wallet.load((await store.balances(accounts(table) | accounts(old))).items())
    _carry_spectators(old, table)
    return table


async def was_kept(store: Store, doubt: InDoubt, table_id: str) -> bool:
    """Whether the step in doubt was kept: the stored row is either the last step's or
    the one in doubt (a commit is all or nothing). Raises
    :class:`~server.store.base.StoreError` while the store cannot be read (still in
    doubt)."""
    row = await store.load_table(table_id)
    return not (row is None or row.state is None or dump_json(row.state) != dump_json(doubt.state))


async def taken_up(store: Store, doubt: InDoubt, old: Table) -> Table:
    """The table as the step in doubt, which was kept, left it; its balances read from
    the store."""
    wallet = TableWallet(confirms_holds=_wallet_of(old).confirms_holds)
    table = Table.from_state(doubt.state, wallet, doubt.parts)
    wallet.load((await store.balances(accounts(table) | accounts(old))).items())
    _carry_spectators(old, table)
    return table


def _carry_spectators(old: Table, table: Table) -> None:
    """Spectators are not stored: whoever the stored step does not know was watching then
    (or came since), and still is."""
    for pid, p in old.players.items():
        if pid not in table.players:
            table.players[pid] = PlayerState(pid, p.name, connected=p.connected)
