"""The floor bench/limits.py sets beside a ``bet``: the bare echo whose every reply
waits for chemmy's store to commit a bet's step (bench/gateway.py ``bet_write`` and
its ``write`` server). What it commits is what a bet stores, and the books still sum to zero,
so the floor is a real write and not a cheaper stand-in."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.gateway import bet_write, start_bare
from server.store.sqlite import SQLiteStore
from tests.kit.client import Client


async def test_each_write_stores_a_bets_step_and_keeps_the_books(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "w.sqlite3")
    await store.open()
    try:
        write = await bet_write(store)
        for _ in range(3):  # a bet, a remove_bet, a bet
            await write()
        assert await store.table_seq("t1") == 3
        assert [e["seq"] for e in await store.events_after("t1", 0) or []] == [1, 2, 3]
        moved = [e for e in await store.ledger("player:bot") if e.kind != "welcome"]
        assert [e.kind for e in moved] == ["stake", "unstake", "stake"]
        assert (await store.balances(["player:bot"]))["player:bot"] == 10**12 - 100
        books = await store.audit()
        assert (books["sum"], books["ledger_matches"]) == (0, True)
    finally:
        await store.close()


async def test_the_write_server_answers_each_message_with_itself() -> None:
    server, url = await asyncio.to_thread(start_bare, "write")
    try:
        client = await Client(url, label="floor", timeout=30).open()
        for n in range(3):
            mid, _ = await client.send_command("bet", table="t1", area="player", amount=n)
            echo = await client.wait_frame(lambda m, mid=mid: m.get("id") == mid, what="echo")
            assert (echo["type"], echo["amount"]) == ("bet", n)
        await client.close()
    finally:
        server.stop()
