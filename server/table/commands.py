"""Table commands: everything that can change a table, as small frozen dataclasses.

Player commands carry the acting ``player`` and the client's command ``id`` (a
repeated id is answered without being applied twice). ``StartShoe``, ``Tick`` and
``CloseTable`` come from the croupier, never from a client. Commands validate only
their own shape here; whether the move is allowed right now is the table's decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "AcceptShoe",
    "ClearBets",
    "CloseTable",
    "Command",
    "Cut",
    "DeclineShoe",
    "Disconnect",
    "Done",
    "Hand",
    "Join",
    "Leave",
    "PassShoe",
    "PlaceBet",
    "Progress",
    "Reconnect",
    "RemoveBet",
    "SameBet",
    "Sit",
    "Squeeze",
    "Stand",
    "StartShoe",
    "Tick",
    "Toss",
    "TurnCard",
]

Hand = Literal["player", "banker"]
SqueezeStyle = Literal["peek", "side", "quick"]
CROUPIER = "croupier"


@dataclass(frozen=True, kw_only=True, slots=True)
class Command:
    player: str = CROUPIER
    id: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Join(Command):
    """Join as a spectator. With ``rejoin``, a player already at the table is taken
    back (as by :class:`Reconnect`) instead of refused: decided by the table, in order,
    so two tabs joining at once both get in."""

    name: str = ""
    rejoin: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Leave(Command):
    pass


@dataclass(frozen=True, kw_only=True, slots=True)
class Sit(Command):
    seat: int | None = None  # None: the lowest free seat


@dataclass(frozen=True, kw_only=True, slots=True)
class Stand(Command):
    pass


@dataclass(frozen=True, kw_only=True, slots=True)
class PlaceBet(Command):
    area: str
    amount: int


@dataclass(frozen=True, kw_only=True, slots=True)
class RemoveBet(Command):
    """Regret (seed 001): take ``amount`` off ``area``, or all of it when None."""

    area: str
    amount: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ClearBets(Command):
    pass


@dataclass(frozen=True, kw_only=True, slots=True)
class SameBet(Command):
    """Repeat the previous round's bets ("SAME BET", §7)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Done(Command):
    pass


@dataclass(frozen=True, kw_only=True, slots=True)
class AcceptShoe(Command):
    pass


@dataclass(frozen=True, kw_only=True, slots=True)
class DeclineShoe(Command):
    pass


@dataclass(frozen=True, kw_only=True, slots=True)
class PassShoe(Command):
    pass


@dataclass(frozen=True, kw_only=True, slots=True)
class Cut(Command):
    position: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Squeeze(Command):
    hand: str
    style: str


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnCard(Command):
    """Turn one card: 1 or 2 of a two-card hand, 3 for a third card."""

    hand: str
    card: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Toss(Command):
    """Turn every face-down card of the hand at once."""

    hand: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Progress(Command):
    """How far the turner has squeezed a card (0-100), shown to the others."""

    hand: str
    card: int
    percent: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Disconnect(Command):
    pass


@dataclass(frozen=True, kw_only=True, slots=True)
class Reconnect(Command):
    pass


@dataclass(frozen=True, kw_only=True, slots=True)
class StartShoe(Command):
    """A new shoe from a 32-byte secret ``seed`` (the croupier makes it with ``secrets``),
    or from explicit ``cards`` dealt in exactly that order (a stacked shoe: no cut, no
    burn; for tests and audits)."""

    seed: bytes | None = None
    cards: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Tick(Command):
    """Time passes: fire every timer due by ``now`` (the ``now`` given to handle)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CloseTable(Command):
    """The operator closes the table; wagers of a round in progress are refunded (§8)."""
