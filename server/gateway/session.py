"""A client connection's session: who it is, what it watches, and how fast it may talk.

A :class:`Session` is the gateway's record of one WebSocket connection: its wire format,
its client address, the identity its ``hello`` proved, the tables it joined, and its
rate limit. Nothing here knows a rule of the game or touches a table.

The rate limit is a token bucket per connection (``rate`` messages a second, bursts of
``burst``). Every frame counts, garbage included, and so does every WebSocket ping:
``websockets`` answers pings inside its protocol (RFC 6455 §5.5.2), before the gateway
sees them, so :class:`GatewayConnection` asks the session first and leaves a ping over
the limit unanswered. The limits shared by a player's or an address's connections are
``server.limits``'.

This module never sends anything and never logs a player's private data.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import Frame, Opcode
from websockets.server import ServerProtocol

from server.gateway import watchdog
from server.gateway.sniff import READ_TIMEOUT, sniff
from server.limits.bucket import Bucket
from server.limits.local import Limits
from server.process.auth import Identity
from server.protection.context import PlayClock
from server.protocol.codec import JSON, MSGPACK

if TYPE_CHECKING:
    from server.gateway.context import Exchange, OperatorDoor

__all__ = [
    "REFUSALS_BURST",
    "REFUSALS_RATE",
    "SUBPROTOCOLS",
    "GatewayConnection",
    "PlayClock",
    "Session",
    "select_subprotocol",
]

#: A connection is cut off (1008) once it has been refused for its rate this many times
#: more than it earned back at ``REFUSALS_RATE`` a second.
REFUSALS_BURST = 200.0
REFUSALS_RATE = 5.0

_conn_ids = itertools.count(1)


@dataclass(eq=False)
class Session:
    """One client connection."""

    conn: ServerConnection
    fmt: str
    bucket: Bucket
    #: Who the client is for the limits (``server.limits.local.client_address``).
    address: str = "unknown"
    id: int = field(default_factory=lambda: next(_conn_ids))
    identity: Identity | None = None
    #: Whether the player is in the store: a guest is written there only when they
    #: first sit or deposit (an idle guest costs nothing; issue 9, "Guests").
    persisted: bool = True
    tables: set[str] = field(default_factory=set)
    #: Refusals allowed: each rate-limited message spends one; they come back slowly,
    #: so a flood is cut off however its bursts are spaced (one accepted message in
    #: between does not reset the count).
    refusals: Bucket = field(default_factory=lambda: Bucket(REFUSALS_RATE, REFUSALS_BURST))
    chat_times: list[float] = field(default_factory=list)
    #: Set once the connection is being cut off for its rate.
    cut_off: bool = False
    #: The connection's part in the play session, from ``hello`` (``server.protection.play_session``).
    play: PlayClock | None = None
    #: When the gateway decoded the frame it is handling now (``time.perf_counter``),
    #: None between frames: a table command relayed meanwhile is timed from it
    #: (``chemmy_command_seconds``).
    received: float | None = None

    @property
    def player(self) -> str:
        """The authenticated player's id (only after ``hello``)."""
        assert self.identity is not None
        return self.identity.player_id

    def admit(self, limits: Limits) -> bool:
        """Whether one more frame (a message or a ping) is within the connection's
        rate, its player's and its address's (``server.limits.local``)."""
        if not self.bucket.take():
            return False
        player = None if self.identity is None else self.identity.player_id
        return limits.take(self.address, player)

    def over_limit(self) -> bool:
        """A frame over the limit was refused: whether the connection may go on. A
        connection refused faster than it earns refusals back is cut off (1008)."""
        if self.refusals.take():
            return True
        if not self.cut_off:
            self.cut_off = True
            watchdog.cut_off(self.conn, 1008, "rate limit")
        return False

    def ping_allowed(self, limits: Limits) -> bool:
        """Asked by the connection for each WebSocket ping, inside the protocol's frame
        parser: over the limit the ping is dropped unanswered, and counts as refused."""
        if self.admit(limits):
            return True
        if self.refusals.take() or self.cut_off:
            return False
        self.cut_off = True  # not from inside the parser: on the loop's next turn
        asyncio.get_running_loop().call_soon(watchdog.cut_off, self.conn, 1008, "rate limit")
        return False


#: The wire formats a client may ask for (docs/protocol.md §2), in the server's order.
SUBPROTOCOLS = [MSGPACK, JSON]


def select_subprotocol(conn: ServerConnection, offered: Iterable[str]) -> Any:
    """msgpack or JSON as the client offers; a client that offers none gets JSON."""
    offered = list(offered)
    for proto in SUBPROTOCOLS:
        if proto in offered:
            return proto
    return None


class GatewayConnection(ServerConnection):
    """``websockets``' server connection, with its pings counted, and the operator's
    HTTP requests taken over.

    The Sans-I/O protocol answers a ping with a pong inside ``recv_frame`` (RFC 6455
    §5.5.2: "MUST send a Pong"), so nothing above it can refuse one: 75,000 pings a
    second on one connection were each answered. This connection wraps its protocol's
    ``recv_frame``: while :attr:`allow_ping` is set (the gateway sets it to the
    session's rate limit once the connection is open), a ping it refuses is dropped,
    unanswered, as a message over the limit is refused. A peer that keeps on is cut off
    by the gateway like any flood.

    Given an ``operator`` door, it looks at the first bytes the client sends
    (``server.gateway.sniff``): a request for ``/operator/v1/...`` is handed to the door,
    whose exchange (:attr:`exchange`) reads and answers it (``server.operator.http``), and
    never reaches the WebSocket protocol, whose handshake then ends quietly when the
    connection closes; anything else is fed to the protocol as it came. First bytes that
    have not told which by ``READ_TIMEOUT`` after the connection began (a request line
    dribbled: ``POST /oper``...) are handed to an exchange too, which answers ``408``.
    """

    def __init__(
        self,
        protocol: ServerProtocol,
        *args: Any,
        operator: OperatorDoor | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(protocol, *args, **kwargs)
        self.operator = operator
        #: The operator request this connection was taken over for, if it was.
        self.exchange: Exchange | None = None
        self._sniffing = operator is not None
        self._head = b""
        self._opened: float | None = None  # when the connection began (loop time)
        self._undecided: asyncio.TimerHandle | None = None
        #: Asked for every ping received; False drops the ping.
        self.allow_ping: Callable[[], bool] | None = None
        answer = protocol.recv_frame

        def recv_frame(frame: Frame) -> None:
            allow = self.allow_ping
            if frame.opcode is Opcode.PING and allow is not None and not allow():
                return  # over the limit: unanswered
            answer(frame)

        protocol.recv_frame = recv_frame  # type: ignore[method-assign]

    # -- the operator's HTTP requests (server.gateway.sniff, server.operator.http) ------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._opened = asyncio.get_running_loop().time()
        super().connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._undecided is not None:
            self._undecided.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.exchange is not None:
            self.exchange.feed(data)
            return
        if not self._sniffing:
            super().data_received(data)
            return
        head = self._head + data
        decided = sniff(head)
        if decided is None:
            self._head = head
            if self._undecided is None:
                loop = asyncio.get_running_loop()
                opened = loop.time() if self._opened is None else self._opened
                self._undecided = loop.call_at(opened + READ_TIMEOUT, self._take_over)
            return
        self._sniffing, self._head = False, b""
        if self._undecided is not None:
            self._undecided.cancel()
        if decided and self.operator is not None:
            self._take_over(head)
        else:
            super().data_received(head)

    def _take_over(self, head: bytes | None = None) -> None:
        """Answer the request on this connection as an operator's (``head``: its first
        bytes; None: those still undecided when ``READ_TIMEOUT`` passed: a ``408``)."""
        if head is None:
            if not self._sniffing or self.operator is None:
                return
            self._sniffing, head, self._head = False, self._head, b""
        assert self.operator is not None
        peer = self.transport.get_extra_info("peername")
        client = str(peer[0]) if isinstance(peer, tuple) and peer else "-"
        self.exchange = self.operator.take(self.transport, head, client, self._opened)

    def eof_received(self) -> bool | None:  # type: ignore[override]
        if self.exchange is not None:
            self.exchange.feed_eof()
            return True  # the exchange closes the connection once it has answered
        if self._sniffing and self._head:
            if self._undecided is not None:
                self._undecided.cancel()
            self._sniffing, head, self._head = False, self._head, b""
            super().data_received(head)
        super().eof_received()
        return None
