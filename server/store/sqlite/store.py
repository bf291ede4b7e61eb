"""The SQLite store's calls other than the commit (and those both stores answer alike,
:class:`~server.store.front.StoreFront`'s, whose primitives are here): tables and events,
records, secrets, currencies, player protection's atomic updates (each with the rule its
caller hands in), the ledger's reads, the wallet's outbox and the operator's calls.

Each call is one job on the connection (:class:`~server.store.sqlite.connection.SQLiteCore`);
it must never decide a rule itself.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from server.ledger.accounts import CASHIER, Entry, player_account
from server.ledger.flows import flow_day
from server.ledger.rules import welcome_entry
from server.protocol.errors import StoreError
from server.store.base import (
    HISTORY_LIMIT,
    AckRule,
    CurrentRule,
    LimitsRule,
    PlayRule,
    RestrictionRule,
    RoundFilter,
    TableRow,
)
from server.store.calls import (
    check_operator_call,
    merge_wallet_call,
    operator_call_record,
    wallet_totals,
)
from server.store.front import StoredBetReads
from server.store.players import (
    check_currency,
    check_play_open,
    check_play_time,
    play_baseline,
)
from server.store.records import (
    check_span,
    dump_json,
    follows,
)
from server.store.sqlite.connection import SQLiteCore
from server.store.sqlite.rows import (
    _LOAD_TABLES,
    _audit,
    _balance,
    _days,
    _epoch,
    _limits,
    _loaded_call,
    _parts,
    _play_session,
    _post,
    _put_play_session,
    _restriction,
    _rows,
)


class SQLiteStore(SQLiteCore):
    """A :class:`~server.store.base.Store` in one SQLite file at ``path``.

    ``event_retention``: events kept per table; ``round_index``: rounds a player's
    history index keeps; ``busy_timeout_ms``: how long a write waits for a lock;
    ``clock``: when a player was seen.
    """

    # -- players and balances --------------------------------------------------------
    async def _ensure(self, player_id: str, name: str, welcome: Entry | None, guest: bool) -> int:
        return await self._run(self._ensure_player, player_id, name, welcome, guest, self.clock())

    def _ensure_player(
        self,
        db: sqlite3.Connection,
        player_id: str,
        name: str,
        welcome: Entry | None,
        guest: bool,
        now: float,
    ) -> int:
        account = player_account(player_id)
        with self._transaction(db):
            known = db.execute("SELECT 1 FROM players WHERE player_id = ?", (player_id,))
            if known.fetchone() is None:
                db.execute("INSERT OR IGNORE INTO accounts (account) VALUES (?)", (account,))
                if welcome is not None:
                    _post(db, [welcome])
            db.execute(
                "INSERT INTO players (player_id, name, guest, seen) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (player_id) DO UPDATE SET name = excluded.name,"
                " guest = excluded.guest, seen = excluded.seen",
                (player_id, name, int(guest), now),
            )
            return _balance(db, account)

    async def player_name(self, player_id: str) -> str | None:
        def job(db: sqlite3.Connection) -> str | None:
            row = db.execute("SELECT name FROM players WHERE player_id = ?", (player_id,))
            found = row.fetchone()
            return None if found is None else str(found[0])

        return await self._run(job)

    async def expire_guests(self, idle_seconds: float) -> int:
        return await self._run(self._expire_guests, self.clock() - idle_seconds)

    def _expire_guests(self, db: sqlite3.Connection, cutoff: float) -> int:
        gone = 0
        with self._transaction(db):
            idle = db.execute(
                "SELECT player_id FROM players WHERE guest = 1 AND seen <= ?", (cutoff,)
            ).fetchall()
            for (pid,) in idle:
                account = player_account(pid)
                touching = db.execute(
                    "SELECT key, src, dst, amount, kind, round_id FROM ledger"
                    " WHERE src = ? OR dst = ? LIMIT 2",
                    (account, account),
                ).fetchall()
                welcome = welcome_entry(pid, touching[0][3]) if touching else None
                if len(touching) > 1 or (touching and Entry(*touching[0]) != welcome):
                    continue
                if _balance(db, account) != (welcome.amount if welcome else 0):
                    continue
                db.execute("DELETE FROM players WHERE player_id = ?", (pid,))
                db.execute("DELETE FROM play_sessions WHERE player_id = ?", (pid,))
                if welcome is not None:  # (the trigger lets it go once the row is gone)
                    db.execute("DELETE FROM ledger WHERE key = ?", (welcome.key,))
                    db.execute(
                        "UPDATE accounts SET balance = balance + ? WHERE account = ?",
                        (welcome.amount, CASHIER),
                    )
                db.execute("DELETE FROM accounts WHERE account = ?", (account,))
                gone += 1
        return gone

    async def load_balances(self) -> dict[str, int]:
        return await self._run(lambda db: dict(db.execute("SELECT account, balance FROM accounts")))

    async def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        wanted = list(accounts)
        return await self._read(lambda db: {account: _balance(db, account) for account in wanted})

    async def has_entry(self, key: str) -> bool:
        return await self._run(
            lambda db: (
                db.execute("SELECT 1 FROM ledger WHERE key = ?", (key,)).fetchone() is not None
            )
        )

    # -- tables ----------------------------------------------------------------------
    async def claim_table(self, table_id: str) -> int:
        if not isinstance(table_id, str) or not table_id:
            raise StoreError("a table has an id")

        def job(db: sqlite3.Connection) -> int:
            with self._transaction(db):
                db.execute(
                    "INSERT INTO epochs (table_id, epoch) VALUES (?, 1)"
                    " ON CONFLICT (table_id) DO UPDATE SET epoch = epoch + 1",
                    (table_id,),
                )
                return _epoch(db, table_id)

        return await self._run(job)

    async def table_seq(self, table_id: str) -> int:
        row = await self._run(
            lambda db: db.execute(
                "SELECT seq FROM tables WHERE table_id = ?", (table_id,)
            ).fetchone()
        )
        return 0 if row is None else int(row[0])

    async def load_tables(self) -> list[TableRow]:
        def job(db: sqlite3.Connection) -> list[TableRow]:
            rows = db.execute(_LOAD_TABLES + " WHERE closed = 0 ORDER BY tables.rowid").fetchall()
            return _rows(rows, _parts(db, None))

        return await self._run(job)

    async def table_ids(self) -> list[str]:
        rows = await self._run(
            lambda db: db.execute(
                "SELECT table_id FROM tables WHERE closed = 0 ORDER BY rowid"
            ).fetchall()
        )
        return [str(table_id) for (table_id,) in rows]

    async def load_table(self, table_id: str) -> TableRow | None:
        def job(db: sqlite3.Connection) -> list[TableRow]:
            where = " WHERE tables.table_id = ? AND closed = 0"
            rows = db.execute(_LOAD_TABLES + where, (table_id,)).fetchall()
            return _rows(rows, _parts(db, table_id) if rows else {})

        found = await self._run(job)
        return found[0] if found else None

    async def events_after(self, table_id: str, seq: int) -> list[dict[str, Any]] | None:
        def job(db: sqlite3.Connection) -> tuple[list[tuple[int, str]], int]:
            kept = db.execute(
                "SELECT seq, body FROM events WHERE table_id = ? AND seq > ? ORDER BY seq",
                (table_id, seq),
            ).fetchall()
            top = db.execute("SELECT seq FROM tables WHERE table_id = ?", (table_id,)).fetchone()
            return kept, 0 if top is None else int(top[0])

        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            return follows(seq, [], 0)  # raises the one error for a bad seq
        kept, top = await self._run(job)
        return follows(seq, kept, top)

    # -- records ---------------------------------------------------------------------
    async def history(self, player_id: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        limit = max(0, min(limit, HISTORY_LIMIT))
        rows = await self._run(
            lambda db: db.execute(
                "SELECT rounds.body FROM round_players"
                " JOIN rounds ON rounds.seq = round_players.round_seq"
                " WHERE round_players.player_id = ?"
                " ORDER BY round_players.round_seq DESC LIMIT ?",
                (player_id, limit),
            ).fetchall()
        )
        return [json.loads(body) for (body,) in rows]

    async def round_record(self, round_id: str) -> dict[str, Any] | None:
        found = await self._run(
            lambda db: db.execute(
                "SELECT body FROM rounds WHERE round_id = ?", (round_id,)
            ).fetchone()
        )
        return None if found is None else dict(json.loads(found[0]))

    async def _round_records(self, wanted: RoundFilter) -> list[dict[str, Any]]:
        where = ["time >= ?"]
        params: list[Any] = [max(wanted.low, -1e300)]
        if wanted.before is not None and wanted.before[0] < wanted.high:
            # One upper bound for the index range: a deep page starts where the last
            # one ended (the row value below orders the ties of one time).
            where.append("time <= ?")
            params.append(wanted.before[0])
        else:
            where.append("time < ?")
            params.append(min(wanted.high, 1e300))
        for column, value in (("table_id", wanted.table), ("round_id", wanted.round_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if wanted.player is not None:  # every round of theirs: round_players is pruned
            where.append(
                "EXISTS (SELECT 1 FROM json_each(rounds.body, '$.players') WHERE value = ?)"
            )
            params.append(wanted.player)
        if wanted.before is not None:
            where.append("(time, round_id) < (?, ?)")
            params += [wanted.before[0], wanted.before[1]]
        sql = (
            f"SELECT body FROM rounds WHERE {' AND '.join(where)}"
            " ORDER BY time DESC, round_id DESC LIMIT ?"
        )
        rows = await self._run(lambda db: db.execute(sql, (*params, wanted.limit)).fetchall())
        return [json.loads(body) for (body,) in rows]

    async def shoe_record(self, table_id: str, shoe_no: int | None = None) -> dict[str, Any] | None:
        def job(db: sqlite3.Connection) -> Any:
            if shoe_no is None:
                return db.execute(
                    "SELECT body FROM shoes WHERE table_id = ? AND revealed = 1"
                    " ORDER BY shoe_no DESC LIMIT 1",
                    (table_id,),
                ).fetchone()
            return db.execute(
                "SELECT body FROM shoes WHERE table_id = ? AND shoe_no = ?",
                (table_id, shoe_no),
            ).fetchone()

        found = await self._run(job)
        return None if found is None else dict(json.loads(found[0]))

    async def shoe_records(self, table_id: str, limit: int = 20) -> list[dict[str, Any]]:
        rows = await self._run(
            lambda db: db.execute(
                "SELECT body FROM shoes WHERE table_id = ? ORDER BY shoe_no DESC LIMIT ?",
                (table_id, max(0, limit)),
            ).fetchall()
        )
        return [json.loads(body) for (body,) in rows]

    async def secret(self, name: str, nbytes: int = 32) -> bytes:
        if not isinstance(name, str) or not name or not 16 <= nbytes <= 1024:
            raise StoreError("a secret has a name and 16 to 1024 bytes")
        fresh = secrets.token_bytes(nbytes)

        def job(db: sqlite3.Connection) -> bytes:
            with self._transaction(db):
                db.execute(
                    "INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)", (name, fresh)
                )
                (value,) = db.execute(
                    "SELECT value FROM secrets WHERE name = ?", (name,)
                ).fetchone()
                return bytes(value)

        return await self._run(job)

    # -- a player's currency ----------------------------------------------------------
    async def player_currency(self, player_id: str) -> str | None:
        def job(db: sqlite3.Connection) -> str | None:
            found = db.execute(
                "SELECT currency FROM player_currencies WHERE player_id = ?", (player_id,)
            ).fetchone()
            return None if found is None else str(found[0])

        return await self._run(job)

    async def set_player_currency(self, player_id: str, currency: str) -> str:
        check_currency(player_id, currency)

        def job(db: sqlite3.Connection) -> str:
            with self._transaction(db):
                db.execute(
                    "INSERT OR IGNORE INTO player_currencies (player_id, currency) VALUES (?, ?)",
                    (player_id, currency),
                )
                (stored,) = db.execute(
                    "SELECT currency FROM player_currencies WHERE player_id = ?", (player_id,)
                ).fetchone()
                return str(stored)

        return await self._run(job)

    # -- a player's time-out or self-exclusion ---------------------------------------
    async def _stored_restriction(self, player_id: str) -> dict[str, Any] | None:
        return await self._read(_restriction, player_id)

    async def set_player_restriction(
        self, player_id: str, kind: str, until: float, by: str, *, rule: RestrictionRule
    ) -> dict[str, Any] | None:
        def job(db: sqlite3.Connection) -> dict[str, Any] | None:
            with self._transaction(db):  # read and write in one: of two, one after the other
                kept = rule(_restriction(db, player_id), kind, until, by, time.time())
                if kept is None:
                    db.execute("DELETE FROM player_restrictions WHERE player_id = ?", (player_id,))
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO player_restrictions (player_id, body)"
                        " VALUES (?, ?)",
                        (player_id, json.dumps(kept)),
                    )
                return kept

        return await self._run(job)

    # -- a player's usage and limits ----------------------------------------------------
    async def _stored_days(self, player_id: str, since_day: str) -> dict[str, list[int]]:
        return await self._read(_days, player_id, since_day)

    async def _stored_bet_reads(self, player_id: str, since_day: str) -> StoredBetReads:
        def job(db: sqlite3.Connection) -> StoredBetReads:
            limits = _limits(db, player_id)
            days = _days(db, player_id, since_day) if limits else {}
            return _restriction(db, player_id), limits, _play_session(db, player_id), days

        return await self._read(job)

    async def player_limits(self, player_id: str, *, rule: CurrentRule) -> dict[str, Any]:
        stored = await self._read(_limits, player_id)
        return rule(stored, self.clock())

    async def set_player_limits(
        self, player_id: str, changes: Mapping[str, int | None], by: str, *, rule: LimitsRule
    ) -> dict[str, Any]:
        def job(db: sqlite3.Connection) -> dict[str, Any]:
            with self._transaction(db):  # read and write in one: of two, one after the other
                kept = rule(_limits(db, player_id), changes, by, self.clock())
                if kept:
                    db.execute(
                        "INSERT OR REPLACE INTO player_limits (player_id, body) VALUES (?, ?)",
                        (player_id, dump_json(kept)),
                    )
                else:
                    db.execute("DELETE FROM player_limits WHERE player_id = ?", (player_id,))
                return kept

        return await self._run(job)

    # -- a player's play session --------------------------------------------------------
    async def open_play_session(
        self, player_id: str, now: float, gap: float, every: float | None, *, rule: PlayRule
    ) -> dict[str, Any]:
        now, gap, every = check_play_open(player_id, now, gap, every)

        def job(db: sqlite3.Connection) -> dict[str, Any]:
            with self._transaction(db):  # read and write in one: of two, one after the other
                baseline = play_baseline(_days(db, player_id, flow_day(now)), now)
                kept = rule(_play_session(db, player_id), now, gap, every, baseline)
                _put_play_session(db, player_id, kept)
                return kept

        return await self._run(job)

    async def play_session(self, player_id: str) -> dict[str, Any] | None:
        return await self._read(_play_session, player_id)

    async def touch_play_sessions(self, player_ids: Sequence[str], now: float) -> None:
        now = check_play_time(now, "time")
        wanted = [(now, pid) for pid in dict.fromkeys(player_ids)]
        if not wanted:
            return

        def job(db: sqlite3.Connection) -> None:
            with self._transaction(db):
                db.executemany(
                    "UPDATE play_sessions SET seen = max(seen, ?) WHERE player_id = ?", wanted
                )

        await self._run(job)

    async def ack_reality_check(
        self, player_id: str, now: float, *, rule: AckRule
    ) -> dict[str, Any] | None:
        now = check_play_time(now, "time")

        def job(db: sqlite3.Connection) -> dict[str, Any] | None:
            with self._transaction(db):
                kept = rule(_play_session(db, player_id), now)
                if kept is not None:
                    _put_play_session(db, player_id, kept)
                return kept

        return await self._run(job)

    # -- checking --------------------------------------------------------------------
    async def ledger(self, account: str | None = None, limit: int = 1000) -> list[Entry]:
        columns = "key, src, dst, amount, kind, round_id"

        def job(db: sqlite3.Connection) -> list[Entry]:
            if account is None:
                cursor = db.execute(
                    f"SELECT {columns} FROM ledger ORDER BY seq DESC LIMIT ?", (max(0, limit),)
                )
            else:
                cursor = db.execute(
                    f"SELECT {columns} FROM ledger WHERE src = ? OR dst = ?"
                    " ORDER BY seq DESC LIMIT ?",
                    (account, account, max(0, limit)),
                )
            return [Entry(*row) for row in cursor]

        return await self._run(job)

    async def audit(self) -> dict[str, Any]:
        return await self._run(_audit)

    # -- the wallet calls' outbox ---------------------------------------------------------
    async def _update_wallet_call(
        self, transaction_id: str, changes: Mapping[str, Any], only_from: str | None
    ) -> dict[str, Any] | None:

        def job(db: sqlite3.Connection) -> dict[str, Any] | None:
            with self._transaction(db):
                found = db.execute(
                    "SELECT seq, data FROM wallet_calls WHERE transaction_id = ?",
                    (transaction_id,),
                ).fetchone()
                if found is None:
                    return None
                seq, data = found
                stored = json.loads(data)
                if only_from is not None and stored["state"] != only_from:
                    return {**stored, "seq": seq}
                call, text = merge_wallet_call(stored, changes)
                db.execute(
                    "UPDATE wallet_calls SET state = ?, next_at = ?, data = ? WHERE seq = ?",
                    (call["state"], call["next_at"], text, seq),
                )
                return {**call, "seq": seq}

        return await self._run(job)

    async def _due_wallet_calls(
        self, now: float, limit: int, kinds: tuple[str, ...]
    ) -> list[dict[str, Any]]:
        rows = await self._run(
            lambda db: db.execute(
                "SELECT seq, data FROM wallet_calls WHERE state = 'pending' AND next_at <= ?"
                f" AND kind IN ({', '.join('?' * len(kinds))}) ORDER BY next_at, seq LIMIT ?",
                (now, *kinds, limit),
            ).fetchall()
        )
        return [_loaded_call(seq, data) for seq, data in rows]

    async def wallet_call(self, transaction_id: str) -> dict[str, Any] | None:
        found = await self._run(
            lambda db: db.execute(
                "SELECT seq, data FROM wallet_calls WHERE transaction_id = ?", (transaction_id,)
            ).fetchone()
        )
        return None if found is None else _loaded_call(*found)

    async def _wallet_calls(
        self, filters: Mapping[str, str], limit: int, before_seq: int | None
    ) -> list[dict[str, Any]]:
        columns = {"state": "state", "player": "player", "table": "table_id"}
        columns |= {"round_id": "round_id", "kind": "kind"}
        where = [f"{columns[name]} = ?" for name in filters]
        params: list[Any] = list(filters.values())
        if before_seq is not None:
            where.append("seq < ?")
            params.append(before_seq)
        sql = "SELECT seq, data FROM wallet_calls"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = await self._run(
            lambda db: db.execute(f"{sql} ORDER BY seq DESC LIMIT ?", (*params, limit)).fetchall()
        )
        return [_loaded_call(seq, data) for seq, data in rows]

    async def wallet_totals(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[dict[str, Any]]:
        low, high = check_span(since, until)
        rows = await self._run(
            lambda db: db.execute(
                "SELECT created, table_id, currency, kind, state, amount FROM wallet_calls"
                " WHERE created >= ? AND created < ?",
                (max(low, -1e300), min(high, 1e300)),
            ).fetchall()
        )
        names = ("created", "table", "currency", "kind", "state", "amount")
        return wallet_totals((dict(zip(names, row, strict=True)) for row in rows), since, until)

    # -- the operator's calls, each made once -------------------------------------------
    async def claim_operator_call(
        self, key: str, fingerprint: str, keep: float
    ) -> dict[str, Any] | None:
        keep = check_operator_call(key, fingerprint, keep)
        record = operator_call_record(fingerprint, None)

        def job(db: sqlite3.Connection) -> dict[str, Any] | None:
            now = self.clock()
            with self._transaction(db):  # read and write in one: of two, one after the other
                db.execute("DELETE FROM operator_calls WHERE expires <= ?", (now,))
                claimed = db.execute(
                    "INSERT OR IGNORE INTO operator_calls (key, fingerprint, body, expires)"
                    " VALUES (?, ?, ?, ?)",
                    (key, fingerprint, record, now + keep),
                ).rowcount
                if claimed:
                    return None
                (body,) = db.execute(
                    "SELECT body FROM operator_calls WHERE key = ?", (key,)
                ).fetchone()
                return dict(json.loads(body))

        return await self._run(job)

    async def answer_operator_call(
        self, key: str, fingerprint: str, answer: Mapping[str, Any], keep: float
    ) -> None:
        keep = check_operator_call(key, fingerprint, keep)
        record = operator_call_record(fingerprint, answer)

        def job(db: sqlite3.Connection) -> None:
            now = self.clock()
            with self._transaction(db):
                db.execute(
                    "UPDATE operator_calls SET body = ?, expires = ?"
                    " WHERE key = ? AND fingerprint = ? AND expires > ?",
                    (record, now + keep, key, fingerprint, now),
                )

        await self._run(job)
