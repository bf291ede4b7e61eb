"""Every benchmark answers ``--help`` with its usage and runs nothing: ``python -m
bench.table --help`` used to run the whole benchmark and rewrite docs/benchmarks.md."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from tests.kit import ROOT, scaled

BENCHES = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if not p.stem.startswith("_"))


def test_every_benchmark_is_listed() -> None:
    assert {"engine", "table", "gateway", "store", "limits", "lone", "evening"} <= set(BENCHES)


@pytest.mark.parametrize("bench", BENCHES)
def test_help_prints_the_usage_and_writes_nothing(bench: str) -> None:
    docs = ROOT / "docs" / "benchmarks.md"
    before = hashlib.sha256(docs.read_bytes()).hexdigest()
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{bench}", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:"), done.stdout[:300]
    assert hashlib.sha256(docs.read_bytes()).hexdigest() == before
