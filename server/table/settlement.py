"""Settlement and records: paying a coup's held wagers, and what is recorded of it.

What it is for: the money of a finished coup (GAME_RULES §3: lose ``held -> house``;
a push or a win returns the stake ``held -> player``, a win adds ``house -> player``),
the refund of a coup the operator closes (§8), and the round and shoe records the
store keeps (§8: cards, burns, turners, every bet, payout and commission, balances
before and after, the steps done on someone's behalf; §4: the revealed shoe).

What it must never do: decide when a coup ends or who is paid (the table does), or
move money other than through the wallet's idempotent entries, each keyed by round,
player and area so that a replayed step can never pay twice.
"""

from __future__ import annotations

from typing import Any

from server.engine.coup import Coup
from server.engine.payouts import Paytable, settle_bet
from server.engine.shoe import Shoe

from .state import CoupState
from .wallet import HOUSE, Wallet, held_account, player_account

__all__ = ["HANDS", "nets", "pay", "refund", "round_record", "shoe_record"]

HANDS = ("player", "banker")


def pay(
    wallet: Wallet, table_id: str, coup: CoupState, result: Coup, paytable: Paytable
) -> list[dict[str, Any]]:
    """Settle every held wager of ``coup`` (§3); return one payout per player and area."""
    rid = coup.round_id
    table = held_account(table_id)
    payouts: list[dict[str, Any]] = []
    for pid, bets in sorted(coup.held.items()):
        for area, stake in sorted(bets.items()):
            r = settle_bet(area, stake, result, paytable)
            key = f"{rid}:{pid}:{area}"
            if r.returned == 0:
                wallet.transfer(f"{key}:lose", table, HOUSE, stake, "lose", rid)
            else:
                wallet.transfer(f"{key}:return", table, player_account(pid), stake, "return", rid)
                if r.win:
                    wallet.transfer(f"{key}:win", HOUSE, player_account(pid), r.win, "win", rid)
            payouts.append(
                {
                    "player": pid,
                    "area": area,
                    "stake": stake,
                    "returned": r.returned,
                    "win": r.win,
                    "commission": r.commission,
                    "outcome": r.outcome,
                }
            )
    return payouts


def refund(wallet: Wallet, table_id: str, coup: CoupState) -> None:
    """§8: the operator closed the table mid-coup: every held wager goes back."""
    table = held_account(table_id)
    for pid, bets in sorted(coup.held.items()):
        for area, stake in sorted(bets.items()):
            key = f"{coup.round_id}:{pid}:{area}:refund"
            wallet.transfer(key, table, player_account(pid), stake, "refund", coup.round_id)


def nets(payouts: list[dict[str, Any]]) -> dict[str, int]:
    """Each player's ``returned - stake`` over the coup's payouts."""
    out: dict[str, int] = {}
    for pay in payouts:
        out[pay["player"]] = out.get(pay["player"], 0) + pay["returned"] - pay["stake"]
    return out


def round_record(
    *,
    table_id: str,
    shoe_no: int,
    coup: CoupState,
    result: Coup,
    payouts: list[dict[str, Any]],
    on_behalf: list[dict[str, Any]],
    balances_after: dict[str, int],
    time: float,
) -> dict[str, Any]:
    """The record of one coup (§8), for the store and the players' recall."""
    return {
        "kind": "round",
        "round_id": coup.round_id,
        "table": table_id,
        "shoe_no": shoe_no,
        "coup_no": coup.coup_no,
        "time": time,
        "players": sorted(coup.held),
        **result.to_dict(),
        "holder": coup.holder,
        "turners": dict(coup.turners),
        "turned_by": {
            h: [{"card": s.card, "by": s.by, "on_behalf": s.on_behalf} for s in coup.hand(h)]
            for h in HANDS
        },
        "on_behalf": [dict(x) for x in on_behalf],
        "bets": payouts,
        "commission": sum(p["commission"] for p in payouts),
        "balances": {
            pid: {"before": coup.balances_before[pid], "after": balances_after[pid]}
            for pid in sorted(coup.held)
        },
    }


def shoe_record(
    *,
    table_id: str,
    shoe_no: int,
    shoe: Shoe,
    cut_by: dict[str, str | None] | None,
    coups: list[dict[str, Any]],
    complete: bool,
) -> dict[str, Any]:
    """The revealed shoe (§4): with the seed, anyone can recompute every card dealt."""
    return {
        "kind": "shoe",
        "table": table_id,
        "shoe_no": shoe_no,
        "decks": shoe.decks,
        "commitment": shoe.commitment,
        "seed": shoe.seed.hex() if shoe.seed is not None else None,
        "stacked": shoe.seed is None,
        "cut": shoe.cut,
        "cut_by": (cut_by or {}).get("by"),
        "cut_on_behalf": (cut_by or {}).get("on_behalf"),
        "stop_offset": shoe.size - shoe.stop_index if shoe.stop_index is not None else None,
        "burn_card": shoe.burn_card,
        "burned": shoe.burned,
        "coups": [{h: list(v) for h, v in x.items()} for x in coups],
        "complete": complete,
    }
