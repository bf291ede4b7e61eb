"""bench/cluster.py's (e), cost per process as the cluster grows, without servers: the
report and its verdicts rendered from results made up here."""

from __future__ import annotations

import argparse

from bench import cluster
from bench.cluster import Growth


def run(code: str, processes: int, per_coup: float, host: float) -> Growth:
    """``processes`` processes of 100 coups each at ``per_coup`` s of CPU per coup; the
    watchers' process at ``host`` s per coup it fans out."""
    return Growth(
        code=code,
        processes=processes,
        seconds=20.0,
        coups=[100.0] * processes,
        cpu=[per_coup * 100] * processes,
        foreign=[1200.0 * (processes - 1)] * processes,
        host=(host * 100, 100.0, 1200.0),
    )


def test_flat_is_met_and_growing_is_missed() -> None:
    runs = [run("now", n, 0.006 * (1 + 0.03 * n), 0.0015) for n in (1, 2, 3, 4)]
    runs += [run("abc1234", n, 0.006 * (1 + 0.15 * n), 0.0015 * n) for n in (1, 2, 3, 4)]
    text = cluster.report(argparse.Namespace(parts="e"), {
        "command": "python -m bench.cluster --parts e", "elapsed": 60.0,
        "redis_version": "7.0.15", "load": "", "growth": runs,
    })  # fmt: skip
    assert text.startswith(cluster.GROWTH_SECTION)
    assert "| now | 4 (+1) |" in text and "| abc1234 | 4 (+1) |" in text
    lines = [line for line in text.splitlines() if line.startswith("- Server CPU per coup")]
    assert "(this revision): **met**" in lines[0] and "watchers' process: **met**" in lines[0]
    assert "(the baseline abc1234): **missed**" in lines[1]
    assert "watchers' process: **missed**, at most 4.00" in lines[1]


def test_the_best_of_the_rounds_is_kept() -> None:
    noisy, calm = run("now", 1, 0.009, 0.002), run("now", 1, 0.006, 0.0015)
    assert min((noisy, calm), key=lambda r: cluster._mean(r.per_coup())) is calm
