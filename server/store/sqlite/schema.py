"""The SQLite store's schema: the tables, triggers and indexes of a new file at
:data:`SCHEMA_VERSION`, and the statements that migrate an older file to it.

It only holds text; it must never run a statement itself (``connection`` opens the file
and applies it).
"""

from __future__ import annotations

from typing import Final

from server.ledger.rules import (
    SQL_PLAYER_NO_OVERDRAFT,
    SQL_STAKE_NO_OVERDRAFT,
    SQL_WELCOME_OWNER,
)

SCHEMA_VERSION: Final = 2

#: The whole schema at :data:`SCHEMA_VERSION` (a new file).
_SCHEMA: Final = (
    """
CREATE TABLE IF NOT EXISTS accounts (
    account TEXT PRIMARY KEY,
    balance INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT no_overdraft """
    + SQL_PLAYER_NO_OVERDRAFT
    + """
);
CREATE TABLE IF NOT EXISTS ledger (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    src TEXT NOT NULL REFERENCES accounts (account),
    dst TEXT NOT NULL REFERENCES accounts (account),
    amount INTEGER NOT NULL CHECK (amount > 0),
    kind TEXT NOT NULL,
    round_id TEXT,
    CHECK (src <> dst)
);
CREATE INDEX IF NOT EXISTS ledger_src ON ledger (src, seq);
CREATE INDEX IF NOT EXISTS ledger_dst ON ledger (dst, seq);
CREATE TRIGGER IF NOT EXISTS ledger_no_update BEFORE UPDATE ON ledger
BEGIN SELECT RAISE (ABORT, 'the ledger is append-only'); END;
CREATE TABLE IF NOT EXISTS players (
    player_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    guest INTEGER NOT NULL DEFAULT 0,
    seen REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS tables (
    table_id TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    state TEXT NOT NULL,
    seq INTEGER NOT NULL,
    closed INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS rounds (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    round_id TEXT NOT NULL UNIQUE,
    table_id TEXT NOT NULL,
    shoe_no INTEGER NOT NULL,
    coup_no INTEGER NOT NULL,
    body TEXT NOT NULL,
    time REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS rounds_table ON rounds (table_id, shoe_no, coup_no);
CREATE TABLE IF NOT EXISTS round_players (
    player_id TEXT NOT NULL,
    round_seq INTEGER NOT NULL REFERENCES rounds (seq) ON DELETE CASCADE,
    PRIMARY KEY (player_id, round_seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS round_players_round ON round_players (round_seq);
CREATE TABLE IF NOT EXISTS shoes (
    table_id TEXT NOT NULL,
    shoe_no INTEGER NOT NULL,
    revealed INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (table_id, shoe_no)
) WITHOUT ROWID;
"""
)

#: What version 2 adds to a version 1 file (and to a new one, after ``_SCHEMA``).
_VERSION_2: Final = (
    # The epoch of each table's owner (fencing); a table may be claimed before its row.
    "CREATE TABLE IF NOT EXISTS epochs (table_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL)",
    # The retained events of each table, for a client resuming across a restart.
    "CREATE TABLE IF NOT EXISTS events (table_id TEXT NOT NULL, seq INTEGER NOT NULL,"
    " body TEXT NOT NULL, PRIMARY KEY (table_id, seq)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL)",
    # Stakes never go negative either (a CHECK cannot be changed in place: a trigger).
    SQL_STAKE_NO_OVERDRAFT,
    # Append-only, but for the welcome of a guest expired (whose row is gone first).
    "DROP TRIGGER IF EXISTS ledger_no_delete",
    "CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger WHEN OLD.kind <> 'welcome'"
    f" OR EXISTS (SELECT 1 FROM players WHERE player_id = {SQL_WELCOME_OWNER})"
    " BEGIN SELECT RAISE (ABORT, 'the ledger is append-only'); END",
    "CREATE INDEX IF NOT EXISTS players_idle_guests ON players (seen) WHERE guest = 1",
)

#: The wallet calls' outbox (docs/wallet.md §3-§4): new tables only, so they are made
#: whenever a file lacks them, whatever its version (an older server ignores them).
#: ``data`` is the call's JSON (without its ``seq``); the columns beside it are what is
#: searched. The fixed fields never change and no call is deleted (the triggers).
_WALLET_CALLS: Final = (
    "CREATE TABLE IF NOT EXISTS wallet_calls ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, transaction_id TEXT NOT NULL UNIQUE,"
    " kind TEXT NOT NULL, state TEXT NOT NULL, player TEXT NOT NULL,"
    " table_id TEXT NOT NULL, round_id TEXT NOT NULL, currency TEXT,"
    " amount INTEGER NOT NULL CHECK (amount >= 0), next_at REAL NOT NULL,"
    " created REAL NOT NULL, data TEXT NOT NULL)",
    # Due calls (state = 'pending' by next_at, then seq: the rowid ends every index).
    "CREATE INDEX IF NOT EXISTS wallet_calls_due ON wallet_calls (state, next_at)",
    "CREATE INDEX IF NOT EXISTS wallet_calls_player ON wallet_calls (player, seq)",
    "CREATE INDEX IF NOT EXISTS wallet_calls_table ON wallet_calls (table_id, seq)",
    "CREATE INDEX IF NOT EXISTS wallet_calls_round ON wallet_calls (round_id, seq)",
    "CREATE INDEX IF NOT EXISTS wallet_calls_created ON wallet_calls (created)",
    "CREATE TRIGGER IF NOT EXISTS wallet_calls_fixed BEFORE UPDATE OF seq, transaction_id,"
    " kind, player, table_id, round_id, currency, amount, created ON wallet_calls"
    " BEGIN SELECT RAISE (ABORT, 'a wallet call changes only in its progress'); END",
    "CREATE TRIGGER IF NOT EXISTS wallet_calls_no_delete BEFORE DELETE ON wallet_calls"
    " BEGIN SELECT RAISE (ABORT, 'wallet calls are kept'); END",
)

#: A table's parts (``TableRow.parts``: its bettors without a seat, GAME_RULES §5), each
#: written only by the steps that change it: a table only added, created if missing on
#: every open (the schema's version stays 2).
_TABLE_PARTS: Final = (
    "CREATE TABLE IF NOT EXISTS table_parts (table_id TEXT NOT NULL, part TEXT NOT NULL,"
    " body TEXT NOT NULL, PRIMARY KEY (table_id, part)) WITHOUT ROWID",
)

#: A player's currency (the transfer API, docs/wallet.md §2). A table only added, created
#: if missing on every open: a version 2 file made before it gains it, and a server that
#: does not know it never reads it, so the schema's version stays 2.
_CURRENCIES: Final = (
    "CREATE TABLE IF NOT EXISTS player_currencies"
    " (player_id TEXT PRIMARY KEY, currency TEXT NOT NULL) WITHOUT ROWID",
)

#: The operator's calls made once (docs/operator-api.md "Idempotency"): a table only
#: added, created if missing on every open, like the currencies' (the schema's version
#: stays 2). One row a key: the call's record (JSON) and when its time runs out; the
#: rows whose time ran out are deleted by the next claim (the index on ``expires``).
_OPERATOR_CALLS: Final = (
    "CREATE TABLE IF NOT EXISTS operator_calls (key TEXT PRIMARY KEY,"
    " fingerprint TEXT NOT NULL, body TEXT NOT NULL, expires REAL NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS operator_calls_expires ON operator_calls (expires)",
)

#: A player's time-out or self-exclusion (issue 21): a table only added, created if
#: missing on every open, like the currencies' (the schema's version stays 2).
_RESTRICTIONS: Final = (
    "CREATE TABLE IF NOT EXISTS player_restrictions"
    " (player_id TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID",
)

#: A player's usage and limits (issue 21): tables only added, created if missing on every
#: open, like the restrictions' (the schema's version stays 2). ``player_days`` holds the
#: flows of each player's UTC day, upserted by the commit that inserts the entries (a
#: player's days older than ``FLOW_DAYS`` are deleted as a newer one is written);
#: ``player_limits`` the player's limits as JSON.
_PLAYER_USAGE: Final = (
    "CREATE TABLE IF NOT EXISTS player_days (player_id TEXT NOT NULL, day TEXT NOT NULL,"
    " staked INTEGER NOT NULL, net INTEGER NOT NULL, deposited INTEGER NOT NULL,"
    " PRIMARY KEY (player_id, day)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS player_limits"
    " (player_id TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID",
)

#: A player's play session (responsible play): a table only added, created if missing on
#: every open, like the limits' (the schema's version stays 2). One row a player: when
#: the session began and a connection of theirs was last seen, the reality check's
#: period and when the next one is due (NULL: none), and the baseline of its result.
_PLAY_SESSIONS: Final = (
    "CREATE TABLE IF NOT EXISTS play_sessions (player_id TEXT PRIMARY KEY,"
    " started REAL NOT NULL, seen REAL NOT NULL, every REAL, next REAL,"
    " staked INTEGER NOT NULL, net INTEGER NOT NULL) WITHOUT ROWID",
)

#: The rounds' time, for the operator's round search (``round_records``): a column added
#: to a file that lacks it (and filled from each stored record's JSON), then its
#: indexes. Added in place, so the schema's version stays 2 (an older server's inserts
#: leave it 0: the default).
_ROUND_TIME_COLUMN: Final = "ALTER TABLE rounds ADD COLUMN time REAL NOT NULL DEFAULT 0"
_ROUND_TIME_BACKFILL: Final = (
    "UPDATE rounds SET time = json_extract(body, '$.time')"
    " WHERE json_type(body, '$.time') IN ('integer', 'real')"
)
_ROUND_TIMES: Final = (
    "CREATE INDEX IF NOT EXISTS rounds_time ON rounds (time, round_id)",
    "CREATE INDEX IF NOT EXISTS rounds_table_time ON rounds (table_id, time, round_id)",
)

#: Columns version 2 adds to version 1 tables.
_VERSION_2_COLUMNS: Final = (
    "ALTER TABLE players ADD COLUMN guest INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE players ADD COLUMN seen REAL NOT NULL DEFAULT 0",
)

#: The statements run after ``_SCHEMA`` on every open, in this order.
_ADDED: Final = (*_VERSION_2, *_WALLET_CALLS, *_RESTRICTIONS, *_PLAYER_USAGE, *_PLAY_SESSIONS)
_ADDED_TOO: Final = (*_CURRENCIES, *_OPERATOR_CALLS, *_TABLE_PARTS)
