"""A player's recorded rounds, from their side."""

from __future__ import annotations

from client_helpers import ME, OTHER

from client_cli.history import history_net, round_summary


def test_history_summaries() -> None:
    record = {
        "round_id": "t1-1-3",
        "table": "t1",
        "player": ["9h", "Kd"],
        "banker": ["3c", "4c"],
        "player_total": 9,
        "banker_total": 7,
        "outcome": "player",
        "natural": True,
        "bets": [
            {"player": ME, "area": "player", "stake": 1000, "returned": 2000},
            {"player": ME, "area": "tie", "stake": 100, "returned": 0},
        ],
        "balance": {"before": 10000, "after": 10900},
    }
    s = round_summary(record, ME)
    assert s["net"] == 900 and s["stake"] == 1100 and s["bets"] == {"player": 1000, "tie": 100}
    assert s["balance_after"] == 10900 and s["result"].startswith("Player wins 9 to 7")
    assert history_net([record, record], ME) == 1800
    assert history_net([record], OTHER) == 0
