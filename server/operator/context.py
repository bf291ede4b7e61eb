"""What the operator's routes need of the rest of the process, named once.

:class:`OperatorSide` is everything a route of ``/operator/v1/`` reads or asks: the
gateway's table requests (``server.gateway.context.TablesContext``: the lobby, the
sessions here, a table's creation), the bus (this process's name), the croupier (who
owns which table), the store, the counters, the courier, a player's money, and a command
to a table's owner. The gateway's ``ChemmyServer`` is one; ``server.process.assemble``
hands it to :func:`server.operator.routes.install`. A route module takes this, never the
server itself, and this module declares it once for them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from server.gateway.context import TablesContext

if TYPE_CHECKING:
    from server.bus.base import Bus
    from server.croupier.host import Croupier
    from server.process.metrics import Metrics
    from server.protocol.records import ReplyRecord
    from server.wallet.courier import Courier

__all__ = ["OperatorSide"]


class OperatorSide(TablesContext, Protocol):
    """The process, as the operator's routes see it."""

    @property
    def bus(self) -> Bus: ...

    @property
    def croupier(self) -> Croupier: ...

    @property
    def metrics(self) -> Metrics: ...

    @property
    def courier(self) -> Courier | None: ...

    async def money(self, player: str) -> tuple[int, int]: ...

    def refresh_player(self, player: str) -> None: ...

    async def ask_table(
        self, table: str, kind: str, fields: dict[str, Any] | None = None
    ) -> ReplyRecord: ...
