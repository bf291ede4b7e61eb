"""Betting: chips on the layout, DONE, and closing the betting (GAME_RULES §3, §5-§7).

What it is for: the BETTING phase of :class:`~server.table.Table`, as functions over
the table and its players' :class:`~server.table.state.PlayerState`: each betting
command's check and do (``check_<name>`` / ``do_<name>``, each named in
:data:`server.table.dispatch.HANDLERS`; the bounds they check are :mod:`server.table.rules`'s), opening a round,
and closing it: every wager held, four cards dealt face down, the turners named.

Bettors without a seat (§5) bet, regret, clear and repeat as seated players do, on
every area and within the same limits, but never press DONE and never hold the round
open. What everyone sees of their chips is the felt's totals and how many bettors are
in; their own bets travel in their private overlay, and are public only when they
turn the Player cards (§6).

What it must never do: move money itself (the stake and the holds are
:mod:`server.table.settlement`'s entries), or decide what a bet may be (the rules do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from server.engine.payouts import Area
from server.vocabulary import commands as c
from server.vocabulary.errors import TableError, refuse
from server.vocabulary.events import Outcome

from . import rules, seating, settlement
from .actions import watch
from .state import CardSlot, CoupState, Phase, PlayerState

if TYPE_CHECKING:
    from .table import Table


def set_bets(t: Table, p: PlayerState, bets: dict[str, int], change: str) -> None:
    """``p``'s chips become ``bets`` (checked): the stake follows (§7), and a first bet
    starts the timer of a table that waited for one. Seated, the ``bets`` event shows
    them to everyone; a bettor without a seat's show only in their own overlay (§5)."""
    _lay(t, p, bets)
    if p.seat is None and t.deferred is not None:
        t.deferred[p.id] = change  # told with the others of the burst (Table.flush_bettors)
    elif p.seat is None:
        bettors_bets(t, [p], change)
    else:
        t.emit(
            "bets",
            {
                "player": p.id,
                "seat": p.seat,
                "bets": dict(p.bets),
                "change": change,
                **t.felt(),
            },
            {p.id: {"available": t.available(p.id)}},
        )
    if t.deadline is None and p.bets:  # §7: the table waited for a bet; time it now
        t.deadline = t.now + t.options.timers.betting
        t.emit("betting_timer", {"deadline": t.deadline})


def _lay(t: Table, p: PlayerState, bets: dict[str, int]) -> None:
    """``p``'s chips become ``bets``: the order each area reached its amount (§6), the
    felt, and the stake (§7)."""
    for name in set(p.bets) | set(bets):
        if p.bets.get(name, 0) != bets.get(name, 0):
            t.counter += 1
            p.bet_order[name] = t.counter
    t.lay(p, {k: v for k, v in bets.items() if v})
    p.bet_order = {k: v for k, v in p.bet_order.items() if k in p.bets}
    p.done = False
    t.move_stake(p, sum(p.bets.values()) - t.stake(p.id))


def bettors_bets(t: Table, players: list[PlayerState], change: str) -> None:
    """One ``bets`` event for bettors without a seat whose chips changed: the felt for
    everyone (``player``, ``seat`` and ``bets`` null), and in each one's overlay their
    own ``player``, ``bets`` and ``available`` (§5: a bettor's bets are their own)."""
    t.emit(
        "bets",
        {"player": None, "seat": None, "bets": None, "change": change, **t.felt()},
        {
            q.id: {"player": q.id, "bets": dict(q.bets), "available": t.available(q.id)}
            for q in players
        },
    )


def defer(t: Table) -> None:
    """From now until :func:`flush`, a bettor without a seat's chips are not told at once,
    each in a ``bets`` event of their own (which goes to everyone watching): a croupier
    stepping a burst of bettors' commands together tells them all at once (§5; a
    thousand bettors must not cost a thousand events to every watcher)."""
    assert t.deferred is None, "already deferring"
    t.deferred = {}
    t.deferred_watch = watch(t)


def flush(t: Table) -> dict[str, str]:
    """The ``bets`` events of the bettors whose chips changed since :func:`defer` (one
    per kind of change: ``place``, ``remove``...), each bettor's own copy with their
    chips as they are now; who they were."""
    deferred, t.deferred = t.deferred, None
    assert deferred is not None, "not deferring"
    by_change: dict[str, list[PlayerState]] = {}
    for pid, change in deferred.items():
        p = t.players.get(pid)
        if p is not None and p.seat is None:
            by_change.setdefault(change, []).append(p)
    for change, players in by_change.items():
        bettors_bets(t, players, change)
    return deferred


def return_chips(t: Table, players: list[PlayerState], change: str) -> None:
    """Every chip of ``players`` (not held) goes back: their stakes to their balances.
    Seated players' show one ``bets`` event each; bettors' one for them all."""
    bettors = []
    for q in players:
        if q.seat is None:
            _lay(t, q, {})
            bettors.append(q)
        else:
            set_bets(t, q, {}, change)
    if bettors:
        bettors_bets(t, bettors, change)


def _bettor(t: Table, pid: str) -> PlayerState:
    """The player placing chips: seated, or a bettor without a seat (§5) if the table
    takes them and has room for one more (the rules' refusals)."""
    p = t.joined_player(pid)
    if p.seat is None:
        refuse(rules.bettor_refusal(t, p))
    return p


def check_place_bet(t: Table, cmd: c.PlaceBet) -> tuple[PlayerState, dict[str, int]]:
    p = _bettor(t, cmd.player)
    area = t.open_area(cmd.area)
    refuse(rules.bet_refusal(t, p, area, cmd.amount))
    bets = {**p.bets, area: p.bets.get(area, 0) + cmd.amount}
    refuse(rules.limit_refusal(t, p, bets, cmd.allowance))
    return p, bets


def do_place_bet(t: Table, cmd: c.PlaceBet, ctx: tuple[PlayerState, dict[str, int]]) -> Outcome:
    set_bets(t, *ctx, "place")
    _keep_session(ctx[0], cmd.wallet_session)
    return Outcome.CHANGED


def _keep_session(p: PlayerState, session: dict[str, str | None] | None) -> None:
    """The session the player's wagers are placed under, for their wallet calls."""
    if session is not None:
        p.wallet_session = dict(session)


def check_remove_bet(t: Table, cmd: c.RemoveBet) -> tuple[PlayerState, dict[str, int]]:
    p = t.joined_player(cmd.player)  # (seated or not: chips of theirs, or no_bet)
    area = t.open_area(cmd.area)
    refuse(rules.remove_refusal(t, p, area, cmd.amount))
    have = p.bets[area]
    return p, {**p.bets, area: have - (have if cmd.amount is None else cmd.amount)}


def do_remove_bet(t: Table, cmd: c.RemoveBet, ctx: tuple[PlayerState, dict[str, int]]) -> Outcome:
    set_bets(t, *ctx, "remove")
    return Outcome.CHANGED


def check_clear_bets(t: Table, cmd: c.ClearBets) -> PlayerState:
    p = t.joined_player(cmd.player)
    refuse(rules.clear_refusal(p))
    return p


def do_clear_bets(t: Table, cmd: c.ClearBets, p: PlayerState) -> Outcome:
    set_bets(t, p, {}, "clear")
    return Outcome.CHANGED


def check_same_bet(t: Table, cmd: c.SameBet) -> tuple[PlayerState, dict[str, int]]:
    p = _bettor(t, cmd.player)
    refuse(rules.same_bet_refusal(t, p))
    bets = rules.same_bets(t, p)
    refuse(rules.limit_refusal(t, p, bets, cmd.allowance))
    return p, bets


def do_same_bet(t: Table, cmd: c.SameBet, ctx: tuple[PlayerState, dict[str, int]]) -> Outcome:
    set_bets(t, *ctx, "same")
    _keep_session(ctx[0], cmd.wallet_session)
    return Outcome.CHANGED


def check_done(t: Table, cmd: c.Done) -> PlayerState:
    p = t.seated_player(cmd.player)
    refuse(rules.done_refusal(t, p))
    return p


def do_done(t: Table, cmd: c.Done, p: PlayerState) -> Outcome:
    if p.done:
        return Outcome.ALREADY  # pressed already: nothing changes (answered as a duplicate)
    p.done = True
    t.emit("done", {"player": p.id})
    maybe_close_betting(t)
    return Outcome.CHANGED


def maybe_close_betting(t: Table) -> None:
    """§7: close early once everyone seated pressed DONE, and there is a bet (a
    bettor's without a seat counts; bettors never hold the round open: §5)."""
    if t.chips and all(q.done for q in t.seated()):
        close_betting(t)


def open_betting(t: Table) -> None:
    if not t.round_open:
        t.coup_no += 1
        t.round_open = True
        for q in t.seated():  # (a bettor without a seat never presses DONE)
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
    the croupier's :class:`~server.vocabulary.commands.Debited`); otherwise the coup is
    dealt at once."""
    if not t.wallet.confirms_holds:
        deal_coup(t)
        return
    wagering = _wagering(t)
    t.debiting = {q.id: dict(q.bets) for q in wagering}
    t.touch_all(t.debiting)
    t.deadline = None
    t.emit(
        "debiting",
        {
            "round_id": t.round_id,
            "players": sorted(q.id for q in wagering if q.seat is not None),
            "bettors": t.bettor_count(),
        },
    )


def _wagering(t: Table) -> list[PlayerState]:
    """Everyone with chips on the felt, seated players in seat order first, then the
    bettors without a seat (§5)."""
    seated = [q for q in t.seated() if q.bets]
    bettors = sorted(
        (q for q in t.players.values() if q.bets and q.seat is None), key=lambda q: q.id
    )
    return [*seated, *bettors]


def check_debited(t: Table, cmd: c.Debited) -> dict[str, dict[str, int]]:
    if t.debiting is None or cmd.round_id != t.round_id:
        raise TableError("bad_command", f"round {cmd.round_id} is not being debited")
    return t.debiting


def do_debited(t: Table, cmd: c.Debited, debiting: dict[str, dict[str, int]]) -> Outcome:
    """The wallet answered: a refused player's chips go back and they are told why; the
    coup is dealt to the wagers that stand (the turners follow them, §6), or, if none
    stands, the round ends undealt and the next one opens."""
    t.debiting = None
    t.touch_all(debiting)
    bettors: dict[str, str] = {}
    for pid in sorted(debiting):
        reason = cmd.refused.get(pid)
        p = t.players.get(pid)
        if reason is None or p is None:
            continue
        if p.seat is None:  # a bettor's: told with the others, below (§5)
            bettors[pid] = reason
            continue
        set_bets(t, p, {}, "refused")
        t.emit(
            "debit_refused",
            {"round_id": cmd.round_id, "player": pid},
            {pid: {"reason": reason, "message": c.DEBIT_REFUSALS[reason]}},
        )
    if bettors:  # one event for every refused bettor without a seat, each told why
        return_chips(t, [t.players[pid] for pid in bettors], "refused")
        t.emit(
            "debit_refused",
            {"round_id": cmd.round_id, "player": None},
            {
                pid: {"player": pid, "reason": reason, "message": c.DEBIT_REFUSALS[reason]}
                for pid, reason in bettors.items()
            },
        )
    if t.chips:
        # Who waited to get up while debited, now free (not dealt), but the holder: in the
        # coup, wager or not, until it is settled (§5).
        seating.release(t, keep=t.holder)
        deal_coup(t)
    else:
        seating.release(t)  # who waited to get up while debited: all free (not dealt)
        # Nothing stood: the round is recorded undealt (void, with each refusal: the
        # operator finds it with its debits and rollbacks, docs/wallet.md §3), and the
        # next round opens under a new id.
        t._records.append(undealt_record(t, cmd, debiting))
        t.round_open = False
    return Outcome.CHANGED


#: The ``reason`` of a round no wager of which the wallet took (docs/wallet.md §3).
UNDEALT = "undealt"


def undealt_record(t: Table, cmd: c.Debited, debiting: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The record of a round whose every debit was refused or unanswered: void, no card
    dealt, nothing held (``bets`` empty), the wagers that were put to the wallet and why
    each did not stand (``refused``, player -> a :data:`~server.vocabulary.commands.
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
    for q in _wagering(t):  # seated players and bettors without a seat alike (§5)
        before[q.id] = t.balance(q.id)
        settlement.hold(t.wallet, t.table_id, rid, q.id, q.bets)
        held[q.id] = dict(q.bets)
    t.touch_all(held)
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
    shown = public_wagers(t, t.coup)
    t.emit(
        "betting_closed",
        {
            "round_id": rid,
            "bets": {pid: dict(held[pid]) for pid in shown},
            **t.felt(),
        },
        {pid: {**t.money(pid), "own": dict(b)} for pid, b in held.items()},
    )
    t.emit(
        "dealt",
        {
            "round_id": rid,
            "player": 2,
            "banker": 2,
            "turners": dict(t.coup.turners),
            "names": turner_names(t, t.coup),
        },
    )


def public_wagers(t: Table, coup: CoupState) -> list[str]:
    """Whose wagers in ``coup`` everyone may see: the seated players', and a bettor
    without a seat's only when they turn (§5, §6); the others' are in the felt's totals."""
    seated = {q.id for q in t.seated()}
    turners = set(coup.turners.values())
    return [pid for pid in coup.held if pid in seated or pid in turners]


def turner_names(t: Table, coup: CoupState) -> dict[str, str]:
    """The turners' names (a bettor without a seat who turns is named nowhere else)."""
    names = {}
    for pid in coup.turners.values():
        q = t.players.get(pid) if pid is not None else None
        if q is not None:
            names[q.id] = q.name
    return names


def player_turner(t: Table, held: dict[str, dict[str, int]]) -> str | None:
    """§6: the highest Player bet turns, seated or a bettor without a seat; on equal
    amounts, whoever reached it first (their ``bet_order``: the table's counter)."""
    ranked = sorted(
        (-bets["player"], t.players[pid].bet_order.get("player", 0), pid)
        for pid, bets in held.items()
        if bets.get("player")
    )
    return ranked[0][2] if ranked else None
