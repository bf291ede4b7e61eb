"""A real ``redis-server`` for tests: started by the test run, never one already running.

:class:`RedisServer` runs ``redis-server`` (Debian package ``redis-server``;
``scripts/test`` installs it) in a temporary directory, on a free loopback port, with
AOF on (``appendonly yes``; ``appendfsync`` as asked, ``everysec`` by default) and no RDB
snapshots, and stops it. A port is picked by binding port 0, and if another process
takes it before Redis does, Redis fails to bind and the next port is tried, so two
test runs never share a server. :meth:`stop`, :meth:`kill` and :meth:`start` (again, on
the same port and directory, so the AOF is replayed) let a test take Redis away and
bring it back mid-test; :meth:`flush` empties it between tests.

This module must never connect to a Redis it did not start.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import redis

__all__ = ["RedisServer", "redis_available"]

#: How long Redis may take to start or stop, in seconds (scaled for busy machines).
TIMEOUT = 10.0 * float(os.environ.get("CHEMMY_TESTS_TIMEOUT_FACTOR", "1"))


def redis_available() -> bool:
    """Whether ``redis-server`` is installed."""
    return shutil.which("redis-server") is not None


def _candidate_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_ours(
    command: Sequence[str], port: int, ours: Callable[[redis.Redis], bool]
) -> subprocess.Popen[bytes] | None:
    """Start ``command``, a ``redis-server`` to listen on ``port``, and wait until it
    answers: the process when ``ours(client)`` says it is ours (not a stranger that took
    the port meanwhile), else None, the process stopped (the caller tries another port,
    or the same one again). Shared by :class:`RedisServer` and tests/redis_sentinel.py."""
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1, decode_responses=True)
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return None  # could not bind (or another failure): the log says
            try:
                if ours(client):
                    return process
                break
            except redis.RedisError:
                time.sleep(0.02)
    finally:
        client.close()
    process.kill()
    process.wait()
    return None


class RedisServer:
    """One ``redis-server`` process in ``directory``; :attr:`port` once started."""

    def __init__(
        self, directory: Path, *, appendfsync: str = "everysec", extra: Sequence[str] = ()
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.appendfsync = appendfsync
        #: More ``redis-server`` flags (``--replicaof HOST PORT``: tests/redis_sentinel.py).
        self.extra = list(extra)
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Start Redis: on a new free port the first time, on the same port after."""
        if self.running:
            return
        if not redis_available():
            raise RuntimeError("redis-server is not installed (scripts/test installs it)")
        for _attempt in range(20):
            port = self.port or _candidate_port()
            if self._try_start(port):
                self.port = port
                return
            if self.port:  # our own port is taken meanwhile: wait for it
                time.sleep(0.2)
        raise RuntimeError(f"redis-server did not start; see {self.directory / 'redis.log'}")

    def _try_start(self, port: int) -> bool:
        command = [
            "redis-server",
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--dir", str(self.directory),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(self.directory / "redis.log"),
            "--databases", "16",
            *self.extra,
        ]  # fmt: skip
        ours = str(self.directory.resolve())
        process = start_ours(command, port, lambda c: c.config_get("dir").get("dir") == ours)
        self.process = process or self.process
        return process is not None

    def stop(self) -> None:
        """Stop Redis cleanly (SIGTERM: the AOF is flushed). Harmless when stopped."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        process.send_signal(signal.SIGCONT)  # a paused one hears the SIGTERM now
        try:
            process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def kill(self) -> None:
        """Kill Redis at once (SIGKILL): what ``appendfsync`` had not written is lost."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def pause(self) -> None:
        """Freeze Redis (SIGSTOP): its connections stay open, nothing is answered."""
        if self.process is not None:
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused Redis go on (SIGCONT)."""
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        self.stop()
        self.start()

    def flush(self) -> None:
        """Empty every database of this server (our own, never another)."""
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=TIMEOUT)
        try:
            client.flushall()
        finally:
            client.close()
