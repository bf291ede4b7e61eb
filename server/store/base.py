r"""The store interface: wallets, the ledger, table state, events and round/shoe records.

One :class:`Store` interface, implemented by :class:`~server.store.sqlite.SQLiteStore`
(the default: one file, zero set-up; or a throwaway one in memory, ``--db memory:``) and
:class:`~server.store.redis.RedisStore` (state that many processes share). Both pass the
contract suite in ``tests/server/test_store.py`` (the httpcore backends' shape), and
``tests/store/test_store_oracle.py`` runs the same random steps on both and compares
them.

The money rules below are written once, in :mod:`server.ledger.rules` (the SQL and Lua
that keep them are generated from it); a commit is checked and serialized once, by
:func:`server.store.plan.plan_commit`; the errors are in :mod:`server.protocol.errors`. The rules every implementation keeps:

- **Double entry.** Money moves only as ledger :class:`~server.ledger.accounts.Entry`
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

The errors are the error tree's (:mod:`server.protocol.errors`: :class:`StoreError`
and its kinds, each with what it means). Every refused write (all but
:class:`StoreUnavailable`) kept nothing; a :class:`StoreUnavailable` write may, on
Redis, have been applied before the connection dropped: retrying the same commit is
harmless (idempotent by key, events by ``seq``).

Here: the :class:`Store` protocol and the rows and records it takes and gives
(:class:`TableRow`, :class:`RoundIndex`, :class:`RoundQuery`, :class:`LimitGuard`…) with
their bounds; the pure checks every store applies are beside it, by job:
:mod:`server.store.records` (rows, events, records, the round search, the audit),
:mod:`server.store.players` (a player's currency, flows, guards, limits, play session),
:mod:`server.store.calls` (the wallet calls' outbox, the operator's calls); and the
calls both stores answer alike (their checks, then each store's own primitive) are
written once in :mod:`server.store.front`.

A store must never decide a rule of the game, never reach into a table's state (it is
an opaque dict here), and never log an entry's, event's or record's contents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, Protocol, runtime_checkable

from server.ledger.accounts import Entry
from server.ledger.flows import LimitGuard

__all__ = [
    "EVENT_RETENTION",
    "HISTORY_LIMIT",
    "OPERATOR_CALL_KEEP_MAX",
    "ROUNDS_LIMIT",
    "WALLET_CALLS_LIMIT",
    "WALLET_CALL_CHANGES",
    "WALLET_CALL_KINDS",
    "WALLET_CALL_STATES",
    "AckRule",
    "BetReads",
    "CommitResult",
    "CurrentRule",
    "LimitsRule",
    "PlayRule",
    "RestrictionRule",
    "RoundFilter",
    "RoundIndex",
    "RoundQuery",
    "ShoeIndex",
    "Store",
    "TableRow",
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
#: (the stored limits, now) -> the limits in force then (a pending change due applied).
CurrentRule = Callable[[Mapping[str, Any] | None, float], dict[str, Any]]
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
        :class:`StoreInUse`; a shared store (Redis) and a SQLite database in memory
        allow it. The claim lasts until :meth:`close` or the process's end, however it ends."""

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

    async def bet_reads(self, player_id: str, since_day: str, *, rule: CurrentRule) -> BetReads:
        """What a bet of the player's is checked against, read together (one round trip:
        :class:`BetReads`), its limits as :meth:`player_limits` gives them; the days are
        read only when the player has limits stored."""

    async def player_limits(self, player_id: str, *, rule: CurrentRule) -> dict[str, Any]:
        """The player's limits in force now: ``rule`` (the caller's:
        ``server.protection.rules.current_limits``, a pending change applied once due)
        run on the stored value at the store's clock: ``{kind: {"amount", "since",
        "by"}}``, with ``"pending": {"amount", "from"}`` while a raise or a removal
        waits; ``{}`` when none."""

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
