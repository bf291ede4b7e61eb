"""Table commands: everything that can change a table, as small frozen dataclasses.

What it is for: a command says who (``player``) wants what, with the client's command
``id`` (a repeated id is answered without being applied twice). Each command checks its
own shape when it is made, like h11's events: each field declares its check
(``amount: Annotated[int, _AMOUNT]``, each check written once below), so a malformed
command (a hand that is not ``player`` or ``banker``, an amount that is not a positive
whole number, a squeeze style not in the book...) raises
:class:`~server.vocabulary.errors.TableError` with the code the table has always used for it
(``bad_hand``, ``bad_amount``, ``bad_style``...), and the table never re-checks types.

What it must never do: decide whether the move is allowed now (that is the table's:
:data:`server.table.rules.ALLOWED` and the handlers' contextual checks).

``StartShoe``, ``Tick``, ``CloseTable``, ``SetDraining``, ``Restored``, ``VoidRound``,
``Pause`` and ``Resume`` come from the croupier (the last three on an operator's behalf),
never from a client (the table refuses them from anyone else).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, ClassVar, Literal, get_type_hints

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


#: A field's check, declared on the field (``Annotated[int, _AMOUNT]``) and run when the
#: command is made: raises :class:`TableError` when the value has not the field's shape
#: (a field whose default is None may be None).
Check = Callable[[Any], None]


_CARD_MESSAGE = "a card is 1 or 2, or 3 for a third card"
_AMOUNT_MESSAGE = "an amount is a positive whole number of minor units"


def _must(ok: Callable[[Any], bool], refusal: TableError) -> Check:
    """The check refusing what ``ok`` does not accept with ``refusal`` (a fresh copy)."""

    def check(value: Any) -> None:
        if not ok(value):
            raise TableError(refusal.code, refusal.message)

    return check


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _flag(refusal: TableError) -> Check:  # true or false
    return _must(lambda v: isinstance(v, bool), refusal)


def _text(refusal: TableError) -> Check:  # a string, not empty
    return _must(lambda v: isinstance(v, str) and v != "", refusal)


_HAND = _must(lambda v: v in HANDS, TableError("bad_hand", "the hand is player or banker"))
_STYLE = _must(
    lambda v: v in STYLES, TableError("bad_style", "squeeze styles are peek, side and quick")
)
_CARD = _must(lambda v: _whole(v) and 1 <= v <= 3, TableError("bad_card", _CARD_MESSAGE))
_AMOUNT = _must(lambda v: _whole(v) and v > 0, TableError("bad_amount", _AMOUNT_MESSAGE))
_PERCENT = _must(
    lambda v: _whole(v) and 0 <= v <= 100, TableError("bad_amount", "progress is 0-100")
)
_SEAT = _must(
    lambda v: _whole(v) and v >= 1, TableError("bad_seat", "a seat is a whole number from 1")
)
_CUT = _must(_whole, TableError("bad_cut", "the cut is a whole number of cards"))
_HEX_64 = _must(
    lambda v: isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) is not None,
    TableError("bad_contribution", "a commitment or a value is 64 lowercase hex digits"),
)
_SEED = _must(
    lambda v: isinstance(v, bytes) and len(v) == SEED_BYTES,
    TableError("bad_command", f"a shoe seed is {SEED_BYTES} bytes"),
)


def _area(area: object) -> None:
    if area not in AREAS:
        raise TableError("bad_area", f"there is no bet area {area!r}")


def _allowance(allowance: object) -> None:
    """An allowance is the gateway's (never a client's): ``{"kind", "amount",
    "remaining"}``, the player's nearest wager or loss limit (docs/protocol.md
    ``limit_reached``)."""
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
        for name, check, optional in _CHECKS.get(type(self), ()):
            value = getattr(self, name)
            if value is not None or not optional:
                check(value)

    def _check(self) -> None:
        """What no one field says (subclasses: one of two fields), before the fields'."""


_JOIN = TableError("bad_command", "a join has a name and a rejoin flag")


@dataclass(frozen=True, kw_only=True, slots=True)
class Join(Command):
    """Join as a spectator. With ``rejoin``, a player already at the table is taken
    back (as by :class:`Reconnect`) instead of refused: decided by the table, in order,
    so two tabs joining at once both get in."""

    name: Annotated[str, _must(lambda v: isinstance(v, str), _JOIN)] = ""
    rejoin: Annotated[bool, _flag(_JOIN)] = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Chat(Command):
    """A line of chat from someone at the table, shown to everyone watching it and
    never stored (a transient event). Its words were checked where it came in (the
    gateway: one text check, the length, the rate); the table sequences it among its
    events, so every process of a cluster shows it in the same place."""

    text: Annotated[str, _text(TableError("bad_chat", "say something"))]


@dataclass(frozen=True, kw_only=True, slots=True)
class Leave(Command):
    """Leave the table (a seated player stands first)."""

    wire = "leave"


@dataclass(frozen=True, kw_only=True, slots=True)
class Sit(Command):
    """Take ``seat`` (1..seats), or the lowest free seat when None."""

    wire = "sit"

    seat: Annotated[int | None, _SEAT] = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Stand(Command):
    """Leave your seat, staying as a spectator.

    ``on_break`` is the gateway's, never a client's: the player stops play (a break or
    a self-exclusion, theirs or an operator's, or ``leave`` at a reality check:
    ``server.protection.responsible``), and the gateway stands them up on their behalf. Their
    wager in a coup is no refusal then: they stand once it is settled (the table keeps
    that in the player's ``on_break``, so a restart or a failover keeps it too)."""

    wire = "stand"

    on_break: Annotated[bool, _flag(TableError("bad_command", "on_break is true or false"))] = False


@dataclass(frozen=True, kw_only=True, slots=True)
class PlaceBet(Command):
    """Add ``amount`` minor units to ``area``."""

    wire = "bet"

    area: Annotated[str, _area]
    amount: Annotated[int, _AMOUNT]
    #: The player's nearest wager or loss limit, as the gateway found it (for the chips
    #: at every other table): the table refuses chips here beyond ``remaining``.
    allowance: Annotated[dict[str, object] | None, _allowance] = None
    #: The player's session at the operator the bet was placed under (seamless only).
    wallet_session: Annotated[dict[str, str | None] | None, _wallet_session] = None


@dataclass(frozen=True, kw_only=True, slots=True)
class RemoveBet(Command):
    """Regret (seed 001): take ``amount`` off ``area``, or all of it when None."""

    wire = "remove_bet"

    area: Annotated[str, _area]
    amount: Annotated[int | None, _AMOUNT] = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ClearBets(Command):
    """Take every chip off the layout."""

    wire = "clear_bets"


@dataclass(frozen=True, kw_only=True, slots=True)
class SameBet(Command):
    """Repeat the previous round's bets ("SAME BET", §7); ``allowance`` and
    ``wallet_session`` as :class:`PlaceBet`'s."""

    wire = "same_bet"

    allowance: Annotated[dict[str, object] | None, _allowance] = None
    wallet_session: Annotated[dict[str, str | None] | None, _wallet_session] = None


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

    position: Annotated[int, _CUT]


@dataclass(frozen=True, kw_only=True, slots=True)
class Contribute(Command):
    """A player's randomness for the shoe (docs/fairness.md §9): before the cut a
    ``commitment`` (SHA-256 of 32 secret bytes), after it the ``value`` itself; each
    64 lowercase hex digits, one of the two."""

    wire = "contribute"

    commitment: Annotated[str | None, _HEX_64] = None
    value: Annotated[str | None, _HEX_64] = None

    def _check(self) -> None:
        if (self.commitment is None) == (self.value is None):
            raise TableError("bad_contribution", "send a commitment or a value, one of the two")


@dataclass(frozen=True, kw_only=True, slots=True)
class Squeeze(Command):
    """Start squeezing the stage's cards of ``hand`` in ``style`` (§6)."""

    wire = "squeeze"

    hand: Annotated[Hand, _HAND]
    style: Annotated[SqueezeStyle, _STYLE]


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnCard(Command):
    """Turn one card: 1 or 2 of a two-card hand, 3 for a third card."""

    wire = "turn"

    hand: Annotated[Hand, _HAND]
    card: Annotated[int, _CARD]


@dataclass(frozen=True, kw_only=True, slots=True)
class Toss(Command):
    """Turn every face-down card of the hand's stage at once."""

    wire = "toss"

    hand: Annotated[Hand, _HAND]


@dataclass(frozen=True, kw_only=True, slots=True)
class Progress(Command):
    """How far the turner has squeezed a card (0-100), shown to the others."""

    wire = "progress"

    hand: Annotated[Hand, _HAND]
    card: Annotated[int, _CARD]
    percent: Annotated[int, _PERCENT]


@dataclass(frozen=True, kw_only=True, slots=True)
class Disconnect(Command):
    """The player's last connection closed. The table decides what that means: a
    seated player keeps the seat for the grace period (§5); a spectator leaves."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Reconnect(Command):
    """A disconnected player is back."""


def _stacked(cards: object) -> None:
    if not isinstance(cards, tuple):
        raise TableError("bad_command", "a stacked shoe's cards are a tuple")
    try:
        for card in cards:
            parse_card(card)
    except (CardError, TypeError, ValueError) as exc:
        raise TableError("bad_command", str(exc)) from None


@dataclass(frozen=True, kw_only=True, slots=True)
class StartShoe(Command):
    """A new shoe from a 32-byte secret ``seed`` (the croupier makes it with ``secrets``),
    or from explicit ``cards`` dealt in exactly that order (a stacked shoe: no cut, no
    burn; for tests and audits)."""

    seed: Annotated[bytes | None, _SEED] = None
    cards: Annotated[tuple[str, ...] | None, _stacked] = None

    def _check(self) -> None:
        if (self.seed is None) == (self.cards is None):
            raise TableError("bad_command", "a shoe needs a seed or its cards")


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

    on: Annotated[bool, _flag(TableError("bad_command", "draining is on or off"))] = True


#: The longest reason an operator may give for a void.
VOID_REASON_MAX = 200


def _void_reason(reason: object) -> None:
    if not isinstance(reason, str) or not reason.strip() or len(reason) > VOID_REASON_MAX:
        raise TableError("bad_reason", f"a void's reason is 1-{VOID_REASON_MAX} characters")
    try:
        shown = clean_text(reason)  # every player is shown it (the chat's rule)
    except ValueError as exc:
        raise TableError("bad_reason", f"a void's reason: {exc}") from None
    if shown != reason:
        raise TableError("bad_reason", "a void's reason is plain text, as chat shows it")


@dataclass(frozen=True, kw_only=True, slots=True)
class VoidRound(Command):
    """The operator voids round ``round_id``, which has not settled, for ``reason``
    (1-200 characters, as the text check of names and chat leaves them:
    ``server.protocol.text``): every wager goes back, the round is recorded void and the
    next one opens under a new id. A settled round cannot be voided."""

    round_id: Annotated[str, _text(TableError("bad_command", "a void names its round"))] = ""
    reason: Annotated[str, _void_reason] = ""


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


_DEBITS = TableError("bad_command", "debits are answered for a round, by player")


def _refused(refused: object) -> None:
    if not isinstance(refused, dict):
        raise TableError(_DEBITS.code, _DEBITS.message)
    for pid, reason in refused.items():
        if not isinstance(pid, str) or reason not in DEBIT_REFUSALS:
            raise TableError("bad_command", f"not a debit refusal: {reason!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Debited(Command):
    """The operator's wallet answered the debits of round ``round_id`` (or their time ran
    out): each player in ``refused`` (player -> one of :data:`DEBIT_REFUSALS`) plays no
    part in the coup; every other wager being debited stands."""

    round_id: Annotated[str, _must(lambda v: isinstance(v, str), _DEBITS)] = ""
    refused: Annotated[dict[str, str], _refused] = field(default_factory=dict)


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


def _field_checks(cls: type[Command]) -> tuple[tuple[str, Check, bool], ...]:
    """``cls``'s fields that declare a check: each one's name, check, and whether its
    default is None (then None is no value to check)."""
    hints = get_type_hints(cls, include_extras=True)
    return tuple(
        (f.name, hints[f.name].__metadata__[0], f.default is None)
        for f in fields(cls)
        if hasattr(hints[f.name], "__metadata__")
    )


_CHECKS: dict[type[Command], tuple[tuple[str, Check, bool], ...]] = {
    cls: _field_checks(cls) for cls in COMMANDS
}
