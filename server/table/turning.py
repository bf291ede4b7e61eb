"""Turning the cards: the squeeze and the tableau, a coup stage by stage (GAME_RULES §2, §6).

What it is for: the TURN phase of :class:`~server.table.Table`, as functions over the
table and its :class:`~server.table.state.CoupState`: each turner command's check and
do (``check_<name>`` / ``do_<name>``, named in :mod:`.dispatch`), revealing cards,
and :func:`advance_coup`, which moves a coup on until a turner must act and settles it
(:func:`server.table.settlement.settle`) once every card is up.

What it must never do: move money (settlement does, in :mod:`server.table.settlement`),
or put a face-down card into an event's public data (a squeezing turner sees their
cards in the private overlay).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.engine.cards import card_value, hand_total
from server.engine.coup import banker_draws, is_natural, player_draws
from server.vocabulary import commands as c
from server.vocabulary.errors import refuse
from server.vocabulary.events import Outcome

from . import rules, settlement
from .state import CardSlot, CoupStage, CoupState

if TYPE_CHECKING:
    from .table import Table

PROGRESS_INTERVAL = 0.25  # squeeze progress: at most 4 updates a second per card


def turning(
    t: Table, cmd: c.Squeeze | c.TurnCard | c.Toss | c.Progress, card: int | None = None
) -> tuple[CoupState, int]:
    """The coup (and ``card``'s index), if ``cmd``'s player turns ``cmd.hand`` now,
    ``card`` is a face-down card of the stage, and the stage's moment takes ``cmd``
    (rules.TURN_STEPS), checked in that order."""
    coup = t.coup
    assert coup is not None  # a coup exists exactly in TURN
    refuse(rules.turn_refusal(coup, cmd.player, cmd.hand))
    index = -1
    if card is not None:
        refuse(rules.card_refusal(coup, card))
        index = card - 1
    refuse(rules.step_refusal(coup, type(cmd)))
    return coup, index


def check_squeeze(t: Table, cmd: c.Squeeze) -> CoupState:
    return turning(t, cmd)[0]


def do_squeeze(t: Table, cmd: c.Squeeze, coup: CoupState) -> Outcome:
    coup.style = cmd.style
    slots = coup.hand(cmd.hand)
    private = {str(i + 1): slots[i].card for i in coup.stage_slots() if not slots[i].up}
    t.emit(
        "squeeze",
        {"hand": cmd.hand, "style": cmd.style, "turner": cmd.player},
        {cmd.player: {"cards": private}},
    )
    return Outcome.CHANGED


def check_turn_card(t: Table, cmd: c.TurnCard) -> tuple[CoupState, int]:
    return turning(t, cmd, cmd.card)


def do_turn_card(t: Table, cmd: c.TurnCard, ctx: tuple[CoupState, int]) -> Outcome:
    coup, index = ctx
    reveal(t, coup, cmd.hand, index, cmd.player, None)
    return Outcome.CHANGED


def check_toss(t: Table, cmd: c.Toss) -> CoupState:
    return turning(t, cmd)[0]


def do_toss(t: Table, cmd: c.Toss, coup: CoupState) -> Outcome:
    reveal_stage(t, coup, cmd.player, None)
    return Outcome.CHANGED


def check_progress(t: Table, cmd: c.Progress) -> tuple[CoupState, int]:
    return turning(t, cmd, cmd.card)


def do_progress(t: Table, cmd: c.Progress, ctx: tuple[CoupState, int]) -> Outcome:
    """Show the others how far a card is bent, coalesced (a squeeze must not flood
    every watcher): only forward progress, at most 4 updates a second per card. A bend
    that comes sooner is held back (the latest) and shown when its time comes
    (:func:`show_bends`, at the Tick :func:`bends_due` asks for): the turner's last bend
    always reaches the others."""
    coup, index = ctx
    key = f"{cmd.hand}{index + 1}"
    last = coup.progress.get(key)
    if last is not None and cmd.percent <= max(last[0], coup.bends.get(key, 0)):
        return Outcome.CHANGED
    if last is not None and t.now - last[1] < PROGRESS_INTERVAL:
        coup.bends[key] = cmd.percent
        return Outcome.CHANGED
    _bend(t, coup, key, cmd.percent, cmd.player)
    return Outcome.CHANGED


def _bend(t: Table, coup: CoupState, key: str, percent: int, turner: str | None) -> None:
    coup.bends.pop(key, None)
    coup.progress[key] = [percent, t.now]
    hand, card = key[:-1], int(key[-1])
    t.emit("progress", {"hand": hand, "card": card, "percent": percent, "turner": turner})


def bends_due(t: Table) -> float | None:
    """When the first bend held back may be shown (None: none is)."""
    coup = t.coup
    if coup is None or not coup.bends:
        return None
    return min(
        (coup.progress[key][1] + PROGRESS_INTERVAL for key in coup.bends if key in coup.progress),
        default=t.now,
    )


def show_bends(t: Table) -> None:
    """The bends held back whose time has come (a card turned meanwhile: dropped)."""
    coup = t.coup
    if coup is None or not coup.bends:
        return
    for key in sorted(coup.bends):
        if key in coup.progress and t.now - coup.progress[key][1] < PROGRESS_INTERVAL:
            continue
        hand, index = key[:-1], int(key[-1]) - 1
        slots = coup.hand(hand)
        if index >= len(slots) or slots[index].up:
            coup.bends.pop(key)
            continue
        _bend(t, coup, key, coup.bends[key], coup.turners.get(hand))


def reveal(
    t: Table, coup: CoupState, hand: str, index: int, by: str, on_behalf: str | None
) -> None:
    slot = coup.hand(hand)[index]
    slot.up, slot.by, slot.on_behalf = True, by, on_behalf
    if on_behalf is not None:
        coup.on_behalf.append({"step": f"turn {hand} card {index + 1}", "player": on_behalf})
    total = coup.shown_total(hand)
    t.emit(
        "card",
        {
            "hand": hand,
            "index": index + 1,
            "card": slot.card,
            "by": by,
            "on_behalf": on_behalf,
            "total": total,
        },
    )


def reveal_stage(t: Table, coup: CoupState, by: str, on_behalf: str | None) -> None:
    hand = coup.stage_hand
    for i in coup.stage_slots():
        if not coup.hand(hand)[i].up:
            reveal(t, coup, hand, i, by, on_behalf)


def advance_coup(t: Table) -> bool:
    """Move the coup on until a turner must act; True once it is settled (§2, §6)."""
    coup = t.coup
    assert coup is not None and t.shoe is not None
    while True:
        hand = coup.stage_hand
        slots = coup.hand(hand)
        if all(slots[i].up for i in coup.stage_slots()):
            coup.style, coup.deadline, coup.progress, coup.bends = None, None, {}, {}
            nxt = next_stage(t, coup)
            if nxt is None:
                settlement.settle(t)
                return True
            coup.stage = nxt
            continue
        turner = coup.turners[hand]
        if turner is None:  # §6: no Player bet / the house holds: the croupier turns
            reveal_stage(t, coup, c.CROUPIER, None)
            continue
        if coup.deadline is None:
            third = coup.stage.endswith("third")
            timers = t.options.timers
            coup.deadline = t.now + (timers.third_card if third else timers.squeeze)
            t.emit(
                "turn",
                {"hand": hand, "turner": turner, "third": third, "deadline": coup.deadline},
            )
        return False


def next_stage(t: Table, coup: CoupState) -> CoupStage | None:
    """The tableau (§2), step by step; deals a third card face down when one is drawn."""
    assert t.shoe is not None
    pt = hand_total(s.card for s in coup.player)
    bt = hand_total(s.card for s in coup.banker)
    if coup.stage is CoupStage.PLAYER:
        return CoupStage.BANKER
    if coup.stage is CoupStage.BANKER:
        if is_natural(pt) or is_natural(bt):
            return None
        if player_draws(pt):
            deal_third(t, coup, "player")
            return CoupStage.PLAYER_THIRD
        if banker_draws(bt, None):
            deal_third(t, coup, "banker")
            return CoupStage.BANKER_THIRD
        return None
    if coup.stage is CoupStage.PLAYER_THIRD:
        bt2 = hand_total(s.card for s in coup.banker[:2])
        if banker_draws(bt2, card_value(coup.player[2].card)):
            deal_third(t, coup, "banker")
            return CoupStage.BANKER_THIRD
    return None


def deal_third(t: Table, coup: CoupState, hand: str) -> None:
    assert t.shoe is not None
    coup.hand(hand).append(CardSlot(t.shoe.draw()))
    t.emit("third_card", {"hand": hand})
