"""The WebSocket gateway: client connections in, records to the tables' owners out.

:class:`ChemmyServer` is one process of Chemmy. As a **gateway** it accepts connections,
decodes each frame (``server.protocol.codec``), checks the message
(``server.protocol.messages``), checks the sender may send it (said hello; within the
rates of its connection, its player and its client address, pings included:
``server.limits.local``) and dispatches it through one registry of handlers
(:data:`HANDLERS`):

- table commands (``bet``, ``sit``, ``turn``...) and ``join``/``leave``/``roads`` travel
  as :class:`~server.protocol.records.CommandRecord` s on the bus to the table's owner,
  whose :class:`~server.protocol.records.ReplyRecord` comes back to the asking
  connection (``server.gateway.tables``); each waits in its player's line at the table
  (:class:`~server.limits.local.Lines`), so one player's flood never fills the table's
  queue ahead of another's commands;
- the cashier's requests (``balance``, ``deposit``, ``history``, ``shoe_record``) go to
  the store (``server.gateway.cashier``);
- the lobby, chat and the operators' ``create_table``/``close_table`` (``server.gateway.tables``).

It builds none of its parts and reads no table: ``server.process.assemble`` hands in
the store, the bus, the croupier (the tables this process owns), the lobby, the limits,
the hub, the metrics, the authenticator and the rest of the process to start and stop
(``server.process.lifecycle``); each handler is typed against the narrow part of it
that it uses (``server.gateway.context``). Its other jobs have modules of their own: a
player's money (``money``), the cluster's notices (``notices``), the watchdog's cuts
(``watchdog``), the play sessions' touches (``server.protection.play_session``).

Replies echo the command's ``id``: ``{"type": "ok", "id": ...}`` or ``{"type": "error",
"id": ..., "code": ..., "message": ...}`` (an error to a frame refused for a value
elsewhere in it still echoes a good ``id``). A table command's events are delivered before
its reply, so a client sees its own move in ``seq`` order. The connection survives every
refused command. The HTTP endpoints (health, readiness, metrics, the web table's files)
are in ``server.gateway.http``; the operator's API under ``/operator/v1/`` (the transfer API in
``--wallet transfer``) is ``server.operator.api``, read off the same port
(``server.gateway.sniff`` tells its requests; ``server.operator.http`` reads them).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from server.bus.base import Bus
from server.croupier.actor import TableActor
from server.croupier.host import Croupier
from server.gateway import notices
from server.gateway.context import OperatorDoor, ProcessParts
from server.gateway.handlers import HANDLERS, hello
from server.gateway.http import CLOSE_ORIGIN, ORIGIN_REFUSED, Endpoints, origin_allowed
from server.gateway.hub import Hub, send_message
from server.gateway.lobby import Lobby
from server.gateway.money import Purse
from server.gateway.session import SUBPROTOCOLS, GatewayConnection, Session, select_subprotocol
from server.gateway.watchdog import SLOW_CLIENT_BUFFER, cut_off, cut_slow_clients
from server.gateway.watchers import Watchers
from server.limits.bucket import Bucket
from server.limits.local import Limits, LineKey, Lines, client_address
from server.process.auth import Authenticator, AuthError
from server.process.config import ServerConfig
from server.process.metrics import LoopWatch, Metrics
from server.protection import play_session
from server.protection.context import Continuation
from server.protocol.codec import JSON, decode, request_id
from server.protocol.errors import ChemmyError, ProtocolError, Refused, StoreError, no_table
from server.protocol.messages import parse
from server.protocol.records import Address, CommandRecord, ReplyRecord
from server.store.base import Store
from server.vocabulary.events import Event
from server.wallet.courier import Courier

__all__ = ["ChemmyServer"]

log = logging.getLogger("chemmy.server")

#: Seconds without a store failure that end a failure episode (store_failed).
STORE_QUIET = 30.0
#: How many closed table ids a gateway remembers (to answer ``no_table`` at once).
CLOSED_TABLES_KEPT = 4096


@dataclass(slots=True)
class _Pending:
    """A command sent to a table's owner, waiting for its reply."""

    session: Session
    then: Continuation
    sent: float
    line: LineKey  # the player's line at the table, whose place the reply frees
    kind: str  # the command's type
    #: When the client's frame was decoded (``time.perf_counter``), for
    #: ``chemmy_command_seconds``; None for a command no frame asked for.
    received: float | None


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
        process: ProcessParts,
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
        #: The rest of the process, started before this port accepts and stopped after
        #: it closed (``server.process.lifecycle``).
        self.process = process
        self.draining = False
        self.sessions: dict[int, Session] = {}
        self.lines = Lines()
        self.endpoints = Endpoints(self.metrics, self._not_ready, config.origins)
        #: ``/operator/v1/`` (server.operator.api, its routes installed by
        #: server.process.assemble): its requests are handed to it off this port.
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
        #: The play sessions of the players connected here go on while a connection is
        #: open (server.protection.play_session): touched every so often.
        self.touches = play_session.Touches(store, config.session_gap * 60)
        #: A player's money as the gateway reads it (server.gateway.money).
        self.purse = Purse(config, store, lobby, lambda: self.process.wallet, self.refresh_player)
        self.watchdog_interval = 1.0

    @property
    def actors(self) -> dict[str, TableActor]:
        """This process's table actors (for tests and tools; the gateway never reads them)."""
        return self.croupier.actors

    @property
    def courier(self) -> Courier | None:
        """What delivers a seamless wallet's credits and rollbacks (none otherwise)."""
        return self.process.courier

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
            select_subprotocol=select_subprotocol,
            # (partial: websockets types it as the class; it only calls it)
            create_connection=functools.partial(  # type: ignore[arg-type]
                GatewayConnection, operator=self.operator_api
            ),
            process_request=self.endpoints.respond,
            max_size=self.config.max_frame,
            compression="deflate" if self.config.compression else None,
            ping_interval=20,
            ping_timeout=20,
            start_serving=False,
        )
        try:
            await self.process.claim()
            await self.process.open(self._on_reply)
            for tid in self.croupier.actors:
                self.watch_table(tid)
        except BaseException:
            self._server.close()
            await self._server.wait_closed()
            await self.process.abandon()
            raise
        await self._server.start_serving()
        self._watchdog = asyncio.create_task(self._watch())
        self._loop_watch.start()
        log.info("listening on ws://%s:%d", self.config.host, self.port)
        if self.config.wallet == "transfer" and not self.operator_api.enabled:
            log.warning(
                "--wallet transfer without --operator-key or a JWT key: nobody can call "
                "the transfer API (/operator/ answers 404)"
            )

    @property
    def port(self) -> int:
        assert self._server is not None
        sock = next(iter(self._server.sockets))
        return int(sock.getsockname()[1])

    def _not_ready(self) -> str | None:
        return "draining" if self.draining else self.process.not_ready()

    async def drain(self, timeout: float | None = None) -> None:
        """SIGTERM: no new players or bets; running coups finish (bounded)."""
        self.draining = True
        await self.process.drain(self.config.drain_timeout if timeout is None else timeout)

    async def stop(self) -> None:
        """Close every connection with 1001 (going away), stop the tables and the store."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._loop_watch.stop()
        for task in list(self._background):
            task.cancel()
        await self.touches.touch(self._playing())  # (their gap counts from now)
        if self._server is not None:
            self.hub.flush()  # (the tail's last frames go before the close frames)
            self._server.close()
            await self._server.wait_closed()
        await self.process.close()

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
            cut_off(conn, 1008, "too many connections from this address")
            return
        bucket = Bucket(self.config.rate_limit, float(self.config.rate_burst))
        session = Session(conn, str(fmt), bucket, address)
        self.sessions[session.id] = session
        self.metrics.connections.inc()
        if isinstance(conn, GatewayConnection):
            conn.allow_ping = lambda: session.ping_allowed(self.limits)
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
                    self.background(self.touches.touch([session.player], at))
            self.metrics.connections.dec()
            self.limits.disconnect(address)
            if session.identity is not None:
                self.limits.sign_out(session.player)
            self._left(session)

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
        send_message(session.conn, message, session.fmt)

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
                session.received = time.perf_counter()
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
            if not session.admit(self.limits):
                if not session.over_limit():
                    return
                raise Refused("rate_limited", "too many messages; slow down")
            if bad_frame is not None:
                raise bad_frame
            assert message is not None
            kind, mid, fields = parse(message)
            self.metrics.command(kind)
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
        finally:
            session.received = None

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

    def reality_answered(self, session: Session, choice: str) -> None:
        """``session`` answered its player's reality check: their other connections here
        are told at once, and those on the other processes of a cluster by a notice
        (``server.gateway.notices``)."""
        notices.answered(self, session, choice)

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

    # ------------------------------------------------------------------ money (money.Purse)
    async def persist(self, session: Session) -> None:
        await self.purse.persist(session)

    async def session_money(self, session: Session) -> tuple[int, int]:
        return await self.purse.session_money(session)

    async def ask_wallet(
        self, player: str, currency: str | None, session: Mapping[str, Any] | None = None
    ) -> None:
        await self.purse.ask_wallet(player, currency, session)

    async def money(self, player: str) -> tuple[int, int]:
        return await self.purse.money(player)

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
        table (``server.limits.local.Lines``): it is sent now, or once the player's
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
        received = session.received

        def go() -> bool:
            if session.id not in self.sessions:
                return False  # the connection went away while its command waited
            n = next(self._request_ids)
            reply_to = Address(self.bus.node, session.id, n)
            if table in self._closed_tables:
                then(ReplyRecord.refused(reply_to, no_table(table)))
                return False
            self._pending[n] = _Pending(session, then, time.monotonic(), line, kind, received)
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
                if pending.received is not None:  # its reply frame is with the connection
                    took = time.perf_counter() - pending.received
                    self.metrics.command_took(pending.kind, took)
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
    async def _watch(self) -> None:
        """The watchdog: commands never answered are answered ``timeout``; the rest of
        the process's beat (``Lifecycle.tick``: idle guests, the counters for /metrics);
        the players' play sessions touched when due; and a client whose unsent frames
        pile up is cut off (``server.gateway.watchdog``; it resumes from its last seq)."""
        while True:
            await asyncio.sleep(self.watchdog_interval)
            now = time.monotonic()
            self._expire_pending(now)
            self.process.tick(now, self.background)
            if self.touches.due(now):
                self.background(self.touches.touch(self._playing()))
            cut_slow_clients(
                self.sessions.values(),
                per_connection=self.slow_client_buffer,
                per_address=self.config.send_buffer_per_address,
                total=self.config.send_buffer_total,
                on_cut=self.metrics.slow_clients.inc,
            )
