"""The terminal client and a break (issue 21): ``chemmy break`` says what is in force,
asks before taking one (or ``--yes``), and says it in plain words; a self-exclusion is
not shortened by a shorter break; at the full-screen table a player on a break who
presses ``s`` (sit) reads the refusal in plain words on the message line; and ``x`` at
the table opens Responsible play, where a 24-hour break is asked, confirmed and said."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from client_helpers import at_table, model_of, until

from client_cli.main import main
from client_cli.tui import BreakScreen, ChemmyApp, Options

pytestmark = pytest.mark.slow  # a server subprocess and a terminal: seconds each


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_chemmy_break(
    chemmy_server: Any,
    make_token: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    token = make_token("rg-ivy", "Ivy")
    monkeypatch.setenv("CHEMMY_TOKEN", token)
    monkeypatch.setenv("CHEMMY_URL", chemmy_server.url)

    code, out, _ = run(capsys, "break")
    assert (code, out.strip()) == (0, "No break or exclusion is set: you may play.")
    code, _, err = run(capsys, "break", "24h")  # no terminal to ask: nothing taken
    assert code == 2 and "give --yes to confirm" in err
    assert run(capsys, "break")[1].strip() == "No break or exclusion is set: you may play."
    code, _, err = run(capsys, "break", "forever", "--yes")
    assert code == 2 and "invalid choice" in err

    code, out, _ = run(capsys, "break", "24h", "--yes")
    assert code == 0 and out.startswith("You are taking a break until ")
    assert out.strip().endswith("UTC: you cannot sit or bet until then.")
    code, out, _ = run(capsys, "break", "exclude_6m", "--yes", "--json")
    excluded = json.loads(out)["restriction"]
    assert code == 0 and excluded["kind"] == "exclusion"
    code, out, _ = run(capsys, "break", "week", "--yes", "--json")  # not shortened
    assert json.loads(out)["restriction"] == excluded
    code, out, _ = run(capsys, "break")
    assert out.startswith("You have excluded yourself from play until ")


async def test_the_table_refuses_a_seat_in_plain_words(
    chemmy_server: Any, make_token: Callable[..., str]
) -> None:
    token = make_token("rg-jo", "Jo")
    argv = ["break", "exclude_1y", "--yes", "--url", chemmy_server.url, "--token", token]
    assert await asyncio.to_thread(main, argv) == 0
    app = ChemmyApp(chemmy_server.url, token=token, table="tui", options=Options(bell=False))
    async with app.run_test(size=(150, 45)) as pilot:
        await at_table(pilot, app)
        await pilot.press("s")
        await until(
            pilot,
            lambda: "excluded yourself from play until" in (model_of(app).message or ""),
            "the refusal on the message line",
        )
        assert not model_of(app).seated


async def test_x_at_the_table_takes_a_break(
    chemmy_server: Any, make_token: Callable[..., str]
) -> None:
    from textual.widgets import Label

    app = ChemmyApp(
        chemmy_server.url,
        token=make_token("rg-kim", "Kim"),
        table="tui",
        options=Options(bell=False),
    )
    async with app.run_test(size=(150, 45)) as pilot:
        await at_table(pilot, app)
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, BreakScreen), "Responsible play")

        def state() -> str:
            return str(app.screen.query_one("#break-state", Label).render())

        await until(pilot, lambda: state().startswith("No break or exclusion"), "the state")
        await pilot.click("#break-24h")
        await until(pilot, lambda: app.screen.query_one("#break-confirm").display, "the question")
        await pilot.click("#break-yes")
        await until(pilot, lambda: state().startswith("You are taking a break until "), "the break")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, BreakScreen), "the table again")
        assert (model_of(app).message or "").startswith("You are taking a break until ")
        await pilot.press("s")
        await until(
            pilot,
            lambda: "taking a break from play until" in (model_of(app).message or ""),
            "the refusal on the message line",
        )
