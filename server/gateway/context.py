"""What each handler may use of the gateway: one narrow context per handler module.

A handler is ``async (context, session, request id, checked fields) -> None``. It is
typed against the context it needs, never against the whole process: ``hello`` against
:class:`HelloContext`, the cashier's requests against :class:`CashierContext`, the
table requests against :class:`TablesContext`. Each context is a
:class:`~typing.Protocol`; the gateway (:class:`~server.gateway.server.ChemmyServer`) is
all of them, and the registry (``server.gateway.handlers``) is where that is checked. So a
handler that reaches for a part it was not given (the croupier from the cashier, the
store from a table command) does not type-check.

::

    Replies        send, ok, error                          (every handler answers)
    Relay          Replies + relay                          (a record to a table's owner)
                   (both player protection's, of a Session: server.protection.context)
    HelloContext   Replies + config, auth, store, money,    limits: check_player, open_player
                   ask_wallet, background
    CashierContext Relay + config, store, persist, money,   limits: deposit
                   session_money, store_failed, store_works
    TablesContext  Relay + config, store, lobby, hub,       bus: events_after,
                   sessions, background, left_table,        croupier: create_table
                   watch_table, attend, attended,           (store: player_restriction)
                   unattend

What the gateway needs of the rest of the process is named here too:
:class:`ProcessParts`, the parts it starts before it accepts and stops after it closed
(``server.process.lifecycle``); :class:`OperatorDoor`, the operator's API as the port
hands it ``/operator/v1/``
connections (``server.operator.api.OperatorAPI``, given by ``server.process.assemble``).

This module only names what the handlers depend on; it never does anything.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from server.protection import context as protection

if TYPE_CHECKING:
    import asyncio

    from server.gateway.hub import Hub
    from server.gateway.lobby import Lobby
    from server.gateway.session import Session
    from server.process.auth import Authenticator
    from server.process.config import ServerConfig
    from server.protocol.records import ReplyRecord
    from server.store.base import Store
    from server.table import TableOptions
    from server.vocabulary.events import Event
    from server.wallet.base import Wallet
    from server.wallet.courier import Courier

__all__ = [
    "CashierContext",
    "DepositLimits",
    "Exchange",
    "HelloContext",
    "HelloLimits",
    "OperatorDoor",
    "ProcessParts",
    "Relay",
    "Replies",
    "StoredEvents",
    "TableMaker",
    "TablesContext",
]

#: Answering a client, and sending a command record to a table's owner: player
#: protection's protocols (``server.protection.context``, where they are declared once),
#: of the gateway's connection.
Replies: TypeAlias = protection.Replies["Session"]
Relay: TypeAlias = protection.Relay["Session"]


class HelloLimits(Protocol):
    """The per-player connection limit, as ``hello`` checks and counts it."""

    def check_player(self, player: str) -> None: ...

    async def open_player(self, player: str) -> None: ...


class HelloContext(Replies, Protocol):
    """``hello``: who the connection is (``server.gateway.hello``)."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def auth(self) -> Authenticator: ...

    @property
    def store(self) -> Store: ...

    @property
    def limits(self) -> HelloLimits: ...

    async def money(self, player: str) -> tuple[int, int]: ...

    async def ask_wallet(
        self, player: str, currency: str | None, session: Mapping[str, Any] | None = None
    ) -> None: ...

    def background(self, job: Coroutine[Any, Any, None]) -> None: ...


class DepositLimits(Protocol):
    """How many deposits a player may make."""

    def deposit(self, player: str) -> None: ...


class CashierContext(Relay, Protocol):
    """The cashier's window: balances, deposits, history, shoe records
    (``server.gateway.cashier``)."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def store(self) -> Store: ...

    @property
    def limits(self) -> DepositLimits: ...

    async def persist(self, session: Session) -> None: ...

    async def session_money(self, session: Session) -> tuple[int, int]: ...

    async def money(self, player: str) -> tuple[int, int]: ...

    def store_failed(self, exc: BaseException) -> None: ...

    def store_works(self) -> None: ...


class StoredEvents(Protocol):
    """A table's stored log, for a resume the gateway's recent log cannot serve."""

    async def events_after(self, table: str, seq: int) -> list[Event] | None: ...


class TableMaker(Protocol):
    """Creating a table (the operators' ``create_table``)."""

    async def create_table(self, table_id: str, options: TableOptions) -> dict[str, Any]: ...


class TablesContext(Relay, Protocol):
    """The lobby, joining and leaving, table commands, roads, chat and the operators'
    requests (``server.gateway.tables``)."""

    def saw_close(self, table: str) -> bool: ...

    @property
    def config(self) -> ServerConfig: ...

    @property
    def store(self) -> Store: ...

    @property
    def lobby(self) -> Lobby: ...

    @property
    def hub(self) -> Hub: ...

    @property
    def bus(self) -> StoredEvents: ...

    @property
    def croupier(self) -> TableMaker: ...

    @property
    def sessions(self) -> Mapping[int, Session]: ...

    def background(self, job: Coroutine[Any, Any, None]) -> None: ...

    def left_table(self, session: Session, tid: str) -> None: ...

    async def attend(self, session: Session, table: str) -> None: ...

    def attended(self, session: Session, table: str, joined: bool) -> None: ...

    def unattend(self, session: Session, table: str) -> None: ...

    def watch_table(self, table: str) -> None: ...


class ProcessParts(Protocol):
    """The rest of the process, as the gateway starts and stops it
    (``server.process.lifecycle.Lifecycle``, given by ``server.process.assemble``): the
    store claimed, then everything opened before the port accepts (the bus's replies to
    ``on_reply``); readiness; the drain; the stop after the port closed; and a beat of
    the watchdog (run its jobs with ``background``)."""

    @property
    def wallet(self) -> Wallet | None: ...

    @property
    def courier(self) -> Courier | None: ...

    async def claim(self) -> None: ...

    async def open(self, on_reply: Callable[[ReplyRecord], None]) -> None: ...

    async def abandon(self) -> None: ...

    def not_ready(self) -> str | None: ...

    async def drain(self, timeout: float) -> None: ...

    async def close(self) -> None: ...

    def tick(self, now: float, background: Callable[[Coroutine[Any, Any, None]], None]) -> None: ...


class Exchange(Protocol):
    """One operator request on a connection taken over: the connection feeds it what it
    reads (``server.operator.http.OperatorExchange``)."""

    def feed(self, data: bytes) -> None: ...

    def feed_eof(self) -> None: ...


class OperatorDoor(Protocol):
    """The operator's API, as the gateway's port needs it: a connection whose first
    bytes are a ``/operator/v1/`` request (``server.gateway.sniff``) is handed over whole
    to :meth:`take`, which reads the request and answers it (``opened``: when the
    connection began); :attr:`enabled` says whether anyone could be let in (the start
    warns when the transfer API cannot be)."""

    def take(
        self, transport: asyncio.Transport, first: bytes, client: str, opened: float | None
    ) -> Exchange: ...

    @property
    def enabled(self) -> bool: ...
