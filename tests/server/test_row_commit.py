"""The table row a croupier writes at every step (server/croupier/commit.py): the parts
of the state shared between steps are serialized once a change and spliced into the
row, and the row is the same text as the state serialized afresh, kept by a real SQLite
file and restored to the same table (issue 36)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.row import steps
from bench.table import Run
from server.croupier import commit
from server.store import SQLiteStore
from server.store.records import dump_state
from server.table import Table


async def test_the_row_written_at_every_step_is_the_state_serialized_afresh(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "chemmy.sqlite3")
    await store.open()
    r = Run()
    t = r.table
    config = {"id": t.table_id, **t.options.to_dict()}
    last = t.to_state(spectators=False)
    t.take_parts()
    row: dict[str, Any] = {}
    reused = 0
    try:
        for now, cmd in steps(6):
            if not t.handle(cmd, now).events:
                continue
            w = commit.to_write(t, None, last, {}, [], [], [], [])
            before, row = row, commit.spliced(t, w.state)
            assert dump_state(row) == dump_state(w.state)
            shared = [(row, before, w.state, last, key) for key in commit.SHARED]
            ids = [x["recent_ids"] for x in (row, before, w.state, last) if x]
            if len(ids) == 4:
                shared += [(*ids, pid) for pid in ids[2] if pid in ids[3]]
            for made, made_before, value, value_before, key in shared:
                if before and value[key] is value_before[key]:  # unchanged: JSON not remade
                    assert made[key] is made_before[key]
                    reused += 1
            await commit.write(store, t, config, 0, w)
            last = w.state
        assert reused > 5_000
        (stored,) = await store.load_tables()
        assert stored.state == last and stored.config == config
        back = Table.from_state(stored.state, r.wallet, stored.parts or {})
        assert dump_state(back.to_state(spectators=False)) == dump_state(last)
    finally:
        await store.close()
