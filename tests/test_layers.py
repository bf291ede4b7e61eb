"""The rooms and the direction of their imports (docs/architecture.md §2, issue 35 §1).

The shell is split by job: ``server/gateway`` (connections), ``server/operator`` (the
``/operator/v1/`` API), ``server/protection`` (responsible play), ``server/process``
(settings, auth, metrics, and ``assemble``/``main``, which put the rest together). Each
names what it needs of the others in its context module; these tests hold the direction
(every import counts, ``TYPE_CHECKING`` ones too):

- the gateway never imports the operator room (``assemble`` installs the routes on it);
- player protection imports neither the gateway nor the operator room;
- the store never imports player protection (it is handed the rules) nor any room above
  it;
- the rate limits (``server/limits``) import no other room of the shell, nor the
  croupier: only the Redis connector (``server/connect``) and the bus's key prefix;
- the table's vocabulary (``server/vocabulary``: options, commands, events, errors)
  reads only the engine and the wire's text and error rules, never the table above it;
- the ledger (``server/ledger``: accounts, entries, money rules) and the Redis connector
  import no other room but the error tree: the table, the stores, the wallets and the
  shell read them;
- ``config``, ``auth`` and ``metrics`` import no room; only ``main`` (and the test kit,
  the benchmarks) imports ``assemble``;
- the clients share their texts through ``texts`` (which imports neither), and the
  terminal client imports the core and the wire schema, never the shell;
- the bus is asked through its interface: nobody but ``assemble`` (and the bus itself)
  imports the Redis bus, and nobody probes a bus with ``getattr``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHELL = (
    "server.gateway",
    "server.operator",
    "server.protection",
    "server.process",
    "server.limits",
)


def modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports (relative ones resolved), ``TYPE_CHECKING`` too."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def reaches(path: Path, forbidden: tuple[str, ...]) -> set[str]:
    return {m for m in imported(path) if any(m == f or m.startswith(f + ".") for f in forbidden)}


def test_the_rooms_are_there() -> None:
    for room in ("gateway", "operator", "protection", "process", "limits"):
        assert (ROOT / "server" / room / "context.py").exists() or room == "process", room
        assert len(modules(f"server/{room}")) >= 4, room
    assert not list((ROOT / "server" / "net").glob("*.py"))  # (a checkout may keep __pycache__)


@pytest.mark.parametrize("path", modules("server/gateway"), ids=lambda p: p.name)
def test_the_gateway_never_imports_the_operator_room(path: Path) -> None:
    assert (
        reaches(path, ("server.operator", "server.process.assemble", "server.process.main"))
        == set()
    )


@pytest.mark.parametrize("path", modules("server/gateway"), ids=lambda p: p.name)
def test_the_gateway_reads_no_operator_request(path: Path) -> None:
    """It tells an operator's connection (``sniff``) and hands it over whole: reading
    and answering the request (h11) is the operator room's (``server/operator/http.py``)."""
    assert reaches(path, ("h11",)) == set()


@pytest.mark.parametrize("path", modules("server/protection"), ids=lambda p: p.name)
def test_player_protection_imports_neither_the_gateway_nor_the_operator(path: Path) -> None:
    bad = ("server.gateway", "server.operator", "server.process.assemble", "server.process.main")
    bad = (*bad, "server.croupier", "server.limits")
    assert reaches(path, bad) == set()


def test_each_protocol_of_the_shell_is_declared_once() -> None:
    """A room names what it needs once; a protocol another room declared is imported
    (the gateway's ``Replies``/``Relay`` are protection's, of the gateway's ``Session``)."""
    declared: dict[str, list[str]] = {}
    for room in SHELL:
        for path in modules(room.replace(".", "/")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                protocol = isinstance(node, ast.ClassDef) and any(
                    "Protocol" in ast.unparse(base) for base in node.bases
                )
                alias = isinstance(node, ast.Assign) and ast.unparse(node.value).startswith(
                    "Callable"
                )
                if protocol or alias:
                    for name in _declared_names(node):
                        declared.setdefault(name, []).append(path.name)
    assert {name: where for name, where in declared.items() if len(where) > 1} == {}


def _declared_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.ClassDef):
        return [node.name]
    assert isinstance(node, ast.Assign)
    return [target.id for target in node.targets if isinstance(target, ast.Name)]


def test_names_are_imported_from_where_they_are_defined() -> None:
    """The actor re-exports nothing: a refusal of the store is the error tree's, a
    record's fields the croupier's ``kinds``, a held-back credit its ``seamless``."""
    import server.croupier.actor as actor

    moved = ("store_refusal", "GUEST_FIELD", "GUARDS_FIELD", "HELD_BACK", "WIRE_COMMANDS")
    assert not set(moved) & set(actor.__all__)
    for folder in ("server", "tests", "bench"):
        for path in modules(folder):
            if not re.search(r"\bactor\b", path.read_text(encoding="utf-8")):
                continue  # (any import of it names it: only the files that do are parsed)
            names = reaches(path, ("server.croupier.actor",))
            assert not {f"server.croupier.actor.{name}" for name in moved} & names, path


@pytest.mark.parametrize("path", modules("server/operator"), ids=lambda p: p.name)
def test_the_operator_room_is_installed_not_installing(path: Path) -> None:
    assert reaches(path, ("server.process.assemble", "server.process.main")) == set()


@pytest.mark.parametrize("path", modules("server/limits"), ids=lambda p: p.name)
def test_the_limits_import_no_other_room(path: Path) -> None:
    others = tuple(room for room in SHELL if room != "server.limits")
    assert reaches(path, (*others, "server.croupier", "server.table", "server.wallet")) == set()


@pytest.mark.parametrize(
    "path", modules("server/ledger") + modules("server/connect"), ids=lambda p: p.name
)
def test_the_ledger_and_the_connector_import_no_other_room(path: Path) -> None:
    room = ".".join(path.relative_to(ROOT).parts[:2])
    used = reaches(path, ("server",))
    assert {m for m in used if not m.startswith((room, "server.protocol.errors"))} == set()


@pytest.mark.parametrize("path", modules("server/vocabulary"), ids=lambda p: p.name)
def test_the_vocabulary_reads_only_the_engine_and_the_wire(path: Path) -> None:
    used = reaches(path, ("server",))
    below = ("server.vocabulary", "server.engine", "server.protocol")
    assert {m for m in used if not m.startswith(below)} == set()


@pytest.mark.parametrize("path", modules("server/store"), ids=lambda p: p.name)
def test_the_store_decides_no_rule_of_protection(path: Path) -> None:
    assert reaches(path, (*SHELL, "server.croupier")) == set()


@pytest.mark.parametrize("path", modules("server/store"), ids=lambda p: p.name)
def test_the_store_keeps_no_protection_rule(path: Path) -> None:
    """The rules the store once held are protection's (the store is handed them, or
    hands what it stored to the rule its caller names: ``current_limits``)."""
    defined: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        defined.update(t.id for t in targets if isinstance(t, ast.Name))
    rules = ("merge_limits", "RAISE_DELAY", "merge_restriction", "open_play", "ack_play")
    for name in (*rules, "current_limits"):
        assert name not in defined, name


@pytest.mark.parametrize("name", ["config", "settings", "auth", "metrics"])
def test_the_process_settings_import_no_room(name: str) -> None:
    path = ROOT / "server" / "process" / f"{name}.py"
    assert (
        reaches(path, (*SHELL[:3], "server.limits", "server.croupier", "server.process.assemble"))
        == set()
    )


@pytest.mark.parametrize(
    "path",
    [p for room in SHELL[:3] + SHELL[4:] for p in modules(room.replace(".", "/"))],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_a_room_imports_of_the_process_only_its_settings(path: Path) -> None:
    """The gateway and the operator room read ``config``, ``auth`` and ``metrics`` (which
    import no room); what starts and stops the process (``lifecycle``, ``assemble``,
    ``main``) is handed in through a context (the gateway's ``ProcessParts``)."""
    settings = ("server.process.config", "server.process.auth", "server.process.metrics")
    used = reaches(path, ("server.process",))
    assert {m for m in used if not any(m == s or m.startswith(s + ".") for s in settings)} == set()


def test_only_main_assembles_a_process() -> None:
    """(Besides the test kit and the benchmarks, which build processes of their own.)"""
    users = {
        p.relative_to(ROOT).as_posix()
        for folder in ("server", "client_cli")
        for p in modules(folder)
        if reaches(p, ("server.process.assemble",)) and p.name != "assemble.py"
    }
    assert users == {"server/process/main.py"}


@pytest.mark.parametrize("path", modules("client_cli"), ids=lambda p: p.name)
def test_the_terminal_client_never_imports_the_shell(path: Path) -> None:
    shell = (*SHELL, "server.store", "server.bus", "server.croupier", "server.table")
    assert reaches(path, shell) == set()
    assert 'resources.files("server' not in path.read_text(encoding="utf-8")


def test_the_shared_texts_import_neither_side() -> None:
    for path in modules("texts"):
        assert reaches(path, ("server", "client_cli")) == set()
    gateway_files = (ROOT / "server" / "gateway" / "static.py").read_text(encoding="utf-8")
    assert "client_cli" not in gateway_files
    assert (ROOT / "texts" / "rules.md").exists() and (ROOT / "texts" / "locales").is_dir()


def test_the_bus_is_asked_through_its_interface() -> None:
    allowed = {"server/process/assemble.py"}
    for path in modules("server"):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith("server/bus/") or name in allowed:
            continue
        assert reaches(path, ("server.bus.redis",)) == set(), name
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"getattr\(\s*self\.bus\b", text), name
        assert not re.search(r"isinstance\(\s*self\.bus\b", text), name


#: A room of ``server/`` a newcomer can hold (issue 35 "How to know it is done"): at most
#: this many lines of Python in all, and none of its modules longer than ROOM_MODULE_MOST.
ROOM_MOST = 5_000
ROOM_MODULE_MOST = 800


@pytest.mark.parametrize(
    "room",
    sorted(
        p.name for p in (ROOT / "server").iterdir() if p.is_dir() and modules(f"server/{p.name}")
    ),
)
def test_a_room_is_small_enough_to_hold(room: str) -> None:
    sizes = {
        p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in modules(f"server/{room}")
    }
    assert sum(sizes.values()) <= ROOM_MOST, (room, sum(sizes.values()))
    assert {p: n for p, n in sizes.items() if n > ROOM_MODULE_MOST} == {}
