"""Helpers for the web table's tests in a real headless Chromium (conftest.py has the
fixtures; test modules ``from web_helpers import ...``).

The browser is Debian's ``chromium`` (``/usr/bin/chromium``; ``scripts/test`` installs it)
driven by Playwright's sync API: the server runs in a subprocess (``python -m
server.process.main --port 0``; its port is read from the line it prints), so the browser,
the server and the tests never share an event loop. One browser per module; each page
gets its own context (its own storage, as a separate player would have).

- :class:`ServerProcess` starts, stops (SIGTERM: drain, then 1001 to every client) and
  restarts a server on the same port and database.
- :class:`Inspector` asks the server what it holds (a player's balance, a table's
  snapshot) over its own WebSocket, to check the page against the server.
- :func:`open_page` opens the web table as a player and fails the test on any script
  error in the page.

Screenshots go to ``$CHEMMY_ARTIFACTS`` (default ``tmp/artifacts`` in the repository),
under ``web/``. Timeouts scale with ``CHEMMY_TESTS_TIMEOUT_FACTOR``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from websockets.sync.client import connect as ws_connect

from server.process.auth import make_token
from server.wallet.signing import signature_header
from tests.kit import ServerProcess as KitServerProcess
from tests.kit.timing import TIMEOUT_FACTOR, scaled

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SECRET = "chemmy-web-tests-hs256-secret-0123456789abcdef"
FACTOR = TIMEOUT_FACTOR  # (tests/kit/timing.py: one factor for every test)

# Player-driven tables: every step is closed early by a click; the timers only bound a
# slow machine. "fast" tables let the croupier act quickly on a player's behalf.
RELAXED = {"betting": 30, "squeeze": 30, "third_card": 30, "shoe_offer": 30, "cut": 30, "grace": 60}
FAST = {"betting": 30, "squeeze": 1.5, "third_card": 1.5, "shoe_offer": 30, "cut": 1.5, "grace": 60}


def ms(seconds: float) -> float:
    """A Playwright timeout (milliseconds), scaled for slow machines."""
    return seconds * 1000 * FACTOR


def timers(base: dict[str, float]) -> str:
    return "{ " + ", ".join(f"{k} = {scaled(v):g}" for k, v in base.items()) + " }"


def server_config(tables: list[dict[str, Any]]) -> str:
    """A TOML config: the test secret and the given ``[[tables]]``."""
    lines = [f'jwt_secret = "{SECRET}"', "drain_timeout = 1", ""]
    for t in tables:
        lines.append("[[tables]]")
        for key, value in t.items():
            if key == "timers":
                lines.append(f"timers = {timers(value)}")
            else:
                lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    return "\n".join(lines)


def token(player: str, name: str | None = None, currency: str | None = None) -> str:
    return make_token(SECRET, player, name, ttl=3600, currency=currency)


#: The operator key of :data:`TRANSFER` servers (docs/wallet.md §1).
OPERATOR_KEY = "chemmy-web-tests-operator-key-0123456789abcdef"
#: The settings of a server whose money is the operator's (``wallet`` transfer): its
#: currency tables' players get money only by :func:`transfer_in` (issue 34 §7: a
#: currency table needs the operator's money).
TRANSFER = f'wallet = "transfer"\noperator_key = "{OPERATOR_KEY}"\n'


def transfer_in(server: ServerProcess, player: str, amount: int, currency: str) -> dict[str, Any]:
    """The operator moves ``amount`` minor units of ``currency`` to ``player`` through
    the transfer API (docs/wallet.md §2), signed with :data:`OPERATOR_KEY`."""
    path = "/operator/v1/transfers/deposit"
    raw = json.dumps(
        {"transaction_id": f"{player}-{time.time_ns()}", "player": player, "amount": amount,
         "currency": currency}
    ).encode()  # fmt: skip
    request = urllib.request.Request(
        f"{server.http}{path}",
        data=raw,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Idempotency-Key": uuid.uuid4().hex,
            "Chemmy-Signature": signature_header(
                OPERATOR_KEY.encode(), time.time(), "POST", path, raw
            ),
        },
    )
    with urllib.request.urlopen(request, timeout=scaled(10)) as answer:
        return dict(json.loads(answer.read()))


class ServerProcess(KitServerProcess):
    """``chemmy-server`` in a subprocess (the kit's launcher), restarted on the same
    port and database: the pages reconnect to the URL they were given."""

    def __init__(self, home: Path, config: str) -> None:
        super().__init__(home, config, "--log-level", "warning", keep_port=True)

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    def start(self, timeout: float | None = None) -> ServerProcess:  # type: ignore[override]
        super().start(timeout)
        return self

    def restart(self) -> None:
        self.stop()
        self.start()


class Inspector:
    """A plain WebSocket client of the server, to check the page against it."""

    _ids = itertools.count(1)

    def __init__(self, server: ServerProcess, player: str, name: str | None = None) -> None:
        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(
            ws_connect(server.ws, subprotocols=["chemmy.v1.json"], max_size=2**24)  # type: ignore[list-item]
        )
        self.hello = self.request("hello", token=token(player, name))

    def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        mid = f"inspect-{next(self._ids)}"
        self.ws.send(json.dumps({"type": kind, "id": mid, **fields}))
        deadline = time.monotonic() + scaled(10)
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv(timeout=scaled(10)))
            if msg.get("id") == mid:
                if msg["type"] == "error":
                    raise AssertionError(f"{kind} refused: {msg}")
                return dict(msg)
        raise AssertionError(f"no reply to {kind}")

    def balance(self) -> dict[str, int]:
        reply = self.request("balance")
        return {"balance": reply["balance"], "available": reply["available"]}

    def snapshot(self, table: str) -> dict[str, Any]:
        return dict(self.request("join", table=table)["snapshot"])

    def close(self) -> None:
        self._stack.close()


def server_balance(server: ServerProcess, player: str) -> dict[str, int]:
    inspector = Inspector(server, player)
    try:
        return inspector.balance()
    finally:
        inspector.close()


def money(minor: int) -> str:
    """As the page writes money: 123456 -> "1,234.56"."""
    sign = "-" if minor < 0 else ""
    whole, cents = divmod(abs(minor), 100)
    return f"{sign}{whole:,}.{cents:02d}"


# ---------------------------------------------------------------------------- the page


def shot(page: Any, path: Path) -> None:
    """A screenshot for people to look at (JPEG: a tenth of the PNG's size)."""
    page.screenshot(path=str(path), type="jpeg", quality=85)


class TablePage:
    """The web table in one browser page, driven as a player would: by clicking."""

    def __init__(self, page: Any, label: str) -> None:
        self.page = page
        self.label = label

    def open(
        self,
        server: ServerProcess,
        player: str,
        name: str,
        table: str | None = None,
        *,
        currency: str | None = None,
        lang: str | None = None,
    ) -> TablePage:
        query = f"?token={token(player, name, currency)}" + (f"&table={table}" if table else "")
        query += f"&lang={lang}" if lang else ""
        self.page.goto(server.http + "/" + query)
        if table:
            self.page.locator("#table").wait_for(state="visible")
        return self

    # -- reading
    def state(self, expr: str) -> Any:
        """Read the page's model (``chemmyPage.state``): for waiting, not for judging."""
        return self.page.evaluate(f"(() => {{ const s = chemmyPage.state; return {expr}; }})()")

    def text(self, selector: str) -> str:
        return str(self.page.locator(selector).inner_text())

    def balance(self) -> str:
        return self.text("#balance")

    def visible(self, selector: str) -> bool:
        return bool(self.page.locator(selector).is_visible())

    def enabled(self, selector: str) -> bool:
        loc = self.page.locator(selector)
        return bool(loc.is_visible() and loc.is_enabled())

    # -- acting
    def click(self, selector: str, **kw: Any) -> None:
        self.page.locator(selector).click(**kw)

    def sit(self, seat: int) -> None:
        self.click(f"#seats .seat[data-seat='{seat}'] .sit-here")
        self.page.locator(f"#seats .seat.me[data-seat='{seat}']").wait_for()

    def chip(self, index: int) -> None:
        self.click(f"#chips .chip[data-index='{index}']")

    def bet(self, area: str, times: int = 1) -> None:
        for _ in range(times):
            before = self.state(f"s.myBets[{area!r}] ?? 0")
            self.click(f"#layout .area[data-area='{area}']")
            self.page.wait_for_function(
                f"() => (chemmyPage.state.myBets[{area!r}] ?? 0) !== {before}", timeout=ms(10)
            )

    def take_back(self, area: str, how: str) -> None:
        """Take a chip off an area: ``ctrl`` (Ctrl-click), ``right`` (right click) or
        ``long`` (a long press on a touch screen)."""
        before = self.state(f"s.myBets[{area!r}] ?? 0")
        loc = self.page.locator(f"#layout .area[data-area='{area}']")
        if how == "ctrl":
            loc.click(modifiers=["Control"])
        elif how == "right":
            loc.click(button="right")
        else:
            loc.dispatch_event("pointerdown", {"pointerType": "touch", "bubbles": True})
            self.page.wait_for_timeout(700)
            loc.dispatch_event("pointerup", {"pointerType": "touch", "bubbles": True})
        self.page.wait_for_function(
            f"() => (chemmyPage.state.myBets[{area!r}] ?? 0) !== {before}", timeout=ms(10)
        )

    def settle(self) -> None:
        """Wait until every command the page sent is answered: the server sends a
        command's events before its reply, so the page has then seen the whole step."""
        self.page.wait_for_function("() => chemmyPage.inflight === 0", timeout=ms(15))

    def toss(self) -> None:
        """TOSS, then wait until the page has seen everything the toss caused. A TOSS
        gone before it is clicked (the turn ran out on a busy machine: the croupier
        turned the cards) is left: the caller looks again."""
        try:
            self.page.locator("#sq-toss").click(timeout=ms(3))
        except PlaywrightTimeoutError:
            if self.enabled("#sq-toss"):
                raise
            return
        self.settle()

    def round_id(self) -> str:
        """The id of the coup being bet on or turned (``<table>-<shoe>-<coup>``)."""
        return str(self.state("s.coup?.roundId ?? `${s.table}-${s.shoe.no}-${s.coupNo}`"))

    def toss_until_settled(self, round_id: str, seconds: float = 30) -> None:
        """TOSS whatever is this player's to turn until coup ``round_id`` is settled."""
        deadline = time.monotonic() + scaled(seconds)
        while self.state(f"s.lastCoup?.roundId !== {round_id!r}"):
            if time.monotonic() > deadline:
                self.page.screenshot(path=str(ROOT / "tmp" / f"stuck-{self.label}.png"))
                raise AssertionError(
                    f"{self.label}: coup {round_id} not settled; the page says {self.text('#message')!r}"
                )
            if self.enabled("#sq-toss"):
                self.toss()
            else:
                self.page.wait_for_timeout(50)

    def squeeze(self, style: str, on_card: Any = None) -> None:
        """Squeeze the hand being turned: the style, then each CARD button, the card
        opening on screen before it is turned. ``on_card(index)`` runs while it opens."""
        hand = self.state("s.actions.squeeze.hand")
        self.click(f"#sq-{style}")
        self.page.wait_for_function("() => Boolean(chemmyPage.state.actions.turn)", timeout=ms(10))
        for button in ("#sq-card1", "#sq-card2"):
            loc = self.page.locator(button)
            if not loc.is_visible():
                continue
            index = int(loc.get_attribute("data-card") or 0)
            loc.click()
            if on_card is not None:
                on_card(index)
            self.page.wait_for_function(
                f"""() => (() => {{ const c = chemmyPage.state.coup;
                    return !c || c.{hand}[{index - 1}]?.up; }})()""",
                timeout=ms(15),
            )
            self.settle()


def holder_ready(tp: TablePage, seat: int) -> None:
    """Sit, accept the shoe and cut it where the slider stands: betting opens."""
    tp.sit(seat)
    tp.click("#act-accept")
    tp.click("#act-cut")
    tp.page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(10))


def shot_still(page: Any, path: Path) -> None:
    """:func:`shot` once the cards are dealt and turned (no animation runs)."""
    page.wait_for_function("() => document.getAnimations().length === 0", timeout=ms(10))
    shot(page, path)
