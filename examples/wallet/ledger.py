"""The money: players' balances and every transaction, in one SQLite file.

These are the rules every operator's wallet must keep the same way (docs/wallet.md §3),
whatever it stores its accounts in:

- **At most once.** A ``transaction_id`` is applied once. A repeat of it (Chemmy sends the
  same ids on every retry) is answered with the first answer, word for word: the same
  HTTP status, the same ``status``, the same ``balance``. A repeat is told from a reuse
  by the fields that say what the call does (:data:`IDENTITY`); the same id with other
  fields is ``409 id_reused`` and moves nothing.
- **Check and apply in one transaction.** Looking the id up, checking the balance and
  moving the money are one database transaction (here one ``BEGIN IMMEDIATE`` under one
  lock), so two deliveries of one call racing each other cannot both apply it.
- **A debit moves money or nothing.** Refusals (``unknown_player``,
  ``currency_mismatch``, ``session_expired``, ``account_locked``, ``player_blocked``,
  ``limit_reached``, ``insufficient_funds``, ``rolled_back``) are answered ``200`` and
  recorded as the first answer, so a retry is refused the same way.
- **Credits and rollbacks are never refused for the session or the account.** A
  session that has ended (the player logged out), a locked or blocked account: a debit
  is refused for them, but the credit of a coup already played, and the rollback of a
  debit, are applied all the same (the money is the player's either way).
- **A rollback may come first.** Chemmy rolls back a debit whose answer it never got,
  and the debit itself may still be on its way. A rollback of a debit never seen is
  answered ``ok`` and kept (a tombstone), and the debit, when it comes, is refused
  ``rolled_back``. A rollback of an applied debit returns its amount, once.
- **Every debit is closed** by one credit (the coup's returns, ``0`` for a loss) or one
  rollback; the debit row says which (``closed_by``).

What is here only because it is an example: players Chemmy names that the wallet has
never seen are created with a starting balance (``--start-balance``), unless
``--known-players-only`` (then they are ``unknown_player``, as a real operator's own
accounts would have them); sessions are ended through the test API
(``/_control/sessions``), where a real operator's log-out ends them.
"""

from __future__ import annotations

import datetime
import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = ["ENDPOINTS", "Answer", "BadRequest", "Call", "Ledger", "parse_call"]

#: The wallet API's four calls (docs/wallet.md §3).
ENDPOINTS: Final = ("balance", "debit", "credit", "rollback")
#: The largest amount (minor units) a call may carry: what a JSON double holds exactly.
MAX_AMOUNT: Final = 2**53 - 1
#: The fields that say what a money call does: a repeat has the same ones.
IDENTITY: Final = ("kind", "player", "currency", "amount", "round_id", "debit_transaction_id")

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS players (
    id          TEXT PRIMARY KEY,
    currency    TEXT NOT NULL,
    balance     INTEGER NOT NULL,
    blocked     INTEGER NOT NULL DEFAULT 0,  -- a time-out or self-exclusion: player_blocked
    locked      INTEGER NOT NULL DEFAULT 0,  -- the account is locked: account_locked
    debit_limit INTEGER,             -- the most one debit may take, or NULL
    daily_limit INTEGER              -- the most a UTC day's debits may take, or NULL
);
CREATE TABLE IF NOT EXISTS transactions (
    transaction_id       TEXT PRIMARY KEY,   -- the idempotency key
    kind                 TEXT NOT NULL,      -- debit, credit, rollback
    player               TEXT NOT NULL,
    amount               INTEGER NOT NULL,
    round_id             TEXT NOT NULL,
    debit_transaction_id TEXT,               -- credits and rollbacks: the debit they close
    identity             TEXT NOT NULL,      -- IDENTITY as JSON: a repeat or a reuse?
    state                TEXT NOT NULL,      -- applied, refused, rolled_back
    moved                INTEGER NOT NULL,   -- what it did to the balance (+/-)
    closed_by            TEXT,               -- debits: the credit or rollback that closed it
    day                  TEXT NOT NULL,      -- UTC date, for daily limits
    http                 INTEGER NOT NULL,   -- the first answer, given again to a repeat
    answer               TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS transactions_by_debit ON transactions (debit_transaction_id);
CREATE TABLE IF NOT EXISTS sessions (
    id    TEXT PRIMARY KEY,             -- the session Chemmy's calls carry (session)
    ended INTEGER NOT NULL DEFAULT 0    -- logged out: its debits are session_expired
);
"""
#: The columns a database made before them lacks, added when it is opened.
MIGRATIONS: Final = ("ALTER TABLE players ADD COLUMN locked INTEGER NOT NULL DEFAULT 0",)
#: The fields every call carries besides the call itself (docs/wallet.md §3): the game
#: and where the player plays from (each may be null but ``game``).
ORIGIN: Final = ("game", "session", "brand", "jurisdiction")


class BadRequest(Exception):
    """A call that is not what docs/wallet.md §3 says (``400 bad_request``)."""


@dataclass(frozen=True)
class Call:
    """One wallet call's fields, checked (:func:`parse_call`)."""

    kind: str
    request_id: str
    player: str
    currency: str
    transaction_id: str = ""
    amount: int = 0
    round_id: str = ""
    table: str | None = None
    debit_transaction_id: str | None = None
    game: str = ""
    session: str | None = None
    brand: str | None = None
    jurisdiction: str | None = None

    def identity(self) -> str:
        """The fields a repeat shares with the first delivery, as canonical JSON."""
        return json.dumps({name: getattr(self, name) for name in IDENTITY}, sort_keys=True)


@dataclass(frozen=True)
class Answer:
    """An HTTP status and a JSON body; ``repeat``: the first answer to an earlier call."""

    http: int
    body: dict[str, Any]
    repeat: bool = False

    @property
    def status(self) -> str:
        return str(self.body.get("status", ""))


def _text(data: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = data.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= 128 or not value.isprintable():
        raise BadRequest(f"{name} must be a string of 1 to 128 printable characters")
    return value


def _origin(data: dict[str, Any], game: str | None) -> dict[str, Any]:
    """The :data:`ORIGIN` fields, each required (``game`` a string, ``game`` if this
    wallet serves one game only; the others a string or null)."""
    missing = [name for name in ORIGIN if name not in data]
    if missing:
        raise BadRequest(f"a call carries {', '.join(ORIGIN)} (missing {missing[0]})")
    origin = {name: _text(data, name, required=name == "game") for name in ORIGIN}
    if game is not None and origin["game"] != game:
        raise BadRequest(f"this wallet serves the game {game!r}, not {origin['game']!r}")
    return origin


def parse_call(kind: str, data: Any, game: str | None = None) -> Call:
    """The call ``kind`` (one of :data:`ENDPOINTS`) from its JSON body, or
    :class:`BadRequest`; ``game``: the one game code taken (None: any)."""
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object")
    request_id, player = _text(data, "request_id"), _text(data, "player")
    currency = _text(data, "currency")
    assert request_id is not None and player is not None and currency is not None
    origin = _origin(data, game)
    if kind == "balance":
        return Call(kind, request_id, player, currency, **origin)
    transaction_id, round_id = _text(data, "transaction_id"), _text(data, "round_id")
    assert transaction_id is not None and round_id is not None
    if not transaction_id.isascii():
        raise BadRequest("transaction_id must be printable ASCII")
    amount = data.get("amount")
    least = 0 if kind == "credit" else 1
    if type(amount) is not int or not least <= amount <= MAX_AMOUNT:
        raise BadRequest(f"amount must be an integer from {least} to 2^53-1")
    debit_id = _text(data, "debit_transaction_id", required=kind != "debit")
    table = _text(data, "table", required=False)
    return Call(
        kind,
        request_id,
        player,
        currency,
        transaction_id,
        amount,
        round_id,
        table,
        debit_id,
        **origin,
    )


def _refusal(call: Call, status: str, message: str, balance: int) -> Answer:
    body = {"status": status, "transaction_id": call.transaction_id, "balance": balance}
    return Answer(200, {**body, "message": message})


class Ledger:
    """Balances and transactions in the SQLite file ``path``.

    New players get ``currency`` and ``start_balance`` (with ``known_only``, a player
    not set through :meth:`set_player` is ``unknown_player``). Safe to call from many
    threads: one connection, one lock, one database transaction per call.
    """

    def __init__(
        self,
        path: Path | str,
        currency: str = "EUR",
        start_balance: int = 100_000,
        *,
        known_only: bool = False,
    ):
        self.currency = currency
        self.start_balance = start_balance
        self.known_only = known_only
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.executescript(SCHEMA)
        columns = {row["name"] for row in self._db.execute("PRAGMA table_info(players)")}
        for migration in MIGRATIONS:
            if migration.split()[5] not in columns:
                self._db.execute(migration)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- the four calls ----------------------------------------------------------------
    def apply(self, call: Call) -> Answer:
        """Answer ``call``: the first answer again to a repeat, else apply it once."""
        with self._transaction() as db:
            if call.kind != "balance":
                earlier = self._earlier(db, call)
                if earlier is not None:
                    return earlier
            player = self._player(db, call.player)
            refused = self._refusal(db, call, player)
            if refused is not None:
                return refused
            if player is None:  # a rollback for a player the wallet does not have
                return self._rollback(db, call, None)
            if call.kind == "balance":
                return Answer(
                    200,
                    {"status": "ok", "balance": player["balance"], "currency": player["currency"]},
                )
            if call.kind == "debit":
                return self._debit(db, call, player)
            if call.kind == "credit":
                return self._credit(db, call, player)
            return self._rollback(db, call, player)

    def _refusal(
        self, db: sqlite3.Connection, call: Call, player: sqlite3.Row | None
    ) -> Answer | None:
        """Why this call is refused before it touches money, or None. A balance or a
        debit: the player unknown, of another currency, their session ended, their
        account locked (``200``: a debit's refusal is its first answer). A credit or a
        rollback is never refused for the session or the account (docs/wallet.md §3);
        only a player the wallet does not have, or another currency, which cannot be
        the debit's and needs a person (``409``)."""
        problem: tuple[str, str] | None = None
        if player is None:
            problem = "unknown_player", f"there is no player {call.player}"
        elif player["currency"] != call.currency:
            problem = "currency_mismatch", f"{call.player}'s currency is not {call.currency}"
        if call.kind in ("credit", "rollback"):
            if problem is None:
                return None
            if call.kind == "rollback" and problem[0] == "unknown_player":
                return None  # nothing was taken from nobody: a tombstone, answered ok
            return Answer(409, {"status": problem[0], "message": problem[1]})
        if problem is None and call.session is not None and self._ended(db, call.session):
            problem = "session_expired", f"the session {call.session} has ended"
        if problem is None and player is not None and player["locked"]:
            problem = "account_locked", f"{call.player}'s account is locked"
        if problem is None:
            return None
        balance = player["balance"] if player is not None else 0
        if call.kind == "balance":
            return Answer(200, {"status": problem[0], "message": problem[1]})
        return self._record(db, call, "refused", 0, _refusal(call, *problem, balance))

    @staticmethod
    def _ended(db: sqlite3.Connection, session: str) -> bool:
        row = db.execute("SELECT ended FROM sessions WHERE id = ?", (session,)).fetchone()
        return row is not None and bool(row["ended"])

    def refuse(self, call: Call, status: str, http: int = 200) -> Answer:
        """Refuse ``call`` with ``status`` (an injected refusal), answered ``http``. A
        debit's ``200`` refusal is final, so it is recorded as the debit's first answer,
        like any refusal; anything else is not (Chemmy retries credits and rollbacks
        until they are applied, and the retry after the rule is spent is). A repeat of a
        call seen before gets its first answer."""
        message = "refused on cue (/_control/faults)"
        with self._transaction() as db:
            player = self._player(db, call.player)
            balance = player["balance"] if player is not None else 0
            if call.kind == "balance":
                return Answer(http, {"status": status, "balance": balance, "message": message})
            earlier = self._earlier(db, call)
            if earlier is not None:
                return earlier
            answer = _refusal(call, status, message, balance)
            if http != 200:
                return Answer(http, {"status": status, "message": message})
            if call.kind != "debit":
                return answer
            return self._record(db, call, "refused", 0, answer)

    def _debit(self, db: sqlite3.Connection, call: Call, player: sqlite3.Row) -> Answer:
        balance: int = player["balance"]
        tombstone = db.execute(
            "SELECT transaction_id FROM transactions WHERE kind = 'rollback'"
            " AND debit_transaction_id = ?",
            (call.transaction_id,),
        ).fetchone()
        if tombstone is not None:
            answer = _refusal(
                call, "rolled_back", "this debit was rolled back before it came", balance
            )
            return self._record(db, call, "rolled_back", 0, answer, closed_by=tombstone[0])
        refused = self._debit_refusal(db, call, player)
        if refused is not None:
            status, message = refused
            return self._record(db, call, "refused", 0, _refusal(call, status, message, balance))
        balance -= call.amount
        db.execute("UPDATE players SET balance = ? WHERE id = ?", (balance, call.player))
        answer = Answer(
            200, {"status": "ok", "transaction_id": call.transaction_id, "balance": balance}
        )
        return self._record(db, call, "applied", -call.amount, answer)

    def _debit_refusal(
        self, db: sqlite3.Connection, call: Call, player: sqlite3.Row
    ) -> tuple[str, str] | None:
        """Why the operator refuses this debit (status, message), or None."""
        if player["blocked"]:
            return "player_blocked", f"{call.player} may not play"
        if player["debit_limit"] is not None and call.amount > player["debit_limit"]:
            return (
                "limit_reached",
                f"more than {call.player}'s limit of {player['debit_limit']} a coup",
            )
        if player["daily_limit"] is not None:
            (today,) = db.execute(
                "SELECT COALESCE(SUM(amount), 0) FROM transactions WHERE kind = 'debit'"
                " AND state = 'applied' AND player = ? AND day = ?",
                (call.player, _today()),
            ).fetchone()
            if today + call.amount > player["daily_limit"]:
                return (
                    "limit_reached",
                    f"more than {call.player}'s limit of {player['daily_limit']} a day",
                )
        if call.amount > player["balance"]:
            return "insufficient_funds", f"{call.player} has {player['balance']}"
        return None

    def _credit(self, db: sqlite3.Connection, call: Call, player: sqlite3.Row) -> Answer:
        debit = db.execute(
            "SELECT closed_by, kind FROM transactions WHERE transaction_id = ?",
            (call.debit_transaction_id,),
        ).fetchone()
        if debit is not None and debit["kind"] == "debit" and debit["closed_by"] is not None:
            # Closed already (by a rollback: the stake went back): paying the coup too
            # would pay the player twice. Needs a person, as a rollback after a credit.
            message = f"{call.debit_transaction_id} was closed by {debit['closed_by']}"
            return Answer(409, {"status": "debit_closed", "message": message})
        balance = player["balance"] + call.amount
        db.execute("UPDATE players SET balance = ? WHERE id = ?", (balance, call.player))
        db.execute(
            "UPDATE transactions SET closed_by = ? WHERE transaction_id = ? AND kind = 'debit'"
            " AND closed_by IS NULL",
            (call.transaction_id, call.debit_transaction_id),
        )
        answer = Answer(
            200, {"status": "ok", "transaction_id": call.transaction_id, "balance": balance}
        )
        return self._record(db, call, "applied", call.amount, answer)

    def _rollback(self, db: sqlite3.Connection, call: Call, player: sqlite3.Row | None) -> Answer:
        balance: int | None = None if player is None else player["balance"]
        debit = db.execute(
            "SELECT * FROM transactions WHERE transaction_id = ?", (call.debit_transaction_id,)
        ).fetchone()
        returned = 0
        if debit is not None:
            problem = _rollback_problem(call, debit)
            if problem is not None:
                return Answer(409, problem)
            returned = -debit["moved"]  # the debit's amount if it moved money, else 0
            balance = (balance or 0) + returned
            db.execute("UPDATE players SET balance = ? WHERE id = ?", (balance, call.player))
            db.execute(
                "UPDATE transactions SET state = CASE state WHEN 'applied' THEN 'rolled_back'"
                " ELSE state END, closed_by = ? WHERE transaction_id = ?",
                (call.transaction_id, debit["transaction_id"]),
            )
        # else: a tombstone. The row recorded below is what refuses the debit if it comes.
        answer = Answer(
            200, {"status": "ok", "transaction_id": call.transaction_id, "balance": balance}
        )
        return self._record(db, call, "applied", returned, answer)

    # -- the parts ---------------------------------------------------------------------
    def _player(self, db: sqlite3.Connection, name: str) -> sqlite3.Row | None:
        """The player (created if new: an example's shortcut, unless ``known_only``), or
        None for one the wallet does not have."""
        if not self.known_only:
            db.execute(
                "INSERT OR IGNORE INTO players (id, currency, balance) VALUES (?, ?, ?)",
                (name, self.currency, self.start_balance),
            )
        row: sqlite3.Row | None = db.execute(
            "SELECT * FROM players WHERE id = ?", (name,)
        ).fetchone()
        return row

    def _earlier(self, db: sqlite3.Connection, call: Call) -> Answer | None:
        """The first answer if this ``transaction_id`` was seen, ``409 id_reused`` if it
        was seen with other fields, None if it is new."""
        row = db.execute(
            "SELECT identity, http, answer FROM transactions WHERE transaction_id = ?",
            (call.transaction_id,),
        ).fetchone()
        if row is None:
            return None
        if row["identity"] != call.identity():
            message = f"{call.transaction_id} was used for another call"
            return Answer(409, {"status": "id_reused", "message": message})
        return Answer(row["http"], json.loads(row["answer"]), repeat=True)

    def _record(
        self,
        db: sqlite3.Connection,
        call: Call,
        state: str,
        moved: int,
        answer: Answer,
        closed_by: str | None = None,
    ) -> Answer:
        db.execute(
            "INSERT INTO transactions (transaction_id, kind, player, amount, round_id,"
            " debit_transaction_id, identity, state, moved, closed_by, day, http, answer)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                call.transaction_id,
                call.kind,
                call.player,
                call.amount,
                call.round_id,
                call.debit_transaction_id,
                call.identity(),
                state,
                moved,
                closed_by,
                _today(),
                answer.http,
                json.dumps(answer.body),
            ),
        )
        return answer

    # -- what the control API shows and sets -------------------------------------------
    def set_player(self, name: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Set a player's ``balance``, ``blocked``, ``locked``, ``debit_limit``,
        ``daily_limit`` (null: none) or ``currency``, creating them if new; their row
        after."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO players (id, currency, balance) VALUES (?, ?, ?)",
                (name, self.currency, self.start_balance),
            )
            for column, value in changes.items():  # the columns were checked by the caller
                db.execute(f"UPDATE players SET {column} = ? WHERE id = ?", (value, name))
            row = db.execute("SELECT * FROM players WHERE id = ?", (name,)).fetchone()
            return _player_dict(row)

    def set_session(self, session: str, ended: bool) -> dict[str, Any]:
        """End a session (the player logged out: its debits are refused
        ``session_expired``), or open it again."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO sessions (id, ended) VALUES (?, ?)"
                " ON CONFLICT (id) DO UPDATE SET ended = excluded.ended",
                (session, int(ended)),
            )
        return {"session": session, "ended": ended}

    def state(self) -> dict[str, Any]:
        """Every player, every session ended, and every transaction in the order they
        came."""
        with self._lock:
            players = self._db.execute("SELECT * FROM players ORDER BY id").fetchall()
            rows = self._db.execute("SELECT * FROM transactions ORDER BY rowid").fetchall()
            ended = self._db.execute("SELECT id FROM sessions WHERE ended ORDER BY id").fetchall()
        kinds = {row["transaction_id"]: row["kind"] for row in rows}
        transactions = [
            {
                "transaction_id": row["transaction_id"],
                "kind": row["kind"],
                "player": row["player"],
                "amount": row["amount"],
                "round_id": row["round_id"],
                "debit_transaction_id": row["debit_transaction_id"],
                "state": row["state"],
                "status": json.loads(row["answer"]).get("status"),
                "moved": row["moved"],
                "closed_by": row["closed_by"],
                # debits: "credit" or "rollback", the kind of call that closed it, or None
                "closed": kinds.get(row["closed_by"]) if row["closed_by"] else None,
            }
            for row in rows
        ]
        return {
            "players": {row["id"]: _player_dict(row) for row in players},
            "ended_sessions": [row["id"] for row in ended],
            "transactions": transactions,
        }


#: The columns ``/_control/players`` may set, and the types their values may have.
PLAYER_SETTINGS: Final[dict[str, tuple[type, ...]]] = {
    "balance": (int,),
    "blocked": (bool,),
    "debit_limit": (int, type(None)),
    "daily_limit": (int, type(None)),
    "currency": (str,),
    "locked": (bool,),
}


def _player_dict(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "currency": row["currency"],
        "balance": row["balance"],
        "blocked": bool(row["blocked"]),
        "locked": bool(row["locked"]),
        "debit_limit": row["debit_limit"],
        "daily_limit": row["daily_limit"],
    }


def _rollback_problem(call: Call, debit: sqlite3.Row) -> dict[str, str] | None:
    """Why a rollback may not undo this debit (a body for 409), or None."""
    if debit["kind"] != "debit" or debit["player"] != call.player or debit["amount"] != call.amount:
        message = f"{call.debit_transaction_id} is not a debit of {call.amount} from {call.player}"
        return {"status": "debit_mismatch", "message": message}
    if debit["closed_by"] is not None:
        # Closed by a credit: undoing it now would return the stake twice. (Closed by
        # another rollback id: the money went back already.) Needs a person.
        message = f"{call.debit_transaction_id} was closed by {debit['closed_by']}"
        return {"status": "debit_closed", "message": message}
    return None


def _today() -> str:
    return datetime.datetime.now(datetime.UTC).date().isoformat()
