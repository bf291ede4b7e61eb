"""bench/lone.py, run for real with a few round trips so that it cannot rot: every span
of the path it names is met, and the figures are plausible."""

from __future__ import annotations

import pytest

from tests.kit import run_bench


@pytest.mark.slow
def test_the_profile_meets_every_span_of_a_bet() -> None:
    done, _ = run_bench("lone", "--requests", "40")
    rows = {
        line.split("|")[1].strip(): float(line.split("|")[3])
        for line in done.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| span")
    }
    for span in (
        "round trip (bot)",
        "bet_checks (one store read, the checks)",
        "bet_allowance (the limits' arithmetic)",
        "dispatch (whole handler)",
        "relay to step (queue, wake)",
        "Table.handle (decide)",
        "to_state (state row)",
        "plan_commit (the commit checked and serialized, on the loop)",
        "check_row (the row's JSON)",
        "_commit (the transaction, store thread)",
        "store.commit (checks, JSON, hop, write)",
        "deliver (events, reply)",
        "actor step (whole)",
    ):
        assert 0 < rows[span] < 1e6, span
    assert rows["actor step (whole)"] < rows["round trip (bot)"]
