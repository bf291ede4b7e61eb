"""What one client may take of the gateway: connections, messages, hellos, and places in
a table's queue — per connection, per player and per client address.

A flood must cost its sender, not the other players. Three kinds of limit:

- **How many connections** (:class:`Limits`): at most ``max_connections_per_address``
  open connections from one client address (more are closed with 1008) and
  ``max_connections_per_player`` connections that said hello as one player (a hello
  beyond is refused ``too_many_connections``); 0 turns a cap off.
- **How fast** (:class:`Limits`, with :class:`~server.limits.bucket.Bucket` s): besides each
  connection's own bucket, every message spends a token of its player's bucket
  (``player_rate_limit``, shared by the player's connections) and of its address's
  bucket (``address_rate_limit``; by default 2 and 10 times a connection's rate, see
  :meth:`~server.process.config.ServerConfig.shared_rates`); every ``hello`` a token of its
  address's hello
  bucket (``hello_rate_limit``: a guest per hello would otherwise fill the store). An
  address's state outlives its connections until its buckets are full again, so closing
  and reopening connections earns nothing.
- **Who goes next at a table** (:class:`Lines`): a table's command queue is one line for
  everyone, so 32 connections bursting ``join`` used to fill it and get another
  player's ``bet`` refused ``busy``. The gateway now keeps a line per player (and
  address) in front of each table: at most :data:`PLAYER_IN_FLIGHT` of one player's
  commands, and :data:`ADDRESS_IN_FLIGHT` of one address's, are in the table's queue at
  once; the rest wait at the gateway, in order, and the address's players take turns.
  Someone's flood then waits in their own line, and another player's command waits
  behind a handful of theirs at most.

The **client address** (:func:`client_address`) is the TCP peer, or, when the peer is a
trusted proxy (``trusted_proxies``), the nearest address in ``X-Forwarded-For`` that is
not a trusted proxy. IPv6 clients are grouped by /64 (one host usually owns a whole /64).

These count one process. Over a cluster the caps and the shared buckets hold for every
process together: :class:`~server.limits.shared.SharedLimits` adds a Redis part (the
gateway calls :meth:`Limits.open_connection` and :meth:`Limits.open_player`, which it
may await on Redis).

Nothing here knows a rule of the game, sends a frame or logs; time is passed in or read
from ``time.monotonic``.
"""

from __future__ import annotations

import ipaddress
import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from server.limits.bucket import Bucket
from server.protocol.errors import Refused

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

    from server.limits.context import LimitSettings

__all__ = [
    "ADDRESS_IN_FLIGHT",
    "LOST_AFTER",
    "PLAYER_IN_FLIGHT",
    "PLAYER_WAITING",
    "Limits",
    "Lines",
    "client_address",
    "forwarded_address",
    "parse_networks",
]

#: One player's commands (from one address) in a table's queue at once.
PLAYER_IN_FLIGHT: Final = 4
#: One address's commands in a table's queue at once (its players take turns).
ADDRESS_IN_FLIGHT: Final = 16
#: One player's commands waiting at the gateway for one table; more are refused.
PLAYER_WAITING: Final = 32
#: Seconds after which a command still unanswered no longer holds its place (its reply
#: was lost: an owner that went away); the place is given back.
LOST_AFTER: Final = 60.0
#: How often (seconds) idle addresses and players are forgotten.
SWEEP_EVERY: Final = 30.0

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


# -- the client's address -----------------------------------------------------------------


def parse_networks(values: Iterable[str]) -> tuple[Network, ...]:
    """``trusted_proxies`` as networks (a plain address is a /32 or /128)."""
    return tuple(ipaddress.ip_network(value, strict=False) for value in values)


def _ip(text: str) -> Address | None:
    try:
        ip = ipaddress.ip_address(text.strip().split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _key(ip: Address) -> str:
    """The address a client is counted by: IPv4 as is, IPv6 by its /64."""
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def client_address(conn: ServerConnection, trusted: tuple[Network, ...] = ()) -> str:
    """Who ``conn`` is, for the limits: its TCP peer, or behind trusted proxies the
    nearest ``X-Forwarded-For`` hop that is not one (:func:`forwarded_address`)."""
    remote = conn.remote_address
    forwarded = conn.request.headers.get_all("X-Forwarded-For") if conn.request else []
    return forwarded_address(str(remote[0]) if remote else "", forwarded, trusted)


def forwarded_address(peer: str, forwarded: Iterable[str], trusted: tuple[Network, ...]) -> str:
    """Who sent a request from TCP peer ``peer`` with the ``X-Forwarded-For`` values
    ``forwarded``: the peer, or behind trusted proxies the nearest hop that is not one
    (read right to left: each proxy appends the address it received from, and only what
    our own proxies appended can be believed; the rest of the header is whatever the
    client wrote). IPv6 by its /64; ``"unknown"`` for no address."""
    ip = _ip(peer)
    if ip is None:
        return "unknown"
    if trusted and any(ip in net for net in trusted):
        hops = [hop for header in forwarded for hop in header.split(",")]
        for hop in reversed(hops):
            hop_ip = _ip(hop)
            if hop_ip is None:
                break  # garbage a client wrote: stop at the last hop a proxy vouched for
            ip = hop_ip
            if not any(ip in net for net in trusted):
                break
    return _key(ip)


# -- connections and rates ------------------------------------------------------------------


@dataclass(slots=True)
class _Peer:
    """One address's or one player's share: open connections and buckets."""

    connections: int = 0
    messages: Bucket | None = None
    hellos: Bucket | None = None
    deposits: Bucket | None = None

    def idle(self, now: float) -> bool:
        """No connection open and every bucket full again: nothing to remember."""
        return self.connections == 0 and all(
            bucket is None or bucket.full(now)
            for bucket in (self.messages, self.hellos, self.deposits)
        )


def _bucket(rate: float, burst: int, now: float) -> Bucket | None:
    return Bucket(rate, float(burst), now) if rate > 0 else None


class Limits:
    """The connection caps and the shared rate limits of one gateway (see the module
    docstring). ``clock`` is ``time.monotonic`` unless a test passes another."""

    def __init__(self, config: LimitSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self.trusted = parse_networks(config.trusted_proxies)
        self._player_rate, self._address_rate = config.shared_rates()
        self.addresses: dict[str, _Peer] = {}
        self.players: dict[str, _Peer] = {}
        self._swept = clock()

    # -- connections ----------------------------------------------------------------
    def connect(self, address: str) -> bool:
        """A connection from ``address`` opened; False (and not counted) when the
        address already has ``max_connections_per_address``."""
        now = self.clock()
        if now - self._swept > SWEEP_EVERY:
            self.sweep(now)
        peer = self._address(address)
        cap = self.config.max_connections_per_address
        if cap and peer.connections >= cap:
            return False
        peer.connections += 1
        return True

    async def open_connection(self, address: str) -> bool:
        """:meth:`connect`; over a cluster (:class:`~server.limits.shared.SharedLimits`)
        counted against every process's connections."""
        return self.connect(address)

    async def open_player(self, player: str) -> None:
        """:meth:`sign_in`; over a cluster counted against every process's connections."""
        self.sign_in(player)

    def disconnect(self, address: str) -> None:
        peer = self.addresses.get(address)
        if peer is not None and peer.connections > 0:
            peer.connections -= 1

    def check_player(self, player: str) -> None:
        """Refuse ``too_many_connections`` when ``player`` has no connection to spare."""
        cap = self.config.max_connections_per_player
        peer = self.players.get(player)
        if cap and peer is not None and peer.connections >= cap:
            raise Refused(
                "too_many_connections",
                f"this player already has {cap} open connections, the most allowed; close one",
            )

    def sign_in(self, player: str) -> None:
        """A connection said hello as ``player``: count it, or refuse
        ``too_many_connections`` (and count nothing)."""
        self.check_player(player)
        peer = self.players.get(player)
        if peer is None:
            peer = self.players[player] = _Peer(messages=_bucket(*self._player_rate, self.clock()))
        peer.connections += 1

    def sign_out(self, player: str) -> None:
        peer = self.players.get(player)
        if peer is not None and peer.connections > 0:
            peer.connections -= 1

    def deposit(self, player: str) -> None:
        """One play-money deposit of ``player``, or ``rate_limited``: each is a ledger
        entry kept for good, so what one player can make the store keep is bounded
        (``deposit_burst`` at once, ``deposits_per_day`` a day)."""
        per_day = self.config.deposits_per_day
        if not per_day:
            return
        now = self.clock()
        peer = self.players.get(player)
        if peer is None:
            peer = self.players[player] = _Peer(messages=_bucket(*self._player_rate, now))
        if peer.deposits is None:
            peer.deposits = Bucket(per_day / 86_400, float(self.config.deposit_burst), now)
        if not peer.deposits.take(now):
            raise deposits_refused(per_day)

    # -- rates ----------------------------------------------------------------------
    def take(self, address: str, player: str | None) -> bool:
        """One message from ``address`` (and ``player`` once known): whether their
        shared buckets allow it (each bucket is spent only if all allow it)."""
        now = self.clock()
        # (Two buckets at most, looked at in place: every frame passes here.)
        mine = self._address(address).messages
        theirs = None
        if player is not None:
            peer = self.players.get(player)
            theirs = None if peer is None else peer.messages
        if (mine is not None and not mine.peek(now)) or (
            theirs is not None and not theirs.peek(now)
        ):
            return False
        if mine is not None:
            mine.take(now)
        if theirs is not None:
            theirs.take(now)
        return True

    def take_hello(self, address: str) -> bool:
        """One hello from ``address``: whether its hello bucket allows it."""
        bucket = self._address(address).hellos
        return bucket is None or bucket.take(self.clock())

    # -- bookkeeping ----------------------------------------------------------------
    def _address(self, address: str) -> _Peer:
        peer = self.addresses.get(address)
        if peer is None:
            config = self.config
            now = self.clock()
            peer = self.addresses[address] = _Peer(
                messages=_bucket(*self._address_rate, now),
                hellos=_bucket(config.hello_rate_limit, config.hello_rate_burst, now),
            )
        return peer

    def sweep(self, now: float | None = None) -> None:
        """Forget the addresses and players that hold nothing any more."""
        now = self.clock() if now is None else now
        self._swept = now
        for table in (self.addresses, self.players):
            for key in [key for key, peer in table.items() if peer.idle(now)]:
                del table[key]


def deposits_refused(per_day: int) -> Refused:
    """The refusal of a deposit beyond the player's allowance."""
    return Refused(
        "rate_limited",
        f"that is more play money than a player may add today ({per_day} deposits a "
        "day); try again later",
    )


# -- fair lines in front of the tables ------------------------------------------------------

#: Hands a command to its table (over the bus); False when it did not get there (the
#: command was refused at once, or its connection is gone), which frees its place.
Go = Callable[[], bool]
#: (table, address, player): one player's line at one table.
LineKey = tuple[str, str, str]


class _PlayerLine:
    # (Plain classes, not dataclasses with default factories: made and forgotten for
    # nearly every command of a player with nothing in flight.)
    __slots__ = ("sent", "served", "waiting")

    def __init__(self) -> None:
        self.sent: deque[float] = deque()  # when each in-flight command left
        self.waiting: deque[Go] = deque()
        self.served = 0  # when its last command went (a count): the least recent goes first


class _AddressLine:
    __slots__ = ("sent", "turns")

    def __init__(self) -> None:
        self.sent: deque[float] = deque()  # the address's in-flight commands
        #: The players with commands waiting, in the order they began to wait.
        self.turns: dict[str, None] = {}


class Lines:
    """Per-player lines in front of each table's queue (see the module docstring).

    :meth:`enter` hands a command to the table now or when its turn comes;
    :meth:`answered` is called once for each command that reached the table, when its
    reply comes back. Commands keep their order within one player's line.
    """

    def __init__(
        self,
        *,
        per_player: int = PLAYER_IN_FLIGHT,
        per_address: int = ADDRESS_IN_FLIGHT,
        waiting: int = PLAYER_WAITING,
        lost_after: float = LOST_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_player = per_player
        self.per_address = per_address
        self.waiting = waiting
        self.lost_after = lost_after
        self.clock = clock
        self._players: dict[LineKey, _PlayerLine] = {}
        self._addresses: dict[tuple[str, str], _AddressLine] = {}
        self._pumping = False
        self._touched: list[LineKey] = []  # lines to forget if they hold nothing
        self._served = itertools.count(1)

    def in_flight(self, table: str, address: str, player: str | None = None) -> int:
        """Commands of ``player`` (or of everyone at ``address``) in ``table``'s queue."""
        if player is None:
            aline = self._addresses.get((table, address))
            return 0 if aline is None else len(aline.sent)
        pline = self._players.get((table, address, player))
        return 0 if pline is None else len(pline.sent)

    def __len__(self) -> int:
        """How many player lines hold a command (sent or waiting)."""
        return len(self._players)

    def enter(self, table: str, address: str, player: str, go: Go) -> LineKey:
        """Put ``go`` in ``player``'s line at ``table``: it runs now if the player and
        the address have a free place, else when its turn comes. Raises
        :class:`Refused` (``rate_limited``) when the player already has
        :attr:`waiting` commands waiting there."""
        key = (table, address, player)
        pline = self._players.get(key)
        if pline is None:
            pline = self._players[key] = _PlayerLine()
        elif len(pline.waiting) >= self.waiting:
            raise Refused(
                "rate_limited", "too many of your commands are waiting at this table; slow down"
            )
        aline = self._addresses.get(key[:2])
        if aline is None:
            aline = self._addresses[(table, address)] = _AddressLine()
        if (
            not aline.turns  # nobody waits at this address (so neither does the player)
            and len(pline.sent) < self.per_player
            and len(aline.sent) < self.per_address
            and not self._pumping
        ):  # the usual case: straight to the table
            pline.served = next(self._served)
            now = self.clock()
            pline.sent.append(now)
            aline.sent.append(now)
            self._pumping = True
            try:
                reached = go()
            finally:
                self._pumping = False
            if not reached:
                pline.sent.pop()
                aline.sent.pop()
                self._touched.append(key)
            if self._touched:  # a place freed meanwhile, or a line to forget
                self._pump(table, address)
            return key
        pline.waiting.append(go)
        aline.turns.setdefault(player, None)
        self._pump(table, address)
        return key

    def answered(self, key: LineKey) -> None:
        """A command of ``key``'s line that reached the table was answered: its place
        goes to the next in line (this player's, or another of the address's)."""
        pline = self._players.get(key)
        aline = self._addresses.get((key[0], key[1]))
        if pline is not None and pline.sent:
            pline.sent.popleft()
            if aline is not None and aline.sent:
                aline.sent.popleft()
        if self._pumping:  # a reply while a command was handed over: the pump goes on
            self._touched.append(key)
        elif aline is None or not aline.turns:  # nobody waits: forget what holds nothing
            if pline is not None and not pline.sent and not pline.waiting:
                del self._players[key]
            if aline is not None and not aline.sent:
                del self._addresses[(key[0], key[1])]
        else:
            self._touched.append(key)
            self._pump(key[0], key[1])

    def drop_table(self, table: str) -> list[Go]:
        """``table`` closed: its lines are gone. Returns the commands that were waiting
        (never sent), in line order, for the caller to answer."""
        waiting: list[Go] = []
        for key in [key for key in self._players if key[0] == table]:
            waiting.extend(self._players.pop(key).waiting)
        for akey in [akey for akey in self._addresses if akey[0] == table]:
            del self._addresses[akey]
        return waiting

    # -- inside --------------------------------------------------------------------------
    def _pump(self, table: str, address: str) -> None:
        """Fill the address's free places, its waiting players taking turns (the one
        served least recently first, then the one waiting longest); then forget the
        lines that hold nothing."""
        aline = self._addresses.get((table, address))
        if aline is None:  # the table was dropped meanwhile
            self._touched.clear()
            return
        self._pumping = True
        try:
            _expire(aline.sent, self.clock() - self.lost_after)
            moved = True
            while moved and aline.turns and len(aline.sent) < self.per_address:
                moved = False
                waiting = []
                for player in list(aline.turns):
                    pline = self._players.get((table, address, player))
                    if pline is None or not pline.waiting:
                        aline.turns.pop(player, None)
                    else:
                        waiting.append((pline.served, player, pline))
                for _served, player, pline in sorted(waiting, key=lambda w: w[0]):
                    if len(aline.sent) >= self.per_address:
                        break
                    _expire(pline.sent, self.clock() - self.lost_after)
                    if len(pline.sent) >= self.per_player:
                        continue
                    go = pline.waiting.popleft()
                    if not pline.waiting:
                        aline.turns.pop(player, None)
                    pline.served = next(self._served)
                    now = self.clock()
                    pline.sent.append(now)
                    aline.sent.append(now)
                    if not go():  # it never reached the table: its place is free again
                        pline.sent.pop()
                        aline.sent.pop()
                    self._touched.append((table, address, player))
                    moved = True
        finally:
            self._pumping = False
        touched, self._touched = self._touched, []
        for key in touched:
            pline = self._players.get(key)
            if pline is not None and not pline.sent and not pline.waiting:
                del self._players[key]
        if not aline.sent and not aline.turns:
            self._addresses.pop((table, address), None)
        for other in {(key[0], key[1]) for key in touched} - {(table, address)}:
            self._pump(*other)  # a place freed elsewhere meanwhile


def _expire(sent: deque[float], deadline: float) -> None:
    """Places held since before ``deadline`` by a reply that never came (an owner that
    went away) are given back."""
    while sent and sent[0] < deadline:
        sent.popleft()
