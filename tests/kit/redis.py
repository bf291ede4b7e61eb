"""The one launcher of ``redis-server``: every Redis the tests, the benchmarks and
``scripts/cluster`` start, on a free loopback port, never one already running.

- :class:`RedisServer`: a data server in a directory of its own. By default the tests'
  settings (AOF on, ``appendfsync`` as asked, ``everysec`` by default, no RDB
  snapshots); or a config file (``config``: deploy/redis.conf, as ``scripts/cluster``
  runs it, :mod:`.local`) with the port, the directory and the log given on the command
  line. :meth:`~RedisServer.stop`, :meth:`~RedisServer.kill`,
  :meth:`~RedisServer.pause`, :meth:`~RedisServer.resume` and :meth:`~RedisServer.start`
  (again, on the same port and directory, so the AOF is replayed) let a test take Redis
  away and bring it back mid-test; :meth:`~RedisServer.flush` empties it between tests.
- :class:`Sentinel`: ``redis-server sentinel.conf --sentinel`` (the same binary),
  monitoring a primary as :data:`SERVICE` with quorum 2: the tests' quick settings, or
  a template (deploy/sentinel.conf) with its port, bind, directory and monitored primary
  replaced.
- :class:`RedisHA`: a primary, ``replicas`` replicas of it (``--replicaof``) and three
  sentinels, waited for until every sentinel sees every replica and the other sentinels
  (a failover needs both); :meth:`RedisHA.primary` is the server the sentinels name
  now, :meth:`RedisHA.promoted` waits until they name another one, and
  :meth:`RedisHA.url` is the ``redis+sentinel://`` store URL.

Every child is started with the kit's launcher (:class:`~.launch.Process`: its output in
``redis.log`` / ``sentinel.log`` in its directory and the last lines in memory, for the
failure message), and, with ``own_session``, in a session of its own that gets SIGTERM
if this process dies (``scripts/cluster``). A port is picked by binding port 0; if
another process takes it before Redis does, Redis fails to bind, or answers as a
stranger (another directory, another config file), and the next port is tried: two
test runs (or two xdist workers) never share a server. Timeouts are scaled by
``CHEMMY_TESTS_TIMEOUT_FACTOR`` (:mod:`.timing`) unless the caller gives its own.

This module must never connect to, stop or signal a Redis it did not start.
"""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import redis

from .launch import Process
from .timing import scaled

__all__ = [
    "GUARD",
    "REPLICATION",
    "SERVICE",
    "TIMEOUT",
    "RedisHA",
    "RedisServer",
    "Sentinel",
    "free_port",
    "redis_available",
    "role",
]

#: How long Redis may take to start or stop, in seconds (scaled for busy machines).
TIMEOUT = scaled(10.0)

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


def redis_available() -> bool:
    """Whether ``redis-server`` is installed."""
    return shutil.which("redis-server") is not None


def free_port() -> int:
    """A loopback port free now. (Redis and nginx cannot report a port 0 they bound, so
    a caller that loses the race to another process retries with another port.)"""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client(port: int, timeout: float = 1.0) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=timeout, decode_responses=True)


class _Child:
    """What :class:`RedisServer` and :class:`Sentinel` share: a ``redis-server`` child
    in ``directory`` started through the kit's launcher, found to be ours by ``ours``
    once it answers."""

    #: The log file in the directory.
    log_name = "redis.log"

    def __init__(
        self,
        directory: Path,
        *,
        name: str,
        env: Mapping[str, str] | None,
        own_session: bool,
        timeout: float | None,
    ) -> None:
        #: What it is called in messages (``scripts/cluster``: "redis", "sentinel-1"...).
        self.name = name
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.env = None if env is None else dict(env)
        self.own_session = own_session
        self.timeout = TIMEOUT if timeout is None else timeout
        self.port = 0
        #: The running child (the kit's launcher), None when stopped.
        self.process: Process | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running

    @property
    def log_file(self) -> Path:
        return self.directory / self.log_name

    def tail(self, lines: int = 20) -> str:
        """The child's last ``lines`` lines of output (the last start's)."""
        return "" if self.process is None else self.process.log_text(lines)

    def _launch(
        self, command: Sequence[str], port: int, ours: Callable[[redis.Redis], bool]
    ) -> bool:
        """Start ``command``, a ``redis-server`` to listen on ``port``, and wait until it
        answers: True when ``ours(client)`` says it is ours (not a stranger that took the
        port meanwhile), else False, the child stopped (the caller tries another port, or
        the same one again)."""
        process = Process(
            command,
            ready=None,
            base_env=self.env,
            log_file=self.log_file,
            merge_stdout=True,
            own_session=self.own_session,
        )
        process.start()
        client = _client(port)
        deadline = time.monotonic() + self.timeout
        try:
            while time.monotonic() < deadline:
                if not process.running:
                    return False  # could not bind (or another failure): the log says
                try:
                    if ours(client):
                        self.process, self.port = process, port
                        return True
                    break
                except redis.RedisError:
                    time.sleep(0.02)
        finally:
            client.close()
        process.kill()
        return False

    def stop(self, timeout: float | None = None) -> int | None:
        """Stop it cleanly (SIGTERM, and SIGCONT so that a paused one hears it; a data
        server flushes its AOF) and wait up to ``timeout`` (default :data:`TIMEOUT`):
        its exit status, or None if it had to be killed (or was not running)."""
        process, self.process = self.process, None
        if process is None or process.proc is None:
            return None
        if process.running:
            process.send_signal(signal.SIGTERM)
            process.send_signal(signal.SIGCONT)
        try:
            return process.wait_exit(self.timeout if timeout is None else timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            return None

    def kill(self) -> None:
        """Kill it at once (SIGKILL): what ``appendfsync`` had not written is lost."""
        process, self.process = self.process, None
        if process is not None:
            process.kill()

    def pause(self) -> None:
        """Freeze it (SIGSTOP): its connections stay open, nothing is answered."""
        if self.running:
            assert self.process is not None
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused one go on (SIGCONT)."""
        if self.running:
            assert self.process is not None
            self.process.send_signal(signal.SIGCONT)


class RedisServer(_Child):
    """One ``redis-server`` data server in ``directory``; :attr:`port` once started.

    Without ``config``: the tests' settings (AOF on with ``appendfsync``, no snapshots,
    16 databases). With ``config`` (a file, e.g. deploy/redis.conf): that file's
    settings, and only the port, the directory and the log given here. ``extra``: more
    flags (``--replicaof HOST PORT``...). ``name``: what messages call it; ``env``: the
    child's whole environment
    (default this process's); ``own_session``: see the module's doc; ``timeout``: for
    each start and stop (default :data:`TIMEOUT`).
    """

    def __init__(
        self,
        directory: Path,
        *,
        appendfsync: str = "everysec",
        extra: Sequence[str] = (),
        config: Path | None = None,
        name: str = "redis",
        env: Mapping[str, str] | None = None,
        own_session: bool = False,
        timeout: float | None = None,
    ) -> None:
        super().__init__(directory, name=name, env=env, own_session=own_session, timeout=timeout)
        self.appendfsync = appendfsync
        self.config = config
        self.extra = list(extra)

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def command(self, port: int) -> list[str]:
        """The command line of a start on ``port``."""
        where = ["--port", str(port), "--dir", str(self.directory), "--daemonize", "no"]
        where += ["--logfile", ""]  # to stdout: the launcher writes it to redis.log
        if self.config is not None:
            return ["redis-server", str(self.config), *where, *self.extra]
        return [
            "redis-server", *where,
            "--bind", "127.0.0.1",
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            "--save", "",
            "--databases", "16",
            *self.extra,
        ]  # fmt: skip

    def start(self) -> None:
        """Start Redis: on a new free port the first time, on the same port after."""
        if self.running:
            return
        if not redis_available():
            raise RuntimeError("redis-server is not installed (scripts/test installs it)")
        ours = str(self.directory.resolve())
        for _attempt in range(20):
            port = self.port or free_port()
            if self._launch(self.command(port), port, lambda c: _config_dir(c) == ours):
                return
            if self.port:  # our own port is taken meanwhile: wait for it
                time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not start; see {self.log_file}:\n{self.tail()}")

    def restart(self) -> None:
        self.stop()
        self.start()

    def flush(self) -> None:
        """Empty every database of this server (our own, never another)."""
        client = _client(self.port, self.timeout)
        try:
            client.flushall()
        finally:
            client.close()


def _config_dir(client: redis.Redis) -> str:
    return str(client.config_get("dir").get("dir"))


class Sentinel(_Child):
    """One ``redis-server --sentinel`` in ``directory``, monitoring the primary on
    loopback port ``primary`` as :data:`SERVICE` (quorum 2). With ``template`` (a
    sentinel.conf's text, deploy/'s): that, its ``port`` and ``sentinel monitor`` lines
    replaced and a loopback ``bind`` and the directory added; else the tests' quick
    settings (``down_after_ms``, ``failover_timeout_ms``)."""

    log_name = "sentinel.log"

    def __init__(
        self,
        directory: Path,
        primary: int,
        *,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 3000,
        template: str | None = None,
        name: str = "sentinel",
        env: Mapping[str, str] | None = None,
        own_session: bool = False,
        timeout: float | None = None,
    ) -> None:
        super().__init__(directory, name=name, env=env, own_session=own_session, timeout=timeout)
        self.primary = primary
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.template = template

    @property
    def config_file(self) -> Path:
        return self.directory / "sentinel.conf"

    def client(self) -> redis.Redis:
        return _client(self.port, 2)

    def config_text(self, port: int) -> str:
        monitor = f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary} 2"
        where = f'bind 127.0.0.1\ndir "{self.directory.resolve()}"\n'
        if self.template is not None:
            text = re.sub(r"(?m)^sentinel monitor .*$", monitor, self.template)
            text = re.sub(r"(?m)^port \d+$", f"port {port}", text)
            return f"{text}\n{where}"
        return (
            f"port {port}\n{where}daemonize no\n{monitor}\n"
            f"sentinel down-after-milliseconds {SERVICE} {self.down_after_ms}\n"
            f"sentinel failover-timeout {SERVICE} {self.failover_timeout_ms}\n"
            f"sentinel parallel-syncs {SERVICE} 1\n"
        )

    def start(self) -> None:
        mine = str(self.config_file.resolve())  # ours: it runs our config file
        for _attempt in range(20):
            port = free_port()
            self.config_file.write_text(self.config_text(port))
            command = ["redis-server", str(self.config_file), "--sentinel"]
            if self._launch(command, port, lambda c: c.info("server").get("config_file") == mine):
                return
        raise RuntimeError(f"{self.name} did not start; see {self.log_file}:\n{self.tail()}")


class RedisHA:
    """A primary, ``replicas`` replicas and three sentinels (see the module's doc), for
    the failover tests (tests/cluster/test_redis_failover.py), each of its servers
    killed (``kill()``, SIGKILL), frozen (``pause()``, SIGSTOP) or let go on
    (``resume()``, SIGCONT) through its :class:`RedisServer`."""

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
                state = _command(client, "SENTINEL", "MASTER", SERVICE)
                replicas = _command(client, "SENTINEL", "REPLICAS", SERVICE)
            except redis.RedisError:
                return False
            finally:
                client.close()
            master = _pairs(state)
            up = [
                r
                for r in map(_pairs, replicas)
                if "down" not in r["flags"] and r.get("master-link-status") == "ok"
            ]
            if "down" in master["flags"] or int(master["num-other-sentinels"]) < 2:
                return False
            if int(master["port"]) != primary.port or len(up) < self.live_replicas():
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
                found = _command(client, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
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
                    found = _command(client, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
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

    def watch_switch(self) -> SwitchWatch:
        """Listen to every sentinel's ``+switch-master`` from now (call it before a kill):
        when the first of them named a new primary (:class:`SwitchWatch`)."""
        return SwitchWatch([s.port for s in self.sentinels])

    def stop(self) -> None:
        """Stop everything (the servers SIGKILLed: a test's throwaway copies; a paused
        one too)."""
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in self.servers:
            server.kill()


class SwitchWatch:
    """When the first sentinel announced a new primary (``+switch-master``: from then on
    its ``SENTINEL MASTERS``, where redis-py's Sentinel pool looks, no longer flags the
    old one down but names the new one), as ``time.monotonic()``; None until one did. A thread a sentinel,
    subscribed when made. It separates what a failover's outage owes to the sentinels
    (their down-after time, their election: a split vote is tried again only after twice
    the failover timeout) from what the servers take once a primary is named."""

    def __init__(self, ports: Sequence[int]) -> None:
        self.at: float | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._switched = threading.Event()
        self._threads: list[threading.Thread] = []
        try:
            for port in ports:
                pubsub = _client(port).pubsub()
                try:  # (confirmed before a kill can happen)
                    pubsub.subscribe("+switch-master")
                    reply = pubsub.get_message(timeout=scaled(2.0))
                    if not reply or reply.get("type") != "subscribe":
                        raise RuntimeError(f"sentinel {port}: +switch-master not confirmed")
                except BaseException:
                    pubsub.close()
                    raise
                thread = threading.Thread(target=self._listen, args=(pubsub,), daemon=True)
                thread.start()
                self._threads.append(thread)
        except BaseException:
            self.close()
            raise

    def _listen(self, pubsub: Any) -> None:
        try:
            while not self._stop.is_set():
                message = pubsub.get_message(timeout=0.05)
                if message is not None and message.get("type") == "message":
                    now = time.monotonic()
                    with self._lock:
                        if self.at is None or now < self.at:
                            self.at = now
                    self._switched.set()
        except redis.RedisError:
            pass  # (the sentinel went away: the others still listen)
        finally:
            pubsub.close()

    def wait(self, timeout: float = 3 * TIMEOUT) -> float:
        """When the first sentinel announced the switch (waiting for it)."""
        if not self._switched.wait(timeout) or self.at is None:
            raise RuntimeError(f"no sentinel announced a new primary in {timeout} s")
        return self.at

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2.0)


def role(server: RedisServer) -> str:
    """``master`` or ``slave`` (or ``down``), as ``server`` answers ``ROLE``."""
    client = _client(server.port)
    try:
        found = _command(client, "ROLE")
        return str(found[0])
    except redis.RedisError:
        return "down"
    finally:
        client.close()


def _command(client: redis.Redis, *args: str) -> Any:
    """A command redis-py has no typed method for (``SENTINEL ...``, ``ROLE``)."""
    return client.execute_command(*args)  # type: ignore[no-untyped-call]


def _pairs(flat: Any) -> dict[str, str]:
    """A sentinel's reply ``[name, value, name, value…]`` (or a dict already) as a dict."""
    if isinstance(flat, dict):
        return {str(k): str(v) for k, v in flat.items()}
    assert isinstance(flat, list)
    return {str(flat[i]): str(flat[i + 1]) for i in range(0, len(flat), 2)}
