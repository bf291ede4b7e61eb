"""The composition root: the one place a Chemmy process is put together.

:func:`assemble` builds every part of one process from its config and its store, and
hands them to the gateway (:class:`~server.gateway.server.ChemmyServer`), which builds
nothing but its connections' own state::

    store ─┬─ bus        LocalBus (one process) · RedisBus (a cluster: leases, node name)
           ├─ croupier   the tables this process owns (server.croupier.host)
           ├─ lobby      LocalLobby (the croupier's) · SharedLobby (the lines in Redis)
           ├─ limits     Limits · SharedLimits (counted over the cluster in Redis)
           ├─ hub, metrics, auth
           └─ lifecycle  Lifecycle: what is started before the port accepts, stopped after
                   └──▶ ChemmyServer(config, store=, bus=, croupier=, lobby=, limits=,
                                      hub=, metrics=, auth=, operator=, process=)

``chemmy-server`` (``server.process.main``) and the in-process test kit (``tests/kit/
inproc.py``) both start a process this way. Nothing here runs anything: starting is
:meth:`ChemmyServer.start`, and this module never opens a socket or a store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from server.bus.audience import Audience
from server.bus.base import Bus
from server.bus.local import LocalBus
from server.bus.redis import RedisBus, node_name
from server.croupier.actor import TableActor
from server.croupier.cluster import Leases
from server.croupier.host import Croupier, StepHook
from server.gateway import notices
from server.gateway.hub import Hub
from server.gateway.lobby import Lobby, LocalLobby, SharedLobby
from server.gateway.server import ChemmyServer
from server.limits.local import Limits, parse_networks
from server.limits.shared import SharedLimits
from server.operator import routes
from server.operator.api import OperatorAPI, OperatorAuth
from server.process.auth import Authenticator
from server.process.config import ServerConfig, operator_public_keys
from server.process.lifecycle import Lifecycle
from server.process.metrics import Metrics
from server.store.base import (
    Store,
)
from server.vocabulary import commands as c
from server.vocabulary.events import Event
from server.wallet import make_wallet
from server.wallet.courier import Courier
from server.wallet.mirror import sync_mirror

__all__ = ["assemble"]


def assemble(config: ServerConfig, store: Store, bus: Bus | None = None) -> ChemmyServer:
    """One process over ``store``: alone with an in-process bus, or, with a Redis store
    (``config.clustered``) and no ``bus`` given, one of a cluster sharing the tables."""
    metrics = Metrics()
    hub = Hub(observe=metrics.fanout.observe, observe_wait=metrics.fanout_wait.observe)

    async def stored_events(table: str, seq: int) -> list[Event] | None:
        found = await store.events_after(table, seq)
        return None if found is None else [Event.from_dict(e) for e in found]

    leases: Leases | None = None
    if bus is None and config.clustered:
        # A Redis store: this process is one of a cluster sharing the tables.
        node = node_name()
        leases = Leases(config.store_url, node, ttl=config.lease)
        redis_bus = RedisBus(
            config.store_url,
            node=node,
            events_after=stored_events,
            owner_of=leases.owner,
        )
        redis_bus.on_lag = metrics.bus_lag.observe
        leases.on_answer = redis_bus.heard  # (a tick answered: no probe needed meanwhile)
        if config.placement == "players":
            leases.watching = hub.watchers  # (tables run where their watchers are)
            # (a step is published only while another process may hear its table)
            redis_bus.audience, leases.on_lines = Audience(node), redis_bus.lines_read
        bus = redis_bus
    if bus is None:
        bus = LocalBus(events_after=stored_events)
    money = make_wallet(config, store)
    croupier = Croupier(
        store,
        bus,
        money=money,
        wallet_timeout=config.wallet_timeout,
        grace=config.grace,
        queue_size=config.queue_size,
        on_step=_count_coups(metrics),
        on_tables=metrics.tables.set,
        on_failing=metrics.store_failing.set,
        cluster=leases,
    )
    lobby: Lobby = LocalLobby(croupier) if leases is None else SharedLobby(leases)
    auth = Authenticator.from_config(config)
    limits = (
        Limits(config)
        if leases is None
        else SharedLimits(config, config.store_url, leases.node, lease=config.lease)
    )
    operator = OperatorAPI(
        OperatorAuth(config.operator_key, auth, public_keys=operator_public_keys(config)),
        store,
        parse_networks(config.trusted_proxies),
    )
    process = Lifecycle(
        config,
        store=store,
        bus=bus,
        croupier=croupier,
        limits=limits,
        metrics=metrics,
        auth=auth,
        wallet=money,
    )
    server = ChemmyServer(
        config,
        store=store,
        bus=bus,
        croupier=croupier,
        lobby=lobby,
        limits=limits,
        hub=hub,
        metrics=metrics,
        auth=auth,
        operator=operator,
        process=process,
    )
    # The one route list of /operator/v1/ (the transfer API in transfer mode).
    routes.install(operator, server, transfer_api=config.wallet == "transfer")
    if money.confirms_holds:
        courier = Courier(
            store,
            money,
            serves=croupier.serves_calls,
            owns=lambda table: table in croupier.actors,
            on_balance=_mirror_to(server),
        )
        croupier.on_calls = courier.wake
        croupier.before_debits = courier.deliver_first
        courier.on_sent = lambda kind, outcome: metrics.wallet_calls.labels(kind, outcome).inc()

        def debits(seconds: float, outcomes: list[str]) -> None:
            metrics.wallet_debits.observe(seconds)
            for outcome in outcomes:
                metrics.wallet_calls.labels("debit", outcome).inc()

        croupier.on_debits = debits
        process.courier = courier
    if isinstance(lobby, SharedLobby):
        shared = lobby
        croupier.on_notice = lambda notice: notices.heard(server, notice, shared)
    return server


def _mirror_to(server: ChemmyServer) -> Callable[[str, int, int | None], Awaitable[None]]:
    """After a credit or rollback is acknowledged: the player's mirror is the balance
    the wallet reported (docs/wallet.md §3), and the tables they watch here read it."""

    async def mirror(player: str, balance: int, since: int | None) -> None:
        # The operator's balance still holds the chips placed at any table (not debited
        # yet): the mirror is the player's money on no table plus those.
        tables = [line["table"] for line in await server.lobby.tables()]
        if await sync_mirror(server.store, player, balance, tables, since=since):
            server.refresh_player(player)

    return mirror


def _count_coups(metrics: Metrics) -> StepHook:
    """After each table step: the settled coups and their money, for ``/metrics``."""

    def counted(actor: TableActor, cmd: c.Command, events: list[Event]) -> None:
        for event in events:
            if event.kind == "settled":
                metrics.coups.inc()
                for pay in event.data["payouts"]:
                    metrics.settled.labels(kind="staked").inc(pay["stake"])
                    metrics.settled.labels(kind="returned").inc(pay["returned"])
                    metrics.settled.labels(kind="commission").inc(pay["commission"])

    return counted
