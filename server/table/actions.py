"""Keeping each player's ``you.actions`` current: what changed in a step, and to whom
it is sent.

What it is for: after every step the table tells each tracked player (the seated,
anyone with chips on the table, every spectator of a table that takes bettors without
a seat, and in the reveal whoever committed and has not revealed: :func:`kept_current`)
their actions (:func:`server.table.rules.actions`)
whenever they differ from the last it sent them, in a private overlay on the step's
last event, so no client copies a rule. Making everyone's actions after every step
would be slow, so :class:`SentActions` looks only at the players a step may have
changed (:func:`watch`, before and after it) and compares what their actions are made
from (:func:`actions_key`) with what it was when they were last sent; the stored state
keeps a short digest of each (``sent_actions``), so a restored table does not send
them again.

What it must never do: decide a rule (the bounds are :mod:`server.table.rules`'s) or
change the table; it only changes the step's last event and its own record of what
was sent. tests/table/test_actions.py checks that every seated player's last actions
received are their actions now.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from server.vocabulary import commands as c
from server.vocabulary.events import Event

from . import rules
from .state import Phase, PlayerState

if TYPE_CHECKING:
    from .table import Table

__all__ = ["SentActions", "actions_key", "kept_current", "watch"]

# Commands after which who is seated may have changed (so whose actions to track).
_SEAT_CHANGES = (c.Sit, c.Stand, c.Leave, c.Disconnect, c.Tick, c.Restored, c.CloseTable)
# Commands that never change their sender's own actions (DONE stays listed, connection
# and squeeze progress are not in them): only what they cause elsewhere is looked at.
_QUIET = (c.Done, c.Progress, c.Disconnect, c.Reconnect, c.Join, c.Tick)


#: How many of :func:`watch`'s first values concern everyone; the named players' follow.
_EVERYONE = 4
#: Where :func:`watch` names players (who holds the shoe, is offered it, cuts, turns).
_NAMED = slice(_EVERYONE, _EVERYONE + 5)


def watch(t: Table) -> tuple[Any, ...]:
    """What players' actions depend on beyond their own seat, chips and money. The
    first four (the phase, draining, which coup of which shoe: a coup the croupier
    deals and settles at once leaves the phase as it was; and whether the table has
    room for another bettor without a seat, §5) concern everyone; then the players
    they name (who holds the shoe, is offered it, cuts, turns), the turn's moment (the
    turner's), and last the seats taken (a spectator's ``sit``)."""
    coup = t.coup
    offer = t.offer
    holding = t.holding  # (read once: its holder and coups are two of the values)
    room = t.options.bettors
    if coup is None:
        turn: tuple[Any, ...] = (None, None, None, 0)
    else:
        hand = coup.stage_hand
        slots = coup.hand(hand)
        turn = (
            coup.turners[hand],
            coup.stage,
            coup.style,
            sum(1 for i in coup.stage_slots() if slots[i].up),
        )
    return (
        t.phase,
        t.modes.draining,
        (t.shoe_no, t.coup_no),
        room > 0 and t.bettor_count() < room,
        holding.holder,
        holding.coups > 0,
        offer.current if offer is not None else None,
        t.cut_offered_to,
        *turn,
        t.seats(),
    )


def actions_key(t: Table, p: PlayerState) -> tuple[Any, ...]:
    """Everything :func:`~server.table.rules.actions` of seated player ``p`` is made
    from: equal keys, equal actions (what the rules' refusals and bounds read, not the
    rules themselves). The table compares keys to know whose actions changed in a step
    without making them (tests/table/test_actions.py holds the two together)."""
    k = t.contributions
    mine = None if k is None else (k.closed, k.revealing, p.id in k.commitments, p.id in k.values)
    if p.seat is None and not p.bets and not t.wager_in_play(p):
        # (a contribution is theirs only if they committed one, seated then)
        return (*_watching_key(t, p), mine if k is not None and p.id in k.commitments else None)
    seats = None if p.seat is not None else tuple(t.free_seats())  # a spectator's sit
    return (*_phase_key(t, p), mine, seats)


def _watching_key(t: Table, p: PlayerState) -> tuple[Any, ...]:
    """:func:`actions_key` of a spectator with nothing in play (their contribution
    aside): the same in every phase but BETTING, where they may bet without a seat if the
    table has room for them (§5), so a spectator hears of a phase change only when
    betting opens or closes (a thousand watchers are not sent their unchanged actions at
    every stage of every coup)."""
    betting = None
    if t.phase is Phase.BETTING:
        room = rules.bettor_refusal(t, p) is None
        betting = (t.draining, room, _funds(t, p), tuple(p.last_bets.items()))
    return ("watching", t.phase is Phase.CLOSED, betting, tuple(t.free_seats()))


def kept_current(t: Table, p: PlayerState) -> bool:
    """Whether the table keeps ``p``'s actions current (sends them when they change):
    seated, with chips on the table or held in the coup, anyone at a table that takes
    bettors without a seat (§5: every spectator may bet), or, in the reveal, a player
    who committed to the shoe and has not revealed, seated or not (docs/fairness.md §9:
    one who stood up after committing still reveals, and their actions say so)."""
    if p.seat is not None or p.bets or t.options.bettors > 0:
        return True
    coup = t.coup
    if coup is not None and p.id in coup.held:
        return True
    k = t.contributions
    return k is not None and k.revealing and p.id in k.commitments and p.id not in k.values


def _phase_key(t: Table, p: PlayerState) -> tuple[Any, ...]:
    """:func:`actions_key` but the player's contribution (docs/fairness.md §9)."""
    phase = t.phase
    coup = t.coup
    pid = p.id
    in_play = t.wager_in_play(p)  # (a coup's, or one being debited: its wagers or shoe)
    if phase is Phase.BETTING:
        return (
            "betting",
            in_play,
            t.draining,
            pid == t.holder,
            t.holder_coups > 0,
            _funds(t, p),
            tuple(p.bets.items()),
            tuple(p.last_bets.items()),
        )
    if phase is Phase.TURN and coup is not None:
        hand = coup.stage_hand
        if coup.turners[hand] != pid:
            return ("turn", in_play)
        return ("turn", in_play, hand, coup.style, tuple(coup.face_down()))
    if phase is Phase.SHOE_OFFER:
        return ("shoe_offer", in_play, t.offer is not None and t.offer.current == pid)
    if phase is Phase.CUT:
        return ("cut", in_play, t.cutter == pid, t.shoe.size if t.shoe is not None else 0)
    return (phase.value, in_play)


def _funds(t: Table, p: PlayerState) -> int:
    """What of ``p``'s money (``available``: the balance less the chips on the felt, §7)
    their actions are made from: the bets' ``max`` is the area's room or the funds,
    whichever is less, and SAME BET needs the last bets' sum
    (:func:`~server.table.rules.bet_bounds`), so any funds of at least the largest of
    those give the same actions, and count as that one amount. Most of a thousand
    bettors have that much, and so share one key a settlement (issue 37 §3), where their
    balances, each their own, made each one's actions apart."""
    enough = t.most_on_an_area
    last = sum(p.last_bets.values())
    return min(t.available(p.id), enough if enough > last else last)


def _digest(key: tuple[Any, ...]) -> str:
    """A short, stable fingerprint of what a player's actions were made from (what the
    state keeps): the length and CRC-32 of the key's text."""
    text = repr(key)
    return f"{len(text)}:{zlib.crc32(text.encode()):08x}"


class SentActions:
    """What the table last sent each tracked player of their actions."""

    def __init__(self) -> None:
        # A digest of the actions last sent to each player the table keeps current
        # (the seated, and anyone with chips on the table): the stored ``sent_actions``.
        # (A digest of what the actions were made from, actions_key. The keys are kept
        # in memory; their digests are made when the state is taken.)
        self.digests: dict[str, str] = {}
        self._keys: dict[str, tuple[Any, ...]] = {}
        self._undigested: set[str] = set()

    def stored(self) -> dict[str, str]:
        """The digests, for the stored state (made now, once per change, not per step)."""
        for pid in self._undigested:
            self.digests[pid] = _digest(self._keys[pid])
        self._undigested.clear()
        return self.digests

    def forget(self, pid: str) -> None:
        """``pid`` left the table: nothing more is sent to them (every spectator of a
        table that takes bettors without a seat is tracked: none may stay behind)."""
        self.digests.pop(pid, None)
        self._keys.pop(pid, None)
        self._undigested.discard(pid)

    def stored_for(self, pids: list[str]) -> dict[str, str]:
        """The digests of ``pids`` only (the stored row's: its seated players; a
        spectator's, or a bettor's without a seat, would make every row grow with the
        audience, and after a restart they join again and get their actions anyway)."""
        undigested, digests = self._undigested, self.digests
        for pid in pids if undigested else ():  # (made now, once per change)
            if pid in undigested:
                digests[pid] = _digest(self._keys[pid])
                undigested.discard(pid)
        return {pid: digests[pid] for pid in pids if pid in digests}

    def refresh(
        self,
        t: Table,
        cmd: c.Command,
        before: tuple[Any, ...],
        events: list[Event],
        also: Iterable[str] = (),
    ) -> None:
        """Keep clients current without re-deriving rules: every tracked player
        (:func:`kept_current`) whose actions differ from the last the table sent them
        gets them in a private overlay on the step's last event (``events[-1]``). A
        player who stops being tracked (stood up, revealed) gets their spectator actions
        once.
        Only the players a step may have changed are looked at (``before`` is
        :func:`watch` before the step)."""
        sent, keys = self.digests, self._keys
        after = watch(t)
        everyone = t.options.bettors > 0  # every spectator is kept current (§5)
        if before[:_EVERYONE] != after[:_EVERYONE]:
            who = {q.id for q in t.seated()} | set(sent) | set(keys)
            if everyone:
                who |= set(t.players)
            if t.contributions is not None:  # a reveal opening: who committed, seated or not
                who |= set(t.contributions.commitments)
        else:
            who = set() if isinstance(cmd, _QUIET) else {cmd.player}
            if before != after:  # the players named, before and after
                who.update(x for x in (*before[_NAMED], *after[_NAMED]) if type(x) is str)
            if isinstance(cmd, _SEAT_CHANGES) and before[-1] != after[-1]:
                # sat down, or no longer seated; and every spectator's free seats
                who |= {q.id for q in t.seated()} ^ (set(sent) | set(keys))
                if everyone:
                    who |= set(t.players)
        who.update(also)  # (the bettors of a burst: Table.flush_bettors)
        if not who:
            return
        overlay: dict[str, dict[str, Any]] = {}
        # Equal keys, equal actions (actions_key): made once a step for each key. At a
        # settlement of a thousand bettors and a thousand watchers nearly all share a few
        # keys, and making each one's was most of the step (issue 37 §3). The players
        # given one key share its overlay, and it is their private part itself where the
        # event has no other for them (an event's private parts are never changed): the
        # hub encodes a part once for all who share it (server/gateway/hub.py).
        made: dict[tuple[Any, ...], dict[str, Any]] = {}
        for pid in sorted(who) if len(who) > 1 else who:
            p = t.players.get(pid)
            tracked = p is not None and kept_current(t, p)
            if not tracked:
                # (and the sender, whose step may have changed their actions though the
                # table did not keep them: a reveal after a restart and a join again)
                if pid in sent or pid in keys or pid == cmd.player:
                    sent.pop(pid, None)
                    keys.pop(pid, None)
                    self._undigested.discard(pid)
                    if p is not None:
                        overlay[pid] = {"actions": rules.actions(t, pid)}
                continue
            assert p is not None
            key = actions_key(t, p)  # what their actions are made from
            known = keys.get(pid)
            if key == known:
                continue
            keys[pid] = key
            if known is None and pid in sent and sent[pid] == _digest(key):
                continue  # restored: the state's digest says they have these already
            self._undigested.add(pid)
            acts = made.get(key)
            if acts is None:
                acts = made[key] = {"actions": rules.actions(t, pid)}  # made fresh: the event's
            overlay[pid] = acts
        if overlay:
            last = events[-1]
            private = dict(last.private or {})
            for pid, extra in overlay.items():
                mine = private.get(pid)
                private[pid] = extra if mine is None else {**mine, **extra}
            events[-1] = Event(last.seq, last.kind, last.data, private)
