"""The terminal client and the limits a player sets on their own play, and the reality
check (issue 21).

- ``chemmy limits`` says there are none; ``limits set loss_day 12.50`` sets one (money
  as people type it), said in plain words; a raise shows as pending; ``session`` is in
  minutes; ``remove`` waits too; a bad kind or amount is a usage error, nothing asked.
- The words, the reducer: a ``reality_check`` is said on the message line and makes
  ``reality_check_due`` (its answer clears it), with no event loop; ``limit_reached``
  in French carries its limit.
- At the full-screen table a bet past a loss limit is refused in plain words on the
  message line; a break in force is said at once; a reality check (a server whose
  config has ``reality_check``) opens a pop-up: a bet is refused until Continue, then
  taken.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from client_helpers import at_table, loaded, model_of, until

from client_cli.i18n import set_language
from client_cli.main import main
from client_cli.model import reduce
from client_cli.sentences import limit_line, limits_text, reality_text, refusal
from server.process.auth import make_token as sign
from tests.kit import ServerProcess, scaled
from tests.kit.client import open_player

slow = pytest.mark.slow  # a server subprocess and a terminal: seconds each


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------- pure


def test_the_reducer_tracks_the_reality_check() -> None:
    m = loaded()
    assert not m.reality_check_due
    check = {"type": "reality_check", "session_seconds": 1800, "net": -1250, "staked": 8000}
    due = reduce(m, {**check, "every": 30})
    assert due.reality_check_due and due.reality_check is not None
    assert due.reality_check["net"] == -1250
    assert due.message == "You have played for 30 minutes. Net result: -12.50. Staked: 80.00."
    assert not m.reality_check_due  # the model given is never changed
    answered = reduce(due, {"type": "reality_ack", "choice": "continue"})
    assert not answered.reality_check_due and answered.reality_check is None
    # A snapshot leaves it due (the server's, until answered).
    assert reduce(
        due, {"type": "snapshot", "snapshot": {"table": "t1", "seq": 3}}
    ).reality_check_due


def test_limits_and_refusals_in_words() -> None:
    assert reality_text({"session_seconds": 12, "net": None, "staked": None}) == (
        "You have played for 12 seconds."
    )
    pending = {"amount": 10000, "from": 1796156312.5}
    line = limit_line("loss_day", {"amount": 5000, "remaining": 1200, "pending": pending})
    assert line == "Daily loss limit: 50.00 — 12.00 left (rises to 100.00 on 2026-12-01 20:18 UTC)"
    reply = {"limits": {"session": {"amount": 60, "remaining": 48}}, "session": {"seconds": 725}}
    assert limits_text(reply) == (
        "Session time limit: 60 minutes — 48 minutes left\nThis session: 12 minutes of play."
    )
    error = {"limit": {"kind": "loss_day", "amount": 1000, "remaining": 400}}
    message = "that would pass your daily loss limit of 10.00: 4.00 remains"
    assert refusal("limit_reached", message, error) == message
    set_language("fr")
    try:
        assert refusal("limit_reached", message, error) == (
            "cela dépasserait votre limite de pertes par jour de 10,00 : il reste 4,00"
        )
    finally:
        set_language("en")


# ---------------------------------------------------------------------------- chemmy limits


@slow
def test_chemmy_limits(
    chemmy_server: Any,
    make_token: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CHEMMY_TOKEN", make_token("lim-ida", "Ida"))
    monkeypatch.setenv("CHEMMY_URL", chemmy_server.url)

    code, out, _ = run(capsys, "limits")
    assert code == 0 and out.splitlines()[0] == "No limits are set."

    code, out, _ = run(capsys, "limits", "set", "loss_day", "12.50")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "Daily loss limit: 12.50 from now on."
    assert lines[1] == "Daily loss limit: 12.50 — 12.50 left"

    code, out, _ = run(capsys, "limits", "set", "loss_day", "50")  # a raise waits
    assert code == 0
    assert out.splitlines()[0].startswith("Daily loss limit rises to 50.00 on ")
    assert "Daily loss limit: 12.50 — 12.50 left (rises to 50.00 on " in out

    code, out, _ = run(capsys, "limits", "set", "session", "90")
    assert code == 0 and "Session time limit: 90 minutes — 90 minutes left" in out
    code, out, _ = run(capsys, "limits", "remove", "session")
    assert code == 0 and "Session time limit: 90 minutes — 90 minutes left (removed on " in out

    code, out, _ = run(capsys, "limits", "--json")
    data = json.loads(out)
    assert data["limits"]["loss_day"]["amount"] == 1250
    assert data["limits"]["loss_day"]["pending"]["amount"] == 5000

    # Usage errors: nothing asked.
    code, _, err = run(capsys, "limits", "set", "loss_forever", "5")
    assert code == 2 and "not a limit: 'loss_forever'" in err
    code, _, err = run(capsys, "limits", "set", "wager_day", "lots")
    assert code == 2 and "not an amount" in err
    code, _, err = run(capsys, "limits", "set", "session", "12.5")
    assert code == 2 and "whole minutes" in err
    code, _, err = run(capsys, "limits", "remove")
    assert code == 2 and "'remove KIND'" in err


# ---------------------------------------------------------------------------- the table


@slow
async def test_the_table_refuses_a_bet_past_a_limit_and_says_a_break(
    chemmy_server: Any, make_token: Callable[..., str]
) -> None:
    from test_play_tui import take_the_shoe_and_cut

    from client_cli.tui import ChemmyApp, Options

    token = make_token("lim-max", "Max")
    argv = ["limits", "set", "loss_day", "0.50", "--url", chemmy_server.url, "--token", token]
    assert await asyncio.to_thread(main, argv) == 0
    app = ChemmyApp(chemmy_server.url, token=token, table="tui-limits", options=Options(bell=False))
    async with app.run_test(size=(150, 45)) as pilot:
        await take_the_shoe_and_cut(pilot, app)
        await pilot.press("p")  # the smallest chip, 1.00: over the 0.50 left
        await until(
            pilot,
            lambda: "daily loss limit of 0.50: 0.50 remains" in model_of(app).message,
            "the refusal on the message line",
        )
        assert not model_of(app).my_bets

    # A break in force is said at once, on the message line at the table.
    argv = ["break", "24h", "--yes", "--url", chemmy_server.url, "--token", token]
    assert await asyncio.to_thread(main, argv) == 0
    app = ChemmyApp(chemmy_server.url, token=token, table="tui-limits", options=Options(bell=False))
    async with app.run_test(size=(150, 45)) as pilot:
        await at_table(pilot, app)
        await until(
            pilot,
            lambda: "You are taking a break until " in "\n".join(model_of(app).log),
            "the break said",
        )


REALITY_SECRET = "chemmy-tui-reality-secret-0123456789abcdef-0123"
REALITY_CONFIG = """
reality_check = {minutes}
jwt_secret = "{secret}"

[[tables]]
id = "tui-reality"
name = "TUI reality"
tier = "1-100"
timers = {{ betting = 30, squeeze = 20, third_card = 20, shoe_offer = 20, cut = 20, grace = 30 }}
"""


@pytest.fixture(scope="module")
def reality_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # Every 12 seconds: time to sit and take the shoe before the first one, on a busy
    # machine too (the terminal app draws in the test's own process).
    config = REALITY_CONFIG.format(minutes=round(scaled(0.2), 4), secret=REALITY_SECRET)
    server = ServerProcess(tmp_path_factory.mktemp("reality"), config, "--log-level", "warning")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@slow
async def test_the_reality_check_pop_up(reality_server: Any) -> None:
    from test_play_tui import take_the_shoe_and_cut
    from textual.widgets import Label

    from client_cli.tui import ChemmyApp, Options, RealityScreen

    app = ChemmyApp(
        reality_server.url,
        token=sign(REALITY_SECRET, "rc-ned", "Ned", ttl=3600),
        table="tui-reality",
        options=Options(bell=False),
    )
    async with app.run_test(size=(150, 45)) as pilot:
        await take_the_shoe_and_cut(pilot, app)
        # (Pushed is not yet mounted: wait for the screen's widgets, not only the screen.)
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, RealityScreen) and bool(app.screen.query("#reality-text"))
            ),
            "the check",
            scaled(20),
        )
        text = str(app.screen.query_one("#reality-text", Label).render())
        assert text.startswith("You have played for ") and "Net result: 0.00." in text
        assert model_of(app).reality_check_due
        await pilot.press("escape")  # no way around it but an answer
        assert isinstance(app.screen, RealityScreen)

        app.place("player")  # a bet while it waits: refused
        await until(
            pilot,
            lambda: "answer the reality check" in model_of(app).message,
            "the refusal",
        )
        await pilot.click("#reality-continue")
        await until(pilot, lambda: not isinstance(app.screen, RealityScreen), "the table again")
        assert not model_of(app).reality_check_due
        assert model_of(app).message == "Play on: bets are taken again."
        await pilot.press("p")
        await until(pilot, lambda: model_of(app).my_bets.get("player") == 100, "the bet taken")

        # The next check, answered on another screen of Ned's: the pop-up here goes.
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, RealityScreen)
                and bool(app.screen.query("#reality-continue"))
            ),
            "the next",
            scaled(20),
        )
        phone = await open_player(reality_server.url, "rc-ned", secret=REALITY_SECRET, name="Ned")
        try:
            await phone.call("reality_ack", choice="continue")
            await until(pilot, lambda: not isinstance(app.screen, RealityScreen), "the pop-up gone")
            assert not model_of(app).reality_check_due
            assert model_of(app).message == (
                "This reality check was already answered, on another screen of yours."
            )
        finally:
            await phone.close()
