"""docs/protocol.md against a real server: every example is a frame the server sends,
and every frame the server sends is in the examples (issue 8 defect 9, issue 9).

The page is written so that a web developer can build a client from it alone, so a
field the server sends that no example shows, or an example the server never sends, is
a bug. This module reads every fenced ``json`` block of the page and checks it three ways:

- **Statically**: each block parses; each client message in it is one ``parse``
  (``server.protocol.messages``) accepts (unless the block is marked as refused); each
  ``ok`` follows its request in the same block; every event kind (``EVENT_KINDS``),
  every message's reply (``SCHEMAS``) has an example, and every error code the server
  can send (found in its source) is in §13's tables, and no other.
- **Against a real server**: a scripted game (:func:`play`) drives one in this process
  (the ``net`` fixture) through every event kind and every reply: offers, declines, the
  house holding and offering again, a cut by a player and one on behalf, squeezes and
  progress, third cards, settlements, the shoe passed, a whole short shoe to its end,
  disconnects and resumes, an operator's pause, resume and void (over HTTP), timeouts,
  a closed table and a drain; then a second server
  in seamless mode (:func:`play_seamless`) against the reference operator wallet
  (``examples/wallet``), where a coup is debited and one player's debit is refused.
  Every frame every client of both received is kept.
- **Shapes**: an example matches a real frame of its category (the same message type,
  kind, or request) when it has the same keys at every level; values may differ (a
  ``null`` stands for any value), lists are compared by their elements' shapes, and in
  maps whose keys are data (player ids, areas, card numbers) only the values' shapes
  count. And per category the set of key paths in the examples equals the set in the
  frames: an undocumented field, or a documented one never sent, fails.
- **The settings**: ``chemmy-server --help`` and the page's ``create_table`` options
  name every table setting, and every flag the page (or the README's table of
  settings) names is one of ``chemmy-server``'s.

How the page marks its examples: a block holds one or more JSON values, each a client
message or a server frame (``ok``, ``error``, ``event``, or a ``chat`` with a
``player``). A comment line just before a block names what it is when the frames cannot
say: ``<!-- example: part NAME -->`` for a fragment (the snapshot, ``you``, ``actions``,
the roads, the odds, a round or shoe record, a lobby line, a result, an offer), and
``<!-- example: refused -->`` for a block whose client messages are invalid on
purpose. Elisions: ``{…}`` or ``[…]`` for a value shown in full elsewhere (a part),
``…`` as the last item of a list (more of the same) or of a map whose keys are data.

This module never changes the page or the server: it reads the one, and knows the other
by the frames its clients receive (the script only starts, drains and stops it, and
sets the reference wallet's faults).
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from server.gateway.hub import RETAINED_EVENTS
from server.process.auth import make_token
from server.process.config import build_parser
from server.protocol.errors import ChemmyError
from server.protocol.messages import SCHEMAS, parse
from server.store.base import (
    EVENT_RETENTION,
)
from server.table.rules import TURN_REFUSALS
from server.vocabulary.events import EVENT_KINDS
from server.vocabulary.options import TableOptions
from tests.kit import ROOT, SECRET, Client, CoupLog, Game, scaled, table_def
from tests.server.test_operator_voids import KEY as OPERATOR_KEY
from tests.server.test_operator_voids import Back
from tests.wallet.wallet_helpers import ReferenceWallet, reference_wallet

DOC = ROOT / "docs" / "protocol.md"
FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}  # the script sends as fast as it can

ELIDED = "\x00elided"  # {…} or […]: shown in full elsewhere
MORE = "\x00more"  # … as a list's or a data-keyed map's last item: more of the same

#: Maps whose keys are data (areas, players, card numbers), not field names: compared
#: by their values' shapes. ``bets*`` is a value of a ``bets`` map keyed by player (a
#: player's own bets: another map).
MAP_KEYS = frozenset(
    {
        "bets",
        "bets*",
        "totals",
        "last_bets",
        "areas",
        "cards",
        "edges",
        "exact_edges",
        "own",  # betting_closed's: a player's own wager, area -> amount
        "names",  # dealt's and the coup's: the turners' names, player -> name
    }
)

#: Where a part starts: (category, path) -> the part's own category. A part is checked
#: on its own (its examples against every instance the server sent), so that an example
#: elsewhere may elide it. Any event's ``data.actions`` is the part ``actions`` too.
PARTS: dict[tuple[str, tuple[str, ...]], str] = {
    ("reply join", ("snapshot",)): "part snapshot",
    ("part snapshot", ("you",)): "part you",
    ("part snapshot", ("roads",)): "part roads",
    ("part snapshot", ("last_result",)): "part result",
    ("part snapshot", ("offer",)): "part offer",
    ("part you", ("actions",)): "part actions",
    ("reply roads", ("roads",)): "part roads",
    ("reply roads", ("odds",)): "part odds",
    ("event result", ("data",)): "part result",
    ("reply history", ("rounds", "[]")): "part round",
    ("reply shoe_record", ("record",)): "part shoe_record",
    ("reply tables", ("tables", "[]")): "part lobby",
    ("reply create_table", ("table",)): "part lobby",
}
PART_NAMES = frozenset(p.removeprefix("part ") for p in PARTS.values())


def part_at(category: str, path: tuple[str, ...]) -> str | None:
    if category.startswith("event ") and path == ("data", "actions"):
        return "part actions"
    return PARTS.get((category, path))


# ------------------------------------------------------------------------ the page


class DocProblem(AssertionError):
    """docs/protocol.md breaks its own conventions (see the module docstring)."""


@dataclass
class Example:
    line: int  # where its block starts in docs/protocol.md
    category: str  # "event sat", "reply bet", "error", "chat", "part you"
    value: Any

    def __str__(self) -> str:
        return f"docs/protocol.md:{self.line} ({self.category})"


@dataclass
class Page:
    examples: list[Example] = field(default_factory=list)
    requests: list[tuple[int, dict[str, Any], bool]] = field(default_factory=list)


def _mark_elisions(text: str) -> str:
    """The block's text as JSON: each ``…`` outside a string becomes a sentinel."""
    out: list[str] = []
    stack: list[str] = []
    in_string = escaped = False
    i = 0
    while i < len(text):
        ch = text[i]
        i += 1
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == "…":
            before = "".join(out).rstrip()[-1:]
            rest = text[i:].lstrip()
            if before and before in "{[" and rest[:1] == "}]"["{[".index(before)]:
                while out[-1].isspace():
                    out.pop()
                out[-1] = json.dumps(ELIDED)  # the whole value, brackets and all
                stack.pop()
                i = len(text) - len(rest) + 1
            elif stack and stack[-1] == "[":
                out.append(json.dumps(MORE))
            elif stack and stack[-1] == "{":
                out.append(f"{json.dumps(MORE)}: 0")
            else:
                raise DocProblem(f"an ellipsis outside any list or map: {text[:80]!r}")
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
        out.append(ch)
    return "".join(out)


def _values(text: str) -> list[Any]:
    """Every JSON value in a block, one after another (one a line, or spread over many)."""
    decoder = json.JSONDecoder()
    text = _mark_elisions(text)
    values = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return values
        value, at = decoder.raw_decode(text, at)
        values.append(value)


def _is_frame(value: Any) -> bool:
    """A server frame (else a client message): ``chat`` and ``progress`` are both; the
    server's name who (``player``, ``turner``)."""
    kind = value.get("type")
    return (
        kind in ("ok", "error", "event", "reality_check", "reality_answered")
        or (kind == "chat" and "player" in value)
        or (kind == "progress" and "turner" in value)
    )


def read_page(text: str) -> Page:
    page = Page()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```json":
            i += 1
            continue
        start = i + 1
        end = next(j for j in range(start, len(lines)) if lines[j].strip() == "```")
        marker = lines[i - 1].strip() if i > 0 else ""
        m = re.fullmatch(r"<!-- example: (.+?) -->", marker)
        mark = m[1] if m else None
        body = "\n".join(lines[start:end])
        _read_block(page, start, body, mark)
        i = end + 1
    return page


def _read_block(page: Page, line: int, body: str, mark: str | None) -> None:
    try:
        if mark is not None and mark.startswith("part "):
            name = mark.removeprefix("part ")
            if name not in PART_NAMES:
                raise DocProblem(f"docs/protocol.md:{line}: no part {name!r}")
            text = body.strip()
            if text.startswith(f'"{name}":'):  # written as a field: "you": {...}
                text = "{" + text + "}"
                value = _values(text)[0][name]
            else:
                (value,) = _values(text)
            page.examples.append(Example(line, mark, value))
            return
        values = _values(body)
    except (ValueError, IndexError) as exc:
        raise DocProblem(f"docs/protocol.md:{line}: not JSON: {exc}") from None
    if mark not in (None, "refused"):
        raise DocProblem(f"docs/protocol.md:{line}: unknown mark {mark!r}")
    asked: dict[str, str] = {}
    for value in values:
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            raise DocProblem(f"docs/protocol.md:{line}: not a message: {value!r}")
        if not _is_frame(value):
            page.requests.append((line, value, mark == "refused"))
            asked[repr(value.get("id"))] = value["type"]
            continue
        kind = value["type"]
        if kind == "event":
            category = f"event {value.get('kind')}"
        elif kind == "ok":
            request = asked.get(repr(value.get("id")))
            if request is None:
                raise DocProblem(
                    f"docs/protocol.md:{line}: an ok reply without its request before it "
                    f"in the block: {value}"
                )
            category = f"reply {request}"
        else:
            category = kind
        page.examples.append(Example(line, category, value))


def the_page() -> Page:
    return read_page(DOC.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------ shapes


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def matches(example: Any, real: Any, key: str = "") -> bool:
    """Whether ``example`` has the shape of ``real`` (see the module docstring)."""
    if example is None or example == ELIDED or real is None:
        return True
    if isinstance(example, dict):
        if not isinstance(real, dict):
            return False
        if key in MAP_KEYS:
            inner = "bets*" if key == "bets" else "*"
            values = list(real.values())
            for k, v in example.items():
                if k == MORE:
                    continue
                if k in real:
                    if not matches(v, real[k], inner):
                        return False
                elif values and not any(matches(v, x, inner) for x in values):
                    return False
            return True
        return set(example) == set(real) and all(matches(v, real[k], k) for k, v in example.items())
    if isinstance(example, list):
        if not isinstance(real, list):
            return False
        items = [x for x in example if x != MORE]
        return not real or all(any(matches(x, y, "[]") for y in real) for x in items)
    if isinstance(real, dict | list):
        return False
    if key == "id":  # a request id is a string or an integer, as the client chose
        return _kind(example) in ("str", "number") and _kind(real) in ("str", "number")
    return _kind(example) == _kind(real)


@dataclass
class Shapes:
    """Key paths per category, and every instance of each part."""

    paths: dict[str, set[tuple[str, ...]]] = field(default_factory=lambda: defaultdict(set))
    instances: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))
    where: dict[tuple[str, tuple[str, ...]], str] = field(default_factory=dict)
    #: Maps of fields trimmed with … (only a map whose keys are data may be).
    trimmed: list[str] = field(default_factory=list)

    def add(self, category: str, value: Any, origin: str = "") -> None:
        self.paths.setdefault(category, set())  # a category with no paths still exists
        self._walk(category, value, (), "", origin)

    def _walk(
        self, category: str, value: Any, path: tuple[str, ...], key: str, origin: str
    ) -> None:
        if isinstance(value, dict):
            mapped = key in MAP_KEYS
            if MORE in value and not mapped:
                self.trimmed.append(f"{origin}: {category} at {'.'.join(path) or 'the top'}")
            for k, v in value.items():
                if k == MORE:
                    continue
                name = "*" if mapped else k
                inner = ("bets*" if key == "bets" else "*") if mapped else k
                sub = (*path, name)
                part = part_at(category, sub)
                if part is not None:
                    if not (category.startswith("event ") and sub == ("data", "actions")):
                        self._note(category, sub, origin)
                    if v is not None and v != ELIDED:
                        self.instances[part].append(v)
                        self.add(part, v, origin)
                    continue
                self._note(category, sub, origin)
                self._walk(category, v, sub, inner, origin)
        elif isinstance(value, list):
            for x in value:
                if x != MORE:
                    sub = (*path, "[]")
                    part = part_at(category, sub)
                    if part is not None:
                        self.instances[part].append(x)
                        self.add(part, x, origin)
                    else:
                        self._walk(category, x, sub, "[]", origin)

    def _note(self, category: str, path: tuple[str, ...], origin: str) -> None:
        self.paths[category].add(path)
        self.where.setdefault((category, path), origin)


# ------------------------------------------------------------------------ static checks


def test_every_block_is_json_and_every_request_is_valid() -> None:
    page = the_page()
    assert len(page.examples) > 100 and page.requests
    for line, message, refused in page.requests:
        if refused:
            with pytest.raises(ChemmyError):
                parse(message)
        else:
            kind, _mid, _fields = parse(message)  # raises for a request the server refuses
            assert kind in SCHEMAS, (line, message)
    for example in page.examples:
        kind, _, name = example.category.partition(" ")
        if kind == "event":
            assert name in EVENT_KINDS, f"{example}: no such event kind"
        elif kind == "reply":
            assert name in SCHEMAS, f"{example}: no such message"


def test_examples_trim_only_lists_and_maps_keyed_by_data() -> None:
    docs = Shapes()
    for example in the_page().examples:
        docs.add(example.category, example.value, origin=str(example))
    assert not docs.trimmed, "maps of fields trimmed with … (elide the whole value):\n" + (
        "\n".join(docs.trimmed)
    )


def test_every_event_kind_and_every_reply_has_an_example() -> None:
    page = the_page()
    shown = {e.category for e in page.examples}
    assert {f"event {k}" for k in EVENT_KINDS} <= shown, sorted(
        {f"event {k}" for k in EVENT_KINDS} - shown
    )
    assert {f"reply {k}" for k in SCHEMAS} <= shown, sorted({f"reply {k}" for k in SCHEMAS} - shown)
    assert {"error", "chat", "progress"} <= shown
    docs = Shapes()  # every part is shown, on its own or inside a frame
    for example in page.examples:
        docs.add(example.category, example.value, origin=str(example))
    assert {f"part {p}" for p in PART_NAMES} <= set(docs.paths)
    # §8 has a paragraph for each kind, headed by its name in bold.
    text = DOC.read_text(encoding="utf-8")
    events = text[text.index("## 8. Events") : text.index("## 9.")]
    for kind in EVENT_KINDS:
        assert f"**{kind}** —" in events, kind


def test_the_message_table_lists_every_message_with_its_fields() -> None:
    """§6 says every message is in its table: each of ``SCHEMAS``, with exactly its
    fields (an optional one marked ``?``), and no other (issue 33: ``contribute`` was
    missing)."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## 6. Client messages") : text.index("### hello")]
    rows = {
        kind: cells for kind, cells in re.findall(r"^\| `(\w+)` \| ([^|]*) \|", section, flags=re.M)
    }
    assert set(rows) == set(SCHEMAS), (
        sorted(set(SCHEMAS) - set(rows)),
        sorted(set(rows) - set(SCHEMAS)),
    )
    for kind, schema in SCHEMAS.items():
        named = dict(re.findall(r"`(\w+)(\??)`", rows[kind].split("(", 1)[0]))
        want = {name: "" if required else "?" for name, (_types, required) in schema.items()}
        assert named == want, (kind, named, want)


def test_the_resume_windows_named_are_the_codes() -> None:
    """§5's numbers: the events a process keeps in memory per table and the events the
    store keeps per table, beyond which a resume gets a snapshot."""
    text = DOC.read_text(encoding="utf-8")
    section = " ".join(text[text.index("## 5. Order") : text.index("## 6.")].split())
    assert f"last {RETAINED_EVENTS} events in memory" in section
    assert f"last {EVENT_RETENTION:,} events are stored" in section
    assert f"further back than the table's last {EVENT_RETENTION:,} events" in section


_ERROR_CLASSES = {"Refused", "TableError", "ProtocolError", "AuthError"}


def server_error_codes() -> set[str]:
    """Every code the server's source raises: ``Refused("code", ...)``, ``TableError``,
    ``ProtocolError``, ``AuthError``, ``Busy`` (``busy``), and the refusals of a turn's
    moments (``TURN_REFUSALS``, raised as ``TableError(code, message)``)."""
    codes = {"busy"} | {code for code, _message in TURN_REFUSALS.values()}
    for path in (ROOT / "server").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in _ERROR_CLASSES
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                codes.add(node.args[0].value)
    return codes


def documented_error_codes() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## 13. Error codes") : text.index("## 14.")]
    return set(re.findall(r"^\| `([a-z_0-9]+)` \|", section, flags=re.M)) | set(
        re.findall(r"`([a-z_0-9]+)`", section.split("Codes the server defines", 1)[1])
    )


@pytest.mark.slow
def test_every_error_code_the_server_can_send_is_listed() -> None:
    codes = server_error_codes()
    assert {"store_failed", "store_unavailable", "timeout", "unavailable", "id_reused"} <= codes
    documented = documented_error_codes()
    assert codes <= documented, sorted(codes - documented)
    assert documented <= codes, sorted(documented - codes)


def test_help_and_docs_name_every_table_setting() -> None:
    """``chemmy-server --help`` names every table setting a ``[[tables]]`` entry takes,
    and so does the option table of ``create_table`` in the page."""
    settings = set(TableOptions.__dataclass_fields__) | {"min", "max", "tie_max", "side_max"}
    help_text = " ".join(build_parser().format_help().split())
    text = DOC.read_text(encoding="utf-8")
    options = text[text.index("The options (`server/vocabulary/options.py`)") :]
    for name in settings:
        assert re.search(rf"\b{name}\b", help_text), f"--help omits {name}"
        assert f"`{name}`" in options, f"docs/protocol.md's options table omits {name}"


def test_every_server_flag_the_docs_name_exists() -> None:
    """The flags this page (and the README's table of settings) names are
    ``chemmy-server``'s own."""
    flags = set(re.findall(r"--[a-z][a-z-]*", build_parser().format_help()))
    named = set(re.findall(r"`(--[a-z][a-z-]*)", DOC.read_text(encoding="utf-8")))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = [line for line in readme.splitlines() if line.startswith("| `--")]
    named |= set(re.findall(r"`(--[a-z][a-z-]*)`", "\n".join(table)))
    assert named and named <= flags, sorted(named - flags)


# ------------------------------------------------------------------------ the game

LONG = {
    "betting": 60,
    "squeeze": 60,
    "third_card": 60,
    "shoe_offer": 60,
    "cut": 60,
    "grace": 60,
    "reveal": 3,  # bob withholds his reveal in the first shoe: it runs out
}
ALICE_VALUE, BOB_VALUE = bytes(range(32, 64)), bytes(range(64, 96))


class Recorder:
    """The clients of the run, and which request each reply answers."""

    def __init__(self, net: Any, server: Any) -> None:
        self.net = net
        self.server = server
        self.clients: list[Client] = []
        self.asked: dict[tuple[int, str], str] = {}

    async def connect(self, label: str, fmt: str = "json") -> Client:
        client: Client = await self.net.connect(self.server, fmt, label=label)
        send = client.send

        async def recording(message: Any) -> int:
            if "id" in message:
                self.asked[(id(client), repr(message["id"]))] = message["type"]
            return await send(message)

        client.send = recording  # type: ignore[method-assign]
        self.clients.append(client)
        return client

    async def player(self, pid: str, name: str, fmt: str = "json", **token: Any) -> Client:
        client = await self.connect(pid, fmt)
        await client.hello(token=make_token(SECRET, pid, name=name, **token))
        return client

    async def guest(self, name: str, fmt: str = "json") -> Client:
        client = await self.connect(name, fmt)
        await client.hello(guest=True, name=name)
        return client

    def frames(self) -> list[tuple[str, dict[str, Any]]]:
        """(category, frame) of every frame every client received."""
        out = []
        for client in self.clients:
            for frame in client.frames:
                msg = frame.msg
                kind = msg["type"]
                if kind == "event":
                    category = f"event {msg['kind']}"
                elif kind == "ok":
                    category = "reply " + self.asked[(id(client), repr(msg["id"]))]
                else:
                    category = kind
                out.append((category, msg))
        return out


async def settle(game: Game, rid: str) -> None:
    """Turn whatever is left of coup ``rid``, tossing, until it is settled."""
    for _ in range(10):
        if any(e["data"]["round_id"] == rid for e in game.watcher.events(game.table, "settled")):
            return
        prompt = game.prompt()
        assert prompt["kind"] == "turn", prompt
        await game.act(prompt["data"]["turner"], "toss", hand=prompt["data"]["hand"])
    raise AssertionError(f"{rid} never settled")


async def play(net: Any) -> Recorder:
    """The scripted game; returns what every client received."""
    server = await net.start(
        **FAST,
        operator_key=OPERATOR_KEY,
        tables=(
            table_def("demo", name="Docs demo", decks=6, seats=6, stop_offset=100, timers=LONG),
        ),
    )
    run = Recorder(net, server)
    t = "demo"

    # -- before and at hello ----------------------------------------------------------
    spec = await run.connect("spec")
    await spec.call("ping")
    await spec.refused("auth_required", "tables")
    await spec.hello(guest=True, name="Spec")
    await spec.refused("already_authenticated", "hello", guest=True)
    await spec.call("tables")
    await spec.join(t)  # a spectator's snapshot of a waiting table
    alice = await run.player("alice", "Alice", roles=("operator",))
    await alice.join(t)
    bob = await run.guest("Bob", "msgpack")
    again = await run.connect("bob-again")  # the same guest, come back with the token
    await again.call("hello", guest=True, resume=bob.hello_reply["resume"])  # type: ignore[index]
    await again.close()
    await bob.join(t)
    b = str(bob.player)
    game = Game(t, {"alice": alice, b: bob}, spec, rng=random.Random(8), progress=True)
    players = game.players  # the seated players the driver answers for

    # -- offers, declines, the house holds, the cut -------------------------------------
    await game.act("alice", "sit", seat=1)  # offered the shoe at once
    await spec.join(t)  # a snapshot with the offer
    await game.act(b, "sit", seat=3)  # sits during the offer: offered it too
    await game.act("alice", "decline_shoe")
    await game.act(b, "decline_shoe")  # every seated player declined: the house holds
    await alice.refused("bad_cut", "cut", table=t, position=5)
    await bob.refused("not_cutter", "cut", table=t, position=100)

    # -- the players' contributions (docs/fairness.md §9): commit, cut, reveal -----------
    alice_commit = hashlib.sha256(ALICE_VALUE).hexdigest()
    await spec.refused("not_seated", "contribute", table=t, commitment=alice_commit)
    await game.act("alice", "contribute", commitment=alice_commit)
    await alice.refused("already_contributed", "contribute", table=t, commitment="0" * 64)
    await bob.refused("contribution_taken", "contribute", table=t, commitment=alice_commit)
    await bob.refused("bad_contribution", "contribute", table=t, commitment="ABC")
    await alice.refused("too_early", "contribute", table=t, value=ALICE_VALUE.hex())
    await game.act(b, "contribute", commitment=hashlib.sha256(BOB_VALUE).hexdigest())
    await spec.join(t)  # a snapshot with the commitments
    await game.act(b, "stand")  # committed, then stood up: still reveals (his actions say)
    reply = await game.act("alice", "cut", position=150)  # the reveal opens
    await spec.join(t)  # a snapshot in the reveal: the shoe cut at 150, alice's cut
    await bob.refused("reveal_mismatch", "contribute", table=t, value=ALICE_VALUE.hex())
    await game.act("alice", "contribute", value=ALICE_VALUE.hex())
    # bob withholds his: the reveal timer runs out, then the cut, the burn, betting
    await spec.wait_event("betting_opened", table=t, after=reply["seq"], timeout=scaled(20))
    await bob.refused("contributions_closed", "contribute", table=t, value=BOB_VALUE.hex())
    await game.act(b, "sit", seat=3)  # back in his seat
    cy = await run.player("cy", "Cy")
    await cy.join(t)
    await cy.refused("seat_taken", "sit", table=t, seat=1)
    await cy.refused("bad_seat", "sit", table=t, seat=9)
    players["cy"] = cy
    await game.act("cy", "sit")  # the lowest free seat: 2
    await cy.refused("already_seated", "sit", table=t)

    # -- coup 1: chips placed, moved, removed; a squeeze ---------------------------------
    await game.act("alice", "bet", area="player", amount=500)
    await game.act(b, "bet", area="banker", amount=300)
    await game.act(b, "bet", area="tie", amount=100)
    await game.act(b, "remove_bet", area="tie")
    await bob.refused("over_max", "bet", table=t, area="tie", amount=2_000)
    await bob.refused("below_min", "bet", table=t, area="tie", amount=50)
    await bob.refused("bad_area", "bet", table=t, area="super6", amount=100)
    await bob.refused("no_previous_bets", "same_bet", table=t)
    await game.act("cy", "bet", area="player", amount=200)
    await game.act("cy", "clear_bets")
    await cy.refused("no_bet", "clear_bets", table=t)
    await game.act("cy", "bet", area="banker", amount=200)
    await alice.refused("not_holder", "pass_shoe", table=t)
    await alice.refused("wrong_phase", "accept_shoe", table=t)
    await alice.join(t)  # a snapshot while betting, with chips down
    await game.act("alice", "done")
    await game.act("alice", "done")  # again: a duplicate, no event
    await game.act(b, "done")
    await game.act("cy", "done")  # betting closes; the Player hand is alice's
    await bob.refused("not_your_turn", "toss", table=t, hand="player")
    await alice.refused("not_squeezing", "turn", table=t, hand="player", card=1)
    await alice.refused("wager_in_play", "stand", table=t)
    await game.act("alice", "squeeze", hand="player", style="peek")
    await alice.refused("already_squeezing", "squeeze", table=t, hand="player", style="side")
    await game.act("alice", "progress", hand="player", card=1, percent=40)
    await game.act("alice", "progress", hand="player", card=1, percent=30)  # no event
    await alice.join(t)  # the squeezing turner's snapshot
    await spec.join(t)  # ... and a spectator's
    await spec.call("roads", table=t)  # no odds while a coup is dealt
    await game.act("alice", "turn", hand="player", card=1)
    await alice.refused("card_already_turned", "turn", table=t, hand="player", card=1)
    await game.act("alice", "toss", hand="player")
    await settle(game, f"{t}-1-1")

    # -- between coups: the cashier, records, chat, errors ----------------------------
    await spec.call("roads", table=t)  # with the odds of the next coup
    await spec.call("tables")  # a lobby line with the shoe's road in miniature
    await alice.call("history", limit=1)
    await alice.refused("bad_limit", "history", limit=0)
    await alice.call("balance")
    await bob.call("balance")
    await alice.call("deposit", msg_id="dep-1", amount=2_500)
    await alice.call("deposit", msg_id="dep-1", amount=2_500)  # the same id: a duplicate
    await alice.refused("id_reused", "deposit", msg_id="dep-1", amount=3_000)
    await alice.refused("bad_amount", "deposit", msg_id="dep-2", amount=0)
    await alice.call("chat", table=t, text="  good   luck  ")
    await alice.refused("bad_chat", "chat", table=t, text="\x1b[2Jhi")
    await alice.refused("chat_too_long", "chat", table=t, text="x" * 201)
    await alice.refused("no_table", "join", table="nowhere")
    await alice.refused("no_record", "shoe_record", table=t)
    await bob.refused("not_allowed", "close_table", table=t)
    start = await spec.send({"type": "bet", "table": t, "area": "player", "amount": "5"})
    await spec.next_reply(start)  # a bad_message, its id null (the frame had none)

    # -- bettors without a seat (GAME_RULES §5): Spec, a guest, turns the Player cards ---
    opened = await game.to_betting()
    rid = opened["data"]["round_id"]
    await spec.call("bet", table=t, area="player", amount=700)  # a guest: stored by it
    await spec.call("bet", table=t, area="tie", amount=100)
    await spec.call("remove_bet", table=t, area="tie")
    await spec.refused("not_seated", "done", table=t)
    ida = await run.player("ida", "Ida")
    await ida.join(t)
    await ida.call("bet", table=t, area="banker", amount=200)  # a bettor who does not turn
    await game.act("alice", "bet", area="player", amount=500)
    await game.act("cy", "bet", area="banker", amount=200)
    await spec.join(t)  # a bettor's snapshot, the felt's totals
    for pid in list(players):
        await game.act(pid, "done")  # the seated players close it: bettors are not waited for
    await ida.join(t)  # a bettor's snapshot with her wager in the coup
    await spec.call("squeeze", table=t, hand="player", style="peek")
    await spec.call("toss", table=t, hand="player")
    game.bettors[str(spec.player)] = spec  # (a third card would be hers to turn too)
    await settle(game, rid)
    del game.bettors[str(spec.player)]
    await game.to_betting()
    await ida.call("same_bet", table=t)
    await ida.call("clear_bets", table=t)
    await spec.call("bet", table=t, area="banker", amount=100)
    reply = await spec.call("leave", table=t)  # their chips not yet held come back
    await alice.wait_seq(t, reply["seq"])
    await spec.join(t)

    # -- coups until the shoe was accepted, passed and taken by a Player win ------------
    reasons: set[str] = set()
    cleared = False
    for _ in range(40):
        await game.to_betting()
        reasons = {e["data"]["reason"] for e in spec.events(t, "shoe_passed")}
        holder = game.holder()
        if holder is not None and "passed" not in reasons:
            reply = await players[holder].rpc("pass_shoe", table=t)
            if reply["type"] == "ok":  # else too_early: the holder has not dealt a coup
                await spec.wait_seq(t, reply["seq"])
                continue
        await game.act("alice", "bet", area="player", amount=500)  # alice turns Player
        await game.act("cy", "bet", area="banker", amount=200)
        await game.act(b, "same_bet")
        if not cleared:  # cleared with a previous coup's bets to repeat, and repeated
            await game.act(b, "clear_bets")
            await game.act(b, "same_bet")
            cleared = True
        await game.play_coup({})
        accepted = spec.events(t, "shoe_accepted")
        if accepted and {"passed", "player_won"} <= reasons and spec.events(t, "third_card"):
            break
    assert spec.events(t, "shoe_accepted") and {"passed", "player_won"} <= reasons, reasons

    # -- people come and go ------------------------------------------------------------
    # Cy must not hold the shoe here (the documented `you` of a seated player who does
    # not: no pass_shoe in its actions); the shoes' seeds decide who holds it by now.
    for _ in range(6):
        await game.to_betting()
        if game.holder() != "cy":
            break
        reply = await cy.rpc("pass_shoe", table=t)
        if reply["type"] == "ok":
            await spec.wait_seq(t, reply["seq"])
            continue
        await game.act("alice", "bet", area="player", amount=500)  # too early: one more coup
        await game.play_coup({})
    assert game.holder() != "cy"
    await cy.abort()  # the connection drops: a seat is held
    await spec.wait_event("disconnected", table=t)
    await cy.reconnect(t)  # resumed: the missed events follow the reply
    await spec.wait_event("reconnected", table=t)
    await cy.call("join", table=t, since=1_000_000_000)  # a since it cannot serve
    await game.act("cy", "stand")
    del players["cy"]
    await game.to_betting()
    reply = await bob.call("leave", table=t)
    await spec.wait_seq(t, reply["seq"])
    del players[b]
    await spec.call("leave", table=t)  # a spectator goes without an event
    await spec.join(t)

    # -- the operator over HTTP (docs/operations.md): a pause, a resume, a void ---------
    await game.to_betting()
    back = Back(server.port, OPERATOR_KEY)
    try:
        assert (await back.post(f"/operator/v1/tables/{t}/pause")).status_code == 200
        await spec.wait_event("paused", table=t)
        assert (await back.post(f"/operator/v1/tables/{t}/resume")).status_code == 200
        resumed = await spec.wait_event("resumed", table=t)
        await spec.wait_event("betting_opened", table=t, after=resumed["seq"])
        opened = await game.to_betting()
        await game.act("alice", "bet", area="player", amount=500)
        await game.act("alice", "done")  # dealt: alice turns the Player hand
        await spec.wait_event("turn", table=t, after=resumed["seq"])
        voided = await back.void(opened["data"]["round_id"], "the card reader failed")
        assert voided.status_code == 200, voided.text
        await spec.wait_event("voided", table=t)
        await alice.wait_event("voided", table=t)
    finally:
        await back.http.aclose()

    # -- the rest of the shoe, fast: alice alone, the house holding ---------------------
    solo = Game(t, {"alice": alice}, spec, rng=random.Random(9), accept=lambda pid: False)
    late_roads = False
    for _ in range(200):
        if spec.events(t, "shoe_ended"):
            break
        await solo.to_betting()
        if spec.events(t, "stop_card") and not late_roads:  # every road has started by now
            await spec.call("roads", table=t)
            await spec.call("tables")  # a big road in miniature (the first coup may tie)
            late_roads = True
        if solo.holder() == "alice":
            reply = await alice.rpc("pass_shoe", table=t)
            if reply["type"] == "ok":
                await spec.wait_seq(t, reply["seq"])
                continue
        await solo.act("alice", "bet", area="banker", amount=100)  # the croupier turns all
        await solo.play_coup({})
    assert spec.events(t, "stop_card") and spec.events(t, "shoe_ended")
    await solo.to_betting()  # the next shoe, cut
    await spec.call("shoe_record", table=t)
    await spec.call("shoe_record", table=t, shoe=1)
    await spec.call("tables")

    # -- timers, on a table with short ones; a closed table ---------------------------
    quick = "quick"
    short = {k: round(scaled(0.3), 3) for k in LONG} | {"betting": round(scaled(1.0), 3)}
    await bob.refused("not_allowed", "create_table", table=quick)
    await alice.refused("bad_options", "create_table", table=quick, options={"seats": 99})
    await alice.call(
        "create_table",
        table=quick,
        options={"name": "Quick", "decks": 6, "timers": short, "bettors": 0},
    )
    await alice.refused("table_exists", "create_table", table=quick)
    # -- a player of another currency: only their tables --------------------------------
    eve = await run.player("eve", "Eve", currency="EUR")
    await eve.refused("wrong_currency", "join", table=t)
    await eve.refused("wrong_currency", "sit", table=t)
    # A currency table needs the operator's money: not with the internal wallet.
    await alice.refused(
        "bad_options", "create_table", table="euro", options={"name": "Salon €", "currency": "EUR"}
    )
    await eve.call("tables")
    await alice.join(quick)
    dee = await run.player("dee", "Dee")
    await dee.join(quick)
    await dee.refused("not_joined", "bet", table=t, area="player", amount=100)
    await dee.call("sit", table=quick)  # offered the shoe; the offer times out...
    wait = scaled(10)
    await alice.wait_event("shoe_declined", table=quick, timeout=wait)
    await alice.wait_event("shoe_cut", table=quick, timeout=wait)  # ... and the cut
    await alice.wait_event("betting_waiting", table=quick, timeout=wait)  # no bet: it waits
    await alice.refused("seated_only", "bet", table=quick, area="player", amount=100)
    await dee.call("bet", table=quick, area="player", amount=100)  # the timer restarts
    await dee.rpc("done", table=quick)  # (the timer may have closed betting first)
    await alice.wait_event("settled", table=quick, timeout=wait)  # turned on dee's behalf
    await dee.call("history")
    await dee.abort()  # gone for good: the grace runs out, the table waits
    await alice.wait_event("waiting", table=quick, timeout=wait)
    await alice.call("close_table", table=quick)

    # -- responsible play: limits, a break, and a seat refused -------------------------
    fay = await run.player("fay", "Fay")
    await fay.join(t)
    await fay.call("set_limit", kind="deposit_day", amount=1000)
    await fay.refused("limit_reached", "deposit", msg_id="lm-d", amount=1001)
    await fay.call("set_limit", kind="deposit_day", amount=5000)  # a raise: pending
    await fay.call("remove_limit", kind="deposit_day")  # a removal: pending too
    await fay.call("limits")
    await fay.refused("bad_limit", "set_limit", kind="loss_year", amount=1)
    await fay.call("responsible")
    # a break while her wager is in a coup: it plays out, then she stands
    await fay.call("sit", table=t)
    duo = Game(t, {"alice": alice, "fay": fay}, spec, rng=random.Random(3), accept=lambda p: False)
    opened = await duo.to_betting()
    start = len(spec.frames)
    await duo.act("fay", "bet", area="player", amount=100)
    await duo.act("alice", "bet", area="banker", amount=100)
    await duo.act("alice", "done")
    await duo.act("fay", "done")  # dealt: fay turns the Player hand
    await fay.call("take_break", period="24h")
    await spec.wait_event("stand_after_coup", table=t)
    await fay.refused("player_blocked", "accept_shoe", table=t)
    log = CoupLog(opened["data"]["round_id"], opened["data"]["coup_no"], duo.holder(), {})
    await duo.settle(log, start)
    await spec.wait_event("stood", lambda m: m["data"]["player"] == "fay", table=t)
    await fay.refused("player_blocked", "sit", table=t)
    await fay.refused("bad_period", "take_break", period="nap")
    await fay.call("responsible")

    # -- the last seated player goes; a drain ------------------------------------------
    reply = await alice.call("stand", table=t)  # the table waits; alice gets her spectator actions
    await spec.wait_seq(t, reply["seq"])
    await server.drain(timeout=scaled(5))
    await spec.wait_event("draining", table=t)
    await alice.refused("draining", "bet", table=t, area="banker", amount=100)
    return run


async def play_reality(net: Any) -> Recorder:
    """A server whose players get a reality check every 1.2 s (``--reality-check``):
    one comes, a bet waits for its answer, and it is answered; Gil's second connection
    is told that it was."""
    server = await net.start(
        **FAST,
        db=str(net.tmp_path / "reality.sqlite3"),
        reality_check=0.02,
        tables=(table_def("demo", name="Docs demo", timers=LONG),),
    )
    run = Recorder(net, server)
    gil = await run.player("gil", "Gil")
    await gil.join("demo")
    await gil.wait_frame(lambda m: m["type"] == "reality_check", timeout=scaled(10))
    await gil.refused("reality_check_due", "bet", table="demo", area="banker", amount=100)
    await gil.refused("bad_choice", "reality_ack", choice="later")
    tablet = await run.player("gil", "Gil")
    await gil.call("reality_ack", choice="continue")
    await tablet.wait_frame(lambda m: m["type"] == "reality_answered", timeout=scaled(5))
    await gil.refused("no_reality_check", "reality_ack", choice="continue")
    return run


async def play_seamless(net: Any, wallet: ReferenceWallet) -> Recorder:
    """A coup at a table whose money is in the operator's wallet (``--wallet
    seamless``, docs/wallet.md §3): betting closes into ``debiting``, the wallet
    refuses Bob's debit (his chips go back: ``bets`` with ``change`` ``refused``, then
    ``debit_refused``), and the coup is dealt to Alice's wager alone."""
    server = await net.start(
        **FAST,
        db=str(net.tmp_path / "seamless.sqlite3"),
        wallet="seamless",
        wallet_url=wallet.url,
        wallet_secret=wallet.secret,
        wallet_timeout=scaled(5),
        guest=False,
        tables=(table_def("demo", name="Docs demo", currency="EUR", timers=LONG),),
    )
    run = Recorder(net, server)
    t = "demo"
    alice = await run.player("alice", "Alice", currency="EUR")
    bob = await run.player("bob", "Bob", currency="EUR")
    for seat, client in enumerate((alice, bob), start=1):
        await client.join(t)
        await client.call("sit", table=t, seat=seat)
    spec = await run.player("cy", "Cy", currency="EUR")  # watches: the public copies
    await spec.join(t)
    game = Game(t, {"alice": alice, "bob": bob}, alice, rng=random.Random(5))
    opened = await game.to_betting()
    rid = opened["data"]["round_id"]
    await game.act("alice", "bet", area="banker", amount=300)
    await game.act("bob", "bet", area="player", amount=500)
    wallet.faults(
        {"endpoint": "debit", "fault": "refuse", "code": "insufficient_funds", "player": "bob"}
    )
    start = len(alice.frames)
    await game.act("alice", "done")
    await game.act("bob", "done")  # betting closes: debiting
    closed = await alice.wait_event("betting_closed", table=t, timeout=scaled(10))
    for client in (bob, spec):
        await client.wait_seq(t, closed["seq"])
    wallet.reset()
    await game.settle(CoupLog(rid, opened["data"]["coup_no"], game.holder(), {}), start)
    return run


# ------------------------------------------------------------------------ the real test


@pytest.mark.slow
async def test_the_docs_show_exactly_what_a_real_server_sends(net: Any, tmp_path: Path) -> None:
    run = await play(net)
    reality = await play_reality(net)
    with reference_wallet(tmp_path) as wallet:
        seamless = await play_seamless(net, wallet)
        sent = run.frames() + reality.frames() + seamless.frames()
        for client in run.clients + reality.clients + seamless.clients:
            client.assert_clean()
        await net.stop(seamless.server)  # before the wallet stops: no credit left to retry
    real = Shapes()
    for category, msg in sent:
        real.add(category, msg, origin=json.dumps(msg)[:300])

    # The game went everywhere: every event kind, every reply.
    seen = set(real.paths)
    assert {f"event {k}" for k in EVENT_KINDS} <= seen, sorted(
        {f"event {k}" for k in EVENT_KINDS} - seen
    )
    assert {f"reply {k}" for k in SCHEMAS} <= seen, sorted({f"reply {k}" for k in SCHEMAS} - seen)

    page = the_page()
    docs = Shapes()
    for example in page.examples:
        docs.add(example.category, example.value, origin=str(example))

    problems: list[str] = []
    # Every example is a frame (or part) the server sent, key for key.
    frames: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for category, msg in sent:
        frames[category].append(msg)
    unique = {
        c: list({json.dumps(_skeleton(v), sort_keys=True): v for v in vs}.values())
        for c, vs in {**frames, **real.instances}.items()
    }
    for example in page.examples:
        candidates = unique.get(example.category, [])
        if not any(matches(example.value, r) for r in candidates):
            problems.append(
                f"{example}: no frame the server sent has this shape: "
                f"{json.dumps(example.value)[:300]}"
            )
    # Per category, the examples' key paths are the frames' key paths.
    for category in sorted(set(real.paths) | set(docs.paths)):
        sent, shown = real.paths.get(category, set()), docs.paths.get(category, set())
        if category not in docs.paths:
            problems.append(f"{category}: sent but never shown, e.g. {_first(real, category)}")
            continue
        for path in sorted(sent - shown):
            problems.append(
                f"{category}: {'.'.join(path)} is sent but not documented "
                f"(e.g. {real.where[(category, path)]})"
            )
        for path in sorted(shown - sent):
            problems.append(
                f"{category}: {'.'.join(path)} is documented ({docs.where[(category, path)]}) "
                "but was never sent"
            )
    assert not problems, "\n".join(problems)


def _first(shapes: Shapes, category: str) -> str:
    return next((o for (c, _), o in shapes.where.items() if c == category), category)


def _skeleton(value: Any) -> Any:
    """A value's shape alone, to keep one frame of each shape."""
    if isinstance(value, dict):
        return {k: _skeleton(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted({json.dumps(_skeleton(v), sort_keys=True) for v in value})
    return _kind(value) if value is not None else None
