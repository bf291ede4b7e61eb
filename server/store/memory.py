"""An in-memory :class:`~server.store.base.Store`, for unit tests and throwaway servers.

It keeps the same contract as the SQLite and Redis stores (the one suite in
``tests/server/test_store.py`` runs against all three): records, events and table state
are stored as JSON text, so what comes back is what SQLite would give back, and a commit
is staged on copies and applied only when every check passed, so it is all or nothing.

It must never be used where money must survive a restart or be shared: everything is
lost with the process. It never does I/O.
"""

from __future__ import annotations

import copy
import json
import secrets
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from server.ledger.accounts import CASHIER, Entry, player_account
from server.ledger.rules import check_epoch, post, pruned_days, stake_account, welcome_entry
from server.store.base import (
    EVENT_RETENTION,
    HISTORY_LIMIT,
    AckRule,
    BetReads,
    CommitResult,
    CurrentRule,
    LimitGuard,
    LimitsRule,
    PlayRule,
    RestrictionRule,
    RoundIndex,
    RoundQuery,
    StoreError,
    TableRow,
)
from server.store.calls import (
    check_due_kinds,
    check_due_time,
    check_operator_call,
    check_wallet_changes,
    merge_wallet_call,
    operator_call_record,
    wallet_call_matches,
    wallet_filters,
    wallet_limit,
    wallet_totals,
)
from server.store.plan import check_retention, new_calls, new_events, plan_commit, unindexed
from server.store.players import (
    check_currency,
    check_day,
    check_play_open,
    check_play_time,
    flow_buckets,
    guard_breach,
    guard_measure,
    play_baseline,
)
from server.store.records import (
    audit_report,
    dump_json,
    follows,
    hold_problems,
    round_query,
)

__all__ = ["MemoryStore"]


class MemoryStore:
    """Balances, ledger, tables, events and records in dicts.

    ``event_retention`` is how many events are kept per table; ``round_index`` how many
    rounds a player's history index keeps (at least :data:`HISTORY_LIMIT`); ``clock``
    says when a player was last seen (for :meth:`expire_guests`).
    """

    def __init__(
        self,
        *,
        event_retention: int = EVENT_RETENTION,
        round_index: int = HISTORY_LIMIT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.event_retention, self.round_index = check_retention(event_retention, round_index)
        self.clock = clock
        self._open = False
        self._balances: dict[str, int] = {}
        self._ledger: dict[str, Entry] = {}  # by key, in insertion order
        # player -> (name, guest, last seen)
        self._players: dict[str, tuple[str, bool, float]] = {}
        # table_id -> (config JSON, state JSON, seq, closed); dict order = first save.
        self._tables: dict[str, tuple[str, str, int, bool]] = {}
        self._parts: dict[str, dict[str, str]] = {}  # each table's parts (TableRow.parts)
        self._epochs: dict[str, int] = {}
        self._events: dict[str, deque[tuple[int, str]]] = {}
        # round_id -> (sequence number, JSON); player -> {sequence number: None}.
        self._rounds: dict[str, tuple[int, str]] = {}
        self._round_ids: dict[int, str] = {}
        self._round_players: dict[str, tuple[str, ...]] = {}
        # round_id -> its indexed fields (time among them): round_records' list.
        self._round_index: dict[str, RoundIndex] = {}
        self._played: dict[str, dict[int, None]] = {}
        self._round_seq = 0
        # (table, shoe_no) -> (revealed, JSON)
        self._shoes: dict[tuple[str, int], tuple[bool, str]] = {}
        self._secrets: dict[str, bytes] = {}
        # Wallet calls: transaction_id -> (seq, JSON without seq), in seq order.
        self._calls: dict[str, tuple[int, str]] = {}
        self._call_seq = 0
        self._pending: dict[str, None] = {}  # the due index: the pending calls' ids
        self._currencies: dict[str, str] = {}  # player -> ISO 4217 code (transfer API)
        self._restrictions: dict[str, dict[str, Any]] = {}  # player -> time-out/exclusion
        # player -> day -> [staked, net, deposited] (player_days); player -> limits JSON.
        self._days: dict[str, dict[str, list[int]]] = {}
        self._limits: dict[str, str] = {}
        self._play: dict[str, dict[str, Any]] = {}  # player -> play session
        # The operator's calls made once: key -> (record JSON, when its time runs out),
        # oldest first.
        self._operator_calls: dict[str, tuple[str, float]] = {}

    def __repr__(self) -> str:
        return "MemoryStore()"

    # -- lifecycle -------------------------------------------------------------------
    async def open(self) -> None:
        self._open = True

    async def claim_serving(self) -> None:
        """A process's own store: nothing to claim."""

    async def close(self) -> None:
        self._open = False

    def _check_open(self) -> None:
        if not self._open:
            raise StoreError("the store is not open")

    # -- players and balances --------------------------------------------------------
    async def ensure_player(
        self, player_id: str, name: str, initial_balance: int, *, guest: bool = False
    ) -> int:
        self._check_open()
        if not isinstance(initial_balance, int) or initial_balance < 0:
            raise StoreError("an initial balance is a whole number, not negative")
        account = player_account(player_id)
        if player_id not in self._players:
            entries = [welcome_entry(player_id, initial_balance)] if initial_balance > 0 else []
            await self.commit(entries=entries)
            self._balances.setdefault(account, 0)
        self._players[player_id] = (name, guest, self.clock())
        return self._balances[account]

    async def player_name(self, player_id: str) -> str | None:
        self._check_open()
        found = self._players.get(player_id)
        return None if found is None else found[0]

    async def expire_guests(self, idle_seconds: float) -> int:
        self._check_open()
        cutoff = self.clock() - idle_seconds
        gone = 0
        for pid, (_, guest, seen) in list(self._players.items()):
            if not guest or seen > cutoff:
                continue
            account = player_account(pid)
            touching = [e for e in self._ledger.values() if account in (e.src, e.dst)]
            welcome = welcome_entry(pid, touching[0].amount) if touching else None
            if len(touching) > 1 or (touching and touching[0] != welcome):
                continue
            if self._balances.get(account, 0) != (welcome.amount if welcome else 0):
                continue
            if welcome is not None:
                del self._ledger[welcome.key]
                self._balances[CASHIER] += welcome.amount
            self._balances.pop(account, None)
            del self._players[pid]
            self._play.pop(pid, None)
            gone += 1
        return gone

    async def load_balances(self) -> dict[str, int]:
        self._check_open()
        return dict(self._balances)

    async def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        self._check_open()
        return {account: self._balances.get(account, 0) for account in accounts}

    async def player_money(self, player_id: str, tables: Iterable[str] = ()) -> tuple[int, int]:
        self._check_open()
        available = self._balances.get(player_account(player_id), 0)
        stakes = sum(self._balances.get(stake_account(t, player_id), 0) for t in set(tables))
        return available + stakes, available

    async def has_entry(self, key: str) -> bool:
        self._check_open()
        return key in self._ledger

    # -- the one write ---------------------------------------------------------------
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
        self._check_open()
        plan = plan_commit(self.clock(), entries, table, records, events, calls, guards)
        # What must hold against the stored data (nothing is touched until it all has).
        table = plan.table
        if table is not None:
            check_epoch(table.table_id, table.epoch, self._epochs.get(table.table_id, 0))
        posting = post(plan.entries, self._ledger.get, lambda a: self._balances.get(a, 0))
        self._hold_guards(plan.guards, posting.flows)

        # Apply.
        self._balances.update(posting.balances)
        self._ledger.update((entry.key, entry) for entry in posting.new)
        self._put_flows(posting.flows, plan.day, plan.cutoff)
        if table is not None and plan.row is not None:
            tid = table.table_id
            self._tables[tid] = (*plan.row, table.seq, table.closed)
            if plan.parts is not None:
                self._put_parts(tid, *plan.parts)
            self._epochs[tid] = max(table.epoch, self._epochs.get(tid, 0))
            log = self._events.setdefault(tid, deque(maxlen=self.event_retention))
            if table.state is None:
                log.clear()
            # (its maxlen keeps the newest event_retention: plan.first_event_kept's count)
            log.extend(new_events(plan.events, log[-1][0] if log else -1))
        for index, text in plan.records:
            if isinstance(index, RoundIndex):
                self._put_round(index, text)
            else:
                self._shoes[(index.table, index.shoe_no)] = (index.revealed, text)
        self._put_calls(plan.calls)
        return CommitResult(len(posting.new), {a: self._balances.get(a, 0) for a in plan.report})

    def _put_parts(self, tid: str, drop: bool, parts: list[tuple[str, str | None]]) -> None:
        kept = self._parts.pop(tid, {})
        if drop:  # a table created (again), or closed: its parts go
            kept = {}
        for key, text in parts:
            if text is None:
                kept.pop(key, None)
            else:
                kept[key] = text
        if kept:
            self._parts[tid] = kept

    def _hold_guards(self, guards: Sequence[LimitGuard], flows: Mapping[str, list[int]]) -> None:
        """Raise :class:`LimitPassed` when ``flows`` (a commit's, not yet added) take a
        player past one of ``guards``."""
        for guard in guards:
            index, _ = guard_measure(guard.kind)
            added = flows.get(guard.player, [0, 0, 0])[index]
            days = self._days.get(guard.player, {})
            total = added + sum(v[index] for d, v in days.items() if d >= guard.since)
            breach = guard_breach(guard, total, added)
            if breach is not None:
                raise breach

    def _put_flows(self, flows: Mapping[str, list[int]], day: str, cutoff: str) -> None:
        """Add each player's flows to their bucket of ``day``; prune days before
        ``cutoff``."""
        if not flows:
            return
        for player, sums in flows.items():
            days = self._days.setdefault(player, {})
            if day not in days:  # a player's first flow of the day prunes (ledger)
                for old in pruned_days(days, cutoff):
                    del days[old]
            bucket = days.setdefault(day, [0, 0, 0])
            for n, amount in enumerate(sums):
                bucket[n] += amount

    def _put_round(self, index: RoundIndex, text: str) -> None:
        old = self._rounds.get(index.round_id)
        if old is None:
            self._round_seq += 1
            seq = self._round_seq
        else:
            seq = old[0]
            for player in self._round_players.get(index.round_id, ()):
                self._played.get(player, {}).pop(seq, None)
        self._rounds[index.round_id] = (seq, text)
        self._round_ids[seq] = index.round_id
        self._round_players[index.round_id] = index.players
        self._round_index[index.round_id] = index
        for player in index.players:
            played = self._played.setdefault(player, {})
            played[seq] = None
            for old_seq in unindexed(played, self.round_index):  # GAME_RULES §8
                del played[old_seq]

    # -- tables ----------------------------------------------------------------------
    async def claim_table(self, table_id: str) -> int:
        self._check_open()
        if not isinstance(table_id, str) or not table_id:
            raise StoreError("a table has an id")
        self._epochs[table_id] = self._epochs.get(table_id, 0) + 1
        return self._epochs[table_id]

    async def table_seq(self, table_id: str) -> int:
        self._check_open()
        row = self._tables.get(table_id)
        return 0 if row is None else row[2]

    async def load_tables(self) -> list[TableRow]:
        self._check_open()
        return [
            TableRow(
                table_id,
                json.loads(config),
                json.loads(state),
                seq,
                closed,
                self._epochs.get(table_id, 0),
                {k: json.loads(v) for k, v in self._parts.get(table_id, {}).items()} or None,
            )
            for table_id, (config, state, seq, closed) in self._tables.items()
            if not closed
        ]

    async def table_ids(self) -> list[str]:
        self._check_open()
        return [table_id for table_id, row in self._tables.items() if not row[3]]

    async def load_table(self, table_id: str) -> TableRow | None:
        found = [row for row in await self.load_tables() if row.table_id == table_id]
        return found[0] if found else None

    async def save_table(self, row: TableRow) -> None:
        await self.commit(table=row)

    async def events_after(self, table_id: str, seq: int) -> list[dict[str, Any]] | None:
        self._check_open()
        row = self._tables.get(table_id)
        kept = [event for event in self._events.get(table_id, ()) if event[0] > seq]
        return follows(seq, kept, 0 if row is None else row[2])

    # -- records ---------------------------------------------------------------------
    async def history(self, player_id: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        self._check_open()
        limit = max(0, min(limit, HISTORY_LIMIT))
        seqs = sorted(self._played.get(player_id, {}), reverse=True)[:limit]
        return [json.loads(self._rounds[self._round_ids[seq]][1]) for seq in seqs]

    async def round_record(self, round_id: str) -> dict[str, Any] | None:
        self._check_open()
        found = self._rounds.get(round_id)
        return None if found is None else dict(json.loads(found[1]))

    async def round_records(
        self,
        query: RoundQuery,
    ) -> list[dict[str, Any]]:
        self._check_open()
        wanted = round_query(query)
        if not wanted.limit:
            return []
        found = sorted(
            (index for index in self._round_index.values() if wanted.matches(index)),
            key=lambda index: index.order,
            reverse=True,
        )[: wanted.limit]
        return [json.loads(self._rounds[index.round_id][1]) for index in found]

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

    async def secret(self, name: str, nbytes: int = 32) -> bytes:
        self._check_open()
        if not isinstance(name, str) or not name or not 16 <= nbytes <= 1024:
            raise StoreError("a secret has a name and 16 to 1024 bytes")
        return self._secrets.setdefault(name, secrets.token_bytes(nbytes))

    # -- a player's currency ----------------------------------------------------------
    async def player_currency(self, player_id: str) -> str | None:
        self._check_open()
        return self._currencies.get(player_id)

    async def set_player_currency(self, player_id: str, currency: str) -> str:
        self._check_open()
        check_currency(player_id, currency)
        return self._currencies.setdefault(player_id, currency)

    # -- a player's time-out or self-exclusion ---------------------------------------
    async def player_restriction(self, player_id: str) -> dict[str, Any] | None:
        self._check_open()
        found = self._restrictions.get(player_id)
        return dict(found) if found is not None and found["until"] > time.time() else None

    async def set_player_restriction(
        self, player_id: str, kind: str, until: float, by: str, *, rule: RestrictionRule
    ) -> dict[str, Any] | None:
        self._check_open()
        kept = rule(self._restrictions.get(player_id), kind, until, by, time.time())
        if kept is None:
            self._restrictions.pop(player_id, None)
        else:
            self._restrictions[player_id] = kept
        return None if kept is None else dict(kept)

    # -- a player's usage and limits ----------------------------------------------------
    async def player_days(self, player_id: str, since_day: str) -> dict[str, dict[str, int]]:
        self._check_open()
        since_day = check_day(since_day)
        return flow_buckets(self._days.get(player_id, {}), since_day)

    async def bet_reads(self, player_id: str, since_day: str, *, rule: CurrentRule) -> BetReads:
        limits = await self.player_limits(player_id, rule=rule)
        return BetReads(
            await self.player_restriction(player_id),
            limits,
            await self.play_session(player_id),
            await self.player_days(player_id, since_day) if limits else {},
        )

    async def player_limits(self, player_id: str, *, rule: CurrentRule) -> dict[str, Any]:
        self._check_open()
        found = self._limits.get(player_id)
        return rule(None if found is None else json.loads(found), self.clock())

    async def set_player_limits(
        self, player_id: str, changes: Mapping[str, int | None], by: str, *, rule: LimitsRule
    ) -> dict[str, Any]:
        self._check_open()
        found = self._limits.get(player_id)
        old = None if found is None else json.loads(found)
        kept = rule(old, changes, by, self.clock())
        if kept:
            self._limits[player_id] = dump_json(kept)
        else:
            self._limits.pop(player_id, None)
        return kept

    # -- a player's play session --------------------------------------------------------
    async def open_play_session(
        self, player_id: str, now: float, gap: float, every: float | None, *, rule: PlayRule
    ) -> dict[str, Any]:
        self._check_open()
        now, gap, every = check_play_open(player_id, now, gap, every)
        baseline = play_baseline(self._days.get(player_id, {}), now)
        kept = rule(self._play.get(player_id), now, gap, every, baseline)
        self._play[player_id] = kept
        return copy.deepcopy(kept)

    async def play_session(self, player_id: str) -> dict[str, Any] | None:
        self._check_open()
        found = self._play.get(player_id)
        return None if found is None else copy.deepcopy(found)

    async def touch_play_sessions(self, player_ids: Sequence[str], now: float) -> None:
        self._check_open()
        now = check_play_time(now, "time")
        for pid in player_ids:
            found = self._play.get(pid)
            if found is not None:
                found["seen"] = max(float(found["seen"]), now)

    async def ack_reality_check(
        self, player_id: str, now: float, *, rule: AckRule
    ) -> dict[str, Any] | None:
        self._check_open()
        kept = rule(self._play.get(player_id), check_play_time(now, "time"))
        if kept is not None:
            self._play[player_id] = kept
        return copy.deepcopy(kept)

    # -- checking --------------------------------------------------------------------
    async def ledger(self, account: str | None = None, limit: int = 1000) -> list[Entry]:
        self._check_open()
        found: list[Entry] = []
        for entry in reversed(self._ledger.values()):
            if len(found) >= limit:
                break
            if account is None or account in (entry.src, entry.dst):
                found.append(entry)
        return found

    async def audit(self) -> dict[str, Any]:
        self._check_open()
        sums: dict[str, int] = {}
        for entry in self._ledger.values():
            sums[entry.src] = sums.get(entry.src, 0) - entry.amount
            sums[entry.dst] = sums.get(entry.dst, 0) + entry.amount
        recorded = {e.round_id for e in self._ledger.values() if e.round_id in self._rounds}
        problems = hold_problems(self._ledger.values(), recorded, self._balances)
        return audit_report(self._balances, sums, len(self._ledger), problems)

    # -- the wallet calls' outbox ---------------------------------------------------------
    def _put_calls(self, prepared: Sequence[tuple[dict[str, Any], str]]) -> None:
        """Insert the calls not stored yet (a stored ``transaction_id`` is kept as is)."""
        for call, text in new_calls(prepared, self._calls):
            txn = call["transaction_id"]
            self._call_seq += 1
            self._calls[txn] = (self._call_seq, text)
            if call["state"] == "pending":
                self._pending[txn] = None

    def _loaded_call(self, transaction_id: str) -> dict[str, Any] | None:
        found = self._calls.get(transaction_id)
        return None if found is None else {**json.loads(found[1]), "seq": found[0]}

    async def update_wallet_call(
        self,
        transaction_id: str,
        changes: Mapping[str, Any],
        *,
        only_from: str | None = None,
    ) -> dict[str, Any] | None:
        self._check_open()
        stored = self._loaded_call(transaction_id)
        if stored is None:
            check_wallet_changes(changes)
            return None
        if only_from is not None and stored["state"] != only_from:
            check_wallet_changes(changes)
            return stored
        call, text = merge_wallet_call(stored, changes)
        self._calls[transaction_id] = (stored["seq"], text)
        if call["state"] == "pending":
            self._pending[transaction_id] = None
        else:
            self._pending.pop(transaction_id, None)
        return self._loaded_call(transaction_id)

    async def due_wallet_calls(
        self,
        now: float,
        limit: int = 100,
        kinds: Sequence[str] = ("credit", "rollback"),
    ) -> list[dict[str, Any]]:
        self._check_open()
        now, limit, wanted = check_due_time(now), wallet_limit(limit), check_due_kinds(kinds)
        due = [
            call
            for call in (self._loaded_call(txn) for txn in self._pending)
            if call is not None and call["kind"] in wanted and call["next_at"] <= now
        ]
        due.sort(key=lambda call: (call["next_at"], call["seq"]))
        return due[:limit]

    async def wallet_call(self, transaction_id: str) -> dict[str, Any] | None:
        self._check_open()
        return self._loaded_call(transaction_id)

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
        self._check_open()
        filters = wallet_filters(
            state=state,
            player=player,
            table=table,
            round_id=round_id,
            kind=kind,
            before_seq=before_seq,
        )
        limit = wallet_limit(limit)
        found: list[dict[str, Any]] = []
        for txn in reversed(self._calls):
            if len(found) >= limit:
                break
            call = self._loaded_call(txn)
            if call is None or (before_seq is not None and call["seq"] >= before_seq):
                continue
            if wallet_call_matches(call, filters):
                found.append(call)
        return found

    async def wallet_totals(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[dict[str, Any]]:
        self._check_open()
        calls = (json.loads(text) for _, text in self._calls.values())
        return wallet_totals(calls, since, until)

    # -- the operator's calls, each made once -------------------------------------------
    async def claim_operator_call(
        self, key: str, fingerprint: str, keep: float
    ) -> dict[str, Any] | None:
        self._check_open()
        keep = check_operator_call(key, fingerprint, keep)
        now = self.clock()
        calls = self._operator_calls
        while calls:  # forget the oldest whose time ran out
            oldest = next(iter(calls))
            if calls[oldest][1] > now:
                break
            del calls[oldest]
        found = calls.get(key)
        if found is not None and found[1] > now:
            return dict(json.loads(found[0]))
        calls.pop(key, None)
        calls[key] = (operator_call_record(fingerprint, None), now + keep)
        return None

    async def answer_operator_call(
        self, key: str, fingerprint: str, answer: Mapping[str, Any], keep: float
    ) -> None:
        self._check_open()
        keep = check_operator_call(key, fingerprint, keep)
        record = operator_call_record(fingerprint, answer)
        now = self.clock()
        found = self._operator_calls.get(key)
        if found is None or found[1] <= now or json.loads(found[0])["fingerprint"] != fingerprint:
            return
        del self._operator_calls[key]  # (to the end: the newest)
        self._operator_calls[key] = (record, now + keep)
