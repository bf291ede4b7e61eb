"""The web table's layout in Chromium, measured (issue 17): bounding boxes, computed
styles, scroll positions and overlaps, on a table played by ``chemmy bot`` and by the
page's player.

- History: each cell sits under its own heading (the hands' ``.cards`` rule once made
  the History's ``td.cards`` a flex box and shifted every column after it), and on a
  phone the whole table fits the dialog.
- Roads: all of a short shoe is in view in every road; in a long one the latest
  column is, and the first column in view is never cut.
- A phone (390x844, touch; then on its side, 844x390): the hands, the bet areas, the
  chips and the action buttons fit one screen between the bars, while betting and
  while turning; the buttons are 44 px touch targets.
- A wide screen (1920x1080): the felt fills the screen and its cards are large.
- A long name and big chips: a seat shows the whole name, the top bar stays one row,
  the chip values stay inside their chips, a pile never covers its balloon, and a long
  chat line stays in the chat panel.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect
from web_helpers import (
    FAST,
    ROOT,
    Inspector,
    ServerProcess,
    TablePage,
    ms,
    scaled,
    server_config,
)

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

TIMERS = {**FAST, "betting": 30}
TABLES = [
    {"id": f"lay-{name}", "name": f"Layout {name}", "tier": "100-10000", "timers": TIMERS}
    for name in ("history", "short", "long", "phone", "wide", "names")
]
LONG_NAME = "Maximiliano Fernández-Castellano"  # 32 characters, the longest a name may be
ROADS = ["#road-bead", "#road-big", "#road-eye", "#road-small", "#road-pig"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = "guest = true\nguest_balance = 100000000\n" + server_config(TABLES)
    s = ServerProcess(tmp_path_factory.mktemp("web-layout"), config).start()
    yield s
    s.stop()


def bots(server: ServerProcess, table: str, rounds: int) -> None:
    """Three ``chemmy bot`` players play ``rounds`` coups at ``table`` and leave."""
    done = subprocess.run(
        [
            sys.executable, "-m", "client_cli", "bot", "--url", server.ws, "--table", table,
            "--count", "3", "--rounds", str(rounds), "--squeeze", "0", "--seed", "17",
            "--timeout", str(scaled(120)),
        ],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=scaled(150),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def betting(tp: TablePage) -> None:
    """Take the shoe and cut it if offered, until this player may bet."""
    deadline = time.monotonic() + scaled(30)
    while not tp.state("Boolean(s.actions.done)"):
        assert time.monotonic() < deadline, f"{tp.label}: betting never opened"
        for button in ("#act-accept", "#act-cut"):
            if tp.enabled(button):
                # The offer may go to someone else meanwhile: then there is no button.
                with contextlib.suppress(PlaywrightError):
                    tp.page.locator(button).click(timeout=ms(1))
        tp.page.wait_for_timeout(50)


def play_coup(tp: TablePage, bets: list[tuple[int, str, int]]) -> None:
    """Bet (chip index, area, clicks), DONE, toss whatever is ours to turn, settle."""
    betting(tp)
    for chip, area, times in bets:
        tp.chip(chip)
        tp.bet(area, times)
    round_id = tp.round_id()
    tp.click("#act-done")
    tp.toss_until_settled(round_id)


def still(page: Page) -> None:
    """Wait until the cards are dealt and turned (no animation runs)."""
    page.wait_for_function("() => document.getAnimations().length === 0", timeout=ms(10))


def rect(page: Page, selector: str) -> dict[str, float]:
    box = page.evaluate(
        """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
            return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                    width: r.width, height: r.height}; }""",
        selector,
    )
    return dict(box)


def rects(page: Page, selector: str) -> list[dict[str, Any]]:
    return list(
        page.evaluate(
            """(sel) => [...document.querySelectorAll(sel)].map((el) => {
                const r = el.getBoundingClientRect();
                return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                        width: r.width, height: r.height,
                        text: el.innerText ?? "", visible: r.width > 0 && r.height > 0}; })""",
            selector,
        )
    )


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        min(a["right"], b["right"]) - max(a["left"], b["left"]) > 0.5
        and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 0.5
    )


def inside(inner: dict[str, float], outer: dict[str, float], slack: float = 0.5) -> bool:
    return (
        inner["left"] >= outer["left"] - slack
        and inner["right"] <= outer["right"] + slack
        and inner["top"] >= outer["top"] - slack
        and inner["bottom"] <= outer["bottom"] + slack
    )


# ---------------------------------------------------------------------------- history


def test_history_cells_sit_under_their_headings(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    tp = TablePage(open_page(viewport=(1280, 900)), "hana")
    tp.open(server, "hana", "Hana", table="lay-history")
    tp.sit(1)
    play_coup(tp, [(0, "banker", 2), (0, "tie", 1)])
    tp.click("#btn-history")
    rows = tp.page.locator("#history-body tr")
    expect(rows).to_have_count(1)
    reader = Inspector(server, "hana")
    (record,) = reader.request("history", limit=10)["rounds"]
    reader.close()

    heads = rects(tp.page, "#dlg-history thead th")
    cells = rects(tp.page, "#history-body tr:first-child td")
    assert len(cells) == len(heads) == 8  # ... and the shoe to verify (issue 34 §7)
    for head, cell in zip(heads, cells, strict=True):
        assert abs(cell["left"] - head["left"]) < 1 and abs(cell["right"] - head["right"]) < 1, (
            f"the cell {cell['text']!r} is not under its heading {head['text']!r}: {cell} {head}"
        )
        assert cell["top"] >= head["bottom"] - 1, f"{cell['text']!r} is not below the headings"
    displays = tp.page.evaluate(
        "[...document.querySelectorAll('#history-body td')].map((td) => getComputedStyle(td).display)"
    )
    assert set(displays) == {"table-cell"}
    # Each hand's cards in its own column, on one line.
    player, banker = cells[2], cells[3]
    assert player["text"].split() == [card_text(c) for c in record["player"]]
    assert banker["text"].split() == [card_text(c) for c in record["banker"]]
    assert "Banker" in cells[4]["text"] and "Tie" in cells[4]["text"]
    card_rows = rects(tp.page, "#history-body td.cards > span")
    assert len({round(r["top"]) for r in card_rows[: len(record["player"])]}) == 1


def card_text(card: str) -> str:
    rank = "10" if card[0] == "T" else card[:-1]
    return rank + {"s": "♠", "h": "♥", "d": "♦", "c": "♣"}[card[-1]]


# ---------------------------------------------------------------------------- roads


def road_view(page: Page, road: str) -> dict[str, Any]:
    """A road's box, how far it is scrolled, and where its cells are."""
    return dict(
        page.evaluate(
            """(sel) => {
                const box = document.querySelector(sel);
                const r = box.getBoundingClientRect();
                const cs = getComputedStyle(box);
                const view = {left: r.left + box.clientLeft + parseFloat(cs.paddingLeft),
                              right: r.left + box.clientLeft + box.clientWidth - parseFloat(cs.paddingRight)};
                const cells = [...box.querySelectorAll('.road-grid > *')].map((c) => {
                    const b = c.getBoundingClientRect();
                    return {left: b.left, right: b.right,
                            col: Number(c.style.gridColumnStart) - 1};
                });
                return {view, width: r.width, scrollLeft: box.scrollLeft,
                        scrollable: box.scrollWidth - box.clientWidth, cells};
            }""",
            road,
        )
    )


def check_road(page: Page, road: str, *, all_in_view: bool) -> dict[str, Any]:
    v = road_view(page, road)
    view = v["view"]
    whole = [
        c
        for c in v["cells"]
        if c["left"] >= view["left"] - 0.5 and c["right"] <= view["right"] + 0.5
    ]
    hidden = [
        c
        for c in v["cells"]
        if c["right"] <= view["left"] + 0.5 or c["left"] >= view["right"] - 0.5
    ]
    cut = [c for c in v["cells"] if c not in whole and c not in hidden]
    assert not cut, f"{road}: cells cut by the edge of the road: {cut[:3]} (view {view})"
    if all_in_view:
        assert not hidden, f"{road}: a short shoe's cells out of view: {hidden[:3]} (view {view})"
    if v["cells"]:
        latest = max(c["col"] for c in v["cells"])
        assert all(c in whole for c in v["cells"] if c["col"] == latest), (
            f"{road}: the latest column is not in view"
        )
    return v


def test_roads_show_a_short_shoe_whole(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    bots(server, "lay-short", 18)
    tp = TablePage(open_page(viewport=(1280, 900)), "ivo")
    tp.open(server, "ivo", "Ivo", table="lay-short")
    expect(tp.page.locator("#road-stats")).to_contain_text("Coups 18")
    # (the derived roads start later in a shoe, the Cockroach pig last)
    for road in ("#road-bead", "#road-big", "#road-eye"):
        expect(tp.page.locator(f"{road} .road-grid > *").first).to_be_visible()
    for road in ROADS:
        v = check_road(tp.page, road, all_in_view=True)
        assert v["scrollLeft"] == 0, f"{road} is scrolled on a short shoe"
    # The derived roads are wide enough to read: Big eye boy across the panel, the
    # other two half of it each.
    panel = rect(tp.page, ".panel.roads")
    assert rect(tp.page, "#road-eye")["width"] > 0.8 * panel["width"]
    for road in ("#road-small", "#road-pig"):
        assert rect(tp.page, road)["width"] > 0.4 * panel["width"]
    # Narrower, then wider: the roads refit.
    tp.page.set_viewport_size({"width": 1000, "height": 900})
    tp.page.wait_for_timeout(300)
    for road in ROADS:
        check_road(tp.page, road, all_in_view=True)


def test_roads_of_a_long_shoe_scroll_by_whole_columns(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    bots(server, "lay-long", 60)
    tp = TablePage(open_page(viewport=(1280, 900)), "jan")
    tp.open(server, "jan", "Jan", table="lay-long")
    expect(tp.page.locator("#road-stats")).to_contain_text("Coups 60")
    scrolled = 0
    for road in ROADS:
        expect(tp.page.locator(f"{road} .road-grid > *").first).to_be_attached()
        v = check_road(tp.page, road, all_in_view=False)
        if v["scrollLeft"] > 0:
            scrolled += 1
            assert v["scrollLeft"] <= v["scrollable"] + 0.5
    assert scrolled >= 2, "60 coups overflow the Big road and some derived roads"


# ---------------------------------------------------------------------------- a phone


def band(page: Page) -> dict[str, float]:
    """The part of the screen between the top bar and the bottom bar."""
    top, bottom = rect(page, "#topbar"), rect(page, "#bottombar")
    width = page.viewport_size["width"] if page.viewport_size else 0
    return {"left": 0, "right": width, "top": top["bottom"], "bottom": bottom["top"]}


def check_one_screen(page: Page, what: str, selectors: list[str]) -> None:
    page.evaluate("document.querySelector('main').scrollTop = 0")
    still(page)
    screen = band(page)
    height = (page.viewport_size or {"height": 0})["height"]
    assert screen["bottom"] - screen["top"] > 0.6 * height, f"{what}: the bars take the screen"
    for sel in selectors:
        for box in rects(page, sel):
            if box["visible"]:
                assert inside(box, screen), f"{what}: {sel} {box} is off the screen {screen}"
    for sel in ("#hands", "#layout"):
        assert rects(page, sel)[0]["visible"], f"{what}: no {sel}"


def check_targets(page: Page, what: str, selectors: list[str]) -> None:
    for sel in selectors:
        for box in rects(page, sel):
            if box["visible"]:
                assert box["height"] >= 44 and box["width"] >= 44, (
                    f"{what}: {sel} {box['text']!r} is {box['width']:.0f}x{box['height']:.0f}"
                )


PLAY = ["#hands", "#cards-player .card", "#cards-banker .card", "#layout .area", "#chips .chip"]
BETTING = [*PLAY, "#bet-bar button"]
TURNING = [*PLAY, "#squeeze-bar button", "#bet-bar button"]
TARGETS = ["#topbar .menu button", "#bet-bar button", "#chips .chip", "#squeeze-bar button"]


def test_a_phone_holds_the_game_on_one_screen(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    page = open_page(viewport=(390, 844), is_mobile=True, has_touch=True)
    tp = TablePage(page, "kim").open(server, "kim", "Kim", table="lay-phone")
    tp.sit(1)
    play_coup(tp, [(1, "player", 1)])  # cards on the table from now on
    betting(tp)
    tp.chip(4)
    tp.bet("banker", 2)  # the table's maximum: the tallest pile
    tp.chip(0)
    tp.bet("player_pair", 1)
    for size in ((390, 844), (844, 390)):
        page.set_viewport_size({"width": size[0], "height": size[1]})
        page.wait_for_timeout(200)
        what = f"betting at {size[0]}x{size[1]}"
        check_one_screen(page, what, BETTING)
        check_targets(page, what, TARGETS)
    page.set_viewport_size({"width": 390, "height": 844})
    round_id = tp.round_id()
    tp.click("#act-done")  # Playwright scrolls to it first, if it must
    expect(page.locator("#sq-toss")).to_be_enabled()
    for size in ((390, 844), (844, 390)):
        page.set_viewport_size({"width": size[0], "height": size[1]})
        page.wait_for_timeout(200)
        what = f"turning at {size[0]}x{size[1]}"
        assert page.locator("#cards-player .card").count() >= 2
        check_one_screen(page, what, TURNING)
        check_targets(page, what, TARGETS)
    page.set_viewport_size({"width": 390, "height": 844})
    tp.toss_until_settled(round_id)

    # The History fits the phone: every heading in view, nothing to scroll sideways.
    tp.click("#btn-history")
    expect(page.locator("#history-body tr")).to_have_count(2)
    scroller = page.locator("#dlg-history .scroll")
    sizes = scroller.evaluate("(el) => [el.scrollWidth, el.clientWidth]")
    assert sizes[0] <= sizes[1], f"the History scrolls sideways: {sizes}"
    view = rect(page, "#dlg-history .scroll")
    for head in rects(page, "#dlg-history thead th"):
        assert inside(head, view), f"History heading {head['text']!r} clipped: {head} {view}"
    assert inside(rect(page, "#dlg-history"), band(page) | {"top": 0, "bottom": 844})


# ---------------------------------------------------------------------------- wide


def test_a_wide_screen_is_filled_by_the_table(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    page = open_page(viewport=(1920, 1080))
    tp = TablePage(page, "lea").open(server, "lea", "Lea", table="lay-wide")
    tp.sit(1)
    play_coup(tp, [(0, "banker", 1)])
    betting(tp)
    page.evaluate("document.querySelector('main').scrollTop = 0")
    screen = band(page)
    felt = rect(page, ".felt")
    assert inside(felt, screen, slack=1), f"the felt is not on the screen: {felt} {screen}"
    assert felt["height"] > 0.85 * (screen["bottom"] - screen["top"]), "the felt is short"
    assert page.evaluate(
        "(() => { const f = document.querySelector('.felt'); return f.scrollHeight <= f.clientHeight; })()"
    ), "the felt's content does not fit it"
    # Its parts use its height: nothing but the felt's edge below the buttons.
    lowest = max(b["bottom"] for b in rects(page, ".felt > *") if b["visible"])
    assert felt["bottom"] - lowest < 0.08 * felt["height"], (
        f"the lower part of the felt is empty: {felt['bottom'] - lowest:.0f} px"
    )
    still(page)
    cards = rects(page, "#hands .card")  # (a third card lies sideways)
    assert cards and min(max(c["height"], c["width"]) for c in cards) >= 160, (
        f"small cards: {cards[:1]}"
    )
    assert min(b["height"] for b in rects(page, ".layout-row.main-bets .area")) >= 120
    assert min(b["height"] for b in rects(page, "#chips .chip")) >= 60
    # A laptop's short screen: the felt still holds the hands, bets, chips and buttons.
    page.set_viewport_size({"width": 1366, "height": 768})
    page.wait_for_timeout(200)
    screen = band(page)
    for sel in BETTING:
        for box in rects(page, sel):
            if box["visible"]:
                assert inside(box, screen), f"1366x768: {sel} {box} is off the screen {screen}"


# ---------------------------------------------------------------------------- long names, big chips


def test_long_names_and_big_chips_stay_in_their_boxes(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    page = open_page(viewport=(1280, 900))
    tp = TablePage(page, "max").open(server, "max", LONG_NAME, table="lay-names")
    tp.sit(5)
    betting(tp)

    # The whole name in the seat tile.
    name = page.locator("#seats .seat.me .seat-name")
    expect(name).to_contain_text(LONG_NAME)
    fits = name.evaluate(
        """(el) => { const cs = getComputedStyle(el);
            return {w: el.scrollWidth <= el.clientWidth, h: el.scrollHeight <= el.clientHeight,
                    ellipsis: cs.textOverflow === 'ellipsis' && cs.overflow !== 'visible'}; }"""
    )
    assert fits == {"w": True, "h": True, "ellipsis": False}, fits
    text_box = name.evaluate(
        """(el) => { const r = document.createRange(); r.selectNodeContents(el);
            const b = r.getBoundingClientRect(); return {left: b.left, right: b.right, top: b.top, bottom: b.bottom}; }"""
    )
    assert inside(text_box, rect(page, "#seats .seat.me"))

    # The top bar: one row, the name inside it.
    bar = rect(page, "#topbar")
    parts = [b for b in rects(page, "#topbar > *") if b["visible"]]
    centers = [(b["top"] + b["bottom"]) / 2 for b in parts]
    assert max(centers) - min(centers) < 4, f"the top bar is on several rows: {parts}"
    assert bar["height"] < 60
    for b in parts:
        assert inside(b, bar), f"{b['text']!r} out of the top bar"

    # Chip values inside the chips' inner ring (the stripes are the outer 14%).
    labels = page.evaluate(
        """[...document.querySelectorAll('#chips .chip')].map((chip) => {
            const r = document.createRange(); r.selectNodeContents(chip);
            const t = r.getBoundingClientRect(), c = chip.getBoundingClientRect();
            return {text: chip.innerText, t: {left: t.left, right: t.right, top: t.top, bottom: t.bottom},
                    c: {left: c.left, right: c.right, top: c.top, bottom: c.bottom, width: c.width}}; })"""
    )
    assert [x["text"] for x in labels] == ["100", "500", "1,000", "2,500", "5,000"]
    for x in labels:
        ring = x["c"]["width"] * 0.14
        inner = {
            k: x["c"][k] + (ring if k in ("left", "top") else -ring)
            for k in ("left", "right", "top", "bottom")
        }
        assert inside(x["t"], inner), f"the label {x['text']!r} spills out of its chip: {x}"
    # The chips have edge stripes: a conic gradient on their edge.
    background = page.locator("#chips .chip").first.evaluate(
        "(el) => getComputedStyle(el).backgroundImage"
    )
    assert "conic-gradient" in background

    # The tallest pile (the maximum, 10,000.00) and its balloon do not overlap.
    tp.chip(4)
    tp.bet("banker", 2)
    tp.chip(0)
    tp.bet("player_pair", 1)
    for area in ("banker", "player_pair"):
        base = f"#layout .area[data-area='{area}']"
        expect(page.locator(f"{base} .balloon")).to_be_visible()
        balloon = rect(page, f"{base} .balloon")
        box = rect(page, base)
        assert inside(balloon, box), f"{area}: the balloon leaves its area"
        for part in (".disc", ".pile-value", ".area-name", ".area-pays"):
            for b in rects(page, f"{base} {part}"):
                assert not overlap(balloon, b), f"{area}: the balloon covers {part}: {balloon} {b}"
    assert page.locator("#layout .area[data-area='banker'] .disc").count() == 6

    # A 200-character chat line without a space stays in the chat panel.
    page.locator("#chat-input").fill("x" * 200)
    page.locator("#chat-input").press("Enter")
    expect(page.locator("#chat-log li")).to_have_count(1)
    line = page.locator("#chat-log li")
    line.scroll_into_view_if_needed()
    panel = rect(page, ".panel.chat")
    assert rect(page, "#chat-log li")["right"] <= panel["right"]
    sizes = page.locator("#chat-log").evaluate("(el) => [el.scrollWidth, el.clientWidth]")
    assert sizes[0] <= sizes[1], f"the chat scrolls sideways: {sizes}"
    assert tp.text("#chat-log li").endswith("x" * 200)
