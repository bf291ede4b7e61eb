"""What one player can make the store keep is bounded (issue 18.6): every play-money
deposit under a fresh id is a ledger entry kept for good, so a player may make
``deposit_burst`` at once and ``deposits_per_day`` a day, and the next is
``rate_limited`` (nothing written). A store that fails (here SQLite's own "database or
disk is full", the file capped with ``max_page_count``) is logged once per episode, not
once per refusal, and once when it works again. Money is audited after each."""

from __future__ import annotations

import logging
from typing import Any

import pytest


async def entries(server: Any) -> int:
    return int((await server.store.audit())["entries"])


async def audited(server: Any) -> None:
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"], audit


async def test_deposits_are_bounded_per_player(net: Any) -> None:
    server = await net.start(deposit_burst=3, deposits_per_day=24)
    ann = await net.player(server, "ann")
    bob = await net.player(server, "bob")
    before = await entries(server)
    for n in range(3):
        await ann.call("deposit", msg_id=f"a{n}", amount=1_000)
    reply = await ann.refused("rate_limited", "deposit", msg_id="a3", amount=1_000)
    assert "deposits a day" in reply["message"]
    assert await entries(server) == before + 3
    # Another player's share is their own.
    await bob.call("deposit", msg_id="b0", amount=1_000)
    assert await entries(server) == before + 4
    assert await ann.balance() == server.config.guest_balance + 3_000
    await audited(server)


async def test_a_full_store_is_logged_once_per_episode(
    net: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = await net.start(deposit_burst=10_000, rate_limit=10_000.0, rate_burst=10_000)
    ann = await net.player(server, "ann")
    await ann.call("deposit", msg_id="first", amount=1_000)
    caplog.set_level(logging.INFO, logger="chemmy")

    def cap(db: Any, pages: int | None) -> None:
        if pages is None:
            (pages,) = db.execute("PRAGMA page_count").fetchone()
        db.execute(f"PRAGMA max_page_count = {pages}")

    await server.store._run(cap, None)  # no page more than it has: it fills up
    for n in range(5_000):  # what the pages it has still hold is kept, then SQLite is full
        reply = await ann.rpc("deposit", msg_id=f"fill{n}", amount=100)
        if reply["type"] == "error":
            break
    else:
        pytest.fail("the capped file never filled up")
    assert reply["code"] in ("store_unavailable", "store_failed"), reply
    before = await entries(server)
    refused = 1
    for n in range(30):
        reply = await ann.rpc("deposit", msg_id=f"full{n}", amount=100_000 + n)
        assert reply["type"] == "error", reply
        assert reply["code"] in ("store_unavailable", "store_failed"), reply
        refused += 1
    failing = [r for r in caplog.records if "the store failed" in r.getMessage()]
    assert len(failing) == 1, [r.getMessage() for r in caplog.records]

    await server.store._run(cap, 1_000_000)  # room again
    await ann.call("deposit", msg_id="after", amount=1_000)
    again = [r for r in caplog.records if "the store works again" in r.getMessage()]
    assert len(again) == 1 and f"({refused} requests" in again[0].getMessage()
    assert await entries(server) == before + 1
    await audited(server)
