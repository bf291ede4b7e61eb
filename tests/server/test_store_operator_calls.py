"""The store contract of the operator's calls made once (docs/operator-api.md
"Idempotency"), on every store.

SQLite and a real Redis (the ``redis_url`` fixture): a key is claimed by one
call only, also by one of many claims at once; the record kept answers the next claims
with the first call's fingerprint and, once kept, its answer; an answer for another
fingerprint is not kept; a record is forgotten when its time runs out; bad arguments
are refused and change nothing; SQLite and Redis keep the records across a reopen, and
Redis for every process sharing it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from server.protocol.errors import StoreError
from server.store import RedisStore, SQLiteStore, Store
from server.store.base import (
    OPERATOR_CALL_KEEP_MAX,
)

DAY = 86_400.0
ANSWER = {"status": 200, "body": {"table": {"table": "t9"}}, "headers": []}


async def test_a_key_is_claimed_once_and_keeps_the_first_answer(store: Store) -> None:
    assert await store.claim_operator_call("call:a", "fp-1", DAY) is None
    running = await store.claim_operator_call("call:a", "fp-1", DAY)
    assert running == {"fingerprint": "fp-1", "answer": None}
    # Another request under the same key sees the first one's fingerprint.
    assert await store.claim_operator_call("call:a", "fp-2", DAY) == running
    await store.answer_operator_call("call:a", "fp-1", ANSWER, DAY)
    assert await store.claim_operator_call("call:a", "fp-1", DAY) == {
        "fingerprint": "fp-1",
        "answer": ANSWER,
    }
    # Keys are independent.
    assert await store.claim_operator_call("call:b", "fp-1", DAY) is None


async def test_an_answer_for_another_fingerprint_or_no_claim_is_not_kept(store: Store) -> None:
    assert await store.claim_operator_call("call:a", "fp-1", DAY) is None
    await store.answer_operator_call("call:a", "fp-2", ANSWER, DAY)
    assert await store.claim_operator_call("call:a", "fp-1", DAY) == {
        "fingerprint": "fp-1",
        "answer": None,
    }
    await store.answer_operator_call("call:never", "fp-1", ANSWER, DAY)
    assert await store.claim_operator_call("call:never", "fp-1", DAY) is None


async def test_of_many_claims_at_once_one_gets_the_key(store: Store) -> None:
    claims = await asyncio.gather(
        *(store.claim_operator_call("call:race", f"fp-{n % 2}", DAY) for n in range(24))
    )
    assert claims.count(None) == 1
    first = claims.index(None)
    assert {c["fingerprint"] for c in claims if c is not None} == {f"fp-{first % 2}"}


async def test_a_record_is_forgotten_when_its_time_runs_out(store: Store) -> None:
    assert await store.claim_operator_call("call:short", "fp-1", 0.3) is None
    assert await store.claim_operator_call("call:long", "fp-1", DAY) is None
    await store.answer_operator_call("call:long", "fp-1", ANSWER, 0.3)  # kept 0.3 s from now
    await asyncio.sleep(0.6)
    assert await store.claim_operator_call("call:short", "fp-2", DAY) is None
    assert await store.claim_operator_call("call:long", "fp-2", DAY) is None
    kept = await store.claim_operator_call("call:long", "fp-9", DAY)
    assert kept == {"fingerprint": "fp-2", "answer": None}


@pytest.mark.parametrize(
    ("key", "fingerprint", "keep"),
    [
        ("", "fp", DAY),
        ("k" * 257, "fp", DAY),
        ("call:x", "", DAY),
        (7, "fp", DAY),
        ("call:x", None, DAY),
        ("call:x", "fp", 0),
        ("call:x", "fp", -1.0),
        ("call:x", "fp", OPERATOR_CALL_KEEP_MAX + 1),
        ("call:x", "fp", float("nan")),
        ("call:x", "fp", True),
        ("call:x", "fp", "60"),
    ],
)
async def test_bad_arguments_are_refused_and_change_nothing(
    store: Store, key: Any, fingerprint: Any, keep: Any
) -> None:
    with pytest.raises(StoreError):
        await store.claim_operator_call(key, fingerprint, keep)
    with pytest.raises(StoreError):
        await store.answer_operator_call(key, fingerprint, ANSWER, keep)
    assert await store.claim_operator_call("call:x", "fp", DAY) is None


async def test_an_answer_is_a_json_object(store: Store) -> None:
    assert await store.claim_operator_call("call:x", "fp", DAY) is None
    for bad in ([1, 2], "ok", {"n": float("nan")}, {"b": b"bytes"}):
        with pytest.raises(StoreError):
            await store.answer_operator_call("call:x", "fp", bad, DAY)  # type: ignore[arg-type]
    assert await store.claim_operator_call("call:x", "fp", DAY) == {
        "fingerprint": "fp",
        "answer": None,
    }


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_records_outlive_the_store_object_and_are_shared(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """What one process kept, another (or the same after a restart) finds."""

    def made() -> Store:
        if kind == "sqlite":
            return SQLiteStore(tmp_path / "chemmy.sqlite3")
        return RedisStore(request.getfixturevalue("redis_url"))

    first = made()
    await first.open()
    assert await first.claim_operator_call("call:kept", "fp", DAY) is None
    await first.answer_operator_call("call:kept", "fp", ANSWER, DAY)
    if kind == "redis":  # a second process at the same time
        other = made()
        await other.open()
        try:
            assert (await other.claim_operator_call("call:kept", "fp", DAY) or {}).get(
                "answer"
            ) == ANSWER
        finally:
            await other.close()
    await first.close()
    again = made()
    await again.open()
    try:
        kept = await again.claim_operator_call("call:kept", "fp-other", DAY)
        assert kept == {"fingerprint": "fp", "answer": ANSWER}
    finally:
        await again.close()
