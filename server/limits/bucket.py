"""A token bucket: the one measure of every rate limit (a connection's, a player's, an
address's; docs/architecture.md §7).

Nothing here knows who spends the tokens; time is passed in or read from
``time.monotonic``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["Bucket"]


@dataclass(slots=True)
class Bucket:
    """A token bucket: ``rate`` tokens a second, at most ``burst`` saved up."""

    rate: float
    burst: float
    #: When ``tokens`` was last counted (``time.monotonic`` unless given); starts full.
    stamp: float = field(default_factory=time.monotonic)
    tokens: float = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = self.burst

    def take(self, now: float | None = None) -> bool:
        """Spend one token if there is one."""
        now = time.monotonic() if now is None else now
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def peek(self, now: float) -> bool:
        """Whether :meth:`take` would succeed at ``now`` (spends nothing)."""
        return self.tokens + (now - self.stamp) * self.rate >= 1

    def full(self, now: float) -> bool:
        """Whether the bucket has refilled to ``burst`` by ``now``."""
        return self.tokens + (now - self.stamp) * self.rate >= self.burst
