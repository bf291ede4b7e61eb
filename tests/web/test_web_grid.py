"""One player at several tables (issue 37 §2), in Chromium against a real server: Dan
adds two tables to "my tables" from the lobby and plays both side by side, betting
without a seat at each (Alice and Bob hold the shoes); both coups settle, and the one
Available his page shows is the server's after each. The grid fits a laptop and a wide
screen (the tables side by side, two a row, nothing outside the screen), and on a phone,
upright or on its side, shows one table at a time, its tabs switching between them; a
table is removed with its ✕. axe finds nothing serious on the grid.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Frame, Page, expect
from test_web_a11y import axe_serious
from test_web_layout import inside, overlap, rects
from web_helpers import (
    RELAXED,
    ServerProcess,
    TablePage,
    holder_ready,
    money,
    ms,
    scaled,
    server_balance,
    server_config,
    shot,
)

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds

TABLES = [
    {"id": f"g{i}", "name": f"Grid {i}", "tier": "1-100", "timers": RELAXED} for i in range(1, 5)
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-grid"), server_config(TABLES)).start()
    yield s
    s.stop()


def frame_of(page: Page, table: str) -> Frame:
    """The frame of ``table`` in the grid, once its table is on screen."""
    page.locator(f"#grid-frames iframe[data-table='{table}']").wait_for()
    deadline = time.monotonic() + scaled(10)
    while True:
        frame = next((f for f in page.frames if f"table={table}" in f.url), None)
        if frame is not None:
            break
        assert time.monotonic() < deadline, f"no frame for {table}"
        page.wait_for_timeout(50)
    frame.locator("#table").wait_for(state="visible")
    return frame


def settle_at(holder: TablePage, dan: TablePage, round_id: str) -> None:
    """The holder closes the betting and tosses until coup ``round_id`` is settled,
    which Dan's frame sees too."""
    holder.click("#act-done")
    deadline = time.monotonic() + scaled(40)
    while holder.state(f"s.lastCoup?.roundId !== {round_id!r}"):
        assert time.monotonic() < deadline, f"coup {round_id} not settled"
        if holder.enabled("#sq-toss"):
            holder.toss()
        else:
            holder.page.wait_for_timeout(50)
    dan.page.wait_for_function(
        f"() => chemmyPage.state.lastCoup?.roundId === {round_id!r}", timeout=ms(10)
    )


def shown_cells(page: Page) -> list[dict[str, Any]]:
    return [r for r in rects(page, "#grid-frames .grid-cell") if r["visible"]]


def check_grid(page: Page, where: str, count: int) -> None:
    """``count`` tables on screen, side by side: none over another, each inside the space
    between the bars, two a row (one row for two)."""
    cells = shown_cells(page)
    assert len(cells) == count, f"{where}: {len(cells)} tables shown"
    size = page.viewport_size or {"width": 0, "height": 0}
    top = rects(page, "#grid-tabs")[0]["bottom"]
    bottom = rects(page, "#bottombar")[0]["top"]
    screen = {"left": 0, "right": size["width"], "top": top, "bottom": bottom}
    for i, a in enumerate(cells):
        assert inside(a, screen), f"{where}: table {i + 1} leaves the screen: {a}"
        assert a["width"] >= size["width"] / 2 - 20 if count > 1 else a["width"] > 300
        assert a["height"] >= (bottom - top) / (2 if count > 2 else 1) - 20, f"{where}: {a}"
        for b in cells[i + 1 :]:
            assert not overlap(a, b), f"{where}: two tables overlap"
    assert len({round(c["top"]) for c in cells}) == (2 if count > 2 else 1), where
    if count > 2:
        return
    # Two tables: each one's hands, bets, chips and buttons in its frame, unscrolled.
    for frame in page.frames[1:]:
        reach = frame.evaluate(
            """() => { const main = document.querySelector("main");
                const bottom = (s) => document.querySelector(s).getBoundingClientRect().bottom;
                return [bottom("#bet-bar") + main.scrollTop,
                        document.querySelector("#bottombar").getBoundingClientRect().top]; }"""
        )
        assert reach[0] <= reach[1] + 0.5, f"{where}: {frame.url}: the buttons past the screen"


def test_two_tables_side_by_side_and_one_at_a_time_on_a_phone(
    server: ServerProcess, open_page: Callable[..., Page], artifacts: Path
) -> None:
    # -- Alice holds the shoe at Grid 1, Bob at Grid 2; each bets 1.00 on Player
    holders = {}
    for table, player in (("g1", "alice"), ("g2", "bob")):
        tp = TablePage(open_page(viewport=(1000, 800)), player)
        tp.open(server, player, player.title(), table=table)
        holder_ready(tp, 1)
        tp.bet("player")
        holders[table] = tp

    # -- Dan, on a laptop, adds both to his tables from the lobby and opens them
    page = open_page(viewport=(1280, 800), bypass_csp=True)  # (bypass: axe's script)
    host = TablePage(page, "dan")
    host.open(server, "dan", "Dan")
    for table in ("g1", "g2"):
        add = page.locator(f".my-table[data-table='{table}']")
        expect(add).to_have_attribute("aria-pressed", "false")
        add.click()
        expect(add).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#btn-mine")).to_have_text("My tables (2)")
    page.locator("#btn-mine").click()
    expect(page.locator("#grid")).to_be_visible()
    dan = {table: TablePage(frame_of(page, table), f"dan-{table}") for table in ("g1", "g2")}
    check_grid(page, "laptop", 2)
    start = server_balance(server, "dan")["available"]
    expect(page.locator("#balance")).to_have_text(money(start))

    # -- he bets 1.00 on Banker at both, without a seat
    for tp in dan.values():
        tp.bet("banker")
        expect(tp.page.locator("#act-done")).to_be_hidden()
    expect(page.locator("#bet")).to_have_text("2.00")
    shot(page, artifacts / "grid-laptop-two.jpg")
    expect(page.locator("#balance")).to_have_text(money(start - 200))
    assert server_balance(server, "dan")["available"] == start - 200

    # -- each coup settles; the one Available shown is the server's after each
    for table in ("g1", "g2"):
        settle_at(holders[table], dan[table], holders[table].round_id())
        expected = server_balance(server, "dan")["available"]
        expect(page.locator("#balance")).to_have_text(money(expected))
    net = sum(tp.state("s.lastNet") for tp in dan.values())
    assert server_balance(server, "dan")["available"] == start + net
    assert not page.evaluate("() => document.querySelector('#dlg-reality').open")

    # -- the wide screen: still side by side; axe finds nothing serious
    page.set_viewport_size({"width": 1920, "height": 1080})
    check_grid(page, "wide", 2)
    found = axe_serious(page, "my tables")
    assert not found, "\n".join(found)

    # -- a phone, upright and on its side: one table at a time, the tabs switch
    for w, h in ((390, 844), (844, 390)):
        page.set_viewport_size({"width": w, "height": h})
        tabs = page.locator("#grid-tabs .grid-tab")
        expect(tabs).to_have_count(2)
        for i, table in enumerate(("g2", "g1")):
            tabs.nth(1 - i).click()
            expect(tabs.nth(1 - i)).to_have_attribute("aria-pressed", "true")
            cells = shown_cells(page)
            assert len(cells) == 1, f"{w}x{h}: {len(cells)} tables shown"
            expect(page.locator(f".grid-cell[data-table='{table}'] iframe")).to_be_visible()
            expect(tabs.nth(1 - i)).to_contain_text(f"Grid {table[1]}")
            shot(page, artifacts / f"grid-phone-{w}x{h}-{table}.jpg")
        # (each tab says its table's phase, as its frame names it)
        phase = dan["g1"].page.evaluate(
            "async () => (await import('./state.js')).PHASE_NAMES[chemmyPage.state.phase]"
        )
        expect(tabs.first).to_contain_text(phase)

    # -- four tables on the laptop and the wide screen: two rows of two
    page.set_viewport_size({"width": 1280, "height": 800})
    page.locator("#btn-lobby").click()
    for table in ("g3", "g4"):
        page.locator(f".my-table[data-table='{table}']").click()
    page.locator("#btn-mine").click()
    frame_of(page, "g4")
    check_grid(page, "laptop, four tables", 4)
    shot(page, artifacts / "grid-laptop-four.jpg")
    page.set_viewport_size({"width": 1920, "height": 1080})
    check_grid(page, "wide, four tables", 4)
    shot(page, artifacts / "grid-wide-four.jpg")

    # -- ✕ removes a table: its frame and its tab go, Dan leaves it
    page.locator(".grid-remove[data-table='g4']").click()
    expect(page.locator("#grid-frames iframe[data-table='g4']")).to_have_count(0)
    expect(page.locator("#grid-tabs .grid-tab")).to_have_count(3)
    expect(page.locator("#btn-mine")).to_have_text("My tables (3)")


@pytest.fixture(scope="module")
def reality_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = f"reality_check = {REALITY_MINUTES:.4f}\n" + server_config(TABLES[:1])
    s = ServerProcess(tmp_path_factory.mktemp("web-grid-reality"), config).start()
    yield s
    s.stop()


#: A reality check every few seconds (minutes, as the server's config takes them).
REALITY_MINUTES = scaled(0.05)


def test_one_reality_check_for_all_my_tables(
    reality_server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    """The reality check is the player's (the server holds it per player): shown once, by
    the page around the tables, not again by each table's frame; one answer covers all."""
    page = open_page(viewport=(1280, 800))
    TablePage(page, "eve").open(reality_server, "eve", "Eve")
    page.locator(".my-table[data-table='g1']").click()
    page.locator("#btn-mine").click()
    table = frame_of(page, "g1")
    dialog = page.locator("#dlg-reality")
    expect(dialog).to_be_visible(timeout=ms(REALITY_MINUTES * 60 + 10))
    assert not table.evaluate("() => document.querySelector('#dlg-reality').open")
    page.locator("#reality-continue").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#reality-result")).to_be_empty()
    assert not table.evaluate("() => document.querySelector('#dlg-reality').open")
