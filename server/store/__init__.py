"""Persistence: wallets, the ledger, table state and round/shoe records.

One interface (:class:`Store`, in :mod:`server.store.base`) and its implementations:
:class:`SQLiteStore` (the default, one file) and :class:`MemoryStore` (unit tests).
:func:`open_store` picks one from a URL or a path.

This package must never decide a rule of the game; it keeps what the tables decided.
"""

from __future__ import annotations

import os

from server.store.base import (
    HISTORY_LIMIT,
    KeyConflict,
    Overdrawn,
    Store,
    StoreError,
    TableRow,
)
from server.store.memory import MemoryStore
from server.store.sqlite import SQLiteStore

__all__ = [
    "HISTORY_LIMIT",
    "KeyConflict",
    "MemoryStore",
    "Overdrawn",
    "SQLiteStore",
    "Store",
    "StoreError",
    "TableRow",
    "open_store",
    "store_for",
]


def store_for(url_or_path: str | os.PathLike[str]) -> Store:
    """The store named by ``url_or_path``, not yet opened.

    - ``memory:`` or ``memory://``: a :class:`MemoryStore`;
    - ``sqlite:///relative/file.db``, ``sqlite:////absolute/file.db`` (SQLAlchemy's
      spelling) or ``sqlite://`` (an in-memory database): a :class:`SQLiteStore`;
    - anything else without ``://``: a path to a SQLite file.

    Raises :class:`StoreError` for any other scheme.
    """
    text = os.fspath(url_or_path)
    if text in ("memory:", "memory://"):
        return MemoryStore()
    if text.startswith("sqlite://"):
        path = text.removeprefix("sqlite://")
        if path in ("", "/"):
            return SQLiteStore(":memory:")
        return SQLiteStore(path.removeprefix("/"))
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise StoreError(f"no store for the scheme {scheme!r} (use a path, sqlite:// or memory:)")
    if not text:
        raise StoreError("a store needs a path")
    return SQLiteStore(text)


async def open_store(url_or_path: str | os.PathLike[str]) -> Store:
    """The store named by ``url_or_path`` (see :func:`store_for`), opened."""
    store = store_for(url_or_path)
    await store.open()
    return store
