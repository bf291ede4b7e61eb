"""Reaching Redis through sentinels, and what a switch of primary looks like (issue 22).

- ``redis+sentinel://`` URLs: the forms read, the malformed ones refused with a message
  naming what is wrong (never the password), by the store URL parser and by the config
  check (``--store``); passwords redacted in messages;
- the errors of a switch of primary (``READONLY``, ``LOADING``, ``MASTERDOWN``, the
  sentinels' "no master found"): :func:`unavailable` says so, the store answers them
  :class:`StoreUnavailable` (a commit against a real replica), and the bus sends a batch
  Redis refused again, in order;
- ``--redis-min-replicas``: a commit no replica acknowledged is StoreUnavailable, is
  kept on the primary all the same, and applied again it is applied once; with a
  replica attached it is answered ok.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.sentinel import MasterNotFoundError
from redis.exceptions import (
    BusyLoadingError,
    MasterDownError,
    NoScriptError,
    ReadOnlyError,
    ResponseError,
)
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.bus.channels import event_channel
from server.bus.redis import RedisBus
from server.bus.rides import unpack_step
from server.connect.redis import (
    Lane,
    SentinelURL,
    TimedConnection,
    connect,
    packed,
    parse_sentinel_url,
    unavailable,
)
from server.ledger.accounts import Entry
from server.process.config import ConfigError, load_config
from server.protocol.errors import StoreUnavailable
from server.store.base import TableRow
from server.store.redis import RedisStore, redact
from server.vocabulary.events import Event
from tests.kit.redis import REPLICATION, RedisServer
from tests.kit.timing import scaled


@contextlib.asynccontextmanager
async def lane_on(client: Any) -> AsyncIterator[Lane]:
    """A :class:`Lane` on ``client``; both closed after."""
    lane = Lane(client)
    try:
        yield lane
    finally:
        await lane.close()
        await client.aclose()


def test_sentinel_urls_are_read() -> None:
    assert parse_sentinel_url("redis+sentinel://s1:26380,s2,10.0.0.3:5000/chemmy/2") == (
        SentinelURL((("s1", 26380), ("s2", 26379), ("10.0.0.3", 5000)), "chemmy", 2)
    )
    assert parse_sentinel_url("redis+sentinel://h:1/svc") == SentinelURL((("h", 1),), "svc", 0)
    found = parse_sentinel_url("redis+sentinel://:p%40ss@h:1/svc/0")
    assert (found.username, found.password) == (None, "p@ss")
    found = parse_sentinel_url("redis+sentinel://me:pw@h:1,[::1]:2/svc/0")
    assert (found.username, found.password, found.sentinels) == ("me", "pw", (("h", 1), ("::1", 2)))


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+sentinel://h:1", "names the monitored service"),
        ("redis+sentinel://h:1/", "names the monitored service"),
        ("redis+sentinel:///svc/0", "at least one sentinel"),
        ("redis+sentinel://h:1,,h2:2/svc", "at least one sentinel"),
        ("redis+sentinel://h:99999/svc", "a port is 1-65535"),
        ("redis+sentinel://h:x/svc", "a port is 1-65535"),
        ("redis+sentinel://h:1/svc/zero", "only a database number"),
        ("redis+sentinel://h:1/svc/0/more", "only a database number"),
        ("redis+sentinel://h:1/svc/0?x=1", "no query"),
        ("redis+sentinel://:secretpw@h:99999/svc", "a port is 1-65535"),
    ],
)
def test_a_malformed_sentinel_url_is_refused_clearly(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as info:
        parse_sentinel_url(url)
    assert "secretpw" not in str(info.value)
    with pytest.raises(ConfigError, match=says) as config_info:
        load_config(["--store", url], {})
    assert str(config_info.value).startswith("--store: ")
    assert "secretpw" not in str(config_info.value)


def test_the_config_takes_a_sentinel_store_and_a_replica_count() -> None:
    url = "redis+sentinel://a:1,b:2/chemmy/0"
    config = load_config(["--store", url, "--redis-min-replicas", "1"], {})
    assert config.clustered and config.store_url == url and config.redis_min_replicas == 1
    env = {"CHEMMY_STORE": url, "CHEMMY_REDIS_MIN_REPLICAS": "2"}
    assert load_config([], env).redis_min_replicas == 2
    assert load_config([], {}).redis_min_replicas == 0
    with pytest.raises(ConfigError, match="--redis-min-replicas"):
        load_config(["--redis-min-replicas", "-1"], {})
    with pytest.raises(ConfigError, match="needs a Redis store"):
        load_config(["--redis-min-replicas", "1"], {})


def test_passwords_are_redacted() -> None:
    assert redact("redis+sentinel://:pw@a:1,b:2/svc/0") == "redis+sentinel://:***@a:1,b:2/svc/0"
    assert redact("redis://u:pw@h:1/0") == "redis://u:***@h:1/0"
    assert redact("redis://h:1/0") == "redis://h:1/0"
    assert "pw" not in repr(RedisStore("redis+sentinel://:pw@a:1/svc/0"))


def test_the_errors_of_a_switch_are_unavailable_not_refusals() -> None:
    switch = [
        ReadOnlyError("You can't write against a read only replica.", status_code="READONLY"),
        BusyLoadingError("Redis is loading the dataset in memory", status_code="LOADING"),
        MasterDownError("Link with MASTER is down", status_code="MASTERDOWN"),
        MasterNotFoundError("No master found for 'chemmy'"),
        ResponseError("READONLY You can't write against a read only replica."),
        ResponseError("NOREPLICAS Not enough good replicas to write."),
    ]
    for exc in switch:
        assert unavailable(exc), exc
    for exc in (ResponseError("KEYCONFLICT ledger key x"), ResponseError("ERR syntax error")):
        assert not unavailable(exc), exc


def entry(key: str, amount: int = 10) -> Entry:
    return Entry(key, "cashier", "player:ann", amount, "deposit", None)


def row(epoch: int = 1) -> TableRow:
    return TableRow("t1", {"id": "t1"}, {"phase": "idle"}, 1, False, epoch)


@pytest.fixture
def replica_of(tmp_path: Path) -> object:
    made: list[RedisServer] = []

    def make(primary: RedisServer) -> RedisServer:
        extra = (*REPLICATION, "--replicaof", "127.0.0.1", str(primary.port))
        server = RedisServer(tmp_path / f"replica-{len(made)}", extra=extra)
        made.append(server)
        server.start()
        return server

    yield make
    for server in made:
        server.kill()  # a throwaway copy


async def wait_synced(replica: RedisServer, primary: RedisServer | None = None) -> None:
    """Until the replica's link to its primary is up, and (given the primary) the primary
    counts it online, as ``WAIT`` does (a loaded machine can leave a gap between the two)."""
    client = aioredis.Redis(host="127.0.0.1", port=replica.port)
    first = None if primary is None else aioredis.Redis(host="127.0.0.1", port=primary.port)
    try:
        async with asyncio.timeout(scaled(10)):
            while (await client.info("replication")).get("master_link_status") != "up":
                await asyncio.sleep(0.05)
            while first is not None:
                info = await first.info("replication")
                if any(
                    isinstance(v, dict) and v.get("state") == "online"
                    for k, v in info.items()
                    if str(k).startswith("slave")
                ):
                    break
                await asyncio.sleep(0.05)
    finally:
        await client.aclose()
        if first is not None:
            await first.aclose()


async def test_a_commit_to_a_replica_is_store_unavailable(
    make_redis: type, replica_of: type
) -> None:
    primary = make_redis(extra=REPLICATION)
    first = RedisStore(primary.url())
    await first.open()  # opened once on the primary (it indexes the round records)
    await first.close()
    replica = replica_of(primary)
    await wait_synced(replica)
    store = RedisStore(replica.url())
    await store.open()
    try:
        with pytest.raises(StoreUnavailable, match="READONLY"):
            await store.commit(entries=[entry("e1")], table=row())
        with pytest.raises(StoreUnavailable, match="READONLY"):
            await store.claim_table("t1")
        assert await store.load_balances() == {}  # reads work, and nothing was written
    finally:
        await store.close()


@pytest.mark.slow
async def test_min_replicas_answers_a_commit_once_a_replica_has_it(
    make_redis: type, replica_of: type
) -> None:
    primary = make_redis(extra=REPLICATION)
    store = RedisStore(primary.url(), min_replicas=1)
    plain = RedisStore(primary.url())
    await store.open()
    await plain.open()
    try:
        # No replica: not answered ok, though the primary kept it...
        with pytest.raises(StoreUnavailable, match="0 of 1 replicas"):
            await store.commit(entries=[entry("e1")], table=row())
        assert await plain.has_entry("e1")
        # ...and the table's retried commit is applied once: no entry twice.
        await plain.commit(entries=[entry("e1")], table=row())
        assert (await plain.balances(["player:ann"]))["player:ann"] == 10
        assert len(await plain.ledger()) == 1
        with pytest.raises(StoreUnavailable, match="0 of 1 replicas"):
            await store.claim_table("t1")  # an epoch claim waits for a replica too
        replica = replica_of(primary)
        await wait_synced(replica, primary)
        result = await store.commit(entries=[entry("e2")], table=row(epoch=2))
        assert result.balances["player:ann"] == 20
        assert await store.claim_table("t1") == 3
        copy = RedisStore(replica.url())
        await copy.open()
        try:  # answered ok: the replica has it
            assert await copy.has_entry("e2")
        finally:
            await copy.close()
    finally:
        await store.close()
        await plain.close()


@pytest.mark.slow
async def test_a_batch_redis_refuses_is_sent_again_in_order(redis_url: str) -> None:
    """READONLY (a demoted primary), LOADING, MASTERDOWN: the batch is published
    again, before anything after it, as when Redis cannot be reached."""

    async def nothing(table: str, seq: int) -> list[Event] | None:
        return None

    bus = RedisBus(redis_url, node="pub", events_after=nothing)
    listener = connect(redis_url)
    pubsub = listener.pubsub(ignore_subscribe_messages=True)
    await pubsub.ssubscribe(event_channel("t9"))  # (Redis 7: the bus publishes sharded)
    await bus.start()
    assert bus._lane is not None
    real = bus._lane.send
    refusals = [
        ReadOnlyError("You can't write against a read only replica.", status_code="READONLY"),
        BusyLoadingError("Redis is loading the dataset in memory", status_code="LOADING"),
        MasterDownError("Link with MASTER is down", status_code="MASTERDOWN"),
    ]

    async def refused(commands: Any) -> Any:
        if refusals:
            raise refusals.pop(0)
        return await real(commands)

    bus._lane.send = refused  # type: ignore[method-assign]
    try:
        for seq in (1, 2, 3):
            bus.publish("t9", [Event(seq, "tick", {"n": seq})])
        seqs: list[int] = []
        async with asyncio.timeout(scaled(10)):
            while len(seqs) < 3:
                message = await pubsub.get_message(timeout=1.0)
                if message is not None:
                    seqs += [e.seq for e in unpack_step(message["data"])[1]]
        assert seqs == [1, 2, 3] and not refusals
    finally:
        await bus.close()
        await pubsub.aclose()  # type: ignore[no-untyped-call]
        await listener.aclose()


async def test_a_lane_sends_in_order_and_starts_afresh_after_an_error(redis_url: str) -> None:
    """A :class:`Lane` packs as redis-py does, answers each command's reply in order,
    raises redis-py's error for an error reply and drops its connection (the replies
    after it unread), and the next batch goes on a new connection."""
    client = connect(redis_url, socket_timeout=1.0)
    async with lane_on(client) as lane:
        commands = [("SET", "k", b"v\r\n"), ("INCR", "n"), ("PUBLISH", "nobody", b"")]
        assert packed(commands) == b"".join(
            client.connection_pool.make_connection().pack_commands(commands)
        )
        assert await lane.send(commands) == [b"OK", 1, 0]  # (raw replies)
        first = lane._connection
        with pytest.raises(ResponseError, match="not an integer"):
            await lane.send([("INCR", "n"), ("INCR", "k"), ("INCR", "n")])
        assert lane._connection is None
        assert await lane.send([("INCR", "n"), ("GET", "k")]) == [4, b"v\r\n"]
        assert lane._connection is not first


async def test_a_lanes_replies_are_parsed_as_redis_py_gives_them(redis_url: str) -> None:
    """A :class:`Lane` reads its connection's replies itself (its own protocol on the
    transport, hiredis parsing: not redis-py's per-call layers, issue 36) and gives them
    as redis-py does: bytes, or text for a
    client that decodes; a reply larger than a read, and many in one batch, whole and in
    order; error replies as redis-py's own exceptions (``NOSCRIPT`` a
    :class:`NoScriptError`), each caller's own in :meth:`Lane.replies`."""
    big = b"x" * (3 * 65536 + 17)
    for decode in (False, True):
        client = connect(redis_url, socket_timeout=2.0, decode_responses=decode)
        async with lane_on(client) as lane:
            many = [("INCR", "many")] * 500
            replies = await lane.send([("SET", "big", big), ("GET", "big"), *many, ("GET", "no")])
            text: Any = big.decode() if decode else big
            assert replies[:2] == (["OK", text] if decode else [b"OK", big])
            assert replies[2:] == [*range(1, 501), None]
            mixed = await lane.replies(
                [("EVALSHA", "0" * 40, "0"), ("INCR", "big"), ("HSET", "h", "f", "é"),
                 ("HGET", "h", "f")]
            )  # fmt: skip
            assert isinstance(mixed[0], NoScriptError) and isinstance(mixed[1], ResponseError)
            assert "not an integer" in str(mixed[1])
            assert mixed[2:] == ([1, "é"] if decode else [1, "é".encode()])
            await lane.send([("DEL", "big", "many", "h")])


async def test_a_lanes_protocol_answers_its_batch_whole_or_fails_it() -> None:
    """The protocol a :class:`Lane` puts on its connection's transport answers a batch
    once its last reply is in (the bytes cut anywhere), fails it as a lost connection when
    the connection is lost or Redis sends what is not RESP (and aborts it), and fails a
    batch sent after a loss at once."""
    from types import SimpleNamespace

    from redis.exceptions import ConnectionError as RedisConnectionError

    from server.connect.redis import _Wire, resp_parser

    class Transport:
        def __init__(self) -> None:
            self.written: list[bytes] = []
            self.aborted = False

        def write(self, data: bytes) -> None:
            self.written.append(data)

        def abort(self) -> None:
            self.aborted = True

    encoder = SimpleNamespace(decode_responses=False)
    wire = b"+OK\r\n:7\r\n$3\r\nabc\r\n-ERR no\r\n"
    for cut in range(len(wire) + 1):
        transport = Transport()
        lane = _Wire(transport, resp_parser(SimpleNamespace(encoder=encoder)))  # type: ignore[arg-type]
        replies = lane.send(b"4 commands", 4)
        assert transport.written == [b"4 commands"]
        lane.data_received(wire[:cut])
        assert replies.done() == (cut == len(wire))
        lane.data_received(wire[cut:])
        done = replies.result()
        assert done[:3] == [b"OK", 7, b"abc"] and isinstance(done[3], ResponseError)
    for trouble in ("not resp", "lost"):
        transport = Transport()
        lane = _Wire(transport, resp_parser(SimpleNamespace(encoder=encoder)))  # type: ignore[arg-type]
        replies = lane.send(b"2 commands", 2)
        lane.data_received(b":1\r\n")
        if trouble == "lost":
            lane.connection_lost(None)
        else:
            lane.data_received(b"*x\r\n")
            assert transport.aborted
        with pytest.raises(RedisConnectionError):
            replies.result()
    with pytest.raises(RedisConnectionError):
        lane.send(b"after", 1).result()


async def test_a_taken_over_connection_still_closes_as_redis_py_closes_it(
    redis_url: str,
) -> None:
    """A :class:`Lane`'s connection and the bus's pub/sub one, their transports taken
    over by protocols of their own, still close when redis-py closes them and waits for
    the close (``disconnect()``: its stream's ``wait_closed``), not at its timeout."""
    from server.bus.pubsub import PubSub

    client = connect(redis_url, socket_timeout=1.0, socket_connect_timeout=5.0)
    lane = Lane(client)
    reader = PubSub(client, "chemmy-bus-test", 5.0)
    try:
        assert await lane.send([("PING",)]) == [b"PONG"]
        await reader.connect()
        for connection in (lane._connection, reader._connection):
            started = asyncio.get_running_loop().time()
            await connection.disconnect()
            assert asyncio.get_running_loop().time() - started < 1.0
    finally:
        await lane.close()
        await reader.aclose()
        await client.aclose()


async def test_a_lane_raises_what_redis_py_raises_and_passes_over_pushes() -> None:
    """Against a Redis that answers as it can (a server on a real socket here): an error
    reply redis-py takes for a lost connection (``LOADING``: Redis restarting) is raised
    by :meth:`Lane.send` and tried again by :meth:`Lane.replies`, as redis-py's own calls
    are, never given as a reply; a RESP3 push between replies (``MOVING``) is passed over,
    never taken for the next reply (review)."""
    import hiredis

    loading = [2]  # (the first two data commands are refused)
    writers: list[asyncio.StreamWriter] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        parser = hiredis.Reader()
        while data := await reader.read(65536):
            parser.feed(data)
            while (command := parser.gets()) is not False:
                name = command[0].upper()
                if name == b"HELLO":
                    writer.write(b"%1\r\n+proto\r\n:3\r\n")
                elif name in (b"CLIENT", b"SELECT"):
                    writer.write(b"+OK\r\n")
                elif name == b"EXEC":  # (an array whose first reply is the refusal)
                    writer.write(b"*1\r\n-LOADING Redis is loading the dataset in memory\r\n")
                elif loading[0] > 0:
                    loading[0] -= 1
                    writer.write(b"-LOADING Redis is loading the dataset in memory\r\n")
                else:  # (a push first, then the reply)
                    writer.write(b">3\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n:7\r\n")

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    client = connect(f"redis://127.0.0.1:{port}/0", socket_timeout=2.0, retry=Retry(NoBackoff(), 2))
    try:
        async with lane_on(client) as lane:
            with pytest.raises(BusyLoadingError):
                await lane.send([("PUBLISH", "c", "x")])
            assert lane._connection is None
            with pytest.raises(BusyLoadingError):
                await lane.send([("EXEC",)])
            assert await lane.replies([("EVALSHA", "0" * 40, "0")]) == [7]  # (tried again)
            assert loading == [0]
            assert await lane.send([("INCR", "n"), ("INCR", "n")]) == [7, 7]
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await server.wait_closed()


async def test_a_lane_leaves_a_primary_the_sentinels_no_longer_name(redis_url: str) -> None:
    """A demoted primary takes a ``PUBLISH`` without a ``READONLY`` (and delivers it to
    its own subscribers only): once the sentinels name another primary (redis-py's
    sentinel pool keeps it in ``master_address``, asked every half second by the bus's
    probe), a :class:`Lane` drops its connection before its next batch and connects
    where its pool says (here one Redis stands for both)."""
    client = connect(redis_url, socket_timeout=1.0)
    pool: Any = client.connection_pool
    async with lane_on(client) as lane:
        assert await lane.send([("PING",)]) == [b"PONG"]
        first = lane._connection
        pool.master_address = (first.host, first.port)  # what a sentinel pool keeps
        assert await lane.send([("PING",)]) == [b"PONG"]
        assert lane._connection is first  # (the primary named is the one it is on)
        pool.master_address = ("127.0.0.1", 1)  # the sentinels name another one
        assert await lane.send([("PING",)]) == [b"PONG"]
        assert lane._connection is not first and first._writer is None  # (closed)


async def test_a_lanes_replies_that_do_not_come_time_out_and_drop_its_connection(
    make_redis: Callable[..., RedisServer],
) -> None:
    """A frozen Redis (SIGSTOP): a :class:`Lane`'s batch waits at most ``socket_timeout``
    for its replies (one deadline for the batch), is refused as redis-py refuses a
    read that ran out, and the next batch after Redis is back goes on a new connection."""
    server = make_redis()
    client = connect(server.url(), socket_timeout=scaled(0.5))
    async with lane_on(client) as lane:
        assert await lane.send([("PING",)]) == [b"PONG"]
        server.pause()
        try:
            with pytest.raises(RedisTimeoutError):
                await lane.send([("INCR", "n"), ("INCR", "n")])
            assert lane._connection is None
        finally:
            server.resume()
        # (whether Redis ran the frozen batch once resumed depends on what it read of
        # the dropped connection: either way, a new connection answers)
        assert await lane.send([("INCR", "n")]) in ([1], [3])


async def test_a_commands_write_runs_in_its_callers_task(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes are bounded by a deadline on the caller's task, not by ``asyncio.wait_for``
    (a task of its own per command on Python 3.11: issue 36), for every client made here."""
    import redis.asyncio.connection as redis_connection

    def no_task(*args: object, **kwargs: object) -> None:
        raise AssertionError("a write went through asyncio.wait_for")

    client = connect(redis_url, socket_timeout=1.0)
    try:
        taken = await client.connection_pool.get_connection()
        await client.connection_pool.release(taken)
        assert isinstance(taken, TimedConnection)
        monkeypatch.setattr(redis_connection.asyncio, "wait_for", no_task)
        await client.set("k", "v")
        assert await client.get("k") == b"v"
        async with client.pipeline(transaction=True) as pipe:
            pipe.incr("n").incr("n")
            assert await pipe.execute() == [1, 2]
    finally:
        await client.aclose()


async def test_a_write_that_cannot_finish_times_out_and_drops_its_connection(
    make_redis: Callable[..., RedisServer],
) -> None:
    """A Redis frozen (SIGSTOP) with the socket's buffers full: the write runs out at
    ``socket_timeout`` as redis-py's own did (its TimeoutError), and a command after
    Redis is back goes on a new connection."""
    server = make_redis()
    client = connect(server.url(), socket_timeout=scaled(0.5))
    try:
        await client.ping()
        server.pause()
        try:
            with pytest.raises(RedisTimeoutError):
                await client.set("big", b"x" * (64 << 20))  # more than the buffers hold
        finally:
            server.resume()
        assert await client.ping()
    finally:
        await client.aclose()


async def test_a_lanes_batch_is_written_and_answered_under_one_deadline(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: a :class:`Lane`'s batch takes one timer for its write and its replies
    (it took one for each: their entries and exits were about 4% of a cluster
    process's samples), a timer on the batch's future, not a timeout on the task
    (``asyncio.timeout``: five calls of Python at each batch)."""
    import server.connect.redis as connect_module

    made: list[float | None] = []
    timeout = asyncio.timeout

    def counted(delay: float | None) -> Any:
        made.append(delay)
        return timeout(delay)

    client = connect(redis_url, socket_timeout=1.0)
    async with lane_on(client) as lane:
        assert await lane.send([("PING",)]) == [b"PONG"]  # (connected)
        monkeypatch.setattr(connect_module.asyncio, "timeout", counted)
        for n in range(1, 4):
            assert await lane.send([("INCR", "n"), ("INCR", "n")]) == [2 * n - 1, 2 * n]
        assert made == [], made


async def test_a_lane_on_redis_pys_own_connection_class_reads_through_its_protocol(
    redis_url: str,
) -> None:
    """On a connection of redis-py's own classes (TLS and Unix sockets use them, not
    :class:`TimedConnection`), a :class:`Lane` takes the transport over as on ours: its
    batches written and read by its own protocol, none through redis-py's write (whose
    ``wait_for`` could swallow a deadline's cancellation on Python 3.11: review)."""
    import redis.asyncio.connection as redis_connection

    from server.connect.redis import _Wire

    pool = aioredis.ConnectionPool.from_url(redis_url, socket_timeout=1.0)
    assert pool.connection_class is redis_connection.Connection  # (not ours: _TimedWrites)
    client = aioredis.Redis(connection_pool=pool)
    async with lane_on(client) as lane:
        assert await lane.send([("PING",)]) == [b"PONG"]
        assert isinstance(lane._wire, _Wire)
        assert lane._wire.transport.get_protocol() is lane._wire
        assert await lane.send([("INCR", "w"), ("INCR", "w")]) == [1, 2]


async def test_a_lanes_write_that_cannot_finish_times_out_and_drops_its_connection(
    make_redis: Callable[..., RedisServer],
) -> None:
    """A Redis frozen (SIGSTOP) with the socket's buffers full: a :class:`Lane`'s batch
    whose write cannot finish runs out at ``socket_timeout`` (its one deadline), is
    refused as a write that ran out is, and drops its connection (and its unsent bytes);
    the next batch after Redis is back goes on a new one."""
    server = make_redis()
    client = connect(server.url(), socket_timeout=scaled(0.5))
    async with lane_on(client) as lane:
        assert await lane.send([("PING",)]) == [b"PONG"]
        server.pause()
        try:
            started = asyncio.get_running_loop().time()
            with pytest.raises(RedisTimeoutError):
                await lane.send([("SET", "big", b"x" * (64 << 20))])  # more than buffers hold
            assert asyncio.get_running_loop().time() - started < scaled(0.5) + 2.0
            assert lane._connection is None
        finally:
            server.resume()
        assert await lane.send([("PING",)]) == [b"PONG"]
