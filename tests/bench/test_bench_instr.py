"""bench/instr.py, run for real with a few commands so that it cannot rot: the server
under callgrind counts the commands of both scenarios, the lone bet against a baseline tree (this
one again), and the same tree costs the same within a few per cent."""

from __future__ import annotations

import pytest

from tests.kit import ROOT, run_bench


@pytest.mark.slow
def test_the_instruction_count_of_both_scenarios() -> None:
    # (The baseline, this tree again, for the lone bet only: each run under callgrind
    # takes 15-25 s of a core.)
    for scenario, amount, against in (
        ("lone", "--commands=6", ("--baseline", str(ROOT))),
        ("coup", "--coups=1", ()),
    ):
        done, _ = run_bench("instr", "--scenario", scenario, amount, *against, timeout=280)
        rows = [line.split("|") for line in done.stdout.splitlines() if line.startswith("| ")]
        (*base, this) = [row for row in rows if row[1].strip() != "tree"]
        commands, per = int(this[2]), float(this[4].replace(",", ""))
        assert commands >= (6 if scenario == "lone" else 20), done.stdout
        assert 100_000 < per < 100_000_000, scenario  # (about 1.4-1.9 million in 2026-12)
        if against:
            assert commands == int(base[0][2]), done.stdout
            assert 0.9 < float(this[5]) < 1.1, done.stdout
