"""Full screens besides the lobby and the table: your history, the roads and odds
(at any width), and the rules.

Each reads what the app already has (the model, the connection) or asks the server
once (``history``); none decides a rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Markdown, Static

import texts
from client_cli.connection import ConnectionLost, ServerError
from client_cli.history import round_summary
from client_cli.i18n import t
from client_cli.money import format_money
from client_cli.render import odds_text, render_roads
from client_cli.sentences import AREA_NAMES

if TYPE_CHECKING:
    from client_cli.tui.app import ChemmyApp

__all__ = ["HelpScreen", "HistoryScreen", "RoadsScreen", "rules_text"]

SIDE_BY_SIDE = 56  # characters of roads: from here the bead plate and big road share a row


def rules_text() -> str:
    """The condensed rules both clients show (``texts/rules.md``)."""
    return texts.rules_bytes().decode("utf-8")


class HistoryScreen(Screen[None]):
    """Your last rounds (the ``history`` command)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("h", "app.pop_screen", "Back", show=False),
        Binding("r", "reload", "Reload"),
    ]

    def compose(self) -> ComposeResult:
        yield Static(t("cli.history.title"), id="history-title")
        yield DataTable(id="history", zebra_stripes=True)
        yield Static("", id="history-status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#history", DataTable)
        table.add_columns(
            t("cli.history.col.round"),
            t("cli.history.col.result"),
            t("area.player"),
            t("area.banker"),
            t("cli.history.col.bets"),
            t("cli.history.col.net"),
            t("cli.history.col.balance"),
        )
        self.action_reload()

    def action_reload(self) -> None:
        self.run_worker(self._load(), exclusive=True)

    async def _load(self) -> None:
        app = cast("ChemmyApp", self.app)
        status = self.query_one("#history-status", Static)
        try:
            reply = await app.conn.request("history", limit=100)
        except (ServerError, ConnectionLost) as exc:
            status.update(Text(t("cli.history.unavailable", error=exc), style="red"))
            return
        me = app.conn.player or ""
        rounds = [round_summary(r, me) for r in reply.get("rounds") or []]
        table = self.query_one("#history", DataTable)
        table.clear()
        for r in rounds:
            bets = ", ".join(
                f"{AREA_NAMES.get(a, a)} {format_money(v)}" for a, v in r["bets"].items()
            )
            after = r["balance_after"]
            table.add_row(
                str(r["round_id"]),
                str(r["result"]),
                " ".join(r["player"]),
                " ".join(r["banker"]),
                bets or "-",
                Text(
                    format_money(r["net"], sign=True),
                    style="green" if r["net"] > 0 else "red" if r["net"] < 0 else "",
                ),
                format_money(after) if isinstance(after, int) else "-",
            )
        net = sum(r["net"] for r in rounds)
        line = t("cli.history.status", count=len(rounds), net=format_money(net, sign=True))
        if app.conn.identity.get("guest"):
            line = t("cli.history.guest_note", status=line)
        status.update(Text(line))


class RoadsScreen(Screen[None]):
    """The roads and the odds on the whole screen, at any width (the table shows them
    beside the cards only from :data:`~client_cli.tui.table.NARROW` columns). From 60
    columns the bead plate and the big road share a row, so everything fits 80x24."""

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
        app = cast("ChemmyApp", self.app)
        model = app.model
        if model is None:
            return
        width = max(20, self.size.width - 4)
        self.query_one("#roads-big", Static).update(
            render_roads(model.roads, width=width, side_by_side=width >= SIDE_BY_SIDE)
        )
        self.query_one("#odds-big", Static).update(odds_text(model.odds))


class HelpScreen(Screen[None]):
    """The rules (``texts/rules.md``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("question_mark", "app.pop_screen", "Back", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Markdown(rules_text())
        yield Footer()
