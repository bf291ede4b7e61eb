"""The lobby: every table with its limits, seats taken, phase and shoe; Enter joins
(one more table, up to four, when you are at tables already: ``j`` there comes here;
Esc goes back to them).

It lists what the ``tables`` request answers (polled every 5 s while shown) and asks the
app to open a table; it never talks to the server itself.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from client_cli.i18n import t
from client_cli.money import format_money
from client_cli.tui.keys import LOBBY_KEYS, relabel_keys
from client_cli.tui.table import PHASE_NAMES

if TYPE_CHECKING:
    from client_cli.tui.app import ChemmyApp

__all__ = ["LobbyScreen"]

#: The columns' message ids (``cli.lobby.col.*``).
COLUMNS = ("table", "name", "limits", "tie_max", "seats", "phase", "shoe")


class LobbyScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = LOBBY_KEYS

    def compose(self) -> ComposeResult:
        yield Static(t("cli.lobby.title"), id="lobby-title")
        yield DataTable(id="tables", cursor_type="row", zebra_stripes=True)
        yield Static("", id="lobby-status")
        yield Footer()

    def __init__(self) -> None:
        super().__init__()
        self._status = ""
        self._tables: list[dict[str, Any]] | None = None

    def on_mount(self) -> None:
        relabel_keys(self)  # the footer in the language chosen so far
        table = self.query_one("#tables", DataTable)
        table.add_columns(*(t(f"cli.lobby.col.{c}") for c in COLUMNS))
        table.focus()
        self.set_interval(5.0, self._poll_tables)
        self.set_status(self._status)
        if self._tables is not None:
            self.show_tables(self._tables)

    @property
    def chemmy(self) -> ChemmyApp:
        return cast("ChemmyApp", self.app)

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
        for row in tables:
            lim = row.get("limits") or {}
            table.add_row(
                str(row.get("table")),
                str(row.get("name", "")),
                f"{format_money(int(lim.get('min', 0)))}-{format_money(int(lim.get('max', 0)))}",
                format_money(int(lim.get("tie_max", 0))),
                f"{row.get('seated', 0)}/{row.get('seats', 0)}",
                PHASE_NAMES.get(str(row.get("phase")), str(row.get("phase"))),
                f"{row.get('shoe_no', 0)}/{row.get('coup_no', 0)}",
                key=str(row.get("table")),
            )
        status = t("cli.lobby.status", count=len(tables), who=self.chemmy.identity_text())
        followed = self.chemmy.slots
        if followed:  # at tables already (j): Enter joins one more, Esc goes back
            names = ", ".join(followed)
            status += " · " + t("cli.lobby.followed", tables=names)
        self.set_status(status)

    def relabel(self) -> None:
        """The title, the columns, the rows and the keys again, in the current language."""
        relabel_keys(self)
        with contextlib.suppress(NoMatches):
            self.query_one("#lobby-title", Static).update(t("cli.lobby.title"))
            table = self.query_one("#tables", DataTable)
            table.clear(columns=True)
            table.add_columns(*(t(f"cli.lobby.col.{c}") for c in COLUMNS))
            if self._tables is not None:
                self.show_tables(self._tables)

    def action_refresh(self) -> None:
        self.chemmy.refresh_lobby()

    def _poll_tables(self) -> None:
        if self.is_current and self.chemmy.conn.connected:
            self.chemmy.refresh_lobby()

    def action_back(self) -> None:
        """Esc: back to the tables followed, if any."""
        app = self.chemmy
        if app.slots:
            app.show_table(app.table_id if app.table_id in app.slots else next(iter(app.slots)))

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
