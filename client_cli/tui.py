"""The full-screen Chemmy client (``chemmy play``), built with Textual.

Screens: the **lobby** (tables with limits, seats taken and phase), the **table** (seats
with the shoe holder, your balance and bets, chips, the bet areas with everyone's
stacks, the countdown, the cards and the squeeze, the roads and the exact odds, the
message line), **history** (your last rounds), **help** (the rules, ``rules.md``) and
**options** (animation speed, chip totals, the bell).

Everything happens through :class:`~client_cli.connection.Connection` (the public
protocol) and is drawn from :class:`~client_cli.model.TableModel`, which the app
replaces with :func:`~client_cli.model.reduce` for every item the server sends; this
module holds no rule of the game: buttons are enabled from the model's ``actions``, the
server's answer to what you may do now. Commands are sent one after another from a queue, so key presses
reach the server in order; a refusal from the server goes to the message line, and a
dropped connection shows "reconnecting…" then "resumed". Nothing the server refuses
crashes the UI.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Footer, Input, Label, Markdown, Static, Switch

from client_cli.connection import Connection, ConnectionLost, ConnState, ServerError
from client_cli.history import round_summary
from client_cli.model import Applied, TableModel, apply_event, reduce
from client_cli.money import format_money
from client_cli.render import odds_text, render_hands, render_layout, render_roads, render_seats
from client_cli.sentences import AREA_NAMES

__all__ = ["ChemmyApp", "Options", "chip_values", "rules_text"]

#: Seconds between squeeze frames at animation speed 1..5.
FRAME_DELAY = {1: 0.35, 2: 0.22, 3: 0.14, 4: 0.08, 5: 0.03}
SQUEEZE_FRAMES = 8
NARROW = 110  # columns: below this the side panel (roads, odds) moves to its own screen (v)
CHIP_MULTIPLES = (1, 5, 10, 25, 50)
AREA_KEYS = {
    "player": "p",
    "banker": "b",
    "tie": "t",
    "player_pair": "[",
    "banker_pair": "]",
    "super6": "6",
    "dragon_player": "{",
    "dragon_banker": "}",
}
AREA_LABELS = {
    "player": "PLAYER",
    "banker": "BANKER",
    "tie": "TIE",
    "player_pair": "P PAIR",
    "banker_pair": "B PAIR",
    "super6": "SUPER 6",
    "dragon_player": "DRAGON P",
    "dragon_banker": "DRAGON B",
}
PHASE_NAMES = {
    "betting": "BETTING",
    "turn": "TURNING",
    "shoe_offer": "SHOE OFFERED",
    "cut": "CUT",
    "waiting": "WAITING",
    "shuffle": "SHUFFLING",
    "settled": "SETTLED",
    "closed": "CLOSED",
}


@dataclass
class Options:
    """The player's options (the Options screen)."""

    speed: int = 4  # animation speed 1 (slow) .. 5 (fast)
    chip_totals: bool = True  # show each area's total of everyone's chips
    bell: bool = True  # ring the terminal bell on your turn and on a win


def rules_text() -> str:
    """The condensed rules packaged with the client (``client_cli/rules.md``)."""
    return resources.files("client_cli").joinpath("rules.md").read_text(encoding="utf-8")


def chip_values(model: TableModel) -> list[int]:
    """The chips offered at this table: multiples of its minimum, up to its maximum."""
    lim = model.limits
    low = lim.get("min", 100) or 100
    high = lim.get("max", low * 100) or low * 100
    chips = [low * m for m in CHIP_MULTIPLES if low * m <= high]
    return chips or [low]


class ActionButton(Button, can_focus=False):
    """A button the mouse presses; keys stay with the screen's bindings."""


# ---------------------------------------------------------------------------- lobby


class LobbyScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "refresh", "Refresh"),
        Binding("enter", "join", "Join", show=True),
        Binding("question_mark", "app.help", "Help"),
        Binding("h", "app.history", "History"),
        Binding("o", "app.options", "Options"),
        Binding("q", "app.quit", "Quit"),
    ]

    def compose(self) -> ComposeResult:
        yield Static("[b]CHEMMY[/b] — choose a table (Enter or click)", id="lobby-title")
        yield DataTable(id="tables", cursor_type="row", zebra_stripes=True)
        yield Static("", id="lobby-status")
        yield Footer()

    def __init__(self) -> None:
        super().__init__()
        self._status = ""
        self._tables: list[dict[str, Any]] | None = None

    def on_mount(self) -> None:
        table = self.query_one("#tables", DataTable)
        table.add_columns("Table", "Name", "Limits", "Tie max", "Seats", "Phase", "Shoe/Coup")
        table.focus()
        self.set_interval(5.0, self._poll_tables)
        self.set_status(self._status)
        if self._tables is not None:
            self.show_tables(self._tables)

    @property
    def chemmy(self) -> ChemmyApp:
        app = self.app
        assert isinstance(app, ChemmyApp)
        return app

    def set_status(self, text: str) -> None:
        self._status = text
        with contextlib.suppress(NoMatches):
            self.query_one("#lobby-status", Static).update(Text(text))

    def show_tables(self, tables: list[dict[str, Any]]) -> None:
        self._tables = tables
        try:
            table = self.query_one("#tables", DataTable)
        except NoMatches:
            return
        table.clear()
        for t in tables:
            lim = t.get("limits") or {}
            table.add_row(
                str(t.get("table")),
                str(t.get("name", "")),
                f"{format_money(int(lim.get('min', 0)))}-{format_money(int(lim.get('max', 0)))}",
                format_money(int(lim.get("tie_max", 0))),
                f"{t.get('seated', 0)}/{t.get('seats', 0)}",
                PHASE_NAMES.get(str(t.get("phase")), str(t.get("phase"))),
                f"{t.get('shoe_no', 0)}/{t.get('coup_no', 0)}",
                key=str(t.get("table")),
            )
        self.set_status(f"{len(tables)} tables · {self.chemmy.identity_text()}")

    def action_refresh(self) -> None:
        self.chemmy.refresh_lobby()

    def _poll_tables(self) -> None:
        if self.is_current and self.chemmy.conn.connected:
            self.chemmy.refresh_lobby()

    def action_join(self) -> None:
        table = self.query_one("#tables", DataTable)
        if table.row_count == 0:
            return
        row = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        if row.value is not None:
            self.chemmy.open_table(str(row.value))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.chemmy.open_table(str(event.row_key.value))


# ---------------------------------------------------------------------------- table


class TableScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "digit(1)", "Chip 1", show=False),
        Binding("2", "digit(2)", "Chip 2", show=False),
        Binding("3", "digit(3)", "Chip 3", show=False),
        Binding("4", "digit(4)", "Chip 4", show=False),
        Binding("5", "digit(5)", "Chip 5", show=False),
        Binding("p", "place('player')", "Player", show=False),
        Binding("b", "place('banker')", "Banker", show=False),
        Binding("t", "place('tie')", "Tie", show=False),
        Binding("left_square_bracket", "place('player_pair')", "P pair", show=False),
        Binding("right_square_bracket", "place('banker_pair')", "B pair", show=False),
        Binding("6", "place('super6')", "Super 6", show=False),
        Binding("left_curly_bracket", "place('dragon_player')", "Dragon P", show=False),
        Binding("right_curly_bracket", "place('dragon_banker')", "Dragon B", show=False),
        Binding("r", "regret", "Regret", show=False),
        Binding("c", "clear", "Clear", show=False),
        Binding("a", "same", "Same bet", show=False),
        Binding("d", "done", "DONE"),
        Binding("s", "sit_stand", "Sit/Stand"),
        Binding("y", "accept", "Accept shoe", show=False),
        Binding("n", "decline", "Decline shoe", show=False),
        Binding("g", "pass_shoe", "Pass shoe", show=False),
        Binding("u", "cut", "Cut", show=False),
        Binding("space", "toss", "TOSS", show=False),
        Binding("e", "squeeze('peek')", "PEEK", show=False),
        Binding("i", "squeeze('side')", "SIDE", show=False),
        Binding("k", "squeeze('quick')", "QUICK", show=False),
        Binding("h", "app.history", "History"),
        Binding("v", "roads", "Roads"),
        Binding("question_mark", "app.help", "Help"),
        Binding("o", "app.options", "Options"),
        Binding("l", "leave", "Lobby"),
        Binding("q", "app.quit", "Quit"),
    ]

    def compose(self) -> ComposeResult:
        yield Static("", id="status")
        with Horizontal(id="main"):
            yield Static("", id="seats")
            with Vertical(id="center"):
                yield Static("", id="hands")
                yield Static("", id="layout")
            with VerticalScroll(id="side"):
                yield Static("", id="roads")
                yield Static("", id="odds")
        yield Static("", id="you")
        with Horizontal(classes="bar", id="chips-bar"):
            yield Label("Chips ", classes="bar-label")
            for i in range(len(CHIP_MULTIPLES)):
                yield ActionButton(str(i + 1), id=f"chip-{i}", compact=True)
        with Horizontal(classes="bar", id="areas-bar"):
            yield Label("Bet   ", classes="bar-label")
            for area, label in AREA_LABELS.items():
                yield ActionButton(f"{label} ({AREA_KEYS[area]})", id=f"area-{area}", compact=True)
        with Horizontal(classes="bar", id="actions-bar"):
            for bid, label in (
                ("regret", "REGRET r"),
                ("clear", "CLEAR c"),
                ("same", "SAME BET a"),
                ("done", "DONE d"),
                ("sit", "SIT s"),
                ("accept", "ACCEPT y"),
                ("decline", "DECLINE n"),
                ("pass", "PASS g"),
                ("cut", "CUT u"),
            ):
                yield ActionButton(label, id=f"act-{bid}", compact=True)
        with Horizontal(classes="bar", id="squeeze-bar"):
            for bid, label in (
                ("toss", "TOSS ␣"),
                ("peek", "PEEK e"),
                ("side", "SIDE i"),
                ("quick", "QUICK k"),
                ("card1", "CARD 1"),
                ("card2", "CARD 2"),
            ):
                yield ActionButton(label, id=f"sq-{bid}", compact=True)
        yield Static("", id="message")
        yield Footer()

    @property
    def chemmy(self) -> ChemmyApp:
        app = self.app
        assert isinstance(app, ChemmyApp)
        return app

    def on_mount(self) -> None:
        self.set_interval(0.25, self.update_status)
        self.refresh_view()

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "narrow")
        self.call_after_refresh(self.chemmy.refresh_table)

    # -- drawing ---------------------------------------------------------------------
    def update_status(self) -> None:
        with contextlib.suppress(NoMatches):
            self._update_status()

    def _update_status(self) -> None:
        app = self.chemmy
        model = app.model
        if model is None:
            return
        name = model.options.get("name") or model.table_id
        lim = model.limits
        parts = [
            f"{name}",
            f"{format_money(lim.get('min', 0))}-{format_money(lim.get('max', 0))} (tie ≤ {format_money(lim.get('tie_max', 0))})",
        ]
        if model.shoe is not None:
            left = model.shoe.get("cards_left")
            parts.append(f"shoe {model.shoe.get('no')}" + (f" · {left} cards" if isinstance(left, int) else ""))
        parts.append(f"coup {model.coup_no}")
        phase = PHASE_NAMES.get(model.phase, model.phase.upper())
        remaining = app.remaining(model.deadline)
        if remaining is not None:
            phase += f" {remaining:0.0f}s"
        parts.append(phase)
        state = app.conn.state
        style = {"connected": "green", "resumed": "green", "reconnecting": "yellow", "connecting": "yellow"}.get(
            state.value, "red"
        )
        label = {"reconnecting": "reconnecting…", "connecting": "connecting…"}.get(state.value, state.value)
        text = Text(f"● {label}  ", style=style)
        text.append(" · ".join(parts), style="bold")
        self.query_one("#status", Static).update(text)

    def refresh_view(self) -> None:
        app = self.chemmy
        model = app.model
        if model is None:
            return
        self._update_status()
        self.query_one("#seats", Static).update(render_seats(model))
        self.query_one("#hands", Static).update(render_hands(model, app.local_progress))
        self.query_one("#layout", Static).update(render_layout(model, totals=app.options.chip_totals))
        roads = self.query_one("#roads", Static)
        width = roads.size.width or 40
        self.query_one("#roads", Static).update(render_roads(model.roads, width=max(12, width - 1)))
        self.query_one("#odds", Static).update(odds_text(model.odds))
        you = Text()
        you.append(f"You: {app.conn.identity.get('name', '?')}", style="bold yellow")
        you.append(f" · seat {model.my_seat}" if model.seated else " · watching (s to sit)")
        if model.balance is not None:
            you.append(f" · balance {format_money(model.balance)}", style="bold")
        if model.available is not None and model.available != model.balance:
            you.append(f" (available {format_money(model.available)})")
        stake = sum(model.my_stake.values())
        you.append(f" · bet {format_money(stake)}")
        chips = chip_values(model)
        you.append(f" · chip {format_money(chips[min(app.chip, len(chips) - 1)])}", style="cyan")
        if model.i_hold:
            you.append(" · ◆ you hold the shoe", style="magenta")
        self.query_one("#you", Static).update(you)
        self.query_one("#message", Static).update(Text(model.message))
        self._update_buttons(model, chips)

    def _update_buttons(self, model: TableModel, chips: list[int]) -> None:
        """Every button from the server's answer (``model.actions``): a command it does
        not list is greyed out."""
        app = self.chemmy
        bets = model.action("bet").get("areas") or {}
        for i in range(len(CHIP_MULTIPLES)):
            b = self.query_one(f"#chip-{i}", ActionButton)
            if i < len(chips):
                b.label = format_money(chips[i])
                b.display = True
                b.variant = "primary" if i == app.chip else "default"
            else:
                b.display = False
        for area in AREA_LABELS:
            b = self.query_one(f"#area-{area}", ActionButton)
            b.display = area in model.areas
            b.disabled = area not in bets
        self._enable("act-regret", model.can("remove_bet"))
        self._enable("act-clear", model.can("clear_bets"))
        self._enable("act-same", model.can("same_bet"))
        self._enable("act-done", model.can("done"))
        sit = self.query_one("#act-sit", ActionButton)
        sit.label = "STAND s" if model.seated else "SIT s"
        self._enable("act-sit", model.can("stand" if model.seated else "sit"))
        self._enable("act-accept", model.can("accept_shoe"))
        self._enable("act-decline", model.can("decline_shoe"))
        self._enable("act-pass", model.can("pass_shoe"))
        self._enable("act-cut", model.can("cut"))
        self._enable("sq-toss", model.can("toss"))
        styles = model.action("squeeze").get("styles") or ()
        for style in ("peek", "side", "quick"):
            self._enable(f"sq-{style}", style in styles)
        stage = model.coup.stage_cards() if model.coup is not None else [1, 2]
        turnable = model.action("turn").get("cards") or ()
        c1 = self.query_one("#sq-card1", ActionButton)
        c1.label = f"CARD {stage[0]}"
        self._enable("sq-card1", stage[0] in turnable)
        c2 = self.query_one("#sq-card2", ActionButton)
        c2.display = len(stage) > 1
        self._enable("sq-card2", len(stage) > 1 and stage[1] in turnable)

    def _enable(self, bid: str, on: bool) -> None:
        self.query_one(f"#{bid}", ActionButton).disabled = not on

    # -- mouse -----------------------------------------------------------------------
    def on_button_pressed(self, event: Button.Pressed) -> None:
        bid = event.button.id or ""
        if bid.startswith("chip-"):
            self.chemmy.choose_chip(int(bid.removeprefix("chip-")))
        elif bid.startswith("area-"):
            self.action_place(bid.removeprefix("area-"))
        elif bid.startswith("act-"):
            action = bid.removeprefix("act-")
            getattr(self, f"action_{'sit_stand' if action == 'sit' else 'pass_shoe' if action == 'pass' else action}")()
        elif bid == "sq-toss":
            self.action_toss()
        elif bid in ("sq-peek", "sq-side", "sq-quick"):
            self.action_squeeze(bid.removeprefix("sq-"))
        elif bid in ("sq-card1", "sq-card2"):
            self.chemmy.turn_card(int(bid[-1]))

    # -- keys ------------------------------------------------------------------------
    def action_digit(self, n: int) -> None:
        app = self.chemmy
        model = app.model
        if model is not None and model.squeezing:
            app.turn_card(n)
        else:
            app.choose_chip(n - 1)

    def action_place(self, area: str) -> None:
        self.chemmy.place(area)

    def action_regret(self) -> None:
        self.chemmy.regret()

    def action_clear(self) -> None:
        self.chemmy.table_command("clear_bets", lambda r: self.chemmy.placed.clear())

    def action_same(self) -> None:
        self.chemmy.table_command("same_bet")

    def action_done(self) -> None:
        self.chemmy.table_command("done")

    def action_sit_stand(self) -> None:
        model = self.chemmy.model
        self.chemmy.table_command("stand" if model is not None and model.seated else "sit")

    def action_accept(self) -> None:
        self.chemmy.table_command("accept_shoe")

    def action_decline(self) -> None:
        self.chemmy.table_command("decline_shoe")

    def action_pass_shoe(self) -> None:
        self.chemmy.table_command("pass_shoe")

    def action_cut(self) -> None:
        model = self.chemmy.model
        cut = model.action("cut") if model is not None else {}
        if not cut:
            self.chemmy.note("It is not your cut")
            return
        low, high = int(cut["min"]), int(cut["max"])
        self.app.push_screen(CutScreen(low, high, random.randint(low, high)))

    def action_toss(self) -> None:
        self.chemmy.toss()

    def action_squeeze(self, style: str) -> None:
        self.chemmy.squeeze(style)

    def action_leave(self) -> None:
        self.chemmy.leave_table()

    def action_roads(self) -> None:
        self.app.push_screen(RoadsScreen())


class CutScreen(ModalScreen[None]):
    """Choose where to cut the shoe, within the bounds the server gives (``cut``)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss", "Cancel")]

    def __init__(self, low: int, high: int, suggestion: int) -> None:
        super().__init__()
        self.low = low
        self.high = high
        self.suggestion = suggestion

    def compose(self) -> ComposeResult:
        with Vertical(id="cut-box"):
            yield Label(f"Cut the shoe: a position from {self.low} to {self.high}, then Enter")
            yield Input(str(self.suggestion), id="cut-at", type="integer")
            with Horizontal():
                yield Button("CUT", id="cut-ok", variant="primary")
                yield Button("Cancel", id="cut-cancel")

    def on_mount(self) -> None:
        self.query_one("#cut-at", Input).focus()

    def _submit(self) -> None:
        text = self.query_one("#cut-at", Input).value.strip()
        try:
            position = int(text)
        except ValueError:
            self.query_one(Label).update(f"Not a number: {text!r}. From {self.low} to {self.high}:")
            return
        app = self.app
        assert isinstance(app, ChemmyApp)
        app.table_command("cut", position=position)
        self.dismiss()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cut-ok":
            self._submit()
        else:
            self.dismiss()


# ---------------------------------------------------------------------------- others


class HistoryScreen(Screen[None]):
    """Your last rounds (the ``history`` command)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("h", "app.pop_screen", "Back", show=False),
        Binding("r", "reload", "Reload"),
    ]

    def compose(self) -> ComposeResult:
        yield Static("[b]HISTORY[/b] — your last rounds (Esc to go back)", id="history-title")
        yield DataTable(id="history", zebra_stripes=True)
        yield Static("", id="history-status")
        yield Footer()

    def on_mount(self) -> None:
        t = self.query_one("#history", DataTable)
        t.add_columns("Round", "Result", "Player", "Banker", "Your bets", "Net", "Balance")
        self.action_reload()

    def action_reload(self) -> None:
        self.run_worker(self._load(), exclusive=True)

    async def _load(self) -> None:
        app = self.app
        assert isinstance(app, ChemmyApp)
        status = self.query_one("#history-status", Static)
        try:
            reply = await app.conn.request("history", limit=100)
        except (ServerError, ConnectionLost) as exc:
            status.update(Text(f"History unavailable: {exc}", style="red"))
            return
        me = app.conn.player or ""
        rounds = [round_summary(r, me) for r in reply.get("rounds") or []]
        t = self.query_one("#history", DataTable)
        t.clear()
        for r in rounds:
            bets = ", ".join(f"{AREA_NAMES.get(a, a)} {format_money(v)}" for a, v in r["bets"].items())
            after = r["balance_after"]
            t.add_row(
                str(r["round_id"]),
                str(r["result"]),
                " ".join(r["player"]),
                " ".join(r["banker"]),
                bets or "-",
                Text(format_money(r["net"], sign=True), style="green" if r["net"] > 0 else "red" if r["net"] < 0 else ""),
                format_money(after) if isinstance(after, int) else "-",
            )
        net = sum(r["net"] for r in rounds)
        note = " (a guest's history is this connection's only)" if app.conn.identity.get("guest") else ""
        status.update(Text(f"{len(rounds)} rounds · net {format_money(net, sign=True)}{note}"))


class RoadsScreen(Screen[None]):
    """The roads and the odds on the whole screen (for narrow terminals too)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("v", "app.pop_screen", "Back", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="roads-full"):
            yield Static("", id="roads-big")
            yield Static("", id="odds-big")
        yield Footer()

    def on_mount(self) -> None:
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        app = self.app
        assert isinstance(app, ChemmyApp)
        model = app.model
        if model is None:
            return
        width = max(20, self.size.width - 6)
        self.query_one("#roads-big", Static).update(render_roads(model.roads, width=width))
        self.query_one("#odds-big", Static).update(odds_text(model.odds))


class HelpScreen(Screen[None]):
    """The rules (``client_cli/rules.md``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("question_mark", "app.pop_screen", "Back", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Markdown(rules_text())
        yield Footer()


class OptionsScreen(ModalScreen[None]):
    """Animation speed 1-5, chip totals on/off, the bell on/off."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("minus", "speed(-1)", "Slower"),
        Binding("plus,equals_sign", "speed(1)", "Faster"),
    ]

    def compose(self) -> ComposeResult:
        app = self.app
        assert isinstance(app, ChemmyApp)
        o = app.options
        with Vertical(id="options-box"):
            yield Label("[b]OPTIONS[/b] (Esc to close)")
            with Horizontal(classes="option"):
                yield Label("Animation speed ", classes="option-label")
                yield Button("-", id="speed-down", compact=True)
                yield Label(str(o.speed), id="speed")
                yield Button("+", id="speed-up", compact=True)
            with Horizontal(classes="option"):
                yield Label("Chip totals ", classes="option-label")
                yield Switch(o.chip_totals, id="opt-totals")
            with Horizontal(classes="option"):
                yield Label("Sound (bell) ", classes="option-label")
                yield Switch(o.bell, id="opt-bell")
            yield Button("Close", id="options-close", compact=True)

    def action_speed(self, delta: int) -> None:
        app = self.app
        assert isinstance(app, ChemmyApp)
        app.options.speed = max(1, min(5, app.options.speed + delta))
        self.query_one("#speed", Label).update(str(app.options.speed))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "speed-down":
            self.action_speed(-1)
        elif event.button.id == "speed-up":
            self.action_speed(1)
        elif event.button.id == "options-close":
            self.dismiss()

    def on_switch_changed(self, event: Switch.Changed) -> None:
        app = self.app
        assert isinstance(app, ChemmyApp)
        if event.switch.id == "opt-totals":
            app.options.chip_totals = event.value
        elif event.switch.id == "opt-bell":
            app.options.bell = event.value
        app.refresh_table()


# ---------------------------------------------------------------------------- the app


class ChemmyApp(App[int]):
    """``chemmy play``: connects, shows the lobby (or the ``table`` given), plays."""

    TITLE = "Chemmy"
    CSS = """
    #lobby-title, #history-title { height: 1; padding: 0 1; background: $boost; }
    #tables, #history { height: 1fr; }
    #lobby-status, #history-status { height: 1; padding: 0 1; }
    #status { height: 1; padding: 0 1; background: $boost; }
    #main { height: 1fr; }
    #seats { width: 26; border: round $primary; padding: 0 1; }
    #center { width: 70; }
    #hands { height: 11; border: round $secondary; padding: 0 1; }
    #layout { height: 1fr; border: round $secondary; padding: 0 1; }
    #side { width: 1fr; min-width: 24; border: round $primary; padding: 0 1; }
    #roads, #odds { height: auto; }
    TableScreen.narrow #side { display: none; }
    TableScreen.narrow #seats { width: 1fr; }
    #roads-full { padding: 1 2; }
    #you { height: 1; padding: 0 1; }
    .bar { height: 1; padding: 0 1; }
    .bar Button { margin: 0 1 0 0; min-width: 6; width: auto; }
    .bar-label { width: 7; }
    #message { height: 1; padding: 0 1; background: $panel; color: $text; text-style: bold; }
    #help { padding: 1 2; }
    #cut-box, #options-box { width: 60; height: auto; border: thick $primary; background: $surface; padding: 1 2; }
    CutScreen, OptionsScreen { align: center middle; }
    .option { height: auto; margin: 1 0 0 0; }
    .option Label { padding: 1 0 0 0; }
    .option Button { margin: 1 1 0 1; }
    .option-label { width: 20; }
    #speed { width: 3; content-align: center middle; }
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        guest: bool = True,
        name: str | None = None,
        table: str | None = None,
        options: Options | None = None,
    ) -> None:
        super().__init__()
        self.url = url
        self.initial_table = table
        self.options = options or Options()
        self.conn = Connection(url, token=token, guest=guest or not token, name=name, on_item=self.on_item)
        self.model: TableModel | None = None
        self.table_id: str | None = None
        self.chip = 0
        self.placed: list[tuple[str, int]] = []  # chips placed this round, for regret
        self.local_progress: dict[tuple[str, int], int] = {}  # my own squeeze animation
        self.applied: list[int] = []  # seqs applied, in order (the tests read it)
        self.snapshots = 0
        self.lobby = LobbyScreen()
        self.table_screen: TableScreen | None = None
        self._commands: asyncio.Queue[tuple[str, dict[str, Any], Callable[[dict[str, Any]], None] | None]] = (
            asyncio.Queue()
        )
        self._resyncing = False
        self._animating: set[tuple[str, int]] = set()

    # -- start and stop --------------------------------------------------------------
    async def on_mount(self) -> None:
        await self.push_screen(self.lobby)
        self.lobby.set_status(f"connecting to {self.url}…")
        self.run_worker(self._command_loop(), name="commands", group="commands")
        self.run_worker(self._connect(), name="connect", exclusive=True, group="connect")

    async def _connect(self) -> None:
        try:
            await self.conn.start(retry=True)
        except (ServerError, ConnectionLost) as exc:
            self.lobby.set_status(f"Cannot connect: {exc}")
            return
        if self.initial_table:
            self.open_table(self.initial_table)
        else:
            self.refresh_lobby()

    async def action_quit(self) -> None:
        with contextlib.suppress(Exception):
            await self.conn.close()
        self.exit(0)

    async def on_unmount(self) -> None:
        with contextlib.suppress(Exception):
            await self.conn.close()

    def identity_text(self) -> str:
        ident = self.conn.identity
        if not ident:
            return "not connected"
        who = "guest " if ident.get("guest") else ""
        bal = ident.get("balance")
        money = f" · balance {format_money(bal)}" if isinstance(bal, int) else ""
        return f"{who}{ident.get('name')} ({ident.get('player')}){money}"

    # -- lobby -----------------------------------------------------------------------
    def refresh_lobby(self) -> None:
        self.run_worker(self._refresh_lobby(), exclusive=True, group="lobby")

    async def _refresh_lobby(self) -> None:
        try:
            reply = await self.conn.request("tables")
        except (ServerError, ConnectionLost) as exc:
            self.lobby.set_status(f"Cannot list the tables: {exc}")
            return
        self.lobby.show_tables(list(reply.get("tables") or []))

    def open_table(self, table: str) -> None:
        self.run_worker(self._open_table(table), exclusive=True, group="open")

    async def _open_table(self, table: str) -> None:
        self.model = TableModel(me=self.conn.player)
        self.table_id = table
        self.placed.clear()
        try:
            await self.conn.join(table)
        except (ServerError, ConnectionLost) as exc:
            self.model = None
            self.table_id = None
            self.lobby.set_status(f"Cannot join {table}: {exc}")
            return
        self.table_screen = TableScreen()
        await self.push_screen(self.table_screen)
        self.refresh_table()
        await self._fetch_roads()

    def leave_table(self) -> None:
        self.run_worker(self._leave_table(), exclusive=True, group="open")

    async def _leave_table(self) -> None:
        table = self.table_id
        if table is None:
            return
        try:
            await self.conn.leave(table)
        except ServerError as exc:
            self.note(exc.message)
            return
        except ConnectionLost:
            pass
        self.model = None
        self.table_id = None
        if self.table_screen is not None and self.screen is self.table_screen:
            self.pop_screen()
        self.table_screen = None
        self.refresh_lobby()

    # -- what the server sends -------------------------------------------------------
    def on_item(self, item: dict[str, Any]) -> None:
        """Every item of the connection's stream, in order (called by the reader).
        Nothing the server sends may take the UI down: a surprise goes to the message
        line and the table is fetched afresh."""
        try:
            self._on_item(item)
        except Exception as exc:
            self.note(f"client error ({type(exc).__name__}: {exc}); catching up")
            if self.table_id is not None and not self._resyncing:
                self._resyncing = True
                self.run_worker(self._resync(self.table_id), group="resync")

    def _on_item(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        model = self.model
        if kind == "snapshot":
            if model is not None and item.get("table") == self.table_id:
                self.model = replace(reduce(model, item), me=self.conn.player)
                self.snapshots += 1
                self._resyncing = False
                self.local_progress.clear()
                self.run_worker(self._fetch_roads(), group="roads")
        elif kind == "event":
            if model is not None and item.get("table") == self.table_id:
                self.model, result = apply_event(model, item)
                if result is Applied.APPLIED:
                    self.applied.append(int(item["seq"]))
                    self._after_event(self.model, item)
                elif result is Applied.GAP and not self._resyncing and self.table_id is not None:
                    self._resyncing = True
                    self.note("Catching up with the table…")
                    self.run_worker(self._resync(self.table_id), group="resync")
        elif kind == "chat":
            if model is not None and item.get("table") == self.table_id:
                self.model = reduce(model, item)
        elif kind == "status":
            self._on_status(item)
        elif kind == "error":
            self.note(str(item.get("message") or item.get("code")))
        self.refresh_table()

    def _after_event(self, model: TableModel, item: dict[str, Any]) -> None:
        kind = item.get("kind")
        data = item.get("data") or {}
        if kind == "settled":
            self.placed.clear()
            self.local_progress.clear()
            self.run_worker(self._fetch_roads(), group="roads")
            if isinstance(data.get("net"), int) and data["net"] > 0:
                self._bell()
        elif kind == "card":
            self.local_progress.pop((str(data.get("hand")), int(data.get("index") or 0)), None)
        elif kind == "betting_opened":
            self.placed.clear()
        elif kind in ("turn", "shoe_offered", "cut_offered") and data.get("turner", data.get("player")) == model.me:
            self._bell()

    def _on_status(self, item: dict[str, Any]) -> None:
        state = item.get("state")
        if state == ConnState.RECONNECTING.value:
            self.note("reconnecting…")
        elif state == ConnState.RESUMED.value:
            if item.get("same_player", True):
                resumed = item.get("tables") or {}
                self.note("resumed" if all(resumed.values()) else "resumed (from a fresh snapshot)")
            else:
                self.note("reconnected as a new guest: your seat is gone (use a token to keep it)")
        elif state == ConnState.CLOSED.value and self.conn.close_reason:
            self.note(f"disconnected: {self.conn.close_reason}")
        if self.screen is self.lobby:
            self.lobby.set_status(f"{state}: {self.identity_text()}")

    async def _resync(self, table: str) -> None:
        try:
            await self.conn.resync(table)
        except (ServerError, ConnectionLost) as exc:
            self.note(f"Cannot catch up: {exc}")
        finally:
            self._resyncing = False

    async def _fetch_roads(self) -> None:
        table = self.table_id
        if table is None or self.model is None:
            return
        try:
            reply = await self.conn.request("roads", table=table)
        except (ServerError, ConnectionLost):
            return
        if self.model is not None and self.table_id == table:
            self.model = reduce(self.model, {"type": "roads", "roads": reply.get("roads"), "odds": reply.get("odds")})
            self.refresh_table()

    # -- drawing ---------------------------------------------------------------------
    def refresh_table(self) -> None:
        screen = self.table_screen
        if screen is not None and screen.is_mounted:
            with contextlib.suppress(NoMatches):
                screen.refresh_view()
        if isinstance(self.screen, RoadsScreen):
            with contextlib.suppress(NoMatches):
                self.screen.redraw()

    def note(self, text: str) -> None:
        if self.model is not None:
            self.model = reduce(self.model, {"type": "note", "text": text})
            self.refresh_table()
        elif self.screen is self.lobby:
            self.lobby.set_status(text)

    def remaining(self, deadline: float | None) -> float | None:
        if deadline is None:
            return None
        return max(0.0, float(deadline) - self.conn.server_time())

    def _bell(self) -> None:
        if self.options.bell:
            self.bell()

    # -- commands --------------------------------------------------------------------
    def table_command(self, kind: str, on_ok: Callable[[dict[str, Any]], None] | None = None, **fields: Any) -> None:
        """Queue a command for the current table; replies and refusals come back on
        the message line."""
        if self.table_id is None:
            return
        self._commands.put_nowait((kind, {"table": self.table_id, **fields}, on_ok))

    async def _command_loop(self) -> None:
        while True:
            kind, fields, on_ok = await self._commands.get()
            try:
                reply = await self.conn.request(kind, **fields)
            except ServerError as exc:
                if kind != "progress":
                    self.note(exc.message or exc.code)
                    self._bell()
                continue
            except ConnectionLost:
                if kind != "progress":
                    self.note(f"Not connected: {kind} not sent (reconnecting…)")
                continue
            except Exception as exc:  # never let a command take the UI down
                self.note(f"{kind} failed: {exc}")
                continue
            if on_ok is not None:
                on_ok(reply)

    def choose_chip(self, index: int) -> None:
        model = self.model
        if model is None:
            return
        chips = chip_values(model)
        if not 0 <= index < len(chips):
            self.note(f"There are {len(chips)} chips here")
            return
        self.chip = index
        self.note(f"Chip {format_money(chips[index])}")

    def place(self, area: str) -> None:
        model = self.model
        if model is None:
            return
        if area not in model.areas:
            self.note(f"{AREA_NAMES.get(area, area)} is not open at this table")
            return
        chips = chip_values(model)
        amount = chips[min(self.chip, len(chips) - 1)]

        def placed(_reply: dict[str, Any]) -> None:
            self.placed.append((area, amount))

        self.table_command("bet", placed, area=area, amount=amount)

    def regret(self) -> None:
        """Take back the last chip placed (or the last area's bet when the chips came
        from SAME BET); the whole area when the chip is more than may come off alone."""
        model = self.model
        if model is None:
            return
        if self.placed:
            area, amount = self.placed[-1]
        elif model.my_bets:
            area, amount = list(model.my_bets.items())[-1]
        else:
            self.note("You have no chips to take back")
            return
        # The server says how much may come off and still leave the minimum on the area.
        bounds = (model.action("remove_bet").get("areas") or {}).get(area)
        whole = bounds is None or amount > int(bounds.get("max_partial", 0))

        def removed(_reply: dict[str, Any]) -> None:
            if self.placed:
                self.placed.pop()

        if whole:
            self.table_command("remove_bet", removed, area=area)
        else:
            self.table_command("remove_bet", removed, area=area, amount=amount)

    def toss(self) -> None:
        model = self.model
        hand = model.my_turn if model is not None else None
        if hand is None:
            self.note("It is not your turn to turn the cards")
            return
        self.table_command("toss", hand=hand)

    def squeeze(self, style: str) -> None:
        model = self.model
        if model is None or model.my_turn is None:
            self.note("It is not your turn to turn the cards")
            return
        squeeze = model.action("squeeze")
        if not squeeze:
            style_now = model.coup.style if model.coup is not None else None
            self.note(f"You are squeezing ({style_now}): CARD 1, CARD 2 or TOSS")
            return
        self.table_command("squeeze", hand=squeeze.get("hand"), style=style)

    def turn_card(self, n: int) -> None:
        """CARD n of the squeeze: the card opens over a few frames (sending its
        progress to the table), then is turned."""
        model = self.model
        hand = model.my_turn if model is not None else None
        if model is None or hand is None or model.coup is None:
            self.note("It is not your turn to turn the cards")
            return
        turn = model.action("turn")
        if not turn:
            self.note("Choose PEEK, SIDE or QUICK first (or TOSS)")
            return
        stage = model.coup.stage_cards()
        index = stage[n - 1] if 1 <= n <= len(stage) else n
        if index not in (turn.get("cards") or ()):
            self.note(f"Card {index} is not waiting to be turned")
            return
        if (hand, index) in self._animating:
            return
        self._animating.add((hand, index))
        self.run_worker(self._squeeze_card(hand, index), group="squeeze")

    async def _squeeze_card(self, hand: str, index: int) -> None:
        delay = FRAME_DELAY.get(self.options.speed, FRAME_DELAY[4])
        try:
            for frame in range(1, SQUEEZE_FRAMES + 1):
                pct = frame * 100 // SQUEEZE_FRAMES
                self.local_progress[(hand, index)] = pct
                self.refresh_table()
                model = self.model
                progress = model.action("progress") if model is not None else {}
                if frame % 2 == 0 and pct < 100 and index in (progress.get("cards") or ()):
                    self.table_command("progress", hand=hand, card=index, percent=pct)
                await asyncio.sleep(delay)
            self.table_command("turn", hand=hand, card=index)
        finally:
            self._animating.discard((hand, index))

    # -- screens ---------------------------------------------------------------------
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_history(self) -> None:
        if not isinstance(self.screen, HistoryScreen):
            self.push_screen(HistoryScreen())

    def action_options(self) -> None:
        if not isinstance(self.screen, OptionsScreen):
            self.push_screen(OptionsScreen())

    # -- for tests -------------------------------------------------------------------
    def now(self) -> float:
        return time.time()
