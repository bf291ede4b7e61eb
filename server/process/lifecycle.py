"""The process's parts besides its connections: started in order before the gateway
accepts, drained and stopped after it closed, and kept on the gateway's watchdog's beat.

:class:`Lifecycle` is what the gateway (``server.gateway.server.ChemmyServer``) asks of
the rest of the process (``server.gateway.context.ProcessParts``): the store claimed,
then opened (with the guests' resume key), the bus, the tables (the croupier), the
courier of a seamless wallet and the limits over a cluster; readiness; a drain of the
tables; the stop, in the reverse order; and, on each beat of the watchdog, the idle
guests forgotten (every :attr:`guest_sweep_interval` seconds) and the bus's and the
leases' counters copied to ``/metrics``. ``server.process.assemble`` builds it.

Nothing here touches a connection or decides a rule.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from server.bus.base import Bus
from server.croupier.host import Croupier
from server.limits.local import Limits
from server.limits.shared import SharedLimits
from server.process.auth import Authenticator
from server.process.config import ServerConfig
from server.process.metrics import Metrics
from server.protocol.errors import StoreError
from server.protocol.records import ReplyRecord
from server.store.base import Store
from server.wallet.base import Wallet
from server.wallet.courier import Courier

__all__ = ["Lifecycle"]

log = logging.getLogger("chemmy.server")


@dataclass(eq=False)
class Lifecycle:
    """The parts of one process the gateway starts and stops (see the module docstring)."""

    config: ServerConfig
    _: KW_ONLY
    store: Store
    bus: Bus
    croupier: Croupier
    limits: Limits
    metrics: Metrics
    auth: Authenticator
    #: Where the players' money lives (docs/wallet.md), and the courier that delivers
    #: a seamless wallet's credits and rollbacks (none otherwise).
    wallet: Wallet | None = None
    courier: Courier | None = None
    guest_sweep_interval: float = 60.0  # how often idle guests are looked for
    _next_guest_sweep: float = field(default=0.0, init=False)

    async def claim(self) -> None:
        """Claim the store (a SQLite file another live process serves is refused)."""
        await self.store.claim_serving()

    async def open(self, on_reply: Callable[[ReplyRecord], None]) -> None:
        """The store, the guests' key, the bus (its replies to ``on_reply``), the
        tables, the courier and the shared limits, in that order."""
        await self.store.open()
        # Every process signs guests' resume tokens with the same key, kept in the
        # store, so a guest keeps their seat across a restart (and a failover).
        self.auth.guest_key = await self.store.secret("guest-resume")
        await self.bus.start()
        self.bus.on_replies(on_reply)
        await self.croupier.start(self.config.tables)
        if self.courier is not None:
            self.courier.start()
        if isinstance(self.limits, SharedLimits):
            self.limits.start()

    async def abandon(self) -> None:
        """A start that could not serve: the store goes (nothing else was started)."""
        await self.store.close()

    def not_ready(self) -> str | None:
        """Why the process cannot take players now (the bus, a failing store), or None."""
        unready = self.bus.not_ready()
        if unready is not None:
            return unready
        if self.croupier.failing:
            return "store failing"
        return None

    async def drain(self, timeout: float) -> None:
        """No new players or bets; running coups finish (bounded)."""
        await self.croupier.drain(timeout)

    async def close(self) -> None:
        """Stop the tables, the courier, the wallet, the shared limits, the bus and the
        store, in that order (the connections are closed already)."""
        await self.croupier.stop()
        if self.courier is not None:
            await self.courier.stop()
        if self.wallet is not None:
            await self.wallet.close()
        if isinstance(self.limits, SharedLimits):
            await self.limits.close()
        await self.bus.close()
        await self.store.close()

    def tick(self, now: float, background: Callable[[Coroutine[Any, Any, None]], None]) -> None:
        """One beat of the watchdog (``now``: ``time.monotonic``): the idle guests'
        sweep when it is due (run by ``background``), and the counters for /metrics."""
        if now >= self._next_guest_sweep:
            self._next_guest_sweep = now + self.guest_sweep_interval
            background(self.expire_guests())
        counts = self.bus.counts()
        if counts is not None:
            self.metrics.relayed.set(counts.relayed)
            self.metrics.backfilled.set(counts.backfilled)
            self.metrics.unpublished.set(counts.unpublished)
            for table, count in counts.received.items():
                self.metrics.bus_received.labels(table=table).set(count)
            self.metrics.bus_listening.set(counts.listening)
        if self.croupier.rebalancer is not None:
            self.metrics.lease_changes.set(self.croupier.rebalancer.changes)

    async def expire_guests(self) -> None:
        """Forget guests who never played and were not seen for ``guest_idle`` seconds."""
        try:
            gone = await self.store.expire_guests(self.config.guest_idle)
        except StoreError as exc:
            log.warning("expiring idle guests failed: %s", exc)
            return
        if gone:
            log.info("forgot %d idle guests", gone)
