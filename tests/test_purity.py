"""The core stays pure (ARCHITECTURE.md "The one idea"): no module of ``server.engine``,
``server.vocabulary``, ``server.table`` or ``server.protocol`` imports I/O, the clock or the global random; and
the wire schema (``server.protocol``) imports no table code and no numpy, so a client or
another language's generator can load it alone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = sorted(
    [
        *(ROOT / "server" / "engine").glob("*.py"),
        *(ROOT / "server" / "vocabulary").glob("*.py"),
        *(ROOT / "server" / "table").glob("*.py"),
        *(ROOT / "server" / "protocol").glob("*.py"),
    ]
)
PROTOCOL = sorted((ROOT / "server" / "protocol").glob("*.py"))
PROTOCOL_FORBIDDEN = {"numpy", "server.table", "server.engine"}
FORBIDDEN = {
    "asyncio",
    "socket",
    "sqlite3",
    "redis",
    "websockets",
    "time",
    "random",
    "secrets",
    "datetime",
    "os",
    "subprocess",
    "threading",
    "server.gateway",
    "server.operator",
    "server.protection",
    "server.process",
    "server.croupier",
    "server.store",
    "server.bus",
}


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_core_has_modules() -> None:
    assert len(CORE) >= 10


@pytest.mark.parametrize("path", CORE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_core_module_imports_nothing_impure(path: Path) -> None:
    bad = {
        name
        for name in imported(path)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    }
    assert not bad, f"{path.name} imports {sorted(bad)}"


LEDGER = sorted((ROOT / "server" / "ledger").glob("*.py"))


@pytest.mark.parametrize("path", LEDGER, ids=lambda p: p.name)
def test_the_ledger_is_pure_and_reads_no_clock(path: Path) -> None:
    """The ledger (accounts, money rules, the audit) is pure like the core; it may
    format a time it is handed (``datetime``), never read one."""
    bad = {n for n in imported(path) if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)}
    assert bad <= {"datetime"}, f"{path.name} imports {sorted(bad)}"
    text = path.read_text()
    assert not any(f"{call}(" in text for call in (".now", ".today", ".utcnow", "time.time"))


def test_the_check_catches_an_impure_import(tmp_path: Path) -> None:
    sample = tmp_path / "bad.py"
    sample.write_text("import time\nfrom random import choice\n")
    assert {"time", "random"} <= imported(sample)


@pytest.mark.parametrize("path", PROTOCOL, ids=lambda p: f"protocol/{p.name}")
def test_the_wire_schema_stands_alone(path: Path) -> None:
    bad = {
        name
        for name in imported(path)
        if any(name == f or name.startswith(f + ".") for f in PROTOCOL_FORBIDDEN)
    }
    assert not bad, f"{path.name} imports {sorted(bad)}"


def test_the_wire_schema_loads_alone() -> None:
    """Importing the protocol pulls in neither the table nor numpy."""
    import subprocess
    import sys

    code = (
        "import sys, server.protocol.messages, server.protocol.codec, server.protocol.records;"
        "bad = [m for m in sys.modules if m.split('.')[0] == 'numpy'"
        " or m.startswith(('server.table', 'server.engine'))];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
