"""The WebSocket gateway: client connections in, records to the tables' owners out.

:class:`ChemmyServer` is one process of Chemmy. As a **gateway** it accepts connections,
decodes each frame (``server.protocol.codec``), checks the message
(``server.protocol.messages``), checks the sender may send it (said hello; within the
rates of its connection, its player and its client address, pings included:
``server.gateway.limits``) and dispatches it through one registry of handlers
(:data:`HANDLERS`):

- table commands (``bet``, ``sit``, ``turn``...) and ``join``/``leave``/``roads`` travel
  as :class:`~server.protocol.records.CommandRecord` s on the bus to the table's owner,
  whose :class:`~server.protocol.records.ReplyRecord` comes back to the asking
  connection (``server.gateway.tables``); each waits in its player's line at the table
  (:class:`~server.gateway.limits.Lines`), so one player's flood never fills the table's
  queue ahead of another's commands;
- the cashier's requests (``balance``, ``deposit``, ``history``, ``shoe_record``) go to
  the store (``server.gateway.cashier``);
- the lobby, chat and the operators' ``create_table``/``close_table`` (``server.gateway.tables``).

As an **owner** it runs table actors (``server.croupier``) for the tables it owns; with
the in-process bus (the default) that is every table. The gateway never reads a table:
whatever it needs of one comes in a reply record or an event. It builds none of its
parts (the store, the bus, the croupier, the lobby, the limits, the hub, the metrics,
the authenticator): ``server.process.assemble`` puts the process together and hands them
in; each handler is typed against the narrow part of it that it uses
(``server.gateway.context``).

Replies echo the command's ``id``: ``{"type": "ok", "id": ...}`` or ``{"type": "error",
"id": ..., "code": ..., "message": ...}`` (an error to a frame refused for a value
elsewhere in it still echoes a good ``id``). A table command's events are delivered before
its reply, so a client sees its own move in ``seq`` order. The connection survives every
refused command. The HTTP endpoints (health, readiness, metrics and the web table's files) are in
``server.gateway.http``; the operator's API under ``/operator/v1/`` (the transfer API in
``--wallet transfer``) is ``server.operator.api``, read off the same port by
``server.gateway.operator_http``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import time
import urllib.parse
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed

from server.bus.base import Bus
from server.croupier.actor import TableActor
from server.croupier.host import Croupier
from server.gateway.context import OperatorDoor
from server.gateway.handlers import HANDLERS, Continuation, hello
from server.gateway.http import Endpoints
from server.gateway.hub import Hub, send_now
from server.gateway.limits import Limits, LineKey, Lines, client_address
from server.gateway.lobby import Lobby, SharedLobby
from server.gateway.session import Bucket, GatewayConnection, Session
from server.gateway.shared_limits import SharedLimits
from server.gateway.watchers import Watchers
from server.process.auth import Authenticator, AuthError
from server.process.config import ServerConfig
from server.process.metrics import LoopWatch, Metrics
from server.protection import play_session
from server.protocol.codec import JSON, MSGPACK, decode, encode, request_id
from server.protocol.errors import ChemmyError, ProtocolError, Refused, no_table
from server.protocol.messages import parse
from server.protocol.records import Address, CommandRecord, ReplyRecord
from server.store.base import (
    Store,
    StoreError,
)
from server.table.events import Event
from server.wallet.base import Wallet, WalletError
from server.wallet.courier import Courier
from server.wallet.mirror import sync_mirror

__all__ = ["ChemmyServer"]

log = logging.getLogger("chemmy.server")

SUBPROTOCOLS = [MSGPACK, JSON]
SLOW_CLIENT_BUFFER = 4 * 2**20  # bytes waiting in a client's write buffer before it is cut off
#: Seconds without a store failure that end a failure episode (store_failed).
STORE_QUIET = 30.0
#: How many closed table ids a gateway remembers (to answer ``no_table`` at once).
CLOSED_TABLES_KEPT = 4096
#: Seconds a cut-off connection may still send (dropped unread) before it is aborted.
CUT_OFF_LINGER = 1.0


@dataclass(slots=True)
class _Pending:
    """A command sent to a table's owner, waiting for its reply."""

    session: Session
    then: Continuation
    sent: float
    line: LineKey  # the player's line at the table, whose place the reply frees
    kind: str  # the command's type


class ChemmyServer:
    """One Chemmy process: a gateway for its clients and the owner of its tables."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        store: Store,
        bus: Bus,
        croupier: Croupier,
        lobby: Lobby,
        limits: Limits,
        hub: Hub,
        metrics: Metrics,
        auth: Authenticator,
        operator: OperatorDoor,
    ) -> None:
        """The gateway over parts built elsewhere (``server.process.assemble``: the one place
        the process is put together); it holds its connections' state of its own."""
        self.config = config
        self.store = store
        self.bus = bus
        self.croupier = croupier
        self.lobby = lobby
        self.limits = limits
        self.hub = hub
        self.metrics = metrics
        self.auth = auth
        self.draining = False
        self.sessions: dict[int, Session] = {}
        self.lines = Lines()
        self.endpoints = Endpoints(self.metrics, self._not_ready, config.origins)
        #: ``/operator/v1/`` (server.operator.api, its routes installed by
        #: server.process.assemble): read off this port by ``operator_http``.
        self.operator_api = operator
        self._pending: dict[int, _Pending] = {}
        #: Commands sent for the operator's HTTP calls (no connection), by request id.
        self._asked: dict[int, asyncio.Future[ReplyRecord]] = {}
        #: Tables this gateway saw close (their ``closed`` event), until watched again:
        #: a command for one is answered ``no_table`` here, whoever owned it.
        self._closed_tables: dict[str, None] = {}
        #: Who watches each table here: the bus hears a table while someone does.
        self.watchers = Watchers()
        self._store_refusals = 0  # requests refused in the store's failure episode
        self._store_failed_at = 0.0
        self._request_ids = itertools.count(1)
        self._server: Server | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._loop_watch = LoopWatch(metrics)
        self._background: set[asyncio.Task[None]] = set()
        self.slow_client_buffer = SLOW_CLIENT_BUFFER  # bytes unsent before a client is cut
        self.guest_sweep_interval = 60.0  # how often idle guests are looked for
        self._next_guest_sweep = 0.0
        #: How often the play sessions of the players connected here are touched (they
        #: go on while a connection is open: server.protection.play_session), and whether the
        #: last touch failed (one log line an episode).
        self.touch_interval = play_session.touch_every(config.session_gap * 60)
        self._next_touch = 0.0
        self._touch_failed = False
        #: Where the players' money lives (docs/wallet.md), and the courier that
        #: delivers a seamless wallet's credits and rollbacks (none otherwise).
        self.wallet: Wallet | None = None
        self.courier: Courier | None = None
        self.watchdog_interval = 1.0

    @property
    def actors(self) -> dict[str, TableActor]:
        """This process's table actors (for tests and tools; the gateway never reads them)."""
        return self.croupier.actors

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Bind the port, claim the store, then the tables, then accept: a start that
        cannot serve (the port taken, the SQLite file served by another process) fails
        before it has claimed anything, and leaves a running server alone."""
        self._server = await serve(
            self._handler,
            self.config.host,
            self.config.port,
            subprotocols=SUBPROTOCOLS,  # type: ignore[arg-type]
            select_subprotocol=_select_subprotocol,
            # (partial: websockets types it as the class; it only calls it)
            create_connection=functools.partial(  # type: ignore[arg-type]
                GatewayConnection, operator=self.operator_api.respond
            ),
            process_request=self.endpoints.respond,
            max_size=self.config.max_frame,
            compression="deflate" if self.config.compression else None,
            ping_interval=20,
            ping_timeout=20,
            start_serving=False,
        )
        try:
            await self.store.claim_serving()
            await self._open_tables()
        except BaseException:
            self._server.close()
            await self._server.wait_closed()
            await self.store.close()
            raise
        await self._server.start_serving()
        self._watchdog = asyncio.create_task(self._watch_slow_clients())
        self._loop_watch.start()
        log.info("listening on ws://%s:%d", self.config.host, self.port)
        if self.config.wallet == "transfer" and not self.operator_api.enabled:
            log.warning(
                "--wallet transfer without --operator-key or a JWT key: nobody can call "
                "the transfer API (/operator/ answers 404)"
            )

    async def _open_tables(self) -> None:
        await self.store.open()
        # Every process signs guests' resume tokens with the same key, kept in the
        # store, so a guest keeps their seat across a restart (and a failover).
        self.auth.guest_key = await self.store.secret("guest-resume")
        await self.bus.start()
        self.bus.on_replies(self._on_reply)
        await self.croupier.start(self.config.tables)
        if self.courier is not None:
            self.courier.start()
        if isinstance(self.limits, SharedLimits):
            self.limits.start()
        for tid in self.croupier.actors:
            self.watch_table(tid)

    @property
    def port(self) -> int:
        assert self._server is not None
        sock = next(iter(self._server.sockets))
        return int(sock.getsockname()[1])

    def _not_ready(self) -> str | None:
        if self.draining:
            return "draining"
        unready = self.bus.not_ready()
        if unready is not None:
            return unready
        if self.croupier.failing:
            return "store failing"
        return None

    async def drain(self, timeout: float | None = None) -> None:
        """SIGTERM: no new players or bets; running coups finish (bounded)."""
        self.draining = True
        await self.croupier.drain(self.config.drain_timeout if timeout is None else timeout)

    async def stop(self) -> None:
        """Close every connection with 1001 (going away), stop the tables and the store."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._loop_watch.stop()
        for task in list(self._background):
            task.cancel()
        await self._touch_players(self._playing())  # (their gap counts from now)
        if self._server is not None:
            self.hub.flush()  # (the tail's last frames go before the close frames)
            self._server.close()
            await self._server.wait_closed()
        await self.croupier.stop()
        if self.courier is not None:
            await self.courier.stop()
        if self.wallet is not None:
            await self.wallet.close()
        if isinstance(self.limits, SharedLimits):
            await self.limits.close()
        await self.bus.close()
        await self.store.close()

    # ------------------------------------------------------------------ connections
    async def _handler(self, conn: ServerConnection) -> None:
        request = conn.request
        if request is not None and not origin_allowed(request.headers, self.config.origins):
            # Closed at once, before anything is read (docs/protocol.md §2): a browser
            # sees why (a 403 at the handshake reaches its page as a bare 1006), so the
            # web table says that this site may not show it instead of retrying.
            await conn.close(CLOSE_ORIGIN, ORIGIN_REFUSED)
            return
        fmt = conn.subprotocol or JSON
        address = client_address(conn, self.limits.trusted)
        if not await self.limits.open_connection(address):
            _cut_off(conn, 1008, "too many connections from this address")
            return
        bucket = Bucket(self.config.rate_limit, float(self.config.rate_burst))
        session = Session(conn, str(fmt), bucket, address)
        self.sessions[session.id] = session
        self.metrics.connections.inc()
        if isinstance(conn, GatewayConnection):
            conn.allow_ping = lambda: self._ping_allowed(session)
        try:
            async for frame in conn:
                await self._dispatch(session, frame)
        except ConnectionClosed:
            pass
        finally:
            del self.sessions[session.id]
            if session.play is not None:
                session.play.stop()
                if session.persisted:  # the gap that ends the session counts from now
                    at = play_session.now()
                    self.background(self._touch_players([session.player], at))
            self.metrics.connections.dec()
            self.limits.disconnect(address)
            if session.identity is not None:
                self.limits.sign_out(session.player)
            self._left(session)

    def _admit(self, session: Session) -> bool:
        """Whether one more frame (a message or a ping) is within the connection's
        rate, its player's and its address's (``server.gateway.limits``)."""
        if not session.bucket.take():
            return False
        player = None if session.identity is None else session.identity.player_id
        return self.limits.take(session.address, player)

    def _over_limit(self, session: Session) -> bool:
        """A frame over the limit was refused: whether the connection may go on. A
        connection refused faster than it earns refusals back is cut off (1008)."""
        if session.refusals.take():
            return True
        if not session.cut_off:
            session.cut_off = True
            _cut_off(session.conn, 1008, "rate limit")
        return False

    def _ping_allowed(self, session: Session) -> bool:
        """Asked by the connection for each WebSocket ping, inside the protocol's frame
        parser: over the limit the ping is dropped unanswered, and counts as refused."""
        if self._admit(session):
            return True
        if session.refusals.take() or session.cut_off:
            return False
        session.cut_off = True  # not from inside the parser: on the loop's next turn
        asyncio.get_running_loop().call_soon(_cut_off, session.conn, 1008, "rate limit")
        return False

    def _left(self, session: Session) -> None:
        """A connection closed: its tables hear of it unless the player still watches
        from another connection (the table decides: a seat is held for the grace
        period, §5; a spectator leaves)."""
        for tid in list(session.tables):
            self.left_table(session, tid)
        for tid in self.watchers.gone(session.id):  # joins still on their way
            self._unwatch(tid)

    def left_table(self, session: Session, tid: str) -> None:
        """``session`` (closed) no longer watches ``tid``: the table hears of it unless
        the player still watches from another connection. Also for a join whose reply
        came after its connection closed (it was not yet among the session's tables)."""
        self.hub.unsubscribe(tid, session.conn)
        self.unattend(session, tid)
        if session.identity is None or self.hub.watching(tid, session.player):
            return
        with contextlib.suppress(ChemmyError):
            self.relay(session, tid, "disconnect", fields={"gateway": self.bus.node})

    def send(self, session: Session, message: dict[str, Any]) -> None:
        send_now(session.conn, encode(message, session.fmt))

    def ok(self, session: Session, mid: Any, /, **result: Any) -> None:
        self.send(session, {"type": "ok", "id": mid, **result})

    def error(self, session: Session, mid: Any, err: ChemmyError) -> None:
        self.metrics.refused.labels(code=err.code).inc()
        self.send(session, {"type": "error", "id": mid, **err.to_dict()})

    async def _dispatch(self, session: Session, frame: str | bytes) -> None:
        mid: Any = None
        try:
            message: dict[str, Any] | None = None
            bad_frame: ProtocolError | None = None
            try:
                message = decode(frame, session.fmt)
                raw_id = message.get("id")
                mid = (
                    raw_id
                    if isinstance(raw_id, str | int) and not isinstance(raw_id, bool)
                    else None
                )
            except ProtocolError as exc:
                bad_frame = exc
                if exc.code == "bad_message":  # it decoded: its id may still be good
                    mid = request_id(frame, session.fmt)
            # Every frame counts against the rate limits, garbage included.
            if not self._admit(session):
                if not self._over_limit(session):
                    return
                raise Refused("rate_limited", "too many messages; slow down")
            if bad_frame is not None:
                raise bad_frame
            assert message is not None
            kind, mid, fields = parse(message)
            self.metrics.commands.labels(type=kind).inc()
            if kind == "ping":
                self.ok(session, mid, time=time.time())
                return
            if kind == "hello":
                if not self.limits.take_hello(session.address):
                    raise Refused("rate_limited", "too many hellos from your address; wait")
                await hello(self, session, mid, fields)
                return
            if session.identity is None:
                raise AuthError("auth_required", "say hello with a token (or as a guest) first")
            await HANDLERS[kind](self, session, mid, fields)
        except ChemmyError as err:
            self.error(session, mid, err)
        except StoreError as exc:
            # The connection survives a store that fails; the client may retry.
            self.store_failed(exc)
            self.error(session, mid, Refused("store_unavailable", "try again in a moment"))

    def store_failed(self, exc: BaseException) -> None:
        """A request of a client was refused because the store failed: one log line when
        an episode starts (a failure :data:`STORE_QUIET` s or more after the last one),
        not one per refusal, which a flood of requests would turn into a flood of lines."""
        self.metrics.store_errors.labels(where="gateway").inc()
        now = time.monotonic()
        if self._store_refusals and now - self._store_failed_at < STORE_QUIET:
            self._store_refusals += 1
        else:
            self.store_works()
            log.error("the store failed (%s); refusing what needs it until it works again", exc)
            self._store_refusals = 1
        self._store_failed_at = now

    def store_works(self) -> None:
        """A store call of the gateway succeeded (or the failures are long past): the
        episode's one closing line."""
        if self._store_refusals:
            log.warning("the store works again (%d requests were refused)", self._store_refusals)
            self._store_refusals = 0

    # ------------------------------------------------------------------ tables
    def watch_table(self, table: str) -> None:
        """Feed ``table``'s events to this gateway's fan-out (a table of that id is open:
        created, or seen in the lobby by a join)."""
        self._closed_tables.pop(table, None)
        self.bus.subscribe(table, self._table_events)

    async def attend(self, session: Session, table: str) -> None:
        """``session`` sends a join for ``table``: from now on it counts as watching it,
        and this process hears the table's events before the join goes (the bus's
        subscription confirmed), so nothing stored after the join's snapshot is missed."""
        self.watchers.joining(session.id, table)
        await self.bus.watch(table)

    def attended(self, session: Session, table: str, joined: bool) -> None:
        """``session``'s join for ``table`` was answered (``joined``: it is there now)."""
        if self.watchers.answered(session.id, table, joined):
            self._unwatch(table)

    def unattend(self, session: Session, table: str) -> None:
        """``session`` no longer watches ``table`` (it left, or its connection closed)."""
        if self.watchers.left(session.id, table):
            self._unwatch(table)

    def _unwatch(self, table: str) -> None:
        """Nobody here watches ``table`` any more: the bus stops hearing it (unless this
        process owns it), and its recent log goes (it would miss what comes meanwhile)."""
        self.bus.unwatch(table)
        if not self.croupier.has(table):
            self.hub.drop_table(table)

    def _table_events(self, table: str, events: Sequence[Event]) -> None:
        """One step's events to this gateway's watchers. The table's own ``closed``
        event (it comes through the bus like any other: in order, gaps filled from the
        stream) ends it here: nobody watches it any more and its recent log goes, so a
        table created again under its id (numbering on from the closed one's last seq)
        replays nothing of it."""
        self.hub.publish(table, events)
        if any(e.kind == "closed" for e in events):
            self.forget_table(table)

    def notice(self, notice: dict[str, Any], lobby: SharedLobby) -> None:
        """A cluster notice: the lobby may have changed; and when a table has a new
        owner (a failover or a handover), this gateway's players join it again, so the
        new owner (which started as after a restart: everyone disconnected) knows they
        are here. After the bus lost Redis and reconnected, every table may have changed
        owner meanwhile, and the notices said so while nobody here listened: the players
        join every table they are at again (a join where they are known changes
        nothing). A player's reality check answered on another process: their
        connections here are told (:meth:`reality_answered`)."""
        kind = notice.get("kind")
        if kind == "reality_answered":
            if notice.get("node") != self.bus.node:  # this process told its own already
                self._tell_answered(str(notice.get("player")), str(notice.get("choice")))
            return
        lobby.stale()
        if kind not in ("owner", "reconnected"):
            return
        table = str(notice.get("table"))
        for session in list(self.sessions.values()):
            for tid in list(session.tables) if kind == "reconnected" else [table]:
                self._join_again(session, tid)

    def reality_answered(self, session: Session, choice: str) -> None:
        """``session`` answered its player's reality check: their other connections here
        are told at once, and those on the other processes of a cluster by a notice."""
        self._tell_answered(session.player, choice, but=session)
        notice = {"kind": "reality_answered", "player": session.player, "choice": choice}
        self.bus.control({**notice, "node": self.bus.node})

    def _tell_answered(self, player: str, choice: str, but: Session | None = None) -> None:
        message = play_session.answered_message(choice)
        for other in list(self.sessions.values()):
            if other is not but and other.identity is not None and other.player == player:
                self.send(other, message)

    def _join_again(self, session: Session, table: str) -> None:
        """Tell ``table``'s owner that ``session``'s player is here (a notice said it may
        not know it)."""
        if table in session.tables and session.identity is not None:
            with contextlib.suppress(ChemmyError):
                self.relay(session, table, "join", None, {"name": session.identity.name}, _ignore)

    def saw_close(self, table: str) -> bool:
        """Whether this gateway saw ``table`` close (and nobody has opened it since)."""
        return table in self._closed_tables

    def forget_table(self, table: str) -> None:
        """A table closed: nobody here watches it any more, and its log is gone."""
        self.bus.unsubscribe(table, self._table_events)
        self.watchers.drop(table)
        self.bus.unwatch(table)
        self.hub.drop_table(table)
        self._closed_tables[table] = None
        while len(self._closed_tables) > CLOSED_TABLES_KEPT:
            del self._closed_tables[next(iter(self._closed_tables))]
        for go in self.lines.drop_table(table):
            go()  # answered no_table: every request gets one answer, at once
        for session in self.sessions.values():
            session.tables.discard(table)

    async def persist(self, session: Session) -> None:
        """Write a guest to the store (with the welcome play money) before their first
        seat or deposit."""
        if session.persisted:
            return
        assert session.identity is not None
        ident = session.identity
        await self.store.ensure_player(
            ident.player_id, ident.name, self.config.welcome_balance, guest=True
        )
        session.persisted = True

    async def session_money(self, session: Session) -> tuple[int, int]:
        """:meth:`money` of a session's player (a guest not yet stored has the play money
        they will get), the operator's wallet asked first where it holds the money."""
        if not session.persisted:
            return self.config.welcome_balance, self.config.welcome_balance
        if session.identity is not None:
            ident = session.identity
            await self.ask_wallet(session.player, ident.currency, ident.wallet_session)
        return await self.money(session.player)

    async def ask_wallet(
        self, player: str, currency: str | None, session: Mapping[str, Any] | None = None
    ) -> None:
        """Where the operator's wallet holds the money (seamless), set the player's mirror
        from the balance it reports now (docs/wallet.md §3), asked in the player's
        ``session`` at the operator; a wallet that does not answer within
        ``--wallet-timeout`` leaves the mirror as it was."""
        wallet = self.wallet
        if wallet is None or not wallet.confirms_holds:
            return
        try:
            async with asyncio.timeout(self.config.wallet_timeout):
                balance = await wallet.balance(player, currency, session)
        except (WalletError, TimeoutError) as exc:
            log.warning("no balance for %s from the operator's wallet (%s)", player, exc)
            return
        tables = [line["table"] for line in await self.lobby.tables()]
        if await sync_mirror(self.store, player, balance, tables):
            self.refresh_player(player)

    def refresh_player(self, player: str) -> None:
        """A player's money moved outside a table (the operator's transfer): each table
        they watch from this gateway reads their balance again, for what it shows."""
        done: set[str] = set()
        for session in list(self.sessions.values()):
            if session.identity is None or session.player != player:
                continue
            for table in session.tables - done:
                done.add(table)
                with contextlib.suppress(ChemmyError):
                    self.relay(session, table, "refresh")

    async def money(self, player: str) -> tuple[int, int]:
        """``(balance, available)`` as the store has them: ``available`` is the player's
        money on no table, ``balance`` adds the chips they placed at every table."""
        tables = [line["table"] for line in await self.lobby.tables()]
        return await self.store.player_money(player, tables)

    def background(self, job: Coroutine[Any, Any, None]) -> None:
        """Run ``job`` on its own; it is cancelled when the server stops."""
        task = asyncio.create_task(job)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ records
    def relay(
        self,
        session: Session,
        table: str,
        kind: str,
        mid: Any = None,
        fields: dict[str, Any] | None = None,
        then: Continuation | None = None,
    ) -> None:
        """Send a command record for ``table`` to its owner; ``then`` gets the reply.

        A command with a ``then`` (a client's) goes through the player's line at the
        table (``server.gateway.limits.Lines``): it is sent now, or once the player's
        earlier commands are answered; ``then`` gets an error reply when the bus cannot
        take it. Raises :class:`Refused` when the player has too many commands waiting,
        and, without ``then``, when the bus cannot take it."""
        args = fields or {}
        if then is None:
            self.bus.submit(
                CommandRecord(table, kind, session.player, mid, args, None, session.address)
            )
            return
        line = (table, session.address, session.player)

        def go() -> bool:
            if session.id not in self.sessions:
                return False  # the connection went away while its command waited
            n = next(self._request_ids)
            reply_to = Address(self.bus.node, session.id, n)
            if table in self._closed_tables:
                then(ReplyRecord.refused(reply_to, no_table(table)))
                return False
            self._pending[n] = _Pending(session, then, time.monotonic(), line, kind)
            try:
                self.bus.submit(
                    CommandRecord(table, kind, session.player, mid, args, reply_to, session.address)
                )
            except ChemmyError as err:
                del self._pending[n]
                then(ReplyRecord.refused(reply_to, err))
                return False
            return True

        self.lines.enter(table, session.address, session.player, go)

    async def ask_table(
        self, table: str, kind: str, fields: dict[str, Any] | None = None
    ) -> ReplyRecord:
        """Send ``kind`` (a gateway kind: ``close``, ``void``, ``pause``, ``resume``)
        for ``table`` to its owner, wherever it runs, on the operator's behalf (an HTTP
        call: no connection), and wait for its reply: ``timeout`` after
        ``--command-timeout`` (the owner died, or the bus lost the reply)."""
        n = next(self._request_ids)
        reply_to = Address(self.bus.node, 0, n)
        if table in self._closed_tables:
            return ReplyRecord.refused(reply_to, no_table(table))
        answer: asyncio.Future[ReplyRecord] = asyncio.get_running_loop().create_future()
        self._asked[n] = answer
        try:
            record = CommandRecord(
                table, kind, "operator", None, fields or {}, reply_to, "operator"
            )
            self.bus.submit(record)
            async with asyncio.timeout(self.config.command_timeout):
                return await answer
        except ChemmyError as err:
            return ReplyRecord.refused(reply_to, err)
        except TimeoutError:
            late = Refused("timeout", "the table did not answer in time; try again")
            return ReplyRecord.refused(reply_to, late)
        finally:
            self._asked.pop(n, None)

    def _on_reply(self, reply: ReplyRecord) -> None:
        request = reply.to.request
        if reply.to.conn == 0 and isinstance(request, int) and request in self._asked:
            answer = self._asked.pop(request)
            if not answer.done():
                answer.set_result(reply)
            return
        pending = self._pending.pop(request, None) if isinstance(request, int) else None
        if pending is None:
            return
        table = pending.line[0]
        unavailable = reply.error is not None and reply.error.get("code") == "unavailable"
        if unavailable and table in self._closed_tables:  # no owner as it closed: not "retry"
            reply = ReplyRecord.refused(reply.to, no_table(table))
        try:
            if pending.session.id in self.sessions:
                pending.then(reply)
            elif pending.kind == "join" and reply.error is None:
                # The connection closed while its join travelled: its tables were read
                # before this one was added, so the table hears now that the player is
                # gone (else a spectator the table never forgets).
                self.left_table(pending.session, table)
        finally:
            self.lines.answered(pending.line)  # the player's next command may go

    def _playing(self) -> list[str]:
        """The players with a connection open here that is in a play session."""
        return [s.player for s in self.sessions.values() if s.play is not None and s.persisted]

    async def _touch_players(self, players: list[str], at: float | None = None) -> None:
        """Keep ``players``' play sessions going (server.protection.play_session.touch), as seen
        at ``at`` (None: now); a failure is one log line until a touch works again
        (their sessions then go on as if touched: a connection was open all along)."""
        try:
            await play_session.touch(self.store, players, at)
        except StoreError as exc:
            if not self._touch_failed:
                log.warning("the players' play sessions could not be kept going: %s", exc)
            self._touch_failed = True
            return
        if self._touch_failed:
            log.info("the players' play sessions are kept going again")
        self._touch_failed = False

    async def _expire_guests(self) -> None:
        """Forget guests who never played and were not seen for ``guest_idle`` seconds."""
        try:
            gone = await self.store.expire_guests(self.config.guest_idle)
        except StoreError as exc:
            log.warning("expiring idle guests failed: %s", exc)
            return
        if gone:
            log.info("forgot %d idle guests", gone)

    def _expire_pending(self, now: float) -> None:
        """Commands whose table never answered (its owner died before it could, or the
        bus lost the reply) are answered ``timeout`` at their gateway. Retried with the
        same id, a command is applied once: the table remembers the ids it applied."""
        limit = self.config.command_timeout
        late = [n for n, p in self._pending.items() if now - p.sent > limit]
        for n in late:
            pending = self._pending[n]
            err = Refused("timeout", "the table did not answer in time; retry with the same id")
            self._on_reply(ReplyRecord.refused(Address(self.bus.node, pending.session.id, n), err))

    # ------------------------------------------------------------------ health
    async def _watch_slow_clients(self) -> None:
        """Cut off a client whose unsent frames pile up; it resumes from its last seq.
        (Also refreshes the cluster's counters for /metrics.)"""
        while True:
            await asyncio.sleep(self.watchdog_interval)
            self._expire_pending(time.monotonic())
            if time.monotonic() >= self._next_guest_sweep:
                self._next_guest_sweep = time.monotonic() + self.guest_sweep_interval
                self.background(self._expire_guests())
            if time.monotonic() >= self._next_touch:
                self._next_touch = time.monotonic() + self.touch_interval
                self.background(self._touch_players(self._playing()))
            counts = self.bus.counts()
            if counts is not None:
                self.metrics.relayed.set(counts.relayed)
                self.metrics.backfilled.set(counts.backfilled)
                for table, count in counts.received.items():
                    self.metrics.bus_received.labels(table=table).set(count)
                self.metrics.bus_listening.set(counts.listening)
            if self.croupier.rebalancer is not None:
                self.metrics.lease_changes.set(self.croupier.rebalancer.changes)
            self._cut_slow_clients()

    def _cut_slow_clients(self) -> None:
        """Bound what waits to be sent: per connection (``slow_client_buffer``), per
        address (``send_buffer_per_address``) and for the whole process
        (``send_buffer_total``, so that it stays inside its container's memory). Over a
        bound, the connections with the most unsent are cut first (the slowest readers,
        who resume from their last seq), until the rest fit."""
        waiting: list[tuple[int, Session, asyncio.Transport]] = []
        for session in self.sessions.values():
            transport = session.conn.transport
            if transport is not None and not transport.is_closing():
                size = transport.get_write_buffer_size()
                if size:
                    waiting.append((size, session, transport))
        waiting.sort(key=lambda w: w[0], reverse=True)  # the largest first
        total = sum(size for size, _s, _t in waiting)
        per_address: dict[str, int] = {}
        for size, session, _t in waiting:
            per_address[session.address] = per_address.get(session.address, 0) + size
        config = self.config
        for size, session, transport in waiting:
            over = (
                size > self.slow_client_buffer
                or per_address[session.address] > config.send_buffer_per_address
                or total > config.send_buffer_total
            )
            if not over:
                continue
            self.metrics.slow_clients.inc()
            transport.abort()
            total -= size
            per_address[session.address] -= size


def _cut_off(conn: ServerConnection, code: int, reason: str) -> None:
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


def _select_subprotocol(conn: ServerConnection, offered: Iterable[str]) -> Any:
    """msgpack or JSON as the client offers; a client that offers none gets JSON."""
    offered = list(offered)
    for proto in SUBPROTOCOLS:
        if proto in offered:
            return proto
    return None


#: The close code and reason of a browser connection from an origin not allowed.
CLOSE_ORIGIN = 4003
ORIGIN_REFUSED = "origin_not_allowed: this site may not show the table (--origins)"
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def origin_allowed(headers: Headers, allowed: Sequence[str]) -> bool:
    """docs/protocol.md §2 "Origin allowlist": with no list every origin; a client that
    sends no ``Origin`` (the CLI, bots: not browsers) always; else an origin in the list,
    or the server's own (the ``Origin`` names the ``Host`` the request was sent to: the
    page the server itself served, framed by an allowed site, needs no entry)."""
    origins = headers.get_all("Origin")
    if not allowed or not origins:
        return True
    if len(origins) > 1:
        return False
    origin = origins[0]
    return origin in allowed or _same_origin(origin, headers.get("Host"))


def _same_origin(origin: str, host: str | None) -> bool:
    """Whether ``origin`` (``scheme://host[:port]``) is the ``Host`` header's
    ``host[:port]`` (a port left out is the scheme's default)."""
    if not host:
        return False
    try:
        o = urllib.parse.urlsplit(origin)
        h = urllib.parse.urlsplit(f"{o.scheme}://{host}")
        default = _DEFAULT_PORTS.get(o.scheme)
        return (
            o.scheme in _DEFAULT_PORTS
            and bool(o.hostname)
            and o.hostname == h.hostname
            and (o.port or default) == (h.port or default)
            and not (o.path or o.query or o.fragment or o.username or h.path or h.username)
        )
    except ValueError:
        return False


def _ignore(reply: ReplyRecord) -> None:
    """A reply nobody waits for (a join made again after a table moved)."""
