"""``chemmy tables``, ``balance``, ``deposit`` and ``history`` against a real server,
with ``--json`` for machines and plain text for people; and their errors."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from client_cli.bot import Bot, play_bots
from client_cli.main import main
from tests.kit.timing import scaled

ROOT = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.fixture
def as_player(
    monkeypatch: pytest.MonkeyPatch, make_token: Callable[..., str], chemmy_server: Any
) -> Callable[[str], str]:
    """Set ``CHEMMY_TOKEN`` and ``CHEMMY_URL`` for a lasting player; returns the token."""

    def use(player: str) -> str:
        tok = make_token(player, player.split("-")[-1].capitalize())
        monkeypatch.setenv("CHEMMY_TOKEN", tok)
        monkeypatch.setenv("CHEMMY_URL", chemmy_server.url)
        return tok

    return use


def test_tables(chemmy_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_json(capsys, "tables", "--url", chemmy_server.url)
    by_id = {t["table"]: t for t in result["tables"]}
    assert {"tui", "bots", "scripts", "lobby"} <= set(by_id)
    assert by_id["lobby"]["limits"] == {
        "min": 10_000,
        "max": 1_000_000,
        "tie_max": 150_000,
        "side_max": 150_000,
    }
    assert by_id["scripts"]["seats"] == 14

    code, out, _ = run(capsys, "tables", "--url", chemmy_server.url, "--guest")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "TABLE",
        "NAME",
        "LIMITS",
        "TIE",
        "MAX",
        "SEATS",
        "PHASE",
        "SHOE",
        "COUP",
    ]
    lobby = next(line for line in lines if line.startswith("lobby"))
    assert "100.00-10,000.00" in lobby and "1,500.00" in lobby


def test_balance_and_deposit(
    capsys: pytest.CaptureFixture[str], as_player: Callable[[str], str]
) -> None:
    as_player("script-carol")
    before = run_json(capsys, "balance")
    assert before["player"] == "script-carol" and before["guest"] is False
    assert before["balance"] == 100_000 and before["available"] == 100_000

    deposit = run_json(capsys, "deposit", "25.50", "--key", "carol-1")
    assert (
        deposit["deposited"] == 2550 and deposit["balance"] == 102_550 and not deposit["duplicate"]
    )
    again = run_json(capsys, "deposit", "25.50", "--key", "carol-1")  # a retry counts once
    assert again["duplicate"] and again["balance"] == 102_550
    assert run_json(capsys, "balance")["balance"] == 102_550

    code, out, _ = run(capsys, "deposit", "1,000")
    assert code == 0 and out.startswith("Deposited 1,000.00: balance 2,025.50")
    code, out, _ = run(capsys, "balance")
    assert code == 0 and out.startswith("Balance 2,025.50 — Carol (script-carol)")


def test_a_token_on_the_command_line(
    chemmy_server: Any, capsys: pytest.CaptureFixture[str], make_token: Callable[..., str]
) -> None:
    tok = make_token("script-dave", "Dave")
    result = run_json(capsys, "balance", "--url", chemmy_server.url, "--token", tok)
    assert result["player"] == "script-dave" and result["name"] == "Dave"


async def test_history_after_playing(
    chemmy_server: Any,
    make_token: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bot with a token plays three rounds; ``chemmy history`` shows them, and their
    net is what the balance moved."""
    tok = make_token("script-erin", "Erin")
    bot = Bot(
        url=chemmy_server.url,
        table="scripts",
        name="Erin",
        strategy="random",
        rounds=3,
        rng=random.Random(5),
        token=tok,
    )
    (report,) = await play_bots([bot], timeout=scaled(60))
    assert report.ok, report
    monkeypatch.setenv("CHEMMY_TOKEN", tok)
    proc = subprocess.run(
        [sys.executable, "-m", "client_cli", "history", "--url", chemmy_server.url, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    history = json.loads(proc.stdout)
    assert history["player"] == "script-erin"
    assert len(history["rounds"]) == 3
    assert history["net"] == report.final_balance - report.start_balance
    newest = history["rounds"][0]
    assert newest["table"] == "scripts" and newest["stake"] >= 1000
    assert newest["balance_after"] == report.final_balance
    assert sum(r["net"] for r in history["rounds"]) == history["net"]

    proc = subprocess.run(
        [sys.executable, "-m", "client_cli", "history", "--url", chemmy_server.url, "--limit", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("ROUND") and lines[1].startswith("scripts-")
    assert lines[-1].startswith("2 rounds, net ")


def test_a_guest_gets_a_note(chemmy_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "history", "--url", chemmy_server.url, "--guest")
    assert code == 0 and out.startswith("No rounds recorded")
    assert "--token" in err


def test_errors(
    chemmy_server: Any,
    capsys: pytest.CaptureFixture[str],
    make_token: Callable[..., str],
    refused_url: str,
) -> None:
    code, out, err = run(capsys, "tables", "--url", refused_url)
    assert code == 1 and not out and err.startswith("chemmy: tables: cannot connect")
    code, _, err = run(capsys, "balance", "--url", chemmy_server.url, "--token", "not-a-token")
    assert code == 1 and "refused hello" in err and "not-a-token" not in err
    code, _, err = run(capsys, "deposit", "12.345", "--url", chemmy_server.url)
    assert code == 2 and "two decimals" in err
    code, _, err = run(capsys, "deposit", "0", "--url", chemmy_server.url)
    assert code == 2 and "positive" in err
    code, _, err = run(
        capsys,
        "deposit",
        "1000000",
        "--url",
        chemmy_server.url,
        "--token",
        make_token("script-rich"),
    )
    assert code == 1 and "bad_amount" in err
    code, _, err = run(capsys, "tables", "--url", "http://example.com")
    assert code == 2 and "ws://" in err
    code, _, err = run(capsys, "history", "--limit", "101")
    assert code == 2


def test_verify_server_errors(
    chemmy_server: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "verify", "--url", chemmy_server.url, "--table", "lobby")
    assert code == 2 and "no revealed shoe" in err
    code, _, err = run(capsys, "verify", "--url", chemmy_server.url)
    assert code == 2 and "--table" in err
    code, _, err = run(capsys, "verify")
    assert code == 2 and "FILE" in err
    record = tmp_path / "r.json"
    record.write_text("{}")
    code, _, err = run(capsys, "verify", str(record), "--url", chemmy_server.url, "--table", "bots")
    assert code == 2 and "not both" in err
