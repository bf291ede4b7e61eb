r"""The store interface: wallets, the ledger, table state, events and round/shoe records.

One :class:`Store` interface, implemented by :class:`~server.store.memory.MemoryStore`
(unit tests), :class:`~server.store.sqlite.SQLiteStore` (the default: one file, zero
set-up) and :class:`~server.store.redis.RedisStore` (state that many processes share).
All pass the contract suite in ``tests/server/test_store.py`` (the httpcore backends'
shape), and ``tests/store/test_store_oracle.py`` runs random steps on all three with the
memory store as the oracle.

The money rules below are written once, in :mod:`server.store.ledger` (the SQL and Lua
that keep them are generated from it); a commit is checked and serialized once, by
:func:`server.store.plan.plan_commit`; the errors are in :mod:`server.protocol.errors`
(re-exported here). The rules every implementation keeps:

- **Double entry.** Money moves only as ledger :class:`~server.table.wallet.Entry`
  rows, each from one account to another, so the sum of every balance is always 0
  (:meth:`Store.audit` checks it, that each balance equals its ledger sum, and that
  every held wager has exactly one outcome).
- **Append-only, idempotent ledger.** An entry's ``key`` is unique. Committing a key
  again with identical fields changes nothing (the entry is skipped, not inserted); with
  different fields it raises :class:`KeyConflict`. Balances move only for newly
  inserted entries. Keys may hold any character: callers build them with
  :func:`ledger_key`, which joins parts unambiguously. The one exception to
  append-only: an idle guest whose only entry is their welcome is expired with it
  (:meth:`Store.expire_guests`), as if they had never come.
- **No overdraft.** A ``player:<id>`` or ``stake:<table>:<id>`` balance never goes
  negative: a commit that would make one negative (checking the entries in order)
  raises :class:`Overdrawn`.
- **One step, one transaction.** :meth:`Store.commit` writes entries, the table row, the
  step's records and events all or nothing; on any error nothing of it is kept.
- **Limits held where the usage is counted.** A commit may carry :class:`LimitGuard`\ s:
  caps on a player's usage (:func:`entry_flow`'s flows in a window of days). A commit
  whose newly inserted entries raise a guarded usage above its cap raises
  :class:`LimitPassed` and keeps nothing, checked in the same transaction (SQLite) or
  script (Redis) that adds the flows, so two commits racing from two tables or two
  processes can never both pass a player's limit. Which limits apply and their windows
  are the caller's (``server.protection.play_limits``); the store only sums and compares.
- **Fencing.** A table row carries its owner's ``epoch``; a write whose epoch is lower
  than the stored one raises :class:`StaleEpoch` and keeps nothing, so a stalled old
  owner cannot write over a new one (:meth:`Store.claim_table` takes the next epoch).
- **Records are JSON.** Table state, events and records go in and come out as JSON-able
  dicts (what you read back is what ``json.loads(json.dumps(x))`` gives). A round record
  is upserted by its ``round_id`` and a shoe record by ``(table, shoe_no)``, so a
  retried commit writes the same thing twice harmlessly. Every round record is found
  again by its ``time`` (:meth:`Store.round_records`, from an index written in the same
  commit: the operator's round search).
- **Bounded per step.** A table's events are kept up to a retention (default
  :data:`EVENT_RETENTION` per table, older ones pruned as new ones come); a player's
  round index keeps their newest :data:`HISTORY_LIMIT` rounds (GAME_RULES §8). Round
  and shoe records and the ledger are the audit trail and are kept.
- **Wallet calls are an outbox.** The calls Chemmy makes to an operator's seamless
  wallet (docs/wallet.md §3: ``debit``, ``credit``, ``rollback``) are JSON-able dicts
  (:func:`check_wallet_call` says which) keyed by their unique ``transaction_id``.
  :meth:`Store.commit` inserts its ``calls`` in the same transaction as the rest (a
  settlement's credits are kept with the settlement, or neither is); a call whose
  ``transaction_id`` is already stored is skipped, never overwritten (a retried
  commit). The store numbers each inserted call with a ``seq`` that only rises (newest
  first is highest ``seq`` first). Afterwards only a call's progress changes
  (:data:`WALLET_CALL_CHANGES`, :meth:`Store.update_wallet_call`, atomically); calls are
  never deleted (they are the reconciliation trail, docs/wallet.md §4). The pending
  ones are indexed by ``next_at`` (:meth:`Store.due_wallet_calls`).
- **Errors are translated at the boundary** (as ``httpcore/_exceptions.py`` does): a
  caller sees :class:`StoreError` and its subclasses, never ``sqlite3`` or ``redis``
  exceptions.

The error tree::

    StoreError                 anything that went wrong in the store
    ├── StoreUnavailable       the store cannot be reached or cannot write now
    │                          (Redis down, SQLite disk I/O, lock wait ran out); retry later
    ├── StoreInUse             another live process serves this one-process store (SQLite)
    ├── KeyConflict            a ledger key already holds a different entry
    ├── Overdrawn              a player or stake balance would go negative
    ├── OutOfRange             a balance would leave ±(2**53 - 1)
    ├── StaleEpoch             a table write from an owner older than the stored epoch
    ├── LimitPassed            a commit would take a player past a guarded limit
    └── BadWalletCall          a wallet call (or a change to one) of the wrong shape
                               (also a ValueError)

Every refused write (all but :class:`StoreUnavailable`) kept nothing; a
:class:`StoreUnavailable` write may, on Redis, have been applied before the connection
dropped: retrying the same commit is harmless (idempotent by key, events by ``seq``).

A store must never decide a rule of the game, never reach into a table's state (it is
an opaque dict here), and never log an entry's, event's or record's contents.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple, Protocol, TypeGuard, runtime_checkable

import orjson

from server.protocol.errors import (  # (the error tree: defined there, named here too)
    BadWalletCall,
    KeyConflict,
    LimitPassed,
    OutOfRange,
    Overdrawn,
    StaleEpoch,
    StoreError,
    StoreInUse,
    StoreUnavailable,
)
from server.store.ledger import (
    FLOW_DAYS,
    FLOW_NAMES,
    MAX_AMOUNT,
    MIN_BALANCE,
    OUTCOME_KINDS,
    add_flows,
    check_balance,
    check_entry,
    entry_flow,
    flow_cutoff,
    flow_day,
    guarded,
    ledger_key,
    stake_prefix,
    welcome_entry,
)
from server.table.wallet import Entry

__all__ = [
    "EVENT_RETENTION",
    "FLOW_DAYS",
    "FLOW_NAMES",
    "GUARD_MEASURES",
    "HISTORY_LIMIT",
    "LIMIT_KINDS",
    "MAX_AMOUNT",
    "MIN_BALANCE",
    "OPERATOR_CALL_KEEP_MAX",
    "OUTCOME_KINDS",
    "PLAY_FLOWS",
    "RESTRICTION_KINDS",
    "ROUNDS_LIMIT",
    "WALLET_CALLS_LIMIT",
    "WALLET_CALL_CHANGES",
    "WALLET_CALL_KINDS",
    "WALLET_CALL_STATES",
    "AckRule",
    "BadWalletCall",
    "BetReads",
    "CommitResult",
    "KeyConflict",
    "LimitGuard",
    "LimitPassed",
    "LimitsRule",
    "OutOfRange",
    "Overdrawn",
    "PlayRule",
    "RestrictionRule",
    "RoundIndex",
    "RoundQuery",
    "ShoeIndex",
    "StaleEpoch",
    "Store",
    "StoreError",
    "StoreInUse",
    "StoreUnavailable",
    "TableRow",
    "add_flows",
    "check_balance",
    "check_currency",
    "check_entry",
    "check_event",
    "check_guard",
    "check_operator_call",
    "check_parts",
    "check_play_open",
    "check_row",
    "check_wallet_call",
    "current_limits",
    "dump_json",
    "entry_flow",
    "flow_cutoff",
    "flow_day",
    "follows",
    "guard_breach",
    "guard_measure",
    "guarded",
    "hold_problems",
    "index_record",
    "ledger_key",
    "operator_call_record",
    "own_copy",
    "play_baseline",
    "stake_prefix",
    "welcome_entry",
]

#: Player protection's rules, as the store runs them inside its transaction (it never
#: decides them: the caller hands them in; ``server.protection.rules``): (the stored
#: value, the change..., now) -> the value to keep.
RestrictionRule = Callable[
    [Mapping[str, Any] | None, str, float, str, float], dict[str, Any] | None
]
LimitsRule = Callable[
    [Mapping[str, Any] | None, Mapping[str, int | None], str, float], dict[str, Any]
]
PlayRule = Callable[
    [Mapping[str, Any] | None, float, float, float | None, Mapping[str, int]], dict[str, Any]
]
AckRule = Callable[[Mapping[str, Any] | None, float], dict[str, Any] | None]
#: The most round records :meth:`Store.history` returns, whatever ``limit`` asks, and
#: how many a player's round index keeps (GAME_RULES §8: the last 100 rounds).
HISTORY_LIMIT: Final = 100
#: How many events a store keeps per table by default (older ones are pruned).
EVENT_RETENTION: Final = 4096
#: The wallet calls Chemmy makes (docs/wallet.md §3) and the states one goes through:
#: ``pending`` until the wallet answers it for good.
WALLET_CALL_KINDS: Final = ("debit", "credit", "rollback")
#: ``cancelled``: a credit or rollback a person found the wallet never applied, and
#: closed (docs/wallet.md §4, "Failed calls").
WALLET_CALL_STATES: Final = (
    "pending",
    "acknowledged",
    "refused",
    "rolled_back",
    "failed",
    "cancelled",
)
#: The fields of a stored wallet call that :meth:`Store.update_wallet_call` may change
#: (its progress, and what people did about it: ``resolutions``); the rest is fixed
#: when it is inserted.
WALLET_CALL_CHANGES: Final = frozenset(
    {"state", "attempts", "next_at", "updated", "answer", "error", "reason", "resolutions"}
)
#: The most round records one :meth:`Store.round_records` returns, whatever ``limit``
#: asks.
ROUNDS_LIMIT: Final = 1000
#: The most wallet calls one :meth:`Store.wallet_calls` or :meth:`Store.due_wallet_calls`
#: returns, whatever ``limit`` asks.
WALLET_CALLS_LIMIT: Final = 1000
#: The longest an operator call's record may be kept (:meth:`Store.claim_operator_call`),
#: in seconds: 30 days.
OPERATOR_CALL_KEEP_MAX: Final = 30 * 86_400.0
#: The longest key and fingerprint of an operator call's record (characters).
_OPERATOR_CALL_KEY_MAX: Final = 256


@dataclass(frozen=True, slots=True)
class TableRow:
    """A table's persisted row: its config, its full internal snapshot, its seq and the
    epoch of the owner that wrote it.

    ``state`` is the table's own snapshot as a JSON-able dict (``None`` for a table
    created and not yet stepped); the store never looks inside it. Saving a row with
    ``state=None`` drops the table id's stored events (a table created again after a
    close starts a new event log). ``epoch`` fences writers (:class:`StaleEpoch`);
    :meth:`Store.load_tables` returns the stored epoch.

    ``parts``: the table's parts, kept beside the row under a key each (a table's
    bettors without a seat, GAME_RULES §5: one part a bettor, so a step writes the
    parts it changed, never all of them). In a commit, the parts to write (key -> a
    JSON-able dict) or to drop (key -> ``None``), in the same transaction as the row;
    loaded, every part stored (``None`` when there is none). A row with ``state=None``
    or ``closed`` drops them all. The store never looks inside a part either.
    """

    table_id: str
    config: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] | None = None
    seq: int = 0
    closed: bool = False
    epoch: int = 0
    parts: dict[str, Any] | None = None


class BetReads(NamedTuple):
    """A player's standing for a bet (:meth:`Store.bet_reads`): their restriction in
    force (:meth:`Store.player_restriction`), their limits
    (:meth:`Store.player_limits`), their play session (:meth:`Store.play_session`) and
    their days from a day on (:meth:`Store.player_days`; empty when they set no limit)."""

    restriction: dict[str, Any] | None
    limits: dict[str, Any]
    play: dict[str, Any] | None
    days: dict[str, dict[str, int]]


class CommitResult(NamedTuple):
    """What a commit did: how many entries were newly inserted (the rest were already
    stored), and the balance, after the commit, of every ``player:<id>`` account the
    given entries touch (inserted or not), for the caller to refresh its cache."""

    inserted: int
    balances: dict[str, int]


@dataclass(frozen=True, slots=True)
class RoundIndex:
    """The indexed fields of a round record (the rest is stored as it is). ``time`` is
    the record's ``time`` (Unix seconds; 0.0 for a record without one)."""

    round_id: str
    table: str
    shoe_no: int
    coup_no: int
    players: tuple[str, ...]
    time: float = 0.0

    @property
    def order(self) -> tuple[float, str]:
        """Where the round stands in :meth:`Store.round_records` (newest is highest)."""
        return (self.time, self.round_id)


@dataclass(frozen=True, slots=True)
class RoundQuery:
    """What :meth:`Store.round_records` is asked: ``time`` in ``[since, until)`` (either
    open when ``None``), each other filter when given, ``(time, round_id)`` below
    ``before`` when given, at most ``limit`` (capped at :data:`ROUNDS_LIMIT`). Checked
    by :func:`round_query` (:class:`StoreError`), not when made."""

    since: float | None = None
    until: float | None = None
    table: str | None = None
    player: str | None = None
    round_id: str | None = None
    limit: int = 100
    before: tuple[float, str] | None = None


@dataclass(frozen=True, slots=True)
class RoundFilter:
    """The checked filters of :meth:`Store.round_records`: ``time`` in ``[low, high)``,
    the other fields equal when given, ``(time, round_id)`` below ``before`` when
    given; at most ``limit`` (0 to :data:`ROUNDS_LIMIT`)."""

    low: float
    high: float
    table: str | None
    player: str | None
    round_id: str | None
    limit: int
    before: tuple[float, str] | None

    def matches(self, index: RoundIndex) -> bool:
        """Whether a round (its indexed fields) is one asked for."""
        return (
            self.low <= index.time < self.high
            and (self.table is None or index.table == self.table)
            and (self.round_id is None or index.round_id == self.round_id)
            and (self.player is None or self.player in index.players)
            and (self.before is None or index.order < self.before)
        )


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
        """Connect and create (or migrate) the schema if needed. Other methods need an
        open store."""

    async def close(self) -> None:
        """Release the connection (and the claim of :meth:`claim_serving`). Closing twice
        is harmless."""

    async def claim_serving(self) -> None:
        """Claim the store for this serving process, before it claims any table. A store
        of one process (SQLite) that another live process serves raises
        :class:`StoreInUse`; a shared store (Redis) and a process's own (memory) allow
        it. The claim lasts until :meth:`close` or the process's end, however it ends."""

    async def ensure_player(
        self, player_id: str, name: str, initial_balance: int, *, guest: bool = False
    ) -> int:
        """Create ``player:<id>`` if new, funded by ``cashier -> player:<id>`` under key
        ``welcome:<id>``; set the display name; note the player as seen now (a guest
        can expire once idle: :meth:`expire_guests`); return the balance."""

    async def player_name(self, player_id: str) -> str | None:
        """The player's display name, or ``None`` for an unknown player."""

    async def expire_guests(self, idle_seconds: float) -> int:
        """Forget every guest not seen for ``idle_seconds`` whose only ledger entry is
        their welcome (untouched): their row, account and welcome go (the cashier takes
        the welcome back, so the books still balance). Returns how many went."""

    async def load_balances(self) -> dict[str, int]:
        """Every account's balance."""

    async def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        """The balances of ``accounts`` (0 for an account never used)."""

    async def player_money(self, player_id: str, tables: Iterable[str] = ()) -> tuple[int, int]:
        """``(balance, available)``: ``available`` is ``player:<id>`` (money on no
        table); ``balance`` adds the player's stakes ``stake:<t>:<id>`` at ``tables``."""

    async def has_entry(self, key: str) -> bool:
        """Whether a ledger entry holds ``key``."""

    async def commit(
        self,
        *,
        entries: Sequence[Entry] = (),
        table: TableRow | None = None,
        records: Sequence[Mapping[str, Any]] = (),
        events: Sequence[Mapping[str, Any]] = (),
        calls: Sequence[Mapping[str, Any]] = (),
        guards: Sequence[LimitGuard] = (),
    ) -> CommitResult:
        """Write entries, the table row, records, the table's events (which need
        ``table``) and wallet calls (:func:`check_wallet_call`) in one transaction,
        holding each of ``guards`` (:func:`guard_breach`: checked after the entries'
        flows are added, before anything is kept).
        Raises :class:`KeyConflict`, :class:`Overdrawn`, :class:`StaleEpoch`,
        :class:`LimitPassed` or
        :class:`StoreError` (and then keeps nothing of the commit, calls included), or
        :class:`StoreUnavailable`. Events whose ``seq`` is already stored for the table
        are skipped (a retried commit), and so are calls whose ``transaction_id`` is
        already stored (the stored call is kept as it is); each call inserted gets the
        next ``seq`` (a ``seq`` given with it is ignored)."""

    async def claim_table(self, table_id: str) -> int:
        """Atomically increment and return the table's epoch: a new owner calls it
        before its first write, and every write of an older owner is then refused."""

    async def table_seq(self, table_id: str) -> int:
        """The ``seq`` of ``table_id``'s stored row, closed or not (0 if there is none):
        a table created again under the id of a closed one numbers its events on from
        there, so a ``seq`` is never used twice for one id."""

    async def load_tables(self) -> list[TableRow]:
        """Every table not closed, in the order they were first saved, each with the
        stored epoch."""

    async def table_ids(self) -> list[str]:
        """The ids of :meth:`load_tables`' tables, in its order, without reading their
        rows (what the lobby and the cluster's placement need, every few seconds)."""

    async def load_table(self, table_id: str) -> TableRow | None:
        """One table of :meth:`load_tables` (None: no such table, or it is closed)."""

    async def save_table(self, row: TableRow) -> None:
        """Upsert one table row (``commit(table=row)``)."""

    async def events_after(self, table_id: str, seq: int) -> list[dict[str, Any]] | None:
        """The table's stored events after ``seq``, in order (``[]`` when there are
        none), or ``None`` when some of them are no longer kept (pruned, or never
        stored): the caller then sends a snapshot."""

    async def history(self, player_id: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        """The round records of rounds ``player_id`` bet in, newest first, at most
        ``min(limit, HISTORY_LIMIT)``."""

    async def round_record(self, round_id: str) -> dict[str, Any] | None:
        """One round record."""

    async def round_records(
        self,
        query: RoundQuery,
    ) -> list[dict[str, Any]]:
        """Every round record (the whole trail, not a player's pruned index) whose
        ``time`` is in ``[query.since, query.until)`` and that matches each filter given (``player``:
        one of its ``players``), newest first: by ``(time, round_id)`` descending, at
        most ``min(limit, ROUNDS_LIMIT)``. With ``before=(time, round_id)`` (the last
        record's: the cursor of the next page), only those ordered below it, so paging
        never repeats or misses a round, even among rounds of one ``time``. From an
        index on time (per table when ``table`` is given); ``player`` filters the
        records found (no index keeps every round of a player). See
        :func:`round_query`."""

    async def shoe_record(self, table_id: str, shoe_no: int | None = None) -> dict[str, Any] | None:
        """One shoe record; with ``shoe_no=None``, the revealed one with the highest
        ``shoe_no``."""

    async def shoe_records(self, table_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """A table's shoe records, highest ``shoe_no`` first."""

    async def secret(self, name: str, nbytes: int = 32) -> bytes:
        """A random key of ``nbytes`` made once (atomically: every process gets the
        same one) and kept, e.g. to sign guests' resume tokens across restarts."""

    async def ledger(self, account: str | None = None, limit: int = 1000) -> list[Entry]:
        """The newest ``limit`` entries (touching ``account`` if given), newest first."""

    # -- a player's currency (docs/wallet.md §2, the transfer API) -----------------------
    async def player_currency(self, player_id: str) -> str | None:
        """The currency fixed for ``player_id``'s money (an ISO 4217 code), or ``None``
        while none is (their first transfer fixes it)."""

    async def set_player_currency(self, player_id: str, currency: str) -> str:
        """Fix ``player_id``'s currency to ``currency`` unless one is fixed already
        (atomically: of two concurrent calls, one wins), and return the one stored. A
        currency is never changed once fixed."""

    # -- a player's time-out or self-exclusion (issue 21, responsible play) ------------
    async def player_restriction(self, player_id: str) -> dict[str, Any] | None:
        """The restriction in force for ``player_id`` now: ``{"kind", "until", "by",
        "since"}`` (``kind`` one of :data:`RESTRICTION_KINDS`, ``until`` and ``since``
        Unix seconds), or ``None`` (none set, lifted, or its ``until`` has passed)."""

    async def set_player_restriction(
        self, player_id: str, kind: str, until: float, by: str, *, rule: RestrictionRule
    ) -> dict[str, Any] | None:
        """Set ``player_id``'s restriction atomically, by ``rule`` (the caller's:
        ``server.protection.rules.merge_restriction``), run on the stored one inside the
        transaction, and return the one in force after (``None``: none)."""

    # -- a player's usage and limits (issue 21, responsible play) ----------------------
    async def player_days(self, player_id: str, since_day: str) -> dict[str, dict[str, int]]:
        """The player's flows by UTC day (``"YYYY-MM-DD"``) for every day ``>=
        since_day`` that has any: ``{day: {"staked", "net", "deposited"}}`` (whole
        numbers, minor units). :meth:`commit` keeps them: each entry it newly inserts
        adds its :func:`entry_flow` to the bucket of the commit's day (:func:`flow_day`
        of the store's clock); a skipped or refused entry adds nothing. A player's
        newest :data:`FLOW_DAYS` days are kept (older ones are pruned as new ones are
        written)."""

    async def bet_reads(self, player_id: str, since_day: str) -> BetReads:
        """What a bet of the player's is checked against, read together (one round trip:
        :class:`BetReads`); the days are read only when the player has limits."""

    async def player_limits(self, player_id: str) -> dict[str, Any]:
        """The player's limits in force now (:func:`current_limits` of the stored value,
        at the store's clock): ``{kind: {"amount", "since", "by"}}``, with ``"pending":
        {"amount", "from"}`` while a raise or a removal waits; ``{}`` when none."""

    async def set_player_limits(
        self, player_id: str, changes: Mapping[str, int | None], by: str, *, rule: LimitsRule
    ) -> dict[str, Any]:
        """Merge ``changes`` into the player's limits atomically, by ``rule`` (the
        caller's: ``server.protection.rules.merge_limits``) run on the stored value at
        the store's clock inside the transaction, and return the value stored after.
        Bad changes raise :class:`StoreError` and change nothing."""

    # -- a player's play session and its reality checks (responsible play) -------------
    async def open_play_session(
        self, player_id: str, now: float, gap: float, every: float | None, *, rule: PlayRule
    ) -> dict[str, Any]:
        """A connection of ``player_id``'s said hello at ``now`` (Unix seconds): keep the
        player's play session by ``rule`` (the caller's:
        ``server.protection.rules.open_play``) atomically (of two
        processes opening at once, one starts it and the other continues it), and
        return it (:func:`play_session`'s shape). A new one's ``baseline`` is the sum
        of the player's flows (:meth:`player_days`) from the UTC day of ``now``, read in
        the same transaction. ``gap``: seconds without a connection that end a session;
        ``every``: the reality check's period in seconds (None: none). Bad arguments
        raise :class:`StoreError` and change nothing."""

    async def play_session(self, player_id: str) -> dict[str, Any] | None:
        """The player's play session as stored (maybe long ended: see ``seen``):
        ``{"started", "seen", "every", "next", "baseline": {"staked", "net"}}``, times
        in Unix seconds (``every`` seconds or None; ``next``, when the next reality
        check is due, or None: none), or None when there is none."""

    async def touch_play_sessions(self, player_ids: Sequence[str], now: float) -> None:
        """A connection of each of ``player_ids`` is open at ``now`` (or closed then):
        their stored sessions' ``seen`` becomes ``now`` unless it is later already.
        A player with no session is left without one."""

    async def ack_reality_check(
        self, player_id: str, now: float, *, rule: AckRule
    ) -> dict[str, Any] | None:
        """The player answered a reality check at ``now``: the session ``rule`` (the
        caller's: ``server.protection.rules.ack_play``) makes of the stored one, kept
        atomically and returned; None (and nothing changed) when ``rule`` says none was
        due."""

    async def audit(self) -> dict[str, Any]:
        """``{"sum", "ledger_matches", "entries", "holds_ok", "problems"}``: the sum of
        every balance (always 0), whether each balance equals its ledger sum, the number
        of ledger entries, and whether every hold is accounted for (see
        :func:`hold_problems`; ``problems`` says what is wrong, one line each)."""

    # -- the wallet calls' outbox (docs/wallet.md §3-§4) ---------------------------------
    async def update_wallet_call(
        self,
        transaction_id: str,
        changes: Mapping[str, Any],
        *,
        only_from: str | None = None,
    ) -> dict[str, Any] | None:
        """Merge ``changes`` (only the fields of :data:`WALLET_CALL_CHANGES`, else
        :class:`BadWalletCall`) into the stored call, atomically, and return the call as
        stored now (``None`` for an unknown ``transaction_id``). The due index follows:
        a call whose ``state`` leaves ``pending`` is due no more; a pending one is due
        at its (new) ``next_at``. A merged call of the wrong shape changes nothing. With
        ``only_from``, the call changes only if its state is that one, in the same
        atomic step (a compare-and-set: of two people resolving it at once, one does);
        otherwise it is returned as it is."""

    async def due_wallet_calls(
        self,
        now: float,
        limit: int = 100,
        kinds: Sequence[str] = ("credit", "rollback"),
    ) -> list[dict[str, Any]]:
        """The ``pending`` calls of ``kinds`` whose ``next_at <= now``, oldest
        ``next_at`` first (then lowest ``seq``), at most ``min(limit,
        WALLET_CALLS_LIMIT)``: from an index, not a scan of every call."""

    async def wallet_call(self, transaction_id: str) -> dict[str, Any] | None:
        """One stored call (with its ``seq``), or ``None``."""

    async def wallet_calls(
        self,
        *,
        state: str | None = None,
        player: str | None = None,
        table: str | None = None,
        round_id: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        before_seq: int | None = None,
    ) -> list[dict[str, Any]]:
        """The stored calls matching every filter given, newest (highest ``seq``) first,
        at most ``min(limit, WALLET_CALLS_LIMIT)``; with ``before_seq``, only those whose
        ``seq`` is lower (the last one's ``seq`` is the cursor of the next page)."""

    async def wallet_totals(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[dict[str, Any]]:
        """For reconciliation: the calls ``created`` in ``[since, until)``, counted and
        summed per ``(day, table, currency, kind, state)`` (``day`` is the UTC date of
        ``created``, ``"YYYY-MM-DD"``): ``{"day", "table", "currency", "kind", "state",
        "count", "amount"}`` dicts, sorted by those five (see :func:`wallet_totals`)."""

    # -- the operator's calls, each made once (docs/operator-api.md "Idempotency") -----
    async def claim_operator_call(
        self, key: str, fingerprint: str, keep: float
    ) -> dict[str, Any] | None:
        """Claim ``key`` for one call whose request is ``fingerprint`` (each a string of
        1-256 characters), atomically over every process sharing the store: of two
        claims of one key at once, one gets it. ``None``: the key was free (never
        claimed, or its record's time ran out) and is now this call's, kept ``keep``
        seconds (at most :data:`OPERATOR_CALL_KEEP_MAX`) from the store's clock; the
        caller makes the call, then keeps its answer (:meth:`answer_operator_call`).
        Else the record kept: ``{"fingerprint": str, "answer": dict | None}`` (``answer``
        None until it is kept: the first call still runs, or never finished). Bad
        arguments raise :class:`StoreError` and change nothing."""

    async def answer_operator_call(
        self, key: str, fingerprint: str, answer: Mapping[str, Any], keep: float
    ) -> None:
        """Keep ``answer`` (a JSON object) as the answer of the call that claimed ``key``
        for ``fingerprint``, the record kept ``keep`` seconds from the store's clock. A
        key whose record is another fingerprint's, or gone, is left as it is."""


# -- helpers shared by the implementations ----------------------------------------------


def check_currency(player_id: object, currency: object) -> None:
    """Refuse a player's currency no store may hold: a player id and three capital
    letters (the shape of an ISO 4217 code; whether the code exists is the caller's to
    check, with babel)."""
    if not isinstance(player_id, str) or not player_id:
        raise StoreError("a currency is kept for a player id")
    if not isinstance(currency, str) or not (
        len(currency) == 3 and currency.isascii() and currency.isalpha() and currency.isupper()
    ):
        raise StoreError("a currency is an ISO 4217 code: three capital letters")


def check_operator_call(key: object, fingerprint: object, keep: object) -> float:
    """Refuse an operator call's record no store may hold (a caller's bug); ``keep``
    as a float."""
    for name, value in (("key", key), ("fingerprint", fingerprint)):
        if not isinstance(value, str) or not 1 <= len(value) <= _OPERATOR_CALL_KEY_MAX:
            raise StoreError(f"an operator call's {name} is 1-{_OPERATOR_CALL_KEY_MAX} characters")
    if isinstance(keep, bool) or not isinstance(keep, int | float):
        raise StoreError("an operator call is kept a number of seconds")
    if not 0 < keep <= OPERATOR_CALL_KEEP_MAX:
        raise StoreError(f"an operator call is kept 0-{OPERATOR_CALL_KEEP_MAX:.0f} seconds")
    return float(keep)


def operator_call_record(fingerprint: str, answer: Mapping[str, Any] | None) -> str:
    """An operator call's record as stored: ``{"fingerprint", "answer"}`` in JSON;
    :class:`StoreError` for an answer that is not a JSON object."""
    if answer is not None and not isinstance(answer, Mapping):
        raise StoreError("an operator call's answer is a JSON object")
    return dump_json({"fingerprint": fingerprint, "answer": answer})


#: A restriction's kinds: a time-out (``break``: 24 hours to a month) and a
#: self-exclusion (``exclusion``: six months or more).
RESTRICTION_KINDS: Final = frozenset({"break", "exclusion"})


# -- a player's usage: per-day flows, kept by commit (issue 21) ---------------------------


def check_day(day: object) -> str:
    """Refuse a day that is not ``"YYYY-MM-DD"`` (:class:`StoreError`)."""
    if not isinstance(day, str) or len(day) != 10:
        raise StoreError("a day is a UTC date, 'YYYY-MM-DD'")
    try:
        datetime.strptime(day, "%Y-%m-%d")
    except ValueError:
        raise StoreError("a day is a UTC date, 'YYYY-MM-DD'") from None
    return day


def flow_buckets(days: Mapping[str, Sequence[int]], since_day: str) -> dict[str, dict[str, int]]:
    """The answer of :meth:`Store.player_days` from a player's stored days (day ->
    ``(staked, net, deposited)``): those of ``since_day`` or later, oldest first."""
    return {
        day: dict(zip(FLOW_NAMES, (int(v) for v in days[day]), strict=True))
        for day in sorted(days)
        if day >= since_day
    }


# -- limits held by the commit itself (a reservation: issue 33) ---------------------------

#: What a guard caps, by the first part of its limit's kind: the index of the flow it
#: sums (:data:`FLOW_NAMES`) and whether the usage is the flow's opposite, floored at
#: 0 (a loss is ``max(0, -net)``: winnings never raise it above the cap).
GUARD_MEASURES: Final[dict[str, tuple[int, bool]]] = {
    "wager": (0, False),
    "loss": (1, True),
    "deposit": (2, False),
}


class LimitGuard(NamedTuple):
    """A cap a commit must not take a player past: the usage of ``kind`` (its first
    part names the measure, :data:`GUARD_MEASURES`: ``wager_week`` sums ``staked``)
    summed over the player's days from ``since`` (``YYYY-MM-DD``, UTC) on, today
    included, after the commit, at most ``cap``. Checked only when the commit's newly
    inserted entries raise that usage (chips placed, a deposit): taking chips back, a
    settlement or a retried commit passes whatever the usage is."""

    player: str
    kind: str
    cap: int
    since: str


def check_guard(guard: object) -> LimitGuard:
    """Refuse a guard of the wrong shape (:class:`StoreError`); the guard."""
    if not isinstance(guard, LimitGuard):
        raise StoreError("a limit guard is a LimitGuard")
    if not isinstance(guard.player, str) or not guard.player:
        raise StoreError("a limit guard names its player")
    if not isinstance(guard.kind, str) or guard.kind.split("_")[0] not in GUARD_MEASURES:
        raise StoreError(f"a limit guard's kind is one of {sorted(GUARD_MEASURES)}_*")
    if not _is_int(guard.cap) or not 0 <= guard.cap <= MAX_AMOUNT:
        raise StoreError("a limit guard's cap is a whole number, 0 to 2**53 - 1")
    check_day(guard.since)
    return guard


def guard_measure(kind: str) -> tuple[int, bool]:
    """The flow a guard of ``kind`` sums and whether its usage is that flow's opposite."""
    return GUARD_MEASURES[kind.split("_")[0]]


def guard_breach(guard: LimitGuard, total: int, added: int) -> LimitPassed | None:
    """Whether a commit passes ``guard``: ``total`` is the guarded flow summed over the
    guard's days after the commit, ``added`` what the commit's new entries added to it.
    The refusal, or None when the usage did not rise or stays within the cap."""
    _index, opposite = guard_measure(guard.kind)
    sign = -1 if opposite else 1
    if added * sign <= 0:
        return None  # the usage did not rise: nothing to hold back

    def usage(flow: int) -> int:
        return max(0, flow * sign)

    if usage(total) <= guard.cap:
        return None
    return LimitPassed(guard.kind, guard.cap, max(0, guard.cap - usage(total - added)))


# -- a player's limits: stored and merged atomically (issue 21) ---------------------------

#: The limits a player may set: deposits, losses (``-net``) and wagers (``staked``) per
#: day, week and month (minor units), and a session's length (minutes).
LIMIT_KINDS: Final = (
    "deposit_day",
    "deposit_week",
    "deposit_month",
    "loss_day",
    "loss_week",
    "loss_month",
    "wager_day",
    "wager_week",
    "wager_month",
    "session",
)


def check_limit_changes(changes: Mapping[str, int | None], by: str) -> dict[str, int | None]:
    """Refuse (:class:`StoreError`) changes to a player's limits of the wrong shape: a
    kind not in :data:`LIMIT_KINDS`, an amount that is not a whole number from 1 to
    2**53 - 1 or ``None`` (remove), or a ``by`` that is neither ``"player"`` nor
    ``"operator:<name>"``. Returns them as a dict."""
    if not isinstance(by, str) or not (by == "player" or by.startswith("operator:")):
        raise StoreError("a limit is changed by 'player' or 'operator:<name>'")
    if not isinstance(changes, Mapping):
        raise StoreError(f"limit changes are a mapping, not {type(changes).__name__}")
    for kind, amount in changes.items():
        if kind not in LIMIT_KINDS:
            raise StoreError(f"{kind!r} is not a limit: one of {', '.join(LIMIT_KINDS)}")
        if amount is not None and (not _is_int(amount) or not 0 < amount <= MAX_AMOUNT):
            raise StoreError(
                f"limit {kind}: a whole number from 1 to 2**53 - 1, or None to remove it"
            )
    return dict(changes)


def current_limits(stored: Mapping[str, Any] | None, now: float) -> dict[str, Any]:
    """``stored`` limits as they stand at ``now``: every pending change due by then
    (``pending["from"] <= now``) applied (its amount set, or the limit removed when it
    is ``None``, ``since`` its ``from``). A copy: ``stored`` is not changed."""
    out: dict[str, Any] = {}
    for kind, limit in (stored or {}).items():
        pending = limit.get("pending")
        if pending is None or float(pending["from"]) > now:
            out[kind] = {**limit, **({} if pending is None else {"pending": dict(pending)})}
        elif pending["amount"] is not None:
            out[kind] = {
                "amount": pending["amount"],
                "since": float(pending["from"]),
                "by": "player",
            }
    return out


# -- a player's play session (responsible play) ----------------------------------------

#: The flows a play session's result counts (its ``baseline`` is their sum when it began).
PLAY_FLOWS: Final = ("staked", "net")


def check_play_time(value: object, what: str) -> float:
    """Refuse (:class:`StoreError`) a time that is not a finite number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise StoreError(f"a play session's {what} is a finite number of seconds")
    return float(value)


def check_play_open(
    player_id: object, now: object, gap: object, every: object
) -> tuple[float, float, float | None]:
    """Refuse (:class:`StoreError`) the arguments of :meth:`Store.open_play_session` of
    the wrong shape: an empty player id, a time that is not finite, a negative gap, a
    period that is neither None nor positive. Returns ``(now, gap, every)``."""
    if not isinstance(player_id, str) or not player_id:
        raise StoreError("a play session is kept for a player id")
    at, span = check_play_time(now, "time"), check_play_time(gap, "gap")
    if span < 0:
        raise StoreError("a play session's gap is not negative")
    if every is None:
        return at, span, None
    period = check_play_time(every, "reality check period")
    if period <= 0:
        raise StoreError("a reality check's period is positive seconds, or None")
    return at, span, period


def play_baseline(days: Mapping[str, Sequence[int]], now: float) -> dict[str, int]:
    """A new session's baseline: the ``staked`` and ``net`` of the stored days (day ->
    ``(staked, net, deposited)``) from the UTC day of ``now`` on."""
    since = flow_day(now)
    rows = [sums for day, sums in days.items() if day >= since]
    return {name: sum(int(row[n]) for row in rows) for n, name in enumerate(PLAY_FLOWS)}


def own_copy(exc: BaseException) -> BaseException:
    """A copy of ``exc`` for one caller of a group that failed together, so that the
    callers do not raise (and add their tracebacks to) one shared object."""
    try:
        copy = type(exc)(*exc.args)
    except Exception:  # an exception that cannot be made again from its args
        return exc
    copy.__cause__, copy.__suppress_context__ = exc.__cause__, exc.__suppress_context__
    return copy


def check_row(row: TableRow) -> tuple[str, str]:
    """Check a table row; return its config and state as JSON text."""
    if not isinstance(row, TableRow):
        raise StoreError(f"not a table row: {type(row).__name__}")
    if not isinstance(row.table_id, str) or not row.table_id:
        raise StoreError("a table row has a table id")
    for name in ("seq", "epoch"):
        value = getattr(row, name)
        if not _is_int(value) or not 0 <= value <= MAX_AMOUNT:
            raise StoreError(f"table {row.table_id!r}: {name} is a whole number >= 0")
    if not isinstance(row.closed, bool):
        raise StoreError(f"table {row.table_id!r}: closed is true or false")
    return dump_state(row.config), dump_state(row.state)


def check_event(event: Mapping[str, Any]) -> tuple[int, str]:
    """Check one stored event (``{"seq", "kind", "data", "private"}``); return its seq
    and its JSON text."""
    if not isinstance(event, Mapping):
        raise StoreError(f"an event is a mapping, not {type(event).__name__}")
    seq = event.get("seq")
    if not _is_int(seq) or not 0 <= seq <= MAX_AMOUNT:
        raise StoreError("an event has a whole-number seq >= 0")
    if not isinstance(event.get("kind"), str):
        raise StoreError(f"event {seq}: kind is a string")
    return seq, dump_state(event)


def check_parts(row: TableRow) -> tuple[bool, list[tuple[str, str | None]]]:
    """Check a commit's parts (:class:`TableRow`): whether every part stored goes first
    (a table created, or closed), and each part's key with its JSON text (None: the
    part goes)."""
    parts = row.parts or {}
    if not isinstance(parts, Mapping):
        raise StoreError(f"table {row.table_id!r}: parts are a mapping")
    out: list[tuple[str, str | None]] = []
    for key, part in sorted(parts.items()):
        if not isinstance(key, str) or not key:
            raise StoreError(f"table {row.table_id!r}: a part's key is a string")
        if part is not None and not isinstance(part, Mapping):
            raise StoreError(f"table {row.table_id!r}: part {key!r} is a mapping or None")
        out.append((key, None if part is None else dump_state(part)))
    return row.state is None or row.closed, out


def check_events(
    table: TableRow | None, events: Sequence[Mapping[str, Any]]
) -> list[tuple[int, str]]:
    """Check a commit's events: they need the table row and rise strictly by seq."""
    if not events:
        return []
    if table is None:
        raise StoreError("events are stored with their table's row")
    prepared = [check_event(event) for event in events]
    if any(b[0] <= a[0] for a, b in itertools.pairwise(prepared)):
        raise StoreError(f"table {table.table_id!r}: a step's events rise by seq")
    return prepared


def follows(after: int, events: list[tuple[int, str]], top: int) -> list[dict[str, Any]] | None:
    """The answer of :meth:`Store.events_after`: ``events`` (seq, JSON) are the kept
    events with a seq above ``after``, ascending; ``top`` is the table's latest seq (its
    row's or its last event's). They are served only if they run from ``after + 1`` to
    ``top`` without a gap: otherwise some were pruned (or never stored)."""
    if not _is_int(after) or after < 0:
        raise StoreError("events are asked for after a whole-number seq >= 0")
    top = max([top, *(seq for seq, _ in events[-1:])])
    if after >= top:
        return []
    expected = range(after + 1, top + 1)
    if len(events) != len(expected) or any(
        seq != want for (seq, _), want in zip(events, expected, strict=False)
    ):
        return None
    return [json.loads(body) for _, body in events]


def dump_state(value: Any) -> str:
    """Serialize a table's state, config or event, made by the table itself on every
    step (issue 23: with ``orjson``, about a tenth of the standard library's time for a
    row of a few KiB, on the loop before each commit). The same JSON as
    :func:`dump_json` for the same data, but for non-finite floats, which come out as
    ``null`` (the table makes none: its times are the clock's, its amounts integers);
    :class:`StoreError` if it is not JSON-able (bytes, an integer past 64 bits, an object
    of no JSON type)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError as exc:
        raise StoreError(f"not JSON-able: {exc}") from None


def dump_json(value: Any) -> str:
    """Serialize table state or a record; :class:`StoreError` if it is not JSON-able."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"not JSON-able: {exc}") from None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def record_time(record: Mapping[str, Any]) -> float:
    """A round record's ``time`` as the stores index it: a finite number, else 0.0."""
    value = record.get("time")
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return 0.0


def round_query(query: RoundQuery) -> RoundFilter:
    """A :meth:`Store.round_records` query, checked (:class:`StoreError`)."""
    if not isinstance(query, RoundQuery):
        raise StoreError("round records are asked for with a RoundQuery")
    since, until, table, player = query.since, query.until, query.table, query.player
    round_id, limit, before = query.round_id, query.limit, query.before
    low, high = check_span(since, until)
    for name, value in (("table", table), ("player", player), ("round_id", round_id)):
        if value is not None and not isinstance(value, str):
            raise StoreError(f"{name} is a string")
    if not _is_int(limit):
        raise StoreError("a limit is a whole number")
    if before is not None:
        if (
            not isinstance(before, tuple | list)
            or len(before) != 2
            or not isinstance(before[0], int | float)
            or isinstance(before[0], bool)
            or not math.isfinite(before[0])
            or not isinstance(before[1], str)
        ):
            raise StoreError("before is (time, round_id)")
        before = (float(before[0]), before[1])
    return RoundFilter(low, high, table, player, round_id, max(0, min(limit, ROUNDS_LIMIT)), before)


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
        return RoundIndex(
            round_id, table, shoe_no, coup_no, tuple(dict.fromkeys(players)), record_time(record)
        )
    if kind == "shoe":
        table = record.get("table")
        shoe_no = record.get("shoe_no")
        if not isinstance(table, str) or not table or not _is_int(shoe_no):
            raise StoreError("a shoe record has a table and an integer shoe_no")
        if not -MAX_AMOUNT <= shoe_no <= MAX_AMOUNT:
            raise StoreError(f"shoe {shoe_no}: out of range")
        return ShoeIndex(table, shoe_no, record.get("revealed", True) is not False)
    raise StoreError(f"a record's kind is 'round' or 'shoe', not {kind!r}")


def hold_problems(
    entries: Iterable[Entry], recorded: Iterable[str], balances: Mapping[str, int]
) -> list[str]:
    """What is wrong with the held wagers (issue 8, defect 0), one line each.

    ``entries`` holds at least every ``hold`` and outcome (``lose``, ``return``,
    ``refund``, ``void``) entry; ``recorded`` the round ids among theirs that have a round record;
    ``balances`` at least every ``held:<table>`` balance. The rules (GAME_RULES §7, §8):

    - a hold (key ``<round_id>:<player>:<area>:hold``, into ``held:<table>``) has exactly
      one outcome, keyed ``<round_id>:<player>:<area>:<kind>``, out of the same held
      account and for the same amount;
    - a hold may lack its outcome only while its round is open (no round record yet),
      and a table has at most one open round;
    - each ``held:<table>`` balance is the sum of that table's open holds (zero between
      coups).
    """
    holds: dict[str, Entry] = {}
    outcomes: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.kind == "hold":
            if entry.key.endswith(":hold"):
                holds[entry.key.removesuffix(":hold")] = entry
        elif entry.kind in OUTCOME_KINDS and entry.key.endswith(f":{entry.kind}"):
            outcomes.setdefault(entry.key.removesuffix(f":{entry.kind}"), []).append(entry)
    recorded = set(recorded)
    problems: list[str] = []
    open_rounds: dict[str, set[str]] = {}
    open_sums: dict[str, int] = {}
    for base, hold in holds.items():
        if not hold.dst.startswith("held:"):
            problems.append(f"hold {hold.key!r} is not into a held account")
            continue
        table = hold.dst.removeprefix("held:")
        found = outcomes.pop(base, [])
        if len(found) > 1:
            kinds = ", ".join(sorted(e.kind for e in found))
            problems.append(f"hold {hold.key!r} has {len(found)} outcomes ({kinds})")
        elif found:
            (outcome,) = found
            if outcome.src != hold.dst or outcome.amount != hold.amount:
                problems.append(
                    f"outcome {outcome.key!r} does not give back hold {hold.key!r} "
                    f"({outcome.amount} from {outcome.src}, held {hold.amount} in {hold.dst})"
                )
        elif hold.round_id is None:
            problems.append(f"hold {hold.key!r} has no round and no outcome")
        elif hold.round_id in recorded:
            problems.append(f"hold {hold.key!r} has no outcome after its round was recorded")
        else:
            open_rounds.setdefault(table, set()).add(hold.round_id)
            open_sums[table] = open_sums.get(table, 0) + hold.amount
    for base, found in sorted(outcomes.items()):
        for outcome in found:
            problems.append(f"outcome {outcome.key!r} has no hold {base + ':hold'!r}")
    for table, rounds in sorted(open_rounds.items()):
        if len(rounds) > 1:
            problems.append(f"table {table!r} has {len(rounds)} open rounds: {sorted(rounds)}")
    held = {a.removeprefix("held:") for a, b in balances.items() if a.startswith("held:")}
    for table in sorted(held | open_sums.keys()):
        balance = balances.get(f"held:{table}", 0)
        if balance != open_sums.get(table, 0):
            problems.append(
                f"held:{table} holds {balance}, its open holds {open_sums.get(table, 0)}"
            )
    return problems


def audit_report(
    balances: Mapping[str, int], flows: Mapping[str, int], count: int, problems: list[str]
) -> dict[str, Any]:
    """The dict :meth:`Store.audit` returns, from every balance and every account's
    ledger sum."""
    accounts = balances.keys() | flows.keys()
    return {
        "sum": sum(balances.values()),
        "ledger_matches": all(balances.get(a, 0) == flows.get(a, 0) for a in accounts),
        "entries": count,
        "holds_ok": not problems,
        "problems": problems,
    }


# -- wallet calls: their shape, shared by the implementations ---------------------------

#: The fields of a wallet call that are non-empty strings.
_CALL_STRINGS: Final = ("request_id", "player", "table", "round_id")
#: Its times: Unix seconds, stored as floats.
_CALL_TIMES: Final = ("next_at", "created", "updated")
#: Its free fields (JSON kept as given), what each may be, and what a missing one is.
_CALL_FREE: Final[dict[str, tuple[tuple[type, ...], Any]]] = {
    "body": ((dict,), {}),
    "answer": ((dict, type(None)), None),
    "reference": ((str, type(None)), None),
    "reason": ((str, type(None)), None),
    "error": ((str, type(None)), None),
}


def prepare_wallet_call(call: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """Check a wallet call (see :func:`check_wallet_call`); return it as stored (without
    its ``seq``) and its JSON text."""
    if not isinstance(call, Mapping):
        raise BadWalletCall(f"a wallet call is a mapping, not {type(call).__name__}")
    txn = call.get("transaction_id")
    if not isinstance(txn, str) or not txn:
        raise BadWalletCall("a wallet call has a transaction_id (a non-empty string)")
    out = dict(call)
    out.pop("seq", None)  # the store's

    def bad(what: str) -> BadWalletCall:
        return BadWalletCall(f"wallet call {txn!r}: {what}")

    if out.get("kind") not in WALLET_CALL_KINDS:
        raise bad(f"kind is one of {', '.join(WALLET_CALL_KINDS)}")
    if out.get("state") not in WALLET_CALL_STATES:
        raise bad(f"state is one of {', '.join(WALLET_CALL_STATES)}")
    for name in _CALL_STRINGS:
        if not isinstance(out.get(name), str) or not out[name]:
            raise bad(f"{name} is a non-empty string")
    currency = out.get("currency")
    if currency is not None and (not isinstance(currency, str) or not currency):
        raise bad("currency is a non-empty string or null")
    out["currency"] = currency
    for name in ("amount", "attempts"):
        value = out.get(name)
        if not _is_int(value) or not 0 <= value <= MAX_AMOUNT:
            raise bad(f"{name} is a whole number from 0 to 2**53 - 1")
    for name in _CALL_TIMES:
        value = out.get(name)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise bad(f"{name} is a Unix time in seconds")
        if not (math.isfinite(value) and value >= 0):
            raise bad(f"{name} is a Unix time in seconds")
        out[name] = float(value)
    for name, (types, missing) in _CALL_FREE.items():
        value = out.get(name, missing)
        if not isinstance(value, types):
            raise bad(f"{name} is a {' or '.join(t.__name__ for t in types)}")
        out[name] = value
    resolutions = out.get("resolutions", [])  # only once a person did something about it
    if not isinstance(resolutions, list) or not all(isinstance(r, dict) for r in resolutions):
        raise bad("resolutions is a list of objects")
    try:
        text = dump_json(out)
    except StoreError as exc:
        raise bad(str(exc)) from None
    return json.loads(text), text


def check_wallet_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """Refuse (:class:`BadWalletCall`, a :class:`StoreError` and a ``ValueError``) a
    wallet call of the wrong shape; return it as a store keeps it.

    A wallet call is a JSON-able dict: ``transaction_id`` (a non-empty string, unique:
    the key), ``kind`` (:data:`WALLET_CALL_KINDS`), ``request_id``, ``player``,
    ``table``, ``round_id`` (non-empty strings), ``amount`` (0 to 2**53 - 1),
    ``currency`` (a string, or ``None`` for play money), ``state``
    (:data:`WALLET_CALL_STATES`), ``attempts`` (a whole number >= 0), ``next_at`` (when
    to try it next), ``created`` and ``updated`` (Unix times; kept as floats), and the
    free fields kept as given: ``body`` (the request's body, a dict; ``{}`` if missing),
    ``answer`` (a dict or ``None``), ``reference``, ``reason`` and ``error`` (strings or
    ``None``; ``None`` if missing), ``resolutions`` (when a person sent it again or
    resolved it: a list of objects, ``server.operator.wallet``), and any other
    JSON-able field. A store adds ``seq``
    (a ``seq`` given here is dropped)."""
    return prepare_wallet_call(call)[0]


def merge_wallet_call(
    stored: Mapping[str, Any], changes: Mapping[str, Any]
) -> tuple[dict[str, Any], str]:
    """A stored call with ``changes`` merged in, checked (see :func:`check_wallet_changes`
    and :func:`check_wallet_call`), and its JSON text; without ``seq``."""
    return prepare_wallet_call({**stored, **check_wallet_changes(changes)})


def check_wallet_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """Refuse changes to anything but a call's progress (:data:`WALLET_CALL_CHANGES`)."""
    if not isinstance(changes, Mapping):
        raise BadWalletCall(f"changes are a mapping, not {type(changes).__name__}")
    fixed = set(changes) - WALLET_CALL_CHANGES
    if fixed:
        raise BadWalletCall(
            f"only {', '.join(sorted(WALLET_CALL_CHANGES))} of a wallet call may change,"
            f" not {', '.join(sorted(map(str, fixed)))}"
        )
    return dict(changes)


def wallet_limit(limit: int) -> int:
    """``limit`` within 0 to :data:`WALLET_CALLS_LIMIT`."""
    if not _is_int(limit):
        raise BadWalletCall("a limit is a whole number")
    return max(0, min(limit, WALLET_CALLS_LIMIT))


def check_due_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """The kinds :meth:`Store.due_wallet_calls` is asked for, checked."""
    if isinstance(kinds, str):
        kinds = (kinds,)
    found = tuple(dict.fromkeys(kinds))
    if any(kind not in WALLET_CALL_KINDS for kind in found):
        raise BadWalletCall(f"wallet call kinds are among {', '.join(WALLET_CALL_KINDS)}")
    return found


def check_due_time(now: float) -> float:
    """The ``now`` of :meth:`Store.due_wallet_calls`, as a float."""
    if not isinstance(now, int | float) or isinstance(now, bool) or math.isnan(now):
        raise BadWalletCall("now is a Unix time in seconds")
    return float(now)


def wallet_filters(
    *,
    state: str | None = None,
    player: str | None = None,
    table: str | None = None,
    round_id: str | None = None,
    kind: str | None = None,
    before_seq: int | None = None,
) -> dict[str, str]:
    """The filters of :meth:`Store.wallet_calls` that were given, checked, as the
    fields a call must hold (``before_seq`` is only checked)."""
    given = {"state": state, "player": player, "table": table, "round_id": round_id}
    filters = {name: value for name, value in (given | {"kind": kind}).items() if value is not None}
    if any(not isinstance(value, str) for value in filters.values()):
        raise BadWalletCall("wallet call filters are strings")
    if state is not None and state not in WALLET_CALL_STATES:
        raise BadWalletCall(f"a wallet call's state is one of {', '.join(WALLET_CALL_STATES)}")
    if kind is not None and kind not in WALLET_CALL_KINDS:
        raise BadWalletCall(f"a wallet call's kind is one of {', '.join(WALLET_CALL_KINDS)}")
    if before_seq is not None and not _is_int(before_seq):
        raise BadWalletCall("before_seq is a whole number")
    return filters


def wallet_call_matches(call: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    """Whether ``call`` holds every field of ``filters`` (:func:`wallet_filters`)."""
    return all(call.get(name) == value for name, value in filters.items())


def check_span(since: float | None, until: float | None) -> tuple[float, float]:
    """The ``[since, until)`` of :meth:`Store.wallet_totals` (and of
    :meth:`Store.round_records`), open ends made infinite."""
    for value in (since, until):
        if value is not None and (
            not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value)
        ):
            raise BadWalletCall("since and until are Unix times in seconds")
    return (
        -math.inf if since is None else float(since),
        math.inf if until is None else float(until),
    )


def wallet_totals(
    calls: Iterable[Mapping[str, Any]], since: float | None = None, until: float | None = None
) -> list[dict[str, Any]]:
    """The answer of :meth:`Store.wallet_totals` from ``calls`` (stored calls, any
    order): those ``created`` in ``[since, until)`` counted and summed per ``(day,
    table, currency, kind, state)``, sorted by those (play money's ``None`` currency
    before every code)."""
    low, high = check_span(since, until)
    sums: dict[tuple[str, str, str | None, str, str], list[int]] = {}
    for call in calls:
        created = call["created"]
        if not low <= created < high:
            continue
        day = datetime.fromtimestamp(created, tz=UTC).strftime("%Y-%m-%d")
        group = (day, call["table"], call["currency"], call["kind"], call["state"])
        found = sums.setdefault(group, [0, 0])
        found[0] += 1
        found[1] += call["amount"]

    def order(group: tuple[str, str, str | None, str, str]) -> tuple[str, str, str, str, str]:
        day, table, currency, kind, state = group
        return day, table, currency or "", kind, state

    names = ("day", "table", "currency", "kind", "state")
    return [
        {**dict(zip(names, group, strict=True)), "count": count, "amount": amount}
        for group, (count, amount) in sorted(sums.items(), key=lambda item: order(item[0]))
    ]
