"""bench/settle.py, run for real at a tiny size (ten bettors, a short betting timer) so
that it cannot rot: the settlements are found and timed in their parts, the store's
commit among them, the event loop's longest hold in each, and the report says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit import run_bench


@pytest.mark.slow
def test_a_tiny_table_of_bettors_has_its_settlements_timed(tmp_path: Path) -> None:
    done, result = run_bench(
        "settle",
        *("--bettors", "10", "--watchers", "2", "--coups", "1", "--betting", "1.5"),
        out=tmp_path / "settle.json",
    )
    assert result["settlements"] == 1 and result["bettors"] == 10
    whole, parts = result["settle"]["step"][0], result["settle"]
    assert whole > 0 and all(p in parts for p in ("decide", "commit", "deliver"))
    assert result["probes"]["_commit"] > 0 and result["probes"]["publish"] > 0
    assert "| settle |" in done.stdout
    # the event loop's longest hold during each settlement (how late a 1 ms sleep came back;
    # 0 where none came back late: ten bettors may hold the loop less than the probe sees)
    assert len(result["hold"]["settle"]) == 1 and result["hold"]["settle"][0] >= 0
    assert "longest hold during each settlement" in done.stdout
