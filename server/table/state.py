"""The table's state records: the phases and the plain data a table is made of.

What it is for: the records :class:`~server.table.table.Table` keeps (a seated or
watching player, a card on the layout, the coup being dealt, the shoe offer), each plain
data that :mod:`server.table.persistence` stores and restores field by field.

What it must never do: decide a rule or move money (that is :mod:`server.table.table`'s),
or hold anything that is not plain data (no callables, no references to the wallet).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["CardSlot", "CoupState", "Offer", "Phase", "PlayerState"]


class Phase(StrEnum):
    SHUFFLE = "shuffle"  # waiting for the croupier's StartShoe
    WAITING = "waiting"  # a shoe but nobody seated
    SHOE_OFFER = "shoe_offer"
    CUT = "cut"
    BETTING = "betting"
    TURN = "turn"  # cards dealt: the turners turn them (§6)
    CLOSED = "closed"


@dataclass
class PlayerState:
    id: str
    name: str
    seat: int | None = None
    connected: bool = True
    grace_deadline: float | None = None
    bets: dict[str, int] = field(default_factory=dict)
    bet_order: dict[str, int] = field(default_factory=dict)  # when each area reached its amount
    done: bool = False
    last_bets: dict[str, int] = field(default_factory=dict)
    leaving: bool = False  # grace ran out during a coup: stand at its end


@dataclass
class CardSlot:
    card: str
    up: bool = False
    by: str | None = None
    on_behalf: str | None = None


@dataclass
class CoupState:
    round_id: str
    coup_no: int
    player: list[CardSlot]
    banker: list[CardSlot]
    turners: dict[str, str | None]
    held: dict[str, dict[str, int]]
    balances_before: dict[str, int]
    holder: str | None
    stage: str = "player"  # player | banker | player_third | banker_third
    style: str | None = None
    deadline: float | None = None
    on_behalf: list[dict[str, Any]] = field(default_factory=list)
    last: bool = False
    holder_forfeits: bool = False

    def hand(self, name: str) -> list[CardSlot]:
        return self.player if name == "player" else self.banker

    @property
    def stage_hand(self) -> str:
        return "player" if self.stage.startswith("player") else "banker"

    def stage_slots(self) -> list[int]:
        """Indexes (0-based) of the cards the current stage turns."""
        return [2] if self.stage.endswith("third") else [0, 1]


@dataclass
class Offer:
    queue: list[str]
    current: str
    deadline: float
