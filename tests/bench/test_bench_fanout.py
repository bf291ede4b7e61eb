"""bench/fanout.py: the hub's fan-out in process beside the bare broadcast and another
revision's hub, over real sockets drained by a child process. A small run: every
variant's row is there, the writes are what each variant makes (the bare broadcast one
a frame, the hub one a step), and the clients read what was written."""

from __future__ import annotations

import asyncio
import re
from types import SimpleNamespace

import pytest

from bench.fanout import main_async


@pytest.mark.slow
def test_a_small_run_has_every_variant_and_its_writes() -> None:
    args = SimpleNamespace(watchers=20, steps=12, rounds=2, kind="burst", gap=0.01, baseline="HEAD")
    lines = asyncio.run(main_async(args))  # type: ignore[arg-type]
    rows = {line.split("|")[1].strip(): line for line in lines if line.startswith("| ")}
    assert set(rows) == {"variant", "bare", "hub@HEAD", "hub"}, lines
    writes = {name: float(row.split("|")[4]) for name, row in rows.items() if name != "variant"}
    assert writes == {"bare": 2.0, "hub@HEAD": 1.0, "hub": 1.0}, lines
    read = float(re.search(r"([\d.]+) MB read", lines[0]).group(1))  # type: ignore[union-attr]
    assert read > 0, lines[0]
