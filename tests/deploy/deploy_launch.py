"""A small launcher of ``chemmy-server`` subprocesses for the deploy tests.

:class:`ServerProcess` has the shape of the shared test toolkit's launcher (the
``kit.launch.ServerProcess`` being written for every test folder): it runs
``python -m server.net.main --port 0`` from the repository root, reads the child's stderr
on a thread until the server prints ``chemmy-server listening on ws://HOST:PORT``, and so
learns the port the server itself bound. :meth:`~ServerProcess.terminate` sends SIGTERM
(the server drains), :meth:`~ServerProcess.kill` SIGKILL, :meth:`~ServerProcess.stop`
whatever it takes. When the toolkit lands, the deploy tests import it instead and this
module goes: they use nothing the toolkit's launcher does not have.

The child's environment is this process's without any ``CHEMMY_*`` variable (a
developer's own settings never reach a test server), plus ``env``. This module never
kills a process it did not start.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"listening on ws://(?P<host>[^\s/]+):(?P<port>\d+)")
#: Multiply every wait by this on a slow machine (as every test folder does).
TIMEOUT_FACTOR = float(os.environ.get("CHEMMY_TESTS_TIMEOUT_FACTOR", "1"))

__all__ = ["ROOT", "TIMEOUT_FACTOR", "ServerProcess", "scaled"]


def scaled(seconds: float) -> float:
    """A timeout, scaled for slow machines."""
    return seconds * TIMEOUT_FACTOR


class ServerProcess:
    """``chemmy-server --port 0`` with a TOML config of its own in ``home``."""

    def __init__(
        self,
        home: Path,
        config: str | None = None,
        *args: str,
        env: Mapping[str, str] | None = None,
    ) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.db = home / "chemmy.sqlite3"
        command = [sys.executable, "-m", "server.net.main", "--host", "127.0.0.1"]
        command += ["--port", "0", "--db", str(self.db)]
        if config is not None:
            self.config = home / "chemmy.toml"
            self.config.write_text(config)
            command += ["--config", str(self.config)]
        self.args = [*command, *args]
        self.env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: collections.deque[str] = collections.deque(maxlen=5000)
        self.host = "127.0.0.1"
        self.port = 0
        self._pump: threading.Thread | None = None

    @property
    def url(self) -> str:
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
        return "\n".join(list(self.log)[-lines:])

    def start(self, timeout: float | None = None) -> None:
        """Start and wait until the server says where it listens."""
        assert not self.running, "already running"
        env = {k: v for k, v in os.environ.items() if not k.startswith("CHEMMY_")}
        env.update(self.env)
        self.port = 0
        proc = subprocess.Popen(
            self.args,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.proc = proc
        ready = threading.Event()

        def pump() -> None:
            assert proc.stderr is not None
            with proc.stderr:
                for raw in proc.stderr:
                    line = raw.decode("utf-8", "replace").rstrip()
                    self.log.append(line)
                    if not ready.is_set():
                        found = LISTENING.search(line)
                        if found is not None:
                            self.host, self.port = found["host"], int(found["port"])
                            ready.set()
            ready.set()

        self._pump = threading.Thread(target=pump, name=f"stderr-{proc.pid}", daemon=True)
        self._pump.start()
        if not ready.wait(timeout if timeout is not None else scaled(30)) or not self.port:
            self.kill()
            raise AssertionError(f"chemmy-server did not start:\n{self.log_text(30)}")

    def send_signal(self, sig: int) -> None:
        assert self.proc is not None, "not started"
        self.proc.send_signal(sig)

    def wait_exit(self, timeout: float | None = None) -> int:
        assert self.proc is not None, "not started"
        code = self.proc.wait(timeout if timeout is not None else scaled(15))
        if self._pump is not None:
            self._pump.join(scaled(15))
        return code

    def kill(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        return self.wait_exit()

    def terminate(self, timeout: float | None = None) -> int:
        self.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def stop(self, timeout: float | None = None) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.wait_exit(timeout)
            except subprocess.TimeoutExpired:
                pass
        return self.kill()
