"""The ledger: its accounts, its entries and the money rules every store keeps, each
written once here.

- **Accounts** are plain strings (server/ledger/accounts.py names them): ``player:<id>``,
  ``stake:<table>:<id>``, ``held:<table>``, ``house``, ``cashier``, ``operator`` and a
  seamless player's ``wallet:<id>``. The guarded ones (:data:`GUARDED_PREFIXES`: a
  player's money and the chips on a felt) never go negative (:func:`check_balance`:
  :class:`Overdrawn`); every balance stays within ±(2**53 - 1) (:data:`MAX_AMOUNT`:
  :class:`OutOfRange`).
- **Entries** move ``amount`` minor units from one account to another, once per key:
  a key stored again with identical fields is skipped, with other fields refused
  (:func:`stored_again`: :class:`KeyConflict`). Settlement (server/table/settlement.py)
  makes the entries of play; every other entry is made by a constructor here
  (:func:`welcome_entry`, :func:`deposit_entry`, :func:`transfer_entry`,
  :func:`sync_entry`, :func:`resolution_entry`), so there is one way to make one.
- **Flows**: what an entry adds to a player's responsible-play usage, summed per UTC
  day, and the guards a commit holds on it, are :mod:`server.ledger.flows`'s.
- **The fence**: a table write whose owner's epoch is older than the stored one is
  refused (:func:`check_epoch`: :class:`StaleEpoch`).

The stores read these rules, never restate them: the Python checks call the functions
here, SQLite's schema takes its ``CHECK`` and triggers from :data:`SQL_PLAYER_NO_OVERDRAFT`,
:data:`SQL_STAKE_NO_OVERDRAFT` and :data:`SQL_WELCOME_OWNER`, and Redis's scripts begin
with :data:`LUA_RULES` (the range, the guarded prefixes, the welcome's key), all
generated from the constants below. A commit's moves (which entries are new, the
balances they leave, the flows they add) are made where they must be atomic (SQLite's
transaction, Redis's Lua script), each step by the rule here: :func:`stored_again`,
:func:`check_balance`, :func:`entry_flow`.

This module never does I/O and never decides a rule of the game (which entries a coup
makes is settlement's); it is pure, like the core it reads its accounts from.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, TypeGuard

from server.ledger.accounts import (
    CASHIER,
    GUARDED_PREFIXES,
    HOUSE,
    OPERATOR,
    Entry,
    held_account,
    player_account,
    stake_account,
    wallet_account,
)
from server.protocol.errors import KeyConflict, OutOfRange, Overdrawn, StaleEpoch, StoreError

__all__ = [
    "CASHIER",
    "GUARDED_PREFIXES",
    "HOUSE",
    "LUA_RULES",
    "MAX_AMOUNT",
    "MIN_BALANCE",
    "OPERATOR",
    "OUTCOME_KINDS",
    "PLAYER_PREFIX",
    "SQL_PLAYER_NO_OVERDRAFT",
    "SQL_STAKE_NO_OVERDRAFT",
    "SQL_WELCOME_OWNER",
    "STAKE_PREFIX",
    "WELCOME_PREFIX",
    "Entry",
    "check_balance",
    "check_entry",
    "check_epoch",
    "deposit_entry",
    "guarded",
    "held_account",
    "ledger_key",
    "player_account",
    "player_accounts",
    "resolution_entry",
    "stake_account",
    "stake_prefix",
    "stored_again",
    "sync_entry",
    "transfer_entry",
    "wallet_account",
    "welcome_entry",
]

# -- accounts and the range --------------------------------------------------------------

#: ``player:`` and ``stake:``, the guarded accounts' prefixes (server/ledger/accounts.py).
PLAYER_PREFIX: Final = GUARDED_PREFIXES[0]
STAKE_PREFIX: Final = GUARDED_PREFIXES[1]
#: The largest amount one entry may move, and the range of a balance: 2**53 - 1, the
#: largest integer a JSON number keeps exactly in a browser (and in Redis's Lua, whose
#: numbers are doubles), far inside SQLite's 64-bit integers.
MAX_AMOUNT: Final = (1 << 53) - 1
MIN_BALANCE: Final = -MAX_AMOUNT
#: The ledger kinds that end a held wager (§7): exactly one per ``hold``.
OUTCOME_KINDS: Final = ("lose", "return", "refund", "void")
#: The start of a welcome's key: ``welcome:<id>`` (the one key not made by
#: :func:`ledger_key`, as every stored welcome has it).
WELCOME_PREFIX: Final = "welcome:"


def guarded(account: str) -> bool:
    """Whether an account may never go negative: a player's money and a table's stakes."""
    return account.startswith(GUARDED_PREFIXES)


def check_balance(account: str, balance: int) -> None:
    """Refuse a balance a player or a stake may not have (:class:`Overdrawn`), or one
    out of range (:class:`OutOfRange`)."""
    if balance < 0 and guarded(account):
        raise Overdrawn(f"{account} would be overdrawn by {-balance}")
    if not MIN_BALANCE <= balance <= MAX_AMOUNT:
        raise OutOfRange(f"{account}'s balance would leave the range of ±(2**53 - 1)")


def stake_prefix(table_id: str) -> str:
    """The start of every stake account at a table: ``stake:<table>:``."""
    return f"{STAKE_PREFIX}{table_id}:"


def player_accounts(entries: Iterable[Entry]) -> list[str]:
    """The ``player:<id>`` accounts ``entries`` touch, sorted: the balances a commit
    reports (:class:`~server.store.base.CommitResult`)."""
    return sorted({a for e in entries for a in (e.src, e.dst) if a.startswith(PLAYER_PREFIX)})


# -- entries -------------------------------------------------------------------------------


def ledger_key(*parts: object) -> str:
    """One ledger key from ``parts``, joined by ``:`` so that different parts never make
    the same key: ``%`` and ``:`` inside a part are escaped (``%25``, ``%3A``). So
    ``ledger_key("deposit", "a", "b:c") != ledger_key("deposit", "a:b", "c")``."""
    if not parts:
        raise StoreError("a ledger key has at least one part")
    return ":".join(str(part).replace("%", "%25").replace(":", "%3A") for part in parts)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def check_entry(entry: Entry) -> None:
    """Refuse an entry no ledger may hold (a caller's bug)."""
    if not isinstance(entry, Entry):
        raise StoreError(f"not a ledger entry: {type(entry).__name__}")
    if not isinstance(entry.key, str) or not entry.key:
        raise StoreError("a ledger entry has a key")
    amount = entry.amount
    if not _is_int(amount) or not 0 < amount <= MAX_AMOUNT:
        raise StoreError(f"entry {entry.key!r}: the amount is a positive whole number")
    if not isinstance(entry.src, str) or not isinstance(entry.dst, str):
        raise StoreError(f"entry {entry.key!r}: accounts are strings")
    if not entry.src or not entry.dst or entry.src == entry.dst:
        raise StoreError(f"entry {entry.key!r}: a transfer needs two accounts")
    if not isinstance(entry.kind, str) or not (
        entry.round_id is None or isinstance(entry.round_id, str)
    ):
        raise StoreError(f"entry {entry.key!r}: kind and round_id are strings")


def stored_again(old: Entry | None, entry: Entry) -> bool:
    """Key idempotency: whether ``entry`` is already stored (``old`` under its key:
    skipped, moving nothing); :class:`KeyConflict` when ``old`` is another entry."""
    if old is None:
        return False
    if old != entry:
        raise KeyConflict(f"ledger key {entry.key!r} holds a different entry")
    return True


def welcome_entry(player_id: str, amount: int) -> Entry:
    """The entry that funds a new player from the cashier."""
    return Entry(
        key=f"{WELCOME_PREFIX}{player_id}",
        src=CASHIER,
        dst=player_account(player_id),
        amount=amount,
        kind="welcome",
    )


def deposit_entry(player_id: str, deposit_id: str, amount: int) -> Entry:
    """A player's play-money deposit (docs/protocol.md ``Deposit``): ``cashier ->
    player:<id>``, keyed by the player and their deposit's id."""
    key = ledger_key("deposit", player_id, deposit_id)
    return Entry(key, CASHIER, player_account(player_id), amount, "deposit")


def transfer_entry(transaction_id: str, player_id: str, amount: int, *, deposit: bool) -> Entry:
    """An operator's transfer (docs/wallet.md §2): a deposit ``operator -> player:<id>``
    or a withdrawal ``player:<id> -> operator``, keyed by its ``transaction_id``."""
    account = player_account(player_id)
    src, dst = (OPERATOR, account) if deposit else (account, OPERATOR)
    kind = "transfer_deposit" if deposit else "transfer_withdraw"
    return Entry(ledger_key("transfer", transaction_id), src, dst, amount, kind)


def sync_entry(player_id: str, sync_id: str, amount: int, *, inward: bool) -> Entry:
    """A seamless player's mirror set to their wallet (docs/wallet.md §3): ``amount``
    from ``wallet:<id>`` into ``player:<id>`` (``inward``) or back."""
    key = ledger_key("sync", player_id, sync_id)
    mirror, wallet = player_account(player_id), wallet_account(player_id)
    src, dst = (wallet, mirror) if inward else (mirror, wallet)
    return Entry(key, src, dst, amount, "sync")


def resolution_entry(
    transaction_id: str, player_id: str, amount: int, round_id: str | None
) -> Entry:
    """A seamless credit or rollback the operator resolved ``not_applied``
    (docs/operator-api.md): the amount back from ``wallet:<id>`` to the house, the
    wallet having kept it, keyed by the call's ``transaction_id``."""
    key = ledger_key("wallet_resolved", transaction_id)
    return Entry(key, wallet_account(player_id), HOUSE, amount, "wallet_resolved", round_id)


# -- the fence -------------------------------------------------------------------------------


def check_epoch(table_id: str, epoch: int, stored: int) -> None:
    """Refuse a table write from an owner older than the stored epoch
    (:class:`StaleEpoch`); an equal or newer one writes."""
    if epoch < stored:
        raise StaleEpoch(f"table {table_id!r}: epoch {epoch} < {stored}")


# -- the same rules, as SQL and Lua text -----------------------------------------------------


def _sql_prefix(column: str, prefix: str) -> str:
    return f"substr({column}, 1, {len(prefix)}) = '{prefix}'"


#: The accounts table's ``CHECK``: a player's balance never negative.
SQL_PLAYER_NO_OVERDRAFT: Final = (
    f"CHECK (balance >= 0 OR substr(account, 1, {len(PLAYER_PREFIX)}) <> '{PLAYER_PREFIX}')"
)
#: The trigger that keeps a stake's balance from going negative (a ``CHECK`` cannot be
#: changed in place in a file made before stakes were guarded).
SQL_STAKE_NO_OVERDRAFT: Final = (
    "CREATE TRIGGER IF NOT EXISTS stake_no_overdraft BEFORE UPDATE OF balance ON accounts"
    f" WHEN NEW.balance < 0 AND {_sql_prefix('NEW.account', STAKE_PREFIX)}"
    " BEGIN SELECT RAISE (ABORT, 'no_overdraft: a stake would go negative'); END"
)
#: The player a deleted ledger row paid (``OLD.dst`` without ``player:``): only the
#: welcome of a guest whose row is gone may be deleted.
SQL_WELCOME_OWNER: Final = f"substr(OLD.dst, {len(PLAYER_PREFIX) + 1})"


def _lua_guarded() -> str:
    tests = " or ".join(f"string.sub(a, 1, {len(p)}) == '{p}'" for p in GUARDED_PREFIXES)
    return f"local function guarded(a)\n  return {tests}\nend\n"


#: The head of every Redis script that moves money: the range, the guarded accounts and
#: the names of a player's account and welcome.
LUA_RULES: Final = (
    f"local MAX = {MAX_AMOUNT}\n"
    + _lua_guarded()
    + f"local PLAYER = '{PLAYER_PREFIX}'\n"
    + f"local WELCOME = '{WELCOME_PREFIX}'\n"
    + f"local CASHIER = '{CASHIER}'\n"
)
