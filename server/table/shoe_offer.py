"""The shoe offer and the cut: who holds the shoe, and cutting a new one (GAME_RULES §4, §5).

What it is for: a new shoe (``StartShoe``), the SHOE_OFFER and CUT phases of :class:`~server.table.Table`, as
functions over the table and its :class:`~server.table.state.Offer`: each command's
check and do (``check_<name>`` / ``do_<name>``, named in :mod:`.dispatch`),
offering the shoe seat by seat, the house taking it when everyone declines, the holder
losing it, and the cut.

What it must never do: move money, or shuffle (the shoe arrives with its seed in a
``StartShoe``; a cut that times out is the seed's, :func:`server.engine.shoe.timeout_cut`,
or with the players' contributions the key's: :mod:`.contributing`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.engine.shoe import Shoe, ShoeError
from server.engine.shoe import check_cut as check_cut_position
from server.vocabulary import commands as c
from server.vocabulary.errors import TableError, refuse
from server.vocabulary.events import Outcome

from . import contributing, rules
from .state import Offer, PlayerState

if TYPE_CHECKING:
    from .table import Table


def check_start_shoe(t: Table, cmd: c.StartShoe) -> Shoe:
    try:
        if cmd.cards is not None:
            # A stacked shoe has its stop card too (§4), so it never runs short.
            return Shoe.stacked(cmd.cards, stop_offset=t.options.stop_offset)
        assert cmd.seed is not None
        return Shoe.from_seed(cmd.seed, t.options.decks)
    except (ShoeError, ValueError) as exc:
        raise TableError("bad_command", str(exc)) from None


def do_start_shoe(t: Table, cmd: c.StartShoe, shoe: Shoe) -> Outcome:
    """A new shoe (§4): its commitment published; contributions open if it is seeded."""
    t.shoe = shoe
    t.cut_by = None
    t.shoe_no += 1
    t.coup_no = 0  # coups are numbered per shoe, as on every scoreboard
    t.shoe_coups = []
    t.results = []
    t._roads = None
    t.last_coup_next = False
    t.burned = cmd.cards is not None
    contributing.start(t, seeded=cmd.cards is None)
    t.emit(
        "shoe_started",
        {
            "shoe_no": t.shoe_no,
            "commitment": shoe.commitment,
            "decks": t.options.decks if cmd.cards is None else None,
            "cards": shoe.size,
            "stacked": cmd.cards is not None,
        },
    )
    return Outcome.CHANGED


def verify_offeree(t: Table, pid: str) -> PlayerState:
    p = t.seated_player(pid)
    refuse(rules.offer_refusal(t, pid))
    return p


def lose_shoe(t: Table, p: PlayerState, reason: str, seat: int | None = None) -> None:
    """§5: the holder passes, stands, leaves or times out: offer the shoe onward."""
    t.emit("shoe_passed", {"player": p.id, "reason": reason})
    t.anchor_seat = seat or p.seat or t.anchor_seat
    t.holding = t.holding.lost()


def rotation(t: Table, after: int) -> list[PlayerState]:
    """Seated players in offer order: the seats after ``after``, wrapping (§5)."""
    return sorted(t.seated(), key=lambda q: ((q.seat or 0) <= after, q.seat))


def start_offer(t: Table) -> None:
    t.holding = t.holding.offering()
    order = rotation(t, t.anchor_seat)
    if order:
        offer_to(t, order[0], [])


def offer_to(t: Table, p: PlayerState, declined: list[str]) -> None:
    assert p.seat is not None
    deadline = t.now + t.options.timers.shoe_offer
    t.offer = Offer(p.id, p.seat, deadline, declined)
    t.emit("shoe_offered", {"player": p.id, "seat": p.seat, "deadline": deadline})
    if not p.connected:  # nobody there to answer: declined on their behalf at once
        t.between_on_behalf.append({"step": "decline the shoe", "player": p.id})
        decline_offer(t, p.id, p.seat, timeout=True)


def decline_offer(t: Table, pid: str, seat: int | None, *, timeout: bool) -> None:
    """§5: ``pid`` declined (or could not answer): the next occupied seat whose
    player has not declined is offered the shoe; when every seated player has
    declined, the house holds it."""
    offer = t.offer
    assert offer is not None
    t.emit("shoe_declined", {"player": pid, "seat": seat, "timeout": timeout})
    declined = [*offer.declined, pid]
    for q in rotation(t, offer.seat):
        if q.id not in declined:
            offer_to(t, q, declined)
            return
    house_takes_shoe(t)


def house_takes_shoe(t: Table) -> None:
    """§5: nobody (else) takes the shoe: the croupier holds it until a Player win."""
    t.offer = None
    t.holding = t.holding.house_takes()
    t.emit("shoe_held_by_house", {})


def check_accept_shoe(t: Table, cmd: c.AcceptShoe) -> PlayerState:
    return verify_offeree(t, cmd.player)


def do_accept_shoe(t: Table, cmd: c.AcceptShoe, p: PlayerState) -> Outcome:
    t.offer = None
    t.holding = t.holding.taken_by(p.id)
    t.anchor_seat = p.seat or 0
    t.emit("shoe_accepted", {"player": p.id, "seat": p.seat})
    return Outcome.CHANGED


def check_decline_shoe(t: Table, cmd: c.DeclineShoe) -> PlayerState:
    return verify_offeree(t, cmd.player)


def do_decline_shoe(t: Table, cmd: c.DeclineShoe, p: PlayerState) -> Outcome:
    decline_offer(t, p.id, p.seat, timeout=False)
    return Outcome.CHANGED


def check_pass_shoe(t: Table, cmd: c.PassShoe) -> PlayerState:
    p = t.seated_player(cmd.player)
    refuse(rules.pass_refusal(t, p))
    return p


def do_pass_shoe(t: Table, cmd: c.PassShoe, p: PlayerState) -> Outcome:
    """§5: a voluntary pass goes to the next occupied seat other than the holder's,
    and never back to them: the offer starts at once with the passer counted as
    having declined; with nobody else seated the house holds the shoe."""
    assert p.seat is not None
    lose_shoe(t, p, "passed")
    t.holding = t.holding.offering()
    others = [q for q in rotation(t, p.seat) if q.id != p.id]
    if others:
        offer_to(t, others[0], [p.id])
    else:
        house_takes_shoe(t)
    return Outcome.CHANGED


def check_cut(t: Table, cmd: c.Cut) -> None:
    t.seated_player(cmd.player)
    assert t.shoe is not None
    refuse(rules.cut_refusal(t, cmd.player))
    try:
        check_cut_position(cmd.position, t.shoe.size)  # the bounds of rules.cut_range
    except ShoeError as exc:
        raise TableError("bad_cut", str(exc)) from None


def do_cut(t: Table, cmd: c.Cut, ctx: None) -> Outcome:
    contributing.cut(t, cmd.position, cmd.player, None)  # closes the contributions (§9)
    return Outcome.CHANGED


def apply_cut(t: Table, position: int, by: str, on_behalf: str | None) -> None:
    assert t.shoe is not None
    t.shoe.apply_cut(position)
    t.cut_by = {"by": by, "on_behalf": on_behalf}
    t.deadline = None
    t.emit("shoe_cut", {"position": position, "by": by, "on_behalf": on_behalf})
