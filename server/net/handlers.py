"""The gateway's registry of handlers: every message type a client may send after
``hello``, and the function that handles it.

A handler is ``async (server, session, request id, checked fields) -> None``: it answers
through ``server.ok`` / ``server.error`` (now, or when the table's reply comes back) or
raises a :class:`~server.protocol.errors.ChemmyError`, which the dispatcher answers.
The table commands are relayed to the table's owner; everything else is the gateway's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from server.protocol.messages import SCHEMAS, TABLE_COMMANDS
from server.protocol.records import ReplyRecord

from . import cashier, tables
from .hello import hello

if TYPE_CHECKING:
    from .server import ChemmyServer
    from .session import Session

__all__ = ["HANDLERS", "Continuation", "Handler", "hello"]

#: A gateway handler: (server, session, request id, checked fields).
Handler = Callable[["ChemmyServer", "Session", Any, dict[str, Any]], Awaitable[None]]
#: What the gateway does with a table's reply record when it comes back.
Continuation = Callable[[ReplyRecord], None]

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
}

# Every message of the protocol has exactly one handler (``hello`` and ``ping`` are the
# dispatcher's own).
assert set(HANDLERS) | {"hello", "ping"} == set(SCHEMAS), set(SCHEMAS) ^ set(HANDLERS)
