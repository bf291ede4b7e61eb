"""The wallet a table is given: balances and an idempotent, double-entry ledger.

Every movement of money is a :class:`Entry`: ``amount`` minor units from account
``src`` to account ``dst``, under an idempotency ``key``. Posting a key twice changes
nothing the second time. Accounts are plain strings:

- ``player:<id>``: a player's balance; never negative (a transfer that would make it
  negative is refused with :class:`InsufficientFunds`, never repaired later, §3);
- ``held:<table>``: wagers held while a coup is dealt (§7);
- ``house``: the house result; ``cashier``: where play-money deposits come from.

Since every entry debits one account and credits another, the sum of all balances is
always zero: that is the conservation law the tests assert.

Placed chips count against a balance before they are held (§7); a table sets its
*reservation* for a player (an absolute amount, so replaying it is harmless) and
:meth:`Wallet.available` subtracts every table's reservation.

This module is pure: :class:`MemoryWallet` is a dict, used by the table's tests and,
wrapped by the store, by the server. Never any I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "CASHIER",
    "HOUSE",
    "Entry",
    "InsufficientFunds",
    "MemoryWallet",
    "Wallet",
    "held_account",
    "player_account",
]

HOUSE = "house"
CASHIER = "cashier"


def player_account(player: str) -> str:
    return f"player:{player}"


def held_account(table: str) -> str:
    return f"held:{table}"


class InsufficientFunds(Exception):
    """A transfer would make a player's balance negative."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One ledger entry: ``amount`` moves from ``src`` to ``dst``."""

    key: str
    src: str
    dst: str
    amount: int
    kind: str
    round_id: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "src": self.src,
            "dst": self.dst,
            "amount": self.amount,
            "kind": self.kind,
            "round_id": self.round_id,
        }


class Wallet(Protocol):
    """What a table needs of money. Synchronous: the table never waits."""

    def balance(self, account: str) -> int: ...

    def available(self, player: str) -> int: ...

    def reserve(self, player: str, holder: str, amount: int) -> None: ...

    def transfer(
        self, key: str, src: str, dst: str, amount: int, kind: str, round_id: str | None = None
    ) -> bool: ...


class MemoryWallet:
    """Balances and ledger in memory. ``entries`` lists every entry posted, in order."""

    def __init__(self, balances: dict[str, int] | None = None) -> None:
        self.balances: dict[str, int] = dict(balances or {})
        self.entries: list[Entry] = []
        self._keys: set[str] = set()
        self._reserved: dict[str, dict[str, int]] = {}

    # -- reading ---------------------------------------------------------------------
    def balance(self, account: str) -> int:
        return self.balances.get(account, 0)

    def available(self, player: str) -> int:
        """A player's balance less the chips placed (not yet held) at every table."""
        reserved = sum(self._reserved.get(player, {}).values())
        return self.balance(player_account(player)) - reserved

    def reserved(self, player: str) -> int:
        return sum(self._reserved.get(player, {}).values())

    def has_key(self, key: str) -> bool:
        return key in self._keys

    def total(self) -> int:
        """The sum of every account: always 0 (double entry)."""
        return sum(self.balances.values())

    # -- writing ---------------------------------------------------------------------
    def reserve(self, player: str, holder: str, amount: int) -> None:
        """Set ``holder``'s reservation on ``player``'s balance (0 removes it)."""
        if amount < 0:
            raise ValueError("a reservation is not negative")
        mine = self._reserved.setdefault(player, {})
        if amount:
            mine[holder] = amount
        else:
            mine.pop(holder, None)
            if not mine:
                del self._reserved[player]

    def transfer(
        self, key: str, src: str, dst: str, amount: int, kind: str, round_id: str | None = None
    ) -> bool:
        """Post one entry. Returns False (and changes nothing) when ``key`` was posted."""
        if key in self._keys:
            return False
        if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
            raise ValueError(f"a transfer is a positive whole amount, not {amount!r}")
        if src == dst:
            raise ValueError("a transfer needs two accounts")
        if src.startswith("player:") and self.balance(src) < amount:
            raise InsufficientFunds(f"{src} has {self.balance(src)}, needs {amount}")
        self.balances[src] = self.balance(src) - amount
        self.balances[dst] = self.balance(dst) + amount
        entry = Entry(key, src, dst, amount, kind, round_id)
        self._keys.add(key)
        self.entries.append(entry)
        self.on_entry(entry)
        return True

    def on_entry(self, entry: Entry) -> None:
        """Hook for subclasses (the store's wallet queues the entry to be written)."""

    def load(self, balances: Iterable[tuple[str, int]]) -> None:
        for account, amount in balances:
            self.balances[account] = amount
