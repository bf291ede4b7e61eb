"""bench/idle.py, run for real at its smallest so that it cannot rot: one process on
SQLite and a cluster of two over a real Redis, idle and with spectators, each measured,
the ratio and Redis's commands reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit import run_bench


@pytest.mark.slow
def test_the_idle_bench_measures_every_setup_in_each_phase(tmp_path: Path) -> None:
    args = ("--tables", "4", "--window", "1", "--warmup", "1", "--rounds", "1")
    args += ("--placement", "players")  # (the cluster's processes take the setting)
    done, found = run_bench("idle", *args, "--spectators", "4", out=tmp_path / "idle.json")
    assert found["placement"] == "players"
    rows = {(r["phase"], r["setup"]): r for r in found["rows"]}
    assert set(rows) == {
        (phase, setup)
        for phase in ("idle", "spectators")
        for setup in ("1 on SQLite", "2 over Redis")
    }
    for (_phase, setup), row in rows.items():
        assert 0 < row["per_process"] < 1, row  # cores: a live process, idle
        if setup == "2 over Redis":
            assert len(row["processes"]) == 2
            assert row["ratio"] > 0 and row["commands"]["evalsha"] > 0, row  # the ticks
        else:
            assert row["ratio"] == 1.0 and row["commands"] == {}
    assert "| idle | 2 over Redis |" in done.stdout
    assert "load average at end" in done.stderr
