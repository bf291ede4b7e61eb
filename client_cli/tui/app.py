"""The full-screen Chemmy client (``chemmy play``): the Textual app.

Screens: the **lobby** (:mod:`.lobby`), the **table** (:mod:`.table`), **history**, the
**roads** and the **rules** (:mod:`.screens`), and the pop-ups (:mod:`.popups`: the
cut, the options). The key map is :mod:`.keys`, the layout ``chemmy.tcss``.

The app owns the :class:`~client_cli.connection.Connection` (the public protocol) and,
for each table the player follows (up to :data:`MAX_TABLES` at once, issue 37 §2: joined
with ``--table`` or from the lobby, ``j`` at a table goes back to it), a
:class:`TableSlot` with that table's :class:`~client_cli.model.TableModel`, replaced
through :func:`~client_cli.model.reduce` for every item the server sends for it. The
table screen draws the current one; Tab / Shift+Tab (or F1-F4) switch, and with two
tables or more a line of tabs shows each table's phase and whether it waits on you (your
turn, the shoe or the cut offered, your DONE), and what waits at another table is
announced. The balance shown is then the player's across every table, as the server's
``balance`` answers it after each change of money at any of them; a reality check is the
player's, said at every table.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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

__all__ = ["MAX_TABLES", "ChemmyApp", "TableSlot"]

#: A player follows and bets at up to four tables at once (issue 37 §2).
MAX_TABLES = 4
#: The events whose private part may move the player's money (``balance``, ``available``).
MONEY_EVENTS = frozenset(
    {"bets", "betting_closed", "settled", "voided", "debit_refused", "sat", "stood"}
)

#: Seconds between squeeze frames at animation speed 1..5 (the Options' game speed).
FRAME_DELAY = {1: 0.35, 2: 0.22, 3: 0.14, 4: 0.08, 5: 0.03}
SQUEEZE_FRAMES = 8


@dataclass
class TableSlot:
    """One table the player follows: its model, and what the screen keeps beside it."""

    table: str
    model: TableModel
    contributor: Contributor = field(default_factory=Contributor)
    placed: list[tuple[str, int]] = field(default_factory=list)  # chips placed, for regret
    local_progress: dict[tuple[str, int], int] = field(default_factory=dict)  # my squeeze
    applied: list[int] = field(default_factory=list)  # seqs applied, in order
    resyncing: bool = False


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
        table: str | Sequence[str] | None = None,
        options: Options | None = None,
        options_file: Path | None = None,
    ) -> None:
        """``table``: a table (or up to :data:`MAX_TABLES`) to go straight to.
        ``options``: this run's options (default: the saved ones, from ``options_file``
        or :func:`~client_cli.options.options_path`); a change made on the Options
        screen is saved there."""
        super().__init__()
        self.url = url
        tables = [table] if isinstance(table, str) else list(table or ())
        self.initial_tables = list(dict.fromkeys(tables))[:MAX_TABLES]
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
        self.slots: dict[str, TableSlot] = {}  # the tables followed, in the order joined
        self.table_id: str | None = None  # the one shown
        #: The player's money across every table (the server's ``balance`` reply).
        self.purse: dict[str, int] | None = None
        self.chip = 0
        self.snapshots = 0
        self.lobby = LobbyScreen()
        self.table_screen: TableScreen | None = None
        self._commands: asyncio.Queue[
            tuple[str, dict[str, Any], Callable[[dict[str, Any]], None] | None]
        ] = asyncio.Queue()
        self._animating: set[tuple[str, str, int]] = set()

    # -- the current table -----------------------------------------------------------
    @property
    def slot(self) -> TableSlot | None:
        """The table shown (None in the lobby before any is joined)."""
        return self.slots.get(self.table_id) if self.table_id is not None else None

    @property
    def model(self) -> TableModel | None:
        slot = self.slot
        return slot.model if slot is not None else None

    @model.setter
    def model(self, model: TableModel | None) -> None:
        slot = self.slot
        if slot is not None and model is not None:
            slot.model = model

    @property
    def contributor(self) -> Contributor:
        slot = self.slot
        return slot.contributor if slot is not None else Contributor()

    @property
    def placed(self) -> list[tuple[str, int]]:
        slot = self.slot
        return slot.placed if slot is not None else []

    @property
    def local_progress(self) -> dict[tuple[str, int], int]:
        slot = self.slot
        return slot.local_progress if slot is not None else {}

    @property
    def applied(self) -> list[int]:
        """The current table's seqs applied, in order (the tests read it)."""
        slot = self.slot
        return slot.applied if slot is not None else []

    @property
    def several(self) -> bool:
        """More than one table followed: the tabs, and the balance across tables."""
        return len(self.slots) > 1

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
        if self.initial_tables:
            self.run_worker(self._open_tables(self.initial_tables), group="open")
        else:
            self.refresh_lobby()

    async def _open_tables(self, tables: list[str]) -> None:
        """``--table`` given (once or more): each joined in turn; the first is shown."""
        for table in tables:
            await self._open_table(table)
        if tables and tables[0] in self.slots:
            self.show_table(tables[0])

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
        """Show ``table``: the one followed already, else joined as one more (up to
        :data:`MAX_TABLES`)."""
        if table in self.slots:
            self.show_table(table)
            return
        self.run_worker(self._open_table(table), exclusive=True, group="open")

    async def _open_table(self, table: str) -> None:
        if table in self.slots:
            self.show_table(table)
            return
        if len(self.slots) >= MAX_TABLES:
            self.note(t("cli.note.max_tables", count=MAX_TABLES))
            return
        before = self.table_id
        # The slot first: the join's snapshot comes on the stream before its reply.
        self.slots[table] = TableSlot(table, TableModel(me=self.conn.player))
        self.table_id = table
        try:
            await self.conn.join(table)
        except (ServerError, ConnectionLost) as exc:
            del self.slots[table]
            self.table_id = before if before in self.slots else None
            text = f"Cannot join {table}: {exc}"
            if self.screen is self.lobby:
                self.lobby.set_status(text)
            else:
                self.note(text)
            return
        await self._show_table_screen()
        self.say_restriction()
        self.refresh_table()
        if self.several:
            self.fetch_purse()
        await self._fetch_roads(table)

    async def _show_table_screen(self) -> None:
        if self.table_screen is None or not self.table_screen.is_attached:
            self.table_screen = TableScreen()
        if self.screen is not self.table_screen:
            if self.table_screen in self.screen_stack:
                while self.screen is not self.table_screen:
                    self.pop_screen()
            else:
                await self.push_screen(self.table_screen)

    def show_table(self, table: str) -> None:
        """Switch the table screen to ``table`` (one followed): its model, drawn now."""
        if table not in self.slots:
            return
        self.table_id = table
        self.chip = min(self.chip, len(chip_values(self.slots[table].model)) - 1)
        if self.table_screen is None or self.screen is not self.table_screen:
            self.run_worker(self._show_table_screen(), group="open")
        self.refresh_table()

    def next_table(self, step: int = 1) -> None:
        """The next (``step`` 1) or previous (-1) table followed, in the order joined."""
        tables = list(self.slots)
        if len(tables) < 2 or self.table_id not in self.slots:
            return
        self.show_table(tables[(tables.index(self.table_id) + step) % len(tables)])

    def to_lobby(self) -> None:
        """The lobby, keeping every table followed (Enter there joins one more; Esc
        goes back)."""
        if self.table_screen is not None and self.screen is self.table_screen:
            self.pop_screen()
        self.table_screen = None
        self.refresh_lobby()

    def leave_table(self) -> None:
        self.run_worker(self._leave_table(), exclusive=True, group="open")

    async def _leave_table(self) -> None:
        """Leave the table shown; the next one followed is shown, else the lobby."""
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
        self.slots.pop(table, None)
        if self.slots:
            self.show_table(next(iter(self.slots)))
            if self.several:
                self.fetch_purse()
            return
        self.table_id = None
        self.purse = None
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
            slot = self.slots.get(str(item.get("table"))) or self.slot
            self.note(f"client error ({type(exc).__name__}: {exc}); catching up")
            if slot is not None and not slot.resyncing:
                slot.resyncing = True
                self.run_worker(self._resync(slot.table), group="resync")

    def _on_item(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        slot = self.slots.get(str(item.get("table"))) if "table" in item else None
        if kind == "snapshot":
            if slot is not None:
                slot.model = replace(reduce(slot.model, item), me=self.conn.player)
                self.snapshots += 1
                slot.resyncing = False
                slot.local_progress.clear()
                self.run_worker(self._fetch_roads(slot.table), group="roads")
                if self.several:
                    self.fetch_purse()
        elif kind == "event":
            if slot is not None:
                slot.model, result = apply_event(slot.model, item)
                if result is Applied.APPLIED:
                    slot.applied.append(int(item["seq"]))
                    self._after_event(slot, item)
                elif result is Applied.GAP and not slot.resyncing:
                    slot.resyncing = True
                    self.note(t("cli.note.catching_up"))
                    self.run_worker(self._resync(slot.table), group="resync")
        elif kind in ("chat", "progress"):  # (a squeezed card's bend: never stored)
            if slot is not None:
                slot.model = reduce(slot.model, item)
        elif kind == "status":
            self._on_status(item)
        elif kind == "reality_check":
            self._on_reality_check(item)
        elif kind == "reality_answered":
            self._on_reality_answered()
        elif kind == "error":
            self.note(refusal(item.get("code"), item.get("message"), item))
        if slot is not None:
            self._contribute(slot)
        self.refresh_table()

    def _contribute(self, slot: TableSlot) -> None:
        """This client's own randomness in the shoe (docs/fairness.md §9): committed and
        revealed by itself whenever the server's actions ask for it, at each table."""
        fields = slot.contributor.next(slot.model)
        if fields is not None:
            self.table_command("contribute", None, at=slot.table, **fields)

    def _on_reality_check(self, item: dict[str, Any]) -> None:
        """The server's reality check (the player's, for every table): into each
        table's model (said on the message line, and due until answered), and the pop-up
        that asks Continue or Leave."""
        for slot in self.slots.values():
            slot.model = reduce(slot.model, item)
        if not self.slots and self.screen is self.lobby:
            self.lobby.set_status(t("cli.note.reality_due"))
        if not isinstance(self.screen, RealityScreen):
            self.push_screen(RealityScreen(dict(item)))

    def _on_reality_answered(self) -> None:
        """Another screen of the player's answered the reality check: no longer due,
        and the pop-up here (if it is up) goes (whatever was chosen there holds)."""
        for slot in self.slots.values():
            slot.model = reduce(slot.model, {"type": "reality_ack"})
        if isinstance(self.screen, RealityScreen):
            self.screen.dismiss()
        self.note(t("page.reality.answered"))

    def reality_answered(self, choice: str) -> None:
        """The server took the answer to the reality check: no longer due."""
        for slot in self.slots.values():
            slot.model = reduce(slot.model, {"type": "reality_ack", "choice": choice})
        self.note(t("page.reality.left" if choice == "leave" else "page.reality.continued"))

    def _after_event(self, slot: TableSlot, item: dict[str, Any]) -> None:
        """What an applied event means for the screen beside the model: the bell, the
        croupier's announcements (from another table: with its name), the local squeeze
        animation, the roads to fetch, the player's money across tables."""
        model = slot.model
        kind = item.get("kind")
        data = item.get("data") or {}
        if kind == "settled":
            slot.placed.clear()
            slot.local_progress.clear()
            self.run_worker(self._fetch_roads(slot.table), group="roads")
            if isinstance(data.get("net"), int):
                self._announce(model.result_line, slot)  # "… — You won 9.50"
                if data["net"] > 0:
                    self._bell()
        elif kind == "card":
            slot.local_progress.pop((str(data.get("hand")), int(data.get("index") or 0)), None)
        elif kind == "betting_opened":
            slot.placed.clear()
        elif (
            kind in ("turn", "shoe_offered", "cut_offered")
            and data.get("turner", data.get("player")) == model.me
        ):
            self._announce(model.message, slot)  # "Your turn: …", "The shoe is offered…"
            self._bell()
        if self.several and kind in MONEY_EVENTS and ("balance" in data or "available" in data):
            self.fetch_purse()

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
            if self.several:
                self.fetch_purse()
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
            slot = self.slots.get(table)
            if slot is not None:
                slot.resyncing = False

    async def _fetch_roads(self, table: str | None = None) -> None:
        table = table or self.table_id
        if table is None or table not in self.slots:
            return
        try:
            reply = await self.conn.request("roads", table=table)
        except (ServerError, ConnectionLost):
            return
        slot = self.slots.get(table)
        if slot is not None:
            slot.model = reduce(
                slot.model,
                {"type": "roads", "roads": reply.get("roads"), "odds": reply.get("odds")},
            )
            self.refresh_table()

    def fetch_purse(self) -> None:
        """Ask the server for the player's money across every table (``balance``); the
        last asked wins."""
        self.run_worker(self._fetch_purse, exclusive=True, group="purse")  # type: ignore[arg-type]  # (as refresh_lobby)

    async def _fetch_purse(self) -> None:
        try:
            reply = await self.conn.request("balance")
        except (ServerError, ConnectionLost):
            return
        balance, available = reply.get("balance"), reply.get("available")
        if isinstance(balance, int) and isinstance(available, int):
            self.purse = {"balance": balance, "available": available}
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

    def note(self, text: str, table: str | None = None) -> None:
        """A line for the message line of ``table`` (default: the one shown), or the
        lobby's status line."""
        slot = self.slots.get(table) if table is not None else self.slot
        if slot is not None:
            slot.model = reduce(slot.model, {"type": "note", "text": text})
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

    def _announce(self, text: str, slot: TableSlot | None = None) -> None:
        """The croupier's voice: an announcement pops up (Options: Voices); one from a
        table not shown names it, and says so whatever the Options (your turn there
        must be seen)."""
        if not text:
            return
        if slot is not None and slot.table != self.table_id:
            name = slot.model.options.get("name") or slot.table
            self.notify(f"{name}: {text} ({t('cli.tabs.switch')})", timeout=6)
        elif self.options.voices:
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
        self,
        kind: str,
        on_ok: Callable[[dict[str, Any]], None] | None = None,
        *,
        at: str | None = None,
        **fields: Any,
    ) -> None:
        """Queue a command for the table shown (or the one ``at``); replies and
        refusals come back on that table's message line."""
        table = at or self.table_id
        if table is None:
            return
        self._commands.put_nowait((kind, {"table": table, **fields}, on_ok))

    async def _command_loop(self) -> None:
        while True:
            kind, fields, on_ok = await self._commands.get()
            try:
                reply = await self.conn.request(kind, **fields)
            except ServerError as exc:
                if kind != "progress":
                    self.note(refusal(exc.code, exc.message, exc.reply), fields["table"])
                    self._bell()
                continue
            except ConnectionLost:
                if kind != "progress":
                    self.note(t("cli.note.not_connected", command=kind), fields["table"])
                continue
            except Exception as exc:  # never let a command take the UI down
                self.note(f"{kind} failed: {exc}", fields["table"])
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
        kept = self.placed  # this table's, whichever is shown when the reply comes

        def placed(_reply: dict[str, Any]) -> None:
            kept.append((area, amount))

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

        kept = self.placed

        def removed(_reply: dict[str, Any]) -> None:
            if kept:
                kept.pop()

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
        slot = self.slot
        if slot is None or (slot.table, hand, index) in self._animating:
            return
        self._animating.add((slot.table, hand, index))
        self.run_worker(self._squeeze_card(slot, hand, index), group="squeeze")

    async def _squeeze_card(self, slot: TableSlot, hand: str, index: int) -> None:
        """The card opens at its own table, whichever is shown meanwhile."""
        delay = FRAME_DELAY.get(self.options.speed, FRAME_DELAY[4])
        table = slot.table
        try:
            for frame in range(1, SQUEEZE_FRAMES + 1):
                pct = frame * 100 // SQUEEZE_FRAMES
                slot.local_progress[(hand, index)] = pct
                self.refresh_table()
                progress = slot.model.action("progress")
                if frame % 2 == 0 and pct < 100 and index in (progress.get("cards") or ()):
                    self.table_command("progress", at=table, hand=hand, card=index, percent=pct)
                await asyncio.sleep(delay)
            self.table_command("turn", at=table, hand=hand, card=index)
        finally:
            self._animating.discard((table, hand, index))

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
