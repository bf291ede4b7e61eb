"""Events a table emits, and the record a step returns.

An :class:`Event` has public ``data`` everyone may see and an optional ``private``
overlay per player (a turner's squeezed cards, a player's own balance, the actions
they may take now). Everything sent to anyone passes through
:func:`server.table.views.view_event`. Undealt cards, burned cards and a shoe's seed
before its reveal are never put in an event at all.

An event's data is its own: the table copies what it emits, so nothing an event holds
is shared with the table's state (changing one can never change the other).

A **transient** event (:data:`TRANSIENT_KINDS`: a squeezed card's bend, a chat line) is shown to the
watchers and never stored: it takes no ``seq`` of its own (its ``seq`` is the table's
when it was made, the stored event it follows), a resume does not replay it, and a step
made only of transient events is not committed (docs/protocol.md, "progress").

A :class:`Step` is what :meth:`server.table.Table.handle` returns: the step's events and
what the shell needs to know after it, so that it never reads the live table. Each
command's *do* (:data:`server.table.dispatch.HANDLERS`) returns an :class:`Outcome`:
whether it changed the table, or found it so already (the step's ``duplicate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["EVENT_KINDS", "TRANSIENT_KINDS", "Event", "Outcome", "Step", "plain_copy"]

#: Every kind of stored event a table emits (docs/protocol.md §8 documents each; the
#: transient kinds are not among them).
EVENT_KINDS: frozenset[str] = frozenset(
    {
        # the shoe
        "shoe_started",
        "shoe_offered",
        "shoe_accepted",
        "shoe_declined",
        "shoe_held_by_house",
        "shoe_passed",
        "cut_offered",
        "shoe_cut",
        "contribution_committed",
        "reveal_opened",
        "contribution_revealed",
        "contributions_closed",
        "burned",
        "stop_card",
        "shoe_ended",
        # players
        "sat",
        "stood",
        "stand_after_coup",
        "disconnected",
        "reconnected",
        "waiting",
        # betting
        "betting_opened",
        "bets",
        "done",
        "betting_waiting",
        "betting_timer",
        "betting_closed",
        "debiting",
        "debit_refused",
        # the coup
        "dealt",
        "turn",
        "squeeze",
        "card",
        "third_card",
        "result",
        "settled",
        # the table
        "draining",
        "paused",
        "resumed",
        "voided",
        "closed",
    }
)

#: The kinds that are shown and never stored, each sent as a message of that type
#: (docs/protocol.md §6 "progress" and "chat"): a squeeze's bend, coalesced to 4 a
#: second a card, is a third of a busy table's steps and of no use once the card is
#: turned; a chat line was never kept.
TRANSIENT_KINDS: frozenset[str] = frozenset({"progress", "chat"})


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    kind: str
    data: dict[str, Any]
    private: dict[str, dict[str, Any]] | None = None
    #: Shown, never stored (:data:`TRANSIENT_KINDS`); ``seq`` is the stored event's it
    #: follows.
    transient: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The full event, private parts included: for the store (which keeps no
        transient one) or the bus, never for a client."""
        d = {"seq": self.seq, "kind": self.kind, "data": self.data, "private": self.private}
        if self.transient:
            d["transient"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Event:
        return cls(
            int(d["seq"]),
            str(d["kind"]),
            dict(d["data"]),
            d.get("private"),
            d.get("transient") is True,
        )


class Outcome(Enum):
    """What a command's *do* did: ``CHANGED`` the table (the step's events, if any, say
    how; a Tick with nothing due changes only the time), or found it ``ALREADY`` so (a
    second DONE, a pause while paused, a reconnect while connected): nothing changed,
    and the step is answered ``duplicate: true`` (:attr:`Step.duplicate`)."""

    CHANGED = "changed"
    ALREADY = "already"


@dataclass(frozen=True, slots=True)
class Step:
    """The result of one command.

    ``events``: what it caused, in ``seq`` order (empty for a duplicate, a refused
    command never returns); a transient one among them has the seq of the event before
    it (:attr:`stored` are the others). ``duplicate``: the command's id was used before, or it
    changed nothing (a second DONE): the protocol answers ``duplicate: true``.
    ``seq``: the table's ``seq`` after the step. ``coup_in_progress``: a coup is being
    dealt, or its wagers debited (a draining server waits for it to finish).
    """

    events: tuple[Event, ...]
    duplicate: bool
    seq: int
    coup_in_progress: bool

    @property
    def stored(self) -> list[Event]:
        """The events the store keeps: all but the transient ones."""
        return [e for e in self.events if not e.transient]


_CONTAINERS = (dict, list, tuple)


def plain_copy(value: Any) -> Any:
    """A deep copy of plain data (dicts, lists and tuples of scalars; tuples become
    lists), fast: scalars are not even looked into."""
    kind = type(value)
    if kind is dict:
        return {k: plain_copy(v) if type(v) in _CONTAINERS else v for k, v in value.items()}
    if kind is list or kind is tuple:
        return [plain_copy(v) if type(v) in _CONTAINERS else v for v in value]
    return value
