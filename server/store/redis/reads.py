"""The Redis store's reads: balances, the ledger and its audit, the tables, their
events, and the round and shoe records (with the round search), and a secret made once.

Plain commands and pipelines, each through the boundary of
:class:`~server.store.redis.core.RedisCore`. It writes only a secret (once) and the list
of open tables (a closed table still listed is taken off); it must never write money
or a table's row (``save_table`` is the core's commit) nor ``KEYS``-scan a database.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from typing import Any

import redis.asyncio as aioredis

from server.ledger.accounts import Entry
from server.ledger.audit import audit_report, hold_problems
from server.ledger.rules import OUTCOME_KINDS
from server.protocol.errors import StoreError, StoreUnavailable
from server.store.base import HISTORY_LIMIT, RoundFilter, RoundIndex, TableRow
from server.store.records import follows, index_record
from server.store.redis.core import RedisCore, _text, _texts, _unpack


class RedisReads(RedisCore):
    """The reads of :class:`~server.store.redis.RedisStore`."""

    # -- players and balances --------------------------------------------------------
    async def player_name(self, player_id: str) -> str | None:
        with self._translated():
            found = await self._redis().hget(self._key("players"), player_id)
        return None if found is None else _text(found)

    async def load_balances(self) -> dict[str, int]:
        with self._translated():
            found = await self._redis().hgetall(self._key("balances"))
        return {_text(a): int(b) for a, b in found.items()}

    async def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(accounts))
        if not wanted:
            return {}
        with self._translated():
            found = await self._redis().hmget(self._key("balances"), wanted)
        return {a: int(b or 0) for a, b in zip(wanted, found, strict=True)}

    async def has_entry(self, key: str) -> bool:
        with self._translated():
            return bool(await self._redis().hexists(self._key("entries"), key))

    # -- tables ----------------------------------------------------------------------
    async def table_seq(self, table_id: str) -> int:
        with self._translated():
            seq = await self._redis().hget(self._table_key(table_id, "row"), "seq")
        return 0 if seq is None else int(seq)

    async def load_tables(self) -> list[TableRow]:
        with self._translated():
            ids = _texts(await self._redis().zrange(self._key("tables"), 0, -1))
        return [row for row in await self._rows(ids) if row is not None]

    async def table_ids(self) -> list[str]:
        with self._translated():
            return _texts(await self._redis().zrange(self._key("tables"), 0, -1))

    async def load_table(self, table_id: str) -> TableRow | None:
        return (await self._rows([table_id]))[0]

    async def _rows(self, ids: list[str]) -> list[TableRow | None]:
        """The open tables' rows of ``ids`` (None for one closed or never saved). A
        closed one still listed (a table closed before closing took it off the list)
        is taken off."""
        with self._translated():
            redis = self._redis()
            async with redis.pipeline(transaction=True) as pipe:
                for tid in ids:
                    pipe.hmget(self._table_key(tid, "row"), ["config", "state", "seq", "closed"])
                    pipe.get(self._table_key(tid, "epoch"))
                    pipe.hgetall(self._table_key(tid, "parts"))
                found = await pipe.execute()
            rows: list[TableRow | None] = []
            for n, tid in enumerate(ids):
                (config, state, seq, closed), epoch = found[3 * n], found[3 * n + 1]
                parts = {_text(k): json.loads(v) for k, v in found[3 * n + 2].items()}
                if config is None or closed == b"1":
                    if closed == b"1":  # (unless opened again meanwhile)
                        await self._scripts["unlist"](args=[self.prefix, tid], client=redis)
                    rows.append(None)
                    continue
                rows.append(
                    TableRow(
                        tid,
                        json.loads(config),
                        json.loads(state),
                        int(seq),
                        False,
                        int(epoch or 0),
                        parts or None,
                    )
                )
        return rows

    async def events_after(self, table_id: str, seq: int) -> list[dict[str, Any]] | None:
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            return follows(seq, [], 0)  # raises the one error for a bad seq
        with self._translated():
            async with self._redis().pipeline(transaction=True) as pipe:
                pipe.xrange(self._table_key(table_id, "events"), f"{seq + 1}-0", "+")
                pipe.hget(self._table_key(table_id, "row"), "seq")
                kept, top = await pipe.execute()
        events = [(int(_text(eid).split("-", 1)[0]), _text(fields[b"e"])) for eid, fields in kept]
        return follows(seq, events, int(top or 0))

    # -- records ---------------------------------------------------------------------
    async def history(self, player_id: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        limit = max(0, min(limit, HISTORY_LIMIT))
        if not limit:
            return []
        with self._translated():
            redis = self._redis()
            ids = _texts(await redis.zrevrange(self._key("played:", player_id), 0, limit - 1))
            if not ids:
                return []
            bodies = await redis.hmget(self._key("rounds"), ids)
        return [json.loads(body) for body in bodies if body is not None]

    async def round_record(self, round_id: str) -> dict[str, Any] | None:
        with self._translated():
            found = await self._redis().hget(self._key("rounds"), round_id)
        return None if found is None else dict(json.loads(found))

    async def _round_records(self, wanted: RoundFilter) -> list[dict[str, Any]]:
        if wanted.round_id is not None:  # one record: read it, then apply the rest
            record = await self.round_record(wanted.round_id)
            if record is None:
                return []
            index = index_record(record)
            return [record] if isinstance(index, RoundIndex) and wanted.matches(index) else []
        key = (
            self._key("round_times")
            if wanted.table is None
            else self._key("round_times:", wanted.table)
        )
        top = "+inf" if wanted.high == float("inf") else f"({wanted.high!r}"
        if wanted.before is not None and wanted.before[0] < wanted.high:
            top = repr(wanted.before[0])  # inclusive: its ties below its round_id count
        bottom = "-inf" if wanted.low == float("-inf") else repr(wanted.low)
        batch = max(2 * wanted.limit, 200)
        chosen: list[str] = []
        offset = 0
        with self._translated():
            redis = self._redis()
            while len(chosen) < wanted.limit:
                found: list[Any] = await redis.zrevrangebyscore(
                    key, top, bottom, start=offset, num=batch, withscores=True
                )
                offset += len(found)
                ids = [
                    _text(rid)
                    for rid, score in found
                    if wanted.before is None or (float(score), _text(rid)) < wanted.before
                ]
                if wanted.player is not None and ids:
                    indexes = await redis.hmget(self._key("round_index"), ids)
                    ids = [
                        rid
                        for rid, index in zip(ids, indexes, strict=True)
                        if index is not None
                        and wanted.player in json.loads(_text(index).split(" ", 1)[1])
                    ]
                chosen += ids[: wanted.limit - len(chosen)]
                if len(found) < batch:
                    break
            if not chosen:
                return []
            bodies = await redis.hmget(self._key("rounds"), chosen)
        return [json.loads(body) for body in bodies if body is not None]

    async def shoe_record(self, table_id: str, shoe_no: int | None = None) -> dict[str, Any] | None:
        with self._translated():
            redis = self._redis()
            if shoe_no is None:
                top = await redis.zrevrange(self._table_key(table_id, "revealed"), 0, 0)
                if not top:
                    return None
                number = _texts(top)[0]
            else:
                number = str(shoe_no)
            found = await redis.hget(self._table_key(table_id, "shoes"), number)
        return None if found is None else dict(json.loads(found))

    async def shoe_records(self, table_id: str, limit: int = 20) -> list[dict[str, Any]]:
        if limit <= 0:
            return []
        with self._translated():
            redis = self._redis()
            numbers = _texts(
                await redis.zrevrange(self._table_key(table_id, "shoe_nos"), 0, limit - 1)
            )
            if not numbers:
                return []
            bodies = await redis.hmget(self._table_key(table_id, "shoes"), numbers)
        return [json.loads(body) for body in bodies if body is not None]

    async def secret(self, name: str, nbytes: int = 32) -> bytes:
        if not isinstance(name, str) or not name or not 16 <= nbytes <= 1024:
            raise StoreError("a secret has a name and 16 to 1024 bytes")
        key = self._key("secret:", name)
        with self._translated():
            redis = self._redis()
            await redis.set(key, secrets.token_bytes(nbytes), nx=True)
            value: Any = await redis.get(key)
        if value is None:
            raise StoreUnavailable(f"the secret {name!r} was not kept")
        return bytes(value)

    # -- checking --------------------------------------------------------------------
    async def ledger(self, account: str | None = None, limit: int = 1000) -> list[Entry]:
        if limit <= 0:
            return []
        index = self._key("ledger") if account is None else self._key("acct:", account)
        with self._translated():
            redis = self._redis()
            keys = _texts(await redis.zrevrange(index, 0, limit - 1))
            if not keys:
                return []
            packed = await redis.hmget(self._key("entries"), keys)
        return [_unpack(k, p) for k, p in zip(keys, packed, strict=True) if p is not None]

    async def audit(self) -> dict[str, Any]:
        """Reads the whole ledger in chunks (never one long call); when a write lands
        meanwhile (``commits`` or ``ledger_seq`` moved) it reads again: one moment's."""
        with self._translated():
            redis, moved = self._redis(), (self._key("commits"), self._key("ledger_seq"))
            for _ in range(20):
                before = await redis.mget(moved)
                report = await self._audit_once(redis)
                if await redis.mget(moved) == before:
                    return report
        raise StoreUnavailable("the ledger kept changing while it was audited")

    async def _audit_once(self, redis: aioredis.Redis) -> dict[str, Any]:
        balances: dict[str, int] = {}
        async for account, balance in redis.hscan_iter(self._key("balances"), count=1000):
            balances[_text(account)] = int(balance)
        flows: dict[str, int] = {}
        wagers: list[Entry] = []
        count = 0
        kinds = ("hold", *OUTCOME_KINDS)
        async for key, packed in redis.hscan_iter(self._key("entries"), count=1000):
            entry = _unpack(_text(key), packed)
            count += 1
            flows[entry.src] = flows.get(entry.src, 0) - entry.amount
            flows[entry.dst] = flows.get(entry.dst, 0) + entry.amount
            if entry.kind in kinds:
                wagers.append(entry)
        rounds = sorted({e.round_id for e in wagers if e.kind == "hold" and e.round_id})
        recorded: set[str] = set()
        if rounds:
            async with redis.pipeline(transaction=False) as pipe:
                for round_id in rounds:
                    pipe.hexists(self._key("rounds"), round_id)
                found = await pipe.execute()
            recorded = {r for r, there in zip(rounds, found, strict=True) if there}
        return audit_report(balances, flows, count, hold_problems(wagers, recorded, balances))
