"""The table screen: seats, hands and the squeeze, the bet layout, the roads and odds
(beside the cards from :data:`NARROW` columns; on their own screen, ``v``, at any width),
your balance and bets, the chip, action and squeeze bars, the message line and the chat
line (``m``). With several tables followed (issue 37 §2), a line of tabs above the
status: each table's number, name and phase, and what waits on you there
(:func:`waiting_on_you`); Tab, Shift+Tab and F1-F4 switch, ``j`` joins another from
the lobby.

It draws the app's :class:`~client_cli.model.TableModel` with :mod:`client_cli.render`
and turns keys and clicks into the app's commands. Every button is enabled from the
model's ``actions`` (the server's answer to what you may do now), never from a rule of
its own.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Button, Footer, Input, Label, Static

from client_cli.i18n import LocalNames, t
from client_cli.model import TableModel
from client_cli.money import format_money
from client_cli.render import odds_text, render_hands, render_layout, render_roads, render_seats
from client_cli.sentences import PHASES
from client_cli.tui.keys import (
    ACTION_BUTTONS,
    AREA_KEYS,
    AREA_LABELS,
    SQUEEZE_BUTTONS,
    TABLE_KEYS,
    button_label,
    relabel_keys,
)
from client_cli.tui.popups import CutScreen
from client_cli.tui.screens import RoadsScreen

if TYPE_CHECKING:
    from client_cli.tui.app import ChemmyApp

__all__ = [
    "CHIP_MULTIPLES",
    "NARROW",
    "PHASE_NAMES",
    "ActionButton",
    "ChatInput",
    "TableScreen",
    "chip_values",
    "table_tab",
    "waiting_on_you",
]

NARROW = 110  # columns: below this the side panel (roads, odds) moves to its own screen (v)
CHIP_MULTIPLES = (1, 5, 10, 25, 50)
#: The status line's phase, in the current language (``cli.phase.*``): the table's
#: phases, and "settled" for the moment between a coup's result and the next betting.
PHASE_NAMES: Mapping[str, str] = LocalNames("cli.phase.", (*PHASES, "settled"))


def chip_values(model: TableModel) -> list[int]:
    """The chips offered at this table: multiples of its minimum, up to its maximum."""
    lim = model.limits
    low = lim.get("min", 100) or 100
    high = lim.get("max", low * 100) or low * 100
    chips = [low * m for m in CHIP_MULTIPLES if low * m <= high]
    return chips or [low]


def waiting_on_you(model: TableModel) -> str | None:
    """What the table waits on you for, as the server's actions say it (a message id:
    your turn to turn, the shoe or the cut offered to you, your bets and DONE), or None.
    A bettor without a seat never holds the betting (GAME_RULES §5): never waited on."""
    if model.my_turn is not None:
        return "cli.tabs.your_turn"
    if model.offered_to_me and model.can("accept_shoe"):
        return "cli.tabs.shoe"
    if model.i_cut and model.can("cut"):
        return "cli.tabs.cut"
    if model.phase == "betting" and model.can("done"):
        return "cli.tabs.done"
    return None


def table_tab(n: int, model: TableModel, *, shown: bool, remaining: float | None) -> Text:
    """One table's tab: ``n`` (its F-key), its name, its phase (and the seconds left),
    and what waits on you there, marked; the one shown stands out."""
    name = str(model.options.get("name") or model.table_id or "?")
    phase = PHASE_NAMES.get(model.phase, model.phase.upper())
    if remaining is not None:
        phase += f" {remaining:0.0f}s"
    text = Text(f" {n} {name} · {phase}", style="reverse bold" if shown else "")
    waiting = waiting_on_you(model)
    if waiting is not None:
        text.append(f" ▶ {t(waiting)}", style="bold black on yellow")
    text.append(" ", style="reverse bold" if shown else "")
    return text


class ActionButton(Button, can_focus=False):
    """A button the mouse presses; keys stay with the screen's bindings."""


class ChatInput(Input):
    """The chat line, shown by the chat key (m): Enter sends, Esc closes. While it has
    the focus every key types into it, so no table key fires by accident."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close chat")]

    def action_close(self) -> None:
        screen = self.screen
        if isinstance(screen, TableScreen):
            screen.close_chat()


class TableScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = TABLE_KEYS

    def compose(self) -> ComposeResult:
        yield Static("", id="tabs")
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
            yield Label(t("cli.bar.chips") + " ", classes="bar-label", id="chips-label")
            for i in range(len(CHIP_MULTIPLES)):
                yield ActionButton(str(i + 1), id=f"chip-{i}", compact=True)
        with Horizontal(classes="bar", id="areas-bar"):
            yield Label(f"{t('cli.bar.bet'):<6}", classes="bar-label", id="bet-label")
            for area, label in AREA_LABELS.items():
                yield ActionButton(f"{label} ({AREA_KEYS[area]})", id=f"area-{area}", compact=True)
        with Horizontal(classes="bar", id="actions-bar"):
            for bid, label, key, _action in ACTION_BUTTONS:
                yield ActionButton(button_label(label, key), id=f"act-{bid}", compact=True)
        with Horizontal(classes="bar", id="squeeze-bar"):
            for bid, label, key, _action in SQUEEZE_BUTTONS:
                text = button_label(label, key, n=bid.removeprefix("card"))
                yield ActionButton(text, id=f"sq-{bid}", compact=True)
        yield Static("", id="message")
        yield ChatInput(
            placeholder=t("cli.chat.placeholder"),
            id="chat",
            compact=True,
        )
        yield Footer()

    @property
    def chemmy(self) -> ChemmyApp:
        return cast("ChemmyApp", self.app)

    # -- chat ------------------------------------------------------------------------
    def action_chat(self) -> None:
        box = self.query_one("#chat", ChatInput)
        box.display = True
        box.focus()

    def close_chat(self) -> None:
        box = self.query_one("#chat", ChatInput)
        box.value = ""
        box.display = False
        self.set_focus(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the chat line: send it (the server's refusal, if any, lands on the
        message line like every other)."""
        if event.input.id != "chat":
            return
        event.stop()
        text = event.value
        self.close_chat()
        if text.strip():
            self.chemmy.table_command("chat", text=text)

    def on_mount(self) -> None:
        relabel_keys(self)  # the footer in the language chosen so far
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
            t(
                "cli.status.limits",
                min=format_money(lim.get("min", 0)),
                max=format_money(lim.get("max", 0)),
                tie=format_money(lim.get("tie_max", 0)),
            ),
        ]
        if model.shoe is not None:
            left = model.shoe.get("cards_left")
            parts.append(
                t("cli.status.shoe", shoe=model.shoe.get("no"))
                + (" · " + t("cli.status.cards", cards=left) if isinstance(left, int) else "")
            )
        parts.append(t("cli.status.coup", coup=model.coup_no))
        phase = PHASE_NAMES.get(model.phase, model.phase.upper())
        remaining = app.remaining(model.deadline)
        if remaining is not None:
            phase += f" {remaining:0.0f}s"
        parts.append(phase)
        self._update_tabs()
        state = app.conn.state
        style = {
            "connected": "green",
            "resumed": "green",
            "reconnecting": "yellow",
            "connecting": "yellow",
        }.get(state.value, "red")
        label = t(f"cli.conn.{state.value}")
        text = Text(f"● {label}  ", style=style)
        text.append(" · ".join(parts), style="bold")
        self.query_one("#status", Static).update(text)

    def _update_tabs(self) -> None:
        """The tabs: shown with two tables or more (:func:`table_tab` each)."""
        app = self.chemmy
        tabs = self.query_one("#tabs", Static)
        tabs.display = app.several
        if not app.several:
            return
        line = Text()
        for n, slot in enumerate(app.slots.values(), start=1):
            model = slot.model
            shown = slot.table == app.table_id
            line.append_text(
                table_tab(n, model, shown=shown, remaining=app.remaining(model.deadline))
            )
            line.append(" ")
        line.append(t("cli.tabs.switch"), style="dim")
        tabs.update(line)

    def refresh_view(self) -> None:
        app = self.chemmy
        model = app.model
        if model is None:
            return
        self._update_status()
        seats = self.query_one("#seats", Static)
        room = seats.content_size.width - 4  # less the shoe mark and the seat number
        seats.update(render_seats(model, name_width=max(3, min(10, room)) if room > 0 else 10))
        self.query_one("#hands", Static).update(render_hands(model, app.local_progress))
        self.query_one("#layout", Static).update(
            render_layout(model, totals=app.options.chip_totals)
        )
        roads = self.query_one("#roads", Static)
        width = roads.size.width or 40
        self.query_one("#roads", Static).update(render_roads(model.roads, width=max(12, width - 1)))
        self.query_one("#odds", Static).update(odds_text(model.odds))
        you = Text()
        you.append(t("cli.you.name", name=app.conn.identity.get("name", "?")), style="bold yellow")
        you.append(
            " · "
            + (
                t("cli.you.seat", seat=model.my_seat)
                if model.seated
                else t("cli.you.betting")
                if model.betting_without_a_seat
                else t("cli.you.watching")
            )
        )
        # With several tables, the player's money across them (the server's balance).
        purse = app.purse if app.several else None
        balance = purse["balance"] if purse is not None else model.balance
        available = purse["available"] if purse is not None else model.available
        if balance is not None:
            words = "cli.you.balance_all" if purse is not None else "cli.you.balance"
            you.append(" · " + t(words, amount=format_money(balance)), style="bold")
        if available is not None and available != balance:
            you.append(" " + t("cli.you.available", amount=format_money(available)))
        stake = sum(model.my_stake.values())
        you.append(" · " + t("cli.you.bet", amount=format_money(stake)))
        chips = chip_values(model)
        chip = format_money(chips[min(app.chip, len(chips) - 1)])
        you.append(" · " + t("cli.you.chip", amount=chip), style="cyan")
        if model.i_hold:
            you.append(" · " + t("cli.you.holder"), style="magenta")
        self.query_one("#you", Static).update(you)
        self.query_one("#message", Static).update(Text(model.message_line))
        self._update_buttons(model, chips)

    def _update_buttons(self, model: TableModel, chips: list[int]) -> None:
        """Every button from the server's answer (``model.actions``): a command it does
        not list is greyed out (hidden in a narrow terminal, so the bars fit)."""
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
            self._enable(f"area-{area}", area in bets, shown=area in model.areas)
        self._enable("act-regret", model.can("remove_bet"))
        self._enable("act-clear", model.can("clear_bets"))
        self._enable("act-same", model.can("same_bet"))
        self._enable("act-done", model.can("done"))
        sit = self.query_one("#act-sit", ActionButton)
        label = button_label("btn.stand" if model.seated else "btn.sit", "s")
        if str(sit.label) != label:
            sit.label = label
            sit.refresh(layout=True)
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
        c1.label = t("btn.card", n=stage[0])
        self._enable("sq-card1", stage[0] in turnable)
        self._enable("sq-card2", len(stage) > 1 and stage[1] in turnable, shown=len(stage) > 1)

    def relabel(self) -> None:
        """Every fixed label again, in the current language (after a change in Options)."""
        relabel_keys(self)
        self.query_one("#chips-label", Label).update(t("cli.bar.chips") + " ")
        self.query_one("#bet-label", Label).update(f"{t('cli.bar.bet'):<6}")
        for area, label in AREA_LABELS.items():
            self.query_one(f"#area-{area}", ActionButton).label = f"{label} ({AREA_KEYS[area]})"
        for bid, label, key, _action in ACTION_BUTTONS:
            if bid != "sit":
                self.query_one(f"#act-{bid}", ActionButton).label = button_label(label, key)
        for bid, label, key, _action in SQUEEZE_BUTTONS:
            text = button_label(label, key, n=bid.removeprefix("card"))
            self.query_one(f"#sq-{bid}", ActionButton).label = text
        self.query_one("#chat", ChatInput).placeholder = t("cli.chat.placeholder")
        self.refresh_view()

    def _enable(self, bid: str, on: bool, *, shown: bool = True) -> None:
        """Enable a button when its command is allowed now; in a narrow terminal show
        only those, so every bar fits in 80 columns."""
        button = self.query_one(f"#{bid}", ActionButton)
        button.disabled = not on
        button.display = shown and (on or not self.has_class("narrow"))

    # -- mouse -----------------------------------------------------------------------
    #: Button id -> the action it runs (the key map's).
    BUTTON_ACTIONS: ClassVar[dict[str, str]] = {
        **{f"act-{bid}": action for bid, _label, _key, action in ACTION_BUTTONS},
        **{f"sq-{bid}": action for bid, _label, _key, action in SQUEEZE_BUTTONS},
    }

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        bid = event.button.id or ""
        if bid.startswith("chip-"):
            self.chemmy.choose_chip(int(bid.removeprefix("chip-")))
        elif bid.startswith("area-"):
            self.action_place(bid.removeprefix("area-"))
        elif bid in self.BUTTON_ACTIONS:
            await self.run_action(self.BUTTON_ACTIONS[bid])

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

    def action_send(self, command: str) -> None:
        """A command with nothing to choose (DONE, SAME BET, the shoe's answers): the
        server says whether it is allowed now."""
        self.chemmy.table_command(command)

    def action_card(self, n: int) -> None:
        self.chemmy.turn_card(n)

    def action_sit_stand(self) -> None:
        model = self.chemmy.model
        self.chemmy.table_command("stand" if model is not None and model.seated else "sit")

    def action_cut(self) -> None:
        model = self.chemmy.model
        cut = model.action("cut") if model is not None else {}
        if not cut:
            self.chemmy.note(t("cli.note.not_your_cut"))
            return
        low, high = int(cut["min"]), int(cut["max"])
        self.app.push_screen(CutScreen(low, high, random.randint(low, high)))

    def action_toss(self) -> None:
        self.chemmy.toss()

    def action_squeeze(self, style: str) -> None:
        self.chemmy.squeeze(style)

    def action_leave(self) -> None:
        self.chemmy.leave_table()

    def _chatting(self) -> bool:
        return bool(self.query_one("#chat", ChatInput).display)

    def action_next_table(self, step: int) -> None:
        """Tab / Shift+Tab: the next or previous table followed (not while chatting)."""
        if not self._chatting():
            self.chemmy.next_table(step)

    def action_show_table(self, n: int) -> None:
        """F1-F4: table ``n`` of those followed."""
        tables = list(self.chemmy.slots)
        if 1 <= n <= len(tables) and not self._chatting():
            self.chemmy.show_table(tables[n - 1])

    def action_tables(self) -> None:
        """``j``: the lobby, to join another table; every table followed is kept."""
        self.chemmy.to_lobby()

    def action_roads(self) -> None:
        self.app.push_screen(RoadsScreen())
