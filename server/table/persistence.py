"""A table's state as plain data, and back: what the store keeps of a table at each step.

What it is for: :func:`to_state` turns a :class:`~server.table.table.Table` into plain,
JSON- and msgpack-friendly data (secrets included: the shoe's seed and order), and
:func:`from_state` rebuilds an equal table from it, so a restarted or failed-over table
resumes the round where it stopped, with the same cards and held wagers (GAME_RULES §8).

What it must never do: send anything to a client (the state holds every secret), or
change money or decide a rule while rebuilding.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from server.engine.roads import Result
from server.engine.shoe import Shoe

from .options import TableOptions
from .state import CardSlot, Contributions, CoupStage, CoupState, Offer, Phase, PlayerState
from .wallet import Wallet

if TYPE_CHECKING:
    from .table import Table

__all__ = ["VERSION", "from_state", "to_state"]

VERSION = 2  # 2: stakes, the offer's declined list, progress, draining, sent actions


def to_state(t: Table, *, spectators: bool = True) -> dict[str, Any]:
    """The whole internal state, secrets included: for the store only, never a client.

    Every container is a fresh copy (no deep copy needed: the state is plain data
    two levels deep), but the last coup's result, which is never changed in place.
    ``spectators=False`` leaves out players without a seat, who hold no money and no
    turn: the croupier stores that, since a restart sends
    every spectator away anyway, and so a step's cost does not grow with the
    audience. The command ids of every player are kept either way (docs/protocol.md
    §5: a retried id is recognised across a restart, whoever sent it).
    """
    coup = None if t.coup is None else _coup_state(t.coup)
    kept = [
        q
        for q in t.players.values()
        if spectators
        or q.seat is not None
        or q.bets
        or (coup is not None and q.id in coup["held"])
        or (t.debiting is not None and q.id in t.debiting)
    ]
    return {
        "version": VERSION,
        "table_id": t.table_id,
        "options": {
            **t._options_dict,
            "limits": dict(t._options_dict["limits"]),
            "timers": dict(t._options_dict["timers"]),
        },
        "seq": t.seq,
        "phase": t.phase.value,
        "deadline": t.deadline,
        "players": [
            {
                **q.__dict__,
                "bets": dict(q.bets),
                "bet_order": dict(q.bet_order),
                "last_bets": dict(q.last_bets),
            }
            for q in kept
        ],
        "shoe": t.shoe.to_dict() if t.shoe is not None else None,
        "shoe_no": t.shoe_no,
        "shoe_coups": [{h: list(v) for h, v in x.items()} for x in t.shoe_coups],
        "results": [r.to_dict() for r in t.results],
        "last_coup_next": t.last_coup_next,
        "burned": t.burned,
        "holder": t.holder,
        "house_holds": t.house_holds,
        "holder_coups": t.holder_coups,
        "offer_needed": t.offer_needed,
        "offer": None
        if t.offer is None
        else {**t.offer.__dict__, "declined": list(t.offer.declined)},
        "anchor_seat": t.anchor_seat,
        "coup": coup,
        "debiting": None
        if t.debiting is None
        else {pid: dict(bets) for pid, bets in t.debiting.items()},
        "coup_no": t.coup_no,
        "round_open": t.round_open,
        "counter": t.counter,
        "draining": t.draining,
        "paused": t.paused,
        "recent_ids": {p: list(v) for p, v in t.recent_ids.items()},
        "sent_actions": dict(t.sent_actions.stored()),
        # (Not copied: settlement replaces it whole each coup and nothing changes it in
        # place; the store encodes the row at once. A deep copy was a tenth of a step.)
        "last_result": t.last_result,
        "cut_by": dict(t.cut_by) if t.cut_by is not None else None,
        "cut_offered_to": t.cut_offered_to,
        "between_on_behalf": [dict(x) for x in t.between_on_behalf],
        "contributions": None if t.contributions is None else _contributions(t.contributions),
    }


def _contributions(k: Contributions) -> dict[str, Any]:
    return {
        "commitments": dict(k.commitments),
        "values": dict(k.values),
        "closed": k.closed,
        "cut": None if k.cut is None else dict(k.cut),
    }


def _coup_state(k: CoupState) -> dict[str, Any]:
    """A coup being dealt, as :func:`to_state` keeps it."""
    return {
        **k.__dict__,
        "player": [dict(x.__dict__) for x in k.player],
        "banker": [dict(x.__dict__) for x in k.banker],
        "turners": dict(k.turners),
        "held": {p: dict(b) for p, b in k.held.items()},
        "balances_before": dict(k.balances_before),
        "on_behalf": [dict(x) for x in k.on_behalf],
        "stage": k.stage.value,
        "progress": {card: list(v) for card, v in k.progress.items()},
    }


def from_state(cls: type[Table], state: dict[str, Any], wallet: Wallet) -> Table:
    """Rebuild a table from :func:`to_state`. It never touches the wallet: placed chips
    are already in the table's stake accounts, held wagers in its held account."""
    s = copy.deepcopy(state)
    if s.get("version", 1) == 1:
        _from_version_1(s)
    options = TableOptions.from_dict(TableOptions.definition_of(s["options"]))
    t = cls(s["table_id"], options, wallet)
    t.seq = s["seq"]
    t.phase = Phase(s["phase"])
    t.deadline = s["deadline"]
    t.players = {d["id"]: PlayerState(**d) for d in s["players"]}
    t.shoe = Shoe.from_dict(s["shoe"]) if s["shoe"] is not None else None
    t.shoe_no = s["shoe_no"]
    t.shoe_coups = s["shoe_coups"]
    t.results = [Result(**r) for r in s["results"]]
    t.last_coup_next = s["last_coup_next"]
    t.burned = s["burned"]
    t.holder = s["holder"]
    t.house_holds = s["house_holds"]
    t.holder_coups = s["holder_coups"]
    t.offer_needed = s["offer_needed"]
    t.offer = Offer(**s["offer"]) if s["offer"] is not None else None
    t.draining = s["draining"]
    t.paused = s.get("paused", False)
    t.sent_actions.digests = s["sent_actions"]
    t.anchor_seat = s["anchor_seat"]
    if s["coup"] is not None:
        d = s["coup"]
        d["player"] = [CardSlot(**x) for x in d["player"]]
        d["banker"] = [CardSlot(**x) for x in d["banker"]]
        d["stage"] = CoupStage(d["stage"])
        t.coup = CoupState(**d)
    t.debiting = s.get("debiting")
    t.coup_no = s["coup_no"]
    t.round_open = s["round_open"]
    t.counter = s["counter"]
    t.recent_ids = s["recent_ids"]
    t.last_result = s["last_result"]
    t.cut_by = s.get("cut_by")
    t.cut_offered_to = s.get("cut_offered_to")
    t.between_on_behalf = list(s.get("between_on_behalf", []))
    # Stored before the players' contributions (docs/fairness.md §9): none, closed if cut.
    k = s.get("contributions")
    if k is not None:
        t.contributions = Contributions(**k)
    elif t.shoe is not None and t.shoe.seed is not None:
        t.contributions = Contributions(closed=t.shoe.cut is not None)
    return t


def _from_version_1(s: dict[str, Any]) -> None:
    """A state stored before version 2, brought up to date in place. Placed chips were
    reservations then, never moved in the ledger: they are taken off the layout (no
    stake account holds them); wagers already held stay held."""
    s["version"] = VERSION
    held = set((s.get("coup") or {}).get("held", {}))
    for p in s["players"]:
        if p["id"] not in held:
            p["bets"], p["bet_order"], p["done"] = {}, {}, False
    offer = s.get("offer")
    if offer is not None:
        seat = next((p["seat"] for p in s["players"] if p["id"] == offer["current"]), 0)
        s["offer"] = {
            "current": offer["current"],
            "seat": seat or 0,
            "deadline": offer["deadline"],
            "declined": [],
        }
    if s.get("coup") is not None:
        s["coup"].setdefault("progress", {})
    s.setdefault("draining", False)
    s.setdefault("sent_actions", {})
