"""The operator's controls of a running table: voiding a round, pausing, resuming,
closing it; and the croupier's draining.

What it is for (issue 21, GLI-19 §4.16 interrupted games): :class:`~server.table.
commands.VoidRound` ends a round that has not settled, whatever it was doing — betting
(every placed chip goes back ``stake -> player``), debiting (the same; in seamless mode
the croupier's ``closing_calls`` rolls the debits back), a coup dealt (every held wager
goes back ``held -> player`` with the ledger kind ``void``, the hold's one outcome) —
records it ``void: true`` with the reason and the cards, tells the players
(``voided``), and moves the table on as a settled coup would (the next round opens
under a new id; the shoe holder keeps the shoe, whatever they bet). :class:`~server.vocabulary.commands.Pause`
stops new coups (``paused``); :class:`~server.vocabulary.commands.Resume` lets them start
again (``resumed``). :class:`~server.vocabulary.commands.CloseTable` refunds a coup in
progress (GAME_RULES §8: only then) and gives back the chips not yet held;
:class:`~server.vocabulary.commands.SetDraining` refuses new bets while the server shuts
down. The wagers of bettors without a seat (§5) go back with everyone's, each told in
their own copy of ``voided``.

A voided coup's tableau is completed from the shoe (the third cards the rules would
have drawn are drawn, face up in the record), so that the shoe's record still deals
exactly what the seed says and ``chemmy verify`` accepts it; its cards are shown in the
``voided`` event (the coup no longer counts, and the odds count them as public).

What it must never do: void a settled round (``already_settled``), or move money itself:
every entry (the chips back, the held wagers back with the kind ``void``) is
:mod:`server.table.settlement`'s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from server.engine.cards import CardError
from server.engine.coup import resolve_coup
from server.vocabulary import commands as c
from server.vocabulary.errors import TableError
from server.vocabulary.events import Outcome

from . import betting, seating, settlement
from .state import Phase

if TYPE_CHECKING:
    from .state import CoupState
    from .table import Table

__all__ = ["round_in_progress"]


def round_in_progress(t: Table) -> bool:
    """Whether ``t.round_id`` names a round being played: betting on it is open (the
    table in BETTING: players seated, their chips going down), its wagers are being
    debited, or its coup is being dealt. A round opened and then left (everyone stood:
    WAITING; the shoe offered again; a pause with nothing on the felt) is not: nobody
    plays it, and it stays the table's next round (its number is not used up), so there
    is nothing to void (docs/operator-api.md, ``round_id``)."""
    return (
        t.coup is not None or t.debiting is not None or (t.round_open and t.phase is Phase.BETTING)
    )


def _round_key(t: Table, rid: str) -> tuple[int, int] | None:
    """``(shoe_no, coup_no)`` of a round id of this table, or None."""
    prefix = f"{t.table_id}-"
    if not rid.startswith(prefix):
        return None
    shoe, _, coup = rid.removeprefix(prefix).partition("-")
    if not (shoe.isdigit() and coup.isdigit()):
        return None
    return int(shoe), int(coup)


def check_void_round(t: Table, cmd: c.VoidRound) -> None:
    if cmd.round_id == t.round_id and round_in_progress(t):
        return
    if cmd.round_id == t.round_id and t.round_open:
        raise TableError(
            "not_found", f"round {cmd.round_id} is not being played: nobody is betting on it"
        )
    key = _round_key(t, cmd.round_id)
    if key is not None and key <= (t.shoe_no, t.coup_no):
        raise TableError("already_settled", f"round {cmd.round_id} is over: it cannot be voided")
    raise TableError("not_found", f"round {cmd.round_id} is not being played at this table")


def do_void_round(t: Table, cmd: c.VoidRound, ctx: None) -> Outcome:
    rid = t.round_id
    coup, debiting = t.coup, t.debiting
    if coup is not None:
        before = dict(coup.balances_before)
        wagers = {pid: dict(b) for pid, b in coup.held.items()}
        settlement.refund(t.wallet, t.table_id, coup, "void")
    else:
        before = {q.id: t.balance(q.id) for q in t.players.values() if q.bets}
        wagers = {q.id: dict(q.bets) for q in t.players.values() if q.bets}
    public = (
        set(betting.public_wagers(t, coup))
        if coup is not None
        else {q.id for q in t.seated()}  # (bettors' chips: only their own, §5)
    )
    for q in t.players.values():  # placed chips not held (betting, debiting) go back
        if q.bets and (coup is None or q.id not in coup.held):
            t.move_stake(q, -t.stake(q.id))
        if q.bets:
            t.lay(q, {})
        q.bet_order, q.done = {}, False
    t.touch_all(wagers)
    if debiting is not None:
        t.touch_all(debiting)
    cards = None if coup is None else _complete(t, coup)
    voided_in = "turn" if coup is not None else "debiting" if debiting else "betting"
    t._records.append(_record(t, cmd.reason, voided_in, wagers, before, coup, cards))
    t.between_on_behalf = []
    t.debiting = None
    t.coup = None
    t.round_open = False  # the next round opens under a new id
    t.deadline = None
    t.emit(
        "voided",
        {
            "round_id": rid,
            "reason": cmd.reason,
            "refunded": {
                pid: sum(b.values()) for pid, b in sorted(wagers.items()) if pid in public
            },
            "cards": cards,
            **t.felt(),
        },
        {
            pid: {**t.money(pid), "own": sum(wagers[pid].values())}
            for pid in wagers
            if pid in t.players
        },
    )
    if t.phase in (Phase.TURN, Phase.DEBITING):
        t.phase = Phase.BETTING  # between coups; flow.advance decides what comes next
    seating.release(t)  # who waited for the round to get up
    if coup is not None:
        settlement.shoe_moves_on(t, coup)
    return Outcome.CHANGED


def _record(
    t: Table,
    reason: str,
    voided_in: str,
    wagers: dict[str, dict[str, int]],
    before: dict[str, int],
    coup: CoupState | None,
    cards: dict[str, list[str]] | None,
) -> dict[str, Any]:
    """The voided round's record (§8, for the store and the players' recall): each
    wager returned whole, the cards as they lay and the whole tableau, the reason."""
    return {
        "kind": "round",
        "round_id": t.round_id,
        "table": t.table_id,
        "currency": t.options.currency,
        "shoe_no": t.shoe_no,
        "coup_no": t.coup_no,
        "time": t.now,
        "players": sorted(wagers),
        "void": True,
        "reason": reason,
        "voided_in": voided_in,
        "player": [] if cards is None else cards["player"],
        "banker": [] if cards is None else cards["banker"],
        "dealt": None if coup is None else _dealt(coup),
        "outcome": None,
        "holder": t.holder if coup is None else coup.holder,
        "turners": {} if coup is None else dict(coup.turners),
        "on_behalf": [*t.between_on_behalf, *([] if coup is None else coup.on_behalf)],
        "bets": [
            {
                "player": pid,
                "area": area,
                "stake": stake,
                "returned": stake,
                "win": 0,
                "commission": 0,
                "outcome": "void",
            }
            for pid, areas in sorted(wagers.items())
            for area, stake in sorted(areas.items())
        ],
        "commission": 0,
        "balances": {
            pid: {"before": before.get(pid, t.balance(pid)), "after": t.balance(pid)}
            for pid in sorted(wagers)
        },
    }


def _dealt(coup: CoupState) -> dict[str, list[dict[str, Any]]]:
    """The cards dealt when the coup was voided, each face up or not and who turned it."""
    return {
        h: [{"card": s.card, "up": s.up, "by": s.by} for s in coup.hand(h)]
        for h in settlement.HANDS
    }


def _complete(t: Table, coup: CoupState) -> dict[str, list[str]]:
    """The voided coup's whole tableau: its cards in the order they left the shoe, and
    any third card the rules still draw drawn now, so the shoe deals on as its seed
    says (the shoe's record stays verifiable)."""
    assert t.shoe is not None
    p, b = [s.card for s in coup.player], [s.card for s in coup.banker]
    drawn = [p[0], b[0], p[1], b[1], *p[2:], *b[2:]]
    while True:
        try:
            full = resolve_coup(drawn)
            break
        except CardError:
            drawn.append(t.shoe.draw())
    cards = {"player": list(full.player), "banker": list(full.banker)}
    t.shoe_coups.append({"player": list(full.player), "banker": list(full.banker)})
    return cards


def do_close_table(t: Table, cmd: c.CloseTable, ctx: None) -> Outcome:
    """The operator closes the table: a coup in progress is refunded (§8: only then),
    chips not yet held go back, the shoe ends unfinished."""
    coup = t.coup
    if coup is not None:
        settlement.refund(t.wallet, t.table_id, coup)
        t.touch_all(coup.held)
    for q in t.players.values():
        if q.bets and (coup is None or q.id not in coup.held):  # placed, not held
            t.move_stake(q, -t.stake(q.id))
        if q.bets:
            t.lay(q, {})
    debiting, t.debiting = t.debiting, None
    if debiting is not None:
        t.touch_all(debiting)
    t.coup = None
    t.offer = None
    t.deadline = None
    if t.shoe is not None:
        settlement.end_shoe(t, complete=False)
    t.phase = Phase.CLOSED
    t.emit("closed", {"refunded": coup is not None or debiting is not None})
    return Outcome.CHANGED


def do_set_draining(t: Table, cmd: c.SetDraining, ctx: None) -> Outcome:
    """The croupier's: the server is shutting down (new bets refused ``draining``)."""
    if t.draining == cmd.on:
        return Outcome.ALREADY
    t.modes = replace(t.modes, draining=cmd.on)
    t.emit("draining", {"on": cmd.on})
    return Outcome.CHANGED


def do_pause(t: Table, cmd: c.Pause, ctx: None) -> Outcome:
    if t.paused:
        return Outcome.ALREADY
    t.modes = replace(t.modes, paused=True)
    t.emit("paused", {"coup_finishes": t.in_coup or bool(t.chips)})
    return Outcome.CHANGED


def do_resume(t: Table, cmd: c.Resume, ctx: None) -> Outcome:
    if not t.paused:
        return Outcome.ALREADY
    t.modes = replace(t.modes, paused=False)
    t.emit("resumed", {})
    return Outcome.CHANGED
