"""The wallet a table is given: balances and an idempotent, double-entry ledger.

Every movement of money is an :class:`Entry`: ``amount`` minor units from account
``src`` to account ``dst``, under an idempotency ``key``. Accounts are plain strings:

- ``player:<id>``: a player's money on no table; never negative (a transfer that would
  make it negative is refused with :class:`InsufficientFunds`, never repaired later, §3);
- ``stake:<table>:<id>``: the chips a player has placed at that table and that are not
  yet held: always exactly the chips on the felt there (§7 "placed chips already count
  against the balance"); never negative;
- ``held:<table>``: wagers held while a coup is dealt (§7);
- ``house``: the house result; ``cashier``: where play-money deposits come from;
  ``operator``: where the operator's transfers come from and go to (``--wallet transfer``);
- ``wallet:<id>``: a seamless player's mirror's counter-account, the operator's wallet
  as seen from Chemmy (may go below zero, like ``house``).

Since every entry debits one account and credits another, the sum of all balances is
always zero: that is the conservation law the tests assert. A player's money is
``player:<id>`` plus their stakes; a table needs only its own stakes, so no process needs
an authoritative in-memory copy of anyone's whole balance (docs/architecture.md).

A key is posted once: posting it again raises :class:`DuplicateEntry`, because a table
that does so has a bug (a step replayed against a wallet that kept the first one). The
table never ignores a refused transfer.

This module is pure: :class:`MemoryWallet` is a dict, used by the table's tests and,
wrapped by the croupier, by the server. Never any I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "CASHIER",
    "GUARDED_PREFIXES",
    "HOUSE",
    "OPERATOR",
    "DuplicateEntry",
    "Entry",
    "InsufficientFunds",
    "MemoryWallet",
    "Wallet",
    "held_account",
    "player_account",
    "stake_account",
    "wallet_account",
]

HOUSE = "house"
CASHIER = "cashier"
#: The other side of the operator's transfers in and out (docs/wallet.md §2): it goes
#: below zero by what the operator moved in.
OPERATOR = "operator"
#: The prefixes of the accounts that never go negative (``player:``, ``stake:``): the one
#: place this rule is written (server.ledger.rules reads it for every store).
GUARDED_PREFIXES = ("player:", "stake:")


def player_account(player: str) -> str:
    return f"player:{player}"


def wallet_account(player: str) -> str:
    """The counter-account of a seamless player's mirror: the operator's wallet as seen
    from Chemmy (may go below zero, like ``house``)."""
    return f"wallet:{player}"


def stake_account(table: str, player: str) -> str:
    return f"stake:{table}:{player}"


def held_account(table: str) -> str:
    return f"held:{table}"


class InsufficientFunds(Exception):
    """A transfer would make a ``player:`` or ``stake:`` account negative."""


class DuplicateEntry(Exception):
    """A ledger key was posted twice in one wallet: a bug in whoever posted it."""


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
    """What a table needs of money. Synchronous: the table never waits.

    ``confirms_holds``: the money lives in an operator's wallet that must take a
    coup's wagers before the cards are dealt (docs/wallet.md §3): the table then waits
    in DEBITING for the croupier's answer. The table knows nothing else of where the
    money lives."""

    confirms_holds: bool

    def balance(self, account: str) -> int: ...

    def transfer(
        self, key: str, src: str, dst: str, amount: int, kind: str, round_id: str | None = None
    ) -> None:
        """Post one entry, or raise: :class:`InsufficientFunds` (a ``player:`` or
        ``stake:`` account would go negative; nothing changes), :class:`DuplicateEntry`
        (``key`` was posted before), ValueError (not a positive whole amount between two
        accounts)."""
        ...


class MemoryWallet:
    """Balances and ledger in memory. ``entries`` lists every entry posted, in order."""

    def __init__(
        self, balances: dict[str, int] | None = None, *, confirms_holds: bool = False
    ) -> None:
        self.balances: dict[str, int] = dict(balances or {})
        self.confirms_holds = confirms_holds
        self.entries: list[Entry] = []
        self._keys: set[str] = set()

    # -- reading ---------------------------------------------------------------------
    def balance(self, account: str) -> int:
        return self.balances.get(account, 0)

    def total(self) -> int:
        """The sum of every account: always 0 (double entry)."""
        return sum(self.balances.values())

    # -- writing ---------------------------------------------------------------------
    def transfer(
        self, key: str, src: str, dst: str, amount: int, kind: str, round_id: str | None = None
    ) -> None:
        """Post one entry (see :meth:`Wallet.transfer`)."""
        if key in self._keys:
            raise DuplicateEntry(f"ledger key {key!r} was posted already")
        if type(amount) is not int or amount <= 0:
            raise ValueError(f"a transfer is a positive whole amount, not {amount!r}")
        if src == dst:
            raise ValueError("a transfer needs two accounts")
        balances = self.balances
        have = balances.get(src, 0)
        if have < amount and src.startswith(GUARDED_PREFIXES):
            raise InsufficientFunds(f"{src} has {have}, needs {amount}")
        balances[src] = have - amount
        balances[dst] = balances.get(dst, 0) + amount
        entry = Entry(key, src, dst, amount, kind, round_id)
        self._keys.add(key)
        self.entries.append(entry)

    def load(self, balances: Iterable[tuple[str, int]]) -> None:
        for account, amount in balances:
            self.balances[account] = amount
