"""The default :class:`~server.store.base.Store`: one SQLite file, zero set-up.

Its rooms: ``schema`` (the tables and their migration), ``connection`` (the worker thread, group
and direct commits, open and close, the one write), ``rows`` (the statements each call runs on
the connection), ``store`` (:class:`SQLiteStore`, the other calls).

Standard library ``sqlite3``, one connection, WAL journal (readers never block the writer),
``synchronous=NORMAL`` (a commit is durable against a process crash; a power cut may lose the
last few commits but never corrupts the file) and foreign keys on. The schema is created, or
migrated from an older version, when the store is opened (``PRAGMA user_version`` names its
version; version 1 files are migrated in place, and a file whose ``rounds`` lack the ``time``
column of the round search gains it, filled from each record's JSON).

**No call blocks the event loop** (issue 9): the connection lives in one dedicated worker thread
and every call runs there, in the order the calls were made (one thread, one FIFO queue). A
check and its write are one job, so nothing interleaves between them, and every call that writes
is one ``BEGIN IMMEDIATE`` transaction, rolled back on any error, but for commits (issue 23,
group commit): the commits queued at the moment the thread takes one (at most :data:`GROUP_MAX`;
a lone commit waits for no company) run in one transaction, each in its own savepoint (one
refused is rolled back to it and answered with its own exception, the others stay), then one
``COMMIT``; each caller is answered after that ``COMMIT``, and a ``COMMIT`` that fails fails
every commit of the group. While another process holds the write lock the worker waits up to
``busy_timeout_ms`` (then :class:`StoreUnavailable`); the loop goes on serving everyone
meanwhile. A caller cancelled while its job runs does not stop the job: cancellation never
leaves half a transaction.

**Direct commits** (issue 23): while the worker holds no job, the commits called in one turn of
the loop are committed together by the loop itself at its end, in one transaction as the worker
would, and the hot reads (a bet's restriction and limits, balances) are made on the loop too:
the hop to the thread and back (~0.1 ms) was a lone ``bet``'s largest piece. What could make the
loop wait is kept off that path: ``BUSY`` at ``BEGIN`` (another process holds the write lock)
hands the commits to the worker, which waits (the busy timeout is 0 while the loop uses the
connection), and a direct read that meets a lock goes there too; SQLite's automatic checkpoints,
which fsync, are off: every :data:`CHECKPOINT_EVERY` transactions a ``PASSIVE`` one copies the
pages in a thread and connection of its own, then those written since (the last few in the
worker); and a direct call that still waited more than :data:`DIRECT_SLOW` (its wall time less
the loop's own CPU time) turns direct use off for 30 s, doubled each time (at most 10 min). So a
slow disk can stall the loop for one commit, not for the next ones (docs/architecture.md §10). A
call queued for the worker while commits are held takes them along first, and a hot read called
then commits them on the loop first: the calls still run in the order they were made. With none
held, a commit of :data:`AT_ONCE_ROWS` rows or more (issue 37 §3), or any with nothing else to
run in its turn (issue 36), is committed at once, not held. ``direct=False`` keeps everything in
the thread.

The database keeps the rules too, as a second line of defence: a ``CHECK`` and a trigger keep
player and stake balances non-negative, a ``CHECK`` keeps ledger amounts positive, foreign keys
tie ledger entries to accounts and round index rows to rounds, and triggers make the ledger
append-only (an expired guest's welcome is the one entry that may go) and keep every wallet
call, changed only in its progress.

It must never be shared by two processes writing (many processes use the Redis store), never let
a ``sqlite3`` exception escape (they become :class:`StoreError`, or :class:`StoreUnavailable`
for a busy or failing disk), and never touch its connection outside the worker thread but while
the worker holds no job (:attr:`_Worker.pending`).
"""

from server.store.sqlite.connection import BUSY_TIMEOUT_MS, GROUP_MAX
from server.store.sqlite.schema import SCHEMA_VERSION
from server.store.sqlite.store import SQLiteStore

__all__ = ["BUSY_TIMEOUT_MS", "GROUP_MAX", "SCHEMA_VERSION", "SQLiteStore"]
