"""The pop-ups: choosing the cut, the Options, Responsible play (a break), and the
reality check (Continue or Leave, which must be answered).

Each is a modal screen over the table that hands what was chosen to the app (a
command, or a changed option); none talks to the server or decides a rule: the cut's
bounds come from the server's ``actions``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Switch

from client_cli.i18n import LANGUAGE_NAMES, t

if TYPE_CHECKING:
    from client_cli.tui.app import ChemmyApp

__all__ = ["BreakScreen", "CutScreen", "OptionsScreen", "RealityScreen"]


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
            yield Label(t("cli.cut.prompt", low=self.low, high=self.high))
            yield Input(str(self.suggestion), id="cut-at", type="integer")
            with Horizontal():
                yield Button(t("btn.cut"), id="cut-ok", variant="primary")
                yield Button(t("cli.cancel"), id="cut-cancel")

    def on_mount(self) -> None:
        self.query_one("#cut-at", Input).focus()

    def _submit(self) -> None:
        text = self.query_one("#cut-at", Input).value.strip()
        try:
            position = int(text)
        except ValueError:
            self.query_one(Label).update(
                t("cli.cut.not_number", text=repr(text), low=self.low, high=self.high)
            )
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
    """Seed 000's Options: game speed 1-5, chip balloons, sound effects (the bell),
    voices (announcements), and the language. Every change is applied and saved at
    once."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("minus", "speed(-1)", "Slower"),
        Binding("plus,equals_sign", "speed(1)", "Faster"),
    ]

    #: Switch id -> (the option it sets, its label's message id).
    SWITCHES: ClassVar[dict[str, tuple[str, str]]] = {
        "opt-totals": ("chip_totals", "options.balloons"),
        "opt-bell": ("bell", "options.sound"),
        "opt-voices": ("voices", "options.voices"),
    }

    @property
    def chemmy(self) -> ChemmyApp:
        return cast("ChemmyApp", self.app)

    def compose(self) -> ComposeResult:
        o = self.chemmy.options
        with Vertical(id="options-box"):
            yield Label(t("cli.options.title"))
            with Horizontal(classes="option"):
                yield Label(t("options.speed") + " ", classes="option-label")
                yield Button("-", id="speed-down", compact=True)
                yield Label(str(o.speed), id="speed")
                yield Button("+", id="speed-up", compact=True)
            for sid, (attr, label) in self.SWITCHES.items():
                with Horizontal(classes="option"):
                    yield Label(t(label) + " ", classes="option-label")
                    yield Switch(bool(getattr(o, attr)), id=sid)
            with Horizontal(classes="option"):
                yield Label(t("options.language") + " ", classes="option-label")
                choices = [
                    (t("options.auto"), "auto"),
                    *((n, k) for k, n in LANGUAGE_NAMES.items()),
                ]
                yield Select(choices, value=o.language, allow_blank=False, id="opt-language")
            yield Button(t("cli.options.close"), id="options-close", compact=True)

    def action_speed(self, delta: int) -> None:
        app = self.chemmy
        app.set_options(replace(app.options, speed=max(1, min(5, app.options.speed + delta))))
        self.query_one("#speed", Label).update(str(app.options.speed))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "speed-down":
            self.action_speed(-1)
        elif event.button.id == "speed-up":
            self.action_speed(1)
        elif event.button.id == "options-close":
            self.dismiss()

    def on_select_changed(self, event: Select.Changed) -> None:
        """A language chosen here wins over the token's and the locale's from now on;
        "Automatic" gives the choice back to them."""
        if event.select.id == "opt-language" and isinstance(event.value, str):
            app = self.chemmy
            if event.value != app.options.language:
                app.set_options(replace(app.options, language=event.value))
                app.apply_language()

    def on_switch_changed(self, event: Switch.Changed) -> None:
        attr = self.SWITCHES.get(event.switch.id or "")
        if attr is not None:
            app = self.chemmy
            changes: dict[str, Any] = {attr[0]: event.value}
            app.set_options(replace(app.options, **changes))


class BreakScreen(ModalScreen[None]):
    """Responsible play: what is in force, in plain words, and a break (24 hours, a
    week, a month) or a self-exclusion (6 months, a year, 5 years) from now, asked
    again before it is taken (``take_break``; the server keeps it and never shortens
    it)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss", "Close")]
    PERIODS: ClassVar[tuple[str, ...]] = (
        "24h",
        "week",
        "month",
        "exclude_6m",
        "exclude_1y",
        "exclude_5y",
    )

    def __init__(self) -> None:
        super().__init__()
        self.period: str | None = None

    @property
    def chemmy(self) -> ChemmyApp:
        return cast("ChemmyApp", self.app)

    def compose(self) -> ComposeResult:
        with Vertical(id="break-box"):
            yield Label(t("page.responsible"))
            yield Label(t("page.responsible.intro"))
            yield Label("", id="break-state")
            for period in self.PERIODS:
                yield Button(t(f"page.responsible.{period}"), id=f"break-{period}", compact=True)
            yield Label("", id="break-question")
            with Horizontal(id="break-confirm"):
                yield Button(t("page.responsible.confirm"), id="break-yes", variant="primary")
                yield Button(t("page.responsible.cancel"), id="break-no")
            yield Button(t("cli.options.close"), id="break-close", compact=True)

    def on_mount(self) -> None:
        self.query_one("#break-confirm").display = False
        self.run_worker(self._ask("responsible"), group="break")

    async def _ask(self, kind: str, **fields: Any) -> None:
        from client_cli.connection import ConnectionLost, ServerError
        from client_cli.i18n import refusal_text
        from client_cli.sentences import restriction_text

        try:
            reply = await self.chemmy.conn.request(kind, **fields)
        except ServerError as exc:
            text = refusal_text(exc.code, exc.message)
        except ConnectionLost as exc:
            text = str(exc)
        else:
            text = restriction_text(reply.get("restriction"))
            if kind == "take_break":
                self.chemmy.note(text)
        self.query_one("#break-state", Label).update(text)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        bid = event.button.id or ""
        if bid.startswith("break-") and bid[6:] in self.PERIODS:
            self.period = bid[6:]
            question = t("page.responsible.ask", period=t(f"page.responsible.{self.period}"))
            self.query_one("#break-question", Label).update(question)
            self.query_one("#break-confirm").display = True
        elif bid == "break-yes" and self.period is not None:
            self.query_one("#break-confirm").display = False
            self.query_one("#break-question", Label).update("")
            self.run_worker(self._ask("take_break", period=self.period), group="break")
            self.period = None
        elif bid == "break-no":
            self.period = None
            self.query_one("#break-confirm").display = False
            self.query_one("#break-question", Label).update("")
        elif bid == "break-close":
            self.dismiss()


class RealityScreen(ModalScreen[None]):
    """The reality check (the server's ``reality_check``): how long you have played and
    your net result, and Continue or Leave (``reality_ack``). It has no Escape: bets are
    refused until it is answered. After Leave your chips come back and you stand at
    every table; the client stays where it is, watching."""

    def __init__(self, check: dict[str, Any]) -> None:
        super().__init__()
        self.check = check

    @property
    def chemmy(self) -> ChemmyApp:
        return cast("ChemmyApp", self.app)

    def compose(self) -> ComposeResult:
        from client_cli.sentences import reality_text

        with Vertical(id="reality-box"):
            yield Label(t("page.reality.title"))
            yield Label(reality_text(self.check), id="reality-text")
            yield Label(t("page.reality.question"))
            yield Label("", id="reality-result")
            with Horizontal():
                yield Button(t("page.reality.continue"), id="reality-continue", variant="primary")
                yield Button(t("page.reality.leave"), id="reality-leave")

    def on_mount(self) -> None:
        self.query_one("#reality-continue", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        choice = {"reality-continue": "continue", "reality-leave": "leave"}.get(
            event.button.id or ""
        )
        if choice is not None:
            for button in self.query(Button):
                button.disabled = True
            self.run_worker(self._answer(choice), group="reality")

    async def _answer(self, choice: str) -> None:
        from client_cli.connection import ConnectionLost, ServerError
        from client_cli.sentences import refusal

        try:
            await self.chemmy.conn.request("reality_ack", choice=choice)
        except ServerError as exc:
            if exc.code != "no_reality_check":  # (none waits any more: nothing to answer)
                self._failed(refusal(exc.code, exc.message, exc.reply))
                return
        except ConnectionLost as exc:
            self._failed(str(exc))
            return
        self.chemmy.reality_answered(choice)
        self.dismiss()

    def _failed(self, text: str) -> None:
        self.query_one("#reality-result", Label).update(t("page.refused", text=text))
        for button in self.query(Button):
            button.disabled = False
