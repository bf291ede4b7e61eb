"""The table's state records: the phases and the plain data a table is made of.

What it is for: the records :class:`~server.table.table.Table` keeps (a seated or
watching player, a card on the layout, the coup being dealt, the shoe offer), each plain
data that :mod:`server.table.persistence` stores and restores field by field. The flags
:data:`server.table.flow.NEXT` reads are grouped in small frozen records, each changed
whole by a named step: :class:`Holding` (who holds the shoe, and whether it is to be
offered) and :class:`Modes` (paused, draining).

What it must never do: decide a rule or move money (that is :mod:`server.table.table`'s),
or hold anything that is not plain data (no callables, no references to the wallet).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from server.engine.cards import hand_total

__all__ = [
    "CardSlot",
    "Contributions",
    "CoupStage",
    "CoupState",
    "Holding",
    "Modes",
    "Offer",
    "Phase",
    "PlayerState",
    "TurnStep",
]


class Phase(StrEnum):
    """Where the table is (GAME_RULES §4-§7); every snapshot and lobby line shows it.
    The flow between the phases is drawn in :mod:`server.table.flow`'s docstring."""

    SHUFFLE = "shuffle"  # no shoe: waiting for the croupier's StartShoe
    WAITING = "waiting"  # a shoe but nobody seated
    SHOE_OFFER = "shoe_offer"  # the shoe is being offered to a seated player (§5)
    CUT = "cut"  # the new shoe waits for its cut (§4)
    REVEAL = "reveal"  # cut: the players who committed reveal their values (fairness.md §9)
    BETTING = "betting"  # bets are open (§7)
    DEBITING = "debiting"  # betting closed: the operator's wallet is debiting the wagers
    TURN = "turn"  # cards dealt: the turners turn them (§6)
    PAUSED = "paused"  # the operator paused the table: no new coup until resumed
    CLOSED = "closed"  # closed by the operator


class CoupStage(StrEnum):
    """The coup's stages in dealing order (§2, §6): each hand's two cards, then the
    third cards, each turned by its turner."""

    PLAYER = "player"
    BANKER = "banker"
    PLAYER_THIRD = "player_third"
    BANKER_THIRD = "banker_third"


class TurnStep(StrEnum):
    """The two moments of a stage (§6): the turner is to TOSS or choose a squeeze style
    (CHOOSE), or is squeezing and turns the cards one at a time (SQUEEZE)."""

    CHOOSE = "choose"
    SQUEEZE = "squeeze"


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
    # Stopping play (a break: commands.Stand's on_break) while their wager was in a coup:
    # stand at its end (docs/protocol.md §6 take_break); never offered the shoe meanwhile.
    on_break: bool = False
    #: The session at the operator of the player's last bet (``PlaceBet.wallet_session``),
    #: which their seamless wallet calls carry; replaced whole, never changed in place.
    wallet_session: dict[str, str | None] | None = None


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
    stage: CoupStage = CoupStage.PLAYER
    style: str | None = None  # the squeeze style; None: the turner has not chosen (CHOOSE)
    deadline: float | None = None
    on_behalf: list[dict[str, Any]] = field(default_factory=list)
    last: bool = False
    holder_forfeits: bool = False
    # The last progress shown per card of the stage, "<hand><card>" -> [percent, time]:
    # squeeze progress is coalesced (forward only, at most 4 a second per card).
    progress: dict[str, list[float]] = field(default_factory=dict)
    # A bend that came too soon after the last shown, held back until its time (the
    # latest per card): shown by the next Tick, never lost when the turner stops there.
    bends: dict[str, int] = field(default_factory=dict)

    def hand(self, name: str) -> list[CardSlot]:
        return self.player if name == "player" else self.banker

    @property
    def stage_hand(self) -> str:
        return "player" if self.stage.startswith("player") else "banker"

    @property
    def turn_step(self) -> TurnStep:
        return TurnStep.CHOOSE if self.style is None else TurnStep.SQUEEZE

    def shown_total(self, hand: str) -> int | None:
        """The value of ``hand``'s face-up cards (GAME_RULES §1), None while none is
        up: what each ``card`` event's ``total`` and a snapshot's ``totals`` say."""
        up = [s.card for s in self.hand(hand) if s.up]
        return hand_total(up) if up else None

    def stage_slots(self) -> list[int]:
        """Indexes (0-based) of the cards the current stage turns."""
        return [2] if self.stage.endswith("third") else [0, 1]

    def face_down(self) -> list[int]:
        """Card numbers (1-3) of the stage still face down."""
        slots = self.hand(self.stage_hand)
        return [i + 1 for i in self.stage_slots() if not slots[i].up]


@dataclass(frozen=True, slots=True)
class Holding:
    """Who holds the shoe (§5) and whether it must be offered: ``holder`` (a player, or
    None), ``house`` (the croupier holds it until a Player win), ``coups`` (how many the
    holder has dealt: passing needs one) and ``to_offer`` (a new shoe, or the holder's
    turn is over). Changed only by the steps below, each a new record."""

    holder: str | None = None
    house: bool = False
    coups: int = 0
    to_offer: bool = True

    @property
    def needs_offer(self) -> bool:
        """The shoe is to be offered, or has no holder at all (NEXT's SHOE_OFFER)."""
        return self.to_offer or (self.holder is None and not self.house)

    def lost(self) -> Holding:
        """The holder passed, stood, left or timed out: offer the shoe onward."""
        return replace(self, holder=None, house=False, to_offer=True)

    def offering(self) -> Holding:
        """The offer has started: it is no longer to start."""
        return replace(self, to_offer=False)

    def offer_again(self) -> Holding:
        """Offer the shoe (again): the house's turn is over, or a pause dropped the offer."""
        return replace(self, to_offer=True)

    def taken_by(self, pid: str) -> Holding:
        """``pid`` accepted the shoe: they hold it, no coup dealt yet."""
        return replace(self, holder=pid, house=False, coups=0)

    def house_takes(self) -> Holding:
        """Nobody (else) took the shoe: the house holds it."""
        return replace(self, holder=None, house=True, coups=0)

    def dealt(self) -> Holding:
        """The holder dealt one more coup."""
        return replace(self, coups=self.coups + 1)


@dataclass(frozen=True, slots=True)
class Modes:
    """The operator's and the croupier's switches: ``paused`` (no new coup starts until
    resumed; NEXT's PAUSED) and ``draining`` (the server is closing: new bets refused)."""

    paused: bool = False
    draining: bool = False


@dataclass
class Offer:
    """The shoe offered to ``current`` (at ``seat``) until ``deadline`` (§5). Whoever
    declined in this round of offers is in ``declined``; the next offer goes to the next
    occupied seat after ``seat`` whose player has not declined, so a player who sits
    down during the offers is offered the shoe too."""

    current: str
    seat: int
    deadline: float
    declined: list[str] = field(default_factory=list)


@dataclass
class Contributions:
    """The players' contributions to a seeded shoe (docs/fairness.md §9): commitments
    from ``shoe_started`` until the cut, then, if any were made, the reveal step.

    ``commitments``: player -> their commitment (64 hex digits), in the order made;
    ``values``: player -> the value they revealed (64 hex digits), in the order revealed;
    ``closed``: the cut closed the commitments; ``cut``: the cut waiting for the reveal
    (``{"position", "by", "on_behalf"}``, position None for a timeout cut, which comes
    from the key), None once applied."""

    commitments: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    closed: bool = False
    cut: dict[str, Any] | None = None

    @property
    def revealing(self) -> bool:
        return self.cut is not None

    def withheld(self) -> list[str]:
        """The committed players who did not reveal, in the order they committed."""
        return [p for p in self.commitments if p not in self.values]
