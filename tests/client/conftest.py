"""Fixtures for the online client tests: a real ``chemmy-server`` in a subprocess.

The server runs once per test session, started by the test kit's launcher
(:class:`kit.ServerProcess`: port 0, the port read from its listening line), with a
temporary SQLite file and a TOML config whose tables have short timers (so a croupier's
timeout never holds a test up for long), guest play on, and an HS256 secret so tests
can make player tokens (:func:`token`) for identities that survive a reconnect. Each
test module plays at its own tables, so the tests do not see each other's coups. At the
end it gets SIGTERM (then SIGKILL). ``refused_url`` is a server address nothing answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.kit import ServerProcess, refused_port

SECRET = "chemmy-test-secret-0123456789abcdef-0123456789"

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
id = "tui-i18n"
name = "TUI languages"
tier = "1-100"
timers = {RELAXED}

[[tables]]
id = "tui-limits"
name = "TUI limits"
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
id = "tui-no-seat"
name = "TUI without a seat"
tier = "1-100"
timers = {RELAXED}

[[tables]]
id = "bots-no-seat"
name = "Bots without a seat"
tier = "1-100"
timers = {SHORT}

[[tables]]
id = "bots-contribute"
name = "Bots contributing"
tier = "1-100"
timers = {SHORT}

[[tables]]
id = "bots-multi-a"
name = "Bots, first of two"
tier = "1-100"
timers = {SHORT}

[[tables]]
id = "bots-multi-b"
name = "Bots, second of two"
tier = "1-100"
timers = {SHORT}

[[tables]]
id = "bots-token"
name = "Token bots"
tier = "1-100"
timers = {SHORT}

[[tables]]
id = "tui-multi-a"
name = "TUI first of two"
tier = "1-100"
timers = {RELAXED}

[[tables]]
id = "tui-multi-b"
name = "TUI second of two"
tier = "1-100"
timers = {RELAXED}

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


@pytest.fixture(scope="session")
def chemmy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A running server with the tables of :data:`CONFIG` (its ``url``: where it listens)."""
    server = ServerProcess(
        tmp_path_factory.mktemp("chemmy-server"),
        CONFIG,
        "--log-format",
        "json",
        "--log-level",
        "warning",
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def refused_url() -> Iterator[str]:
    """``ws://127.0.0.1:PORT`` where a connection is refused (the port is held, unused)."""
    with refused_port() as port:
        yield f"ws://127.0.0.1:{port}"


def token(
    player: str,
    name: str | None = None,
    language: str | None = None,
    currency: str | None = None,
) -> str:
    """A player token the test server accepts (HS256 with :data:`SECRET`)."""
    from server.process.auth import make_token

    return make_token(SECRET, player, name, ttl=3600, language=language, currency=currency)


@pytest.fixture
def make_token() -> Callable[..., str]:
    """``make_token(player, name=None, language=None, currency=None)``: a token for a
    lasting identity."""
    return token


@pytest.fixture(autouse=True)
def play_money() -> Iterator[None]:
    """Each test starts, and leaves, with amounts shown as play money (the currency is
    the process's, set by a hello: :func:`client_cli.money.set_currency`)."""
    from client_cli.money import set_currency

    set_currency(None)
    yield
    set_currency(None)


@pytest.fixture(autouse=True)
def client_options_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's saved client Options go to a file of its own, never the user's
    (``$CHEMMY_CLIENT_OPTIONS``; subprocesses inherit it)."""
    path = tmp_path / "client-options.json"
    monkeypatch.setenv("CHEMMY_CLIENT_OPTIONS", str(path))
    return path
