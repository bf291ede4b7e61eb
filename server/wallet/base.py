"""The one wallet boundary: where a player's money lives, behind one interface.

Three implementations (``--wallet``, docs/wallet.md):

- :class:`~server.wallet.ledger.LedgerWallet` ``internal``: Chemmy's ledger, play
  money from the cashier;
- :class:`~server.wallet.ledger.LedgerWallet` ``transfer``: Chemmy's ledger, money the
  operator moves in and out through the transfer API;
- :class:`~server.wallet.seamless.SeamlessWallet`: the operator's wallet, called over
  HTTP for each coup.

In the two ledger modes a coup's money moves in the table's own commit (the hold, lose,
return and win entries; the store checks every one atomically), so :meth:`Wallet.debit`
and friends are never needed: ``confirms_holds`` is False and the table deals at once.
A seamless wallet confirms holds: the table waits in DEBITING while the croupier debits
each player (:mod:`server.wallet.calls` makes the calls, the store keeps them, the
:class:`~server.wallet.courier.Courier` delivers credits and rollbacks until they are
acknowledged). Neither the table nor the croupier's actor knows which mode runs: they
read these flags and make these calls.

In seamless mode Chemmy's ledger still records every movement (docs/wallet.md §3): the
player's ``player:<id>`` account is a *mirror* of the operator's balance, set by
``sync`` entries from ``wallet:<id>`` when the operator's wallet reports a balance, so
that bets can be checked as they are placed and conservation still holds; the
operator's debit decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from server.protocol.errors import WalletError  # (defined with the error tree)

__all__ = [
    "OK",
    "REFUSALS",
    "SESSION_OR_ACCOUNT",
    "STATUSES",
    "UNAVAILABLE",
    "Wallet",
    "WalletAnswer",
    "WalletError",
    "closing_outcome",
]

#: The answer of a call the wallet applied (or had applied: a repeat).
OK: Final = "ok"
#: What Chemmy calls a debit with no clear answer (docs/wallet.md §3).
UNAVAILABLE: Final = "wallet_unavailable"
#: The refusals a debit may get, passed on to the player as they are (``rolled_back``
#: is told as ``wallet_unavailable``: Chemmy had given up on that debit already).
REFUSALS: Final = (
    "insufficient_funds",
    "limit_reached",
    "player_blocked",
    "account_locked",
    "session_expired",
    "unknown_player",
    "currency_mismatch",
    "rolled_back",
)
#: A session or an account's state: a debit may be refused for one, a credit or a
#: rollback never (docs/wallet.md §3, "Statuses"): whatever HTTP status comes with one,
#: Chemmy keeps sending it (it is never ``failed``) until the wallet applies it.
SESSION_OR_ACCOUNT: Final = ("session_expired", "account_locked", "player_blocked")
#: Every ``status`` of the wallet API's vocabulary (docs/wallet.md §3 lists each, and
#: what Chemmy does with it): ``ok`` and the refusals.
STATUSES: Final = (OK, *REFUSALS)


@dataclass(frozen=True, slots=True)
class WalletAnswer:
    """What the wallet said. ``clear``: it answered (applied or refused for good);
    not clear: no answer, a timeout, a ``5xx``: the call may or may not have landed."""

    status: str
    clear: bool
    balance: int | None = None
    message: str = ""
    http_status: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "clear": self.clear,
            "balance": self.balance,
            "message": self.message,
            "http_status": self.http_status,
        }


def closing_outcome(answer: WalletAnswer) -> str:
    """What a credit's or a rollback's answer makes of the call (docs/wallet.md §3):
    ``acknowledged`` (``ok``), ``failed`` (refused for good: a ``4xx`` but ``401`` and
    ``429``, not for a session's or an account's state: it needs a person), or
    ``retry`` (no clear answer; a ``200`` refusal, which the wallet may lift; or a
    refusal for a session's or an account's state, which the wallet must not make)."""
    if answer.status == OK:
        return "acknowledged"
    if answer.clear and answer.http_status != 200 and answer.status not in SESSION_OR_ACCOUNT:
        return "failed"
    return "retry"


class Wallet(Protocol):
    """What the croupier and the gateway need of where the money lives."""

    #: ``internal``, ``transfer`` or ``seamless``.
    mode: str
    #: The game code the operator's wallet calls carry (``--wallet-game``; None: no calls).
    game: str | None
    #: A coup's wagers wait for :meth:`debit` before the cards (seamless).
    confirms_holds: bool
    #: Players may take play money from the cashier (internal only).
    takes_deposits: bool

    async def balance(
        self, player: str, currency: str | None, session: Mapping[str, Any] | None = None
    ) -> int:
        """The player's money, as the wallet that holds it says now (``session``: the
        player's session at the operator, as ``server.wallet.calls.session_fields``
        takes it). Raises :class:`WalletError` when it cannot say."""
        ...

    async def debit(self, call: dict[str, Any], deadline: float) -> WalletAnswer:
        """Take a coup's wagers (one call per player), retried until ``deadline`` (a
        ``time.monotonic()``) while there is no clear answer."""
        ...

    async def deliver(self, call: dict[str, Any]) -> WalletAnswer:
        """Send one credit or rollback once (the courier retries it)."""
        ...

    async def close(self) -> None: ...
