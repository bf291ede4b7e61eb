"""bench/bursts.py, run for real at a tiny size (twenty bettors, a short betting timer) so
that it cannot rot: the bets are timed along their way, the bursts in their parts, and the
report says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit import run_bench


@pytest.mark.slow
def test_a_tiny_table_of_bettors_has_its_bets_timed_along_their_way(tmp_path: Path) -> None:
    done, result = run_bench(
        "bursts",
        *("--bettors", "20", "--watchers", "2", "--bets", "3", "--betting", "2"),
        # A 4 s window after the warmup holds the first betting round (2 s) whole: its 60
        # bets, as many as an 8 s window timed (the next round opens later than that).
        *("--warmup", "1", "--window", "4"),
        out=tmp_path / "bursts.json",
    )
    assert result["bettors"] == 20 and result["bet_count"] > 0
    whole = result["bet"]["whole"][0]
    parts = sum(result["bet"][p][0] for p in ("gateway", "queue", "burst"))
    assert whole > 0 and parts > 0
    assert result["calls"]["bet_checks"]["count"] >= result["bet_count"]
    assert "| a bet's time (ms) |" in done.stdout
