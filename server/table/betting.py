"""Betting: chips on the layout, DONE, and closing the betting (GAME_RULES §3, §6, §7).

What it is for: the BETTING phase of :class:`~server.table.Table`, as functions over
the table and its players' :class:`~server.table.state.PlayerState`: each betting
command's check and do (``check_<name>`` / ``do_<name>``, found by the table's
handlers; the bounds they check are :mod:`server.table.rules`'s), opening a round,
and closing it: every wager held, four cards dealt face down, the turners named.

What it must never do: move money itself (the stake and the holds are
:mod:`server.table.settlement`'s entries), or decide what a bet may be (the rules do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from server.engine.payouts import Area

from . import commands as c
from . import rules, seating, settlement
from .errors import TableError, refuse
from .state import CardSlot, CoupState, Phase, PlayerState

if TYPE_CHECKING:
    from .table import Table


def set_bets(t: Table, p: PlayerState, bets: dict[str, int], change: str) -> None:
    """``p``'s chips become ``bets`` (checked): the stake follows (§7), and a first bet
    starts the timer of a table that waited for one."""
    for name in set(p.bets) | set(bets):
        if p.bets.get(name, 0) != bets.get(name, 0):
            t.counter += 1
            p.bet_order[name] = t.counter
    p.bets = {k: v for k, v in bets.items() if v}
    p.bet_order = {k: v for k, v in p.bet_order.items() if k in p.bets}
    p.done = False
    t.move_stake(p, sum(p.bets.values()) - t.stake(p.id))
    t.emit(
        "bets",
        {"player": p.id, "seat": p.seat, "bets": dict(p.bets), "change": change},
        {p.id: {"available": t.available(p.id)}},
    )
    if t.deadline is None and p.bets:  # §7: the table waited for a bet; time it now
        t.deadline = t.now + t.options.timers.betting
        t.emit("betting_timer", {"deadline": t.deadline})


def check_place_bet(t: Table, cmd: c.PlaceBet) -> tuple[PlayerState, dict[str, int]]:
    p = t.seated_player(cmd.player)
    area = t.open_area(cmd.area)
    refuse(rules.bet_refusal(t, p, area, cmd.amount))
    bets = {**p.bets, area: p.bets.get(area, 0) + cmd.amount}
    refuse(rules.limit_refusal(t, p, bets, cmd.allowance))
    return p, bets


def do_place_bet(t: Table, cmd: c.PlaceBet, ctx: tuple[PlayerState, dict[str, int]]) -> bool:
    set_bets(t, *ctx, "place")
    _keep_session(ctx[0], cmd.wallet_session)
    return False


def _keep_session(p: PlayerState, session: dict[str, str | None] | None) -> None:
    """The session the player's wagers are placed under, for their wallet calls."""
    if session is not None:
        p.wallet_session = dict(session)


def check_remove_bet(t: Table, cmd: c.RemoveBet) -> tuple[PlayerState, dict[str, int]]:
    p = t.seated_player(cmd.player)
    area = t.open_area(cmd.area)
    refuse(rules.remove_refusal(t, p, area, cmd.amount))
    have = p.bets[area]
    return p, {**p.bets, area: have - (have if cmd.amount is None else cmd.amount)}


def do_remove_bet(t: Table, cmd: c.RemoveBet, ctx: tuple[PlayerState, dict[str, int]]) -> bool:
    set_bets(t, *ctx, "remove")
    return False


def check_clear_bets(t: Table, cmd: c.ClearBets) -> PlayerState:
    p = t.seated_player(cmd.player)
    refuse(rules.clear_refusal(p))
    return p


def do_clear_bets(t: Table, cmd: c.ClearBets, p: PlayerState) -> bool:
    set_bets(t, p, {}, "clear")
    return False


def check_same_bet(t: Table, cmd: c.SameBet) -> tuple[PlayerState, dict[str, int]]:
    p = t.seated_player(cmd.player)
    refuse(rules.same_bet_refusal(t, p))
    bets = rules.same_bets(t, p)
    refuse(rules.limit_refusal(t, p, bets, cmd.allowance))
    return p, bets


def do_same_bet(t: Table, cmd: c.SameBet, ctx: tuple[PlayerState, dict[str, int]]) -> bool:
    set_bets(t, *ctx, "same")
    _keep_session(ctx[0], cmd.wallet_session)
    return False


def check_done(t: Table, cmd: c.Done) -> PlayerState:
    p = t.seated_player(cmd.player)
    refuse(rules.done_refusal(t, p))
    return p


def do_done(t: Table, cmd: c.Done, p: PlayerState) -> bool:
    if p.done:
        return True  # pressed already: nothing changes (answered as a duplicate)
    p.done = True
    t.emit("done", {"player": p.id})
    maybe_close_betting(t)
    return False


def maybe_close_betting(t: Table) -> None:
    """§7: close early once everyone seated pressed DONE, and there is a bet."""
    seated = t.seated()
    if any(q.bets for q in seated) and all(q.done for q in seated):
        close_betting(t)


def open_betting(t: Table) -> None:
    if not t.round_open:
        t.coup_no += 1
        t.round_open = True
        for q in t.players.values():
            q.done = False
    t.phase = Phase.BETTING
    t.deadline = t.now + t.options.timers.betting
    t.emit(
        "betting_opened",
        {"coup_no": t.coup_no, "round_id": t.round_id, "deadline": t.deadline},
    )


def close_betting(t: Table) -> None:
    """Betting closes (§7). With a wallet that confirms holds (an operator's seamless
    wallet, docs/wallet.md §3), the wagers wait for its debits first (DEBITING, until
    the croupier's :class:`~server.table.commands.Debited`); otherwise the coup is
    dealt at once."""
    if not t.wallet.confirms_holds:
        deal_coup(t)
        return
    t.debiting = {q.id: dict(q.bets) for q in t.seated() if q.bets}
    t.deadline = None
    t.emit("debiting", {"round_id": t.round_id, "players": sorted(t.debiting)})


def check_debited(t: Table, cmd: c.Debited) -> dict[str, dict[str, int]]:
    if t.debiting is None or cmd.round_id != t.round_id:
        raise TableError("bad_command", f"round {cmd.round_id} is not being debited")
    return t.debiting


def do_debited(t: Table, cmd: c.Debited, debiting: dict[str, dict[str, int]]) -> bool:
    """The wallet answered: a refused player's chips go back and they are told why; the
    coup is dealt to the wagers that stand (the turners follow them, §6), or, if none
    stands, the round ends undealt and the next one opens."""
    t.debiting = None
    for pid in sorted(debiting):
        reason = cmd.refused.get(pid)
        p = t.players.get(pid)
        if reason is None or p is None:
            continue
        set_bets(t, p, {}, "refused")
        t.emit(
            "debit_refused",
            {"round_id": cmd.round_id, "player": pid},
            {pid: {"reason": reason, "message": c.DEBIT_REFUSALS[reason]}},
        )
    seating.release(t)  # who waited to get up while debited, now free (not dealt)
    if any(q.bets for q in t.seated()):
        deal_coup(t)
    else:
        # Nothing stood: the round is recorded undealt (void, with each refusal: the
        # operator finds it with its debits and rollbacks, docs/wallet.md §3), and the
        # next round opens under a new id.
        t._records.append(undealt_record(t, cmd, debiting))
        t.round_open = False
    return False


#: The ``reason`` of a round no wager of which the wallet took (docs/wallet.md §3).
UNDEALT = "undealt"


def undealt_record(t: Table, cmd: c.Debited, debiting: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The record of a round whose every debit was refused or unanswered: void, no card
    dealt, nothing held (``bets`` empty), the wagers that were put to the wallet and why
    each did not stand (``refused``, player -> a :data:`~server.table.commands.
    DEBIT_REFUSALS` code). Money moved nothing: each balance is as before."""
    return {
        "kind": "round",
        "round_id": cmd.round_id,
        "table": t.table_id,
        "currency": t.options.currency,
        "shoe_no": t.shoe_no,
        "coup_no": t.coup_no,
        "time": t.now,
        "players": sorted(debiting),
        "void": True,
        "undealt": True,
        "reason": UNDEALT,
        "voided_in": "debiting",
        "refused": {pid: cmd.refused.get(pid) for pid in sorted(debiting)},
        "wagers": {pid: dict(sorted(debiting[pid].items())) for pid in sorted(debiting)},
        "player": [],
        "banker": [],
        "dealt": None,
        "outcome": None,
        "holder": t.holder,
        "turners": {},
        "on_behalf": [],
        "bets": [],
        "commission": 0,
        "balances": {
            pid: {"before": t.balance(pid), "after": t.balance(pid)} for pid in sorted(debiting)
        },
    }


def deal_coup(t: Table) -> None:
    """Hold every wager (§7), deal four cards face down, name the turners (§6)."""
    assert t.shoe is not None
    rid = t.round_id
    held: dict[str, dict[str, int]] = {}
    before: dict[str, int] = {}
    for q in t.seated():
        if not q.bets:
            continue
        before[q.id] = t.balance(q.id)
        settlement.hold(t.wallet, t.table_id, rid, q.id, q.bets)
        held[q.id] = dict(q.bets)
    turner = player_turner(t, held)
    shoe = t.shoe
    cards = [shoe.draw() for _ in range(4)]
    forfeits = (
        t.options.holder_must_bet_banker
        and t.holder is not None
        and not held.get(t.holder, {}).get(Area.BANKER.value)
    )
    t.coup = CoupState(
        round_id=rid,
        coup_no=t.coup_no,
        player=[CardSlot(cards[0]), CardSlot(cards[2])],
        banker=[CardSlot(cards[1]), CardSlot(cards[3])],
        turners={"player": turner, "banker": t.holder},
        held=held,
        balances_before=before,
        holder=t.holder,
        last=t.last_coup_next,
        holder_forfeits=bool(forfeits),
    )
    t.phase = Phase.TURN
    t.deadline = None
    t.round_open = False
    totals: dict[str, int] = {}
    for bets in held.values():
        for area, amount in bets.items():
            totals[area] = totals.get(area, 0) + amount
    t.emit(
        "betting_closed",
        {"round_id": rid, "bets": {pid: dict(b) for pid, b in held.items()}, "totals": totals},
        {pid: t.money(pid) for pid in held},
    )
    t.emit(
        "dealt",
        {"round_id": rid, "player": 2, "banker": 2, "turners": dict(t.coup.turners)},
    )


def player_turner(t: Table, held: dict[str, dict[str, int]]) -> str | None:
    """§6: the highest Player bet turns; on equal amounts, whoever reached it first."""
    ranked = sorted(
        (-held[q.id]["player"], q.bet_order.get("player", 0), q.id)
        for q in t.seated()
        if held.get(q.id, {}).get("player")
    )
    return ranked[0][2] if ranked else None
