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
    HelloContext   Replies + config, auth, store, money,    limits: check_player, open_player
                   ask_wallet, background
    CashierContext Relay + config, store, persist, money,   limits: deposit
                   session_money, store_failed, store_works
    TablesContext  Relay + config, store, lobby, hub,       bus: events_after,
                   sessions, background, left_table,        croupier: create_table
                   watch_table, attend, attended,           (store: player_restriction)
                   unattend

What the gateway needs of the rest of the process is named here too:
:class:`OperatorDoor`, the operator's API as the port hands it ``/operator/v1/``
requests (``server.operator.api.OperatorAPI``, given by ``server.process.assemble``).

This module only names what the handlers depend on; it never does anything.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from server.protocol.records import ReplyRecord

if TYPE_CHECKING:
    from server.gateway.hub import Hub
    from server.gateway.lobby import Lobby
    from server.gateway.operator_http import HttpRequest, HttpResponse
    from server.gateway.session import Session
    from server.process.auth import Authenticator
    from server.process.config import ServerConfig
    from server.protocol.errors import ChemmyError
    from server.store.base import (
        Store,
    )
    from server.table import TableOptions
    from server.table.events import Event

__all__ = [
    "CashierContext",
    "Continuation",
    "DepositLimits",
    "HelloContext",
    "HelloLimits",
    "OperatorDoor",
    "Relay",
    "Replies",
    "StoredEvents",
    "TableMaker",
    "TablesContext",
]

#: What the gateway does with a table's reply record when it comes back.
Continuation = Callable[[ReplyRecord], None]


class Replies(Protocol):
    """Answering a client: a message, an ``ok`` or an ``error`` echoing its id."""

    def send(self, session: Session, message: dict[str, Any]) -> None: ...

    def ok(self, session: Session, mid: Any, /, **result: Any) -> None: ...

    def error(self, session: Session, mid: Any, err: ChemmyError) -> None: ...


class Relay(Replies, Protocol):
    """Sending a command record to a table's owner (``then`` gets its reply)."""

    def relay(
        self,
        session: Session,
        table: str,
        kind: str,
        mid: Any = None,
        fields: dict[str, Any] | None = None,
        then: Continuation | None = None,
    ) -> None: ...


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


class OperatorDoor(Protocol):
    """The operator's API, as the gateway's port needs it: each ``/operator/v1/``
    request read off a connection is answered by :meth:`respond`; :attr:`enabled` says
    whether anyone could be let in (the start warns when the transfer API cannot be)."""

    async def respond(self, request: HttpRequest) -> HttpResponse: ...

    @property
    def enabled(self) -> bool: ...
