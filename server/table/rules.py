"""The rules table: which commands each phase allows, and what a player may do now.

What it is for (h11's transition table, pokerkit's ``can``):

- :data:`ALLOWED`: for each :class:`~server.table.state.Phase`, the commands it takes.
  :meth:`server.table.Table.handle` checks it once, before any handler runs; a command
  the phase does not take is refused with ``wrong_phase`` (``table_closed`` once
  closed). The handlers keep only the contextual checks: who (``not_seated``,
  ``not_holder``, ``not_your_turn``, ``not_offered``, ``not_cutter``), how much
  (limits, funds) and which card.
- :data:`TURN_STEPS`: within TURN, what each moment of a stage takes (the turner is to
  choose a squeeze or TOSS, or is squeezing), checked after "is it your turn", with the
  code :data:`TURN_REFUSALS` names.
- :data:`CROUPIER_ONLY`: commands only the croupier sends (``not_allowed`` from anyone
  else, in any phase); :data:`DRAINING_REFUSES`: new bets, refused with ``draining`` in
  any phase while the server shuts down.
- :func:`actions`: every wire command one player may send now, with its bounds: the
  ``you.actions`` of their snapshot and of the private overlay the table adds to a
  step's last event whenever a player's actions change. Clients grey out buttons from
  it instead of copying the rules.

What it must never do: change the table. :func:`actions` only reads it, and must agree
with what ``handle`` accepts (tests/table/test_actions.py checks every listed action
and bound against :meth:`~server.table.Table.can`, and every unlisted command).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from server.engine.shoe import MIN_CUT

from . import commands as c
from .state import Phase, TurnStep

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
    }
)

#: Sent by the croupier only (StartShoe a fresh shoe, Tick the timers, CloseTable the
#: operator, SetDraining a shutdown, Restored a restart).
CROUPIER_ONLY: Commands = frozenset({c.StartShoe, c.Tick, c.CloseTable, c.SetDraining, c.Restored})

#: Refused with ``draining`` in any phase while the server shuts down (SetDraining):
#: new bets. Removing chips, DONE and turning go on, so running coups finish.
DRAINING_REFUSES: Commands = frozenset({c.PlaceBet, c.SameBet})

#: What each phase takes (GAME_RULES §4-§7).
ALLOWED: dict[Phase, Commands] = {
    Phase.SHUFFLE: ANYTIME | {c.StartShoe},
    Phase.WAITING: ANYTIME,
    Phase.SHOE_OFFER: ANYTIME | {c.AcceptShoe, c.DeclineShoe},
    Phase.CUT: ANYTIME | {c.Cut},
    Phase.BETTING: ANYTIME | {c.PlaceBet, c.RemoveBet, c.ClearBets, c.SameBet, c.Done, c.PassShoe},
    Phase.TURN: ANYTIME | {c.Squeeze, c.TurnCard, c.Toss, c.Progress},
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

#: The wire name of each command a client may send (docs/protocol.md §6).
WIRE_COMMANDS: dict[str, type[c.Command]] = {
    "sit": c.Sit,
    "stand": c.Stand,
    "leave": c.Leave,
    "accept_shoe": c.AcceptShoe,
    "decline_shoe": c.DeclineShoe,
    "pass_shoe": c.PassShoe,
    "cut": c.Cut,
    "bet": c.PlaceBet,
    "remove_bet": c.RemoveBet,
    "clear_bets": c.ClearBets,
    "same_bet": c.SameBet,
    "done": c.Done,
    "squeeze": c.Squeeze,
    "turn": c.TurnCard,
    "toss": c.Toss,
    "progress": c.Progress,
}


def actions(t: Table, pid: str) -> dict[str, Any]:
    """The wire commands ``pid`` may send now, each with its bounds (docs/protocol.md,
    "you.actions"): a key present means allowed now. Reads the table, changes nothing.

    ``bet.areas[a]``: the amount one ``bet`` may add to area ``a``: ``min`` is what the
    table minimum still needs there (at least 1), ``max`` the area maximum less what is
    there, capped by the player's funds; areas where ``max < min`` are left out.
    ``remove_bet.areas[a]``: ``have`` (remove it all) or any amount up to
    ``max_partial`` (leaving at least the minimum; 0 when only all of it may go).

    It runs after every step for the players the step may have changed, so it is
    written for speed; tests/table/test_actions.py holds it to what ``handle`` does.
    """
    p = t.players.get(pid)
    phase = t.phase
    if p is None or phase is Phase.CLOSED:
        return {}
    if p.seat is None:
        free = t.free_seats()
        return {"sit": {"seats": free}, "leave": {}} if free else {"leave": {}}
    coup = t.coup
    out: dict[str, Any] = (
        {}
        if coup is not None and (pid in coup.held or pid == coup.holder)  # wager_in_play
        else {"stand": {}, "leave": {}}
    )
    if phase is Phase.BETTING:
        _betting_actions(t, p, out)
    elif phase is Phase.TURN:
        if coup is not None:
            hand = coup.stage_hand
            if coup.turners[hand] == pid:
                if coup.style is None:
                    out["squeeze"] = {"hand": hand, "styles": list(c.STYLES)}
                else:
                    down = coup.face_down()
                    out["turn"] = {"hand": hand, "cards": down}
                    out["progress"] = {"hand": hand, "cards": list(down)}
                out["toss"] = {"hand": hand}
    elif phase is Phase.SHOE_OFFER:
        if t.offer is not None and t.offer.current == pid:
            out["accept_shoe"] = {}
            out["decline_shoe"] = {}
    elif phase is Phase.CUT and t.shoe is not None and t.cutter == pid:
        out["cut"] = {"min": MIN_CUT, "max": t.shoe.size - MIN_CUT}
    return out


def _betting_actions(t: Table, p: Any, out: dict[str, Any]) -> None:
    """The betting part of :func:`actions` (§3, §7): the same rules as the table's
    ``bets_allowed`` and ``done_refusal``, inlined."""
    minimum = t.options.limits.min
    area_max = t.area_max
    pid = p.id
    funds = t.available(pid)
    bets = p.bets
    if pid == t.holder and t.holder_coups:
        out["pass_shoe"] = {}
    draining = t.draining
    if not draining:
        areas: dict[str, dict[str, int]] = {}
        for area, top in area_max.items():
            have = bets.get(area, 0)
            high = top - have
            if funds < high:
                high = funds
            low = minimum - have if have < minimum - 1 else 1
            if high >= low:
                areas[area] = {"min": low, "max": high}
        if areas:
            out["bet"] = {"areas": areas}
    if bets:
        out["remove_bet"] = {
            "areas": {
                area: {"have": have, "max_partial": have - minimum if have > minimum else 0}
                for area, have in bets.items()
            }
        }
        out["clear_bets"] = {}
    last = p.last_bets
    if last and not draining:
        same = {a: b for a, b in last.items() if a in area_max}
        # bets_allowed: every area within its limits, the chips added within the funds
        # (the stake is the chips on the felt).
        if (
            all(minimum <= b <= area_max[a] for a, b in same.items())
            and sum(same.values()) - sum(bets.values()) <= funds
        ):
            out["same_bet"] = {"bets": same}
    if not (t.options.holder_must_bet_banker and pid == t.holder and not bets.get("banker")):
        out["done"] = {}
