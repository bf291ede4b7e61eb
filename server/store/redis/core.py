"""The Redis store's connection and its writes: the client and its errors translated
at the boundary, the one commit (its arguments for the commit script) and the group
commit that sends the commits of one turn of the loop in one batch, a player's
welcome and a guest's expiry, a table's epoch claimed, ``WAIT`` for replicas.

The package docstring (``server.store.redis``) says why; this module must never let a
``redis`` exception escape, nor run a script that writes after an error reply.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Final

import msgpack
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.connect.redis import UNAVAILABLE_CODES, Lane, connect, redact, unavailable
from server.connect.tracking import Tracked
from server.ledger.accounts import Entry, player_account
from server.ledger.flows import entry_flow, guard_measure
from server.protocol.errors import (
    KeyConflict,
    LimitPassed,
    OutOfRange,
    Overdrawn,
    StaleEpoch,
    StoreError,
    StoreUnavailable,
)
from server.store.base import EVENT_RETENTION, HISTORY_LIMIT, CommitResult, RoundIndex
from server.store.front import StoreFront
from server.store.plan import CommitPlan
from server.store.records import own_copy, record_time
from server.store.redis.scripts import (
    _LUA_ANSWER_CALL,
    _LUA_BET_READS,
    _LUA_CLAIM_CALL,
    _LUA_COMMIT,
    _LUA_ENSURE_PLAYER,
    _LUA_EXPIRE,
    _LUA_PLAY_SET,
    _LUA_PLAY_TOUCH,
    _LUA_UNLIST,
    _LUA_UPDATE_CALL,
)

#: How often a call retries a dropped connection before it raises StoreUnavailable,
#: and the backoff between tries (seconds): about a second in all.
RETRIES: Final = 4
BACKOFF_BASE: Final = 0.05
BACKOFF_CAP: Final = 0.5

#: How long a write waits for ``min_replicas`` replicas to acknowledge it (``WAIT``).
WAIT_TIMEOUT_MS: Final = 1000

#: The most commits one group (one batch, one ``WAIT``) takes.
GROUP_MAX: Final = 64

#: Reply prefixes that mean "Redis cannot do it now", not "refused".
_UNAVAILABLE_REPLIES: Final = UNAVAILABLE_CODES

#: The suffixes of a player's flow fields (``<day>:s``, ``<day>:n``, ``<day>:d``), in
#: :func:`~server.store.base.entry_flow`'s order.
_FLOW_FIELDS: Final = ("s", "n", "d")


def _pack(entry: Entry) -> str:
    """An entry's fields as stored (and compared: identical fields, identical text)."""
    fields = [entry.src, entry.dst, entry.amount, entry.kind, entry.round_id]
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def _unpack(key: str, packed: bytes | str) -> Entry:
    src, dst, amount, kind, round_id = json.loads(packed)
    return Entry(key, src, dst, int(amount), kind, round_id)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _texts(found: Any) -> list[str]:
    """A list reply's members as text."""
    return [_text(value) for value in found]


class RedisCore(StoreFront):
    """The connection, the boundary and the writes of
    :class:`~server.store.redis.RedisStore` (its arguments are said there); the reads
    and the rest are the other modules', each a part of it."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "chemmy:",
        event_retention: int = EVENT_RETENTION,
        round_index: int = HISTORY_LIMIT,
        clock: Callable[[], float] = time.time,
        socket_timeout: float = 3.0,
        min_replicas: int = 0,
    ) -> None:
        if event_retention < 1 or round_index < HISTORY_LIMIT:
            raise StoreError("retention keeps at least 1 event and 100 rounds a player")
        if min_replicas < 0:
            raise StoreError("min_replicas is a count of replicas, not negative")
        #: A commit (and a table's epoch claim) is answered only once this many replicas
        #: have it (``WAIT``); see docs/architecture.md §10, "Redis: durability".
        self.min_replicas = min_replicas
        self.url = url
        self.prefix = prefix
        self.event_retention = event_retention
        self.round_index = round_index
        self.clock = clock
        self.socket_timeout = socket_timeout
        self._client: aioredis.Redis | None = None
        self._lane: Lane | None = None  # the commits' own connection (``_execute``)
        self._tracked = Tracked(_LUA_BET_READS, _bet_loose)  # the per-bet reads, kept
        self._scripts: dict[str, Any] = {}
        #: The commits queued for the next group (arguments, futures), a flush due, flushes.
        self._queued: list[tuple[bytes, asyncio.Future[Any]]] = []
        self._flush_due = False
        self._flushes: set[asyncio.Task[None]] = set()
        self.commits = self.groups = 0  # commits stored, and the batches they went in
        #: Each table's epoch in which its commits need not look it up on the list of open
        #: tables (issue 36), and the epochs a commit closing it was sent in (never since).
        self._listed: dict[str, int] = {}
        self._closing: set[tuple[str, int]] = set()

    def __repr__(self) -> str:
        return f"RedisStore({redact(self.url)!r})"

    # -- the boundary ----------------------------------------------------------------
    @contextmanager
    def _translated(self) -> Iterator[None]:
        """Third-party errors become :class:`StoreError` here, and only here."""
        try:
            yield
        except ResponseError as exc:
            if unavailable(exc):  # READONLY, LOADING, MASTERDOWN: a switch of primary
                raise StoreUnavailable(f"redis: {exc.status_code or ''} {exc}") from None
            raise _translate_reply(str(exc)) from None
        except (RedisConnectionError, RedisTimeoutError, OSError, TimeoutError) as exc:
            raise StoreUnavailable(f"redis at {redact(self.url)}: {exc}") from None
        except RedisError as exc:
            raise StoreError(f"redis: {exc}") from None
        except UnicodeError as exc:
            raise StoreError(f"not storable text: {exc}") from None

    def _redis(self) -> aioredis.Redis:
        if self._client is None:
            raise StoreError("the store is not open")
        return self._client

    def _key(self, *parts: str) -> str:
        return self.prefix + "".join(parts)

    def _table_key(self, table_id: str, what: str) -> str:
        """A table's own keys share its hash tag (one Cluster slot per table)."""
        return f"{self.prefix}{{{table_id}}}:{what}"

    # -- lifecycle -------------------------------------------------------------------
    async def open(self) -> None:
        if self._client is not None:
            return
        retry = Retry(ExponentialWithJitterBackoff(cap=BACKOFF_CAP, base=BACKOFF_BASE), RETRIES)
        with self._translated():
            try:
                client = connect(
                    self.url,
                    retry=retry,
                    retry_on_error=[RedisConnectionError, RedisTimeoutError],
                    socket_timeout=self.socket_timeout,
                    socket_connect_timeout=self.socket_timeout,
                    health_check_interval=30,
                )
            except ValueError as exc:
                raise StoreError(f"not a redis URL: {redact(self.url)} ({exc})") from None
            try:
                await client.ping()
            except BaseException:
                await client.aclose()
                raise
        self._scripts = {
            "commit": client.register_script(_LUA_COMMIT),
            "ensure_player": client.register_script(_LUA_ENSURE_PLAYER),
            "expire": client.register_script(_LUA_EXPIRE),
            "update_call": client.register_script(_LUA_UPDATE_CALL),
            "play_set": client.register_script(_LUA_PLAY_SET),
            "play_touch": client.register_script(_LUA_PLAY_TOUCH),
            "claim_call": client.register_script(_LUA_CLAIM_CALL),
            "answer_call": client.register_script(_LUA_ANSWER_CALL),
            "unlist": client.register_script(_LUA_UNLIST),
        }
        self._client, self._lane = client, Lane(client)
        self._tracked.bind(client)
        with self._translated():  # a group's first batch finds it (no NOSCRIPT)
            await client.script_load(_LUA_COMMIT)
        await self._index_round_times()

    async def _index_round_times(self) -> None:
        """Put the round records stored before the time index (``round_times``) in it,
        once per database (``round_times_ready`` says it is done). Harmless if two
        processes do it at once, or a commit adds a round meanwhile: ``ZADD`` of the
        same score."""
        with self._translated():
            redis = self._redis()
            if await redis.exists(self._key("round_times_ready")):
                return
            cursor = 0
            while True:
                cursor, found = await redis.hscan(self._key("rounds"), cursor, count=500)
                if isinstance(found, dict) and found:
                    async with redis.pipeline(transaction=False) as pipe:
                        for rid, body in found.items():
                            record = json.loads(body)
                            when, member = record_time(record), _text(rid)
                            pipe.zadd(self._key("round_times"), {member: when})
                            table = str(record.get("table", ""))
                            pipe.zadd(self._key("round_times:", table), {member: when})
                        await pipe.execute()
                if not cursor:
                    break
            await redis.set(self._key("round_times_ready"), "1")

    async def claim_serving(self) -> None:
        """A cluster's shared store: every process serves it (tables are claimed by lease)."""

    async def close(self) -> None:
        while self._flushes:  # the commits already queued go out first
            await asyncio.gather(*self._flushes, return_exceptions=True)
        client, lane = self._client, self._lane
        self._client = self._lane = None
        with suppress(RedisError, OSError):
            await self._tracked.close()
            if lane is not None:
                await lane.close()
            if client is not None:
                await client.aclose()

    # -- a player's welcome, a guest's expiry -----------------------------------------
    async def _ensure(self, player_id: str, name: str, welcome: Entry | None, guest: bool) -> int:
        args = [
            self.prefix,
            player_id,
            name,
            player_account(player_id),
            "" if welcome is None else welcome.key,
            "" if welcome is None else _pack(welcome),
            "0" if welcome is None else str(welcome.amount),
            "1" if guest else "0",
            repr(float(self.clock())),
        ]
        with self._translated():
            self._redis()
            found = await self._replicated(self._scripts["ensure_player"], args)
        return int(found)

    async def expire_guests(self, idle_seconds: float) -> int:
        cutoff = self.clock() - idle_seconds
        gone = 0
        with self._translated():
            redis = self._redis()
            for _ in range(10_000):  # each pass drops every candidate it saw
                found = await redis.zrangebyscore(
                    self._key("guests"), "-inf", repr(float(cutoff)), start=0, num=500
                )
                if not found:
                    break
                args = [self.prefix, repr(float(cutoff)), *_texts(found)]
                gone += int(await self._scripts["expire"](args=args))
                if len(found) < 500:
                    break
        return gone

    # -- the one write (planned by StoreFront.commit) -----------------------------------
    async def _apply(self, plan: CommitPlan) -> CommitResult:
        args: list[str] = [plan.day, plan.cutoff, str(len(plan.entries))]
        moved: list[str] = []  # whose flows it moves: read afresh here (``_tracked``)
        for entry in plan.entries:
            args += [entry.key, entry.src, entry.dst, str(entry.amount), _pack(entry)]
            flow = entry_flow(entry)
            args += ["", "0", "0", "0"] if flow is None else [str(part) for part in flow]
            moved += () if flow is None else (flow[0],)
        table = plan.table
        if table is None or plan.row is None or plan.parts is None:
            args.append("0")
        else:
            config, state = plan.row
            drop, parts = plan.parts
            if table.closed:  # (from here its commits look again: it may be reopened)
                self._closing.add((table.table_id, table.epoch))
            closing = (table.table_id, table.epoch) in self._closing
            args += [
                "1",
                table.table_id,
                config,
                state,
                "1" if table.state is None else "0",
                str(table.seq),
                "1" if table.closed else "0",
                str(table.epoch),
                str(self.event_retention),
                "1" if drop else "0",
                "1" if self._listed.get(table.table_id) == table.epoch and not closing else "0",
                str(len(parts)),
            ]
            for key, body in parts:
                args += [key, "0" if body is None else "1", body or ""]
        args.append(str(len(plan.events)))
        for seq, body in plan.events:
            args += [str(seq), body]
        args.append(str(len(plan.records)))
        for index, body in plan.records:
            if isinstance(index, RoundIndex):
                players = json.dumps(list(index.players), ensure_ascii=False)
                args += ["r", index.round_id, body, players, index.table, repr(index.time)]
                args.append(str(len(index.players)))
                args += index.players
            else:
                revealed = "1" if index.revealed else "0"
                args += ["s", index.table, str(index.shoe_no), revealed, body]
        report = plan.report
        args += [str(self.round_index), str(len(report)), *report]
        args += self._call_args(plan.calls)
        args.append(str(len(plan.guards)))
        for guard in plan.guards:
            measure, opposite = guard_measure(guard.kind)
            field = _FLOW_FIELDS[measure]
            args += [guard.player, guard.kind, field, "1" if opposite else "0"]
            args += [str(guard.cap), guard.since]
        with self._translated():
            self._redis()
            # Encoded here (a text Redis cannot take is this commit's refusal alone): one
            # msgpack array of str, as the script reads them, not an argument each (issue 36).
            packed = msgpack.packb(args)
        out = await self._tracked.wrote(moved, self._grouped(packed), self._key("flows:"))
        if table is not None and plan.row is not None and not table.closed:  # (stored: listed)
            self._listed[table.table_id] = table.epoch
        return CommitResult(int(out[0]), {a: int(b) for a, b in zip(report, out[1:], strict=True)})

    # -- the group commit ------------------------------------------------------------
    def _grouped(self, packed: bytes) -> asyncio.Future[Any]:
        """Queue a commit script's ``packed`` arguments for the next group; its answer. The
        commits queued before the flush runs (the same turn of the loop) go out together: a
        lone commit waits for no company, and every commit goes in the order it was queued."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queued.append((packed, future))
        if not self._flush_due:
            self._flush_due = True
            self._spawn()
        return future

    def _spawn(self) -> None:
        task = asyncio.get_running_loop().create_task(self._flush())
        self._flushes.add(task)
        task.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Task[None]) -> None:
        """A flush is over. One cancelled before it took its group (its loop closing)
        leaves nothing behind: the commits still queued are cancelled with it, and the
        next commit starts a flush of its own."""
        self._flushes.discard(task)
        if task.cancelled():
            queued, self._queued = self._queued, []
            for _, future in queued:
                future.cancel()
            self._flush_due = False

    async def _flush(self) -> None:
        group = self._queued[:GROUP_MAX]
        del self._queued[:GROUP_MAX]
        if not group:  # (taken by a flush cancelled before it)
            return
        if self._queued:  # more than a group: the next one goes out beside it
            self._spawn()
        else:
            self._flush_due = False
        try:
            outcomes = await self._send(packed for packed, _ in group)
        except asyncio.CancelledError:  # the loop is closing: so are the callers waiting
            for _, future in group:
                future.cancel()
            raise
        except Exception as exc:  # the whole batch failed: every commit with it
            outcomes = [self._store_error(exc)] * len(group)
        for (_, future), outcome in zip(group, outcomes, strict=True):
            if future.done():  # the caller gave up; the commit was sent all the same
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(own_copy(outcome))
            else:
                future.set_result(outcome)

    async def _send(self, group: Iterable[bytes]) -> list[Any]:
        """Send the commits in one batch (not a transaction: each ``EVALSHA`` is its
        own atomic script, and one's error reply is its own), then one ``WAIT`` with
        :attr:`min_replicas`: each commit's answer, or its :class:`StoreError`. The
        commits a script Redis does not know refused (``NOSCRIPT``: it ran nothing) are
        sent again as ``EVAL`` of its text."""
        pending = list(group)
        outcomes: list[Any] = [None] * len(pending)
        todo = list(range(len(pending)))
        head = ["EVALSHA", self._scripts["commit"].sha]
        for attempt in range(2):
            replies = await self._execute(head, [pending[i] for i in todo])
            self.groups += 1
            in_doubt = self._wait_failure(replies[-1]) if self.min_replicas else None
            again = []
            for i, reply in zip(todo, replies, strict=False):
                if isinstance(reply, NoScriptError) and not attempt:
                    again.append(i)
                elif isinstance(reply, BaseException):
                    outcomes[i] = self._store_error(reply)
                else:
                    outcomes[i] = in_doubt or reply
                    self.commits += in_doubt is None
            if not again:
                break
            head, todo = ["EVAL", _LUA_COMMIT], again  # (and Redis keeps it again)
        return outcomes

    async def _execute(self, head: list[str], group: list[bytes]) -> list[Any]:
        """The replies (error replies as exceptions) of the commit script (``head``: its
        ``EVALSHA`` or ``EVAL``) run with each of ``group``'s packed arguments, then of ``WAIT``
        with :attr:`min_replicas`: one batch on the commits' own ``Lane``, retried as the client's."""
        if self._lane is None:
            raise StoreError("the store is not open")
        commands: list[list[Any]] = [[*head, "0", self.prefix, packed] for packed in group]
        if self.min_replicas:
            commands.append(["WAIT", str(self.min_replicas), str(WAIT_TIMEOUT_MS)])
        return await self._lane.replies(commands)

    def _wait_failure(self, acked: Any) -> BaseException | None:
        """What a commit whose script ran is answered when the group's ``WAIT``
        answered ``acked``: ``None`` when enough replicas have it."""
        if isinstance(acked, BaseException):
            return self._store_error(acked)
        if int(acked) < self.min_replicas:
            return StoreUnavailable(
                f"redis: {acked} of {self.min_replicas} replicas acknowledged the write "
                f"in {WAIT_TIMEOUT_MS} ms; it may be kept all the same"
            )
        return None

    def _store_error(self, exc: BaseException) -> BaseException:
        """``exc`` as :meth:`_translated` raises it (a Redis error as a StoreError)."""
        try:
            with self._translated():
                raise exc
        except BaseException as translated:
            return translated
        return exc  # pragma: no cover (the raise above always raises)

    # -- tables ----------------------------------------------------------------------
    async def claim_table(self, table_id: str) -> int:
        if not isinstance(table_id, str) or not table_id:
            raise StoreError("a table has an id")
        with self._translated():
            if not self.min_replicas:
                return int(await self._redis().incr(self._table_key(table_id, "epoch")))
            # Fencing must survive a failover: an epoch a promoted replica never had
            # could be handed out twice.
            async with self._redis().pipeline(transaction=False) as pipe:
                pipe.incr(self._table_key(table_id, "epoch"))
                return int(await self._waited(pipe))

    async def _replicated(self, script: Any, args: Sequence[Any]) -> Any:
        """Run a write script; with :attr:`min_replicas`, answered only once that many
        replicas have it (``WAIT`` on the same connection, in one pipeline)."""
        if not self.min_replicas:
            return await script(args=args)
        async with self._redis().pipeline(transaction=False) as pipe:
            await script(args=args, client=pipe)
            return await self._waited(pipe)

    async def _waited(self, pipe: Any) -> Any:
        """Execute ``pipe``'s one write followed by ``WAIT``: the write's answer, or
        :class:`StoreUnavailable` when fewer than :attr:`min_replicas` replicas
        acknowledged it in :data:`WAIT_TIMEOUT_MS`. The write may be kept all the same
        (on the primary, and on a replica later): the caller is told it is in doubt,
        and a retried commit is applied once (entries by key, events by seq)."""
        pipe.wait(self.min_replicas, WAIT_TIMEOUT_MS)
        out, acked = await pipe.execute(raise_on_error=False)
        for result in (out, acked):
            if isinstance(result, Exception):
                raise result
        if int(acked) < self.min_replicas:
            raise StoreUnavailable(
                f"redis: {acked} of {self.min_replicas} replicas acknowledged the write "
                f"in {WAIT_TIMEOUT_MS} ms; it may be kept all the same"
            )
        return out

    # -- wallet calls, as the commit script takes them -------------------------------
    @staticmethod
    def _call_args(calls: Sequence[tuple[dict[str, Any], str]]) -> list[str]:
        """The commit script's arguments for ``calls`` (checked: :func:`plan_commit`)."""
        args = [str(len(calls))]
        for checked, text in calls:
            due = "1" if checked["state"] == "pending" else "0"
            args += [checked["transaction_id"], text, due, repr(checked["next_at"])]
        return args


def _bet_loose(answer: Any, keys: Sequence[str]) -> list[str]:
    """The ``bet_reads`` keys whose change leaves an answer true for a bet: the player's
    seen (no bet's check reads it), their flows when they have no limits (not read)."""
    return [keys[3]] if answer[1] is not None else [keys[3], keys[4]]


def _translate_reply(message: str) -> StoreError:
    """A Redis error reply as a :class:`StoreError` (the scripts' coded replies first)."""
    code, _, text = message.partition(" ")
    if code == "KEYCONFLICT":
        return KeyConflict(text)
    if code == "OVERDRAWN":
        return Overdrawn(text)
    if code == "STALEEPOCH":
        return StaleEpoch(text)
    if code == "LIMIT":
        kind, cap, left = text.split(" ")
        return LimitPassed(kind, int(cap), int(left))
    if code == "RANGE":
        return OutOfRange(text)
    if code.startswith(_UNAVAILABLE_REPLIES):
        return StoreUnavailable(f"redis: {message}")
    return StoreError(f"redis: {message}")
