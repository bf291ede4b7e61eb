"""Limits and the reality check on the web table (issue 21), in the Cashier's
"Responsible play" panel and over the table.

- Lena sets a daily loss limit of 3.00 from the panel and reads it listed in plain
  words; raising it to 10.00 shows the raise as pending (24 hours); a 5.00 bet is then
  refused ``limit_reached``, the server's words on the message display, and a 1.00 bet
  is taken. A daily deposit limit refuses a deposit over it in the Cashier, a session
  limit is listed in minutes, and a removal shows as pending too.
- A server with a reality check every few seconds (``reality_check`` in its config):
  the modal says how long Mo has played and his net result; while it waits a bet is
  refused ``reality_check_due``; after Continue his bet is taken; at the next one Leave
  stands him up (his chips come back) and the page stays at the table, watching.
- The reality check is the player's, not a screen's: Mo has the table open in a
  second tab too; both show the first check; his Continue in the first closes the
  second's by itself (the server's ``reality_answered``), which says it was answered on
  another screen, and nothing is done there (he is still seated).
- Nell took a break (``take_break``, by another connection): the page says so at once,
  in a banner, when it loads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from web_helpers import (
    RELAXED,
    Inspector,
    ServerProcess,
    TablePage,
    holder_ready,
    ms,
    scaled,
    server_balance,
    server_config,
    shot,
)

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds each

TABLES = [
    {"id": "web-lim", "name": "Limits", "tier": "1-100", "timers": RELAXED},
    {"id": "web-rc", "name": "Reality", "tier": "1-100", "timers": RELAXED},
]
#: The reality check's period on its server (minutes): long enough to sit and accept
#: the shoe between two checks, short enough for a test.
REALITY_MINUTES = scaled(0.15)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-limits"), server_config(TABLES)).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def reality_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = f"reality_check = {REALITY_MINUTES:.4f}\n" + server_config(TABLES)
    s = ServerProcess(tmp_path_factory.mktemp("web-reality"), config).start()
    yield s
    s.stop()


def set_limit(tp: TablePage, kind: str, amount: str) -> None:
    page = tp.page
    page.locator("#limit-kind").select_option(kind)
    page.locator("#limit-amount").fill(amount)
    tp.click("#limit-set")


def test_limits_from_the_cashier_and_a_bet_over_one(
    server: ServerProcess, open_page: Callable[..., Page], artifacts: Path
) -> None:
    lena = TablePage(open_page(), "lena").open(server, "lena", "Lena", table="web-lim")
    page = lena.page
    holder_ready(lena, 1)

    lena.click("#btn-cashier")
    items = page.locator("#limits-list li")
    expect(items).to_have_text(["No limits are set."])
    result = page.locator("#limits-result")

    set_limit(lena, "loss_day", "3")
    expect(items).to_have_text(["Daily loss limit: 3.00 — 3.00 left"])
    expect(result).to_have_text("Daily loss limit: 3.00 from now on.")

    # A raise waits 24 hours: the limit stays, the raise shows as pending.
    set_limit(lena, "loss_day", "10")
    loss = page.locator("#limits-list li[data-kind='loss_day']")
    expect(loss).to_contain_text("Daily loss limit: 3.00 — 3.00 left (rises to 10.00 on ")
    expect(result).to_contain_text("a higher limit, or a removal, waits 24 hours.")

    # Not an amount: said, nothing sent.
    set_limit(lena, "wager_week", "lots")
    expect(result).to_have_text("Enter an amount, like 50 or 12.50")
    set_limit(lena, "session", "90")
    expect(page.locator("#limit-amount-label")).to_have_text("Minutes")
    session = page.locator("#limits-list li[data-kind='session']")
    expect(session).to_have_text("Session time limit: 90 minutes — 90 minutes left")

    # A deposit over a deposit limit is refused in the Cashier, in plain words.
    set_limit(lena, "deposit_day", "10")
    page.locator("#cashier-amount").fill("20")
    lena.click("#cashier-deposit")
    expect(page.locator("#cashier-result")).to_have_text(
        "Refused: that would pass your daily deposit limit of 10.00: 10.00 remains"
    )
    shot(page, artifacts / "limits.jpg")
    lena.click("#dlg-cashier [data-close]")

    # A bet past the loss limit is refused, the server's words on the message display.
    before = server_balance(server, "lena")
    lena.chip(1)  # 5.00
    lena.click("#layout .area[data-area='player']")
    message = page.locator("#message")
    expect(message).to_have_attribute("data-code", "limit_reached")
    expect(message).to_have_text(
        "Refused: that would pass your daily loss limit of 3.00: 3.00 remains"
    )
    assert server_balance(server, "lena") == before
    lena.chip(0)  # 1.00: within it
    lena.bet("player")
    assert lena.state("s.myBets.player") == 100

    # The removal waits too, and the list says so.
    lena.click("#btn-cashier")
    page.locator("#limit-kind").select_option("session")
    lena.click("#limit-remove")
    expect(session).to_contain_text("(removed on ")


def test_the_reality_check_holds_bets_until_it_is_answered(
    reality_server: ServerProcess, open_page: Callable[..., Page], artifacts: Path
) -> None:
    mo = TablePage(open_page(), "mo").open(reality_server, "mo", "Mo", table="web-rc")
    page = mo.page
    holder_ready(mo, 1)  # before the first check
    other = TablePage(open_page(), "mo").open(reality_server, "mo", "Mo", table="web-rc")

    dialog = page.locator("#dlg-reality")
    period = ms(REALITY_MINUTES * 60 + 10)
    expect(dialog).to_be_visible(timeout=period)
    expect(other.page.locator("#dlg-reality")).to_be_visible()  # the player's: both tabs
    text = page.locator("#reality-text")
    expect(text).to_contain_text("You have played for ")
    expect(text).to_contain_text("Net result: 0.00.")
    shot(page, artifacts / "reality-check.jpg")
    # Escape does not close it: it waits for an answer.
    page.keyboard.press("Escape")
    expect(dialog).to_be_visible()

    # While it waits, a bet is refused (sent as a click would, under the modal).
    page.evaluate("chemmyPage.place('player')")
    message = page.locator("#message")
    expect(message).to_have_attribute("data-code", "reality_check_due")
    expect(message).to_contain_text("answer the reality check (continue or leave)")

    mo.click("#reality-continue")
    expect(dialog).to_be_hidden()
    expect(message).to_have_text("Play on: bets are taken again.")
    # The second tab is told (reality_answered) and closes its own, untouched.
    expect(other.page.locator("#dlg-reality")).to_be_hidden()
    expect(other.page.locator("#message")).to_have_text(
        "This reality check was already answered, on another screen of yours."
    )
    expect(other.page.locator("#log")).not_to_contain_text("You left play")
    expect(page.locator("#seats .seat.me")).to_have_count(1)  # still seated
    other.page.close()
    mo.chip(0)
    mo.bet("player")
    assert mo.state("s.myBets.player") == 100

    # The next one: Leave stands him up, his chips back; the page stays, watching.
    expect(dialog).to_be_visible(timeout=period)
    mo.click("#reality-leave")
    expect(dialog).to_be_hidden()
    # (said on the message display, then the table's news: the log keeps it)
    expect(page.locator("#log")).to_contain_text("You left play: your chips came back")
    expect(page.locator("#seats .seat.me")).to_have_count(0)
    expect(page.locator("#table")).to_be_visible()
    back = server_balance(reality_server, "mo")
    assert back["available"] == back["balance"]


def test_a_break_is_said_at_once_when_the_page_loads(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    inspector = Inspector(server, "nell", "Nell")
    try:
        inspector.request("take_break", period="week")
    finally:
        inspector.close()
    nell = TablePage(open_page(), "nell").open(server, "nell", "Nell")
    banner = nell.page.locator("#restriction-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("You are taking a break until ")
    expect(banner).to_contain_text("you cannot sit or bet until then.")
