"""``chemmy play`` headless (Textual's ``App.run_test``) against a real server.

One round played by keys (and a few clicks): sit, accept the shoe, cut, choose a chip,
bet, regret, clear, bet again, DONE, squeeze the Player cards (PEEK, CARD 1, CARD 2),
toss the Banker cards, see the payout on the message line and the road grow. Then a
dropped connection in the middle of a squeeze: "reconnecting…", "resumed", the events
in unbroken seq order, and the squeeze finished by the player, not the croupier.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from typing import Any

import pytest
from client_helpers import at_table, model_of, text_of, until
from textual.pilot import Pilot
from textual.widgets import DataTable

from client_cli.model import CardView
from client_cli.tui import (
    ChemmyApp,
    CutScreen,
    HelpScreen,
    HistoryScreen,
    Options,
    OptionsScreen,
    RoadsScreen,
    TableScreen,
)

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

SIZE = (150, 45)


def card(app: ChemmyApp, hand: str, index: int) -> CardView:
    """Card ``index`` (1-based) of ``hand`` in the coup being dealt now."""
    coup = model_of(app).coup
    assert coup is not None, "no coup"
    return coup.cards(hand)[index - 1]


async def take_the_shoe_and_cut(pilot: Pilot[Any], app: ChemmyApp) -> None:
    """Sit (s); the shoe is offered to the first seat: accept (y); cut (u, Enter)."""
    await at_table(pilot, app)
    await pilot.press("s")
    await until(pilot, lambda: app.model is not None and app.model.seated, "a seat")
    await until(pilot, lambda: app.model is not None and app.model.offered_to_me, "the shoe offer")
    await pilot.press("y")
    await until(pilot, lambda: app.model is not None and app.model.i_cut, "the cut")
    await pilot.press("u")
    await until(pilot, lambda: isinstance(app.screen, CutScreen), "the cut dialog")
    await pilot.press("enter")
    await until(pilot, lambda: app.model is not None and app.model.phase == "betting", "betting")


async def finish_coup(pilot: Pilot[Any], app: ChemmyApp) -> None:
    """Toss whatever is left to turn (the Banker hand, third cards) until settled."""
    coup = model_of(app).coup
    assert coup is not None

    def settled() -> bool:
        m = model_of(app)
        return m.coup is None and m.last_coup is not None and m.last_coup.round_id == coup.round_id

    end = time.monotonic() + 30
    while not settled():
        model = model_of(app)
        assert time.monotonic() < end, f"coup not settled: {model.message!r}"
        if model.my_turn and model.coup is not None and not model.coup.style:
            await pilot.press("space")
            await pilot.pause(0.2)
        await pilot.pause(0.05)


async def test_a_round_by_keys(chemmy_server: Any, make_token: Callable[..., str]) -> None:
    app = ChemmyApp(
        chemmy_server.url,
        token=make_token("tui-ann", "Ann"),
        table="tui",
        options=Options(speed=5, bell=False),
    )
    async with app.run_test(size=SIZE) as pilot:
        await take_the_shoe_and_cut(pilot, app)
        assert model_of(app).i_hold and "◆" in text_of(app, "#seats")
        # Its own randomness went into the shoe by itself (docs/fairness.md §9): committed
        # when it sat, revealed after the cut, and said plainly.
        assert any("Your randomness is in this shoe" in line for line in model_of(app).log)
        shoe = model_of(app).shoe
        assert shoe is not None
        (mine,) = shoe["contributions"]
        assert mine["player"] == model_of(app).me and mine["value"] is not None
        assert hashlib.sha256(bytes.fromhex(mine["value"])).hexdigest() == mine["commitment"]
        assert app.contributor.values[shoe["no"]].hex() == mine["value"]
        start = model_of(app).balance
        assert start == 100_000

        # Chips and bets: chip 2 is 5.00 at a 1-100 table.
        await pilot.press("2", "p", "p")
        await until(pilot, lambda: model_of(app).my_bets == {"player": 1000}, "10.00 on Player")
        await pilot.press("r")  # regret one chip
        await until(pilot, lambda: model_of(app).my_bets == {"player": 500}, "a chip taken back")
        await pilot.click("#area-banker")  # the mouse works too
        await until(
            pilot,
            lambda: model_of(app).my_bets == {"player": 500, "banker": 500},
            "a chip on Banker",
        )
        await pilot.press("c")
        await until(pilot, lambda: model_of(app).my_bets == {}, "bets cleared")
        await pilot.press("t")  # below the minimum? no: 5.00 on Tie is fine; take it back
        await until(pilot, lambda: model_of(app).my_bets == {"tie": 500}, "a chip on Tie")
        await pilot.press("r")
        await until(pilot, lambda: model_of(app).my_bets == {}, "the Tie chip taken back")
        await pilot.press("3", "p")  # chip 3 is 10.00
        await until(
            pilot, lambda: model_of(app).my_bets == {"player": 1000}, "10.00 on Player again"
        )
        assert "10.00" in text_of(app, "#layout")
        assert model_of(app).available == start - 1000

        # A refused command lands on the message line and nothing breaks.
        await pilot.press("y")
        # (accept_shoe in betting: wrong_phase, the table's rules table says "not now")
        await until(
            pilot,
            lambda: "not now" in model_of(app).message or "offered" in model_of(app).message,
            "a refusal shown",
        )

        await pilot.press("d")  # DONE: the only seated player, so betting closes
        await until(
            pilot, lambda: model_of(app).my_turn == "player", "my turn to turn the Player cards"
        )

        # The squeeze: PEEK, then CARD 1 and CARD 2, revealed over a few frames.
        await pilot.press("e")
        await until(
            pilot,
            lambda: model_of(app).coup is not None and model_of(app).coup.style == "peek",
            "the squeeze",
        )
        coup = model_of(app).coup
        assert coup is not None
        assert coup.private.get(("player", 1)) and coup.private.get(("player", 2)), (
            "the turner sees the cards"
        )
        await pilot.press("1")
        await until(pilot, lambda: card(app, "player", 1).up, "card 1 turned")
        assert card(app, "player", 1).by == app.conn.player
        await pilot.click("#sq-card2")
        await until(pilot, lambda: card(app, "player", 2).up, "card 2 turned")
        assert card(app, "player", 2).by == app.conn.player
        await finish_coup(pilot, app)

        # The payout on the message line, the balance, and the road.
        result = model_of(app).last_result
        assert result is not None
        message = model_of(app).result_line
        assert message in model_of(app).log
        assert any(word in message for word in ("wins", "Tie")), message
        assert any(word in message for word in ("You won", "You lost", "push")), message
        assert message in text_of(app, "#hands") or message in model_of(app).message
        assert model_of(app).balance == start + (model_of(app).last_net or 0)
        await until(
            pilot, lambda: len(model_of(app).roads.get("bead_plate") or []) == 1, "the bead plate"
        )
        await until(pilot, lambda: model_of(app).odds is not None, "the odds")
        letter = {"banker": "B", "player": "P", "tie": "T"}[result["outcome"]]
        assert letter in text_of(app, "#roads").split("Bead plate")[1].split("Big road")[0]
        assert "Banker" in text_of(app, "#odds")

        # The roads full-screen, then history, help and options screens.
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, RoadsScreen), "the roads screen")
        assert "Bead plate" in text_of(app, "#roads-big") and "Banker" in text_of(app, "#odds-big")
        await pilot.press("escape")

        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen), "history")
        table = app.screen.query_one("#history", DataTable)
        await until(pilot, lambda: table.row_count == 1, "one round in the history")
        await pilot.press("escape")
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
        await pilot.press("escape")
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, OptionsScreen), "options")
        await pilot.press("minus")
        assert app.options.speed == 4
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, TableScreen), "back at the table")

        # Back to the lobby, which lists the tables.
        await pilot.press("l")
        await until(pilot, lambda: app.model is None and app.lobby.is_current, "the lobby")
        tables = app.lobby.query_one("#tables", DataTable)
        await until(pilot, lambda: tables.row_count >= 6, "the tables listed")
        await app.action_quit()


async def test_reconnect_in_the_middle_of_a_squeeze(
    chemmy_server: Any, make_token: Callable[..., str]
) -> None:
    app = ChemmyApp(
        chemmy_server.url,
        token=make_token("tui-bob", "Bob"),
        table="tui-resume",
        options=Options(speed=5, bell=False),
    )
    async with app.run_test(size=SIZE) as pilot:
        await take_the_shoe_and_cut(pilot, app)
        await pilot.press("4", "p", "d")
        await until(pilot, lambda: model_of(app).my_turn == "player", "my turn")
        await pilot.press("k")  # QUICK
        await until(
            pilot,
            lambda: model_of(app).coup is not None and model_of(app).coup.style == "quick",
            "the squeeze",
        )
        snapshots = app.snapshots
        seq_before = model_of(app).seq

        app.conn.drop()  # the network fails mid-squeeze
        await until(pilot, lambda: "reconnecting…" in model_of(app).log, "reconnecting…")
        await until(pilot, lambda: "resumed" in model_of(app).log, "resumed", timeout=15)
        assert app.snapshots == snapshots, "resumed from the last seq, not from a new snapshot"
        applied = app.applied
        assert applied == list(range(applied[0], applied[0] + len(applied))), (
            "events in unbroken seq order"
        )
        assert (
            model_of(app).seq is not None
            and seq_before is not None
            and model_of(app).seq >= seq_before
        )

        # The squeeze goes on: same style, the cards still known only to the turner.
        coup = model_of(app).coup
        assert coup is not None and coup.style == "quick" and model_of(app).my_turn == "player"
        await pilot.press("1")
        await until(pilot, lambda: card(app, "player", 1).up, "card 1")
        await pilot.press("2")
        await until(pilot, lambda: card(app, "player", 2).up, "card 2")
        assert {card(app, "player", i).by for i in (1, 2)} == {app.conn.player}, (
            "turned by the player, not the croupier"
        )
        await finish_coup(pilot, app)
        assert model_of(app).last_net is not None
        await asyncio.sleep(0)
        await app.action_quit()


async def test_a_narrow_terminal_watching(chemmy_server: Any) -> None:
    """80x24: the side panel goes (the roads are a key away); watching a table works."""
    app = ChemmyApp(chemmy_server.url, guest=True, name="Narrow", options=Options(bell=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(
            pilot, lambda: app.lobby.query_one("#tables", DataTable).row_count >= 6, "the lobby"
        )
        app.open_table("lobby")
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, TableScreen)
                and app.model is not None
                and app.model.seq is not None
            ),
            "the table",
        )
        await until(pilot, lambda: app.screen.has_class("narrow"), "the narrow layout")
        assert app.model is not None and not app.model.seated
        await pilot.press("p")  # not seated: refused on the message line, no crash
        # (a bet while the table waits: wrong_phase, checked first by the table's rules table)
        await until(
            pilot,
            lambda: (
                app.model is not None
                and ("seat" in app.model.message or "not now" in app.model.message)
            ),
            "a refusal",
        )
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, RoadsScreen), "the roads screen")
        await pilot.press("escape")
        await app.action_quit()
