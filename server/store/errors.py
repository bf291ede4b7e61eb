"""The store's errors: every refusal and failure a caller of a store sees (the tree is in
:mod:`server.store.base`'s docstring).

A leaf: it imports nothing of the store, so :mod:`server.store.ledger` and
:mod:`server.store.base` both raise them. It must never hold a rule.
"""

from __future__ import annotations

__all__ = [
    "BadWalletCall",
    "KeyConflict",
    "LimitPassed",
    "OutOfRange",
    "Overdrawn",
    "StaleEpoch",
    "StoreError",
    "StoreInUse",
    "StoreUnavailable",
]


class StoreError(Exception):
    """Anything that went wrong in the store; third-party errors are translated to it."""


class StoreUnavailable(StoreError):
    """The store cannot be reached or cannot write now (Redis down, SQLite disk I/O,
    the lock wait ran out). Not a refusal: the same call may work later."""


class StoreInUse(StoreError):
    """Another live process serves this store, and it is one process's store (SQLite):
    a second server must not start on it."""


class KeyConflict(StoreError):
    """A ledger key already holds an entry with different fields."""


class Overdrawn(StoreError):
    """A commit would make a player's or a stake's balance negative; nothing of it was
    kept."""


class LimitPassed(StoreError):
    """A commit's new entries would take a player's usage past a :class:`LimitGuard`'s
    cap; nothing of it was kept. ``kind`` and ``cap`` are the guard's, ``remaining``
    what the cap left before this commit (at least 0)."""

    def __init__(self, kind: str, cap: int, remaining: int) -> None:
        super().__init__(f"the limit {kind} ({cap}) leaves {remaining}")
        self.kind, self.cap, self.remaining = kind, cap, remaining


class OutOfRange(StoreError):
    """An entry would take a balance out of ±(2**53 - 1), the range every store keeps
    exactly (:data:`MAX_AMOUNT`): refused, nothing of the commit kept. Retrying cannot
    help (unlike :class:`StoreUnavailable`)."""


class StaleEpoch(StoreError):
    """A table write carried an epoch lower than the stored one (a newer owner has
    claimed the table); nothing of it was kept."""


class BadWalletCall(StoreError, ValueError):
    """A wallet call, or a change to one, of the wrong shape (a caller's bug); nothing
    of the write it came with was kept."""
