"""Every benchmark answers ``--help`` with its usage and runs nothing: ``python -m
bench.table --help`` used to run the whole benchmark and rewrite docs/benchmarks.md.

Each is run as ``python -m`` runs it (``runpy``, as ``__main__``) in this process: a
subprocess each cost a second and a half of imports, 15 s of the quick loop; one bench
is still run in a process of its own, so that ``python -m bench.X`` itself is tested."""

from __future__ import annotations

import hashlib
import runpy
import subprocess
import sys

import pytest

from tests.kit import ROOT, scaled

BENCHES = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if not p.stem.startswith("_"))


def test_every_benchmark_is_listed() -> None:
    assert {"engine", "table", "gateway", "store", "limits", "lone", "evening"} <= set(BENCHES)


@pytest.mark.parametrize("bench", BENCHES)
def test_help_prints_the_usage_and_writes_nothing(
    bench: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = ROOT / "docs" / "benchmarks.md"
    before = hashlib.sha256(docs.read_bytes()).hexdigest()
    monkeypatch.setattr(sys, "argv", [f"bench.{bench}", "--help"])
    # As a fresh process would (another bench may have imported it): run afresh.
    monkeypatch.delitem(sys.modules, f"bench.{bench}", raising=False)
    with pytest.raises(SystemExit) as done:
        runpy.run_module(f"bench.{bench}", run_name="__main__", alter_sys=True)
    out = capsys.readouterr().out
    assert done.value.code in (0, None), out[-2000:]
    assert out.startswith("usage:"), out[:300]
    assert hashlib.sha256(docs.read_bytes()).hexdigest() == before


def test_a_benchmark_answers_help_as_python_m_runs_it() -> None:
    """``python -m bench.evening --help`` in a process of its own (the others in this one)."""
    docs = ROOT / "docs" / "benchmarks.md"
    before = hashlib.sha256(docs.read_bytes()).hexdigest()
    done = subprocess.run(
        [sys.executable, "-m", "bench.evening", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:"), done.stdout[:300]
    assert hashlib.sha256(docs.read_bytes()).hexdigest() == before
