"""Table commands: everything that can change a table, as small frozen dataclasses.

What it is for: a command says who (``player``) wants what, with the client's command
``id`` (a repeated id is answered without being applied twice). Each command checks its
own shape when it is made, like h11's events: a malformed one (a hand that is not
``player`` or ``banker``, an amount that is not a positive whole number, a squeeze style
not in the book...) raises :class:`~server.table.errors.TableError` with the code the
table has always used for it (``bad_hand``, ``bad_amount``, ``bad_style``...), so the
table never re-checks types.

What it must never do: decide whether the move is allowed now (that is the table's:
:data:`server.table.rules.ALLOWED` and the handlers' contextual checks).

``StartShoe``, ``Tick``, ``CloseTable``, ``SetDraining``, ``Restored``, ``VoidRound``,
``Pause`` and ``Resume`` come from the croupier (the last three on an operator's behalf),
never from a client (the table refuses them from anyone else).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from server.engine.cards import CardError, parse_card
from server.engine.payouts import Area
from server.protocol.text import clean_text

from .errors import TableError

__all__ = [
    "AREAS",
    "COMMANDS",
    "CROUPIER",
    "DEBIT_REFUSALS",
    "GATEWAY_FIELDS",
    "HANDS",
    "STYLES",
    "WALLET_SESSION_FIELD",
    "WALLET_SESSION_KEYS",
    "WIRE_COMMANDS",
    "AcceptShoe",
    "Chat",
    "ClearBets",
    "CloseTable",
    "Command",
    "Contribute",
    "Cut",
    "Debited",
    "DeclineShoe",
    "Disconnect",
    "Done",
    "Hand",
    "Join",
    "Leave",
    "PassShoe",
    "Pause",
    "PlaceBet",
    "Progress",
    "Reconnect",
    "RemoveBet",
    "Restored",
    "Resume",
    "SameBet",
    "SetDraining",
    "Sit",
    "Squeeze",
    "SqueezeStyle",
    "Stand",
    "StartShoe",
    "Tick",
    "Toss",
    "TurnCard",
    "VoidRound",
]

Hand = Literal["player", "banker"]
SqueezeStyle = Literal["peek", "side", "quick"]
HANDS: tuple[Hand, ...] = ("player", "banker")
STYLES: tuple[SqueezeStyle, ...] = ("peek", "side", "quick")  # §6
AREAS: frozenset[str] = frozenset(a.value for a in Area)  # §3; which are open is the table's
CROUPIER = "croupier"
SEED_BYTES = 32
#: Fields of a client's command that only a gateway fills in, never the client (the
#: protocol's schemas do not have them): a bet's ``allowance`` and ``wallet_session``, a
#: stand's ``on_break``.
GATEWAY_FIELDS: frozenset[str] = frozenset({"allowance", "on_break", "wallet_session"})
#: The player's session at the operator, as a seamless wallet's calls carry it
#: (docs/wallet.md §3): ``{"session", "brand", "jurisdiction"}``, each a string or None.
WALLET_SESSION_FIELD = "wallet_session"
WALLET_SESSION_KEYS: frozenset[str] = frozenset({"session", "brand", "jurisdiction"})


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _hand(hand: object) -> None:
    if hand not in HANDS:
        raise TableError("bad_hand", "the hand is player or banker")


def _card_number(card: object) -> None:
    if not _whole(card) or not 1 <= card <= 3:  # type: ignore[operator]
        raise TableError("bad_card", "a card is 1 or 2, or 3 for a third card")


def _area(area: object) -> None:
    if area not in AREAS:
        raise TableError("bad_area", f"there is no bet area {area!r}")


def _amount(amount: object) -> None:
    if not _whole(amount) or amount <= 0:  # type: ignore[operator]
        raise TableError("bad_amount", "an amount is a positive whole number of minor units")


def _allowance(allowance: object) -> None:
    """An allowance is the gateway's (never a client's): ``{"kind", "amount",
    "remaining"}``, the player's nearest wager or loss limit (docs/protocol.md
    ``limit_reached``)."""
    if allowance is None:
        return
    if (
        not isinstance(allowance, dict)
        or set(allowance) != {"kind", "amount", "remaining"}
        or not isinstance(allowance["kind"], str)
        or not _whole(allowance["amount"])
        or not _whole(allowance["remaining"])
    ):
        raise TableError("bad_command", "an allowance is a limit's kind, amount and remaining")


def _wallet_session(value: object) -> None:
    """The gateway's (never a client's): the token's session, brand and jurisdiction the
    bet was placed under, which the table keeps for the player's wallet calls."""
    if value is None:
        return
    if (
        not isinstance(value, dict)
        or set(value) != WALLET_SESSION_KEYS
        or not all(v is None or (isinstance(v, str) and len(v) <= 128) for v in value.values())
    ):
        raise TableError("bad_command", "a wallet session is a session, brand and jurisdiction")


@dataclass(frozen=True, kw_only=True, slots=True)
class Command:
    """Who (``player``; the croupier when none) and the client's command ``id``."""

    #: Its name on the wire (docs/protocol.md §6), when a client may send it: the one
    #: place a table command is named (:data:`WIRE_COMMANDS`).
    wire: ClassVar[str | None] = None

    player: str = CROUPIER
    id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.player, str) or not self.player:
            raise TableError("bad_command", "a command names its player")
        if self.id is not None and not isinstance(self.id, str):
            raise TableError("bad_command", "a command id is a string")
        self._check()

    def _check(self) -> None:
        """The command's own fields (subclasses)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Join(Command):
    """Join as a spectator. With ``rejoin``, a player already at the table is taken
    back (as by :class:`Reconnect`) instead of refused: decided by the table, in order,
    so two tabs joining at once both get in."""

    name: str = ""
    rejoin: bool = False

    def _check(self) -> None:
        if not isinstance(self.name, str) or not isinstance(self.rejoin, bool):
            raise TableError("bad_command", "a join has a name and a rejoin flag")


@dataclass(frozen=True, kw_only=True, slots=True)
class Chat(Command):
    """A line of chat from someone at the table, shown to everyone watching it and
    never stored (a transient event). Its words were checked where it came in (the
    gateway: one text check, the length, the rate); the table sequences it among its
    events, so every process of a cluster shows it in the same place."""

    text: str

    def _check(self) -> None:
        if not isinstance(self.text, str) or not self.text:
            raise TableError("bad_chat", "say something")


@dataclass(frozen=True, kw_only=True, slots=True)
class Leave(Command):
    """Leave the table (a seated player stands first)."""

    wire = "leave"


@dataclass(frozen=True, kw_only=True, slots=True)
class Sit(Command):
    """Take ``seat`` (1..seats), or the lowest free seat when None."""

    wire = "sit"

    seat: int | None = None

    def _check(self) -> None:
        if self.seat is not None and (not _whole(self.seat) or self.seat < 1):
            raise TableError("bad_seat", "a seat is a whole number from 1")


@dataclass(frozen=True, kw_only=True, slots=True)
class Stand(Command):
    """Leave your seat, staying as a spectator.

    ``on_break`` is the gateway's, never a client's: the player stops play (a break or
    a self-exclusion, theirs or an operator's, or ``leave`` at a reality check:
    ``server.protection.responsible``), and the gateway stands them up on their behalf. Their
    wager in a coup is no refusal then: they stand once it is settled (the table keeps
    that in the player's ``on_break``, so a restart or a failover keeps it too)."""

    wire = "stand"

    on_break: bool = False

    def _check(self) -> None:
        if not isinstance(self.on_break, bool):
            raise TableError("bad_command", "on_break is true or false")


@dataclass(frozen=True, kw_only=True, slots=True)
class PlaceBet(Command):
    """Add ``amount`` minor units to ``area``."""

    wire = "bet"

    area: str
    amount: int
    #: The player's nearest wager or loss limit, as the gateway found it (for the chips
    #: at every other table): the table refuses chips here beyond ``remaining``.
    allowance: dict[str, object] | None = None
    #: The player's session at the operator the bet was placed under (seamless only).
    wallet_session: dict[str, str | None] | None = None

    def _check(self) -> None:
        _area(self.area)
        _amount(self.amount)
        _allowance(self.allowance)
        _wallet_session(self.wallet_session)


@dataclass(frozen=True, kw_only=True, slots=True)
class RemoveBet(Command):
    """Regret (seed 001): take ``amount`` off ``area``, or all of it when None."""

    wire = "remove_bet"

    area: str
    amount: int | None = None

    def _check(self) -> None:
        _area(self.area)
        if self.amount is not None:
            _amount(self.amount)


@dataclass(frozen=True, kw_only=True, slots=True)
class ClearBets(Command):
    """Take every chip off the layout."""

    wire = "clear_bets"


@dataclass(frozen=True, kw_only=True, slots=True)
class SameBet(Command):
    """Repeat the previous round's bets ("SAME BET", §7); ``allowance`` and
    ``wallet_session`` as :class:`PlaceBet`'s."""

    wire = "same_bet"

    allowance: dict[str, object] | None = None
    wallet_session: dict[str, str | None] | None = None

    def _check(self) -> None:
        _allowance(self.allowance)
        _wallet_session(self.wallet_session)


@dataclass(frozen=True, kw_only=True, slots=True)
class Done(Command):
    """DONE: finished betting (§7)."""

    wire = "done"


@dataclass(frozen=True, kw_only=True, slots=True)
class AcceptShoe(Command):
    """Take the shoe offered to you (§5)."""

    wire = "accept_shoe"


@dataclass(frozen=True, kw_only=True, slots=True)
class DeclineShoe(Command):
    """Decline the shoe offered to you: it goes to the next seat (§5)."""

    wire = "decline_shoe"


@dataclass(frozen=True, kw_only=True, slots=True)
class PassShoe(Command):
    """The holder gives up the shoe between coups, after at least one (§5)."""

    wire = "pass_shoe"


@dataclass(frozen=True, kw_only=True, slots=True)
class Cut(Command):
    """Cut the new shoe at ``position`` (§4: at least 10 cards from either end)."""

    wire = "cut"

    position: int

    def _check(self) -> None:
        if not _whole(self.position):
            raise TableError("bad_cut", "the cut is a whole number of cards")


_HEX_64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Contribute(Command):
    """A player's randomness for the shoe (docs/fairness.md §9): before the cut a
    ``commitment`` (SHA-256 of 32 secret bytes), after it the ``value`` itself; each
    64 lowercase hex digits, one of the two."""

    wire = "contribute"

    commitment: str | None = None
    value: str | None = None

    def _check(self) -> None:
        if (self.commitment is None) == (self.value is None):
            raise TableError("bad_contribution", "send a commitment or a value, one of the two")
        text = self.commitment if self.commitment is not None else self.value
        if not isinstance(text, str) or not _HEX_64.fullmatch(text):
            raise TableError(
                "bad_contribution", "a commitment or a value is 64 lowercase hex digits"
            )


@dataclass(frozen=True, kw_only=True, slots=True)
class Squeeze(Command):
    """Start squeezing the stage's cards of ``hand`` in ``style`` (§6)."""

    wire = "squeeze"

    hand: Hand
    style: SqueezeStyle

    def _check(self) -> None:
        _hand(self.hand)
        if self.style not in STYLES:
            raise TableError("bad_style", "squeeze styles are peek, side and quick")


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnCard(Command):
    """Turn one card: 1 or 2 of a two-card hand, 3 for a third card."""

    wire = "turn"

    hand: Hand
    card: int

    def _check(self) -> None:
        _hand(self.hand)
        _card_number(self.card)


@dataclass(frozen=True, kw_only=True, slots=True)
class Toss(Command):
    """Turn every face-down card of the hand's stage at once."""

    wire = "toss"

    hand: Hand

    def _check(self) -> None:
        _hand(self.hand)


@dataclass(frozen=True, kw_only=True, slots=True)
class Progress(Command):
    """How far the turner has squeezed a card (0-100), shown to the others."""

    wire = "progress"

    hand: Hand
    card: int
    percent: int

    def _check(self) -> None:
        _hand(self.hand)
        _card_number(self.card)
        if not _whole(self.percent) or not 0 <= self.percent <= 100:
            raise TableError("bad_amount", "progress is 0-100")


@dataclass(frozen=True, kw_only=True, slots=True)
class Disconnect(Command):
    """The player's last connection closed. The table decides what that means: a
    seated player keeps the seat for the grace period (§5); a spectator leaves."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Reconnect(Command):
    """A disconnected player is back."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StartShoe(Command):
    """A new shoe from a 32-byte secret ``seed`` (the croupier makes it with ``secrets``),
    or from explicit ``cards`` dealt in exactly that order (a stacked shoe: no cut, no
    burn; for tests and audits)."""

    seed: bytes | None = None
    cards: tuple[str, ...] | None = None

    def _check(self) -> None:
        if (self.seed is None) == (self.cards is None):
            raise TableError("bad_command", "a shoe needs a seed or its cards")
        if self.seed is not None and (
            not isinstance(self.seed, bytes) or len(self.seed) != SEED_BYTES
        ):
            raise TableError("bad_command", f"a shoe seed is {SEED_BYTES} bytes")
        if self.cards is not None:
            if not isinstance(self.cards, tuple):
                raise TableError("bad_command", "a stacked shoe's cards are a tuple")
            try:
                for card in self.cards:
                    parse_card(card)
            except (CardError, TypeError, ValueError) as exc:
                raise TableError("bad_command", str(exc)) from None


@dataclass(frozen=True, kw_only=True, slots=True)
class Tick(Command):
    """Time passes: fire every timer due by ``now`` (the ``now`` given to handle)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CloseTable(Command):
    """The operator closes the table; wagers of a round in progress are refunded (§8)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SetDraining(Command):
    """The server is shutting down (``on``) or not: while draining, the table refuses
    new bets with ``draining`` and running coups finish."""

    on: bool = True

    def _check(self) -> None:
        if not isinstance(self.on, bool):
            raise TableError("bad_command", "draining is on or off")


#: The longest reason an operator may give for a void.
VOID_REASON_MAX = 200


@dataclass(frozen=True, kw_only=True, slots=True)
class VoidRound(Command):
    """The operator voids round ``round_id``, which has not settled, for ``reason``
    (1-200 characters, as the text check of names and chat leaves them:
    ``server.protocol.text``): every wager goes back, the round is recorded void and the
    next one opens under a new id. A settled round cannot be voided."""

    round_id: str = ""
    reason: str = ""

    def _check(self) -> None:
        if not isinstance(self.round_id, str) or not self.round_id:
            raise TableError("bad_command", "a void names its round")
        if (
            not isinstance(self.reason, str)
            or not self.reason.strip()
            or len(self.reason) > VOID_REASON_MAX
        ):
            raise TableError("bad_reason", f"a void's reason is 1-{VOID_REASON_MAX} characters")
        try:
            shown = clean_text(self.reason)  # every player is shown it (the chat's rule)
        except ValueError as exc:
            raise TableError("bad_reason", f"a void's reason: {exc}") from None
        if shown != self.reason:
            raise TableError("bad_reason", "a void's reason is plain text, as chat shows it")


@dataclass(frozen=True, kw_only=True, slots=True)
class Pause(Command):
    """The operator pauses the table: no new coup starts (a coup being dealt, or a
    betting round with chips on the felt, finishes first) until :class:`Resume`."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Resume(Command):
    """The operator resumes a paused table: betting opens again."""


#: Why the operator's wallet did not take a player's wagers (docs/wallet.md §3).
DEBIT_REFUSALS: dict[str, str] = {
    "insufficient_funds": "your wallet does not have enough money for these bets",
    "limit_reached": "these bets would go over a limit on your account",
    "player_blocked": "your account cannot place bets now",
    "account_locked": "your account is locked; the operator can say why",
    "session_expired": "your session has ended; log in again to play",
    "unknown_player": "the operator does not know your account",
    "currency_mismatch": "your account is not in this table's currency",
    "wallet_unavailable": "your wallet did not answer in time; your bets were not placed",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Debited(Command):
    """The operator's wallet answered the debits of round ``round_id`` (or their time ran
    out): each player in ``refused`` (player -> one of :data:`DEBIT_REFUSALS`) plays no
    part in the coup; every other wager being debited stands."""

    round_id: str = ""
    refused: dict[str, str] = field(default_factory=dict)

    def _check(self) -> None:
        if not isinstance(self.round_id, str) or not isinstance(self.refused, dict):
            raise TableError("bad_command", "debits are answered for a round, by player")
        for pid, reason in self.refused.items():
            if not isinstance(pid, str) or reason not in DEBIT_REFUSALS:
                raise TableError("bad_command", f"not a debit refusal: {reason!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Restored(Command):
    """The table was restored after the server stopped: nobody is connected yet. Every
    seated player is marked disconnected (the grace period starts now, §5) as by
    :class:`Disconnect`, and spectators are sent away. The croupier sends it before
    anything else, before any Tick, so no offer is made to someone taken for present."""


#: Every table command, in the order defined here: the one list of them (each one's
#: check and do are named in :data:`server.table.dispatch.HANDLERS`).
#: (A slots dataclass is made anew, so each class is taken as the module names it.)
COMMANDS: tuple[type[Command], ...] = tuple(
    cls for cls in Command.__subclasses__() if globals().get(cls.__name__) is cls
)


#: The table command each wire name a client may send becomes (docs/protocol.md §6),
#: made from the commands' own ``wire`` names. A gateway relays them to the table's
#: owner (all but ``leave``, which the owner handles itself: ``server.croupier``), whose
#: :data:`server.protocol.messages.SCHEMAS` entries give the same fields
#: (tests/server/test_vocabulary.py).
WIRE_COMMANDS: dict[str, type[Command]] = {
    cls.wire: cls for cls in COMMANDS if cls.wire is not None
}
