"""The calls both stores answer alike, written once: each checks its arguments (the pure
checks of :mod:`~server.store.plan`, :mod:`~server.store.records`,
:mod:`~server.store.players` and :mod:`~server.store.calls`), asks the store's own
primitive (a transaction, a script: the I/O and what must be atomic), and shapes the
answer.

:class:`StoreFront` is the base of :class:`~server.store.sqlite.SQLiteStore` and
:class:`~server.store.redis.RedisStore`; the :class:`~server.store.base.Store` protocol
says what each call means. This module never does I/O itself, and never decides a rule
(player protection's are handed in, ``rule=``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from server.ledger.accounts import Entry, player_account
from server.ledger.flows import LimitGuard, check_day, flow_buckets
from server.ledger.rules import check_entry, stake_account, welcome_entry
from server.protocol.errors import StoreError
from server.store import calls
from server.store.base import BetReads, CommitResult, CurrentRule, RoundFilter, RoundQuery, TableRow
from server.store.calls import check_due_kinds, check_due_time, wallet_filters, wallet_limit
from server.store.plan import CommitPlan, plan_commit
from server.store.records import round_query

#: What a store reads for :meth:`StoreFront.bet_reads`: the restriction and the limits
#: as stored (None: none), the play session, and the days (day -> ``(staked, net,
#: deposited)``; empty when no limit is stored).
StoredBetReads = tuple[
    dict[str, Any] | None, Any, dict[str, Any] | None, Mapping[str, Sequence[int]]
]


class StoreFront(ABC):
    """The shared part of a store's calls; ``clock`` is the store's."""

    clock: Callable[[], float]

    # -- each store's own primitives ------------------------------------------------------
    @abstractmethod
    async def _apply(self, plan: CommitPlan) -> CommitResult:
        """Apply a planned commit all or nothing (a transaction, a script)."""

    @abstractmethod
    async def _ensure(self, player_id: str, name: str, welcome: Entry | None, guest: bool) -> int:
        """:meth:`ensure_player`'s write, its welcome (if any) made and checked."""

    @abstractmethod
    async def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        """The balances of ``accounts``, read together (0 for an account never used)."""

    @abstractmethod
    async def _round_records(self, wanted: RoundFilter) -> list[dict[str, Any]]:
        """The round records ``wanted`` asks for (checked, at least one)."""

    @abstractmethod
    async def _stored_restriction(self, player_id: str) -> dict[str, Any] | None:
        """The player's restriction as stored, in force or not."""

    @abstractmethod
    async def _stored_days(self, player_id: str, since_day: str) -> Mapping[str, Sequence[int]]:
        """The player's stored days (day -> ``(staked, net, deposited)``), at least
        those from ``since_day`` on."""

    @abstractmethod
    async def _stored_bet_reads(self, player_id: str, since_day: str) -> StoredBetReads:
        """What :meth:`bet_reads` needs, read together (one job, one script)."""

    @abstractmethod
    async def _due_wallet_calls(
        self, now: float, limit: int, kinds: tuple[str, ...]
    ) -> list[dict[str, Any]]:
        """:meth:`due_wallet_calls`, its arguments checked (``limit``, ``kinds`` not empty)."""

    @abstractmethod
    async def _update_wallet_call(
        self, transaction_id: str, changes: Mapping[str, Any], only_from: str | None
    ) -> dict[str, Any] | None:
        """:meth:`update_wallet_call` with ``changes`` checked."""

    @abstractmethod
    async def _wallet_calls(
        self, filters: Mapping[str, str], limit: int, before_seq: int | None
    ) -> list[dict[str, Any]]:
        """:meth:`wallet_calls` with its filters checked (:func:`wallet_filters`) and
        ``limit`` not 0."""

    # -- the calls --------------------------------------------------------------------------
    async def commit(
        self,
        *,
        entries: Sequence[Entry] = (),
        table: TableRow | None = None,
        records: Sequence[Mapping[str, Any]] = (),
        events: Sequence[Mapping[str, Any]] = (),
        calls: Sequence[Mapping[str, Any]] = (),
        guards: Sequence[LimitGuard] = (),
    ) -> CommitResult:
        # Planned (checked and serialized) before anything is queued or sent.
        plan = plan_commit(self.clock(), entries, table, records, events, calls, guards)
        return await self._apply(plan)

    async def save_table(self, row: TableRow) -> None:
        await self.commit(table=row)

    async def ensure_player(
        self, player_id: str, name: str, initial_balance: int, *, guest: bool = False
    ) -> int:
        if not isinstance(initial_balance, int) or initial_balance < 0:
            raise StoreError("an initial balance is a whole number, not negative")
        welcome = welcome_entry(player_id, initial_balance) if initial_balance > 0 else None
        if welcome is not None:
            check_entry(welcome)
        return await self._ensure(player_id, name, welcome, guest)

    async def player_money(self, player_id: str, tables: Iterable[str] = ()) -> tuple[int, int]:
        stakes = [stake_account(t, player_id) for t in dict.fromkeys(tables)]
        found = await self.balances([player_account(player_id), *stakes])
        available = found[player_account(player_id)]
        return available + sum(found[a] for a in stakes), available

    async def round_records(self, query: RoundQuery) -> list[dict[str, Any]]:
        wanted = round_query(query)
        return await self._round_records(wanted) if wanted.limit else []

    # -- a player's restriction, days and limits, read ----------------------------------
    async def player_restriction(self, player_id: str) -> dict[str, Any] | None:
        return _in_force(await self._stored_restriction(player_id))

    async def player_days(self, player_id: str, since_day: str) -> dict[str, dict[str, int]]:
        since_day = check_day(since_day)
        return flow_buckets(await self._stored_days(player_id, since_day), since_day)

    async def bet_reads(self, player_id: str, since_day: str, *, rule: CurrentRule) -> BetReads:
        since_day = check_day(since_day)
        restriction, limits, play, days = await self._stored_bet_reads(player_id, since_day)
        return BetReads(
            _in_force(restriction),
            rule(limits, self.clock()),
            play,
            flow_buckets(days, since_day),
        )

    # -- the wallet calls' outbox ----------------------------------------------------------
    async def update_wallet_call(
        self, transaction_id: str, changes: Mapping[str, Any], *, only_from: str | None = None
    ) -> dict[str, Any] | None:
        checked = calls.check_wallet_changes(changes)
        return await self._update_wallet_call(transaction_id, checked, only_from)

    async def due_wallet_calls(
        self,
        now: float,
        limit: int = 100,
        kinds: Sequence[str] = ("credit", "rollback"),
    ) -> list[dict[str, Any]]:
        now, limit, wanted = check_due_time(now), wallet_limit(limit), check_due_kinds(kinds)
        return await self._due_wallet_calls(now, limit, wanted) if limit and wanted else []

    async def wallet_calls(
        self,
        *,
        state: str | None = None,
        player: str | None = None,
        table: str | None = None,
        round_id: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        before_seq: int | None = None,
    ) -> list[dict[str, Any]]:
        filters = wallet_filters(
            state=state,
            player=player,
            table=table,
            round_id=round_id,
            kind=kind,
            before_seq=before_seq,
        )
        limit = wallet_limit(limit)
        return await self._wallet_calls(filters, limit, before_seq) if limit else []


def _in_force(restriction: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored restriction while its ``until`` is to come (by the wall clock, as the
    caller's rule wrote it), else None."""
    return restriction if restriction is not None and restriction["until"] > time.time() else None
