"""The one error tree of Chemmy: what a client is told, and what never leaves a process.

Every error that can reach a client is a :class:`ChemmyError` with a stable,
machine-readable ``code`` (what a client switches on) and a human ``message`` (what a
person reads). The subclasses say whose fault it was, as h11 separates local from remote
protocol errors. The internal roots below never reach a client as they are: each is
translated where it crosses a boundary (as ``httpcore/_exceptions.py`` does), into the
wire error named beside it, and most undo the step that raised them. Every wire code is
listed in docs/protocol.md ("Errors").

.. code-block:: text

    Exception
    ├── ChemmyError              (here) sent as {"type": "error", "code", "message"}
    │   ├── ProtocolError        a malformed frame or message: the client's bug
    │   │                        bad_frame, bad_message, unknown_command; bad_record
    │   │                        (a record between processes, server/protocol/records.py)
    │   ├── Refused              a rule, a limit or the server refused: the player's move
    │   │   │                    no_table, not_joined, rate_limited, busy, timeout,
    │   │   │                    unavailable, store_failed, store_unavailable, id_reused,
    │   │   │                    too_many_connections, bad_amount, bad_limit, no_record,
    │   │   │                    not_allowed, deposits_closed, ...
    │   │   ├── TableError       (server/vocabulary/errors.py) the table's rules: wrong_phase,
    │   │   │                    insufficient_funds, not_your_turn, over_max, draining, ...
    │   │   └── Busy             (server/croupier/actor.py) busy: a table's queue is full
    │   └── AuthError            (server/process/auth.py) auth_required, bad_token,
    │                            token_expired, bad_name
    └── internal roots (never sent as they are; the first four defined here, each
        │                    imported by the module named beside it under the same name)
        ├── StoreError           (raised by server/store) -> store_failed; the step undone
        │   ├── StoreUnavailable the store cannot be reached -> store_unavailable
        │   ├── StoreInUse       another live process serves this SQLite file -> one
        │   │                    line and exit status 2 at start-up
        │   ├── KeyConflict      a ledger key with other fields -> id_reused (deposit)
        │   ├── Overdrawn        a balance would go below zero -> insufficient_funds
        │   ├── OutOfRange       a balance would leave ±(2**53 - 1) -> out_of_range
        │   ├── LimitPassed      a commit would pass a player's own limit -> limit_reached
        │   ├── StaleEpoch       a newer owner took the table -> the actor stops there
        │   └── BadWalletCall    a wallet call of the wrong shape (also a ValueError): a
        │                        bug -> internal
        ├── WalletError          (server/wallet/base.py) the operator's wallet gave no
        │                        clear answer -> wallet_unavailable (its balance kept)
        ├── SignatureError       (server/wallet/signing.py) a signature missing, malformed,
        │                        stale or wrong -> 401 bad_signature / stale_signature
        ├── OperatorRefusal      (server/operator/api.py) an operator call refused:
        │                        its HTTP status and code ({"status": code, "message"})
        ├── InsufficientFunds,   (server/ledger/accounts.py) a wallet refused a transfer the
        │   DuplicateEntry       table had checked: a bug -> internal; the step undone
        ├── OptionsError         (server/vocabulary/options.py, a ValueError) -> bad_options,
        │                        or a ConfigError at start-up
        ├── CardError, ShoeError (server/engine, ValueErrors) -> bad_command, or the CLI's
        │                        one-line error
        └── ConfigError          (server/process/config.py) -> one line and exit status 2

The internal roots a shell module raises (the store's, the operator wallet's, a
signature's, an operator call's) are defined here, below the wire errors, so the whole
tree is in one file; the modules named beside them raise them, and everyone imports
them from here. The table's and the
engine's (``TableError``, ``InsufficientFunds``, ``OptionsError``, ``CardError``) stay
with the pure code that raises them, and ``AuthError``, ``ConfigError`` and ``Busy`` with
theirs.

This module is pure and tiny. It must never import anything of the shell (sockets,
storage) and an error's message must never carry a secret (a token, a shoe seed, an
undealt card): messages are sent to clients as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

__all__ = [
    "BadWalletCall",
    "ChemmyError",
    "KeyConflict",
    "LimitPassed",
    "OperatorRefusal",
    "OutOfRange",
    "Overdrawn",
    "ProtocolError",
    "Refused",
    "SignatureError",
    "StaleEpoch",
    "StoreError",
    "StoreInUse",
    "StoreUnavailable",
    "WalletError",
    "limit_reached",
    "no_table",
    "player_blocked",
    "store_refusal",
    "wrong_currency",
]


class ChemmyError(Exception):
    """Base class of every error a client may be told about. ``details``: fields the
    client may read beside the code and message (``limit_reached``'s ``limit``), sent
    as they are; never a secret."""

    code: str
    message: str
    details: dict[str, Any]

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.details = dict(details or {})

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"

    def to_dict(self) -> dict[str, Any]:
        """The error as the body of an ``error`` message."""
        return {**self.details, "code": self.code, "message": self.message}

    @classmethod
    def from_dict(cls, error: Mapping[str, Any]) -> Self:
        """The error a reply record's ``error`` (:meth:`to_dict`) says, details kept."""
        details = {k: v for k, v in error.items() if k not in ("code", "message")}
        return cls(str(error["code"]), str(error["message"]), details)


class ProtocolError(ChemmyError):
    """A malformed frame or message: the client's bug, not the player's move."""


class Refused(ChemmyError):
    """A rule refused the move; the table's own refusals subclass this."""


def no_table(table: str) -> Refused:
    """``no_table``: there is no open table ``table`` (its id cut to 40 characters)."""
    return Refused("no_table", f"there is no table {table[:40]!r}")


def wrong_currency(table: str, currency: str | None, yours: str | None) -> Refused:
    """``wrong_currency``: table ``table`` plays in ``currency`` and the player in
    ``yours`` (``None``: play money); a player joins only the tables of their currency."""

    def name(code: str | None) -> str:
        return code if code is not None else "play money"

    return Refused(
        "wrong_currency",
        f"the table {table[:40]!r} plays in {name(currency)}, and you in {name(yours)}",
    )


def player_blocked(kind: str, when: str) -> Refused:
    """``player_blocked``: the player is taking a break (``kind`` ``"break"``) or has
    excluded themselves (``"exclusion"``) until ``when`` (a time as people read it)."""
    if kind == "exclusion":
        return Refused("player_blocked", f"you have excluded yourself from play until {when}")
    return Refused("player_blocked", f"you are taking a break from play until {when}")


#: ``limit_reached``'s words for each limit a player may set (server/protection/play_limits.py).
LIMIT_WORDS = {
    "deposit_day": "daily deposit limit",
    "deposit_week": "weekly deposit limit",
    "deposit_month": "monthly deposit limit",
    "loss_day": "daily loss limit",
    "loss_week": "weekly loss limit",
    "loss_month": "monthly loss limit",
    "wager_day": "daily wager limit",
    "wager_week": "weekly wager limit",
    "wager_month": "monthly wager limit",
    "session": "session time limit",
}


def limit_reached(kind: str, amount: int, remaining: int, said: str, left: str) -> Refused:
    """``limit_reached``: a bet or deposit would pass the player's ``kind`` limit of
    ``amount`` (minor units; for ``session`` minutes) with ``remaining`` left; ``said``
    and ``left`` are the two as people read them. The details carry ``limit``:
    ``{"kind", "amount", "remaining"}``."""
    words = LIMIT_WORDS.get(kind, "limit")
    if kind == "session":
        message = f"your {words} of {said} is reached: no more bets this session"
    else:
        message = f"that would pass your {words} of {said}: {left} remains"
    details = {"limit": {"kind": kind, "amount": amount, "remaining": max(0, remaining)}}
    return Refused("limit_reached", message, details)


# ------------------------------------------------------------------ internal roots
# Never sent as they are: each is translated where it crosses a boundary (the tree above).
class StoreError(Exception):
    """Anything that went wrong in the store; third-party errors are translated to it."""


class StoreUnavailable(StoreError):
    """The store cannot be reached or cannot write now (Redis down, SQLite disk I/O,
    the lock wait ran out). Not a refusal: the same call may work later."""


def store_refusal(exc: BaseException) -> Refused:
    """What the sender of a step the store did not keep hears: ``store_unavailable`` when
    the store cannot be reached or cannot write now (Redis down, the SQLite lock wait
    ran out), else ``store_failed``. Either way nothing of the step was kept; a retry
    with the same id is applied once."""
    if isinstance(exc, StoreUnavailable):
        return Refused("store_unavailable", "the store cannot be reached now; try again")
    return Refused("store_failed", "that could not be saved; try again")


class StoreInUse(StoreError):
    """Another live process serves this store, and it is one process's store (SQLite):
    a second server must not start on it."""


class KeyConflict(StoreError):
    """A ledger key already holds an entry with different fields."""


class Overdrawn(StoreError):
    """A commit would make a player's or a stake's balance negative; nothing of it was
    kept."""


class LimitPassed(StoreError):
    """A commit's new entries would take a player's usage past a ``LimitGuard``'s
    (server/store/base.py) cap; nothing of it was kept. ``kind`` and ``cap`` are the
    guard's, ``remaining`` what the cap left before this commit (at least 0)."""

    def __init__(self, kind: str, cap: int, remaining: int) -> None:
        super().__init__(f"the limit {kind} ({cap}) leaves {remaining}")
        self.kind, self.cap, self.remaining = kind, cap, remaining


class OutOfRange(StoreError):
    """An entry would take a balance out of ±(2**53 - 1), the range every store keeps
    exactly (``MAX_AMOUNT``, server/store/base.py): refused, nothing of the commit kept.
    Retrying cannot help (unlike :class:`StoreUnavailable`)."""


class StaleEpoch(StoreError):
    """A table write carried an epoch lower than the stored one (a newer owner has
    claimed the table); nothing of it was kept."""


class BadWalletCall(StoreError, ValueError):
    """A wallet call, or a change to one, of the wrong shape (a caller's bug); nothing
    of the write it came with was kept."""


class WalletError(Exception):
    """The wallet could not answer (unreachable, a timeout, a malformed answer)."""


class SignatureError(Exception):
    """A signature that is missing, malformed, under an unknown key or wrong (``status``
    ``bad_signature``), or too old or too far in the future (``stale_signature``)."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class OperatorRefusal(Exception):
    """A refused operator call: HTTP ``http_status``, body ``{"status": code, "message"}``
    and the ``details`` given (``limit_reached``'s ``limit``)."""

    def __init__(
        self, http_status: int, code: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(f"{http_status} {code}: {message}")
        self.http_status = http_status
        self.code = code
        self.message = message
        self.details = dict(details or {})
