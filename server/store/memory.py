"""An in-memory :class:`~server.store.base.Store`, for unit tests and throwaway servers.

It keeps the same contract as the SQLite store (the one suite in
``tests/server/test_store.py`` runs against both): records and table state are stored
as JSON text, so what comes back is what SQLite would give back, and a commit is staged
on copies and applied only when every check passed, so it is all or nothing.

It must never be used where money must survive a restart: everything is lost with the
process. It never does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from server.store.base import (
    HISTORY_LIMIT,
    KeyConflict,
    RoundIndex,
    StoreError,
    TableRow,
    check_balance,
    check_entry,
    dump_json,
    index_record,
    welcome_entry,
)
from server.table.wallet import Entry, player_account

__all__ = ["MemoryStore"]


class MemoryStore:
    """Balances, ledger, tables and records in dicts."""

    def __init__(self) -> None:
        self._open = False
        self._balances: dict[str, int] = {}
        self._ledger: list[Entry] = []
        self._by_key: dict[str, Entry] = {}
        self._players: dict[str, str] = {}
        # table_id -> (config JSON, state JSON, seq, closed); dict order = first save.
        self._tables: dict[str, tuple[str, str, int, bool]] = {}
        # round_id -> (sequence number, JSON); player -> [sequence number], ascending.
        self._rounds: dict[str, tuple[int, str]] = {}
        self._round_seqs: dict[int, str] = {}
        self._played: dict[str, dict[int, None]] = {}
        self._round_seq = 0
        # (table, shoe_no) -> (revealed, JSON)
        self._shoes: dict[tuple[str, int], tuple[bool, str]] = {}

    # -- lifecycle -------------------------------------------------------------------
    async def open(self) -> None:
        self._open = True

    async def close(self) -> None:
        self._open = False

    def _check_open(self) -> None:
        if not self._open:
            raise StoreError("the store is not open")

    # -- players and balances --------------------------------------------------------
    async def ensure_player(self, player_id: str, name: str, initial_balance: int) -> int:
        self._check_open()
        if initial_balance < 0:
            raise StoreError("an initial balance is not negative")
        if player_id not in self._players:
            entries = [welcome_entry(player_id, initial_balance)] if initial_balance > 0 else []
            await self.commit(entries=entries)
            self._balances.setdefault(player_account(player_id), 0)
        self._players[player_id] = name
        return self._balances[player_account(player_id)]

    async def player_name(self, player_id: str) -> str | None:
        self._check_open()
        return self._players.get(player_id)

    async def load_balances(self) -> dict[str, int]:
        self._check_open()
        return dict(self._balances)

    async def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        self._check_open()
        return {account: self._balances.get(account, 0) for account in accounts}

    async def has_entry(self, key: str) -> bool:
        self._check_open()
        return key in self._by_key

    # -- the one write ---------------------------------------------------------------
    async def commit(
        self,
        *,
        entries: Sequence[Entry] = (),
        table: TableRow | None = None,
        records: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        self._check_open()
        # Stage everything; touch nothing until every check has passed.
        staged: dict[str, int] = {}
        new: dict[str, Entry] = {}
        for entry in entries:
            check_entry(entry)
            old = self._by_key.get(entry.key) or new.get(entry.key)
            if old is not None:
                if old != entry:
                    raise KeyConflict(f"ledger key {entry.key!r} holds a different entry")
                continue
            for account, delta in ((entry.src, -entry.amount), (entry.dst, entry.amount)):
                balance = staged.get(account, self._balances.get(account, 0)) + delta
                check_balance(account, balance)
                staged[account] = balance
            new[entry.key] = entry
        table_json = None
        if table is not None:
            table_json = (dump_json(table.config), dump_json(table.state))
        prepared = [(index_record(record), dump_json(record)) for record in records]

        # Apply.
        self._balances.update(staged)
        for entry in new.values():
            self._ledger.append(entry)
            self._by_key[entry.key] = entry
        if table is not None and table_json is not None:
            self._tables[table.table_id] = (*table_json, table.seq, table.closed)
        for index, text in prepared:
            if isinstance(index, RoundIndex):
                self._put_round(index, text)
            else:
                self._shoes[(index.table, index.shoe_no)] = (index.revealed, text)
        return len(new)

    def _put_round(self, index: RoundIndex, text: str) -> None:
        old = self._rounds.get(index.round_id)
        if old is None:
            self._round_seq += 1
            seq = self._round_seq
        else:
            seq = old[0]
            for played in self._played.values():
                played.pop(seq, None)
        self._rounds[index.round_id] = (seq, text)
        self._round_seqs[seq] = index.round_id
        for player in index.players:
            self._played.setdefault(player, {})[seq] = None

    # -- tables ----------------------------------------------------------------------
    async def load_tables(self) -> list[TableRow]:
        self._check_open()
        return [
            TableRow(table_id, json.loads(config), json.loads(state), seq, closed)
            for table_id, (config, state, seq, closed) in self._tables.items()
            if not closed
        ]

    async def save_table(self, row: TableRow) -> None:
        await self.commit(table=row)

    # -- records ---------------------------------------------------------------------
    async def history(self, player_id: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        self._check_open()
        limit = max(0, min(limit, HISTORY_LIMIT))
        seqs = sorted(self._played.get(player_id, {}), reverse=True)[:limit]
        return [json.loads(self._rounds[self._round_seqs[seq]][1]) for seq in seqs]

    async def round_record(self, round_id: str) -> dict[str, Any] | None:
        self._check_open()
        found = self._rounds.get(round_id)
        return None if found is None else dict(json.loads(found[1]))

    async def shoe_record(self, table_id: str, shoe_no: int | None = None) -> dict[str, Any] | None:
        self._check_open()
        if shoe_no is not None:
            found = self._shoes.get((table_id, shoe_no))
            return None if found is None else dict(json.loads(found[1]))
        revealed = [
            number
            for (table, number), (is_revealed, _) in self._shoes.items()
            if table == table_id and is_revealed
        ]
        if not revealed:
            return None
        return dict(json.loads(self._shoes[(table_id, max(revealed))][1]))

    async def shoe_records(self, table_id: str, limit: int = 20) -> list[dict[str, Any]]:
        self._check_open()
        numbers = sorted((n for (t, n) in self._shoes if t == table_id), reverse=True)
        return [json.loads(self._shoes[(table_id, n)][1]) for n in numbers[: max(0, limit)]]

    # -- checking --------------------------------------------------------------------
    async def ledger(self, account: str | None = None, limit: int = 1000) -> list[Entry]:
        self._check_open()
        found: list[Entry] = []
        for entry in reversed(self._ledger):
            if len(found) >= limit:
                break
            if account is None or account in (entry.src, entry.dst):
                found.append(entry)
        return found

    async def audit(self) -> dict[str, Any]:
        self._check_open()
        sums: dict[str, int] = {}
        for entry in self._ledger:
            sums[entry.src] = sums.get(entry.src, 0) - entry.amount
            sums[entry.dst] = sums.get(entry.dst, 0) + entry.amount
        accounts = set(sums) | set(self._balances)
        matches = all(sums.get(a, 0) == self._balances.get(a, 0) for a in accounts)
        return {
            "sum": sum(self._balances.values()),
            "ledger_matches": matches,
            "entries": len(self._ledger),
        }
