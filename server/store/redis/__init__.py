"""A :class:`~server.store.base.Store` in Redis, which many server processes can share.

Built on ``redis.asyncio``. Every write of money or of a table is **one Lua script** (a
commit, a welcome, an expiry, a wallet call's progress, a play session's change), so it
is atomic (a player's limits and restriction are merged under ``WATCH`` instead, and
retried when the hash changed meanwhile): Redis runs a script alone, and each
script checks everything first (ledger keys, balances, the table's epoch) and answers a
coded error reply (``KEYCONFLICT``, ``OVERDRAWN``, ``STALEEPOCH``, ``RANGE``) before it
writes anything, because Redis does not roll back a script that fails half way. Reads
are plain commands.

Group commit (issue 23): the commits started in one turn of the event loop go out
together, in one write on a connection of their own (``server.connect.redis.Lane``: no
redis-py command each) and, with ``min_replicas``, one ``WAIT`` for them all (not a
transaction: each ``EVALSHA`` is atomic, its error reply its own); each caller is answered
once the batch (and the ``WAIT``) answered. A lone commit goes at the next turn, alone.

Balances are checked inside the script, where they live, so no process needs a copy of
anyone's balance to keep it from going negative (issue 10). Amounts and balances stay
within ±(2**53 - 1): Lua's numbers are doubles, exact up to there, and the arithmetic
itself is Redis's (``HINCRBY``, 64-bit).

The keys (prefix ``chemmy:`` by default) are listed in docs/architecture.md §10: each
table's own keys share the hash tag ``{<table>}``; money, players and round records are
global, so a commit touches two slots (see the docs for why that is fine on one Redis
and how it would shard).

Errors are translated at the boundary: a Redis that cannot be reached (down, loading,
out of memory, read-only, a timeout) is :class:`StoreUnavailable`; anything else Redis
refuses is :class:`StoreError`. The client retries a dropped connection a few times with
jittered exponential backoff, then gives up for that call; the next call reconnects by
itself, so a store object survives Redis restarting. A retried commit whose first
attempt did run is harmless: entries are skipped by key, events by ``seq`` and wallet
calls by transaction id.

It must never ``FLUSH`` or ``KEYS``-scan a database (it may share one), never run a
script that writes after an error reply, never log an entry's contents, and never
show the URL's password.

The store is split by job: :mod:`~server.store.redis.scripts` (its Lua, ``lua/*.lua``),
:mod:`~server.store.redis.core` (the connection, the commit and its group, the other
writes of money), :mod:`~server.store.redis.reads`, :mod:`~server.store.redis.protection`
(a player's rows) and :mod:`~server.store.redis.calls` (the wallet's and the operator's
calls); :class:`RedisStore` is all of them.
"""

from __future__ import annotations

from server.connect.redis import redact
from server.store.redis.calls import RedisCalls
from server.store.redis.core import GROUP_MAX
from server.store.redis.protection import RedisPlayers
from server.store.redis.reads import RedisReads

__all__ = ["GROUP_MAX", "RedisStore", "redact"]


class RedisStore(RedisReads, RedisPlayers, RedisCalls):
    """A :class:`~server.store.base.Store` in the Redis at ``url``
    (``redis://[user:password@]host:port/db``, ``rediss://``, ``unix://``, or
    ``redis+sentinel://HOST:PORT[,HOST:PORT…]/SERVICE/DB``: see
    :mod:`server.connect.redis`).

    ``prefix`` starts every key; ``event_retention`` is the events kept per table;
    ``round_index`` the rounds a player's history index keeps; ``clock`` says when a
    player was seen.
    """
