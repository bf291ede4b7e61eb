"""The table actor's parts (server/croupier): the gateway's own record kinds in one table
beside the relayed table commands, dispatched through it, and complete both ways; what
the actor knows of its table read from the table, never copied; the one retry with
backoff. Real servers on port 0 where an actor runs (tests/kit)."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest

from server.croupier import actor as actor_module
from server.croupier import commit, kinds
from server.croupier.retry import BACKOFF_FIRST, BACKOFF_MAX, backoff, retrying
from server.protocol.errors import Refused, StoreError
from server.protocol.records import GATEWAY_KINDS, Address, CommandRecord
from server.table import Table, TableOptions, views
from server.table.state import Phase
from server.vocabulary import commands as c
from tests.kit.game import Game
from tests.server.test_store_failures import fail_next_commit

ROOT = Path(__file__).resolve().parents[2]
#: The calls through which the gateway sends a record to a table's owner, and the place
#: of the record's kind among their arguments.
_KIND_ARGUMENT = {"relay": 2, "ask_table": 1, "control": 0, "CommandRecord": 1}


def _kinds_the_gateway_sends() -> set[str]:
    """Every record kind written out in the server outside the croupier (the gateway, the
    operator's API, the cashier...) where a record for a table is made or relayed."""
    found = set()
    for path in sorted((ROOT / "server").rglob("*.py")):
        if "croupier" in path.relative_to(ROOT / "server").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            at = _KIND_ARGUMENT.get(str(name))
            if at is not None and len(node.args) > at:
                arg = node.args[at]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.add(arg.value)
    return found


def test_every_kind_the_gateway_sends_is_in_a_table_and_every_entry_is_used() -> None:
    sent = _kinds_the_gateway_sends()
    assert {"join", "chat", "void", "refresh"} <= sent  # (the scan finds the sends)
    assert sent <= set(kinds.WIRE_COMMANDS) | set(kinds.GATEWAY_COMMANDS)
    assert set(kinds.GATEWAY_COMMANDS) == GATEWAY_KINDS  # the records' own list
    assert set(kinds.GATEWAY_COMMANDS) <= sent  # no entry the gateway never sends
    assert set(kinds.GATEWAY_COMMANDS).isdisjoint(kinds.WIRE_COMMANDS)
    for kind, entry in kinds.GATEWAY_COMMANDS.items():
        assert entry.what, kind
        assert (entry.query is None) or kind in ("roads", "refresh"), kind


async def test_each_gateway_kind_becomes_its_command_through_the_table(net: Any) -> None:
    server = await net.start()
    actor = server.actors["t1"]
    to = Address("gw", 1, "r1")
    fields = {"name": "Ann", "text": "hi", "round_id": "x", "reason": "y", "gateway": "gw"}
    made = {
        kind: kinds.command_of(actor, CommandRecord("t1", kind, "ann", "1", fields, to))
        for kind in sorted(kinds.GATEWAY_COMMANDS)
    }
    assert {kind: type(cmd) for kind, cmd in made.items()} == {
        "chat": c.Chat,
        "close": c.CloseTable,
        "disconnect": type(None),  # (ann's only gateway, but she is not at the table)
        "join": c.Join,
        "leave": c.Leave,
        "pause": c.Pause,
        "refresh": type(None),
        "resume": c.Resume,
        "roads": type(None),
        "void": c.VoidRound,
    }
    assert actor.watchers == {}  # (joined through "gw", then left, then disconnected)
    with pytest.raises(Refused) as refused:
        kinds.command_of(actor, CommandRecord("t1", "dance", "ann", "1", {}, to))
    assert refused.value.code == "unknown_command"


async def test_what_the_actor_knows_of_its_table_is_read_from_it(
    net: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await net.start()
    ann = await net.player(server, "ann")
    await ann.join("t1")
    actor = server.actors["t1"]
    assert actor.wallet is actor.table.wallet and not actor.in_coup and not actor.closed
    before = actor.table
    fail_next_commit(monkeypatch, server.store)
    await ann.refused("store_failed", "sit", table="t1", msg_id="s1")
    assert actor.table is not before  # undone: rebuilt from the last stored step
    assert actor.wallet is actor.table.wallet
    other = Table("t1", TableOptions(), type(actor.wallet)())
    other.phase = Phase.CLOSED
    actor.table, before = other, actor.table
    assert actor.wallet is other.wallet and actor.closed and not actor.in_coup
    actor.table = before


async def test_a_closed_table_tells_its_croupier_and_its_actor_ends(net: Any) -> None:
    server = await net.start()
    actor = server.actors["t1"]
    await actor.call(c.CloseTable())
    assert actor.closed and "t1" not in server.actors  # (the hook: no longer served)
    async with asyncio.timeout(5):
        await actor._task  # the actor ends by itself after its close step


def test_the_backoff_grows_to_its_cap_and_never_overflows() -> None:
    waits = [backoff(n) for n in range(1, 12)]
    assert waits[0] == BACKOFF_FIRST and waits == sorted(waits)
    assert waits[-1] == BACKOFF_MAX == backoff(5_000)


async def test_retrying_tries_again_until_done_or_stopped() -> None:
    tries: list[int] = []

    async def flaky() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise StoreError("not yet")
        return "done"

    assert await retrying(flaky, errors=StoreError, what="x not done", table_id="t1") == "done"
    assert len(tries) == 3
    stopped = await retrying(
        flaky, errors=StoreError, what="x", table_id="t1", going_on=lambda: False
    )
    assert stopped is None and len(tries) == 3

    async def broken() -> None:
        raise ValueError("a bug, not a store that is away")

    with pytest.raises(ValueError):
        await retrying(broken, errors=StoreError, what="x", table_id="t1")


async def test_a_step_of_transient_events_keeps_the_lobby_line(
    net: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chat line (transient: shown, never stored) leaves the table's lobby line as it
    was, not made again (issue 36: a cluster owner rebuilt the line, its road and all,
    after every squeezed card's bend to compare it with the last one shared); a step that
    changes what the line is made from (a sit) makes it again."""
    server = await net.start()
    ann = await net.player(server, "ann")
    await ann.join("t1")
    actor = server.actors["t1"]
    made: list[str] = []
    real = views.summary

    def counted(
        table: Table, road: dict[str, Any] | None = None, key: tuple[Any, ...] | None = None
    ) -> dict[str, Any]:
        made.append(table.table_id)
        return real(table, road, key)

    monkeypatch.setattr(actor_module.views, "summary", counted)
    line = actor.summary()
    await ann.call("chat", table="t1", text="bonne chance")
    await ann.wait_frame(lambda m: len(ann.chats()) >= 1)
    assert actor.summary() is line and made == ["t1"]
    await ann.call("sit", table="t1")
    after = actor.summary()
    assert after is not line and after["seated"] == line["seated"] + 1 and made == ["t1"] * 2


async def test_the_lobby_lines_road_is_made_again_only_after_a_result_or_a_shoe(
    net: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that changes what the lobby line is made from makes it again, but its road
    (the shoe's roads cut short, most of the line's cost: a cluster owner shares the line
    after every stored step, issue 36) only once a coup's result or a new shoe changed it;
    a step that changes nothing in it (a bet) leaves the same line, not made again. The
    line is always what :func:`views.summary` makes of the table."""
    server = await net.start()
    ann, bob = await net.player(server, "ann"), await net.player(server, "bob")
    for client in (ann, bob):
        await client.join("t1")
        await client.call("sit", table="t1")
    actor = server.actors["t1"]
    roads: list[int] = []
    real = views.lobby_road

    def counted(table: Table) -> dict[str, Any]:
        roads.append(len(table.results))
        return real(table)

    monkeypatch.setattr(actor_module.views, "lobby_road", counted)
    game = Game("t1", {"ann": ann, "bob": bob}, ann)
    await game.to_betting()
    first = actor.summary()
    assert roads in ([], [0]) and first == views.summary(actor.table, real(actor.table))
    made = len(roads)
    await ann.call("bet", table="t1", area="player", amount=100)
    line = actor.summary()
    assert line is first and line == views.summary(actor.table, real(actor.table))
    carl = await net.player(server, "carl")
    await carl.join("t1")
    line = actor.summary()
    assert line is not first and line["spectators"] == first["spectators"] + 1
    assert line["road"] is first["road"] and len(roads) == made
    assert line == views.summary(actor.table, real(actor.table))
    await ann.call("remove_bet", table="t1", area="player")
    await game.play_coup({"bob": {"banker": 100}})
    after = actor.summary()
    assert roads[made:] == [1] and after["road"]["coups"] == 1
    assert after == views.summary(actor.table, real(actor.table))


async def test_a_large_step_lets_the_loop_turn_between_its_decision_and_its_commit(
    net: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step of many players (more ledger entries or private parts than ``LARGE_STEP``: a
    thousand bettors' settlement, issue 37 §3) lets the event loop turn once after the
    table decided it, before its commit is planned, so what waits meanwhile waits for one
    of the two; a small step goes on to its commit at once. Either way it is stored
    before it is sent, and answered after."""
    server = await net.start()
    ann = await net.player(server, "ann")
    await ann.join("t1")
    actor = server.actors["t1"]
    order: list[str] = []
    decide, write, deliver = actor._decide_item, actor._write, actor._deliver

    async def decided(item: Any) -> Any:
        out = await decide(item)
        asyncio.get_running_loop().call_soon(order.append, "the loop turned")
        return out

    async def written(w: Any) -> Any:
        order.append("commit")
        return await write(w)

    def delivered(item: Any, happened: Any) -> None:
        order.append("delivered")
        deliver(item, happened)

    monkeypatch.setattr(actor, "_decide_item", decided)
    monkeypatch.setattr(actor, "_write", written)
    monkeypatch.setattr(actor, "_deliver", delivered)
    await ann.call("sit", table="t1", seat=1)  # a small step
    assert order[:2] == ["commit", "the loop turned"] and "delivered" in order, order
    order.clear()
    monkeypatch.setattr(commit, "LARGE_STEP", 0)  # (every step with a private part)
    await ann.call("stand", table="t1")
    assert order[:2] == ["the loop turned", "commit"] and order[-1] == "delivered", order
