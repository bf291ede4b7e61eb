"""The table's pop-ups: choosing the cut, and the Options.

Each is a modal screen over the table that hands what was chosen to the app (a
command, or a changed option); none talks to the server or decides a rule: the cut's
bounds come from the server's ``actions``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Switch

if TYPE_CHECKING:
    from client_cli.tui.app import ChemmyApp

__all__ = ["CutScreen", "OptionsScreen"]


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
        cast("ChemmyApp", self.app).table_command("cut", position=position)
        self.dismiss()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cut-ok":
            self._submit()
        else:
            self.dismiss()


class OptionsScreen(ModalScreen[None]):
    """Animation speed 1-5, chip totals on/off, the bell on/off."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("minus", "speed(-1)", "Slower"),
        Binding("plus,equals_sign", "speed(1)", "Faster"),
    ]

    def compose(self) -> ComposeResult:
        app = cast("ChemmyApp", self.app)
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
        app = cast("ChemmyApp", self.app)
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
        app = cast("ChemmyApp", self.app)
        if event.switch.id == "opt-totals":
            app.options.chip_totals = event.value
        elif event.switch.id == "opt-bell":
            app.options.bell = event.value
        app.refresh_table()
