"""Redis with automatic failover for tests: a primary, replicas and three sentinels,
all started by the test run in temporary directories on free loopback ports.

:class:`RedisHA` starts a primary (:class:`~tests.redis_server.RedisServer`, AOF on),
``replicas`` replicas of it (``--replicaof``) and three sentinels (``redis-server
sentinel.conf --sentinel``, Debian's ``redis-server`` package: the same binary) that
monitor it as :data:`SERVICE` with quorum 2, a short ``down-after-milliseconds`` and
``failover-timeout``; it waits until every sentinel sees every replica and the other
sentinels (a failover needs both), and stops everything. Each sentinel's config file is
its own and writable: sentinels rewrite it as they learn.

:meth:`RedisHA.primary` is the server the sentinels name now; :meth:`RedisHA.promoted`
waits until they name another one; a server is killed (``kill()``, SIGKILL), frozen
(``pause()``, SIGSTOP) or let go on (``resume()``, SIGCONT) through its
:class:`RedisServer`. :meth:`RedisHA.url` is the ``redis+sentinel://`` store URL.

This module must never connect to a Redis it did not start.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import redis

from tests.redis_server import TIMEOUT, RedisServer, _candidate_port, redis_available, start_ours

__all__ = ["SERVICE", "RedisHA", "Sentinel", "redis_available"]

#: The name the sentinels monitor the primary under.
SERVICE = "chemmy"

#: Replication settings for quick tests: a full sync streams at once (no RDB file, no
#: wait for more replicas to join it), and a primary stops without waiting for its
#: replicas to catch up.
REPLICATION = (
    "--repl-diskless-sync", "yes",
    "--repl-diskless-sync-delay", "0",
    "--shutdown-timeout", "0",
    # A replica cut from its primary (or still loading its copy) answers MASTERDOWN, not
    # its old data (deploy/ sets it too: docs/operations.md).
    "--replica-serve-stale-data", "no",
)  # fmt: skip


#: Every data server of a :class:`RedisHA`: a primary cut off from its replicas (frozen
#: while a replica was promoted, then let go on) refuses writes (``NOREPLICAS``) instead
#: of taking them into a history that is thrown away when it is made a replica.
GUARD = ("--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")


class Sentinel:
    """One ``redis-server --sentinel`` in ``directory``, monitoring ``primary``."""

    def __init__(
        self, directory: Path, primary: int, *, down_after_ms: int, failover_timeout_ms: int
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.primary = primary
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def config_file(self) -> Path:
        return self.directory / "sentinel.conf"

    def client(self) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=2, decode_responses=True
        )

    def start(self) -> None:
        for _attempt in range(20):
            if self._try_start(_candidate_port()):
                return
        raise RuntimeError(f"the sentinel did not start; see {self.directory / 'sentinel.log'}")

    def _write_config(self, port: int) -> None:
        self.config_file.write_text(
            f"port {port}\n"
            "bind 127.0.0.1\n"
            "daemonize no\n"
            f'dir "{self.directory.resolve()}"\n'
            f'logfile "{(self.directory / "sentinel.log").resolve()}"\n'
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary} 2\n"
            f"sentinel down-after-milliseconds {SERVICE} {self.down_after_ms}\n"
            f"sentinel failover-timeout {SERVICE} {self.failover_timeout_ms}\n"
            f"sentinel parallel-syncs {SERVICE} 1\n"
        )

    def _try_start(self, port: int) -> bool:
        self._write_config(port)
        mine = str(self.config_file.resolve())  # ours: it runs our config file
        command = ["redis-server", str(self.config_file), "--sentinel"]
        process = start_ours(command, port, lambda c: c.info("server").get("config_file") == mine)
        if process is None:
            return False
        self.process, self.port = process, port
        return True

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class RedisHA:
    """A primary, ``replicas`` replicas and three sentinels (see the module docstring)."""

    def __init__(
        self,
        directory: Path,
        *,
        replicas: int = 1,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 3000,
    ) -> None:
        self.directory = Path(directory)
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.primary_server = RedisServer(self.directory / "redis-0", extra=(*REPLICATION, *GUARD))
        self.replica_count = replicas
        #: Every data server, the first primary first (a server keeps its object across
        #: a failover: which one is primary now is :meth:`primary`'s answer).
        self.servers: list[RedisServer] = [self.primary_server]
        self.sentinels: list[Sentinel] = []

    def start(self) -> None:
        if not redis_available():
            raise RuntimeError("redis-server is not installed (scripts/test installs it)")
        self.primary_server.start()
        port = self.primary_server.port
        for n in range(1, self.replica_count + 1):
            extra = (*REPLICATION, *GUARD, "--replicaof", "127.0.0.1", str(port))
            replica = RedisServer(self.directory / f"redis-{n}", extra=extra)
            replica.start()
            self.servers.append(replica)
        for n in range(3):
            sentinel = Sentinel(
                self.directory / f"sentinel-{n}",
                port,
                down_after_ms=self.down_after_ms,
                failover_timeout_ms=self.failover_timeout_ms,
            )
            sentinel.start()
            self.sentinels.append(sentinel)
        self.wait_watched()

    def wait_watched(self, timeout: float = 4 * TIMEOUT) -> None:
        """Until every sentinel sees the primary up, every replica up and in sync, and
        the two other sentinels (they find each other through the primary, every 2 s)."""
        deadline = time.monotonic() + timeout
        while not self._watched():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the sentinels did not see the replicas; see {self.directory}")
            time.sleep(0.1)

    def _watched(self) -> bool:
        primary = self.primary()
        for sentinel in self.sentinels:
            client = sentinel.client()
            try:
                state = client.execute_command("SENTINEL", "MASTER", SERVICE)
                replicas = client.execute_command("SENTINEL", "REPLICAS", SERVICE)
            except redis.RedisError:
                return False
            finally:
                client.close()
            state = _pairs(state)
            up = [
                r
                for r in map(_pairs, replicas)
                if "down" not in r["flags"] and r.get("master-link-status") == "ok"
            ]
            if "down" in state["flags"] or int(state["num-other-sentinels"]) < 2:
                return False
            if int(state["port"]) != primary.port or len(up) < self.live_replicas():
                return False
        return True

    def live_replicas(self) -> int:
        """The running servers that are not the primary."""
        primary = self.primary()
        return sum(1 for s in self.servers if s.running and s is not primary)

    def url(self, db: int = 0) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}/{db}"

    def named_primary(self) -> int | None:
        """The primary's port as the sentinels name it (the first that answers)."""
        for sentinel in self.sentinels:
            client = sentinel.client()
            try:
                found = client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
            except redis.RedisError:
                continue
            finally:
                client.close()
            if found:
                return int(found[1])
        return None

    def primary(self) -> RedisServer:
        port = self.named_primary()
        (found,) = [s for s in self.servers if s.port == port]
        return found

    def promoted(self, old: RedisServer, timeout: float = 3 * TIMEOUT) -> RedisServer:
        """Wait until every sentinel names a primary other than ``old``, and it answers
        as one (``ROLE`` master); that server."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ports = set()
            for sentinel in self.sentinels:
                client = sentinel.client()
                try:
                    found = client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
                    ports.add(int(found[1]))
                except (redis.RedisError, TypeError):
                    ports.add(-1)
                finally:
                    client.close()
            if len(ports) == 1 and old.port not in ports and -1 not in ports:
                server = self.primary()
                if role(server) == "master":
                    return server
            time.sleep(0.05)
        raise RuntimeError(f"no replica was promoted in {timeout} s; see {self.directory}")

    def stop(self) -> None:
        """Stop everything (SIGKILL: a test's throwaway copies; a paused one too)."""
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in self.servers:
            server.kill()


def role(server: RedisServer) -> str:
    """``master`` or ``slave`` (or ``down``), as ``server`` answers ``ROLE``."""
    client = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=1)
    try:
        found = client.execute_command("ROLE")
        value = found[0]
        return value.decode() if isinstance(value, bytes) else str(value)
    except redis.RedisError:
        return "down"
    finally:
        client.close()


def _pairs(flat: object) -> dict[str, str]:
    """A sentinel's reply ``[name, value, name, value…]`` (or a dict already) as a dict."""
    if isinstance(flat, dict):
        return {str(k): str(v) for k, v in flat.items()}
    assert isinstance(flat, list)
    return {str(flat[i]): str(flat[i + 1]) for i in range(0, len(flat), 2)}
