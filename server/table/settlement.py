"""Settlement and records: paying a coup's held wagers, and what is recorded of it.

What it is for: every ledger entry the table makes, and only here: the chips laid and
taken back (``player <-> stake``), the holds when betting closes (``stake -> held``), the
money of a finished coup (GAME_RULES §3: lose ``held -> house``; a push or a win returns
the stake ``held -> player``, a win adds ``house -> player``), the refund of a coup the
operator closes (§8) or voids (``void``), and the round and shoe records the
store keeps (§8: cards, burns, turners, every bet, payout and commission, balances
before and after, the steps done on someone's behalf; §4: the revealed shoe).

The table's settlement sub-machine is here too: :func:`settle` ends a coup once its
cards are all up (pays it, records it, moves the shoe on: §4, §5), :func:`end_shoe`
ends a shoe (its record reveals the seed).

What it must never do: decide when a coup ends (turning does:
:func:`server.table.turning.advance_coup`) or who is paid (the result and the paytable
do), or move money other than through the wallet's idempotent entries, each keyed by
round, player and area so that a replayed step can never pay twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from server.engine.coup import Coup, finish_coup
from server.engine.payouts import BetResult, Paytable, settle_bet, winning_areas
from server.engine.roads import Result
from server.engine.shoe import Shoe
from server.ledger.accounts import HOUSE, Wallet, held_account, player_account, stake_account
from server.vocabulary.events import plain_copy

from . import betting, contributing, seating, shoe_offer
from .state import Contributions, CoupState, Phase

if TYPE_CHECKING:
    from .table import Table

__all__ = [
    "HANDS",
    "end_shoe",
    "hold",
    "move_stake",
    "pay",
    "refund",
    "round_record",
    "settle",
    "shoe_moves_on",
    "shoe_record",
]

HANDS = ("player", "banker")


def move_stake(
    wallet: Wallet, table_id: str, rid: str, counter: int, pid: str, amount: int
) -> None:
    """Move ``amount`` from ``player:<id>`` to the table's stake (``amount`` < 0: back),
    so the stake is always the chips on the felt (§7), keyed by the table's ``counter``.
    The funds were checked before anything changed; a refused transfer raises."""
    player, stake = player_account(pid), stake_account(table_id, pid)
    if amount > 0:
        wallet.transfer(f"{rid}:{pid}:stake:{counter}", player, stake, amount, "stake", rid)
    else:
        wallet.transfer(f"{rid}:{pid}:unstake:{counter}", stake, player, -amount, "unstake", rid)


def hold(wallet: Wallet, table_id: str, rid: str, pid: str, bets: dict[str, int]) -> None:
    """Betting closes (§7): hold each of ``pid``'s areas, ``stake -> held``."""
    table, stake = held_account(table_id), stake_account(table_id, pid)
    for area, amount in sorted(bets.items()):
        wallet.transfer(f"{rid}:{pid}:{area}:hold", stake, table, amount, "hold", rid)


def pay(
    wallet: Wallet, table_id: str, coup: CoupState, result: Coup, paytable: Paytable
) -> list[dict[str, Any]]:
    """Settle every held wager of ``coup`` (§3); return one payout per player and area.
    A wager's settlement depends on its area and stake alone, so each pair is settled
    once a coup (a thousand bettors' wagers are a few dozen pairs: issue 37)."""
    rid = coup.round_id
    table = held_account(table_id)
    payouts: list[dict[str, Any]] = []
    settled: dict[tuple[str, int], BetResult] = {}
    for pid, bets in sorted(coup.held.items()):
        for area, stake in sorted(bets.items()):
            r = settled.get((area, stake))
            if r is None:
                r = settled[area, stake] = settle_bet(area, stake, result, paytable)
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


def refund(wallet: Wallet, table_id: str, coup: CoupState, kind: str = "refund") -> None:
    """Every held wager of ``coup`` goes back whole, ``held -> player``, each hold's one
    outcome: ``refund`` (§8: the operator closed the table mid-coup) or ``void`` (the
    operator voided the round: :mod:`server.table.voiding`)."""
    assert kind in ("refund", "void"), kind
    table = held_account(table_id)
    for pid, bets in sorted(coup.held.items()):
        for area, stake in sorted(bets.items()):
            key = f"{coup.round_id}:{pid}:{area}:{kind}"
            wallet.transfer(key, table, player_account(pid), stake, kind, coup.round_id)


def round_record(
    *,
    table_id: str,
    currency: str | None,
    shoe_no: int,
    coup: CoupState,
    result: Coup,
    payouts: list[dict[str, Any]],
    on_behalf: list[dict[str, Any]],
    balances_after: dict[str, int],
    time: float,
) -> dict[str, Any]:
    """The record of one coup (§8), for the store and the players' recall. ``currency``
    is the table's (``TableOptions.currency``; ``None``: play money): every amount in
    the record is in its minor units, and the record says so itself, so that what is
    read of it later (the operator's totals) needs no table that may have closed."""
    return {
        "kind": "round",
        "round_id": coup.round_id,
        "table": table_id,
        "currency": currency,
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
    contributions: Contributions | None = None,
) -> dict[str, Any]:
    """The revealed shoe (§4): with the seed and the players' contributions (fairness.md
    §9), anyone can recompute every card dealt."""
    return {
        **contributing.record(contributions),
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


def settle(t: Table) -> None:
    """Pay every held wager (§3), record the coup (§8), move the shoe on (§4, §5)."""
    coup = t.coup
    assert coup is not None and t.shoe is not None
    result = finish_coup([s.card for s in coup.player], [s.card for s in coup.banker])
    rid = coup.round_id
    payouts = pay(t.wallet, t.table_id, coup, result, t.options.paytable)
    won = [a.value for a in winning_areas(result, t.options.paytable)]
    summary = {"round_id": rid, "coup_no": coup.coup_no, **result.to_dict(), "won": won}
    t.emit("result", plain_copy(summary))  # the summary stays as last_result
    for pid, bets in coup.held.items():
        if pid in t.players:
            q = t.players[pid]
            q.last_bets = dict(bets)
            t.lay(q, {})
            q.bet_order, q.done = {}, False
    t.touch_all(coup.held)
    # Everyone sees the seated players' and the turners' payouts (§5, §6) and the felt,
    # now empty; each player with a wager their own, with their money (the record keeps
    # every payout: settlement's copy is the event's own).
    public = set(betting.public_wagers(t, coup))
    own: dict[str, list[dict[str, Any]]] = {}  # each player's payouts, in the order paid
    nets: dict[str, int] = {}  # and their returned - stake over them
    for x in payouts:
        own.setdefault(x["player"], []).append(dict(x))
        nets[x["player"]] = nets.get(x["player"], 0) + x["returned"] - x["stake"]
    t.emit(
        "settled",
        {
            "round_id": rid,
            "payouts": [plain_copy(x) for x in payouts if x["player"] in public],
            **t.felt(),
        },
        {pid: {**t.money(pid), "net": net, "own": own[pid]} for pid, net in nets.items()},
    )
    t.results.append(Result.from_coup(result))
    t._roads = None
    t.shoe_coups.append({"player": list(result.player), "banker": list(result.banker)})
    t.last_result = summary
    t._records.append(
        round_record(
            table_id=t.table_id,
            currency=t.options.currency,
            shoe_no=t.shoe_no,
            coup=coup,
            result=result,
            payouts=payouts,
            on_behalf=[*t.between_on_behalf, *coup.on_behalf],
            balances_after={pid: t.balance(pid) for pid in coup.held},
            time=t.now,
        )
    )
    t.between_on_behalf = []
    t.coup = None
    t.phase = Phase.BETTING  # between coups; flow.advance decides what comes next
    t.round_open = False
    # §5: the shoe holder keeps the shoe on Banker or Tie, passes it on Player.
    if coup.holder is not None and coup.holder == t.holder:
        t.holding = t.holding.dealt()
    if result.outcome == "player" or coup.holder_forfeits:
        if t.holder is not None:
            shoe_offer.lose_shoe(
                t,
                t.players[t.holder],
                "player_won" if result.outcome == "player" else "no_banker_bet",
            )
        elif t.house_holds:
            t.holding = t.holding.offer_again()
    seating.release(t)  # who waited for this coup to get up (before any offer: §5)
    shoe_moves_on(t, coup)


def shoe_moves_on(t: Table, coup: CoupState) -> None:
    """After a coup, settled or voided (§4): the stop card's coup was the last (the shoe
    ends), or the stop card came out in this one (one more coup is dealt)."""
    assert t.shoe is not None
    if coup.last:
        end_shoe(t)
    elif t.shoe.stop_card_out and not t.last_coup_next:
        t.last_coup_next = True
        t.emit("stop_card", {"coups_left": 1})


def end_shoe(t: Table, complete: bool = True) -> None:
    """Reveal the seed (§4): anyone can now recompute every card dealt."""
    shoe = t.shoe
    assert shoe is not None
    record = shoe_record(
        table_id=t.table_id,
        shoe_no=t.shoe_no,
        shoe=shoe,
        cut_by=t.cut_by,
        coups=t.shoe_coups,
        complete=complete,
        contributions=t.contributions,
    )
    t._records.append(record)
    t.emit("shoe_ended", plain_copy({k: v for k, v in record.items() if k != "kind"}))
    t.shoe = None
    t.contributions = None
    t.burned = False
    t.last_coup_next = False
