"""What the rate limits need of the process's settings, named once.

:class:`LimitSettings` is the part of the process's settings
(``server.process.config.ServerConfig`` is one) that the limits read: the caps, the
rates and the trusted proxies. The limits take this, never the settings' module, so
this room imports no other room but the store and the bus it needs (tests/test_layers.py).
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["LimitSettings"]


class LimitSettings(Protocol):
    """The settings the limits read (docs/operations.md lists each)."""

    @property
    def trusted_proxies(self) -> tuple[str, ...]: ...
    @property
    def max_connections_per_address(self) -> int: ...
    @property
    def max_connections_per_player(self) -> int: ...
    @property
    def hello_rate_limit(self) -> float: ...
    @property
    def hello_rate_burst(self) -> int: ...
    @property
    def deposits_per_day(self) -> int: ...
    @property
    def deposit_burst(self) -> int: ...

    def shared_rates(self) -> tuple[tuple[float, int], tuple[float, int]]:
        """((rate, burst) of a player, (rate, burst) of an address)."""
        ...
