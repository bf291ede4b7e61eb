"""The full-screen Chemmy client (``chemmy play``): the Textual app.

Screens: the **lobby** (:mod:`.lobby`), the **table** (:mod:`.table`), **history**, the
**roads** and the **rules** (:mod:`.screens`), and the pop-ups (:mod:`.popups`: the
cut, the options). The key map is :mod:`.keys`, the layout ``chemmy.tcss``.

The app owns the :class:`~client_cli.connection.Connection` (the public protocol) and
the table's :class:`~client_cli.model.TableModel`, replaced through
:func:`~client_cli.model.reduce` for every item the server sends; the screens draw it.
Commands are sent one after another from a queue, so key presses reach the server in
order; a refusal from the server goes to the message line, and a dropped connection
shows "reconnecting…" then "resumed". Nothing the server refuses crashes the UI. A
break or a self-exclusion in force at hello is said at once (a note); a reality check
from the server opens :class:`~client_cli.tui.popups.RealityScreen` until it is answered. The
player's Options (:mod:`client_cli.options`) are read at start and saved at each change;
"voices" are the announcements that pop up as notices. The words are the catalogs'
(:mod:`client_cli.i18n`), in the language :meth:`ChemmyApp.apply_language` chooses. This module holds no rule of the
game.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual.app import App
from textual.css.query import NoMatches

from client_cli.connection import Connection, ConnectionLost, ConnState, ServerError
from client_cli.contribute import Contributor
from client_cli.i18n import choose_language, set_language, t
from client_cli.model import Applied, TableModel, apply_event, reduce
from client_cli.money import format_money
from client_cli.options import Options, load_options, options_path, save_options
from client_cli.sentences import AREA_NAMES, refusal
from client_cli.tui.lobby import LobbyScreen
from client_cli.tui.popups import BreakScreen, OptionsScreen, RealityScreen
from client_cli.tui.screens import HelpScreen, HistoryScreen, RoadsScreen
from client_cli.tui.table import TableScreen, chip_values

__all__ = ["ChemmyApp"]

#: Seconds between squeeze frames at animation speed 1..5 (the Options' game speed).
FRAME_DELAY = {1: 0.35, 2: 0.22, 3: 0.14, 4: 0.08, 5: 0.03}
SQUEEZE_FRAMES = 8


class ChemmyApp(App[int]):
    """``chemmy play``: connects, shows the lobby (or the ``table`` given), plays."""

    TITLE = "Chemmy"
    CSS_PATH = "chemmy.tcss"

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        guest: bool = True,
        name: str | None = None,
        table: str | None = None,
        options: Options | None = None,
        options_file: Path | None = None,
    ) -> None:
        """``options``: this run's options (default: the saved ones, from
        ``options_file`` or :func:`~client_cli.options.options_path`); a change made on
        the Options screen is saved there."""
        super().__init__()
        self.url = url
        self.initial_table = table
        self.options_file = options_file or options_path()
        self._options_warning: str | None = None
        if options is None:
            options, self._options_warning = load_options(self.options_file)
        self.options = options
        self.environ: dict[str, str] = dict(os.environ)  # the locale (LANG, LC_ALL, ...)
        set_language(choose_language(options.language, None, self.environ))
        self.conn = Connection(
            url, token=token, guest=guest or not token, name=name, on_item=self.on_item
        )
        self.model: TableModel | None = None
        self.contributor = Contributor()
        self.table_id: str | None = None
        self.chip = 0
        self.placed: list[tuple[str, int]] = []  # chips placed this round, for regret
        self.local_progress: dict[tuple[str, int], int] = {}  # my own squeeze animation
        self.applied: list[int] = []  # seqs applied, in order (the tests read it)
        self.snapshots = 0
        self.lobby = LobbyScreen()
        self.table_screen: TableScreen | None = None
        self._commands: asyncio.Queue[
            tuple[str, dict[str, Any], Callable[[dict[str, Any]], None] | None]
        ] = asyncio.Queue()
        self._resyncing = False
        self._animating: set[tuple[str, int]] = set()

    # -- start and stop --------------------------------------------------------------
    async def on_mount(self) -> None:
        await self.push_screen(self.lobby)
        self.lobby.set_status(f"connecting to {self.url}…")
        if self._options_warning:
            self.notify(self._options_warning, severity="warning", timeout=8)
        self.run_worker(self._command_loop(), name="commands", group="commands")
        self.run_worker(self._connect(), name="connect", exclusive=True, group="connect")

    async def _connect(self) -> None:
        try:
            await self.conn.start(retry=True)
        except (ServerError, ConnectionLost) as exc:
            self.lobby.set_status(f"Cannot connect: {exc}")
            return
        self.apply_language()
        self.say_restriction()
        if self.initial_table:
            self.open_table(self.initial_table)
        else:
            self.refresh_lobby()

    def say_restriction(self) -> None:
        """A break or a self-exclusion in force (the hello reply's ``restriction``),
        said at once as a note (the lobby's status line, or the table's message line)."""
        from client_cli.sentences import restriction_text

        restriction = (self.conn.identity or {}).get("restriction")
        if restriction:
            self.note(restriction_text(restriction))

    async def action_quit(self) -> None:
        with contextlib.suppress(Exception):
            await self.conn.close()
        self.exit(0)

    async def on_unmount(self) -> None:
        with contextlib.suppress(Exception):
            await self.conn.close()

    def apply_language(self) -> None:
        """Speak the language chosen in Options, else the token's (the hello reply's
        ``language``), else the terminal locale's (:func:`~client_cli.i18n.choose_language`),
        and redraw the words already shown."""
        token = (self.conn.identity or {}).get("language")
        set_language(choose_language(self.options.language, token, self.environ))
        self.lobby.relabel()
        screen = self.table_screen
        if screen is not None and screen.is_mounted:
            with contextlib.suppress(NoMatches):
                screen.relabel()

    def identity_text(self) -> str:
        ident = self.conn.identity
        if not ident:
            return t("cli.identity.none")
        kind = "cli.identity.guest" if ident.get("guest") else "cli.identity.player"
        who = t(kind, name=ident.get("name"), player=ident.get("player"))
        bal = ident.get("balance")
        money = (
            f" · {t('cli.you.balance', amount=format_money(bal))}" if isinstance(bal, int) else ""
        )
        return f"{who}{money}"

    # -- lobby -----------------------------------------------------------------------
    def refresh_lobby(self) -> None:
        # The coroutine function, not a coroutine: a refresh that replaces one not yet
        # started (exclusive) leaves no coroutine behind that was never awaited.
        self.run_worker(self._refresh_lobby, exclusive=True, group="lobby")  # type: ignore[arg-type]  # (Textual types a coroutine function too narrowly)

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
        self.say_restriction()
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
                    self.note(t("cli.note.catching_up"))
                    self.run_worker(self._resync(self.table_id), group="resync")
        elif kind in ("chat", "progress"):  # (a squeezed card's bend: never stored)
            if model is not None and item.get("table") == self.table_id:
                self.model = reduce(model, item)
        elif kind == "status":
            self._on_status(item)
        elif kind == "reality_check":
            self._on_reality_check(item)
        elif kind == "reality_answered":
            self._on_reality_answered()
        elif kind == "error":
            self.note(refusal(item.get("code"), item.get("message"), item))
        self._contribute()
        self.refresh_table()

    def _contribute(self) -> None:
        """This client's own randomness in the shoe (docs/fairness.md §9): committed and
        revealed by itself whenever the server's actions ask for it."""
        if self.model is not None and self.table_id is not None:
            fields = self.contributor.next(self.model)
            if fields is not None:
                self.table_command("contribute", None, **fields)

    def _on_reality_check(self, item: dict[str, Any]) -> None:
        """The server's reality check: into the model (said on the message line, and
        due until answered), and the pop-up that asks Continue or Leave."""
        if self.model is not None:
            self.model = reduce(self.model, item)
        elif self.screen is self.lobby:
            self.lobby.set_status(t("cli.note.reality_due"))
        if not isinstance(self.screen, RealityScreen):
            self.push_screen(RealityScreen(dict(item)))

    def _on_reality_answered(self) -> None:
        """Another screen of the player's answered the reality check: no longer due,
        and the pop-up here (if it is up) goes (whatever was chosen there holds)."""
        if self.model is not None:
            self.model = reduce(self.model, {"type": "reality_ack"})
        if isinstance(self.screen, RealityScreen):
            self.screen.dismiss()
        self.note(t("page.reality.answered"))

    def reality_answered(self, choice: str) -> None:
        """The server took the answer to the reality check: no longer due."""
        if self.model is not None:
            self.model = reduce(self.model, {"type": "reality_ack", "choice": choice})
        self.note(t("page.reality.left" if choice == "leave" else "page.reality.continued"))

    def _after_event(self, model: TableModel, item: dict[str, Any]) -> None:
        """What an applied event means for the screen beside the model: the bell, the
        croupier's announcements, the local squeeze animation, the roads to fetch."""
        kind = item.get("kind")
        data = item.get("data") or {}
        if kind == "settled":
            self.placed.clear()
            self.local_progress.clear()
            self.run_worker(self._fetch_roads(), group="roads")
            if isinstance(data.get("net"), int):
                self._announce(model.result_line)  # "… — You won 9.50"
                if data["net"] > 0:
                    self._bell()
        elif kind == "card":
            self.local_progress.pop((str(data.get("hand")), int(data.get("index") or 0)), None)
        elif kind == "betting_opened":
            self.placed.clear()
        elif (
            kind in ("turn", "shoe_offered", "cut_offered")
            and data.get("turner", data.get("player")) == model.me
        ):
            self._announce(model.message)  # "Your turn: …", "The shoe is offered to you…"
            self._bell()

    def _on_status(self, item: dict[str, Any]) -> None:
        state = item.get("state")
        if state == ConnState.RECONNECTING.value:
            self.note(t("cli.note.reconnecting"))
        elif state == ConnState.RESUMED.value:
            if item.get("same_player", True):
                resumed = item.get("tables") or {}
                self.note(
                    t("cli.note.resumed" if all(resumed.values()) else "cli.note.resumed_fresh")
                )
            else:
                self.note(t("cli.note.new_guest"))
        elif state == ConnState.CLOSED.value and self.conn.close_reason:
            self.note(t("cli.note.disconnected", reason=self.conn.close_reason))
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
            self.model = reduce(
                self.model,
                {"type": "roads", "roads": reply.get("roads"), "odds": reply.get("odds")},
            )
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

    def _announce(self, text: str) -> None:
        """The croupier's voice: an announcement pops up (Options: Voices)."""
        if self.options.voices and text:
            self.notify(text, timeout=4)

    def set_options(self, options: Options) -> None:
        """Use ``options`` from now on, and save them for the next run; a failed save
        is reported, never fatal."""
        self.options = options
        try:
            save_options(options, self.options_file)
        except OSError as exc:
            self.note(f"Options not saved: {exc}")
        self.refresh_table()

    # -- commands --------------------------------------------------------------------
    def table_command(
        self, kind: str, on_ok: Callable[[dict[str, Any]], None] | None = None, **fields: Any
    ) -> None:
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
                    self.note(refusal(exc.code, exc.message, exc.reply))
                    self._bell()
                continue
            except ConnectionLost:
                if kind != "progress":
                    self.note(t("cli.note.not_connected", command=kind))
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
            self.note(t("cli.note.chips_here", count=len(chips)))
            return
        self.chip = index
        self.note(t("cli.note.chip", amount=format_money(chips[index])))

    def place(self, area: str) -> None:
        model = self.model
        if model is None:
            return
        if area not in model.areas:
            self.note(t("cli.note.not_open", area=AREA_NAMES.get(area, area)))
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
            self.note(t("cli.note.no_chips"))
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
            self.note(t("cli.note.not_your_turn"))
            return
        self.table_command("toss", hand=hand)

    def squeeze(self, style: str) -> None:
        model = self.model
        if model is None or model.my_turn is None:
            self.note(t("cli.note.not_your_turn"))
            return
        squeeze = model.action("squeeze")
        if not squeeze:
            style_now = model.coup.style if model.coup is not None else None
            self.note(t("cli.note.squeezing", style=style_now))
            return
        self.table_command("squeeze", hand=squeeze.get("hand"), style=style)

    def turn_card(self, n: int) -> None:
        """CARD n of the squeeze: the card opens over a few frames (sending its
        progress to the table), then is turned."""
        model = self.model
        hand = model.my_turn if model is not None else None
        if model is None or hand is None or model.coup is None:
            self.note(t("cli.note.not_your_turn"))
            return
        turn = model.action("turn")
        if not turn:
            self.note(t("cli.note.choose_style"))
            return
        stage = model.coup.stage_cards()
        index = stage[n - 1] if 1 <= n <= len(stage) else n
        if index not in (turn.get("cards") or ()):
            self.note(t("cli.note.card_not_waiting", index=index))
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

    def action_responsible(self) -> None:
        """Responsible play: a break or a self-exclusion (``x``)."""
        if not isinstance(self.screen, BreakScreen):
            self.push_screen(BreakScreen())
