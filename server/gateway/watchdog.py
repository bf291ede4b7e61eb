"""The gateway's watchdog over its connections: cutting one off at once (a flood, too
many connections), and bounding what waits to be sent (docs/architecture.md §7).

A client whose unsent frames pile up is cut off, the largest first, until the rest fit
the bounds: per connection, per client address and for the whole process (so that it
stays inside its container's memory); it resumes from its last seq.

Nothing here decides a rule, reads a message or logs a player's data.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from websockets.asyncio.server import ServerConnection

if TYPE_CHECKING:
    from server.gateway.session import Session

__all__ = ["CUT_OFF_LINGER", "SLOW_CLIENT_BUFFER", "cut_off", "cut_slow_clients"]

SLOW_CLIENT_BUFFER = 4 * 2**20  # bytes waiting in a client's write buffer before it is cut off
#: Seconds a cut-off connection may still send (dropped unread) before it is aborted.
CUT_OFF_LINGER = 1.0


def cut_off(conn: ServerConnection, code: int, reason: str) -> None:
    """Close at once: send the close frame and end our side of the TCP connection (the
    protocol's ``fail`` sends a FIN after it), without waiting out ``close_timeout`` for
    a peer that is flooding us. What the peer still sends is read and dropped for
    :data:`CUT_OFF_LINGER` seconds at most, then the socket is aborted. (Closing it
    while the peer's data lay unread reset the connection, and the reset could destroy
    the close frame before the peer read it: it saw 1006 instead of ``code``.)"""
    with contextlib.suppress(Exception):
        conn.protocol.fail(code, reason)
        conn.send_data()
    transport = conn.transport
    if transport is not None:
        asyncio.get_running_loop().call_later(CUT_OFF_LINGER, transport.abort)


def cut_slow_clients(
    sessions: Iterable[Session],
    *,
    per_connection: int,
    per_address: int,
    total: int,
    on_cut: Callable[[], None],
) -> None:
    """Bound what waits to be sent: per connection (``per_connection``), per address
    (``send_buffer_per_address``) and for the whole process (``send_buffer_total``).
    Over a bound, the connections with the most unsent are cut first (the slowest
    readers, who resume from their last seq), until the rest fit; ``on_cut`` counts
    each."""
    waiting: list[tuple[int, Session, asyncio.Transport]] = []
    for session in sessions:  # (every connection each second: nearly all have nothing unsent)
        transport = session.conn.transport
        if transport is None:
            continue
        size = transport.get_write_buffer_size()
        if size and not transport.is_closing():
            waiting.append((size, session, transport))
    waiting.sort(key=lambda w: w[0], reverse=True)  # the largest first
    unsent = sum(size for size, _s, _t in waiting)
    by_address: dict[str, int] = {}
    for size, session, _t in waiting:
        by_address[session.address] = by_address.get(session.address, 0) + size
    for size, session, transport in waiting:
        over = size > per_connection or by_address[session.address] > per_address or unsent > total
        if not over:
            continue
        on_cut()
        transport.abort()
        unsent -= size
        by_address[session.address] -= size
