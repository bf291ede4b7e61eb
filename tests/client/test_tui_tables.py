"""``chemmy play`` at two tables at once (issue 37 §2), headless against a real server:
a token player follows two tables given as ``--table A --table B``, sits, takes the shoe
and cuts at each, bets at both and switches between them with Tab; the tabs show each
table's phase and that the other table waits on them ("YOUR TURN"); both coups settle,
and the balance shown is the player's across both tables, as the server's ``balance``
says it. ``j`` goes to the lobby keeping both tables; Esc comes back."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from client_helpers import at_table, model_of, text_of, until
from conftest import SECRET
from textual.pilot import Pilot

from client_cli.main import main
from client_cli.money import format_money
from client_cli.tui import ChemmyApp, CutScreen, LobbyScreen, Options, TableScreen
from tests.kit.client import open_player

SIZE = (150, 45)
A, B = "tui-multi-a", "tui-multi-b"


async def take_the_shoe_and_cut(pilot: Pilot[Any], app: ChemmyApp) -> None:
    """At the table shown: sit (s), accept the shoe (y), cut (u, Enter)."""
    await pilot.press("s")
    await until(pilot, lambda: model_of(app).offered_to_me, "the shoe offer")
    await pilot.press("y")
    await until(pilot, lambda: model_of(app).i_cut, "the cut")
    await pilot.press("u")
    await until(pilot, lambda: isinstance(app.screen, CutScreen), "the cut dialog")
    await pilot.press("enter")
    await until(pilot, lambda: model_of(app).can("done"), "betting open")


async def switch_to(pilot: Pilot[Any], app: ChemmyApp, table: str) -> None:
    await pilot.press("tab")
    await until(pilot, lambda: app.table_id == table, f"table {table} shown")


async def finish_coup(pilot: Pilot[Any], app: ChemmyApp) -> None:
    """At the table shown: TOSS each hand turned to us until the coup is settled."""
    coup = model_of(app).coup
    assert coup is not None, model_of(app).message

    def settled() -> bool:
        m = model_of(app)
        return m.last_coup is not None and m.last_coup.round_id == coup.round_id

    end = time.monotonic() + 30
    while not settled():
        assert time.monotonic() < end, f"coup not settled: {model_of(app).message!r}"
        if model_of(app).my_turn:
            await pilot.press("space")
            await pilot.pause(0.2)
        await pilot.pause(0.05)


@pytest.mark.slow
async def test_betting_at_two_tables_switching_with_tab(
    chemmy_server: Any, make_token: Callable[..., str]
) -> None:
    app = ChemmyApp(
        chemmy_server.url,
        token=make_token("tui-two", "Twin"),
        table=[A, B],
        options=Options(speed=5, bell=False),
    )
    async with app.run_test(size=SIZE) as pilot:
        await at_table(pilot, app)
        await until(pilot, lambda: set(app.slots) == {A, B} and app.table_id == A, "both")
        await until(pilot, lambda: all(s.model.seq is not None for s in app.slots.values()), "B")
        tabs = lambda: text_of(app, "#tabs")  # noqa: E731
        assert "1 TUI first of two" in tabs() and "2 TUI second of two" in tabs()
        await take_the_shoe_and_cut(pilot, app)
        await switch_to(pilot, app, B)
        await take_the_shoe_and_cut(pilot, app)
        await switch_to(pilot, app, A)

        # Table A: a chip on Player, DONE: the coup is dealt and the Player cards are ours.
        await pilot.press("1", "p")
        await until(pilot, lambda: model_of(app).my_bets.get("player"), "chips on A")
        await pilot.press("d")
        await until(pilot, lambda: model_of(app).my_turn == "player", "our turn at A")
        # At B, A's tab says it waits on us.
        await switch_to(pilot, app, B)
        await until(pilot, lambda: "▶ YOUR TURN" in tabs(), "A's turn seen from B")
        first, second = tabs().split(" 2 ", 1)
        assert "YOUR TURN" in first and "TUI first of two" in first
        assert "YOUR TURN" not in second and "your bets: DONE" in second
        await pilot.press("1", "b")
        await until(pilot, lambda: model_of(app).my_bets.get("banker"), "chips on B")
        await pilot.press("d")
        await until(pilot, lambda: model_of(app).my_turn is not None, "our turn at B")

        # Back to A (Shift+Tab), turn and settle; then B (F2).
        await pilot.press("shift+tab")
        await until(pilot, lambda: app.table_id == A, "A again")
        await finish_coup(pilot, app)
        await pilot.press("f2")
        await until(pilot, lambda: app.table_id == B, "B again")
        await finish_coup(pilot, app)
        nets = {t: app.slots[t].model.last_net for t in (A, B)}
        assert all(isinstance(n, int) for n in nets.values()), nets

        # The balance shown is the player's across both tables: the server's figure.
        check = await open_player(chemmy_server.url, "tui-two", secret=SECRET)
        try:
            server = await check.call("balance")
        finally:
            await check.close()
        assert server["balance"] == 100_000 + sum(n or 0 for n in nets.values())
        await until(
            pilot,
            lambda: app.purse is not None and app.purse["balance"] == server["balance"],
            "the player's balance",
        )
        amount = format_money(server["balance"])
        await until(pilot, lambda: amount in text_of(app, "#you"), "the balance shown")
        assert "all your tables" in text_of(app, "#you")

        # j: the lobby, both tables kept; Esc: back to them.
        await pilot.press("j")
        await until(pilot, lambda: isinstance(app.screen, LobbyScreen), "the lobby")
        await until(
            pilot,
            lambda: "your tables: tui-multi-a, tui-multi-b" in text_of(app, "#lobby-status"),
            "the lobby's status",
        )
        assert set(app.slots) == {A, B}
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, TableScreen), "back at the tables")
        assert app.table_id == B
        await app.action_quit()


def test_at_most_four_tables(capsys: pytest.CaptureFixture[str]) -> None:
    tables = [arg for n in range(5) for arg in ("--table", f"t{n}")]
    assert main(["play", "--url", "ws://127.0.0.1:1", *tables]) == 2
    assert "at most 4 tables" in capsys.readouterr().err
