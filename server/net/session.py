"""A client connection's session: who it is, what it watches, and how fast it may talk.

A :class:`Session` is the gateway's record of one WebSocket connection: its wire format,
the identity its ``hello`` proved, the tables it joined, and its rate limit. Nothing here
knows a rule of the game or touches a table.

The rate limit is a token bucket per connection (``rate`` messages a second, bursts of
``burst``). Every frame counts, garbage included.

This module never sends anything and never logs a player's private data.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

from websockets.asyncio.server import ServerConnection

from .auth import Identity

__all__ = ["REFUSALS_BURST", "REFUSALS_RATE", "Bucket", "Session"]

#: A connection is cut off (1008) once it has been refused for its rate this many times
#: more than it earned back at ``REFUSALS_RATE`` a second.
REFUSALS_BURST = 200.0
REFUSALS_RATE = 5.0

_conn_ids = itertools.count(1)


@dataclass(slots=True)
class Bucket:
    """A token bucket: ``rate`` tokens a second, at most ``burst`` saved up."""

    rate: float
    burst: float
    tokens: float = 0.0
    stamp: float = 0.0

    def __post_init__(self) -> None:
        self.tokens = self.burst
        self.stamp = time.monotonic()

    def take(self, now: float | None = None) -> bool:
        """Spend one token if there is one."""
        now = time.monotonic() if now is None else now
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass(eq=False)
class Session:
    """One client connection."""

    conn: ServerConnection
    fmt: str
    bucket: Bucket
    id: int = field(default_factory=lambda: next(_conn_ids))
    identity: Identity | None = None
    tables: set[str] = field(default_factory=set)
    #: Refusals allowed: each rate-limited message spends one; they come back slowly,
    #: so a flood is cut off however its bursts are spaced (one accepted message in
    #: between does not reset the count).
    refusals: Bucket = field(default_factory=lambda: Bucket(REFUSALS_RATE, REFUSALS_BURST))
    chat_times: list[float] = field(default_factory=list)

    @property
    def player(self) -> str:
        """The authenticated player's id (only after ``hello``)."""
        assert self.identity is not None
        return self.identity.player_id
