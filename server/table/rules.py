"""The rules table: which commands each phase allows, and what a player may do now.

What it is for (h11's transition tables, pokerkit's ``can``):

- :data:`ALLOWED`: for each :class:`~server.table.state.Phase`, the commands it takes.
  :meth:`server.table.Table.handle` checks it once, before any handler runs; a command
  the phase does not take is refused with ``wrong_phase`` (``table_closed`` once
  closed). The handlers keep only the contextual checks: who (``not_seated``,
  ``not_holder``, ``not_your_turn``, ``not_offered``, ``not_cutter``), how much
  (limits, funds) and which card.
- The transitions the state triggers after every command, and each phase's entry, are
  :mod:`server.table.flow`'s (``NEXT`` and ``ENTER``).
- :data:`TURN_STEPS`: within TURN, what each moment of a stage takes (the turner is to
  choose a squeeze or TOSS, or is squeezing), checked after "is it your turn", with the
  code :data:`TURN_REFUSALS` names.
- :data:`CROUPIER_ONLY`: commands only the croupier sends (``not_allowed`` from anyone
  else, in any phase); :data:`DRAINING_REFUSES`: new bets, refused with ``draining`` in
  any phase while the server shuts down.
- **Each command's bounds, written once** (pokerkit computes its ``can_*`` bounds with
  its verifier): the ``*_refusal`` functions say why a player may not send a command
  now (a :class:`~server.vocabulary.errors.TableError`, or None), the ``*_bounds`` functions
  how far they may go (the free seats, the cut's range, what one bet may add to an
  area, what may come off it). The table's checks raise what they return; :func:`actions`
  lists a command exactly when they let it through, with those bounds.
- :func:`actions`: every wire command one player may send now, with its bounds: the
  ``you.actions`` of their snapshot and of the private overlay the table adds to a
  step's last event whenever a player's actions change (that diff-and-send is
  :mod:`server.table.actions`). Clients grey out buttons from it instead of copying the
  rules.

What it must never do: change the table. Everything here only reads it; :func:`actions`
must agree with what ``handle`` accepts (tests/table/test_actions.py checks every
listed action and bound against :meth:`~server.table.Table.can`, and every unlisted
command).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from server.engine.payouts import Area
from server.engine.shoe import cut_bounds
from server.protocol.errors import limit_reached
from server.vocabulary import commands as c
from server.vocabulary.commands import WIRE_COMMANDS
from server.vocabulary.errors import TableError

from .state import CoupState, Phase, PlayerState, TurnStep

if TYPE_CHECKING:
    from .table import Table

__all__ = [
    "ALLOWED",
    "ANYTIME",
    "CROUPIER_ONLY",
    "DRAINING_REFUSES",
    "TURN_REFUSALS",
    "TURN_STEPS",
    "WIRE_COMMANDS",
    "actions",
    "bet_bounds",
    "bet_refusal",
    "bets_refusal",
    "bettor_refusal",
    "card_refusal",
    "clear_refusal",
    "commit_refusal",
    "cut_range",
    "cut_refusal",
    "done_refusal",
    "limit_refusal",
    "offer_refusal",
    "pass_refusal",
    "remove_bounds",
    "remove_refusal",
    "reveal_refusal",
    "same_bet_refusal",
    "same_bets",
    "stand_refusal",
    "turn_refusal",
]

Commands = frozenset[type[c.Command]]

#: Taken in every phase but CLOSED: people come and go, time passes, the croupier acts.
ANYTIME: Commands = frozenset(
    {
        c.Join,
        c.Leave,
        c.Sit,
        c.Stand,
        c.Disconnect,
        c.Reconnect,
        c.Tick,
        c.CloseTable,
        c.SetDraining,
        c.Restored,
        c.VoidRound,
        c.Pause,
        c.Resume,
        c.Contribute,  # its own check says when (contributing.py): closed is closed
        c.Chat,
    }
)

#: Sent by the croupier only (StartShoe a fresh shoe, Tick the timers, CloseTable the
#: operator, SetDraining a shutdown, Restored a restart; VoidRound, Pause and Resume the
#: operator through the croupier).
CROUPIER_ONLY: Commands = frozenset(
    {
        c.StartShoe,
        c.Tick,
        c.CloseTable,
        c.SetDraining,
        c.Restored,
        c.Debited,
        c.VoidRound,
        c.Pause,
        c.Resume,
    }
)

#: Refused with ``draining`` in any phase while the server shuts down (SetDraining):
#: new bets. Removing chips, DONE and turning go on, so running coups finish.
DRAINING_REFUSES: Commands = frozenset({c.PlaceBet, c.SameBet})

#: What each phase takes (GAME_RULES §4-§7).
ALLOWED: dict[Phase, Commands] = {
    Phase.SHUFFLE: ANYTIME | {c.StartShoe},
    Phase.WAITING: ANYTIME,
    Phase.SHOE_OFFER: ANYTIME | {c.AcceptShoe, c.DeclineShoe},
    Phase.CUT: ANYTIME | {c.Cut},
    Phase.REVEAL: ANYTIME,
    Phase.BETTING: ANYTIME | {c.PlaceBet, c.RemoveBet, c.ClearBets, c.SameBet, c.Done, c.PassShoe},
    Phase.DEBITING: ANYTIME | {c.Debited},
    Phase.TURN: ANYTIME | {c.Squeeze, c.TurnCard, c.Toss, c.Progress},
    Phase.PAUSED: ANYTIME,
    Phase.CLOSED: frozenset(),
}

#: Within TURN (§6): what the turner may do at each moment of a stage.
TURN_STEPS: dict[TurnStep, Commands] = {
    TurnStep.CHOOSE: frozenset({c.Squeeze, c.Toss}),
    TurnStep.SQUEEZE: frozenset({c.TurnCard, c.Progress, c.Toss}),
}
TURN_REFUSALS: dict[tuple[TurnStep, type[c.Command]], tuple[str, str]] = {
    (TurnStep.CHOOSE, c.TurnCard): ("not_squeezing", "choose a squeeze style (or TOSS) first"),
    (TurnStep.CHOOSE, c.Progress): ("not_squeezing", "choose a squeeze style first"),
    (TurnStep.SQUEEZE, c.Squeeze): ("already_squeezing", "you are already squeezing these cards"),
}


# ------------------------------------------------------------------ who and when (§5, §6)
def stand_refusal(t: Table, p: PlayerState) -> TableError | None:
    """Why seated ``p`` may not stand up (or leave) now: their wager, or the shoe they
    hold, is in the coup being dealt."""
    if t.wager_in_play(p):
        return TableError("wager_in_play", "wait until this coup is settled")
    return None


def offer_refusal(t: Table, pid: str) -> TableError | None:
    """Why ``pid`` may not accept or decline the shoe: it is not offered to them (§5)."""
    if t.offer is None or t.offer.current != pid:
        return TableError("not_offered", "the shoe is not being offered to you")
    return None


def pass_refusal(t: Table, p: PlayerState) -> TableError | None:
    """Why ``p`` may not pass the shoe: not the holder, or no coup dealt yet (§5)."""
    if t.holder != p.id:
        return TableError("not_holder", "only the shoe holder passes the shoe")
    if t.holder_coups < 1:
        return TableError("too_early", "deal at least one coup before passing the shoe")
    return None


def cut_refusal(t: Table, pid: str) -> TableError | None:
    """Why ``pid`` may not cut: it is someone else's cut (§4)."""
    if pid != t.cutter:
        return TableError("not_cutter", "it is not your cut")
    return None


def commit_refusal(t: Table, pid: str) -> TableError | None:
    """Why ``pid`` may not commit a contribution now (``commitment`` aside): not
    seated, the commitments closed (or a stacked shoe), or committed already."""
    p = t.players.get(pid)
    if p is None:
        return TableError("not_joined", "join the table first")
    if p.seat is None:
        return TableError("not_seated", "take a seat to contribute to the shoe")
    k = t.contributions
    if k is None or k.closed or t.shoe is None or t.shoe.cut is not None:
        return TableError("contributions_closed", "contributions to this shoe are closed")
    if pid in k.commitments:
        return TableError("already_contributed", "you have committed to this shoe already")
    return None


def reveal_refusal(t: Table, pid: str) -> TableError | None:
    """Why ``pid`` may not reveal now (the value aside): not at the table, no reveal
    step (too early, or over), no commitment of theirs, or revealed already."""
    if pid not in t.players:
        return TableError("not_joined", "join the table first")
    k = t.contributions
    if k is None or (k.closed and not k.revealing) or t.shoe is None or t.shoe.cut is not None:
        return TableError("contributions_closed", "contributions to this shoe are closed")
    if not k.revealing:
        return TableError("too_early", "reveal your value after the cut")
    if pid not in k.commitments:
        return TableError("no_commitment", "you committed no contribution to this shoe")
    if pid in k.values:
        return TableError("already_revealed", "you have revealed your value already")
    return None


def cut_range(t: Table) -> tuple[int, int]:
    """The first and last position the shoe may be cut at (§4: 10 cards from either end)."""
    assert t.shoe is not None  # a shoe exists in CUT
    return cut_bounds(t.shoe.size)


# ------------------------------------------------------------------ betting (§3, §5, §7)
def bettor_refusal(t: Table, p: PlayerState) -> TableError | None:
    """Why ``p``, without a seat, may not put chips on the felt (§5, "Bettors without a
    seat"): the table takes bets from seated players only (option ``bettors`` 0), or
    already has its ``bettors`` bettors and ``p`` is not one of them. Their chips are
    then within the same limits as a seated player's (:func:`bet_refusal`)."""
    room = t.options.bettors
    if room == 0:
        return TableError("seated_only", "this table takes bets from seated players only")
    if not p.bets and t.bettor_count() >= room:
        return TableError(
            "bettors_full", f"this table has its {room} bettors without a seat: take a seat"
        )
    return None


def bet_bounds(
    t: Table, p: PlayerState, bets: Mapping[str, int] | None = None
) -> tuple[dict[str, tuple[int, int]], int]:
    """What one bet may add to each area open here, ``{area: (low, top)}``, to ``bets``
    (``p``'s chips on the felt unless given; ``{}``: bets made afresh, as SAME BET's):
    at least what the table minimum still needs there (at least 1), at most the area
    maximum less what is there; and ``funds``, the most ``p``'s chips may grow by from
    ``bets``: the balance, as the stake is the chips on the felt (what the new chips add
    to the stake must come from the balance)."""
    minimum = t.options.limits.min
    if bets is None:
        bets = p.bets
    ranges: dict[str, tuple[int, int]] = {}
    for area, area_max in t.area_max.items():
        have = bets.get(area, 0)
        ranges[area] = (minimum - have if have < minimum - 1 else 1, area_max - have)
    return ranges, t.available(p.id) + t.stake(p.id) - sum(bets.values())


def _area_refusal(t: Table, area: str, amount: int, low: int, top: int) -> TableError | None:
    """Why ``amount`` may not go on ``area`` whose bounds are ``(low, top)``."""
    lim = t.options.limits
    if amount < low:
        return TableError("below_min", f"the minimum on {area} is {lim.min}")
    if amount > top:
        return TableError("over_max", f"the maximum on {area} is {lim.max_for(area)}")
    return None


def _funds_refusal(amount: int, funds: int) -> TableError | None:
    if amount > funds:
        return TableError("insufficient_funds", "that bet is more than your balance")
    return None


def bet_refusal(t: Table, p: PlayerState, area: str, amount: int) -> TableError | None:
    """Why ``p`` may not add ``amount`` to ``area`` (open here), by :func:`bet_bounds`."""
    ranges, funds = bet_bounds(t, p)
    return _area_refusal(t, area, amount, *ranges[area]) or _funds_refusal(amount, funds)


def bets_refusal(t: Table, p: PlayerState, bets: dict[str, int]) -> TableError | None:
    """Why ``p``'s chips may not become ``bets`` (on areas open here), by
    :func:`bet_bounds` from no chips at all: every area within its limits and the chips
    added within the balance (§3, §7). None when they may."""
    ranges, funds = bet_bounds(t, p, {})
    for area, amount in bets.items():
        refusal = _area_refusal(t, area, amount, *ranges[area])
        if refusal is not None:
            return refusal
    return _funds_refusal(sum(bets.values()), funds)


def limit_refusal(
    t: Table, p: PlayerState, bets: dict[str, int], allowance: Mapping[str, Any] | None
) -> TableError | None:
    """Why ``p``'s chips here may not become ``bets`` under the player's own limit
    (``allowance``: what their nearest wager or loss limit leaves for new chips, the
    gateway's; the chips already on the felt, here and elsewhere, are counted in it):
    refused ``limit_reached`` when they add more chips than that. Exactly at the limit
    is allowed, and taking chips off always is. (The store holds the same limits again
    in the bet's commit, against bets racing at other tables.)"""
    if allowance is None:
        return None
    added, remaining = sum(bets.values()) - t.stake(p.id), int(allowance["remaining"])
    if added <= max(remaining, 0):
        return None
    kind, amount = str(allowance["kind"]), int(allowance["amount"])
    left = max(0, remaining)
    show = t.options.money
    err = limit_reached(kind, amount, left, show(amount), show(left))
    return TableError(err.code, err.message, err.details)


def remove_bounds(t: Table, p: PlayerState, area: str) -> tuple[int, int]:
    """What may come off ``area``: ``(have, max_partial)``: all of it, or any amount up
    to ``max_partial``, leaving at least the minimum (0: only all of it may go)."""
    have = p.bets.get(area, 0)
    minimum = t.options.limits.min
    return have, have - minimum if have > minimum else 0


def remove_refusal(t: Table, p: PlayerState, area: str, amount: int | None) -> TableError | None:
    """Why ``amount`` (None: all of it) may not come off ``area``, by :func:`remove_bounds`."""
    have, partial = remove_bounds(t, p, area)
    if not have:
        return TableError("no_bet", f"you have no bet on {area}")
    if amount is None or amount == have:
        return None
    if amount > have:
        return TableError("bad_amount", f"you have {have} on {area}")
    if amount > partial:
        return TableError("below_min", f"the minimum on {area} is {t.options.limits.min}")
    return None


def clear_refusal(p: PlayerState) -> TableError | None:
    if not p.bets:
        return TableError("no_bet", "you have no bets to clear")
    return None


def same_bets(t: Table, p: PlayerState) -> dict[str, int]:
    """``p``'s previous round's bets on the areas open here ("SAME BET", §7)."""
    return {a: b for a, b in p.last_bets.items() if a in t.area_max}


def same_bet_refusal(t: Table, p: PlayerState) -> TableError | None:
    """Why ``p`` may not repeat the previous round's bets (§7)."""
    if not p.last_bets:
        return TableError("no_previous_bets", "you have no previous round's bets to repeat")
    return bets_refusal(t, p, same_bets(t, p))


def done_refusal(t: Table, p: PlayerState) -> TableError | None:
    """Why ``p`` may not press DONE now (the holder without a Banker bet on a
    ``holder_must_bet_banker`` table), or None."""
    if t.options.holder_must_bet_banker and p.id == t.holder and not p.bets.get(Area.BANKER.value):
        return TableError("holder_must_bet_banker", "the shoe holder bets on Banker here")
    return None


# ------------------------------------------------------------------ turning (§6)
def turn_refusal(coup: CoupState, pid: str, hand: str) -> TableError | None:
    """Why ``pid`` may not turn ``hand`` now: it is not the stage's hand, or not theirs."""
    if hand != coup.stage_hand:
        return TableError("not_your_turn", f"the {coup.stage_hand} hand is being turned now")
    if coup.turners[hand] != pid:
        return TableError("not_your_turn", f"you do not turn the {hand} cards")
    return None


def card_refusal(coup: CoupState, card: int) -> TableError | None:
    """Why ``card`` may not be turned (or squeezed): not a card of the stage, or face up.
    The cards that may be: ``coup.face_down()``."""
    if card - 1 not in coup.stage_slots():
        allowed = " or ".join(str(i + 1) for i in coup.stage_slots())
        return TableError("bad_card", f"turn card {allowed}")
    if coup.hand(coup.stage_hand)[card - 1].up:
        return TableError("card_already_turned", f"card {card} is already face up")
    return None


def step_refusal(coup: CoupState, kind: type[c.Command]) -> TableError | None:
    """Why the stage's moment does not take ``kind`` (:data:`TURN_STEPS`)."""
    step = coup.turn_step
    if kind not in TURN_STEPS[step]:
        return TableError(*TURN_REFUSALS[(step, kind)])
    return None


# ------------------------------------------------------------------ actions
def actions(t: Table, pid: str) -> dict[str, Any]:
    """The wire commands ``pid`` may send now, each with its bounds (docs/protocol.md,
    "you.actions"): a key present means allowed now. Reads the table, changes nothing.

    A command is listed when the phase takes it (:data:`ALLOWED`, :data:`DRAINING_REFUSES`)
    and its refusal above lets it through. ``bet.areas[a]``: the amount one ``bet`` may
    add to area ``a`` (:func:`bet_bounds`; areas where ``max < min`` are left out).
    ``remove_bet.areas[a]``: ``have`` (remove it all) or any amount up to
    ``max_partial`` (:func:`remove_bounds`).

    It runs after every step for the players the step may have changed;
    tests/table/test_actions.py holds it to what ``handle`` does.
    """
    p = t.players.get(pid)
    if p is None:
        return {}
    out: dict[str, Any] = {}
    for lister, kinds in _LISTERS[t.phase, t.draining]:
        lister(t, p, kinds, out)
    return out


#: Lists some commands' bounds for one player into ``out``, for the ``kinds`` of them the
#: phase takes now (keyed by wire name), each only when its refusal lets it through.
Lister = Callable[["Table", PlayerState, frozenset[type[c.Command]], dict[str, Any]], None]


def _seat_actions(t: Table, p: PlayerState, kinds: Commands, out: dict[str, Any]) -> None:
    """Sit (a spectator, with the free seats), stand and leave."""
    if p.seat is None:
        free = t.free_seats()
        if free and c.Sit in kinds:
            out["sit"] = {"seats": free}
        if c.Leave in kinds and stand_refusal(t, p) is None:  # (a bettor's wager in play)
            out["leave"] = {}
    elif stand_refusal(t, p) is None:
        if c.Stand in kinds:
            out["stand"] = {}
        if c.Leave in kinds:
            out["leave"] = {}


def _bet_actions(t: Table, p: PlayerState, kinds: Commands, out: dict[str, Any]) -> None:
    """The betting commands of a seated player, and of a bettor without a seat (§3, §5,
    §7: the same bets, regret, clear and SAME BET; never DONE, never the shoe)."""
    seated = p.seat is not None
    if not seated and bettor_refusal(t, p) is not None:
        return  # (their chips: only when they have some, and then room is theirs)
    # (Only the holder may pass: for anyone else the refusal is not made at all.)
    if c.PassShoe in kinds and p.id == t.holder and pass_refusal(t, p) is None:
        out["pass_shoe"] = {}
    if c.PlaceBet in kinds:
        ranges, funds = bet_bounds(t, p)
        areas: dict[str, dict[str, int]] = {}
        for area, (low, top) in ranges.items():
            high = top if top < funds else funds
            if high >= low:
                areas[area] = {"min": low, "max": high}
        if areas:
            out["bet"] = {"areas": areas}
    if p.bets:
        if c.RemoveBet in kinds:
            removes = {}
            for area in p.bets:
                have, partial = remove_bounds(t, p, area)
                removes[area] = {"have": have, "max_partial": partial}
            out["remove_bet"] = {"areas": removes}
        if c.ClearBets in kinds and clear_refusal(p) is None:
            out["clear_bets"] = {}
    if c.SameBet in kinds and p.last_bets and same_bet_refusal(t, p) is None:
        out["same_bet"] = {"bets": same_bets(t, p)}
    if seated and c.Done in kinds and done_refusal(t, p) is None:
        out["done"] = {}


def _turn_actions(t: Table, p: PlayerState, kinds: Commands, out: dict[str, Any]) -> None:
    """The turner's commands (§6): for the stage's turner, what its moment takes, with the
    stage's hand (and the face-down cards ``turn`` and ``progress`` may be sent for)."""
    coup = t.coup
    if coup is None:
        return
    hand = coup.stage_hand
    if turn_refusal(coup, p.id, hand) is not None:
        return
    for kind, name in ((c.Squeeze, "squeeze"), (c.TurnCard, "turn"), (c.Progress, "progress")):
        if kind in kinds and step_refusal(coup, kind) is None:
            if kind is c.Squeeze:
                out[name] = {"hand": hand, "styles": list(c.STYLES)}
            else:
                out[name] = {"hand": hand, "cards": coup.face_down()}
    if c.Toss in kinds and step_refusal(coup, c.Toss) is None:
        out["toss"] = {"hand": hand}


def _offer_actions(t: Table, p: PlayerState, kinds: Commands, out: dict[str, Any]) -> None:
    """Accept or decline the shoe offered to a seated player (§5)."""
    if p.seat is not None and offer_refusal(t, p.id) is None:
        if c.AcceptShoe in kinds:
            out["accept_shoe"] = {}
        if c.DeclineShoe in kinds:
            out["decline_shoe"] = {}


def _cut_actions(t: Table, p: PlayerState, kinds: Commands, out: dict[str, Any]) -> None:
    """The cutter's cut, with its range (§4)."""
    if p.seat is not None and t.shoe is not None and cut_refusal(t, p.id) is None:
        low, high = cut_range(t)
        out["cut"] = {"min": low, "max": high}


def _contribute_actions(t: Table, p: PlayerState, kinds: Commands, out: dict[str, Any]) -> None:
    """A contribution to the shoe (docs/fairness.md §9): ``{"step": "commit"}`` while a
    seated player may commit, ``{"step": "reveal"}`` while one who did may reveal."""
    if c.Contribute not in kinds or t.contributions is None:
        return
    shoe = t.shoe
    if shoe is None or shoe.cut is not None:
        return  # both refuse once the shoe is cut (so through all its coups): not made
    if commit_refusal(t, p.id) is None:
        out["contribute"] = {"step": "commit"}
    elif reveal_refusal(t, p.id) is None:
        out["contribute"] = {"step": "reveal"}


#: Which commands each lister lists, in the order ``you.actions`` lists them.
_BOUNDS: tuple[tuple[Commands, Lister], ...] = (
    (frozenset({c.Sit, c.Stand, c.Leave}), _seat_actions),
    (
        frozenset({c.PassShoe, c.PlaceBet, c.RemoveBet, c.ClearBets, c.SameBet, c.Done}),
        _bet_actions,
    ),
    (frozenset({c.Squeeze, c.TurnCard, c.Progress, c.Toss}), _turn_actions),
    (frozenset({c.AcceptShoe, c.DeclineShoe}), _offer_actions),
    (frozenset({c.Cut}), _cut_actions),
    (frozenset({c.Contribute}), _contribute_actions),
)

#: For each phase, draining or not: the listers it runs, with the commands it takes of
#: theirs (made once from ALLOWED and DRAINING_REFUSES).
_LISTERS: dict[tuple[Phase, bool], tuple[tuple[Lister, Commands], ...]] = {
    (phase, draining): tuple(
        (lister, kinds & ALLOWED[phase] - (DRAINING_REFUSES if draining else frozenset()))
        for kinds, lister in _BOUNDS
        if kinds & ALLOWED[phase]
    )
    for phase in Phase
    for draining in (False, True)
}
assert frozenset().union(*(k for k, _ in _BOUNDS)) == frozenset(WIRE_COMMANDS.values())
