"""The one launcher of server subprocesses: port 0, and the listening line says the port.

:class:`ServerProcess` runs ``python -m server.process.main`` (``chemmy-server``) from the
repository root on ``--port 0`` with a database file and a TOML config of its own,
reads its stderr on a thread until the server prints
``chemmy-server listening on ws://HOST:PORT``, and so learns the port the server itself
bound: no port is chosen beforehand, so no other process can take it in between (the
race of "bind port 0, close, hand the number to the child"). It can be stopped as a
crash test needs: :meth:`~Process.kill` (SIGKILL: no drain, no flush),
:meth:`~Process.terminate` (SIGTERM: drain, exit status), and started again on the same
database with :meth:`~Process.start` (on a new port, read :attr:`~Process.url` again).

:class:`Process` is the same for any child that prints a ``listening on ws://HOST:PORT``
line (the benchmarks' bare ``websockets`` servers), or another line that says it is
ready, or none (``ready=None``: the caller checks, as scripts/cluster does for Redis and
nginx, :mod:`.local`). A child may also write every line to a log file (``log``) and run
in a session of its own that dies with this process (``own_session``: Ctrl-C reaches
only the parent, which stops it in order). :func:`refused_port` is a port
nothing listens on, held bound for as long as it is needed, for tests of a client that
cannot connect.

Every wait is scaled by ``CHEMMY_TESTS_TIMEOUT_FACTOR`` (:mod:`.timing`). The child's
environment is this process's without any ``CHEMMY_*`` variable (a developer's own
settings never reach a test server), or the caller's ``base_env``, plus what the caller
gives (``env``). This module must never
kill a process it did not start.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from .timing import scaled

#: The repository root: children run there, so ``python -m server...`` is this checkout's.
ROOT = Path(__file__).resolve().parents[2]

#: What a child prints on stderr once it listens: a line that ends ``listening on
#: ws://HOST:PORT``.
LISTENING = re.compile(r"listening on ws://(?P<host>[^\s/:]+):(?P<port>\d+)$")

#: The line ``chemmy-server`` prints once it listens (``server/process/main.py``), and no
#: log line (the server also logs "listening on ..." before it is ready to say so).
SERVER_LISTENING = re.compile(r"^chemmy-server listening on ws://(?P<host>[^\s/:]+):(?P<port>\d+)$")

#: How many of a child's last stderr lines are kept (for failure messages).
LOG_LINES = 5000


def _die_with_parent() -> None:
    """In the child, before exec (Linux): SIGTERM when the parent dies, even by SIGKILL,
    so nothing outlives it. (libc is loaded beforehand: nothing is imported here, after
    the fork, while the parent's stderr threads run.)"""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


_PRCTL: Callable[..., int] | None
try:
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _PRCTL = None


class Process:
    """A child process that prints ``listening on ws://HOST:PORT`` on stderr once ready.

    ``args`` is the command line; ``env`` is added to ``base_env`` (default: this
    process's environment less its ``CHEMMY_*`` variables). The child starts with
    :meth:`start`; its stderr (and its stdout, with ``merge_stdout``) is read on a thread
    into :attr:`log`, and appended to the file ``log_file`` if given, for as long as it
    runs. ``ready`` is the line that says it is ready (``None``: :meth:`start` does not
    wait); ``own_session``: the child runs in a session of its own, and gets SIGTERM if
    this process dies.
    """

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        ready: re.Pattern[str] | None = LISTENING,
        cwd: Path = ROOT,
        base_env: Mapping[str, str] | None = None,
        log_file: Path | None = None,
        merge_stdout: bool = False,
        own_session: bool = False,
    ) -> None:
        self.args = list(args)
        self.env = dict(env or {})
        self.base_env = None if base_env is None else dict(base_env)
        self.ready = ready
        self.cwd = cwd
        self.log_file = log_file
        self.merge_stdout = merge_stdout
        self.own_session = own_session
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: collections.deque[str] = collections.deque(maxlen=LOG_LINES)
        self.host = "127.0.0.1"
        self.port = 0
        self.starts = 0
        self._pump: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.args[:4]!r}, port={self.port}, running={self.running})"

    # -- where it listens --------------------------------------------------------------
    @property
    def url(self) -> str:
        """``ws://HOST:PORT`` as the child printed it (the last start's)."""
        assert self.port, "not started"
        return f"ws://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self, lines: int = 40) -> str:
        """The child's last ``lines`` lines of stderr."""
        return "\n".join(list(self.log)[-lines:])

    # -- starting ----------------------------------------------------------------------
    def args_for_start(self) -> list[str]:
        """The command line of the next start (a subclass may change it)."""
        return list(self.args)

    def start(self, timeout: float | None = None) -> None:
        """Start the child and wait (``timeout``, default scaled 30 s) until it says where
        it listens; :attr:`port` and :attr:`url` are then that. Raises, with the child's
        last lines, if it exits or says nothing in time. (With ``ready`` None, returns
        once started.)"""
        assert not self.running, "already running"
        if self.base_env is not None:
            env = dict(self.base_env)
        else:
            env = {k: v for k, v in os.environ.items() if not k.startswith("CHEMMY_")}
        env.update(self.env)
        args = self.args_for_start()
        self.port = 0
        proc = subprocess.Popen(
            args,
            cwd=self.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            # merged: stderr goes where stdout does, the one pipe read here
            stdout=subprocess.PIPE if self.merge_stdout else subprocess.DEVNULL,
            stderr=subprocess.STDOUT if self.merge_stdout else subprocess.PIPE,
            start_new_session=self.own_session,
            preexec_fn=_die_with_parent if self.own_session else None,
        )
        self.proc = proc
        self.starts += 1
        ready = threading.Event()
        pattern = self.ready
        log_file = open(self.log_file, "a") if self.log_file is not None else None  # noqa: SIM115

        output = proc.stdout if self.merge_stdout else proc.stderr

        def pump() -> None:
            assert output is not None
            with output, log_file or contextlib.nullcontext():
                for raw in output:
                    line = raw.decode("utf-8", "replace").rstrip()
                    self.log.append(line)
                    if log_file is not None:
                        log_file.write(line + "\n")
                        log_file.flush()
                    if pattern is not None and not ready.is_set():
                        found = pattern.search(line)
                        if found is not None:
                            self.host, self.port = found["host"], int(found["port"])
                            ready.set()
            ready.set()

        self._pump = threading.Thread(target=pump, name=f"stderr-{proc.pid}", daemon=True)
        self._pump.start()
        if pattern is None:
            return
        if not ready.wait(timeout if timeout is not None else scaled(30)) or not self.port:
            self.kill()
            raise AssertionError(
                f"{self.args[:4]} did not say it was listening:\n{self.log_text(30)}"
            )

    # -- stopping ----------------------------------------------------------------------
    def send_signal(self, sig: int) -> None:
        """Send ``sig`` (e.g. SIGTERM to start a drain) without waiting."""
        assert self.proc is not None, "not started"
        self.proc.send_signal(sig)

    def wait_exit(self, timeout: float | None = None) -> int:
        """Wait (default scaled 15 s) for the child to exit; its exit status."""
        assert self.proc is not None, "not started"
        code = self.proc.wait(timeout if timeout is not None else scaled(15))
        if self._pump is not None:
            self._pump.join(scaled(15))
        return code

    def kill(self) -> int | None:
        """``kill -9``: no drain, no close, no flush. Harmless when not running; returns
        the exit status (None if never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        return self.wait_exit()

    def terminate(self, timeout: float | None = None) -> int:
        """SIGTERM (the server drains), then wait (default scaled 15 s); the exit status."""
        self.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def stop(self, timeout: float | None = None) -> int | None:
        """Stop the child however it takes: SIGTERM, and SIGKILL if it is still there
        after ``timeout`` (default scaled 15 s). Harmless when not running."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.wait_exit(timeout)
            except subprocess.TimeoutExpired:
                pass
        return self.kill()

    def __enter__(self) -> Process:
        if not self.running:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class ServerProcess(Process):
    """``python -m server.process.main --port 0`` on one database file, restartable.

    ``home`` is a directory for its files: the SQLite database (``db``, default
    ``home/chemmy.sqlite3``) and, when ``config`` (TOML text) is given,
    ``home/chemmy.toml``. ``args`` are more ``chemmy-server`` flags, ``env`` more
    environment variables. Every start (the first, or after a kill) uses the same
    database and config, on a new port, or with ``keep_port`` on the first one's.
    """

    def __init__(
        self,
        home: Path,
        config: str | None = None,
        *args: str,
        env: Mapping[str, str] | None = None,
        db: Path | None = None,
        keep_port: bool = False,
        base_env: Mapping[str, str] | None = None,
        log_file: Path | None = None,
        own_session: bool = False,
    ) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.keep_port = keep_port
        self.home = home
        self.db = db or home / "chemmy.sqlite3"
        self.config: Path | None = None
        if config is not None:
            self.config = home / "chemmy.toml"
            self.config.write_text(config)
        command = [sys.executable, "-m", "server.process.main", "--host", "127.0.0.1"]
        command += ["--port", "0", "--db", str(self.db)]
        if self.config is not None:
            command += ["--config", str(self.config)]
        super().__init__(
            [*command, *args],
            env=env,
            ready=SERVER_LISTENING,
            base_env=base_env,
            log_file=log_file,
            own_session=own_session,
        )
        self._last_port = 0

    def args_for_start(self) -> list[str]:
        """With ``keep_port``, a restart listens where the first start did (a browser
        page reconnects to the URL it was given)."""
        args = list(self.args)
        if self.keep_port and self._last_port:
            args[args.index("--port") + 1] = str(self._last_port)
        return args

    def start(self, timeout: float | None = None) -> None:
        super().start(timeout)
        self._last_port = self.port


@contextlib.contextmanager
def refused_port(host: str = "127.0.0.1") -> Iterator[int]:
    """A TCP port on ``host`` where a connection is refused, for as long as the block runs.

    The port is bound here and never listened on, so a connection gets RST at once, and
    no other process can listen on it meanwhile (which a number picked and released
    could not promise).
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        yield int(sock.getsockname()[1])


def run_bench(
    name: str, *args: str, out: Path | None = None, timeout: float = 120.0
) -> tuple[subprocess.CompletedProcess[str], Any]:
    """Run ``python -m bench.NAME ARGS`` from the root, as a person would (its stdout
    kept), asserting it exits 0; with ``out``, ``--json OUT`` is passed and what it wrote
    is returned beside the finished process (else None)."""
    command = [sys.executable, "-m", f"bench.{name}", *args]
    if out is not None:
        command += ["--json", str(out)]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=scaled(timeout), check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done, (json.loads(out.read_text()) if out is not None else None)
