"""Fixtures for the online client tests: a real ``chemmy-server`` in a subprocess.

The server runs once per test session on a free port, with a temporary SQLite file and
a TOML config whose tables have short timers (so a croupier's timeout never holds a
test up for long), guest play on, and an HS256 secret so tests can make player tokens
(:func:`token`) for identities that survive a reconnect. Each test module plays at its
own tables, so the tests do not see each other's coups. ``/healthz`` says when it is
up; at the end it gets SIGTERM (then SIGKILL).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# helpers.py (frames, waiting on the headless app) under a name unique on sys.path.
_spec = importlib.util.spec_from_file_location(
    "client_helpers", Path(__file__).with_name("helpers.py")
)
assert _spec is not None and _spec.loader is not None
if "client_helpers" not in sys.modules:
    _helpers = importlib.util.module_from_spec(_spec)
    sys.modules["client_helpers"] = _helpers
    _spec.loader.exec_module(_helpers)
SECRET = "chemmy-test-secret-0123456789abcdef-0123456789"
START_TIMEOUT = 20.0

SHORT = "{ betting = 1, squeeze = 2, third_card = 2, shoe_offer = 2, cut = 2, grace = 5 }"
# Player-driven tables: a player's action closes each step early; the timers only
# need to be long enough for a headless UI to act within them.
RELAXED = "{ betting = 15, squeeze = 20, third_card = 20, shoe_offer = 20, cut = 20, grace = 30 }"

CONFIG = f"""
jwt_secret = "{SECRET}"

[[tables]]
id = "tui"
name = "TUI round"
tier = "1-100"
timers = {RELAXED}

[[tables]]
id = "tui-resume"
name = "TUI resume"
tier = "1-100"
timers = {RELAXED}

[[tables]]
id = "guest-resume"
name = "Guest resume"
tier = "1-100"
timers = {RELAXED}

[[tables]]
id = "tui-chat"
name = "TUI chat"
tier = "1-100"
timers = {RELAXED}

[[tables]]
id = "tui-roads"
name = "TUI roads"
tier = "1-100"
timers = {SHORT}

[[tables]]
id = "bots"
name = "Bots 6 decks"
tier = "1-100"
decks = 6
stop_offset = 100
timers = {SHORT}

[[tables]]
id = "bots-cli"
name = "Bots CLI"
tier = "1-100"
timers = {SHORT}

[[tables]]
id = "scripts"
name = "Scripts"
tier = "10-1000"
timers = {SHORT}

[[tables]]
id = "lobby"
name = "Lobby only"
tier = "100-10000"
"""


@dataclass(frozen=True)
class ChemmyServer:
    url: str
    port: int
    secret: str
    log: Path
    process: subprocess.Popen[bytes]

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
            return bool(r.status == 200)
    except (OSError, urllib.error.URLError):
        return False


@pytest.fixture(scope="session")
def chemmy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChemmyServer]:
    """A running server with the tables of :data:`CONFIG`."""
    home = tmp_path_factory.mktemp("chemmy-server")
    config = home / "server.toml"
    config.write_text(CONFIG)
    log = home / "server.log"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHEMMY_")}
    env["PYTHONPATH"] = str(ROOT)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "server.net.main",
                "--port",
                str(port),
                "--db",
                str(home / "chemmy.sqlite3"),
                "--config",
                str(config),
                "--log-format",
                "json",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = ChemmyServer(f"ws://127.0.0.1:{port}", port, SECRET, log, proc)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(port):
            if proc.poll() is not None:
                pytest.fail(f"chemmy-server exited with {proc.returncode}:\n{server.log_text()}")
            if time.monotonic() > deadline:
                pytest.fail(
                    f"chemmy-server not healthy after {START_TIMEOUT} s:\n{server.log_text()}"
                )
            time.sleep(0.05)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def token(player: str, name: str | None = None) -> str:
    """A player token the test server accepts (HS256 with :data:`SECRET`)."""
    from server.net.auth import make_token

    return make_token(SECRET, player, name, ttl=3600)


@pytest.fixture
def make_token() -> Callable[..., str]:
    """``make_token(player, name=None)``: a token for a lasting identity."""
    return token


@pytest.fixture(autouse=True)
def client_options_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's saved client Options go to a file of its own, never the user's
    (``$CHEMMY_CLIENT_OPTIONS``; subprocesses inherit it)."""
    path = tmp_path / "client-options.json"
    monkeypatch.setenv("CHEMMY_CLIENT_OPTIONS", str(path))
    return path
