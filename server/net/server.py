"""The WebSocket server: connections in, table actors and the store behind.

The shell only moves data: it decodes a frame (``server.protocol.codec``), checks the
message (``server.protocol.messages``), checks the sender may send it (authenticated,
at the table, within the rate limit), and hands table commands to the table's actor.
It never decides a rule.

Replies echo the command's ``id``: ``{"type": "ok", "id": ...}`` or
``{"type": "error", "id": ..., "code": ..., "message": ...}``. A table command's events
are published before its reply is written, both by the table's actor, so a client sees
its own move in ``seq`` order. The connection survives every refused command.

``process_request`` serves ``/healthz``, ``/readyz`` (503 while draining),
``/metrics`` (Prometheus) and the web table's files (``server.net.static``) on the
same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from server.croupier.actor import LedgerWallet, TableActor
from server.engine.odds import exact_odds
from server.protocol.codec import JSON, MSGPACK, decode, encode
from server.protocol.errors import ChemmyError, ProtocolError, Refused
from server.protocol.messages import TABLE_COMMANDS, parse, table_command
from server.store.base import Store, StoreError, TableRow
from server.table import Table, TableOptions, views
from server.table import commands as c
from server.table.events import Event, Step
from server.table.options import OptionsError
from server.table.views import view_event
from server.table.wallet import CASHIER, Entry, player_account, stake_account

from . import static
from .auth import (
    Authenticator,
    AuthError,
    Identity,
    guest_from_resume,
    guest_identity,
    guest_resume_token,
)
from .config import ServerConfig
from .hub import Hub, Subscriber, envelope, send_now
from .metrics import Metrics

__all__ = ["ChemmyServer"]

log = logging.getLogger("chemmy.server")

SUBPROTOCOLS = [MSGPACK, JSON]
TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
SLOW_CLIENT_BUFFER = 4 * 2**20  # bytes waiting in a client's write buffer before it is cut off
MAX_REFUSED_RATE = 200  # rate-limited messages in a row before the connection is closed


@dataclass(eq=False)
class Session:
    conn: ServerConnection
    fmt: str
    identity: Identity | None = None
    tables: set[str] = field(default_factory=set)
    tokens: float = 0.0
    stamp: float = 0.0
    limited: int = 0
    chat_times: list[float] = field(default_factory=list)


class ChemmyServer:
    def __init__(self, config: ServerConfig, store: Store) -> None:
        self.config = config
        self.store = store
        self.wallet = LedgerWallet()
        self.metrics = Metrics()
        self.hub = Hub(observe=self.metrics.fanout.observe)
        self.actors: dict[str, TableActor] = {}
        self.auth = Authenticator.from_config(config)
        self._guest_key = secrets.token_bytes(32)  # signs guests' resume tokens
        self.draining = False
        self.sessions: set[Session] = set()
        self._server: Server | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._odds_cache: dict[tuple[str, int, int], dict[str, Any]] = {}
        self.slow_client_buffer = SLOW_CLIENT_BUFFER  # bytes unsent before a client is cut
        self.watchdog_interval = 1.0

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        await self.store.open()
        self.wallet.load((await self.store.load_balances()).items())
        rows = {row.table_id: row for row in await self.store.load_tables()}
        for definition in self.config.tables:
            tid = str(definition["id"])
            if tid not in rows:
                rows[tid] = TableRow(tid, dict(definition), None, 0, False)
        for row in rows.values():
            await self._start_table(row)
        self._server = await serve(
            self._handler,
            self.config.host,
            self.config.port,
            subprotocols=SUBPROTOCOLS,  # type: ignore[arg-type]
            select_subprotocol=_select_subprotocol,
            process_request=self._process_request,
            origins=_origins(self.config.origins),
            max_size=self.config.max_frame,
            compression="deflate" if self.config.compression else None,
            ping_interval=20,
            ping_timeout=20,
        )
        self._watchdog = asyncio.create_task(self._watch_slow_clients())
        log.info("listening on ws://%s:%d", self.config.host, self.port)

    @property
    def port(self) -> int:
        assert self._server is not None
        sock = next(iter(self._server.sockets))
        return int(sock.getsockname()[1])

    async def _start_table(self, row: TableRow) -> TableActor:
        config = dict(row.config)
        timers = dict(config.get("timers") or {})
        timers.setdefault("grace", self.config.grace)
        config["timers"] = timers
        options = TableOptions.from_dict({k: v for k, v in config.items() if k != "id"})
        if row.state is not None:
            table = Table.from_state(row.state, self.wallet)
        else:
            # A table id used before (closed, then created again) goes on numbering its
            # shoes, so round ids, ledger keys and shoe records are never reused.
            last = await self.store.shoe_records(row.table_id, limit=1)
            shoes_before = int(last[0]["shoe_no"]) if last else 0
            table = Table(row.table_id, options, self.wallet, shoes_before=shoes_before)
        actor = TableActor(
            table,
            store=self.store,
            wallet=self.wallet,
            publish=self.hub.publish,
            config=config,
            queue_size=self.config.queue_size,
            on_step=self._on_step,
            # Restored after a stop or a crash: nobody is connected yet. The table
            # decides (Restored): seats held for the grace period (§5), spectators gone.
            restored=row.state is not None,
        )
        self.actors[row.table_id] = actor
        actor.start()
        self.metrics.tables.set(len(self.actors))
        return actor

    async def drain(self, timeout: float | None = None) -> None:
        """SIGTERM: no new bets, running coups finish (bounded), clients closed with 1001."""
        self.draining = True
        for actor in self.actors.values():
            with contextlib.suppress(ChemmyError):  # the table refuses new bets (draining)
                actor.submit(c.SetDraining(on=True))
        limit = self.config.drain_timeout if timeout is None else timeout
        end = time.monotonic() + limit
        while time.monotonic() < end and any(a.coup_in_progress for a in self.actors.values()):
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._server is not None:
            self._server.close()  # closes every connection with 1001 (going away)
            await self._server.wait_closed()
        for actor in list(self.actors.values()):
            await actor.stop()
        await self.store.close()

    # ------------------------------------------------------------------ HTTP
    def _process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/healthz":
            return conn.respond(http.HTTPStatus.OK, "ok\n")
        if path == "/readyz":
            if self.draining:
                return conn.respond(http.HTTPStatus.SERVICE_UNAVAILABLE, "draining\n")
            return conn.respond(http.HTTPStatus.OK, "ready\n")
        if path == "/metrics":
            body = generate_latest(self.metrics.registry)
            headers = Headers(
                [("Content-Type", CONTENT_TYPE_LATEST), ("Content-Length", str(len(body)))]
            )
            return Response(200, "OK", headers, body)
        if request.headers.get("Upgrade", "").lower() != "websocket":
            page = static.respond(request, self.config.origins)  # the web table's files
            return page or conn.respond(http.HTTPStatus.NOT_FOUND, "not found\n")
        if self.draining:
            return conn.respond(http.HTTPStatus.SERVICE_UNAVAILABLE, "draining\n")
        return None

    # ------------------------------------------------------------------ connections
    async def _handler(self, conn: ServerConnection) -> None:
        fmt = conn.subprotocol or JSON
        session = Session(
            conn, str(fmt), tokens=float(self.config.rate_burst), stamp=time.monotonic()
        )
        self.sessions.add(session)
        self.metrics.connections.inc()
        try:
            async for frame in conn:
                await self._dispatch(session, frame)
        except ConnectionClosed:
            pass
        finally:
            self.sessions.discard(session)
            self.metrics.connections.dec()
            self._left(session)

    def _left(self, session: Session) -> None:
        """A connection closed: seats are held for the grace period (§5), spectators leave."""
        ident = session.identity
        for tid in list(session.tables):
            self.hub.unsubscribe(tid, session.conn)
            actor = self.actors.get(tid)
            if actor is None or ident is None or self.hub.watching(tid, ident.player_id):
                continue
            # The table decides what it means: a seated player keeps the seat for the
            # grace period, a spectator leaves.
            with contextlib.suppress(ChemmyError):
                actor.submit(c.Disconnect(player=ident.player_id))

    def _send(self, session: Session, message: dict[str, Any]) -> None:
        send_now(session.conn, encode(message, session.fmt))

    def _ok(self, session: Session, mid: Any, **result: Any) -> None:
        self._send(session, {"type": "ok", "id": mid, **result})

    def _error(self, session: Session, mid: Any, err: ChemmyError) -> None:
        self.metrics.refused.labels(code=err.code).inc()
        self._send(session, {"type": "error", "id": mid, **err.to_dict()})

    def _rate_ok(self, session: Session) -> bool:
        now = time.monotonic()
        session.tokens = min(
            float(self.config.rate_burst),
            session.tokens + (now - session.stamp) * self.config.rate_limit,
        )
        session.stamp = now
        if session.tokens < 1:
            return False
        session.tokens -= 1
        return True

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
            # Every frame counts against the rate limit, garbage included.
            if not self._rate_ok(session):
                session.limited += 1
                if session.limited > MAX_REFUSED_RATE:
                    _cut_off(session.conn, 1008, "rate limit")
                    return
                raise Refused("rate_limited", "too many messages; slow down")
            session.limited = 0
            if bad_frame is not None:
                raise bad_frame
            assert message is not None
            kind, mid, fields = parse(message)
            self.metrics.commands.labels(type=kind).inc()
            if kind == "ping":
                self._ok(session, mid, time=time.time())
                return
            if kind == "hello":
                await self._hello(session, mid, fields)
                return
            if session.identity is None:
                raise AuthError("auth_required", "say hello with a token (or as a guest) first")
            await self._command(session, kind, mid, fields)
        except ChemmyError as err:
            self._error(session, mid, err)

    # ------------------------------------------------------------------ commands
    async def _hello(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        if session.identity is not None:
            raise Refused("already_authenticated", "this connection has said hello")
        token = fields.get("token")
        if token:
            ident = self.auth.authenticate(token)
            if ident.player_id in self.config.operator_players:
                ident = Identity(
                    ident.player_id, ident.name, ident.roles | {"operator"}, ident.guest
                )
        elif fields.get("guest"):
            if not self.config.guest:
                raise AuthError(
                    "auth_required", "guest play is off on this server; present a token"
                )
            resume = fields.get("resume")
            ident = (
                guest_from_resume(self._guest_key, resume)
                if resume
                else guest_identity(fields.get("name"))
            )
        else:
            raise AuthError("auth_required", "present a token, or ask for guest play")
        await self.store.ensure_player(ident.player_id, ident.name, self.config.guest_balance)
        account = player_account(ident.player_id)
        # The store funded a new player from the cashier: mirror both accounts.
        self.wallet.load((await self.store.balances([account, CASHIER])).items())
        session.identity = ident
        extra = {"resume": guest_resume_token(self._guest_key, ident)} if ident.guest else {}
        self._ok(
            session,
            mid,
            **extra,
            player=ident.player_id,
            name=ident.name,
            guest=ident.guest,
            roles=sorted(ident.roles),
            balance=self._money(ident.player_id)["balance"],
            server="chemmy/1",
        )

    def _actor(self, tid: str) -> TableActor:
        actor = self.actors.get(tid)
        if actor is None:
            raise Refused("no_table", f"there is no table {tid[:40]!r}")
        return actor

    def _joined(self, session: Session, tid: str) -> TableActor:
        actor = self._actor(tid)
        if tid not in session.tables:
            raise Refused("not_joined", "join the table first")
        return actor

    async def _command(self, session: Session, kind: str, mid: Any, fields: dict[str, Any]) -> None:
        ident = session.identity
        assert ident is not None
        if kind in TABLE_COMMANDS:
            actor = self._joined(session, fields["table"])
            cmd = table_command(kind, mid, ident.player_id, fields)
            actor.submit(cmd, self._reply_cb(session, mid))
            return
        handler = getattr(self, f"_cmd_{kind}")
        await handler(session, mid, fields)

    def _reply_cb(self, session: Session, mid: Any) -> Any:
        def reply(table: Table, step: Step, err: ChemmyError | None) -> None:
            if err is not None:
                self._error(session, mid, err)
            else:
                self._ok(session, mid, seq=step.seq, duplicate=step.duplicate)

        return reply

    async def _cmd_tables(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        self._ok(session, mid, tables=[views.summary(a.table) for a in self.actors.values()])

    async def _cmd_join(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        ident = session.identity
        assert ident is not None
        tid = fields["table"]
        actor = self._actor(tid)
        since = fields.get("since")
        player = ident.player_id
        cmd = c.Join(player=player, name=ident.name, rejoin=True)

        def joined(table: Table, step: Step, err: ChemmyError | None) -> None:
            if err is not None:
                self._error(session, mid, err)
                return
            missed = None
            if since is not None and 0 <= since <= step.seq:
                missed = [] if since == step.seq else self.hub.since(tid, since)
            if missed is not None:
                self._ok(session, mid, table=tid, resumed=True, seq=step.seq)
                for event in missed:
                    self._send(session, envelope(tid, view_event(event, player)))
            else:
                self._ok(
                    session,
                    mid,
                    table=tid,
                    resumed=False,
                    seq=step.seq,
                    snapshot=views.view(table, player),
                )
            session.tables.add(tid)
            self.hub.subscribe(tid, Subscriber(session.conn, player, session.fmt))

        actor.submit(cmd, joined)

    async def _cmd_leave(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        ident = session.identity
        assert ident is not None
        tid = fields["table"]
        actor = self._joined(session, tid)

        def left(table: Table, step: Step, err: ChemmyError | None) -> None:
            if err is not None:
                self._error(session, mid, err)
                return
            session.tables.discard(tid)
            self.hub.unsubscribe(tid, session.conn)
            self._ok(session, mid, seq=step.seq)

        actor.submit(c.Leave(player=ident.player_id, id=None if mid is None else str(mid)), left)

    def _operator(self, session: Session) -> Identity:
        ident = session.identity
        assert ident is not None
        if "operator" not in ident.roles:
            raise Refused("not_allowed", "only an operator does that")
        return ident

    async def _cmd_create_table(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        self._operator(session)
        options = dict(fields.get("options") or {})
        tid = fields.get("table") or next(
            f"t{n}" for n in range(1, len(self.actors) + 2) if f"t{n}" not in self.actors
        )
        if not TABLE_ID.fullmatch(tid):
            raise ProtocolError("bad_message", "a table id is 1-32 letters, digits, - or _")
        if tid in self.actors:
            raise Refused("table_exists", f"there is already a table {tid!r}")
        try:
            opts = TableOptions.from_dict(options)
        except (OptionsError, TypeError, ValueError) as exc:
            raise Refused("bad_options", str(exc)) from None
        # Only checked, known settings are kept: nothing the operator sent goes to the
        # store as it came.
        row = TableRow(tid, {"id": tid, **opts.to_definition()}, None, 0, False)
        await self.store.save_table(row)
        actor = await self._start_table(row)
        self._ok(session, mid, table=views.summary(actor.table))

    async def _cmd_close_table(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        self._operator(session)
        tid = fields["table"]
        actor = self._actor(tid)
        await actor.call(c.CloseTable())
        await actor.stop()
        del self.actors[tid]
        for conn in self.hub.connections(tid):
            self.hub.unsubscribe(tid, conn)
        for s in self.sessions:
            s.tables.discard(tid)
        self.metrics.tables.set(len(self.actors))
        self._ok(session, mid, table=tid, closed=True)

    async def _cmd_chat(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        ident = session.identity
        assert ident is not None
        tid = fields["table"]
        self._joined(session, tid)
        text = " ".join(str(fields["text"]).split())
        if not text:
            raise Refused("bad_chat", "say something")
        if len(text) > self.config.chat_max_len:
            raise Refused("chat_too_long", f"at most {self.config.chat_max_len} characters")
        now = time.monotonic()
        session.chat_times = [t for t in session.chat_times if now - t < 10]
        if len(session.chat_times) >= self.config.chat_rate:
            raise Refused("chat_rate", "wait a moment before chatting again")
        session.chat_times.append(now)
        message = {
            "type": "chat",
            "table": tid,
            "player": ident.player_id,
            "name": ident.name,
            "text": text,
            "time": time.time(),
        }
        self.hub.send_all(tid, message)
        self._ok(session, mid)

    async def _cmd_balance(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        ident = session.identity
        assert ident is not None
        pid = ident.player_id
        self._ok(session, mid, **self._money(pid))

    def _money(self, pid: str) -> dict[str, int]:
        """``available``: the player's money on no table; ``balance``: that plus the chips
        placed (staked, not yet held) at every table (the table wallet's accounts)."""
        available = self.wallet.balance(player_account(pid))
        staked = sum(self.wallet.balance(stake_account(tid, pid)) for tid in self.actors)
        return {"balance": available + staked, "available": available}

    async def _cmd_deposit(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        ident = session.identity
        assert ident is not None
        amount = fields["amount"]
        if amount <= 0 or amount > self.config.max_deposit:
            raise Refused("bad_amount", f"a deposit is 1 to {self.config.max_deposit} minor units")
        if mid is None:
            raise ProtocolError("bad_message", "a deposit needs an id (it is its idempotency key)")
        key = f"deposit:{ident.player_id}:{mid}"
        account = player_account(ident.player_id)
        duplicate = self.wallet.has_key(key) or await self.store.has_entry(key)
        if not duplicate:
            # The store first: if it fails, nothing changed anywhere and a retry with the
            # same id deposits once. Then the same entry in memory (already stored).
            try:
                await self.store.commit(entries=[Entry(key, CASHIER, account, amount, "deposit")])
            except StoreError:
                log.exception("storing a deposit failed")
                raise Refused("store_failed", "the deposit could not be saved; try again") from None
            self.wallet.transfer(key, CASHIER, account, amount, "deposit")
            self.wallet.drain()
        self._ok(session, mid, balance=self._money(ident.player_id)["balance"], duplicate=duplicate)

    async def _cmd_history(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        ident = session.identity
        assert ident is not None
        limit = fields.get("limit", 100)
        if not 1 <= limit <= 100:
            raise Refused("bad_limit", "history holds your last 1-100 rounds")
        rounds = await self.store.history(ident.player_id, limit)
        self._ok(session, mid, rounds=[views.own_round(r, ident.player_id) for r in rounds])

    async def _cmd_roads(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        tid = fields["table"]
        table = self._actor(tid).table
        self._ok(session, mid, table=tid, roads=table.roads(), odds=await self._odds(table))

    async def _odds(self, table: Table) -> dict[str, Any] | None:
        """Exact odds of what remains, as the players know it (views.public_composition)."""
        counts = views.public_composition(table)
        if counts is None:
            return None
        assert table.shoe is not None
        key = (table.table_id, table.shoe_no, len(table.shoe.dealt))
        cached = self._odds_cache.get(key)
        if cached is None:
            odds = await asyncio.to_thread(
                exact_odds, table.options.decks, counts=counts, paytable=table.options.paytable
            )
            cached = _plain(odds)
            self._odds_cache = {k: v for k, v in self._odds_cache.items() if k[0] != table.table_id}
            self._odds_cache[key] = cached
        return cached

    async def _cmd_shoe_record(self, session: Session, mid: Any, fields: dict[str, Any]) -> None:
        tid = fields["table"]
        record = await self.store.shoe_record(tid, fields.get("shoe"))
        if record is None:
            raise Refused("no_record", "no revealed shoe yet at that table")
        self._ok(session, mid, record=record)

    # ------------------------------------------------------------------ metrics & health
    def _on_step(self, actor: TableActor, cmd: c.Command, events: list[Event]) -> None:
        for event in events:
            if event.kind == "settled":
                self.metrics.coups.inc()
                for pay in event.data["payouts"]:
                    self.metrics.settled.labels(kind="staked").inc(pay["stake"])
                    self.metrics.settled.labels(kind="returned").inc(pay["returned"])
                    self.metrics.settled.labels(kind="commission").inc(pay["commission"])

    async def _watch_slow_clients(self) -> None:
        """Cut off a client whose unsent frames pile up; it resumes from its last seq."""
        while True:
            await asyncio.sleep(self.watchdog_interval)
            for session in list(self.sessions):
                transport = session.conn.transport
                if (
                    transport is not None
                    and transport.get_write_buffer_size() > self.slow_client_buffer
                ):
                    self.metrics.slow_clients.inc()
                    transport.abort()


def _cut_off(conn: ServerConnection, code: int, reason: str) -> None:
    """Close at once: send the close frame and drop the TCP connection, without waiting
    for a peer that is flooding us to read it (it would hold the socket for close_timeout)."""
    with contextlib.suppress(Exception):
        conn.protocol.fail(code, reason)
        conn.send_data()
    if conn.transport is not None:
        conn.transport.close()


def _select_subprotocol(conn: ServerConnection, offered: Iterable[str]) -> Any:
    """msgpack or JSON as the client offers; a client that offers none gets JSON."""
    offered = list(offered)
    for proto in SUBPROTOCOLS:
        if proto in offered:
            return proto
    return None


def _origins(origins: Iterable[str]) -> Any:
    """The Origin allowlist for websockets: browsers must match; a client that sends
    no Origin header (the CLI, bots) is not a browser and is admitted (``None``)."""
    allowed: list[str | None] = list(origins)
    return [*allowed, None] if allowed else None


def _plain(value: Any) -> Any:
    """Odds as plain JSON/msgpack-able data (no tuples of big ints, no numpy scalars)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if k != "exact"}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool | int | str) or value is None:
        return value
    return float(value)
