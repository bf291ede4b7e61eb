"""Several ``chemmy-server`` processes sharing tables through one real Redis.

:class:`Cluster` starts N server subprocesses (``tests/kit``'s launcher: port 0, the
listening line) all given ``--store redis://...`` of a private ``redis-server`` started
for the test (``make_redis``, AOF on), with a short lease so failover tests are quick.
It reads who owns what from the lease keys, as an operator would, and knows each
process by its bus name (``host-pid-random``, in the presence set). The Redis is the
test's own (``make_redis`` in tests/conftest.py); this module never starts or touches
another.

For the failure tests (tests/cluster/test_cluster_failures.py):

- :meth:`Cluster.owner` and :meth:`Cluster.new_owner`: the process holding a table's
  lease, and waiting until a table has an owner other than a given one (a failover);
- :func:`come_back`: a client whose process went away reconnects to another one (as a
  client behind a load balancer would) and resumes its table from its last ``seq``,
  retrying while the table has no owner;
- :func:`check_books`: the ledger in Redis after play: it sums to zero, matches every
  balance, every hold has exactly one outcome, every entry is in the ledger once, and
  every recorded round's wagers moved exactly as its record says.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import redis
import redis.sentinel

from server.connect.redis import parse_sentinel_url
from server.store.base import (
    TableRow,
)
from server.store.redis import RedisStore

from . import crash
from .client import TRANSIENT, Client, http_get
from .launch import ServerProcess
from .tables import SECRET, server_toml
from .timing import scaled

__all__ = [
    "FAILOVER",
    "LEASE",
    "TRANSIENT",
    "Cluster",
    "check_books",
    "come_back",
    "metric",
    "retry",
    "settle",
    "stored_row",
]

#: The lease (seconds) cluster tests run with: a lost process's tables move after this.
LEASE = 2.5
#: How long a failover may take: the lease, then a placement round (a sixth of the
#: lease) and the new owner's start, with room for a busy machine.
FAILOVER = LEASE + 1.5


class Cluster:
    """N server processes over one Redis. ``settings`` are more ``chemmy-server`` TOML
    settings (``command_timeout``, ``guest_balance``...), or ``config`` is the whole TOML
    file instead; ``lease`` is each process's ``--lease`` (None: the server's default),
    ``args`` more ``chemmy-server`` flags. (The benchmarks' cluster, bench/cluster.py,
    is this one.)"""

    def __init__(
        self,
        home: Path,
        redis_port: int,
        tables: list[dict[str, Any]],
        *,
        config: str | None = None,
        lease: float | None = LEASE,
        args: Sequence[str] = (),
        url: str | None = None,
        **settings: Any,
    ) -> None:
        self.home = home
        #: The store URL every process is given: the Redis on ``redis_port``, or ``url``
        #: (``redis+sentinel://``: the primary the test's sentinels name).
        self.url = url or f"redis://127.0.0.1:{redis_port}/0"
        options: dict[str, Any] = dict(
            jwt_secret=SECRET, guest=True, rate_limit=10_000.0, rate_burst=10_000
        )
        options.update(settings)
        self.config = config if config is not None else server_toml(tables, **options)
        self.lease_time = lease
        self.args = list(args)
        self.nodes: list[ServerProcess] = []
        self.redis = _inspector(self.url)
        self._names: dict[int, str] = {}  # pid -> bus name, once seen

    def server_args(self) -> list[str]:
        """The next process's ``chemmy-server`` flags: more flags, the store, the lease."""
        lease = [] if self.lease_time is None else ["--lease", str(self.lease_time)]
        return [*self.args, "--store", self.url, *lease]

    def add(self) -> ServerProcess:
        """Start one more process."""
        n = len(self.nodes)
        node = ServerProcess(self.home / f"node{n}", self.config, *self.server_args())
        node.start()
        self.nodes.append(node)
        return node

    def owners(self) -> dict[str, str]:
        """table -> the node name holding its lease."""
        out: dict[str, str] = {}
        for key in self.redis.scan_iter("chemmy:{*}:lease"):
            table = key.split("{", 1)[1].split("}", 1)[0]
            owner = self.redis.get(key)
            if owner is not None:
                out[table] = str(owner)
        return out

    def members(self) -> list[str]:
        return sorted(str(m) for m in self.redis.zrange("chemmy:nodes", 0, -1))

    def lease(self, table: str) -> str | None:
        """The bus name of the process holding ``table``'s lease, if one does."""
        name = self.redis.get(f"chemmy:{{{table}}}:lease")
        return None if name is None else str(name)

    def node_name(self, node: ServerProcess) -> str:
        """The bus name of ``node``'s process (host-pid-random), remembered once seen
        (a process stopped or killed drops out of the presence set)."""
        known = self._names.get(node.pid)
        if known is not None:
            return known
        names = [m for m in self.members() if m.split("-")[-2] == str(node.pid)]
        assert len(names) == 1, (names, self.members())
        self._names[node.pid] = names[0]
        return names[0]

    def by_name(self, name: str | None) -> ServerProcess | None:
        """The running process of this test whose bus name is ``name``."""
        if name is None:
            return None
        for node in self.nodes:
            if node.running and self._names.get(node.pid) == name:
                return node
        for node in self.nodes:  # not remembered yet: look it up
            if node.running and name.split("-")[-2] == str(node.pid):
                self._names[node.pid] = name
                return node
        return None

    def owner(self, table: str) -> ServerProcess | None:
        """The process holding ``table``'s lease now."""
        return self.by_name(self.lease(table))

    async def ready(self, tables: int = 1) -> None:
        """Wait until every process is a member and ``tables`` tables have an owner;
        every process's bus name is then known."""
        await settle(
            lambda: len(self.members()) == len(self.nodes) and len(self.owners()) == tables
        )
        for node in self.nodes:
            self.node_name(node)

    async def new_owner(self, table: str, old: str, timeout: float = FAILOVER * 3) -> ServerProcess:
        """Wait until ``table``'s lease is held by a running process other than the one
        named ``old``; that process."""
        found: list[ServerProcess] = []

        def moved() -> bool:
            name = self.lease(table)
            node = self.by_name(name) if name != old else None
            if node is not None:
                found.append(node)
            return node is not None

        try:
            await settle(moved, timeout=timeout)
        except TimeoutError:
            held = self.lease(table)
            raise AssertionError(
                f"{table}: no process but {old} took its lease in {scaled(timeout):.1f} s "
                f"(held by {held!r})\n{self.logs()}"
            ) from None
        return found[-1]

    def logs(self, lines: int = 60) -> str:
        """Each process's last ``lines`` lines of log, for a failure's message."""
        return "\n".join(
            f"--- node {n} ({node.url}):\n{node.log_text(lines)}"
            for n, node in enumerate(self.nodes)
        )

    def others(self, *nodes: ServerProcess) -> list[ServerProcess]:
        """The running processes but ``nodes``."""
        return [n for n in self.nodes if n.running and all(n is not x for x in nodes)]

    def stop(self) -> None:
        for node in self.nodes:
            if node.running:  # a test may have left one stopped (SIGSTOP)
                node.send_signal(signal.SIGCONT)
            node.stop()
        self.redis.close()


def _inspector(url: str) -> redis.Redis:
    """A client for the test to read the cluster's Redis with (the current primary)."""
    if not url.startswith("redis+sentinel://"):
        return redis.Redis.from_url(url, decode_responses=True)
    target = parse_sentinel_url(url)
    sentinel = redis.sentinel.Sentinel(list(target.sentinels), socket_timeout=1.0)  # type: ignore[no-untyped-call]
    client = sentinel.master_for(target.service, db=target.db, decode_responses=True)  # type: ignore[no-untyped-call]
    assert isinstance(client, redis.Redis)
    return client


async def settle(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until ``check()`` holds (the timeout scaled), polling."""
    async with asyncio.timeout(scaled(timeout)):
        while not check():
            await asyncio.sleep(0.05)


async def retry(
    client: Client, kind: str, /, *, msg_id: Any, timeout: float = FAILOVER * 3, **fields: Any
) -> dict[str, Any]:
    """Send a command with ``msg_id`` until it is answered ok (the same id each time, so
    it is applied once), while the answer is a transient refusal; the ok reply."""
    return await client.call_patiently(kind, msg_id=msg_id, timeout=timeout, **fields)


async def come_back(
    client: Client, url: str, table: str, *, timeout: float = FAILOVER * 3
) -> dict[str, Any]:
    """``client``'s process went away: connect to ``url`` (another process) as the same
    player and resume ``table`` from the last ``seq`` received, retrying while the table
    has no owner. The join's ok reply (``resumed``: the missed events follow it)."""
    if not client.closed:
        await client.abort()
    client.url = url
    await client.open()
    assert client.token is not None, "only a token player comes back as the same player"
    await client.hello(token=client.token)
    since = client.last_seq.get(table)
    fields = {} if since is None else {"since": since}
    async with asyncio.timeout(scaled(timeout)):
        while True:
            reply = await client.rpc("join", table=table, **fields)
            if reply["type"] == "ok":
                return reply
            assert reply["code"] in TRANSIENT, f"{client.label}: join: {reply}"
            await asyncio.sleep(0.1)


async def metric(node: ServerProcess, name: str) -> float:
    """The value of the unlabelled sample ``name`` on a process's ``/metrics``."""
    status, _headers, body = await http_get(node.port, "/metrics")
    assert status == 200, status
    for line in body.decode().splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    raise AssertionError(f"no {name} on :{node.port}/metrics")


async def stored_row(url: str, table: str) -> TableRow:
    """``table``'s row as the Redis store holds it now."""
    store = RedisStore(url)
    await store.open()
    try:
        (row,) = [r for r in await store.load_tables() if r.table_id == table]
        return row
    finally:
        await store.close()


async def check_books(url: str, *, tables: Iterable[str] = ()) -> dict[str, Any]:
    """The money in Redis after play, every coup settled: :func:`tests.kit.crash.check_books`
    (conserved, matched, every hold with exactly one outcome, no entry twice, each
    recorded round paid as its record says, nothing held or staked) over every round
    in the ledger, and nothing staked at ``tables``. Returns what that returns."""
    store = RedisStore(url)
    await store.open()
    try:
        entries = await store.ledger(limit=10_000_000)
        recorded = [
            rid
            for rid in sorted({e.round_id for e in entries if e.round_id is not None})
            if await store.round_record(rid) is not None
        ]
        books = await crash.check_books(store, (), round_ids=recorded)
        for table in tables:
            staked = {a: v for a, v in books["balances"].items() if a.startswith(f"stake:{table}:")}
            assert not any(staked.values()), staked
        return books
    finally:
        await store.close()
