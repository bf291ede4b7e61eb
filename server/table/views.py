"""What each viewer may see of a table: the one place that decides it (GAME_RULES §6, §8).

What it is for: every piece of game data that leaves the core for a client is made
here, for one viewer (a player id, or ``None`` for an anonymous watcher):

- :func:`view`: a table snapshot (what ``join`` answers);
- :func:`view_event`: an event, with the viewer's private overlay merged in;
- :func:`summary`: the table's lobby line;
- :func:`own_round`: a round record as one player may recall it (their own money only);
- :func:`public_composition`: the cards left in the shoe *as the players know it*
  (the shoe less every card shown face up), from which the live odds are computed.

What it must never do: put an undealt card, a face-down card (except the squeezing
turner's own), a face-down burned card or a shoe's seed before its reveal into anything
it returns, or one player's money into another player's view; nor a bettor without a
seat's bets, but to themselves, unless they turn (§5, §6: everyone sees the felt's
totals and how many bettors are in, never a list of them). It reads the table and
never changes it: every container it returns is a fresh copy (but a lobby line's road
given to :func:`summary`, the caller's, shared by the lines made from it: read only).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from server.engine.cards import shoe_cards
from server.engine.payouts import Paytable
from server.vocabulary.events import Event
from server.vocabulary.options import Limits, TableOptions

from .betting import public_wagers, turner_names
from .contributing import cutter_of
from .state import CoupState, Phase
from .voiding import round_in_progress

if TYPE_CHECKING:
    from .table import Table

__all__ = ["own_round", "public_composition", "public_options", "summary", "view", "view_event"]


def view_event(event: Event, viewer: str | None) -> dict[str, Any]:
    """What ``viewer`` (a player id, or None for an anonymous spectator) sees of ``event``."""
    data = event.data
    if event.private and viewer is not None and viewer in event.private:
        data = {**data, **event.private[viewer]}
    return {"seq": event.seq, "kind": event.kind, "data": data}


def view(t: Table, viewer: str | None) -> dict[str, Any]:
    """A snapshot for one viewer: only what they may see (§6 hidden information)."""
    coup = t.coup
    coup_view = None if coup is None else _coup_view(t, coup, viewer)
    shoe = t.shoe
    # In REVEAL the shoe is cut, the cut applied once the reveal is over (docs/fairness.md
    # §9): the snapshot says where (None for a timeout cut: the key gives it) and whose.
    k = t.contributions
    pending = k.cut if k is not None else None
    snap: dict[str, Any] = {
        "table": t.table_id,
        "seq": t.seq,
        "phase": t.phase.value,
        "paused": t.paused,
        "deadline": t.deadline,
        "options": public_options(t.options),
        "shoe": None
        if shoe is None
        else {
            "no": t.shoe_no,
            "commitment": shoe.commitment,
            "cards_left": shoe.remaining,
            "cut": shoe.cut if pending is None else pending["position"],
            "burn": {"card": shoe.burn_card, "count": shoe.burned}
            if t.burned and shoe.burn_card
            else None,
            "stop_card_out": shoe.stop_card_out,
            "contributions": _contributions(t),
            "last_coup": t.last_coup_next or (coup is not None and coup.last),
        },
        "coup_no": t.coup_no,
        "holder": t.holder,
        "house_holds": t.house_holds,
        "offer": None
        if t.offer is None
        else {"player": t.offer.current, "deadline": t.offer.deadline},
        "cutter": t.cutter if t.phase is Phase.CUT else None if k is None else cutter_of(k),
        "seats": [
            {
                "seat": q.seat,
                "player": q.id,
                "name": q.name,
                "connected": q.connected,
                "bets": dict(q.bets),
                "done": q.done,
                "holder": q.id == t.holder,
            }
            for q in t.seated()
        ],
        "spectators": len(t.players) - len(t.seated()),
        "felt": t.felt(),
        "coup": coup_view,
        "last_result": copy.deepcopy(t.last_result),
        "roads": t.roads(),
    }
    me = t.players.get(viewer) if viewer is not None else None
    if me is not None:
        snap["you"] = {
            "player": me.id,
            "seat": me.seat,
            **t.money(me.id),
            "bets": dict(me.bets),
            "last_bets": dict(me.last_bets),
            "actions": t.actions(me.id),
        }
    return snap


def _contributions(t: Table) -> list[dict[str, Any]]:
    """The players' contributions to the shoe so far (docs/fairness.md §9): who
    committed to what, and each value once revealed (``null`` before)."""
    k = t.contributions
    if k is None:
        return []
    return [
        {"player": p, "commitment": cm, "value": k.values.get(p)} for p, cm in k.commitments.items()
    ]


def _coup_view(t: Table, coup: CoupState, viewer: str | None) -> dict[str, Any]:
    """The coup being dealt as ``viewer`` sees it: face-down cards are ``None`` except,
    for the squeezing turner, the cards of the stage being squeezed (§6); the wagers of
    the seated players and the turners, and the viewer's own (§5)."""
    squeezer = coup.turners[coup.stage_hand] if coup.style is not None else None

    def cards(hand: str) -> list[dict[str, Any]]:
        out = []
        for i, s in enumerate(coup.hand(hand)):
            shown = s.up or (
                viewer is not None
                and viewer == squeezer
                and hand == coup.stage_hand
                and i in coup.stage_slots()
            )
            out.append({"card": s.card if shown else None, "up": s.up, "by": s.by})
        return out

    return {
        "round_id": coup.round_id,
        "coup_no": coup.coup_no,
        "stage": coup.stage,
        "hand": coup.stage_hand,
        "player": cards("player"),
        "banker": cards("banker"),
        "totals": {h: coup.shown_total(h) for h in ("player", "banker")},
        "turners": dict(coup.turners),
        "names": turner_names(t, coup),
        "style": coup.style,
        "deadline": coup.deadline,
        "bets": {
            p: dict(coup.held[p])
            for p in [*public_wagers(t, coup), viewer]
            if p is not None and p in coup.held
        },
    }


def public_options(o: TableOptions) -> dict[str, Any]:
    """The table's settings as every viewer sees them, with the open bet areas."""
    return {
        "name": o.name,
        "decks": o.decks,
        "commission": o.commission,
        "areas": list(_areas(o.paytable)),
        "seats": o.seats,
        "tier": o.tier,
        "limits": dict(_limits(o.limits)),  # min, max, tie_max, side_max
        "timers": asdict(o.timers),  # every timer, in seconds
        "holder_must_bet_banker": o.holder_must_bet_banker,
        "bettors": o.bettors,
        "currency": o.currency,
        "decimals": o.decimals,
    }


#: How many of the big road's latest columns a lobby line carries (its miniature).
LOBBY_ROAD_COLUMNS = 16
#: How many of the shoe's last results a lobby line carries.
LOBBY_LAST_RESULTS = 10


def lobby_road(t: Table) -> dict[str, Any]:
    """The current shoe's road as a lobby shows it (docs/protocol.md §6 ``tables``):
    its counts, its last results (oldest first: the outcome and the winning total) and
    the big road's latest columns, ``col`` counted from the first of them; the engine's
    roads (§10), cut short, so that every player sees the same road at every table."""
    roads = t.roads()
    stats = roads["stats"]
    cells = roads["big_road"]["cells"]
    first = max(0, max((c["col"] for c in cells), default=-1) + 1 - LOBBY_ROAD_COLUMNS)
    return {
        "coups": stats["coups"],
        "banker": stats["banker"],
        "player": stats["player"],
        "tie": stats["tie"],
        "last": [
            {"outcome": b["outcome"], "total": b["total"]}
            for b in roads["bead_plate"][-LOBBY_LAST_RESULTS:]
        ],
        "big_road": [
            {"col": c["col"] - first, "row": c["row"], "outcome": c["outcome"], "ties": c["ties"]}
            for c in cells
            if c["col"] >= first
        ],
    }


@functools.lru_cache(maxsize=256)
def _limits(limits: Limits) -> dict[str, int]:
    """A table's limits as a dict (``asdict``), made once for each (frozen) value."""
    return asdict(limits)


@functools.lru_cache(maxsize=256)
def _areas(paytable: Paytable) -> tuple[str, ...]:
    """The names of the areas open with ``paytable``, made once for each (frozen) value."""
    return tuple(a.value for a in paytable.areas())


def summary_key(t: Table) -> tuple[Any, ...]:
    """All that a step may change of what :func:`summary` of ``t`` is made from (its
    options never change; its road is made from its shoe and results; the line reads
    these from here): the same key, the same line (issue 36: a cluster's owner made the
    line again after every stored step)."""
    seated = t.seated()
    return (
        t,
        t.phase,
        t.paused,
        len(t.players),
        len(seated),
        t.chips.bettors(seated),
        t.shoe_no,
        t.coup_no,
        round_in_progress(t),
        len(t.results),
    )


def summary(
    t: Table, road: dict[str, Any] | None = None, key: tuple[Any, ...] | None = None
) -> dict[str, Any]:
    """One lobby line: limits, seats taken, phase, and the round in play (``round_id``:
    the round being bet on, debited or dealt, which an operator may void; ``None``
    between rounds); the open bet areas (the table's variant) and its road in miniature
    (:func:`lobby_road`, or ``road``: one made by it since the shoe's last result). What
    a step may change is read from :func:`summary_key` (``key``, when made already): the
    same key, the same line."""
    o = t.options
    _, phase, paused, players, seated, bettors, shoe_no, coup_no, in_round, _ = (
        summary_key(t) if key is None else key
    )
    return {
        "table": t.table_id,
        "name": o.name,
        "phase": phase.value,
        "paused": paused,
        "seats": o.seats,
        "seated": seated,
        "spectators": players - seated,
        "bettors": bettors,  # bettors without a seat in (§5)
        "bettors_max": o.bettors,  # how many the table takes (0: seated players only)
        "tier": o.tier,
        "limits": dict(_limits(o.limits)),
        "commission": o.commission,
        "shoe_no": shoe_no,
        "coup_no": coup_no,
        "round_id": t.round_id if in_round else None,
        "currency": o.currency,
        "decimals": o.decimals,
        "areas": list(_areas(o.paytable)),
        "road": lobby_road(t) if road is None else road,
    }


def own_round(record: dict[str, Any], player: str) -> dict[str, Any]:
    """A round record as ``player`` may recall it (§8): the cards, the result, who turned
    what and every step done on someone's behalf are public; of the money, only their
    own bets, payouts, commission and balance. Never another player's balance."""
    out = {
        k: copy.deepcopy(v)
        for k, v in record.items()
        if k not in ("bets", "balances", "players", "commission")
    }
    out["bets"] = [dict(b) for b in record.get("bets", []) if b.get("player") == player]
    out["commission"] = sum(b.get("commission", 0) for b in out["bets"])
    balance = record.get("balances", {}).get(player)
    out["balance"] = dict(balance) if balance is not None else None
    for mine in ("refused", "wagers"):  # an undealt round's, each player's own
        if mine in record:
            out[mine] = {k: copy.deepcopy(v) for k, v in record[mine].items() if k == player}
    return out


def public_composition(t: Table) -> dict[str, int] | None:
    """The ranks left in the shoe as the players know it: every card of the shoe less the
    cards shown face up (each coup's cards and the burn card; never the face-down burned
    cards, which nobody has seen). ``None`` while a coup is dealt (its cards are not all
    public yet), before a shoe, and for a stacked shoe (its composition is unknown)."""
    shoe = t.shoe
    if shoe is None or shoe.decks == 0 or t.coup is not None:
        return None
    counts: dict[str, int] = {}
    for card in shoe_cards(shoe.decks):
        counts[card[0]] = counts.get(card[0], 0) + 1
    for card in [*shoe.dealt, *([shoe.burn_card] if shoe.burn_card else [])]:
        counts[card[0]] -= 1
    return counts
