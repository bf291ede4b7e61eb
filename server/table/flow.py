"""The table's flow: every transition the state triggers, and each phase's entry, in one place.

What it is for (h11 keeps its state machine in one file, ``h11/_state.py``): after
every command :meth:`~server.table.Table.handle` calls :func:`advance`, which moves the
table on from wherever the command left it:

- :data:`NEXT`: the transitions (GAME_RULES §4-§7), in order: the first whose condition
  holds names the phase the table is in now (a coup being dealt, no shoe, nobody seated,
  the shoe to offer, a shoe to cut, betting). Each condition reads the table's records,
  never a handler: the coup, the shoe, the contributions, the felt, the seats, the
  offer, and the flags grouped in :class:`~server.table.state.Holding` (who holds the
  shoe, whether it is to be offered) and :class:`~server.table.state.Modes` (paused).
- :data:`ENTER`: each phase's entry, which moves the table into it (burns, opens the
  betting, offers the shoe or the cut) and says whether to look at :data:`NEXT` again at
  once (a coup settled, an offer every seated player declined) or wait for the next
  command.
- :func:`do_tick`: the timers (the croupier's :class:`~server.vocabulary.commands.Tick`):
  a seat's grace, the shoe offer, the cut, the reveal, the betting and the turner's.

The phases (:class:`~server.table.state.Phase`) and the flow between them::

    SHUFFLE --StartShoe--> SHOE_OFFER (no holder) | CUT (the holder keeps the shoe)
                           | WAITING (nobody seated)
    WAITING --someone sits--> SHOE_OFFER | CUT | BETTING (where it left off)
    SHOE_OFFER --accepted, or every seated player declined (the house holds)-->
                           CUT (a new shoe) | BETTING (between coups)
    CUT --cut, or the croupier's on timeout; the burn--> BETTING
    CUT --the same, with contributions committed--> REVEAL --all revealed, or the
                           timer; the cut, the burn--> BETTING (docs/fairness.md §9)
    BETTING --everyone DONE with a bet, or the timer with a bet--> TURN
                           | DEBITING (a wallet that confirms holds: docs/wallet.md §3)
    DEBITING --Debited--> TURN | BETTING (no wager stood: the round is recorded undealt)
    BETTING --the holder passes, stands up or leaves--> SHOE_OFFER
    TURN --settled--> BETTING (next coup) | SHOE_OFFER (the shoe passes)
                      | SHUFFLE (the shoe is over: seed revealed)
    SHOE_OFFER | CUT | BETTING --the last seated player goes--> WAITING
    any phase --Pause--> PAUSED once no coup is dealt and no chip is on the felt
    PAUSED --Resume--> where it left off
    any phase --VoidRound--> the round's wagers back, the next round (voiding.py)
    any phase --CloseTable--> CLOSED

(A stacked shoe: no cut, no burn.) BETTING's timer runs out with no bet: the table waits
for one (§7). In TURN each ``CoupStage`` (PLAYER, BANKER, PLAYER_THIRD, BANKER_THIRD) has
two ``TurnStep`` moments: CHOOSE (TOSS or a squeeze) and SQUEEZE (the cards one by one).

:data:`server.table.rules.ALLOWED` says which commands each phase takes; the commands
(:data:`server.table.dispatch.HANDLERS`) change the records :data:`NEXT` reads.

What it must never do: refuse a command (the checks do, before anything changes), or
move money other than through the sub-machines' steps (settlement's entries).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from server.vocabulary import commands as c
from server.vocabulary.events import Outcome

from . import betting, contributing, seating, shoe_offer, turning
from .state import Phase

if TYPE_CHECKING:
    from .table import Table

__all__ = ["ENTER", "NEXT", "advance", "do_tick"]

#: The transitions the state triggers (§4-§7), after every command: the first whose
#: condition holds names the phase the table moves to (its entry, :data:`ENTER`, does
#: what that takes). The commands move the table between these conditions;
#: :data:`server.table.rules.ALLOWED` says which each phase takes.
NEXT: tuple[tuple[Callable[[Table], bool], Phase], ...] = (
    (lambda t: t.debiting is not None, Phase.DEBITING),  # the wallet is taking the wagers
    (lambda t: t.coup is not None, Phase.TURN),  # a coup is being dealt (settled: on)
    (lambda t: t.shoe is None, Phase.SHUFFLE),  # the shoe is over: a new one is wanted
    (  # cut, with contributions committed: their reveal comes first (fairness.md §9)
        lambda t: t.contributions is not None and t.contributions.revealing,
        Phase.REVEAL,
    ),
    (  # the operator paused the table: no new coup (chips on the felt: that round goes on)
        lambda t: t.modes.paused and not t.chips,
        Phase.PAUSED,
    ),
    (lambda t: not t.seated(), Phase.WAITING),  # nobody seated
    (  # the shoe is offered: someone is asked, or the shoe must find a holder (§5)
        lambda t: t.shoe_unsettled,
        Phase.SHOE_OFFER,
    ),
    (lambda t: t.shoe is not None and t.shoe.cut is None, Phase.CUT),  # a new shoe (§4)
    (lambda t: True, Phase.BETTING),  # burned, then a round opens or goes on (§7)
)


def advance(t: Table) -> None:
    """Move the table on from wherever the last command left it: the first of
    :data:`NEXT` that holds names the phase, whose entry (:data:`ENTER`) moves the table
    into it and says whether to look again or wait for the next command."""
    while t.phase is not Phase.CLOSED:
        if not ENTER[next_phase(t)](t):
            return


def next_phase(t: Table) -> Phase:
    """The phase the first of :data:`NEXT` that holds names (a plain loop: it runs after
    every command)."""
    for holds, phase in NEXT:
        if holds(t):
            return phase
    raise AssertionError("the last of NEXT always holds")


# ------------------------------------------------------------------ the entries
def enter_turn(t: Table) -> bool:
    return turning.advance_coup(t)  # True once the coup is settled


def enter_debiting(t: Table) -> bool:
    t.phase, t.deadline = Phase.DEBITING, None
    return False  # the croupier answers with Debited


def enter_shuffle(t: Table) -> bool:
    if t.phase is not Phase.SHUFFLE:
        t.phase, t.deadline = Phase.SHUFFLE, None
    return False


def enter_paused(t: Table) -> bool:
    if t.phase is not Phase.PAUSED:
        t.phase, t.deadline = Phase.PAUSED, None
        if t.offer is not None:  # no timer runs while paused: offered again after
            t.offer = None
            t.holding = t.holding.offer_again()
    return False


def enter_waiting(t: Table) -> bool:
    if t.phase is not Phase.WAITING:
        t.phase, t.deadline, t.offer = Phase.WAITING, None, None
        t.emit("waiting", {})
        # Nobody seated, no coup (§5): bettors' chips come back (who went away, goes)
        betting.return_chips(t, [q for q in t.players.values() if q.bets], "returned")
        seating.release(t)
    return False


def enter_shoe_offer(t: Table) -> bool:
    if t.offer is None:
        shoe_offer.start_offer(t)
    if t.offer is None:  # declined on everyone's behalf: the house holds it
        if t.phase is Phase.BETTING and t.round_open:  # (reopened, as after an accept)
            t.phase = Phase.SHOE_OFFER
        return True
    if t.phase is not Phase.SHOE_OFFER:
        t.phase, t.deadline = Phase.SHOE_OFFER, None
    return False


def enter_cut(t: Table) -> bool:
    # §4: the cut is offered to the cutter; offered again if that changes (the
    # cutter stood up), with a fresh timer.
    if t.phase is not Phase.CUT or t.cut_offered_to != t.cutter:
        t.cut_offered_to = t.cutter
        t.phase = Phase.CUT
        t.deadline = t.now + t.options.timers.cut
        t.emit("cut_offered", {"player": t.cutter, "deadline": t.deadline})
    return False


def enter_betting(t: Table) -> bool:
    assert t.shoe is not None
    if not t.burned:  # §4: the burn, once the shoe is cut
        face, count = t.shoe.burn()
        t.shoe.place_stop(t.options.stop_offset)
        t.burned = True
        t.emit(
            "burned",
            {"card": face, "count": count, "stop_offset": t.options.stop_offset},
        )
    if t.phase is not Phase.BETTING or not t.round_open:
        betting.open_betting(t)
    return False


#: Each phase's entry (after :data:`NEXT`): True to look again at once.
ENTER: dict[Phase, Callable[[Table], bool]] = {
    Phase.DEBITING: enter_debiting,
    Phase.TURN: enter_turn,
    Phase.SHUFFLE: enter_shuffle,
    Phase.PAUSED: enter_paused,
    Phase.WAITING: enter_waiting,
    Phase.SHOE_OFFER: enter_shoe_offer,
    Phase.CUT: enter_cut,
    Phase.REVEAL: contributing.enter_reveal,
    Phase.BETTING: enter_betting,
}


# ------------------------------------------------------------------ the timers
def do_tick(t: Table, cmd: c.Tick, ctx: None) -> Outcome:
    """The croupier's Tick at ``t.now``: every timer that has run out acts, in order
    (a squeeze's held-back bend, a seat's grace, the shoe offer, the cut, the reveal,
    the betting, the turner's)."""
    now = t.now
    turning.show_bends(t)  # (a squeeze's last bend, held back a moment)
    for q in sorted(t.seated(), key=lambda q: q.id):  # (only a seat has a grace)
        if q.grace_deadline is not None and now >= q.grace_deadline:
            q.grace_deadline = None
            if t.wager_in_play(q):
                q.leaving = True
            else:
                seating.gone(t, q)
    offer = t.offer
    if offer is not None and now >= offer.deadline:
        t.between_on_behalf.append({"step": "decline the shoe", "player": offer.current})
        shoe_offer.decline_offer(t, offer.current, offer.seat, timeout=True)
    if t.phase is Phase.CUT and t.deadline is not None and now >= t.deadline:
        who = t.cutter  # the timeout cut: the seed's, or after the reveal the key's
        contributing.cut(t, None, c.CROUPIER, who)
        if who is not None:
            t.between_on_behalf.append({"step": "cut the shoe", "player": who})
    contributing.tick(t)
    due = t.phase is Phase.BETTING and t.deadline is not None and now >= t.deadline
    # (a holder whose grace ran out above lost the shoe: it is offered before a deal, §5)
    if due and not t.shoe_unsettled:
        if t.chips:  # a bettor's chips count as a seated player's (§5, §7)
            betting.close_betting(t)
        else:  # §7: no bet at all, the table waits; the next bet restarts the timer
            t.deadline = None
            t.emit("betting_waiting", {})
    coup = t.coup
    if coup is not None and coup.deadline is not None and now >= coup.deadline:
        turner = coup.turners[coup.stage_hand]
        turning.reveal_stage(t, coup, c.CROUPIER, turner)
    return Outcome.CHANGED
