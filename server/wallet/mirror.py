"""A seamless player's mirror: the operator's balance, kept in Chemmy's ledger.

Chemmy holds no money of a seamless player, but it checks bets as they are placed and
keeps every movement as a ledger entry. So ``player:<id>`` mirrors the operator's
balance: whenever the wallet reports one (a join, a debit, an acknowledged credit), a
``sync`` entry between ``wallet:<id>`` and ``player:<id>`` makes the player's money in
Chemmy (``player:<id>`` plus their chips placed at ``tables``, which the operator has
not been asked for yet) equal to it. Stakes, holds and payouts then move the mirror
exactly as the debits and credits move the operator's balance, and the books balance
as in the other modes. The mirror is advice: the operator's debit decides.

A process sets one player's mirror one sync at a time (two at once would each add the
difference they read, and count it twice); the balance given must be one the wallet
reported for now, never a repeated answer's (docs/wallet.md §3, "Balances").
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from collections.abc import Iterable

from server.ledger.rules import sync_entry
from server.protocol.errors import Overdrawn
from server.store.base import Store

__all__ = ["mirror_generation", "sync_mirror"]

#: Each store's players being synced now (a lock each, and how many hold or wait for it).
_SYNCING: weakref.WeakKeyDictionary[Store, dict[str, tuple[asyncio.Lock, int]]] = (
    weakref.WeakKeyDictionary()
)


#: Each store's players' mirror generation: one more at every balance set (a sync).
_GENERATIONS: weakref.WeakKeyDictionary[Store, dict[str, int]] = weakref.WeakKeyDictionary()


def mirror_generation(store: Store, player: str) -> int:
    """How many balances this process has set the player's mirror to: read before asking
    the wallet for one (``sync_mirror``'s ``since``)."""
    return _GENERATIONS.get(store, {}).get(player, 0)


async def sync_mirror(
    store: Store,
    player: str,
    balance: int,
    tables: Iterable[str] = (),
    *,
    since: int | None = None,
) -> int:
    """Make the player's money in Chemmy ``balance``; the entry's amount (0: none).
    ``since``: the :func:`mirror_generation` read before ``balance`` was asked for. If
    another balance was set meanwhile, it is newer than this one (an answer that came
    slowly, dripped, was taken before the calls that landed since): this one is dropped."""
    syncing = _SYNCING.setdefault(store, {})
    lock, users = syncing.get(player, (asyncio.Lock(), 0))
    syncing[player] = (lock, users + 1)
    try:
        async with lock:
            generations = _GENERATIONS.setdefault(store, {})
            if since is not None and generations.get(player, 0) != since:
                return 0
            generations[player] = generations.get(player, 0) + 1
            return await _sync(store, player, balance, list(tables))
    finally:
        lock, users = syncing[player]
        if users == 1:
            del syncing[player]
        else:
            syncing[player] = (lock, users - 1)


async def _sync(store: Store, player: str, balance: int, tables: list[str]) -> int:
    for _ in range(3):  # chips placed meanwhile: read again and recompute
        money, available = await store.player_money(player, tables)
        delta = balance - money
        if delta == 0:
            return 0
        sync_id = uuid.uuid4().hex
        if delta > 0:
            entry = sync_entry(player, sync_id, delta, inward=True)
        else:
            amount = min(-delta, available)  # never below zero: chips on the felt stay
            if amount == 0:
                return 0
            entry = sync_entry(player, sync_id, amount, inward=False)
        try:
            await store.commit(entries=[entry])
        except Overdrawn:
            continue
        return delta
    return 0
