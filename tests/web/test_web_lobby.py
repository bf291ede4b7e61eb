"""The lobby players know (issue 34 §5), in a real Chromium against a real server: each
table with its live big road in miniature and its last results, its free seats and
watchers, its limits and its variant, updating live while the lobby is open; a filter by
limits; favourite tables remembered across a reload.

A second player plays a coup at one table from their own page while the first player
looks at the lobby: the lobby's tile for that table gains the coup's road cell and its
result, as the server's lobby line has them (``tables``: docs/protocol.md §6), without
a reload.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from web_helpers import (
    FAST,
    Inspector,
    ServerProcess,
    TablePage,
    holder_ready,
    ms,
    server_config,
    shot,
)

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds each

DASH = "\u2013"
TABLES = [
    {"id": "lob-a", "name": "Salon A", "tier": "1-100", "timers": FAST},
    {"id": "lob-b", "name": "Salon B", "tier": "1-100", "commission": False, "super6": True,
     "timers": FAST},
    {"id": "lob-c", "name": "Salon C", "tier": "10-1000", "seats": 7, "timers": FAST},
]  # fmt: skip


#: How often the lobby asks for the tables while it is shown (lobby.js REFRESH_MS).
REFRESH_MS = 3000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-lobby"), server_config(TABLES)).start()
    yield s
    s.stop()


def test_each_table_with_its_road_seats_watchers_limits_and_variant_live(
    server: ServerProcess, open_page: Callable[..., Page], artifacts: Path
) -> None:
    page = open_page(viewport=(1280, 900))
    # The lobby's clock is Playwright's (time flows as it does), so that where the test
    # waits for the lobby's next refresh (REFRESH_MS, 3 s) it jumps to it.
    page.clock.install()
    TablePage(page, "lena").open(server, "lob-lena", "Lena")
    a = page.locator("#tables .table-tile[data-tile='lob-a']")
    b = page.locator("#tables .table-tile[data-tile='lob-b']")
    c = page.locator("#tables .table-tile[data-tile='lob-c']")
    expect(a.locator(".table-limits")).to_have_text(f"1.00{DASH}100.00")
    expect(c.locator(".table-limits")).to_have_text(f"10.00{DASH}1,000.00")
    expect(a.locator(".table-free")).to_have_text("14 free seats")
    expect(c.locator(".table-free")).to_have_text("7 free seats")
    expect(a.locator(".table-watching")).to_have_text("0 watching")
    expect(a.locator(".table-variant")).to_have_text("5% commission · Player Pair · Banker Pair")
    expect(b.locator(".table-variant")).to_contain_text("no commission")
    expect(b.locator(".table-variant")).to_contain_text("Super 6")
    expect(a.locator(".mini-road .ring")).to_have_count(0)

    # Max plays a coup at Salon A from his own page; Lena's lobby follows, unreloaded.
    marker = page.evaluate("() => (window.__same = Math.random())")
    max_ = TablePage(open_page(), "max").open(server, "lob-max", "Max", table="lob-a")
    holder_ready(max_, 1)
    page.clock.fast_forward(REFRESH_MS)  # the lobby's next refresh, now
    expect(a.locator(".table-free")).to_have_text("13 free seats")
    max_.bet("banker")
    round_id = max_.round_id()
    max_.click("#act-done")
    max_.toss_until_settled(round_id)
    page.clock.fast_forward(REFRESH_MS)
    outcome = max_.state("s.lastResult.outcome")
    # The winner's total (a tie's: both hands').
    total = max_.state(
        "s.lastResult[s.lastResult.outcome === 'player' ? 'player_total' : 'banker_total']"
    )
    expect(a.locator(".last-results .result-chip")).to_have_count(1, timeout=ms(10))
    letter = {"banker": "B", "player": "P", "tie": "T"}[outcome]
    expect(a.locator(".last-results .result-chip")).to_have_text(f"{letter}{total}")
    line = next(
        t for t in Inspector(server, "lob-ins").request("tables")["tables"] if t["table"] == "lob-a"
    )
    road = line["road"]
    assert road["coups"] == 1 and road["last"] == [{"outcome": outcome, "total": total}]
    cells = a.locator(".mini-road .ring")
    expect(cells).to_have_count(len(road["big_road"]))
    for n, cell in enumerate(road["big_road"]):
        expect(cells.nth(n)).to_have_attribute("data-col", str(cell["col"]))
        expect(cells.nth(n)).to_have_attribute("data-row", str(cell["row"]))
        expect(cells.nth(n)).to_have_class(f"ring {cell['outcome']}")
    # A watcher of Salon A: counted.
    TablePage(open_page(), "wes").open(server, "lob-wes", "Wes", table="lob-a")
    page.clock.fast_forward(REFRESH_MS)
    expect(a.locator(".table-watching")).to_have_text("1 watching")
    assert page.evaluate("() => window.__same") == marker, "the lobby was not reloaded"
    shot(page, artifacts / "lobby-roads.jpg")


def test_a_filter_by_limits_and_favourites_remembered(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    tp = TablePage(open_page(), "fay").open(server, "lob-fay", "Fay")
    page = tp.page
    expect(page.locator("#tables .table-tile")).to_have_count(3)
    # By limits: the 10-1000 tables only.
    page.select_option("#lobby-filter", label=f"10.00{DASH}1,000.00")
    expect(page.locator("#tables .table-tile")).to_have_count(1)
    expect(page.locator("#tables .table-tile[data-tile='lob-c']")).to_be_visible()
    page.select_option("#lobby-filter", "all")
    expect(page.locator("#tables .table-tile")).to_have_count(3)
    # A favourite: starred, first of its tier, remembered over a reload.
    star = page.locator("#tables .fav[data-table='lob-b']")
    expect(star).to_have_attribute("aria-pressed", "false")
    expect(star).to_have_attribute("aria-label", "Add Salon B to your favourites")
    star.click()
    expect(star).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".tier[data-tier='1-100'] .table-tile").first).to_have_attribute(
        "data-tile", "lob-b"
    )
    page.select_option("#lobby-filter", "favourites")
    expect(page.locator("#tables .table-tile")).to_have_count(1)
    page.reload()
    expect(page.locator("#lobby-filter")).to_have_value("favourites")
    expect(page.locator("#tables .table-tile")).to_have_count(1)
    expect(page.locator("#tables .fav[data-table='lob-b']")).to_have_attribute(
        "aria-pressed", "true"
    )
    # The filter's choice is kept, and the keyboard's star keeps its focus on redraw.
    page.select_option("#lobby-filter", "all")
    page.locator("#tables .fav[data-table='lob-a']").focus()
    page.evaluate("() => chemmyPage.refreshLobby()")
    expect(page.locator("#tables .fav[data-table='lob-a']")).to_be_focused()
