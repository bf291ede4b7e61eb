"""The table screen headless (Textual ``run_test``) against a real server: typing a chat
message (Enter sends it; the server's refusal lands on the message line; no table key
fires while typing), the roads at 80 columns, and every button enabled from the
server's ``actions`` (fabricated here: the server that sends them is another branch)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from client_helpers import at_table, model_of, text_of, until
from textual.widgets import Button, Label, Static

from client_cli.bot import Bot, play_bots
from client_cli.tui import ChemmyApp, CutScreen, RoadsScreen, TableScreen
from client_cli.tui.table import ChatInput
from tests.kit import CoupLog, Game
from tests.kit.client import open_guest
from tests.kit.timing import scaled

WIDE = (150, 45)


@pytest.mark.slow
async def test_typing_a_chat_message(chemmy_server: Any) -> None:
    app = ChemmyApp(chemmy_server.url, guest=True, name="Chatty", table="tui-chat")
    async with app.run_test(size=WIDE) as pilot:
        await at_table(pilot, app)
        box = app.screen.query_one("#chat", ChatInput)
        assert not box.display
        await pilot.press("m")
        await until(pilot, lambda: box.display and box.has_focus, "the chat line")
        await pilot.press("h", "i", "space", "p", "b", "d", "s")  # table keys type, not act
        assert box.value == "hi pbds"
        await pilot.press("enter")
        await until(pilot, lambda: model_of(app).message == "Chatty: hi pbds", "the chat back")
        assert not box.display and not model_of(app).seated and model_of(app).my_bets == {}

        # The server's refusal (chat_too_long) on the message line.
        await pilot.press("m")
        await until(pilot, lambda: box.has_focus, "the chat line again")
        box.value = "x" * 201
        await pilot.press("enter")
        await until(pilot, lambda: "at most 200 characters" in model_of(app).message, "the refusal")

        # Esc closes the line without sending.
        before = model_of(app).log
        await pilot.press("m")
        await until(pilot, lambda: box.has_focus, "the chat line a third time")
        await pilot.press("n", "o", "escape")
        await until(pilot, lambda: not box.display, "the line closed")
        await pilot.pause(0.3)
        assert model_of(app).log == before and box.value == ""
        await pilot.press("s")  # the table's keys work again: sit
        await until(pilot, lambda: model_of(app).seated, "a seat")
        await app.action_quit()


@pytest.mark.slow
async def test_the_roads_at_80_columns(chemmy_server: Any) -> None:
    """Below NARROW columns the roads leave the table screen for their own (v), where
    the bead plate, the big road, the derived roads and the odds all fit 80x24."""
    bot = Bot(
        url=chemmy_server.url, table="tui-roads", name="Roady", rounds=3, rng=random.Random(2)
    )
    (report,) = await play_bots([bot], timeout=scaled(60))
    assert report.error is None and report.rounds == 3
    app = ChemmyApp(chemmy_server.url, guest=True, name="Narrow", table="tui-roads")
    async with app.run_test(size=(80, 24)) as pilot:
        await at_table(pilot, app)
        await until(pilot, lambda: app.screen.has_class("narrow"), "the narrow layout")
        await until(pilot, lambda: len(model_of(app).roads.get("bead_plate") or []) == 3, "3 coups")
        assert not app.screen.query_one("#side").display
        await until(pilot, lambda: model_of(app).odds is not None, "the odds")
        await pilot.press("v")
        await until(pilot, lambda: isinstance(app.screen, RoadsScreen), "the roads screen")
        await pilot.pause(0.2)
        roads = text_of(app, "#roads-big")
        lines = roads.splitlines()
        assert lines[0].startswith("ROADS  coups 3")
        assert "Bead plate" in lines[1] and "Big road" in lines[1]  # side by side
        beads = "".join(line[: line.index("  ", 2)] for line in lines[2:8])
        assert sum(beads.count(letter) for letter in "BPT") == 3
        assert all(len(line) <= 78 for line in lines), "fits 80 columns"
        assert "Big eye boy" in roads and "Cockroach" in roads
        odds = app.screen.query_one("#odds-big", Static)
        assert "Banker" in str(odds.render())
        assert odds.region.bottom <= 23, "the odds show without scrolling, above the footer"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, TableScreen), "back at the table")
        await app.action_quit()


@pytest.mark.slow
async def test_betting_without_a_seat_by_keys(chemmy_server: Any) -> None:
    """GAME_RULES §5: a spectator (a guest, never seated) bets by keys while a seated
    player plays: the chips go down without a seat, the "you" line says so, the layout
    shows the felt's totals (the seated player's chips and theirs), the seated player's
    DONE closes the betting, and the bettor's wager is settled."""
    seated = await open_guest(chemmy_server.url, name="Seated")
    app = ChemmyApp(chemmy_server.url, guest=True, name="Railbird", table="tui-no-seat")
    try:
        async with app.run_test(size=WIDE) as pilot:
            await at_table(pilot, app)
            await seated.join("tui-no-seat")
            await seated.call("sit", table="tui-no-seat")
            game = Game("tui-no-seat", {str(seated.player): seated}, seated)
            opened = await game.to_betting()
            await until(pilot, lambda: model_of(app).can("bet"), "betting open")
            assert not model_of(app).seated
            await pilot.press("p")  # a chip on Player, without a seat
            await until(pilot, lambda: model_of(app).my_bets.get("player"), "my chips down")
            assert "betting without a seat" in text_of(app, "#you")
            mine = model_of(app).my_bets["player"]
            assert "done" not in model_of(app).actions  # the seated player closes it
            await game.act(str(seated.player), "bet", area="player", amount=mine + 100)
            await until(
                pilot, lambda: model_of(app).area_totals().get("player") == 2 * mine + 100, "felt"
            )
            start = len(seated.frames)
            await game.act(str(seated.player), "done")
            rid = opened["data"]["round_id"]
            await game.settle(CoupLog(rid, opened["data"]["coup_no"], None, {}), start)
            await until(pilot, lambda: model_of(app).last_bets == {"player": mine}, "settled")
            assert model_of(app).last_net is not None
            await app.action_quit()
    finally:
        await seated.close()


@pytest.mark.slow
async def test_buttons_follow_the_servers_actions(chemmy_server: Any) -> None:
    app = ChemmyApp(chemmy_server.url, guest=True, name="Acty", table="lobby")
    async with app.run_test(size=WIDE) as pilot:
        await at_table(pilot, app)

        def button(bid: str) -> Button:
            return app.screen.query_one(f"#{bid}", Button)

        def show(actions: dict[str, Any], **changes: Any) -> None:
            app.model = replace(model_of(app), server_actions=actions, **changes)
            app.refresh_table()

        show(
            {
                "bet": {"areas": {"banker": {"min": 100, "max": 500}}},
                "remove_bet": {"areas": {"banker": {"have": 200, "max_partial": 100}}},
                "done": {},
                "pass_shoe": {},
            },
            phase="betting",
        )
        assert not button("area-banker").disabled and button("area-player").disabled
        assert not button("act-done").disabled and not button("act-pass").disabled
        assert not button("act-regret").disabled and button("act-clear").disabled
        assert button("act-cut").disabled and button("act-accept").disabled
        assert button("sq-toss").disabled and button("act-sit").disabled  # no "sit" listed

        show({"cut": {"min": 12, "max": 300}, "sit": {"seats": [2]}}, phase="cut")
        assert not button("act-cut").disabled and not button("act-sit").disabled
        assert button("area-banker").disabled and button("act-done").disabled
        await pilot.press("u")
        await until(pilot, lambda: isinstance(app.screen, CutScreen), "the cut dialog")
        assert "from 12 to 300" in str(app.screen.query_one(Label).render())
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, TableScreen), "back at the table")

        show(
            {"squeeze": {"hand": "player", "styles": ["peek", "quick"]}, "toss": {"hand": "player"}}
        )
        assert not button("sq-toss").disabled and not button("sq-peek").disabled
        assert button("sq-side").disabled and not button("sq-quick").disabled
        assert button("sq-card1").disabled and button("sq-card2").disabled
        assert model_of(app).my_turn == "player"

        show({"turn": {"hand": "player", "cards": [2]}, "toss": {"hand": "player"}})
        assert button("sq-card1").disabled and not button("sq-card2").disabled
        assert button("sq-peek").disabled
        await app.action_quit()
