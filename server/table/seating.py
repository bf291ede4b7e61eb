"""Seating: people come and go, sit and stand, lose their connection and come back
(GAME_RULES §5).

What it is for: the commands every phase but CLOSED takes (``Join``, ``Leave``,
``Sit``, ``Stand``, ``Disconnect``, ``Reconnect``, ``Restored``, ``Chat``), as functions over the
table and its :class:`~server.table.state.PlayerState`: each one's check and do
(``check_<name>`` / ``do_<name>``, named in :mod:`.dispatch`), standing a player up
(their placed chips come back, the shoe moves on) and the grace period of a seat held
for someone away.

Bettors without a seat (§5) come and go as spectators do, but their chips and wagers
stay theirs: one who loses the connection keeps every chip on the felt and every wager
held (they count, and are settled, as if they were there: GAME_RULES §8), and leaves
once none is left in play; one who comes back before finds them where they were. One
who leaves (``leave``) takes back the chips not yet held, and may not while a wager of
theirs is held (``wager_in_play``).

What it must never do: move money itself (a standing player's chips come back through
the table's stake, :func:`server.table.settlement.move_stake`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from server.vocabulary import commands as c
from server.vocabulary.errors import TableError, refuse
from server.vocabulary.events import Outcome

from . import betting, rules, shoe_offer
from .state import Phase, PlayerState

if TYPE_CHECKING:
    from .table import Table


def check_join(t: Table, cmd: c.Join) -> bool:
    if cmd.player in t.players:
        if cmd.rejoin:
            return True
        raise TableError("already_joined", "you are already at this table")
    return False


def do_join(t: Table, cmd: c.Join, rejoin: bool) -> Outcome:
    if rejoin:
        return back(t, t.players[cmd.player])
    name = (cmd.name or cmd.player)[:32]
    # Watching is not news: no event, so an audience of thousands arriving costs
    # each of them nothing (the lobby and snapshots count spectators). Sitting is.
    t.players[cmd.player] = PlayerState(cmd.player, name)
    return Outcome.CHANGED


def check_chat(t: Table, cmd: c.Chat) -> PlayerState:
    return t.joined_player(cmd.player)


def do_chat(t: Table, cmd: c.Chat, p: PlayerState) -> Outcome:
    """Say it to everyone watching: a transient event (shown, never stored)."""
    t.emit("chat", {"player": p.id, "name": p.name, "text": cmd.text, "time": t.now})
    return Outcome.CHANGED


def check_leave(t: Table, cmd: c.Leave) -> PlayerState:
    p = t.joined_player(cmd.player)
    refuse(rules.stand_refusal(t, p))  # (a bettor without a seat too: their wager is in the coup)
    return p


def do_leave(t: Table, cmd: c.Leave, p: PlayerState) -> Outcome:
    stand(t, p, "left")  # a seated player's leaving is news: "stood", reason "left"
    if p.bets:  # a bettor without a seat: their chips come back (§5)
        betting.return_chips(t, [p], "returned")
    del t.players[p.id]
    return Outcome.CHANGED


def check_sit(t: Table, cmd: c.Sit) -> tuple[PlayerState, int]:
    p = t.joined_player(cmd.player)
    if p.seat is not None:
        raise TableError("already_seated", f"you are already in seat {p.seat}")
    free = t.free_seats()
    if cmd.seat is None:
        if not free:
            raise TableError("table_full", "every seat is taken")
        return p, free[0]
    if cmd.seat > t.options.seats:
        raise TableError("bad_seat", f"seats are 1-{t.options.seats}")
    if cmd.seat not in free:
        raise TableError("seat_taken", f"seat {cmd.seat} is taken")
    return p, cmd.seat


def do_sit(t: Table, cmd: c.Sit, ctx: tuple[PlayerState, int]) -> Outcome:
    p, seat = ctx
    p.seat = seat  # (a bettor's chips and wager, if any, are a seated player's now)
    p.leaving = False
    t._seated = None
    p.connected = True
    p.grace_deadline = None
    t.emit(
        "sat",
        {
            "player": p.id,
            "name": p.name,
            "seat": seat,
            "free_seats": t.free_seats(),
            "bets": dict(p.bets),  # (a bettor's chips, now a seated player's: public)
            **t.felt(),
        },
        {p.id: t.money(p.id)},
    )
    return Outcome.CHANGED


def check_stand(t: Table, cmd: c.Stand) -> PlayerState:
    p = t.seated_player(cmd.player)
    if not cmd.on_break:  # (a break waits for the coup instead: do_stand)
        refuse(rules.stand_refusal(t, p))
    return p


def do_stand(t: Table, cmd: c.Stand, p: PlayerState) -> Outcome:
    """A stand; on a break (``on_break``, the gateway's) while the player's wager is in
    the coup, a stand once it is settled (:func:`release`): ``stand_after_coup`` now."""
    if not cmd.on_break:
        stand(t, p, "stood")
        return Outcome.CHANGED
    if rules.stand_refusal(t, p) is None:
        stand(t, p, "stood", why=BREAK)
        return Outcome.CHANGED
    if p.on_break:
        return Outcome.ALREADY  # already standing after the coup: nothing changes
    p.on_break = True
    # An event (so the step is stored: the table must not forget it, docs/protocol.md §5).
    t.emit("stand_after_coup", {"player": p.id, "seat": p.seat}, {p.id: {"reason": BREAK}})
    return Outcome.CHANGED


#: The reason of a stand on a player's behalf when they stop play, in their own copy of
#: its ``stood`` (and ``stand_after_coup``): everyone else's says ``stood``, as for a
#: ``stand``, so a break or self-exclusion is nobody else's business (docs/protocol.md §8).
BREAK = "break"


def stand(t: Table, p: PlayerState, reason: str, *, why: str | None = None) -> None:
    """Take a player out of their seat: chips placed come back, the shoe moves on.
    ``why``: the reason the player's own copy of ``stood`` gives instead (private)."""
    if p.seat is None:
        return
    seat = p.seat
    if p.bets:  # placed chips come back: stake -> player
        t.lay(p, {})
        p.bet_order.clear()
        t.move_stake(p, -t.stake(p.id))
    p.seat, p.done, p.leaving, p.grace_deadline = None, False, False, None
    p.on_break = False
    t._seated = None
    t.emit(
        "stood",
        {
            "player": p.id,
            "seat": seat,
            "reason": reason,
            "free_seats": t.free_seats(),
            **t.felt(),
        },
        None if why is None else {p.id: {"reason": why}},
    )
    if t.holder == p.id:
        shoe_offer.lose_shoe(t, p, reason, seat)
    if t.offer is not None and t.offer.current == p.id:
        shoe_offer.decline_offer(t, p.id, seat, timeout=False)
    if t.phase is Phase.BETTING and t.round_open and t.coup is None and not t.shoe_unsettled:
        betting.maybe_close_betting(t)  # §7: the one not yet done may have just left


def gone(t: Table, p: PlayerState) -> None:
    """Grace ran out (§5): the seat is lost and the player, still away, leaves; or a
    bettor without a seat who went away has nothing left in play."""
    stand(t, p, "timeout")
    t._dirty.add(p.id)
    del t.players[p.id]


def release(t: Table, keep: str | None = None) -> None:
    """The players whose getting up waited for the coup, once no wager of theirs is in
    play (a coup settled or voided, a debit refused: §5): one whose grace ran out while
    it was dealt leaves (:func:`gone`), one who stopped play meanwhile (``on_break``)
    stands, before the shoe is offered to anyone. ``keep``: one who waits on (the holder
    of a coup about to be dealt)."""
    for q in list(t.players.values()):
        # (a bettor without a seat who went away waits for their chips to be dealt and
        # settled, or given back: §5)
        if q.id == keep:
            continue
        if (q.leaving or q.on_break) and not q.bets and not t.wager_in_play(q):
            if q.leaving:
                gone(t, q)
            else:
                stand(t, q, "stood", why=BREAK)


def check_disconnect(t: Table, cmd: c.Disconnect) -> PlayerState:
    return t.joined_player(cmd.player)


def do_disconnect(t: Table, cmd: c.Disconnect, p: PlayerState) -> Outcome:
    """The table decides what a lost connection means: a spectator leaves (no
    event, as when they came); a bettor without a seat keeps their chips and wagers,
    which count and are settled as if they were there (§5, §8), and leaves once none is
    in play (no event either: nobody else knew them); a seated player keeps the seat
    for the grace period (§5). A shoe already offered to them waits for its timer (they
    may be back in time); one offered to them while they are away is declined at once."""
    if p.seat is None:
        if t.is_bettor(p):
            p.connected, p.leaving = False, True
            return Outcome.CHANGED
        del t.players[p.id]
        return Outcome.CHANGED
    if not p.connected:
        return Outcome.ALREADY
    away(t, p)
    return Outcome.CHANGED


def away(t: Table, p: PlayerState) -> None:
    """A seated player is gone, for now: the grace period starts (§5). The one path
    for a lost connection and a restart (Restored)."""
    p.connected = False
    p.grace_deadline = t.now + t.options.timers.grace
    t.emit("disconnected", {"player": p.id, "grace_deadline": p.grace_deadline})


def check_reconnect(t: Table, cmd: c.Reconnect) -> PlayerState:
    return t.joined_player(cmd.player)


def do_reconnect(t: Table, cmd: c.Reconnect, p: PlayerState) -> Outcome:
    return back(t, p)


def back(t: Table, p: PlayerState) -> Outcome:
    if p.connected:
        return Outcome.ALREADY
    p.connected = True
    p.grace_deadline = None
    p.leaving = False
    if p.seat is None:  # a bettor without a seat, back: as quietly as they went
        return Outcome.CHANGED
    t.emit("reconnected", {"player": p.id})
    return Outcome.CHANGED


def do_restored(t: Table, cmd: c.Restored, ctx: None) -> Outcome:
    """After a restart nobody is connected: spectators are gone (they are not
    stored, and reconnect as spectators), seated players are away from now on, by
    the same path as a lost connection (so, before any Tick, nobody away is taken
    for present: a shoe offered to them from now on is declined at once)."""
    for q in list(t.players.values()):
        if q.seat is None:
            if t.is_bettor(q):  # away, their chips and wagers in play (§5, §8)
                q.connected, q.leaving = False, True
                t._dirty.add(q.id)
            else:
                del t.players[q.id]
    for q in t.seated():
        if q.connected:
            away(t, q)
    t.modes = replace(t.modes, draining=False)  # a new process: not draining until told so
    return Outcome.CHANGED
