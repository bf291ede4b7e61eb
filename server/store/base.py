"""The store interface: wallets, the ledger, table state and round/shoe records.

One :class:`Store` interface, implemented by :class:`~server.store.memory.MemoryStore`
(unit tests), :class:`~server.store.sqlite.SQLiteStore` (the default: one file, zero
set-up) and, for clusters, a Redis store (not written yet). All pass the contract suite in
``tests/server/test_store.py`` (the httpcore backends' shape).

The rules every implementation keeps:

- **Double entry.** Money moves only as ledger :class:`~server.table.wallet.Entry`
  rows, each from one account to another, so the sum of every balance is always 0
  (:meth:`Store.audit` checks it, and that each balance equals its ledger sum).
- **Append-only, idempotent ledger.** An entry's ``key`` is unique. Committing a key
  again with identical fields changes nothing; with different fields it raises
  :class:`KeyConflict`. Balances move only for newly inserted entries.
- **No overdraft.** A ``player:<id>`` balance never goes negative: a commit that would
  make one negative (checking the entries in order) raises :class:`Overdrawn`.
- **One step, one transaction.** :meth:`Store.commit` writes entries, the table row and
  records all or nothing; on any error nothing of it is kept.
- **Records are JSON.** Table state and records go in and come out as JSON-able dicts
  (what you read back is what ``json.loads(json.dumps(x))`` gives). A round record is
  upserted by its ``round_id`` and a shoe record by ``(table, shoe_no)``, so a retried
  commit writes the same thing twice harmlessly.
- **Errors are translated at the boundary** (as ``httpcore/_exceptions.py`` does): a
  caller sees :class:`StoreError` and its subclasses, never ``sqlite3`` or ``redis``
  exceptions.

A store must never decide a rule of the game, never reach into a table's state (it is
an opaque dict here), and never log an entry's or record's contents.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeGuard, runtime_checkable

from server.table.wallet import CASHIER, Entry, player_account

__all__ = [
    "HISTORY_LIMIT",
    "MAX_AMOUNT",
    "KeyConflict",
    "Overdrawn",
    "RoundIndex",
    "ShoeIndex",
    "Store",
    "StoreError",
    "TableRow",
    "check_balance",
    "check_entry",
    "dump_json",
    "index_record",
    "welcome_entry",
]

#: The largest amount one entry may move, and the range of a balance: SQLite's integers
#: are 64-bit signed (and its arithmetic turns to floating point past them).
MAX_AMOUNT: Final = (1 << 63) - 1
MIN_BALANCE: Final = -(1 << 63)
#: The most round records :meth:`Store.history` returns, whatever ``limit`` asks.
HISTORY_LIMIT: Final = 100


class StoreError(Exception):
    """Anything that went wrong in the store; third-party errors are translated to it."""


class KeyConflict(StoreError):
    """A ledger key already holds an entry with different fields."""


class Overdrawn(StoreError):
    """A commit would make a player's balance negative; nothing of it was kept."""


@dataclass(frozen=True, slots=True)
class TableRow:
    """A table's persisted row: its config, its full internal snapshot and its seq.

    ``state`` is the table's own snapshot as a JSON-able dict (``None`` before the first
    step); the store never looks inside it.
    """

    table_id: str
    config: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] | None = None
    seq: int = 0
    closed: bool = False


@dataclass(frozen=True, slots=True)
class RoundIndex:
    """The indexed fields of a round record (the rest is stored as it is)."""

    round_id: str
    table: str
    shoe_no: int
    coup_no: int
    players: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ShoeIndex:
    """The indexed fields of a shoe record."""

    table: str
    shoe_no: int
    revealed: bool


@runtime_checkable
class Store(Protocol):
    """What the server needs of persistence. Every method is a coroutine."""

    async def open(self) -> None:
        """Connect and create the schema if needed. Other methods need an open store."""

    async def close(self) -> None:
        """Release the connection. Closing twice is harmless."""

    async def ensure_player(self, player_id: str, name: str, initial_balance: int) -> int:
        """Create ``player:<id>`` if new, funded by ``cashier -> player:<id>`` under key
        ``welcome:<id>``; set the display name; return the balance."""

    async def player_name(self, player_id: str) -> str | None:
        """The player's display name, or ``None`` for an unknown player."""

    async def load_balances(self) -> dict[str, int]:
        """Every account's balance."""

    async def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        """The balances of ``accounts`` (0 for an account never used)."""

    async def has_entry(self, key: str) -> bool:
        """Whether a ledger entry holds ``key``."""

    async def commit(
        self,
        *,
        entries: Sequence[Entry] = (),
        table: TableRow | None = None,
        records: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        """Write entries, the table row and records in one transaction; return how many
        entries were newly inserted. Raises :class:`KeyConflict`, :class:`Overdrawn` or
        :class:`StoreError`, and then keeps nothing of the commit."""

    async def load_tables(self) -> list[TableRow]:
        """Every table not closed, in the order they were first saved."""

    async def save_table(self, row: TableRow) -> None:
        """Upsert one table row (``commit(table=row)``)."""

    async def history(self, player_id: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        """The round records of rounds ``player_id`` bet in, newest first, at most
        ``min(limit, HISTORY_LIMIT)``."""

    async def round_record(self, round_id: str) -> dict[str, Any] | None:
        """One round record."""

    async def shoe_record(self, table_id: str, shoe_no: int | None = None) -> dict[str, Any] | None:
        """One shoe record; with ``shoe_no=None``, the revealed one with the highest
        ``shoe_no``."""

    async def shoe_records(self, table_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """A table's shoe records, highest ``shoe_no`` first."""

    async def ledger(self, account: str | None = None, limit: int = 1000) -> list[Entry]:
        """The newest ``limit`` entries (touching ``account`` if given), newest first."""

    async def audit(self) -> dict[str, Any]:
        """``{"sum": int, "ledger_matches": bool, "entries": int}``: the sum of every
        balance (always 0), whether each balance equals its ledger sum, and the number
        of ledger entries."""


# -- helpers shared by the implementations ----------------------------------------------


def check_balance(account: str, balance: int) -> None:
    """Refuse a balance a player may not have or a 64-bit integer cannot hold."""
    if balance < 0 and account.startswith("player:"):
        raise Overdrawn(f"{account} would be overdrawn by {-balance}")
    if not MIN_BALANCE <= balance <= MAX_AMOUNT:
        raise StoreError(f"{account}'s balance would leave the 64-bit range")


def welcome_entry(player_id: str, amount: int) -> Entry:
    """The entry that funds a new player from the cashier."""
    return Entry(
        key=f"welcome:{player_id}",
        src=CASHIER,
        dst=player_account(player_id),
        amount=amount,
        kind="welcome",
    )


def check_entry(entry: Entry) -> None:
    """Refuse an entry no ledger may hold (a caller's bug)."""
    if not isinstance(entry, Entry):
        raise StoreError(f"not a ledger entry: {type(entry).__name__}")
    if not isinstance(entry.key, str) or not entry.key:
        raise StoreError("a ledger entry has a key")
    amount = entry.amount
    if not isinstance(amount, int) or isinstance(amount, bool) or not 0 < amount <= MAX_AMOUNT:
        raise StoreError(f"entry {entry.key!r}: the amount is a positive whole number")
    if not isinstance(entry.src, str) or not isinstance(entry.dst, str):
        raise StoreError(f"entry {entry.key!r}: accounts are strings")
    if not entry.src or not entry.dst or entry.src == entry.dst:
        raise StoreError(f"entry {entry.key!r}: a transfer needs two accounts")
    if not isinstance(entry.kind, str) or not (
        entry.round_id is None or isinstance(entry.round_id, str)
    ):
        raise StoreError(f"entry {entry.key!r}: kind and round_id are strings")


def dump_json(value: Any) -> str:
    """Serialize table state or a record; :class:`StoreError` if it is not JSON-able."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"not JSON-able: {exc}") from None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def index_record(record: Mapping[str, Any]) -> RoundIndex | ShoeIndex:
    """Check a record and extract the fields a store indexes."""
    kind = record.get("kind")
    if kind == "round":
        round_id = record.get("round_id")
        table = record.get("table")
        shoe_no = record.get("shoe_no")
        coup_no = record.get("coup_no")
        players = record.get("players")
        if not isinstance(round_id, str) or not round_id or not isinstance(table, str):
            raise StoreError("a round record has a round_id and a table")
        if not _is_int(shoe_no) or not _is_int(coup_no):
            raise StoreError(f"round {round_id!r}: shoe_no and coup_no are integers")
        if not isinstance(players, list | tuple) or not all(
            isinstance(player, str) for player in players
        ):
            raise StoreError(f"round {round_id!r}: players is a list of player ids")
        return RoundIndex(round_id, table, shoe_no, coup_no, tuple(dict.fromkeys(players)))
    if kind == "shoe":
        table = record.get("table")
        shoe_no = record.get("shoe_no")
        if not isinstance(table, str) or not _is_int(shoe_no):
            raise StoreError("a shoe record has a table and an integer shoe_no")
        return ShoeIndex(table, shoe_no, record.get("revealed", True) is not False)
    raise StoreError(f"a record's kind is 'round' or 'shoe', not {kind!r}")
