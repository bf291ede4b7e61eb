"""bench/wallet.py, run for real with tiny numbers (2 players, 2 coups a latency) so that
it cannot rot: a seamless ``chemmy-server`` and the reference wallet as subprocesses,
every figure present and plausible; and its internal-mode verdicts, rendered from
made-up round trips (a ``--baseline`` run takes minutes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import wallet
from tests.kit import run_bench


@pytest.mark.slow
def test_the_bench_times_every_coups_debits_against_the_wallet(tmp_path: Path) -> None:
    done, results = run_bench(
        "wallet",
        *("--players", "2", "--coups", "2", "--latency", "0.02"),
        out=tmp_path / "wallet.json",
        timeout=240,
    )
    phases = results["phases"]
    # Both wallets (as it was, with Nagle on; as it is), each at 20 ms and at 0 ms.
    assert [(p["nodelay"], p["latency_ms"]) for p in phases] == [
        (False, 20.0),
        (False, 0.0),
        (True, 20.0),
        (True, 0.0),
    ]
    for phase, samples in zip(phases, results["samples"], strict=True):
        assert phase["coups"] == 2 and len(samples) == 2
        assert phase["debits"] == 4 and phase["stood"] == 4  # 2 players, 2 coups, all debited
        assert phase["wallet_calls"] == 2 * wallet.BALANCE_CALLS
        assert len({s["round_id"] for s in samples}) == 2
        for coup in samples:
            assert 0 < coup["to_closed"] <= coup["to_dealt"]  # the deal follows the debits
            if phase["latency_ms"]:  # no debit is answered before the wallet's latency
                assert coup["to_closed"] >= 0.02
        for key in ("wallet", "bare", "closed", "dealt"):
            assert 0 < phase[f"{key}_p50_ms"] <= phase[f"{key}_p99_ms"], (key, phase)
        if phase["latency_ms"]:
            assert phase["wallet_p50_ms"] >= 20 and phase["bare_p50_ms"] >= 20
    text = done.stdout
    assert text.startswith(wallet.SECTION + "\n")
    table = [
        line for line in text.splitlines() if line.startswith(("| as it is |", "| with Nagle on |"))
    ]
    assert len(table) == 4
    assert text.count("betting closed to the cards within the wallet's latency + 50 ms") == 4


def round_trips(bet_now: float, bet_before: float) -> dict[str, object]:
    one = {"p50": 0.1, "p99": 0.2}
    return {
        "count": 3000,
        "ping": one,
        "balance": one,
        "table": {"p50": bet_now, "p99": 2 * bet_now},
        "echo_ping": one,
        "echo_bet": one,
        "base_ping": one,
        "base_balance": one,
        "base_table": {"p50": bet_before, "p99": 2 * bet_before},
    }


def test_the_internal_bet_round_trip_is_judged_against_the_baseline() -> None:
    x = wallet.X
    met = "\n".join(wallet.internal_lines("240d1ce", round_trips(0.55, 0.54)))
    assert f"**met** (1.02{x} at p50)" in met
    assert f"| `bet` / `remove_bet` | 0.550 / 1.100 ms | 0.540 / 1.080 ms | 1.02{x} |" in met
    missed = "\n".join(wallet.internal_lines("240d1ce", round_trips(0.70, 0.54)))
    assert f"**missed** (1.30{x} at p50); beyond it: `bet` / `remove_bet`." in missed
