"""A table's state as plain data, and back: what the store keeps of a table at each step.

What it is for: :func:`to_state` turns a :class:`~server.table.table.Table` into plain,
JSON- and msgpack-friendly data (secrets included: the shoe's seed and order), and
:func:`from_state` rebuilds an equal table from it, so a restarted or failed-over table
resumes the round where it stopped, with the same cards and held wagers (GAME_RULES §8).

Bettors without a seat (GAME_RULES §5) are kept apart: a table may have a thousand,
and a row written at every step must not grow with them (each bet would rewrite them
all). The row (``to_state(spectators=False)``) holds the table and its seated players;
each bettor with chips on the felt or a wager being debited or dealt has a **part** of
their own (:func:`take_parts`: their player record, their command ids, their wager held
in the coup and their balance before it, their wager being debited), written only in
the steps that change it, in the same commit as the row, and gone with their last chip.
:func:`from_state` takes the row and the parts.

What it must never do: send anything to a client (the state holds every secret), or
change money or decide a rule while rebuilding.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from itertools import filterfalse
from typing import TYPE_CHECKING, Any

from server.engine.roads import Result
from server.engine.shoe import Shoe
from server.ledger.accounts import Wallet
from server.vocabulary.options import TableOptions

from .state import (
    CardSlot,
    Contributions,
    CoupStage,
    CoupState,
    Holding,
    Modes,
    Offer,
    Phase,
    PlayerState,
)

if TYPE_CHECKING:
    from .table import Table

__all__ = ["VERSION", "Copies", "from_state", "take_parts", "to_state"]

VERSION = 2  # 2: stakes, the offer's declined list, progress, draining, sent actions
#: The players without a seat whose command ids the row keeps (besides the seated
#: players'; a bettor's are in their part): the most recent, players gone included.
RECENT_ID_PLAYERS = 256


def to_state(t: Table, *, spectators: bool = True) -> dict[str, Any]:
    """The whole internal state, secrets included: for the store only, never a client.

    Every container is a fresh copy (no deep copy needed: the state is plain data
    two levels deep), but the last coup's result, and in the row the options, the
    shoe, its coups and its results (:class:`Copies`: shared by the rows taken until they
    change), never changed in place (:func:`from_state` copies what it is given).
    ``spectators=False`` is the stored row: it leaves out players without a seat
    (spectators hold no money and no turn, and a restart sends them away anyway;
    bettors without a seat are in their parts, :func:`take_parts`), so a step's cost
    does not grow with the audience; of the command ids, the seated players' and the
    :data:`RECENT_ID_PLAYERS` latest others' (docs/protocol.md §5: a retried id is
    recognised across a restart, whoever sent it).

    It runs after every step, so it copies the cheap way (``__dict__.copy()`` and the
    few containers replaced; :class:`Copies` for the shoe, which changes only when a
    card is drawn, and the shoe's coups and results, which grow once a coup): the
    state copying everything afresh gives (tests/table/test_stored_state.py holds them
    together across played shoes).
    """
    kept, stored = _kept(t, spectators)
    kept_ids = [q.id for q in kept]
    k = t.coup
    coup = None if k is None else _coup_state(k, stored)
    debiting = t.debiting
    players = [_player(q) for q in kept]
    copies = t._copies
    shared = copies.options(t._options_dict), copies.shoe(t.shoe), copies.shoe_coups(t.shoe_coups)
    options, shoe, shoe_coups, results = *shared, copies.results(t.results)
    if spectators:  # (the whole state, for replays and tests: all its own)
        options, shoe, shoe_coups, results = copy.deepcopy((options, shoe, shoe_coups, results))
    return {
        "version": VERSION,
        "table_id": t.table_id,
        "options": options,
        "seq": t.seq,
        "phase": t.phase.value,
        "deadline": t.deadline,
        "players": players,
        "shoe": shoe,
        "shoe_no": t.shoe_no,
        "shoe_coups": shoe_coups,
        "results": results,
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
        if debiting is None
        else {pid: dict(bets) for pid, bets in debiting.items() if stored(pid)},
        "coup_no": t.coup_no,
        "round_open": t.round_open,
        "counter": t.counter,
        "draining": t.draining,
        "paused": t.paused,
        "recent_ids": {p: list(v) for p, v in t.recent_ids.items()} if spectators else _row_ids(t),
        "sent_actions": dict(
            t.sent_actions.stored() if spectators else t.sent_actions.stored_for(kept_ids)
        ),
        # (Not copied: settlement replaces it whole each coup and nothing changes it in
        # place; the store encodes the row at once. A deep copy was a tenth of a step.)
        "last_result": t.last_result,
        "cut_by": dict(t.cut_by) if t.cut_by is not None else None,
        "cut_offered_to": t.cut_offered_to,
        "between_on_behalf": [dict(x) for x in t.between_on_behalf],
        "contributions": None if t.contributions is None else _contributions(t.contributions),
    }


def _kept(t: Table, spectators: bool) -> tuple[list[PlayerState], Callable[[str], bool]]:
    """The players :func:`to_state` keeps, and whose wagers: everyone (the whole table),
    or for the row, the seated players and anyone gone (a bettor is in their part)."""
    if spectators:
        return list(t.players.values()), _everyone
    players = t.players

    def stored(pid: str) -> bool:
        q = players.get(pid)
        return q is None or q.seat is not None

    return t.seated(), stored


def _row_ids(t: Table) -> dict[str, list[str]]:
    """The command ids the row keeps (docs/protocol.md §5: a retried id is known across
    a restart, whoever sent it): the seated players', and of the others (spectators and
    players gone) the :data:`RECENT_ID_PLAYERS` most recent; never a bettor's without a
    seat, which are in their part, so the row does not grow with the bettors.

    Who is a bettor is asked of the table only for the players touched since the parts
    were last taken (``Table._dirty``); anyone else is one if they have a part
    (``Table._parted``), as when the parts were taken: a step's cost does not grow with
    the bettors (issue 37 §3). Each player's list is the table's own, shared by the rows
    until it changes: ``Table._remember`` makes a new one (never changes one in place)."""
    ids, players, dirty, parted = t.recent_ids, t.players, t._dirty, t._parted
    if (
        not parted
        and len(ids) <= RECENT_ID_PLAYERS
        and not any(pid in players and t.is_bettor(players[pid]) for pid in dirty)
    ):  # no bettor's ids, and no more others than kept: all of them, in order (the walk's)
        return dict(ids)
    seated = {q.id for q in t.seated()}
    wanted = sum(1 for pid in seated if pid in ids)
    kept: list[str] = []
    found = others = 0
    untouched = parted - dirty if dirty else parted  # (bettors still: skipped unread)
    for pid in filterfalse(untouched.__contains__, reversed(ids)):
        if pid in seated:
            kept.append(pid)
            found += 1
        elif others < RECENT_ID_PLAYERS:
            q = players.get(pid) if pid in dirty else None
            if q is None or not t.is_bettor(q):
                kept.append(pid)
                others += 1
        if found == wanted and others >= RECENT_ID_PLAYERS:
            break
    return {pid: ids[pid] for pid in reversed(kept)}


def _everyone(pid: str) -> bool:
    return True


def _player(q: PlayerState) -> dict[str, Any]:
    """One player's record, each container a copy."""
    d = q.__dict__.copy()
    d["bets"], d["bet_order"] = q.bets.copy(), q.bet_order.copy()
    d["last_bets"] = q.last_bets.copy()
    if q.wallet_session is not None:
        d["wallet_session"] = dict(q.wallet_session)
    return d


def take_parts(t: Table) -> dict[str, dict[str, Any] | None]:
    """The parts of bettors without a seat to write with this step's row: player -> their
    part (their record, their command ids, and their wager held in the coup with their
    balance before it, or being debited), or None when the part they had goes (no chip
    left in play, seated now, gone). Only the players the steps since the last call
    touched are looked at (``Table._dirty``)."""
    out: dict[str, dict[str, Any] | None] = {}
    dirty, parted = t._dirty, t._parted
    for pid in sorted(dirty):
        q = t.players.get(pid)
        if q is not None and t.is_bettor(q):
            out[pid] = _part(t, q)
            parted.add(pid)
        elif pid in parted:
            out[pid] = None
            parted.discard(pid)
    dirty.clear()
    return out


def _part(t: Table, q: PlayerState) -> dict[str, Any]:
    coup, debiting = t.coup, t.debiting
    held = None if coup is None else coup.held.get(q.id)
    wager = None if debiting is None else debiting.get(q.id)
    return {
        "player": _player(q),
        "ids": list(t.recent_ids.get(q.id, ())),
        "held": None if held is None else dict(held),
        "before": None if coup is None else coup.balances_before.get(q.id),
        "debiting": None if wager is None else dict(wager),
    }


class Copies:
    """What :func:`to_state` keeps of one table between steps, so that a step copies
    only what changed since the last.

    - The shoe's :meth:`~server.engine.shoe.Shoe.to_dict` (its hundreds of cards joined
      into strings), made again only when the shoe's fields are no longer what they
      were: another shoe, a card drawn (``position``, ``dealt`` longer), the burn, the
      cut (a new ``cards`` list), the stop card. Its values are immutable; the dict is
      shared by the rows taken until it changes (then a new dict).
    - The shoe's coups and its results, lists the table only appends to (a coup
      settled or voided) or replaces whole (a new shoe, a restore): each element's
      copy is made once, when it is appended, and the list of copies is **shared** by
      the rows taken until it changes (then a new list: an earlier row's never
      changes), so a step neither copies nor frees them (issue 36), and the store may
      keep their JSON while they are the same list (server/croupier/commit.py). Results
      are frozen; a coup's cards are two lists never changed.
    - The options (they never change): copied once, and shared by the rows likewise.
    (The row's command ids need no copy: :func:`_row_ids`.)
    """

    __slots__ = ("_coups", "_options", "_results", "_shoe", "_shoe_dict")

    def __init__(self) -> None:
        self._shoe: tuple[Any, ...] | None = None
        self._shoe_dict: dict[str, Any] = {}
        self._coups = _Grown(_coup_cards)
        self._results = _Grown(Result.to_dict)
        self._options: tuple[dict[str, Any] | None, dict[str, Any]] = (None, {})

    def options(self, options: dict[str, Any]) -> dict[str, Any]:
        if self._options[0] is not options:
            copied = {k: dict(options[k]) for k in ("limits", "timers")}
            self._options = (options, {**options, **copied})
        return self._options[1]

    def shoe(self, shoe: Shoe | None) -> dict[str, Any] | None:
        if shoe is None:
            return None
        # Every field, and the two lists' lengths (drawing appends to ``dealt``): equal
        # fields, an equal dict. (The lists are compared by identity first, so this is
        # cheap while they are the same lists; nothing changes ``cards`` in place.)
        seen = (*shoe.__dict__.values(), len(shoe.cards), len(shoe.dealt))
        if seen != self._shoe:
            self._shoe, self._shoe_dict = seen, shoe.to_dict()
        return self._shoe_dict

    def shoe_coups(self, coups: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._coups.of(coups)

    def results(self, results: list[Result]) -> list[dict[str, object]]:
        return self._results.of(results)


def _coup_cards(x: dict[str, Any]) -> dict[str, Any]:
    """A coup's cards as the state keeps them: its two lists copied (as the table makes
    it), or any other shape key by key."""
    if type(x) is dict and list(x) == ["player", "banker"]:
        return {"player": list(x["player"]), "banker": list(x["banker"])}
    return {h: list(v) for h, v in x.items()}


class _Grown:
    """Each element of a list that only grows, as ``make`` made it when it came, in a
    list shared until it grows (then a new one); made afresh for another list, or one
    that got shorter or whose last element seen is not where it was."""

    __slots__ = ("_items", "_last", "_make", "_source")

    def __init__(self, make: Callable[[Any], Any]) -> None:
        self._make = make
        self._source: list[Any] | None = None  # kept: its id is never another list's
        self._last: Any = None
        self._items: list[Any] = []

    def of(self, source: list[Any]) -> list[Any]:
        items = self._items
        n = len(items)
        if source is not self._source or len(source) < n or (n and source[n - 1] is not self._last):
            self._source, items, n = source, [], 0
            self._items = items
        if len(source) > n:
            self._items = items = items + list(map(self._make, source[n:]))
            self._last = source[-1]
        return items


def _contributions(k: Contributions) -> dict[str, Any]:
    return {
        "commitments": dict(k.commitments),
        "values": dict(k.values),
        "closed": k.closed,
        "cut": None if k.cut is None else dict(k.cut),
    }


def _coup_state(k: CoupState, stored: Callable[[str], bool]) -> dict[str, Any]:
    """A coup being dealt, as :func:`to_state` keeps it: its fields in their order, each
    container a copy (``copy()``: the declared dicts and lists; this runs every step);
    of the wagers, those of the players ``stored`` keeps (the others are in parts)."""
    d = k.__dict__.copy()
    d["player"] = [x.__dict__.copy() for x in k.player]
    d["banker"] = [x.__dict__.copy() for x in k.banker]
    d["turners"] = k.turners.copy()
    d["held"] = {p: b.copy() for p, b in k.held.items() if stored(p)}
    d["balances_before"] = {p: v for p, v in k.balances_before.items() if stored(p)}
    d["on_behalf"] = [x.copy() for x in k.on_behalf]
    d["stage"] = k.stage.value
    d["progress"] = {card: v.copy() for card, v in k.progress.items()}
    d["bends"] = dict(k.bends)
    return d


def from_state(
    cls: type[Table],
    state: dict[str, Any],
    wallet: Wallet,
    parts: Mapping[str, dict[str, Any]] | None = None,
) -> Table:
    """Rebuild a table from :func:`to_state`, and for a stored row the bettors' parts
    (:func:`take_parts`: every part stored with it). It never touches the wallet:
    placed chips are already in the table's stake accounts, held wagers in its held
    account."""
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
    t.holding = Holding(s["holder"], s["house_holds"], s["holder_coups"], s["offer_needed"])
    t.offer = Offer(**s["offer"]) if s["offer"] is not None else None
    t.modes = Modes(paused=s.get("paused", False), draining=s["draining"])
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
    for pid, part in sorted((parts or {}).items()):
        _add_part(t, pid, copy.deepcopy(part))
    if parts is None:  # a whole state (to_state()): its bettors' parts are all to write
        t._dirty.update(q.id for q in t.players.values() if q.seat is None)
    t.chips.rebuild(t.players.values())  # the felt, from everyone's chips
    return t


def _add_part(t: Table, pid: str, part: dict[str, Any]) -> None:
    """A bettor without a seat's stored part, back in the table (:func:`_part`)."""
    t.players[pid] = PlayerState(**part["player"])
    if part["ids"]:
        t.recent_ids[pid] = part["ids"]
    if part["held"] is not None and t.coup is not None:
        t.coup.held[pid] = part["held"]
        if part["before"] is not None:
            t.coup.balances_before[pid] = part["before"]
    if part["debiting"] is not None and t.debiting is not None:
        t.debiting[pid] = part["debiting"]
    t._parted.add(pid)


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
        s["coup"].setdefault("bends", {})
    s.setdefault("draining", False)
    s.setdefault("sent_actions", {})
