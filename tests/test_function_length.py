"""No function in ``server/`` is longer than :data:`LONGEST` lines, and no module of the
table longer than :data:`LONGEST_TABLE_MODULE` (issue 19: the actor's 119-line
``_step_item`` became decide, commit and deliver; the 1,337-line ``Table`` its
sub-machines). A function or module that grows past it is split where its parts are (a
check, a store call, a delivery; a sub-machine), not trimmed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LONGEST = 80
LONGEST_TABLE_MODULE = 600
CHECKED = ("bus", "croupier", "engine", "net", "protocol", "store", "table")
MODULES = sorted(p for part in CHECKED for p in (ROOT / "server" / part).rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_is_longer_than_80_lines(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [
        f"{node.name} (line {node.lineno}): {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LONGEST
    ]
    assert not long, long


@pytest.mark.parametrize(
    "path",
    sorted((ROOT / "server" / "table").glob("*.py")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_table_module_is_longer_than_600_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= LONGEST_TABLE_MODULE, f"{lines} lines"


def test_the_table_actor_is_no_longer_than_600_lines() -> None:
    """The actor keeps its step loop; its helpers have modules of their own (issue 35 §3:
    the 1,263-line actor split into kinds, balances, commit, bursts, recovery, seamless,
    roads, retry and settings)."""
    lines = len(
        (ROOT / "server" / "croupier" / "actor.py").read_text(encoding="utf-8").splitlines()
    )
    assert lines <= LONGEST_TABLE_MODULE, f"{lines} lines"
