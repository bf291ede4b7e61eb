"""A player's recorded rounds (the ``history`` reply), read from their side.

Pure functions of the round records the server returns (docs/protocol.md §11): which
payouts are yours, your net over some rounds, and one round summed up for a table row.
No I/O. Money is integer minor units.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from client_cli.sentences import result_text

__all__ = ["history_net", "my_payouts", "round_summary"]


def my_payouts(record: Mapping[str, Any], me: str) -> list[dict[str, Any]]:
    """Your payouts in one round record (one per area you bet on)."""
    return [p for p in record.get("bets") or [] if p.get("player") == me]


def history_net(rounds: Sequence[Mapping[str, Any]], me: str) -> int:
    """The sum of your results over recorded rounds: returned - stake, per bet."""
    return sum(int(p["returned"]) - int(p["stake"]) for r in rounds for p in my_payouts(r, me))


def round_summary(record: Mapping[str, Any], me: str) -> dict[str, Any]:
    """One recorded round, from your side: what came, what you bet, what you got."""
    pays = my_payouts(record, me)
    stake = sum(int(p["stake"]) for p in pays)
    net = sum(int(p["returned"]) - int(p["stake"]) for p in pays)
    # The server sends each player their own "balance"; a full record has "balances".
    bal = record.get("balance") or (record.get("balances") or {}).get(me) or {}
    return {
        "round_id": record.get("round_id"),
        "table": record.get("table"),
        "shoe_no": record.get("shoe_no"),
        "coup_no": record.get("coup_no"),
        "time": record.get("time"),
        "result": result_text(record),
        "outcome": record.get("outcome"),
        "player": list(record.get("player") or []),
        "banker": list(record.get("banker") or []),
        "bets": {str(p["area"]): int(p["stake"]) for p in pays},
        "stake": stake,
        "net": net,
        "balance_before": bal.get("before"),
        "balance_after": bal.get("after"),
    }
