"""One way to name the server for every online ``chemmy`` subcommand: ``--url URL``, else
``$CHEMMY_URL``, else the default; a bad URL is a usage error. Against a real server:
``verify --table`` and ``tables`` find it through ``$CHEMMY_URL`` alone."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from client_cli.common import DEFAULT_URL, URL_ENV, server_url
from client_cli.main import CliError, build_parser, main

#: Each online subcommand with the arguments it needs besides the server.
ONLINE: dict[str, list[str]] = {
    "play": [],
    "bot": ["--table", "t1"],
    "tables": [],
    "balance": [],
    "deposit": ["5"],
    "history": [],
    "verify": ["--table", "t1"],
    "transactions": [],
    "void": ["t1-1-1", "--reason", "a test"],
    "table": ["pause", "t1"],
    "break": [],
    "limits": [],
}
OFFLINE = {"coup", "odds", "simulate"}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_subcommand_that_connects_takes_url() -> None:
    commands = subcommands()
    assert set(commands) == set(ONLINE) | OFFLINE, "a new subcommand: list it here"
    for name in ONLINE:
        options = {s for a in commands[name]._actions for s in a.option_strings}
        assert "--url" in options, name


@pytest.mark.parametrize("command", sorted(ONLINE))
def test_url_from_the_flag_the_environment_or_the_default(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    parser = build_parser()
    monkeypatch.delenv(URL_ENV, raising=False)
    assert server_url(parser.parse_args([command, *ONLINE[command]])) == DEFAULT_URL
    monkeypatch.setenv(URL_ENV, "ws://from-env:1")
    assert server_url(parser.parse_args([command, *ONLINE[command]])) == "ws://from-env:1"
    flagged = parser.parse_args([command, *ONLINE[command], "--url", "wss://from-flag:2"])
    assert server_url(flagged) == "wss://from-flag:2"  # the flag wins over the environment
    with pytest.raises(CliError, match="ws://"):
        server_url(parser.parse_args([command, *ONLINE[command], "--url", "http://x"]))


@pytest.mark.parametrize("command", sorted(ONLINE))
def test_a_positional_url_points_to_the_flag(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "ws://127.0.0.1:1", *ONLINE[command]]
    if command in ("deposit", "void", "table"):  # positionals: the URL is one too many
        argv = [command, *ONLINE[command], "ws://127.0.0.1:1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("chemmy: error:") and "--url" in err


def test_the_environment_finds_a_real_server(
    chemmy_server: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(URL_ENV, chemmy_server.url)
    assert main(["tables", "--json"]) == 0
    assert '"lobby"' in capsys.readouterr().out
    assert main(["verify", "--table", "lobby"]) == 2  # reached: no shoe revealed there yet
    assert "no revealed shoe" in capsys.readouterr().err
