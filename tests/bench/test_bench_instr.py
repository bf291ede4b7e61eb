"""bench/instr.py, run for real with a few commands so that it cannot rot: the server
under callgrind counts the commands of both scenarios, against a baseline tree (this
one again), and the same tree costs the same within a few per cent."""

from __future__ import annotations

import shutil

import pytest

from tests.kit import ROOT, run_bench


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("callgrind_control") is None, reason="needs valgrind")
def test_the_instruction_count_of_both_scenarios() -> None:
    for scenario, amount in (("lone", "--commands=6"), ("coup", "--coups=1")):
        done, _ = run_bench(
            "instr", "--scenario", scenario, amount, "--baseline", str(ROOT), timeout=600
        )
        rows = [line.split("|") for line in done.stdout.splitlines() if line.startswith("| ")]
        (base, this) = [row for row in rows if row[1].strip() != "tree"]
        commands, per = int(this[2]), float(this[4].replace(",", ""))
        assert commands == int(base[2]) and commands >= (6 if scenario == "lone" else 20)
        assert 100_000 < per < 100_000_000, scenario  # (about 1.4-1.9 million in 2026-12)
        assert 0.9 < float(this[5]) < 1.1, done.stdout
