"""The web table's "Responsible play" panel (issue 21), in the Cashier.

Hana sits, holds the shoe and puts chips on Player; in the Cashier she asks for a
24-hour break, confirms it, and reads in plain words until when she is on a break. Her
chips come back (the server's books say so), she is stood up, no seat is offered her
(the server's restriction: issue 34 §7), and a sit asked for anyway is refused
``player_blocked``, said plainly on the message display. After a reload the
panel still says so (the break is the server's, not the page's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect
from web_helpers import (
    RELAXED,
    ServerProcess,
    TablePage,
    holder_ready,
    server_balance,
    server_config,
)

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds each

TABLES = [{"id": "web-rg", "name": "Responsible", "tier": "1-100", "timers": RELAXED}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-responsible"), server_config(TABLES)).start()
    yield s
    s.stop()


def test_a_break_from_the_cashier_returns_the_chips_and_refuses_a_seat(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    hana = TablePage(open_page(), "hana").open(server, "hana", "Hana", table="web-rg")
    page = hana.page
    holder_ready(hana, 1)
    hana.chip(0)
    hana.bet("player")
    placed = server_balance(server, "hana")
    assert placed["available"] < placed["balance"]

    hana.click("#btn-cashier")
    state = page.locator("#responsible-state")
    expect(state).to_have_text("No break or exclusion is set: you may play.")
    hana.click("#responsible [data-period='24h']")
    expect(page.locator("#responsible-question")).to_contain_text(
        "Break for 24 hours, starting now?"
    )
    hana.click("#responsible-yes")
    expect(state).to_contain_text("You are taking a break until ")
    expect(state).to_contain_text("you cannot sit or bet until then.")
    expect(page.locator("#responsible-confirm")).to_be_hidden()
    hana.click("#dlg-cashier [data-close]")

    # Her chips come back and she stands; no seat is offered her while the break lasts
    # (issue 34 §7: every Sit button stayed enabled, each tap refused), and a sit asked
    # for anyway (another client) is refused, in plain words.
    expect(page.locator("#seats .seat.me")).to_have_count(0)
    back = server_balance(server, "hana")
    assert back["available"] == back["balance"] == placed["balance"]
    expect(page.locator("#seats .sit-here")).to_have_count(0)
    expect(page.locator("#act-sit")).to_be_disabled()
    page.evaluate("chemmyPage.cmd('sit', { seat: 1 })")
    message = page.locator("#message")
    expect(message).to_have_attribute("data-code", "player_blocked")
    expect(message).to_contain_text("Refused: you are taking a break from play until ")

    # The break is the server's: after a reload the panel says so again.
    page.reload()
    page.locator("#table").wait_for(state="visible")
    expect(page.locator("#seats .sit-here")).to_have_count(0)
    expect(page.locator("#act-sit")).to_be_disabled()
    hana.click("#btn-cashier")
    expect(state).to_contain_text("You are taking a break until ")
