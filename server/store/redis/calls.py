"""The Redis store's wallet calls (the outbox: progress, the due index, listings,
totals) and the operator's calls made once.

A call's progress is merged in Python and written by a compare-and-set script; it must
never delete a call (they are the reconciliation trail, docs/wallet.md §4).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from server.protocol.errors import StoreUnavailable
from server.store.calls import (
    check_operator_call,
    merge_wallet_call,
    operator_call_record,
    wallet_call_matches,
    wallet_totals,
)
from server.store.records import check_span
from server.store.redis.core import RedisCore, _text

#: How many wallet calls a listing or a due query reads from an index at a time.
CALL_PAGE: Final = 500


def _call_of(value: bytes | str) -> dict[str, Any]:
    """A stored wallet call (``<seq> <JSON>``) with its ``seq``."""
    seq, _, text = _text(value).partition(" ")
    return {**json.loads(text), "seq": int(seq)}


class RedisCalls(RedisCore):
    """The wallet's and the operator's calls in :class:`~server.store.redis.RedisStore`."""

    # -- the wallet calls' outbox ---------------------------------------------------------
    async def _update_wallet_call(
        self, transaction_id: str, changes: Mapping[str, Any], only_from: str | None
    ) -> dict[str, Any] | None:
        data = self._key("wcall:data")
        with self._translated():
            redis = self._redis()
            for _ in range(100):
                old = await redis.hget(data, transaction_id)
                if old is None:
                    return None
                stored = _call_of(old)
                if only_from is not None and stored["state"] != only_from:
                    return stored  # (the script's compare-and-set makes it atomic)
                call, text = merge_wallet_call(stored, changes)
                due = "1" if call["state"] == "pending" else "0"
                args = [self.prefix, transaction_id, old, f"{stored['seq']} {text}", due]
                done = await self._replicated(
                    self._scripts["update_call"], [*args, repr(call["next_at"])]
                )
                if done == 1:
                    return {**call, "seq": stored["seq"]}
                if done == 0:
                    return None
        raise StoreUnavailable(f"wallet call {transaction_id!r} kept changing while updated")

    async def _calls_in(self, redis: Any, page: list[Any]) -> list[dict[str, Any]]:
        """The stored calls of one page of an index (``(transaction id, score)`` pairs)."""
        bodies = await redis.hmget(self._key("wcall:data"), [t for t, _ in page])
        return [_call_of(body) for body in bodies if body is not None]

    async def _due_wallet_calls(
        self, now: float, limit: int, kinds: tuple[str, ...]
    ) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []

        def order(call: dict[str, Any]) -> tuple[float, int]:
            return call["next_at"], call["seq"]

        with self._translated():
            redis = self._redis()
            offset = 0
            while True:
                page: list[Any] = await redis.zrangebyscore(
                    self._key("wcall:due"),
                    "-inf",
                    repr(now),
                    start=offset,
                    num=CALL_PAGE,
                    withscores=True,
                )
                if not page:
                    break
                for call in await self._calls_in(redis, page):
                    if call["state"] == "pending" and call["kind"] in kinds:
                        found.append(call)
                if len(page) < CALL_PAGE:
                    break
                # Enough, and nothing further can come first (ties of next_at go by seq).
                found.sort(key=order)
                if len(found) >= limit and page[-1][1] > found[limit - 1]["next_at"]:
                    break
                offset += len(page)
        found.sort(key=order)
        return [call for call in found if call["next_at"] <= now][:limit]

    async def wallet_call(self, transaction_id: str) -> dict[str, Any] | None:
        with self._translated():
            found = await self._redis().hget(self._key("wcall:data"), transaction_id)
        return None if found is None else _call_of(found)

    async def _wallet_calls(
        self, filters: Mapping[str, str], limit: int, before_seq: int | None
    ) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        top = "+inf" if before_seq is None else f"({before_seq}"
        # Pages by seq (a cursor, not an offset: calls inserted meanwhile go above it).
        page_size = CALL_PAGE if filters else limit
        with self._translated():
            redis = self._redis()
            while len(found) < limit:
                page: list[Any] = await redis.zrevrangebyscore(
                    self._key("wcall:order"),
                    top,
                    "-inf",
                    start=0,
                    num=page_size,
                    withscores=True,
                )
                if not page:
                    break
                found += [
                    c for c in await self._calls_in(redis, page) if wallet_call_matches(c, filters)
                ]
                if len(page) < page_size:
                    break
                top = f"({int(page[-1][1])}"
        return found[:limit]

    async def wallet_totals(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[dict[str, Any]]:
        check_span(since, until)
        calls: list[dict[str, Any]] = []
        with self._translated():
            async for _, body in self._redis().hscan_iter(self._key("wcall:data"), count=1000):
                calls.append(_call_of(body))
        return wallet_totals(calls, since, until)

    # -- the operator's calls, each made once -------------------------------------------
    async def claim_operator_call(
        self, key: str, fingerprint: str, keep: float
    ) -> dict[str, Any] | None:
        keep = check_operator_call(key, fingerprint, keep)
        record = operator_call_record(fingerprint, None)
        args = [self._key("operator_calls:", key), fingerprint, record, max(1, int(keep * 1000))]
        with self._translated():  # (with min_replicas, kept on the replicas before acting)
            found = await self._replicated(self._scripts["claim_call"], args)
        return None if found is None else dict(json.loads(_text(found)))

    async def answer_operator_call(
        self, key: str, fingerprint: str, answer: Mapping[str, Any], keep: float
    ) -> None:
        keep = check_operator_call(key, fingerprint, keep)
        record = operator_call_record(fingerprint, answer)
        args = [self._key("operator_calls:", key), fingerprint, record, max(1, int(keep * 1000))]
        with self._translated():
            await self._replicated(self._scripts["answer_call"], args)
