"""bench/row.py: the row of a step, measured as the croupier's actor makes it, and the
same steps committed to a real SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench import row
from server.store import open_store


def test_the_row_bench_replays_every_step_and_commits_it(tmp_path: Path) -> None:
    script = row.steps(2)
    spent, n, _ = row.replay(script)
    assert n > 100 and spent > 0
    loop = asyncio.new_event_loop()
    try:
        store = loop.run_until_complete(open_store(tmp_path / "row.db"))
        spent, again, cpu = row.replay(script, store, loop)
        (stored,) = loop.run_until_complete(store.load_tables())
        loop.run_until_complete(store.close())
    finally:
        loop.close()
    assert again == n and cpu > 0 and stored.state is not None
    assert stored.seq > 0 and stored.state["coup_no"] == 2
