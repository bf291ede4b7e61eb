"""The gateway's registry of handlers: every message type a client may send after
``hello``, and the function that handles it.

A handler is ``async (context, session, request id, checked fields) -> None``: it
answers through ``context.ok`` / ``context.error`` (now, or when the table's reply comes
back) or raises a :class:`~server.protocol.errors.ChemmyError`, which the dispatcher
answers. Each is typed against the narrow context it uses (``server.gateway.context``:
``hello`` a :class:`~.context.HelloContext`, the cashier's a
:class:`~.context.CashierContext`, the table requests a :class:`~.context.TablesContext`);
this registry is where the gateway is checked to be every one of them. The table
commands are relayed to the table's owner; everything else is the gateway's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from server.gateway import cashier, tables
from server.gateway.hello import hello
from server.protection import play_limits, play_session, responsible
from server.protocol.messages import SCHEMAS, TABLE_COMMANDS

if TYPE_CHECKING:
    from server.gateway.server import ChemmyServer
    from server.gateway.session import Session

__all__ = ["HANDLERS", "Handler", "hello"]

#: A handler as the dispatcher calls it: (the gateway, session, request id, checked
#: fields). The gateway is every context, so a handler typed against a narrower one fits.
Handler = Callable[["ChemmyServer", "Session", Any, dict[str, Any]], Awaitable[None]]

HANDLERS: dict[str, Handler] = {
    **{kind: tables.table_command(kind) for kind in TABLE_COMMANDS},
    "tables": tables.lobby,
    "join": tables.join,
    "leave": tables.leave,
    "roads": tables.roads,
    "chat": tables.chat,
    "create_table": tables.create_table,
    "close_table": tables.close_table,
    "balance": cashier.balance,
    "deposit": cashier.deposit,
    "history": cashier.history,
    "shoe_record": cashier.shoe_record,
    "take_break": responsible.take_break,
    "responsible": responsible.responsible,
    "limits": play_limits.limits,
    "set_limit": play_limits.set_limit,
    "remove_limit": play_limits.remove_limit,
    "reality_ack": play_session.reality_ack,
}

# Every message of the protocol has exactly one handler (``hello`` and ``ping`` are the
# dispatcher's own).
assert set(HANDLERS) | {"hello", "ping"} == set(SCHEMAS), set(SCHEMAS) ^ set(HANDLERS)
