"""A store that keeps failing (a full disk, a lost Redis): the server stays up and says so.

The table's overdue timers retry with a growing delay instead of spinning, one log line
per episode says the store fails (and one that it works again), ``/readyz`` answers 503
while it lasts, a metric counts the failing tables, new hellos get a clear error instead
of a closed connection, and when the store comes back the table carries on by itself.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from server.process.auth import make_token
from server.protocol.errors import StoreError
from tests.kit import SECRET, http_get, scaled, table_def


class Outage:
    """Makes the server's store fail every call to ``commit`` (and ``ensure_player``)
    while ``on``, counting the attempts."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: Any) -> None:
        self.on = False
        self.commits = 0
        real_commit, real_ensure = store.commit, store.ensure_player

        async def commit(**kwargs: Any) -> Any:
            if self.on:
                self.commits += 1
                raise StoreError("disk full (simulated)")
            return await real_commit(**kwargs)

        async def ensure_player(*args: Any, **kwargs: Any) -> Any:
            if self.on:
                raise StoreError("disk full (simulated)")
            return await real_ensure(*args, **kwargs)

        monkeypatch.setattr(store, "commit", commit)
        monkeypatch.setattr(store, "ensure_player", ensure_player)


@pytest.mark.slow
async def test_a_failing_store_backs_off_says_so_and_recovers(
    net: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    server = await net.start(tables=(table_def("t1", timers={"betting": 0.2}),))
    ann = await net.player(server, "ann")
    await ann.join("t1")
    await ann.call("sit", table="t1")
    await ann.wait_event("shoe_offered", table="t1")
    await ann.call("accept_shoe", table="t1")
    await ann.wait_event("cut_offered", table="t1")
    await ann.call("cut", table="t1", position=100)
    await ann.wait_event("betting_opened", table="t1")
    outage = Outage(monkeypatch, server.store)
    outage.on = True
    caplog.set_level(logging.INFO, logger="chemmy")
    # A bet now cannot be stored; the betting timer (0.2 s) then falls due and cannot
    # be stored either: the table retries it with backoff, not in a tight loop.
    await ann.refused("store_failed", "bet", table="t1", area="banker", amount=100)
    await asyncio.sleep(scaled(1.5))
    assert 1 <= outage.commits <= 12, outage.commits  # 0.1 + 0.2 + 0.4 + 0.8 s ...
    status, _, body = await http_get(server.port, "/readyz")
    assert (status, body) == (503, b"store failing\n")
    _, _, metrics = await http_get(server.port, "/metrics")
    assert b"chemmy_store_failing_tables 1.0" in metrics
    failing_lines = [r for r in caplog.records if "the store refused a step" in r.getMessage()]
    assert len(failing_lines) == 1, [r.getMessage() for r in caplog.records]
    # A new player's hello is answered, not cut off.
    late = await net.connect(server, "json", label="bob")
    reply = await late.rpc("hello", token=make_token(SECRET, "bob"))
    assert reply["type"] == "error" and reply["code"] == "store_unavailable"

    outage.on = False  # the store is back: the table goes on by itself
    await ann.call("bet", table="t1", area="banker", amount=100)
    await ann.wait_event("betting_closed", table="t1", timeout=scaled(15))
    status, _, body = await http_get(server.port, "/readyz")
    assert (status, body) == (200, b"ready\n")
    assert any("works again" in r.getMessage() for r in caplog.records)
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]
