"""When the store cannot write, nothing happens: not in memory, not on the wire (GAME_RULES
§8: every step is stored before it is sent). The sender hears ``store_failed``; a retry
with the same id then does it once."""

from __future__ import annotations

from typing import Any

import pytest

from server.protocol.errors import StoreError
from server.store.base import CommitResult
from server.table.views import summary
from server.table.views import view as snapshot


def fail_next_commit(monkeypatch: pytest.MonkeyPatch, store: Any) -> list[int]:
    """Make the store's next commit fail (with nothing written), then work again."""
    real = store.commit
    failures: list[int] = []

    async def commit(**kwargs: Any) -> CommitResult:
        if not failures:
            failures.append(1)
            raise StoreError("disk full (simulated)")
        result = await real(**kwargs)
        assert isinstance(result, CommitResult)
        return result

    monkeypatch.setattr(store, "commit", commit)
    return failures


async def test_a_deposit_the_store_refused_changed_nothing_and_a_retry_counts_once(
    net: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await net.start()
    ann = await net.player(server, "ann")
    before = await ann.balance()
    fail_next_commit(monkeypatch, server.store)
    await ann.refused("store_failed", "deposit", msg_id="dep-1", amount=5_000)
    assert await ann.balance() == before
    done = await ann.call("deposit", msg_id="dep-1", amount=5_000)
    again = await ann.call("deposit", msg_id="dep-1", amount=5_000)
    assert (done["duplicate"], again["duplicate"]) == (False, True)
    assert done["balance"] == again["balance"] == before + 5_000
    assert (await server.store.balances(["player:ann"]))["player:ann"] == before + 5_000
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]


async def test_a_table_step_the_store_refused_is_undone_and_never_sent(
    net: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await net.start()
    ann = await net.player(server, "ann")
    watcher = await net.player(server, "cat", "msgpack")
    await watcher.join("t1")
    await ann.join("t1")
    seq_before = server.actors["t1"].table.seq
    line = server.actors["t1"].summary()  # (the lobby line, kept by its key)
    fail_next_commit(monkeypatch, server.store)
    await ann.refused("store_failed", "sit", table="t1")
    table = server.actors["t1"].table
    assert table.seq == seq_before and snapshot(table, None)["seats"] == []  # undone
    assert not watcher.events("t1", "sat")  # and nothing of it went out
    # The undone table is another object: its line is made from it, and is the same.
    assert server.actors["t1"].summary() == summary(table) == line and line["seated"] == 0
    sat = await ann.call("sit", table="t1")  # the store works again: the retry sits
    assert sat["seq"] > seq_before
    assert [s["player"] for s in snapshot(server.actors["t1"].table, None)["seats"]] == ["ann"]
    after = server.actors["t1"].summary()
    assert after["seated"] == 1 and after == summary(server.actors["t1"].table)
