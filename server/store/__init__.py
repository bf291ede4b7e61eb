"""Persistence: balances, the ledger, table state and events, round/shoe records.

One interface (:class:`Store`, in :mod:`server.store.base`) and its implementations:
:class:`SQLiteStore` (the default, one file, or a throwaway one in memory) and
:class:`RedisStore` (shared by many processes). :func:`open_store` picks one from a URL
or a path.

This package must never decide a rule of the game; it keeps what the tables decided.
"""

from __future__ import annotations

import os
from typing import Any

from server.connect.redis import REDIS_SCHEMES
from server.protocol import errors
from server.store.base import (
    EVENT_RETENTION,
    HISTORY_LIMIT,
    CommitResult,
    Store,
    TableRow,
)
from server.store.redis import RedisStore
from server.store.sqlite import SQLiteStore

__all__ = [
    "EVENT_RETENTION",
    "HISTORY_LIMIT",
    "CommitResult",
    "RedisStore",
    "SQLiteStore",
    "Store",
    "TableRow",
    "open_store",
    "store_for",
]


def store_for(url_or_path: str | os.PathLike[str], **options: Any) -> Store:
    """The store named by ``url_or_path``, not yet opened.

    - ``sqlite:///relative/file.db``, ``sqlite:////absolute/file.db`` (SQLAlchemy's
      spelling), or ``sqlite://``, ``memory:`` or ``memory://`` (a throwaway database in
      memory, lost with the process): a :class:`SQLiteStore`;
    - ``redis://[user:password@]host:port/db``, ``rediss://…`` (TLS),
      ``unix:///path/redis.sock?db=N``, or
      ``redis+sentinel://HOST:PORT[,HOST:PORT…]/SERVICE/DB`` (the primary those
      sentinels name): a :class:`RedisStore`;
    - anything else without ``://``: a path to a SQLite file.

    ``options`` go to the store's constructor (``event_retention``, ``round_index``,
    ``clock``; ``prefix`` and ``min_replicas`` for Redis). Raises :class:`~server.protocol.errors.StoreError` for any other scheme.
    """
    text = os.fspath(url_or_path)
    if text in ("memory:", "memory://", "sqlite://", "sqlite:///"):
        return SQLiteStore(":memory:", **options)
    if text.startswith("sqlite://"):
        return SQLiteStore(text.removeprefix("sqlite://").removeprefix("/"), **options)
    if text.startswith(REDIS_SCHEMES):
        return RedisStore(text, **options)
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise errors.StoreError(
            f"no store for the scheme {scheme!r} (use a path, sqlite://, redis:// or memory:)"
        )
    if not text:
        raise errors.StoreError("a store needs a path")
    return SQLiteStore(text, **options)


async def open_store(url_or_path: str | os.PathLike[str], **options: Any) -> Store:
    """The store named by ``url_or_path`` (see :func:`store_for`), opened."""
    store = store_for(url_or_path, **options)
    await store.open()
    return store
