"""The SQLite store's statements: the functions that read and write rows on a
connection inside a transaction the caller holds (tables, parts, events, entries,
flows, wallet calls, round index, protection rows, the audit).

They apply what the ledger and the plan decided; they must never open or commit a
transaction, nor decide a rule.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from server.ledger.accounts import Entry
from server.ledger.audit import audit_report, hold_problems
from server.ledger.flows import FLOW_NAMES, LimitGuard, add_flows, guard_breach, guard_measure
from server.ledger.rules import OUTCOME_KINDS, check_balance, check_epoch, stored_again
from server.store.base import RoundIndex, TableRow
from server.store.plan import first_event_kept, new_events


def _balance(db: sqlite3.Connection, account: str) -> int:
    row = db.execute("SELECT balance FROM accounts WHERE account = ?", (account,)).fetchone()
    return 0 if row is None else int(row[0])


def _epoch(db: sqlite3.Connection, table_id: str) -> int:
    row = db.execute("SELECT epoch FROM epochs WHERE table_id = ?", (table_id,)).fetchone()
    return 0 if row is None else int(row[0])


#: What a table row's upsert sets (``?1`` to ``?5``: id, config, state, seq, closed).
_TABLE_SET: Final = (
    " ON CONFLICT (table_id) DO UPDATE SET config = excluded.config,"
    " state = excluded.state, seq = excluded.seq, closed = excluded.closed"
)
#: The upsert of a row whose epoch (``?6``) is the stored one; nothing written otherwise.
_PUT_TABLE_AT_EPOCH: Final = (
    "INSERT INTO tables (table_id, config, state, seq, closed) SELECT ?1, ?2, ?3, ?4, ?5"
    " WHERE ?6 = coalesce((SELECT epoch FROM epochs WHERE table_id = ?1), 0)" + _TABLE_SET
)
_PUT_TABLE: Final = (
    "INSERT INTO tables (table_id, config, state, seq, closed) VALUES (?1, ?2, ?3, ?4, ?5)"
    + _TABLE_SET
)


def _put_table(db: sqlite3.Connection, table: TableRow, table_json: tuple[str, str]) -> None:
    """Upsert the row, after the fencing check (a stale owner writes nothing).

    A commit almost always finds the stored epoch equal to its row's (the one its owner
    claimed, or 0 for a table never claimed): the row is then written by one statement,
    the check in its ``WHERE`` (which writes nothing when the epochs differ). Otherwise
    the stored epoch is read: a lower one is :class:`StaleEpoch`; a higher one (claimed
    elsewhere) is stored, then the row."""
    row = (table.table_id, *table_json, table.seq, int(table.closed))
    if db.execute(_PUT_TABLE_AT_EPOCH, (*row, table.epoch)).rowcount:
        return
    check_epoch(table.table_id, table.epoch, _epoch(db, table.table_id))
    db.execute(
        "INSERT INTO epochs (table_id, epoch) VALUES (?, ?) ON CONFLICT (table_id)"
        " DO UPDATE SET epoch = excluded.epoch",
        (table.table_id, table.epoch),
    )
    db.execute(_PUT_TABLE, row)


#: A table row with its epoch (the rows of ``WHERE`` ...).
_LOAD_TABLES: Final = (
    "SELECT tables.table_id, config, state, seq, closed, coalesce(epoch, 0)"
    " FROM tables LEFT JOIN epochs ON epochs.table_id = tables.table_id"
)


def _rows(rows: list[Any], parts: dict[str, dict[str, Any]]) -> list[TableRow]:
    """Table rows as :data:`_LOAD_TABLES` reads them, each with its parts."""
    return [
        TableRow(
            tid, json.loads(config), json.loads(state), seq, bool(closed), epoch, parts.get(tid)
        )
        for tid, config, state, seq, closed, epoch in rows
    ]


def _put_parts(
    db: sqlite3.Connection, tid: str, drop: bool, parts: list[tuple[str, str | None]]
) -> None:
    """Write a commit's parts of a table (``TableRow.parts``): all of them dropped first
    for a table created or closed, then each written or dropped."""
    if drop:
        db.execute("DELETE FROM table_parts WHERE table_id = ?", (tid,))
    gone = [(tid, key) for key, body in parts if body is None]
    if gone:
        db.executemany("DELETE FROM table_parts WHERE table_id = ? AND part = ?", gone)
    kept = [(tid, key, body) for key, body in parts if body is not None]
    if kept:
        db.executemany(
            "INSERT INTO table_parts (table_id, part, body) VALUES (?, ?, ?)"
            " ON CONFLICT (table_id, part) DO UPDATE SET body = excluded.body",
            kept,
        )


def _parts(db: sqlite3.Connection, tid: str | None) -> dict[str, dict[str, Any]]:
    """The stored parts of one table (or every table): table -> key -> part."""
    rows = db.execute(
        "SELECT table_id, part, body FROM table_parts"
        + ("" if tid is None else " WHERE table_id = ?"),
        () if tid is None else (tid,),
    ).fetchall()
    out: dict[str, dict[str, Any]] = {}
    for table_id, key, body in rows:
        out.setdefault(table_id, {})[key] = json.loads(body)
    return out


def _put_events(
    db: sqlite3.Connection, table: TableRow, events: list[tuple[int, str]], retention: int
) -> None:
    """Append the step's events not yet stored, and prune: a table's events have
    gap-free seqs, so keeping the last ``retention`` seqs keeps the newest
    ``retention`` events (and never more), with one indexed range delete.

    The events at or below the last seq stored are skipped (a retried commit): not by
    ``INSERT OR IGNORE``, which would put back an older event pruned since, and not by
    a test in the insert (``INSERT ... SELECT ... WHERE seq > (SELECT max(seq) ...)``):
    an insert whose ``SELECT`` reads its own table goes through a temporary table, and
    cost more than the read before it."""
    tid = table.table_id
    if table.state is None:  # a table created (again): a new event log
        db.execute("DELETE FROM events WHERE table_id = ?", (tid,))
    if not events:
        return
    (last,) = db.execute(
        "SELECT coalesce(max(seq), -1) FROM events WHERE table_id = ?", (tid,)
    ).fetchone()
    new = new_events(events, last)
    if not new:
        return
    db.executemany(
        "INSERT INTO events (table_id, seq, body) VALUES (?, ?, ?)",
        ((tid, seq, body) for seq, body in new),
    )
    kept = first_event_kept(new[-1][0], retention)
    db.execute("DELETE FROM events WHERE table_id = ? AND seq < ?", (tid, kept))


#: A ledger entry's insert (its six fields).
_INSERT_ENTRY: Final = (
    "INSERT INTO ledger (key, src, dst, amount, kind, round_id) VALUES (?, ?, ?, ?, ?, ?)"
)


#: A commit of at least this many entries (a settlement: one to three for each area
#: each player bet on) is posted together (:func:`_post_together`) when it can be.
POST_TOGETHER: Final = 8
#: Host parameters in one ``IN (...)`` (SQLite's least limit is 999).
_IN_CHUNK: Final = 500


def _post(
    db: sqlite3.Connection,
    entries: Iterable[Entry],
    day: str | None = None,
    cutoff: str = "",
    pruned: _Pruned | None = None,
) -> tuple[int, dict[str, int], dict[str, list[int]]]:
    """Insert the entries not yet in the ledger and move their balances, in order; with
    ``day``, add the inserted entries' flows to their players' buckets of that day (and
    drop their days before ``cutoff``).
    Returns how many were inserted, the balances they left and the flows they added.

    Many entries are posted together (:func:`_post_together`), else one at a time
    (:func:`_post_each`): the same entries kept, the same balances left, the same
    refusals."""
    entries = list(entries)
    left = _post_together(db, entries) if len(entries) >= POST_TOGETHER else None
    if left is None:
        inserted, left = _post_each(db, entries)
    else:
        inserted = entries
    flows = add_flows({}, inserted)
    if day is not None:
        _put_flows(db, flows, day, cutoff, pruned)
    return len(inserted), left, flows


def _select_in(db: sqlite3.Connection, sql: str, values: Sequence[str]) -> list[Any]:
    """The rows of ``sql`` (one ``IN ({})`` to fill) for all of ``values``, a chunk at
    a time."""
    rows: list[Any] = []
    for at in range(0, len(values), _IN_CHUNK):
        chunk = values[at : at + _IN_CHUNK]
        rows += db.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall()
    return rows


def _post_together(db: sqlite3.Connection, entries: list[Entry]) -> dict[str, int] | None:
    """Post ``entries`` in a few statements, not two an entry (a settlement of a
    thousand bettors' wagers is about 1,500 entries, issue 37): their accounts' balances
    and their keys read :data:`_IN_CHUNK` at a time, each entry's move made and checked
    in order here (:func:`check_balance`, as each statement's would be), every entry
    inserted in one ``executemany`` and each account written once with what the entries
    left. Accounts not made yet are made first, at 0, as :func:`_post_each` makes them (a
    newcomer's first bet, a new file's first settlement into the house). None (nothing
    written) when they cannot all be new entries: a key stored already (a retried
    commit) or twice; then :func:`_post_each` posts them one at a time. The balances
    left, as :func:`_post_each` returns them."""
    accounts = list(dict.fromkeys(a for e in entries for a in (e.src, e.dst)))
    keys = [e.key for e in entries]
    if len(set(keys)) < len(keys):
        return None
    if _select_in(db, "SELECT key FROM ledger WHERE key IN ({})", keys):
        return None
    balances: dict[str, int] = dict(
        _select_in(db, "SELECT account, balance FROM accounts WHERE account IN ({})", accounts)
    )
    if len(balances) < len(accounts):
        new = [a for a in accounts if a not in balances]
        db.executemany("INSERT INTO accounts (account) VALUES (?)", [(a,) for a in new])
        balances.update(dict.fromkeys(new, 0))
    left: dict[str, int] = {}
    for entry in entries:  # the source's check before the destination's, as _post_each
        src, dst = balances[entry.src] - entry.amount, balances[entry.dst] + entry.amount
        check_balance(entry.src, src)
        check_balance(entry.dst, dst)
        balances[entry.src] = left[entry.src] = src
        balances[entry.dst] = left[entry.dst] = dst
    db.executemany(
        _INSERT_ENTRY, [(e.key, e.src, e.dst, e.amount, e.kind, e.round_id) for e in entries]
    )
    db.executemany(
        "UPDATE accounts SET balance = ? WHERE account = ?",
        [(balance, account) for account, balance in left.items()],
    )
    return left


def _post_each(db: sqlite3.Connection, entries: list[Entry]) -> tuple[list[Entry], dict[str, int]]:
    """Post ``entries`` one at a time: the entries inserted (those not stored already)
    and the balances they left.

    A new entry between accounts that exist (all but the first into a stake) is two
    statements: its insert, then its move. The insert is refused whole when the key is
    taken or an account is missing (the ``UNIQUE`` key, the foreign keys), and only then
    is the stored entry read (:func:`_refused_entry`): a read of the key before every
    insert cost more than catching the rare refusal (and an insert that tests the key
    itself, ``INSERT ... SELECT ... WHERE NOT EXISTS``, goes through a temporary table).
    A refused insert uses up no ``AUTOINCREMENT`` seq (a conflict ignored, by ``ON
    CONFLICT DO NOTHING`` or ``OR IGNORE``, would). An entry inserted before its move
    that the move refuses goes with the rest of the commit."""
    inserted: list[Entry] = []
    left: dict[str, int] = {}
    for entry in entries:
        row = (entry.key, entry.src, entry.dst, entry.amount, entry.kind, entry.round_id)
        try:
            db.execute(_INSERT_ENTRY, row)
        except sqlite3.IntegrityError:
            if not _refused_entry(db, entry, row):
                continue
        # Move both and read them back in one statement. Amounts and balances stay within
        # 2**53, so a sum never leaves SQLite's 64-bit integers; an overdraft is refused
        # by the CHECK (players), the trigger (stakes) and check_balance, the source's
        # before the destination's (which only rises: only check_balance may refuse it).
        moved = dict(
            db.execute(
                "UPDATE accounts SET balance = balance + iif(account = ?1, -?3, ?3)"
                " WHERE account IN (?1, ?2) RETURNING account, balance",
                (entry.src, entry.dst, entry.amount),
            ).fetchall()
        )
        for account in (entry.src, entry.dst):
            check_balance(account, moved[account])
            left[account] = moved[account]
        inserted.append(entry)
    return inserted, left


def _hold_guards(
    db: sqlite3.Connection, guards: Sequence[LimitGuard], flows: Mapping[str, list[int]]
) -> None:
    """Raise :class:`LimitPassed` when the ``flows`` just added take a player past one
    of ``guards`` (in the commit's transaction: its savepoint is rolled back)."""
    for guard in guards:
        index, _ = guard_measure(guard.kind)
        column = FLOW_NAMES[index]  # (a name of ours, never a caller's text)
        (total,) = db.execute(
            f"SELECT COALESCE(SUM({column}), 0) FROM player_days WHERE player_id = ? AND day >= ?",
            (guard.player, guard.since),
        ).fetchone()
        breach = guard_breach(guard, int(total), flows.get(guard.player, [0, 0, 0])[index])
        if breach is not None:
            raise breach


def _refused_entry(db: sqlite3.Connection, entry: Entry, row: tuple[Any, ...]) -> bool:
    """After ``entry``'s insert was refused: False when the same entry is stored under
    its key (a retried commit: skipped), :class:`KeyConflict` when another one is; else
    an account was missing: they are made, the entry inserted (True: to be moved)."""
    old = db.execute(
        "SELECT key, src, dst, amount, kind, round_id FROM ledger WHERE key = ?", (entry.key,)
    ).fetchone()
    if stored_again(None if old is None else Entry(*old), entry):
        return False
    db.executemany(
        "INSERT OR IGNORE INTO accounts (account) VALUES (?)", ((entry.src,), (entry.dst,))
    )
    db.execute(_INSERT_ENTRY, row)  # (refused again for any other reason: the caller's)
    return True


class _Pruned:
    """The players whose days older than :data:`FLOW_DAYS` were deleted on ``day``: a
    player's first flow of a day prunes (as the other stores do: the cutoff is
    :func:`~server.ledger.rules.flow_cutoff`), the rest of the day's commits need not.
    A prune counts once its commit is kept (:meth:`done`): a refused commit's is done
    again by the player's next one, and a transaction that failed forgets them all
    (:meth:`forget`), so a refusal never leaves an old day the other stores drop."""

    def __init__(self) -> None:
        self.day = ""
        self.players: set[str] = set()
        self.pending: tuple[str, list[str]] = ("", [])

    def due(self, day: str, players: Iterable[str]) -> list[str]:
        """Of ``players``, those not pruned on ``day`` yet (counted at :meth:`done`)."""
        if day != self.day:
            self.day, self.players = day, set()
        due = [player for player in players if player not in self.players]
        self.pending = (day, due)
        return due

    def done(self) -> None:
        """The commit that pruned (:meth:`due`) is kept: its players count as pruned."""
        day, due = self.pending
        if day == self.day:
            self.players.update(due)
        self.pending = ("", [])

    def forget(self) -> None:
        """The transaction failed (rolled back): no prune of it counts."""
        self.day, self.players, self.pending = "", set(), ("", [])


def _put_flows(
    db: sqlite3.Connection,
    flows: Mapping[str, list[int]],
    day: str,
    cutoff: str,
    pruned: _Pruned | None = None,
) -> None:
    """Add each player's flows to their row of ``day``, and delete their rows before
    ``cutoff`` (:func:`~server.ledger.rules.pruned_days`'s rule: an indexed range of the
    primary key), once a day per player when ``pruned`` remembers it."""
    if not flows:
        return
    db.executemany(
        "INSERT INTO player_days (player_id, day, staked, net, deposited) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (player_id, day) DO UPDATE SET staked = staked + excluded.staked,"
        " net = net + excluded.net, deposited = deposited + excluded.deposited",
        ((player, day, *sums) for player, sums in flows.items()),
    )
    due = list(flows) if pruned is None else pruned.due(day, flows)
    if due:
        db.executemany(
            "DELETE FROM player_days WHERE player_id = ? AND day < ?",
            ((player, cutoff) for player in due),
        )


def _put_calls(db: sqlite3.Connection, calls: list[tuple[dict[str, Any], str]]) -> None:
    """Insert the wallet calls whose transaction id is not stored yet (the stored one is
    kept as it is: a retried commit), atomically by ``ON CONFLICT DO NOTHING``. Most commits have none: no statement then."""
    if not calls:
        return
    db.executemany(
        "INSERT INTO wallet_calls (transaction_id, kind, state, player, table_id, round_id,"
        " currency, amount, next_at, created, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (transaction_id) DO NOTHING",
        (
            (
                call["transaction_id"],
                call["kind"],
                call["state"],
                call["player"],
                call["table"],
                call["round_id"],
                call["currency"],
                call["amount"],
                call["next_at"],
                call["created"],
                text,
            )
            for call, text in calls
        ),
    )


def _loaded_call(seq: int, data: str) -> dict[str, Any]:
    return {**json.loads(data), "seq": int(seq)}


def _put_round(db: sqlite3.Connection, index: RoundIndex, body: str, keep: int) -> None:
    """Upsert a round record (keeping its place in history), re-index its players and
    keep each player's index to their newest ``keep`` rounds (one ``OFFSET`` delete)."""
    db.execute(
        "INSERT INTO rounds (round_id, table_id, shoe_no, coup_no, body, time) VALUES"
        " (?, ?, ?, ?, ?, ?) ON CONFLICT (round_id) DO UPDATE SET table_id = excluded.table_id,"
        " shoe_no = excluded.shoe_no, coup_no = excluded.coup_no, body = excluded.body,"
        " time = excluded.time",
        (index.round_id, index.table, index.shoe_no, index.coup_no, body, index.time),
    )
    (seq,) = db.execute("SELECT seq FROM rounds WHERE round_id = ?", (index.round_id,)).fetchone()
    db.execute("DELETE FROM round_players WHERE round_seq = ?", (seq,))
    db.executemany(
        "INSERT INTO round_players (player_id, round_seq) VALUES (?, ?)",
        ((player, seq) for player in index.players),
    )
    db.executemany(
        "DELETE FROM round_players WHERE player_id = ? AND round_seq <= (SELECT round_seq"
        " FROM round_players WHERE player_id = ? ORDER BY round_seq DESC LIMIT 1 OFFSET ?)",
        ((player, player, keep) for player in index.players),
    )


def _audit(db: sqlite3.Connection) -> dict[str, Any]:
    balances: dict[str, int] = dict(db.execute("SELECT account, balance FROM accounts"))
    flows: dict[str, int] = dict(
        db.execute(
            "SELECT account, SUM(amount) FROM ("
            " SELECT dst AS account, amount FROM ledger"
            " UNION ALL SELECT src AS account, -amount FROM ledger"
            ") GROUP BY account"
        )
    )
    (count,) = db.execute("SELECT COUNT(*) FROM ledger").fetchone()
    kinds = ("hold", *OUTCOME_KINDS)
    wagers = [
        Entry(*row)
        for row in db.execute(
            "SELECT key, src, dst, amount, kind, round_id FROM ledger"
            f" WHERE kind IN ({', '.join('?' * len(kinds))})",
            kinds,
        )
    ]
    recorded = {
        round_id
        for (round_id,) in db.execute(
            "SELECT DISTINCT ledger.round_id FROM ledger JOIN rounds"
            " ON rounds.round_id = ledger.round_id WHERE ledger.kind = 'hold'"
        )
    }
    problems = hold_problems(wagers, recorded, balances)
    return audit_report(balances, flows, count, problems)


def _restriction(db: sqlite3.Connection, player_id: str) -> dict[str, Any] | None:
    """The restriction stored for ``player_id`` (maybe expired), or ``None``."""
    found = db.execute(
        "SELECT body FROM player_restrictions WHERE player_id = ?", (player_id,)
    ).fetchone()
    return None if found is None else dict(json.loads(found[0]))


def _limits(db: sqlite3.Connection, player_id: str) -> dict[str, Any] | None:
    """The limits stored for ``player_id`` (pendings not yet applied), or ``None``."""
    found = db.execute(
        "SELECT body FROM player_limits WHERE player_id = ?", (player_id,)
    ).fetchone()
    return None if found is None else dict(json.loads(found[0]))


def _days(db: sqlite3.Connection, player_id: str, since_day: str) -> dict[str, list[int]]:
    """The player's stored days from ``since_day`` on: day -> ``[staked, net, deposited]``."""
    rows = db.execute(
        "SELECT day, staked, net, deposited FROM player_days WHERE player_id = ? AND day >= ?",
        (player_id, since_day),
    )
    return {day: sums for day, *sums in rows}


def _play_session(db: sqlite3.Connection, player_id: str) -> dict[str, Any] | None:
    """The play session stored for ``player_id`` (``Store.play_session``), or ``None``."""
    found = db.execute(
        "SELECT started, seen, every, next, staked, net FROM play_sessions WHERE player_id = ?",
        (player_id,),
    ).fetchone()
    if found is None:
        return None
    started, seen, every, due, staked, net = found
    return {
        "started": float(started),
        "seen": float(seen),
        "every": None if every is None else float(every),
        "next": None if due is None else float(due),
        "baseline": {"staked": int(staked), "net": int(net)},
    }


def _put_play_session(db: sqlite3.Connection, player_id: str, kept: Mapping[str, Any]) -> None:
    db.execute(
        "INSERT OR REPLACE INTO play_sessions (player_id, started, seen, every, next, staked, net)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            player_id,
            kept["started"],
            kept["seen"],
            kept["every"],
            kept["next"],
            kept["baseline"]["staked"],
            kept["baseline"]["net"],
        ),
    )
