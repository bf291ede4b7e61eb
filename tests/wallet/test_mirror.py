"""A seamless player's mirror (server/wallet/mirror.py) on a real SQLite store: a balance
asked of the wallet that comes back after another balance was set (a slow, dripped
``/balance`` answer, taken before the calls that landed since) is older than the mirror
and is dropped; the whole-shoe fault test found the mirror 10.00 below the wallet once
such an answer landed last."""

from __future__ import annotations

from pathlib import Path

from server.store import open_store
from server.wallet.mirror import mirror_generation, sync_mirror


async def test_a_balance_asked_before_a_newer_one_was_set_is_dropped(tmp_path: Path) -> None:
    store = await open_store(tmp_path / "chemmy.sqlite3")
    try:
        assert await sync_mirror(store, "alice", 100_000) == 100_000  # (her join)
        since = mirror_generation(store, "alice")  # /balance asked now, answered slowly
        # Meanwhile a credit's own answer (no repeat) sets her balance: 99,150 + 1,000.
        assert await sync_mirror(store, "alice", 100_150) == 150
        # The slow answer, taken before the credit landed, comes last: dropped.
        assert await sync_mirror(store, "alice", 99_150, since=since) == 0
        assert (await store.player_money("alice"))[0] == 100_150
        # Asked after the last balance set, it is the newest: it is taken.
        since = mirror_generation(store, "alice")
        assert await sync_mirror(store, "alice", 100_000, since=since) == -150
        assert (await store.player_money("alice"))[0] == 100_000
        # Another player's balances are theirs alone.
        assert mirror_generation(store, "bob") == 0
        assert await sync_mirror(store, "bob", 500, since=0) == 500
        audit = await store.audit()
        assert audit["sum"] == 0 and audit["ledger_matches"], audit
    finally:
        await store.close()
