"""The offline ``chemmy`` subcommands: coup, odds, simulate, verify.

Most tests call :func:`client_cli.main.main` in-process and read what it printed; one
group runs ``python -m client_cli`` in a real subprocess for every subcommand, on the
happy path and on an error path (exit status 2, one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from client_cli import main as cli
from client_cli.main import main
from server.engine.coup import resolve_coup
from server.engine.shoe import Shoe, commitment, timeout_cut

ROOT = Path(__file__).resolve().parents[2]
FAIRNESS_DOC = ROOT / "docs" / "fairness.md"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(code: int, out: str, err: str, *words: str) -> None:
    """Exit 2, nothing on stdout, one line ``chemmy: error: ...`` on stderr."""
    assert code == 2
    assert out == ""
    assert err.startswith("chemmy: error: ")
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in err


def doc_record() -> dict[str, Any]:
    """The example record of docs/fairness.md (a whole 1-deck shoe)."""
    text = FAIRNESS_DOC.read_text(encoding="utf-8")
    record: dict[str, Any] = json.loads(re.findall(r"```json\n(.*?)```", text, flags=re.S)[0])
    return record


def write_record(tmp_path: Path, record: object, name: str = "shoe.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(record), encoding="utf-8")
    return str(path)


# -- coup ------------------------------------------------------------------------------


def test_coup_prints_hands_totals_draws_outcome(capsys: pytest.CaptureFixture[str]) -> None:
    # §2: P 9s 5h = 4 draws 2d -> 6; B Kd 3c = 3 draws on p3 = 2 -> 4h -> 7.
    code, out, err = run(capsys, "coup", "9s", "Kd", "5h", "3c", "2d", "4h")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == [
        "Player",
        "9s",
        "5h",
        "2d",
        "total",
        "6",
        "drew",
        "a",
        "third",
        "card",
    ]
    assert lines[1].split() == [
        "Banker",
        "Kd",
        "3c",
        "4h",
        "total",
        "7",
        "drew",
        "a",
        "third",
        "card",
    ]
    assert "Natural  none" in out
    assert "Banker wins, 7 to 6" in out
    assert "Pairs    none" in out
    assert "6 used of 6 given" in out


def test_coup_natural_pairs_and_unused_cards(capsys: pytest.CaptureFixture[str]) -> None:
    # §2 natural: P 4s 4d = 8, B 5h 3c = 8, nobody draws; §3: 4s 4d is a Player Pair.
    code, out, _ = run(capsys, "coup", "4s", "5h", "4d", "3c", "Ks", "10h")
    assert code == 0
    assert "stood" in out.splitlines()[0] and "stood" in out.splitlines()[1]
    assert "Natural  Player 8, Banker 8" in out
    assert "Tie, 8 to 8" in out
    assert "Pairs    Player Pair\n" in out
    assert "4 used of 6 given (not used: Ks Th)" in out


def test_coup_accepts_lowercase_and_10(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "coup", "as", "10d", "KC", "qh", "2s", "3s")
    assert code == 0
    assert out == main_out_of(["As", "Td", "Kc", "Qh", "2s", "3s"], capsys)


def main_out_of(cards: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["coup", *cards]) == 0
    return capsys.readouterr().out


def test_coup_output_matches_the_engine(capsys: pytest.CaptureFixture[str]) -> None:
    cards = ["7s", "Kh", "7d", "5c", "9h", "2c"]
    coup = resolve_coup(cards)
    _, out, _ = run(capsys, "coup", *cards)
    assert f"total {coup.player_total}" in out.splitlines()[0]
    assert f"total {coup.banker_total}" in out.splitlines()[1]
    assert ("Player Pair" in out) is coup.player_pair


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["coup", "9s", "Kd", "Xq", "3c"], ["coup", "Xq"]),  # unknown card
        (["coup", "9s", "Kd", "5h"], ["at least 4 cards"]),  # too few cards
        (["coup", "9s", "Kd", "5h", "3c", "2d"], ["more than 5 cards"]),  # draws need a 6th
        (["coup", *["As"] * 9], ["As", "9 times"]),  # §4: 8 decks hold 8 As
        (["coup", "--decks", "1", "As", "As", "Kd", "Kh"], ["As", "2 times"]),
        (["coup", "--decks", "0", "As", "2s", "3s", "4s"], ["--decks"]),
        (["coup", "--decks", "x", "As", "2s", "3s", "4s"], ["--decks"]),
        (["coup"], ["CARD"]),
    ],
)
def test_coup_errors(capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]) -> None:
    assert_usage_error(*run(capsys, *argv), *words)


def test_coup_eight_of_a_card_is_fine(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "coup", *["As"] * 8)
    assert code == 0 and "Tie, 3 to 3" in out  # A A = 2 each; both draw an A
    assert "Pairs    Player Pair, Banker Pair" in out


# -- odds ------------------------------------------------------------------------------


def test_odds_prints_the_reference_figures(capsys: pytest.CaptureFixture[str]) -> None:
    # §10, 8 decks: Banker 0.458597423, Player 0.446246609, Tie 0.095155968; edges
    # Banker 1.0579%, Player 1.2351%, Tie 14.3596%, Player Pair 10.3614% (31/415).
    code, out, err = run(capsys, "odds")
    assert code == 0 and err == ""
    rows = {line.split("  ")[0]: line for line in out.splitlines()}
    assert "0.458597423" in rows["Banker"] and "1.0579%" in rows["Banker"]
    assert "0.446246609" in rows["Player"] and "1.2351%" in rows["Player"]
    assert "0.095155968" in rows["Tie"] and "14.3596%" in rows["Tie"]
    assert f"{31 / 415:.9f}" in rows["Player Pair"] and "10.3614%" in rows["Player Pair"]
    assert "8 decks" in out and "commission table" in out


def test_odds_table_is_aligned(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "odds")
    table = [line for line in out.splitlines() if line.endswith("%")]
    assert len(table) >= 5
    assert len({len(line) for line in table}) == 1  # right-aligned last column
    assert len({line.index("0.") for line in table if "0." in line}) == 1


def test_odds_no_commission(capsys: pytest.CaptureFixture[str]) -> None:
    # §10: no-commission Banker (6 pays half), 8 decks: 1.4581%.
    code, out, _ = run(capsys, "odds", "--no-commission")
    assert code == 0
    rows = {line.split("  ")[0]: line for line in out.splitlines()}
    assert "1.4581%" in rows["Banker"]
    assert "Super 6" in rows
    assert "no-commission table" in out


def test_odds_six_decks(capsys: pytest.CaptureFixture[str]) -> None:
    # §10, 6 decks: Banker 0.458652719, Player 0.446278570, Tie 0.095068711.
    code, out, _ = run(capsys, "odds", "--decks", "6")
    assert code == 0
    for figure in ("0.458652719", "0.446278570", "0.095068711", "312 cards"):
        assert figure in out


@pytest.mark.parametrize(
    "argv", [["odds", "--decks", "0"], ["odds", "--decks", "many"], ["odds", "x"]]
)
def test_odds_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert_usage_error(*run(capsys, *argv))


# -- simulate --------------------------------------------------------------------------


def test_simulate_prints_observed_and_exact(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "simulate", "--shoes", "20", "--seed", "7")
    assert code == 0
    assert out.startswith("Simulated 20 shoes of 8 decks (seed 7): ")
    rows = {line.split("  ")[0]: line.split() for line in out.splitlines()}
    for name in ("Banker", "Player", "Tie"):
        observed, exact = float(rows[name][1]), float(rows[name][2])
        assert abs(observed - exact) < 0.03
    assert rows["Banker"][2] == "0.458597"  # §10
    # the progress bar (stderr is not a terminal here: the plain bar)
    assert "100%" in err and "20/20 shoes" in err
    assert "Traceback" not in err


def test_simulate_is_deterministic_and_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    _, first, err = run(capsys, "simulate", "--shoes", "5", "--seed", "3", "--no-progress")
    _, second, _ = run(capsys, "simulate", "--shoes", "5", "--seed", "3", "--no-progress")
    assert first == second and err == ""
    _, other, _ = run(capsys, "simulate", "--shoes", "5", "--seed", "4", "--no-progress")
    assert other != first


def test_simulate_six_decks(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "--shoes", "3", "--decks", "6", "--no-progress")
    assert code == 0 and "of 6 decks" in out and "0.458653" in out  # §10, 6 decks


def test_simulate_rich_bar_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, err = run(capsys, "simulate", "--shoes", "300")
    assert code == 0 and "Simulated 300 shoes" in out
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["simulate"], ["--shoes"]),
        (["simulate", "--shoes", "0"], ["--shoes"]),
        (["simulate", "--shoes", "ten"], ["--shoes"]),
        (["simulate", "--shoes", "1", "--seed", "-1"], ["--seed"]),
        (["simulate", "--shoes", "1", "--decks", "1000"], ["--decks"]),
    ],
)
def test_simulate_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]
) -> None:
    assert_usage_error(*run(capsys, *argv), *words)


# -- verify ----------------------------------------------------------------------------


def test_verify_ok(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # §4 "Provably fair": the seed matches the commitment and deals every recorded coup.
    code, out, err = run(capsys, "verify", write_record(tmp_path, doc_record()))
    assert code == 0 and err == ""
    assert "OK: seed matches the commitment; 7 coups match the shoe" in out
    assert "1 deck, 7 coups recorded" in out


def test_verify_failed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    record = doc_record()
    record["coups"][2]["player"][0] = "Kc"
    code, out, err = run(capsys, "verify", write_record(tmp_path, record))
    assert code == 1 and err == ""
    assert "FAILED" in out and "coup 3" in out


def test_verify_wrong_commitment(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    record = doc_record() | {"commitment": "ab" * 32}
    code, out, _ = run(capsys, "verify", write_record(tmp_path, record))
    assert code == 1 and "does not match the commitment" in out


def test_verify_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(doc_record())))
    code, out, _ = run(capsys, "verify", "-")
    assert code == 0 and "OK" in out


def test_verify_never_crashes_on_a_short_tail(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A record claiming a coup from the last 5 cards (stop card 7 from the end) fails
    cleanly, exit 1, even where the engine's verify raises."""
    seed = hashlib.sha256(b"x" + (4).to_bytes(4, "big")).digest()
    shoe = Shoe.from_seed(seed, 1)
    cut = timeout_cut(seed, 52)
    shoe.apply_cut(cut)
    shoe.burn()
    coups = []
    while shoe.remaining >= 6:
        coup = resolve_coup(shoe.cards[shoe.position : shoe.position + 6])
        for _ in range(coup.cards_used):
            shoe.draw()
        coups.append({"player": list(coup.player), "banker": list(coup.banker)})
    coups.append({"player": ["As", "2s"], "banker": ["3s", "4s"]})
    record = {
        "decks": 1,
        "commitment": commitment(seed),
        "seed": seed.hex(),
        "cut": cut,
        "stop_offset": 7,
        "coups": coups,
    }
    code, out, err = run(capsys, "verify", write_record(tmp_path, record))
    assert code == 1 and "FAILED" in out and "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json", ["not JSON"]),
        ("[1, 2]", ["not a shoe record"]),
        ('"a string"', ["not a shoe record"]),
        ("", ["not JSON"]),
    ],
)
def test_verify_bad_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, words: list[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    assert_usage_error(*run(capsys, "verify", str(path)), *words)


def test_verify_binary_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert_usage_error(*run(capsys, "verify", str(path)), "cannot read")


@pytest.mark.parametrize("source", ["/no/such/file.json", ".", "https://example.com/shoe"])
def test_verify_unreadable_sources(capsys: pytest.CaptureFixture[str], source: str) -> None:
    assert_usage_error(*run(capsys, "verify", source), source)


# -- the command itself ----------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [[], ["nope"], ["--frobnicate"], ["coup", "--frobnicate", "As"]],
)
def test_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert_usage_error(*run(capsys, *argv))


@pytest.mark.parametrize("argv", [["--help"], ["coup", "--help"], ["simulate", "-h"]])
def test_help(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, _ = run(capsys, *argv)
    assert code == 0 and out.startswith("usage: chemmy")


def test_help_lists_the_offline_commands(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--help")
    for command in ("coup", "odds", "simulate", "verify"):
        assert command in out


def test_registry_takes_a_new_module(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another module adds a subcommand with one line in COMMAND_MODULES."""
    module = types.ModuleType("client_cli._test_hello")

    def hello(args: argparse.Namespace) -> int:
        print(f"hello {args.name}")
        return 5

    def register(subparsers: Any) -> None:
        p = subparsers.add_parser("hello")
        p.add_argument("name")
        p.set_defaults(run=hello)

    module.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, module.__name__))
    assert run(capsys, "hello", "table") == (5, "hello table\n", "")
    assert_usage_error(*run(capsys, "hello"), "hello", "name")


# -- through a real process --------------------------------------------------------------


def run_process(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="100")
    return subprocess.run(
        [sys.executable, "-m", "client_cli", *argv],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("argv", "expect"),
    [
        (["coup", "9s", "Kd", "5h", "3c", "2d", "4h"], "Banker wins, 7 to 6"),
        (["odds"], "0.458597423"),
        (["simulate", "--shoes", "3"], "Simulated 3 shoes"),
    ],
)
def test_process_ok(argv: list[str], expect: str) -> None:
    proc = run_process(*argv)
    assert proc.returncode == 0, proc.stderr
    assert expect in proc.stdout
    assert "Traceback" not in proc.stderr


def test_process_verify(tmp_path: Path) -> None:
    good = write_record(tmp_path, doc_record())
    proc = run_process("verify", good)
    assert proc.returncode == 0 and "OK" in proc.stdout
    bad = doc_record() | {"seed": "00" * 32}
    proc = run_process("verify", write_record(tmp_path, bad, "bad.json"))
    assert proc.returncode == 1 and "FAILED" in proc.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["coup", "9s", "Kd", "Zz", "3c"],
        ["coup", "9s", "Kd"],
        ["coup", *["As"] * 9],
        ["odds", "--decks", "0"],
        ["simulate", "--shoes", "-3"],
        ["verify", "/no/such/file.json"],
        ["nope"],
        [],
    ],
)
def test_process_usage_errors(argv: list[str]) -> None:
    proc = run_process(*argv)
    assert_usage_error(proc.returncode, proc.stdout, proc.stderr)


def test_process_verify_bad_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{", encoding="utf-8")
    proc = run_process("verify", str(path))
    assert_usage_error(proc.returncode, proc.stdout, proc.stderr, "not JSON")
