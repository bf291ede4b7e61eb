"""bench/instr.py, run for real with a few commands so that it cannot rot: the server
under callgrind counts the commands of both scenarios, the lone bet against a baseline tree (this
one again), and the same tree costs the same within a few per cent; the coup on one process and
in a cluster of two over a real Redis, which costs more a command, not less, unless every client
is on the table's owner: then about what one process costs."""

from __future__ import annotations

import pytest

from tests.kit import ROOT, run_bench


# (The baseline, this tree again, for the lone bet only: each run under callgrind takes
# 15-25 s of a core; one test each, so that the workers share them.)
@pytest.mark.slow
@pytest.mark.parametrize(
    ("scenario", "amount", "against"),
    [
        ("lone", "--commands=6", ("--baseline", str(ROOT))),
        ("coup", "--coups=1", ("--cluster", "2")),
        ("coup", "--coups=1", ("--cluster", "2", "--clients", "owner")),
    ],
    ids=["lone", "coup-cluster", "coup-routed"],
)
def test_the_instruction_count_of_a_scenario(
    scenario: str, amount: str, against: tuple[str, ...]
) -> None:
    done, _ = run_bench("instr", "--scenario", scenario, amount, *against, timeout=280)
    rows = [line.split("|") for line in done.stdout.splitlines() if line.startswith("| ")]
    (first, this) = [row for row in rows if row[1].strip() != "tree"]
    commands, per = int(this[3]), float(this[5].replace(",", ""))
    assert commands >= (6 if scenario == "lone" else 20), done.stdout
    assert 100_000 < per < 100_000_000, scenario  # (about 1.4-2.6 million in 2026-12)
    assert commands == int(first[3]), done.stdout
    if scenario == "lone":
        assert 0.9 < float(this[6]) < 1.1, done.stdout
    elif "owner" not in against:  # (a cluster of two: about 1.25 times one process)
        assert this[2].strip() == "2 (Redis)" and 1.05 < float(this[6]) < 4, done.stdout
        assert "a command in a cluster of 2 / on one process" in done.stdout
    else:  # (every client on the owner: nothing relayed, nobody else hears it; 0.96)
        assert this[2].strip() == "2 (Redis, every client on the owner)", done.stdout
        assert 0.9 < float(this[6]) < 1.15, done.stdout
        assert "cluster of 2, every client on the owner / on one process" in done.stdout
