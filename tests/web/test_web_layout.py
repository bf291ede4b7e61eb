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
- Every screen in every phase (issue 34 §2): 14 seated with long names, at 1280x800,
  1920x1080, 390x844 and 844x390, in the shoe's offer, the cut, betting, a squeeze, the
  settled coup and the next betting (PASS THE SHOE): the hands, the bet areas, the chips
  and the buttons on screen under the top bar, unclipped and not overlapped, the felt
  not scrolling on a laptop, every seat reachable (the row says which are in view and
  takes the keyboard when it scrolls), and axe-core finds nothing serious.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from crowd import Crowd, Loop
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
    for name in ("history", "short", "long", "phone", "wide", "names", "side")
] + [
    {
        "id": "lay-full",
        "name": "Salon des quatorze joueurs",
        "tier": "1-100",
        "pairs": True,
        "timers": {
            k: 300 for k in ("betting", "squeeze", "third_card", "shoe_offer", "cut", "grace")
        },
    }
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
    tp.chip(3)
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
    # The standard chips from the table's minimum (table.js CHIP_SERIES): no 2,500.
    assert [x["text"] for x in labels] == ["100", "500", "1K", "5K", "10K"]
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

    # The tallest pile (9,900.00: ten chips, eight drawn) and its balloon do not overlap.
    for chip, times in ((3, 1), (2, 4), (1, 1), (0, 4)):
        tp.chip(chip)
        tp.bet("banker", times)
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
    # The pile is the rack's chips, in the rack's colours, the largest at the bottom.
    discs = page.evaluate(
        """[...document.querySelectorAll("#layout .area[data-area='banker'] .disc")].map((d) =>
            [d.dataset.value, getComputedStyle(d).getPropertyValue("--c").trim()])"""
    )
    rack = dict(
        page.evaluate(
            """[...document.querySelectorAll("#chips .chip")].map((c) =>
                [c.dataset.value, getComputedStyle(c).getPropertyValue("--c").trim()])"""
        )
    )
    assert [v for v, _ in discs] == ["500000", *["100000"] * 4, "50000", "10000", "10000"], discs
    assert all(colour == rack[v] for v, colour in discs), (discs, rack)

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


# ---------------------------------------------------------------------------- every screen

#: How long the result's banner stays large over the hands (table.js RESULT_BIG_MS).
RESULT_BIG_MS = 3200
SIZES = {"laptop": (1280, 800), "wide": (1920, 1080), "phone": (390, 844), "phone-side": (844, 390)}
AXE = ROOT / "tests" / "web" / "vendor" / "axe.min.js"
# What a player uses, by kind: each on screen, unclipped, none over another of its kinds.
PLAY_PARTS = {
    "cards": "#hands .card",
    "areas": "#layout .area",
    "chips": "#chips .chip",
    "buttons": (
        "#bet-bar button, #squeeze-bar button, #offer-box button, #cut-box button, #cut-range,"
        " #act-pass, #act-stand"
    ),
}
# Every part's box, whether something clips it, the bars, the seats' row and the felt.
MEASURE_JS = """(parts) => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height}; };
  const shown = (el) => Boolean(el?.checkVisibility({visibilityProperty: true}) && el.getBoundingClientRect().width > 0);
  const clippedBy = (el) => {
    const r = el.getBoundingClientRect();
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.overflowX === "visible" && cs.overflowY === "visible") continue;
      const b = a.getBoundingClientRect();
      const left = b.left + a.clientLeft, top = b.top + a.clientTop;
      if (r.left < left - 0.5 || r.top < top - 0.5 || r.right > left + a.clientWidth + 0.5 || r.bottom > top + a.clientHeight + 0.5)
        return (a.id ? "#" + a.id : a.className) || a.tagName;
    }
    return null;
  };
  const out = {};
  for (const [kind, sel] of Object.entries(parts)) {
    out[kind] = [...document.querySelectorAll(sel)].filter(shown).map((el) => ({
      what: (el.id ? "#" + el.id : el.className) + " " + (el.innerText ?? "").trim().slice(0, 20),
      box: box(el), clipped: clippedBy(el) }));
  }
  // A pile of chips (and its balloon) inside its bet area.
  const piles = [...document.querySelectorAll("#layout .pile, #layout .balloon")].filter(shown).filter((el) => {
    const r = el.getBoundingClientRect(), a = el.closest(".area").getBoundingClientRect();
    return r.left < a.left - 0.5 || r.right > a.right + 0.5 || r.top < a.top - 0.5 || r.bottom > a.bottom + 0.5;
  }).map((el) => el.closest(".area").dataset.area + ": " + el.innerText);
  const seats = document.querySelector("#seats");
  const felt = document.querySelector("#table .felt");
  const result = document.querySelector("#result");
  return { parts: out, piles, top: box(document.querySelector("#topbar")), bottom: box(document.querySelector("#bottombar")),
    hands: box(document.querySelector("#hands")),
    result: shown(result) ? { box: box(result), size: result.dataset.size } : null,
    feltScrolls: felt.scrollHeight > felt.clientHeight + 1 && getComputedStyle(felt).overflowY !== "visible",
    seats: { count: seats.children.length, scrolls: seats.scrollWidth > seats.clientWidth + 1,
      focusable: seats.tabIndex === 0 || Boolean(seats.querySelector(".sit-here[tabindex='0']")),
      range: shown(document.querySelector("#seats-range")) ? document.querySelector("#seats-range").textContent : null,
      names: [...seats.querySelectorAll(".seat-name")].filter((n) => n.scrollWidth > n.clientWidth + 1 || n.scrollHeight > n.clientHeight + 1).map((n) => n.textContent) },
    mainScroll: document.querySelector("main").scrollTop };
}"""


def axe_findings(page: Page, where: str) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async () => (await axe.run(document, { resultTypes: ["violations"] })).violations
            .filter((v) => v.impact === "serious" || v.impact === "critical")
            .map((v) => v.id + ": " + v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | "))"""
    )
    return [f"{where}: {f}" for f in found]


def check_screen(page: Page, where: str, expect_parts: set[str]) -> list[str]:
    """What is wrong with the game on this screen now (nothing: [])."""
    m = page.evaluate(MEASURE_JS, PLAY_PARTS)
    width = (page.viewport_size or {"width": 0})["width"]
    screen = {"left": 0, "right": width, "top": m["top"]["bottom"], "bottom": m["bottom"]["top"]}
    wrong: list[str] = []
    for kind in expect_parts:
        if not m["parts"][kind]:
            wrong.append(f"{where}: no {kind} on screen")
    placed = [(kind, part) for kind, parts in m["parts"].items() for part in parts]
    for kind, part in placed:
        if not inside(part["box"], screen, slack=1):
            wrong.append(
                f"{where}: {kind} {part['what']!r} {part['box']} is off the screen {screen}"
            )
        if part["clipped"]:
            wrong.append(f"{where}: {kind} {part['what']!r} is cut by {part['clipped']}")
    for i, (kind_a, a) in enumerate(placed):
        for kind_b, b in placed[i + 1 :]:
            if overlap(a["box"], b["box"]):
                wrong.append(f"{where}: {kind_a} {a['what']!r} and {kind_b} {b['what']!r} overlap")
    if m["result"]:
        banner = m["result"]["box"]
        if not inside(banner, screen, slack=1):
            wrong.append(f"{where}: the result's banner {banner} is off the screen")
        if m["result"]["size"] == "small":
            for kind, part in placed:
                if kind in ("cards", "areas", "chips") and overlap(banner, part["box"]):
                    wrong.append(f"{where}: the small banner covers {kind} {part['what']!r}")
        elif not inside(banner, m["hands"], slack=1):
            wrong.append(f"{where}: the big banner {banner} is not over the hands {m['hands']}")
    if m["piles"]:
        wrong.append(f"{where}: chips out of their area: {m['piles']}")
    if m["feltScrolls"]:
        wrong.append(f"{where}: the felt scrolls: a row is cut by its border")
    seats = m["seats"]
    if seats["count"] != 14:
        wrong.append(f"{where}: {seats['count']} seats")
    if seats["scrolls"] and not (
        seats["focusable"] and seats["range"] and "of 14" in seats["range"]
    ):
        wrong.append(f"{where}: seats out of view, unreachable or unsaid: {seats}")
    if seats["names"]:
        wrong.append(f"{where}: names cut in their seats: {seats['names']}")
    return wrong


def test_every_screen_holds_the_game_in_every_phase(
    server: ServerProcess, open_page: Callable[..., Page], artifacts: Path
) -> None:
    loop = Loop()
    name = "Zacharias Featherstone-Leclerc"
    # The player in seat 1 in two browsers: a computer's (laptop, wide) and a phone's.
    # Their clocks are Playwright's (time flows as it does), so that the test jumps to
    # the banner's going small (RESULT_BIG_MS) where it waited for it.
    desk_page = open_page(viewport=SIZES["laptop"], bypass_csp=True)
    desk_page.clock.install()
    desk = TablePage(desk_page, "desk").open(server, "zach", name, table="lay-full")
    phone_page = open_page(viewport=SIZES["phone"], is_mobile=True, has_touch=True, bypass_csp=True)
    phone_page.clock.install()
    phone = TablePage(phone_page, "phone").open(server, "zach", name, table="lay-full")
    crowd: Crowd | None = None
    wrong: list[str] = []

    def every_screen(phase: str, parts: set[str], axe: bool = True) -> None:
        for size, (w, h) in SIZES.items():
            tp = phone if size.startswith("phone") else desk
            tp.page.set_viewport_size({"width": w, "height": h})
            tp.page.wait_for_timeout(250)
            tp.page.wait_for_function(
                # (the cards dealt and turned, the chips collected and paid: a pile on its
                # way in is not yet in its area)
                "() => document.getAnimations().every((a) => !['deal', 'flip', 'pay', 'collect',"
                " 'collect-balloon'].includes(a.animationName))",
                timeout=ms(5),
            )
            wrong.extend(check_screen(tp.page, f"{phase} at {size}", parts))
            if axe:
                wrong.extend(axe_findings(tp.page, f"{phase} at {size}"))
            if phase in ("squeeze", "settled"):
                tp.page.screenshot(path=str(artifacts / f"layout-{phase}-{size}.png"))
        assert not wrong, "\n".join(wrong)

    try:
        phone.page.wait_for_function("() => chemmyPage.state?.actions?.sit", timeout=ms(10))
        desk.sit(1)
        crowd = Crowd(loop, server, "lay-full", seats=list(range(2, 15)), prefix="c")
        desk.page.wait_for_function(
            "() => Boolean(chemmyPage.state.actions.accept_shoe)", timeout=ms(10)
        )
        every_screen("offer", {"areas", "chips", "buttons"})
        desk.click("#act-accept")
        desk.page.wait_for_function("() => Boolean(chemmyPage.state.actions.cut)", timeout=ms(10))
        every_screen("cut", {"areas", "chips", "buttons"})
        desk.click("#act-cut")
        desk.page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(20))
        # Betting: everyone's chips, on every area.
        areas = list(desk.state("s.areas"))
        crowd.bet_and_done(
            {pid: {areas[n % len(areas)]: 100 * (1 + n % 3)} for n, pid in enumerate(crowd.players)}
        )
        desk.chip(1)
        desk.bet("player", 2)  # the top Player bet: the page turns both hands
        desk.chip(0)
        desk.bet("banker_pair")
        every_screen("betting", {"areas", "chips", "buttons"})
        round_id = desk.round_id()
        desk.click("#act-done")
        # The squeeze: PEEK, card 1 bent halfway by a drag.
        desk.page.set_viewport_size({"width": 1280, "height": 800})
        desk.page.wait_for_function(
            "() => Boolean(chemmyPage.state.actions.squeeze)", timeout=ms(20)
        )
        desk.click("#sq-peek")
        desk.page.wait_for_function("() => Boolean(chemmyPage.state.actions.turn)", timeout=ms(10))
        card = desk.page.locator("#cards-player .card[data-index='1']").bounding_box()
        assert card
        desk.page.mouse.move(card["x"] + card["width"] * 0.95, card["y"] + card["height"] * 0.95)
        desk.page.mouse.down()
        desk.page.mouse.move(
            card["x"] + card["width"] * 0.5, card["y"] + card["height"] * 0.5, steps=6
        )
        desk.page.mouse.up()
        phone.page.wait_for_function(
            "() => Number(document.querySelector(\"#cards-player .card[data-index='1']\")?.dataset.progress ?? 0) > 5",
            timeout=ms(5),
        )
        every_screen("squeeze", {"cards", "areas", "chips", "buttons"})
        desk.toss_until_settled(round_id)
        # Settled: the banner large over the hands (once the chips are collected and
        # paid), then small under them.
        desk.page.wait_for_function(
            "() => !document.getAnimations().some((a) => ['pay', 'collect'].includes(a.animationName))",
            timeout=ms(3),
        )
        wrong.extend(
            check_screen(desk.page, "settled, the banner large, at laptop", {"cards", "areas"})
        )
        for tp in (desk, phone):
            tp.page.clock.fast_forward(RESULT_BIG_MS)
            expect(tp.page.locator("#result")).to_have_attribute(
                "data-size", "small", timeout=ms(6)
            )
        every_screen("settled", {"cards", "areas", "chips", "buttons"})
        # The next betting with PASS THE SHOE: coups until the page's player holds the
        # shoe after a coup (a Player win passes it on: the others decline it).
        for _ in range(10):
            deadline = time.monotonic() + scaled(60)
            while not desk.state("Boolean(s.actions.done)"):
                assert time.monotonic() < deadline, "betting never opened again"
                offered = desk.state("s.phase === 'shoe_offer' ? s.offer?.player : null")
                if desk.enabled("#act-accept"):
                    desk.click("#act-accept")
                elif offered in crowd.players:
                    crowd.rpc(offered, "decline_shoe")  # (the page may be a step behind)
                desk.page.wait_for_timeout(100)
            if desk.state("Boolean(s.actions.pass_shoe)"):
                break
            round_id = desk.round_id()
            desk.chip(0)
            desk.bet("banker")
            crowd.bet_and_done({})
            desk.click("#act-done")
            desk.toss_until_settled(round_id)
        assert desk.state("Boolean(s.actions.pass_shoe)"), "the page never held the shoe again"
        every_screen("next betting", {"areas", "chips", "buttons"}, axe=False)
    finally:
        if crowd:
            crowd.close()
        loop.close()
    assert not wrong, "\n".join(wrong)


def test_a_phone_on_its_side_shows_the_game_after_sit(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    """SIT from the seats' row, far below on a phone on its side: the page comes back
    to the hands, the bet areas, the chips and the offer, under the top bar."""
    page = open_page(viewport=SIZES["phone-side"], is_mobile=True, has_touch=True)
    TablePage(page, "sol").open(server, "sol", "Sol", table="lay-side")
    sit = page.locator("#seats .seat[data-seat='14'] .sit-here")
    sit.scroll_into_view_if_needed()  # as a thumb brings it up
    assert page.evaluate("document.querySelector('main').scrollTop") > 0
    sit.click()
    page.locator("#seats .seat.me[data-seat='14']").wait_for()
    expect(page.locator("#act-accept")).to_be_visible()
    page.wait_for_timeout(300)
    wrong = check_screen(page, "after SIT at 844x390", {"areas", "chips", "buttons"})
    hands = rect(page, "#hands")
    if hands["top"] < rect(page, "#topbar")["bottom"] - 0.5:
        wrong.append(f"the hands are under the top bar: {hands}")
    assert not wrong, "\n".join(wrong)
