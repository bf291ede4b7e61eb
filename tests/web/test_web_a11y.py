"""The web table's accessibility (issue 17.13), in a real Chromium.

- axe-core (vendored: tests/web/vendor/, see its README for the version) finds no
  serious or critical violation on the lobby, a seated table in betting, a coup being
  squeezed and settled, and the cashier, history, help and options dialogs, on a wide
  screen (1280x900) and a phone (390x844).
- The text axe cannot judge on the felt's gradients (the payout labels, the shoe's
  hash, the hands' titles) and the chat's placeholder is measured from the pixels
  behind it: at least 4.5:1.
- Cards have names ("9 of spades", "face down"), each hand reads as a whole ("Player:
  9 of spades, king of diamonds — 9"), and a turned card is announced politely, once
  (a squeeze's progress is not).
- Keyboard only: the Sit buttons are one tab stop moved along with the arrow keys;
  after SIT the focus is at the table, not on the page's body; a player sits, takes
  and cuts the shoe, bets, says DONE and squeezes with keys only.

The pages bypass the CSP (its Trusted Types would refuse the injected axe script); the
page's own scripts are the same.
"""

from __future__ import annotations

import base64
import os
import re
import time
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
    server_config,
)

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
# The impacts that fail a test (CHEMMY_AXE_IMPACTS=minor,moderate,serious,critical lists all).
IMPACTS = tuple(os.environ.get("CHEMMY_AXE_IMPACTS", "serious,critical").split(","))
VIEWPORTS = {"wide": (1280, 900), "phone": (390, 844)}
TABLES = [
    {"id": f"a11y-{name}", "name": f"Access {name}", "tier": "1-100", "timers": RELAXED}
    for name in ("wide", "phone", "cards", "keys")
]
RANKS = {"A": "ace", "K": "king", "Q": "queen", "J": "jack", "T": "10"}
SUITS = {"s": "spades", "h": "hearts", "d": "diamonds", "c": "clubs"}
# Game speed 1: a squeezed card takes its longest to open (to look at it meanwhile).
SLOW = "localStorage.setItem('chemmy.options', JSON.stringify({speed: 1}));"
# What the page's live region says, recorded from the page's start (an observer sees
# each task's last words, as a screen reader does).
LIVE_SPY = """
window.__live = [];
new MutationObserver(() => {
  const el = document.getElementById("announce");
  if (el && el.textContent && el.textContent !== window.__live.at(-1)) window.__live.push(el.textContent);
}).observe(document, { subtree: true, childList: true, characterData: true });
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-a11y"), server_config(TABLES)).start()
    yield s
    s.stop()


# ---------------------------------------------------------------------------- axe


def axe_serious(page: Page, where: str) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        """async () => {
            const r = await axe.run(document, { resultTypes: ["violations"] });
            return { passes: r.passes.length, violations: r.violations.map((v) => ({
                id: v.id, impact: v.impact,
                nodes: v.nodes.map((n) => n.target.join(" ") + ": " + n.failureSummary),
            })) };
        }"""
    )
    assert result["passes"] > 10, f"axe checked nothing at {where}"
    return [
        f"{where}: {v['id']} ({v['impact']}): " + " | ".join(v["nodes"][:5])
        for v in result["violations"]
        if v["impact"] in IMPACTS
    ]


# ---------------------------------------------------------------------------- contrast

# The colour a text is painted in (its alpha and its ancestors' opacity).
FG_JS = """([selector, placeholder]) => {
  const el = document.querySelector(selector);
  const m = getComputedStyle(el, placeholder ? "::placeholder" : null).color.match(/[\\d.]+/g).map(Number);
  let alpha = m.length > 3 ? m[3] : 1;
  if (placeholder) alpha *= Number(getComputedStyle(el, "::placeholder").opacity || 1);
  for (let e = el; e; e = e.parentElement) alpha *= Number(getComputedStyle(e).opacity);
  return [m[0], m[1], m[2], alpha];
}"""
# Each chip's label and the contrast of its colour with the chip's own (--c, its disc).
CHIPS_JS = """() => {
  const rgb = (c) => { const x = document.createElement("i"); x.style.color = c; document.body.append(x);
    const m = getComputedStyle(x).color.match(/[\\d.]+/g).map(Number); x.remove(); return m; };
  const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const lum = ([r, g, b]) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  return [...document.querySelectorAll("#chips .chip")].map((chip) => {
    const cs = getComputedStyle(chip);
    const [a, b] = [lum(rgb(cs.color)), lum(rgb(cs.getPropertyValue("--c").trim() || cs.backgroundColor))];
    return [chip.textContent.trim(), (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)];
  });
}"""
# The box a text is drawn in (inside the element's border and padding), in the viewport.
CONTENT_BOX_JS = """(selector) => {
  const el = document.querySelector(selector);
  const r = el.getBoundingClientRect();
  const cs = getComputedStyle(el);
  const px = (p) => parseFloat(cs[p]) || 0;
  const left = px("borderLeftWidth") + px("paddingLeft"), top = px("borderTopWidth") + px("paddingTop");
  const right = px("borderRightWidth") + px("paddingRight"), bottom = px("borderBottomWidth") + px("paddingBottom");
  return { x: r.x + left, y: r.y + top, width: r.width - left - right, height: r.height - top - bottom };
}"""
# Hide (or show again) a text, to see what is behind it.
HIDE_JS = """([selector, placeholder, hide]) => {
  const el = document.querySelector(selector);
  if (placeholder) {
    if (hide) { el.dataset.ph = el.placeholder; el.placeholder = ""; } else el.placeholder = el.dataset.ph;
  } else if (hide) el.style.setProperty("color", "transparent", "important");
  else el.style.removeProperty("color");
}"""
# The worst WCAG contrast of a colour over the pixels of a PNG (what is behind a text).
RATIO_JS = """async ([png, fg]) => {
  const bytes = Uint8Array.from(atob(png), (c) => c.charCodeAt(0));
  const bitmap = await createImageBitmap(new Blob([bytes], { type: "image/png" }));
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  const ctx = canvas.getContext("2d");
  ctx.drawImage(bitmap, 0, 0);
  const px = ctx.getImageData(0, 0, bitmap.width, bitmap.height).data;
  const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const lum = (r, g, b) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  let worst = Infinity;
  for (let i = 0; i < px.length; i += 4) {
    const [r, g, b] = [px[i], px[i + 1], px[i + 2]];
    const a = fg[3];
    const f = lum(fg[0] * a + r * (1 - a), fg[1] * a + g * (1 - a), fg[2] * a + b * (1 - a));
    const k = lum(r, g, b);
    worst = Math.min(worst, (Math.max(f, k) + 0.05) / (Math.min(f, k) + 0.05));
  }
  return worst;
}"""


def contrast(page: Page, selector: str, placeholder: bool = False) -> float:
    """The text's contrast with the worst pixel behind it (its box, the text hidden)."""
    loc = page.locator(selector).first
    loc.scroll_into_view_if_needed()
    box = page.evaluate(CONTENT_BOX_JS, selector)
    assert box["width"] > 0 and box["height"] > 0, f"{selector} is not on screen"
    fg = page.evaluate(FG_JS, [selector, placeholder])
    page.evaluate(HIDE_JS, [selector, placeholder, True])
    try:
        png = page.screenshot(clip=box, animations="disabled", caret="hide")
    finally:
        page.evaluate(HIDE_JS, [selector, placeholder, False])
    return float(page.evaluate(RATIO_JS, [base64.b64encode(png).decode(), fg]))


CONTRASTED = {
    "the payout labels": "#layout .area[data-area='banker'] .area-pays",
    "the Tie payout": "#layout .area[data-area='tie'] .area-pays",
    "the shoe's hash": "#shoe-info .commitment",
    "the PLAYER title": "#hand-player .hand-name",
    "the BANKER title": "#hand-banker .hand-name",
    "the seat line": "#you-seat",
    "a seat's number": "#seats .seat[data-seat='2'] .seat-no",
    "the cards left": "#shoe-info span:nth-child(2)",
}


# ---------------------------------------------------------------------------- playing


def open_table(open_page: Callable[..., Page], server: ServerProcess, viewport: str, table: str,
               player: str, *, init: str | None = None) -> TablePage:  # fmt: skip
    page = open_page(viewport=VIEWPORTS[viewport], bypass_csp=True)
    if init:
        page.add_init_script(init)
    return TablePage(page, player).open(server, player, player.title(), table=table)


def bet_and_done(tp: TablePage, area: str = "banker") -> str:
    round_id = tp.round_id()
    tp.chip(0)
    tp.bet(area)
    tp.click("#act-done")
    return round_id


def focused(page: Page) -> str:
    """The focused element, as ``tag#id.class[data-...]`` (for messages and checks)."""
    return str(
        page.evaluate(
            """() => { const e = document.activeElement; if (!e) return "none";
                const data = Object.entries(e.dataset).map(([k, v]) => `[${k}=${v}]`).join("");
                return `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${e.className}${data}`; }"""
        )
    )


def tab_to(page: Page, selector: str, presses: int = 80, back: bool = False) -> None:
    """Press Tab (Shift+Tab: ``back``) until ``selector`` has the focus."""
    for _ in range(presses):
        if page.evaluate(f"() => document.activeElement?.matches({selector!r}) ?? false"):
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"Tab never reached {selector}; the focus is on {focused(page)}")


def turn_buttons(tp: TablePage) -> tuple[bool, bool]:
    """Whether the page offers a squeeze (PEEK) and TOSS, read at one instant: the two
    come together, and one read after the other could see only the later one."""
    peek, toss = tp.page.evaluate(
        """() => ["#sq-peek", "#sq-toss"].map((sel) => {
            const e = document.querySelector(sel);
            return Boolean(e && !e.disabled && e.checkVisibility());
        })"""
    )
    return bool(peek), bool(toss)


def card_words(card: str) -> str:
    return f"{RANKS.get(card[:-1], card[:-1])} of {SUITS[card[-1]]}"


# ---------------------------------------------------------------------------- tests


@pytest.mark.parametrize("viewport", ["wide", "phone"])
def test_axe_and_contrast_at_every_step(
    server: ServerProcess, open_page: Callable[..., Page], viewport: str
) -> None:
    found: list[str] = []
    page = open_page(viewport=VIEWPORTS[viewport], bypass_csp=True)
    page.add_init_script(SLOW)  # so that axe runs while a card opens
    tp = TablePage(page, viewport).open(server, f"axe-{viewport}", "Ada")
    expect(page.locator("#tables .table-card")).to_have_count(len(TABLES))
    found += axe_serious(page, "the lobby")

    tp.click(f"#tables .table-card[data-table='a11y-{viewport}']")
    expect(page.locator("#seats .sit-here")).to_have_count(14)
    found += axe_serious(page, "the table, not seated")
    # The layout closed (not seated): shaded, not faded; its words still read.
    expect(page.locator("#layout .area[data-area='banker']")).to_be_disabled()
    closed = {w: contrast(page, sel) for w, sel in CONTRASTED.items() if "payout" in w}
    assert min(closed.values()) >= 4.5, f"the closed layout's contrast at {viewport}: {closed}"

    holder_ready(tp, 1)
    expect(page.locator("#shoe-info .commitment")).to_be_visible()
    found += axe_serious(page, "seated, betting")
    ratios = {what: contrast(page, sel) for what, sel in CONTRASTED.items()}
    ratios["the chat's placeholder"] = contrast(page, "#chat-input", placeholder=True)
    # A chip's digits on its colour (axe cannot see through the chip's gradients).
    chips = page.evaluate(CHIPS_JS)
    assert len(chips) >= 3, chips
    ratios.update({f"the chip {label}": ratio for label, ratio in chips})
    low = {what: round(r, 2) for what, r in ratios.items() if r < 4.5}
    assert not low, f"contrast below 4.5:1 at {viewport}: {low}"

    round_id = bet_and_done(tp)
    deadline = time.monotonic() + scaled(60)
    squeezed = False
    while tp.state(f"s.lastCoup?.roundId !== {round_id!r}"):
        assert time.monotonic() < deadline, f"coup {round_id} not settled"
        can_squeeze, can_toss = turn_buttons(tp)
        if not squeezed and can_squeeze:
            squeezed = True
            tp.click("#sq-peek")
            expect(page.locator("#sq-card1")).to_be_enabled()
            found += axe_serious(page, "a squeeze chosen")
            tp.click("#sq-card1")
            expect(page.locator("#cards-banker .card[data-state='squeeze']")).to_have_count(1)
            found += axe_serious(page, "a card being squeezed")
            tp.settle()
        elif can_toss:
            tp.toss()
        else:
            page.wait_for_timeout(50)
    assert squeezed, "the holder never squeezed"
    expect(page.locator("#result")).to_be_visible()
    found += axe_serious(page, "a coup settled")

    for button, dialog in (
        ("#btn-cashier", "#dlg-cashier"),
        ("#btn-history", "#dlg-history"),
        ("#btn-help", "#dlg-help"),
        ("#btn-options", "#dlg-options"),
    ):
        tp.click(button)
        expect(page.locator(dialog)).to_be_visible()
        if dialog == "#dlg-history":
            expect(page.locator("#history-body tr")).to_have_count(1)
        if dialog == "#dlg-help":
            expect(page.locator("#help-body h1, #help-body h2").first).to_be_visible()
        found += axe_serious(page, f"the {dialog[5:]} dialog")
        page.keyboard.press("Escape")
        expect(page.locator(dialog)).to_be_hidden()
    assert not found, "axe found serious or critical violations:\n" + "\n".join(found)


def test_cards_and_hands_have_names_and_a_turned_card_is_announced_once(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    tp = open_table(open_page, server, "wide", "a11y-cards", "cara", init=LIVE_SPY + SLOW)
    page = tp.page
    holder_ready(tp, 1)
    burn = page.locator("#burn .card")
    expect(burn).to_have_accessible_name(card_words(burn.get_attribute("data-card") or ""))
    live = page.locator("#announce")
    expect(live).to_have_attribute("aria-live", "polite")
    expect(live).to_have_attribute("role", "status")
    expect(page.locator("[aria-live]")).to_have_count(1)  # one voice, not two at once

    round_id = bet_and_done(tp)
    # The hand to turn is face down: each card says so, and the hand reads as its cards.
    page.wait_for_function("() => Boolean(chemmyPage.state.actions.toss)", timeout=ms(20))
    hand = tp.state("s.actions.toss.hand")
    expect(page.locator(f"#cards-{hand} .card")).to_have_count(2)
    expect(page.locator(f"#cards-{hand} .card").first).to_have_accessible_name("face down")
    expect(page.locator(f"#hand-{hand}")).to_have_accessible_name(
        f"{hand.title()}: face down, face down"
    )

    # A squeeze: the card opening is named as such (its turner hears what they see),
    # and nothing of its progress reaches the live region.
    squeezed = False
    deadline = time.monotonic() + scaled(60)
    while tp.state(f"s.lastCoup?.roundId !== {round_id!r}"):
        assert time.monotonic() < deadline, f"coup {round_id} not settled"
        can_squeeze, can_toss = turn_buttons(tp)
        if not squeezed and can_squeeze:
            squeezed = True
            hand = tp.state("s.actions.squeeze.hand")
            tp.click("#sq-side")
            expect(page.locator("#sq-card1")).to_be_enabled()
            tp.click("#sq-card1")
            opening = page.locator(f"#cards-{hand} .card[data-index='1'][data-state='squeeze']")
            expect(opening).to_have_accessible_name(
                re.compile(
                    r"^face down, being squeezed: you see (ace|king|queen|jack|\d+) of (spades|hearts|diamonds|clubs)$"
                )
            )
            tp.settle()
        elif can_toss:
            tp.toss()
        else:
            page.wait_for_timeout(50)
    assert squeezed

    # Settled: every card and each hand in words, as the server recorded the coup.
    reader = Inspector(server, "cara")
    (rec,) = reader.request("history", limit=1)["rounds"]
    reader.close()
    assert rec["round_id"] == round_id
    said = {}
    for hand, title in (("player", "Player"), ("banker", "Banker")):
        cards = page.locator(f"#cards-{hand} .card")
        expect(cards).to_have_count(len(rec[hand]))
        for i, card in enumerate(rec[hand]):
            expect(cards.nth(i)).to_have_accessible_name(card_words(card))
        said[hand] = (
            f"{title}: {', '.join(card_words(c) for c in rec[hand])} — {rec[f'{hand}_total']}"
        )
        expect(page.locator(f"#hand-{hand}")).to_have_accessible_name(said[hand])
    # The history writes the same cards, named the same way.
    tp.click("#btn-history")
    row = page.locator(f"#history-body tr[data-round='{round_id}']")
    for column, hand in ((3, "player"), (4, "banker")):
        named = row.locator(f"td:nth-child({column}) [role='img']")
        expect(named).to_have_count(len(rec[hand]))
        for i, card in enumerate(rec[hand]):
            expect(named.nth(i)).to_have_accessible_name(card_words(card))
    page.keyboard.press("Escape")

    # The live region said the table's steps, and each turned card once, as its whole
    # hand (not the card's note as well), never the squeeze's progress; each hand's
    # last words are the whole hand.
    said_live = page.evaluate("window.__live")
    assert "Coup 1: place your bets" in said_live, said_live
    assert [x for x in said_live if x.startswith("Your turn: turn the ")], said_live
    result = "Tie" if rec["outcome"] == "tie" else f"{rec['outcome'].title()} wins"
    assert [x for x in said_live if result in x], said_live
    hands_said = [x for x in said_live if re.match(r"^(Player|Banker): ", x)]
    assert 0 < len(hands_said) <= len(rec["player"]) + len(rec["banker"]), said_live
    assert not [x for x in said_live if re.search(r"(Player|Banker) card \d:", x)], said_live
    assert not [x for x in said_live if "%" in x or "being squeezed" in x], said_live
    for hand, title in (("player", "Player"), ("banker", "Banker")):
        last = [x for x in hands_said if f"{title}:" in x][-1]
        assert said[hand] in last, (said[hand], said_live)


def test_keyboard_only_sit_bet_done_and_squeeze(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    page = open_page(viewport=VIEWPORTS["wide"])
    tp = TablePage(page, "kim").open(server, "kim", "Kim")
    # The lobby: Tab to the table, Enter; the focus goes on to its Sit buttons.
    expect(page.locator("#tables .table-card")).to_have_count(len(TABLES))
    tab_to(page, "#tables .table-card[data-table='a11y-keys']")
    # The list is drawn anew every 5 s: the focus stays on the same table.
    page.evaluate("() => chemmyPage.refreshLobby()")
    expect(page.locator("#tables .table-card[data-table='a11y-keys']")).to_be_focused()
    page.keyboard.press("Enter")
    sits = page.locator("#seats .sit-here")
    expect(sits).to_have_count(14)
    expect(sits.nth(0), "the focus goes from the lobby to the Sit buttons").to_be_focused()
    expect(page.locator("#seats")).to_have_attribute("role", "toolbar")
    # The 14 Sit buttons are one tab stop: Tab leaves them.
    expect(page.locator("#seats .sit-here[tabindex='0']")).to_have_count(1)
    tab_to(page, "#seats .sit-here")
    expect(sits.nth(0), "seat 1's button is the tab stop").to_be_focused()
    ring = page.evaluate(
        "() => { const cs = getComputedStyle(document.activeElement); return [cs.outlineStyle, parseFloat(cs.outlineWidth)]; }"
    )
    assert ring[0] != "none" and ring[1] >= 2, f"no visible keyboard focus: {ring}"
    page.keyboard.press("Tab")
    where = focused(page)
    assert not page.evaluate("() => Boolean(document.activeElement.closest('#seats'))"), where
    # Back into them from after (the roads, the chat...): the same one, not the 14th.
    tab_to(page, "#seats .sit-here", back=True)
    expect(sits.nth(0), f"Shift+Tab comes back to it (from {where})").to_be_focused()
    # The arrow keys move along them (wrapping), Home and End go to the ends.
    page.keyboard.press("ArrowRight")
    expect(sits.nth(1)).to_be_focused()
    page.keyboard.press("End")
    expect(sits.nth(13)).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(sits.nth(0)).to_be_focused()
    page.keyboard.press("ArrowLeft")
    expect(sits.nth(13)).to_be_focused()
    page.keyboard.press("Home")
    for _ in range(4):
        page.keyboard.press("ArrowDown")
    five = page.locator("#seats .seat[data-seat='5'] .sit-here")
    expect(five).to_be_focused()
    expect(five).to_have_accessible_name("Sit in seat 5")
    # Someone else sits: the seats are drawn anew, the focus stays on seat 5's button,
    # still the only tab stop.
    other = Inspector(server, "kai", "Kai")
    other.request("join", table="a11y-keys")
    other.request("sit", table="a11y-keys", seat=1)
    expect(page.locator("#seats .seat[data-seat='1'] .seat-name")).to_have_text("Kai")
    expect(sits).to_have_count(13)
    expect(five).to_be_focused()
    expect(page.locator("#seats .sit-here[tabindex='0']")).to_have_count(1)

    # SIT: the focus stays at the table (not the page's body), and goes to ACCEPT when
    # the shoe is offered.
    page.keyboard.press("ArrowLeft")
    four = page.locator("#seats .seat[data-seat='4'] .sit-here")
    expect(four).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#seats .seat.me[data-seat='4']")).to_be_visible()
    assert page.evaluate("() => document.activeElement !== document.body"), "focus on the body"
    tp.page.wait_for_function(
        "() => chemmyPage.state.actions.accept_shoe || chemmyPage.state.offer", timeout=ms(10)
    )
    if not tp.enabled("#act-accept"):  # offered to Kai first (seat 1): he declines
        other.request("decline_shoe", table="a11y-keys")
    expect(page.locator("#act-accept")).to_be_focused()
    page.keyboard.press("Enter")
    # CUT: the slider has the focus; the arrows move it, Tab reaches CUT.
    cut = page.locator("#cut-range")
    expect(cut).to_be_focused()
    start = int(cut.input_value())
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(cut).to_have_value(str(start + 3))
    tab_to(page, "#act-cut")
    page.keyboard.press("Enter")
    # Betting: the chip in hand has the focus; Shift+Tab reaches the layout.
    expect(page.locator("#chips .chip[aria-pressed='true']")).to_be_focused()
    tab_to(page, "#layout .area[data-area='banker']", back=True)
    page.keyboard.press("Enter")
    tp.page.wait_for_function("() => (chemmyPage.state.myBets.banker ?? 0) > 0", timeout=ms(10))
    round_id = tp.round_id()
    tab_to(page, "#act-done")
    page.keyboard.press("Space")
    expect(page.locator("#seats .seat.me .seat-done")).to_be_visible()
    other.request("done", table="a11y-keys")

    # The turn: PEEK, then CARD 1 and CARD 2, by keys; the rest tossed by keys.
    squeezed = False
    deadline = time.monotonic() + scaled(60)
    while tp.state(f"s.lastCoup?.roundId !== {round_id!r}"):
        assert time.monotonic() < deadline, f"coup {round_id} not settled: {tp.text('#message')}"
        can_squeeze, can_toss = turn_buttons(tp)
        if not squeezed and can_squeeze:
            squeezed = True
            hand = tp.state("s.actions.squeeze.hand")
            # The turn came: the focus went to TOSS (it waited on "You: seat 4", or left
            # the bet bar as it closed); PEEK is next to it.
            expect(page.locator("#sq-toss")).to_be_focused()
            page.keyboard.press("Tab")
            expect(page.locator("#sq-peek")).to_be_focused()
            page.keyboard.press("Enter")
            # The chosen style's button is disabled: the focus moves on to CARD 1.
            expect(page.locator("#sq-card1")).to_be_focused()
            page.keyboard.press("Enter")
            expect(page.locator("#sq-card2")).to_be_focused()
            page.keyboard.press("Enter")
            for index in (1, 2):
                tp.page.wait_for_function(
                    f"() => !chemmyPage.state.coup || chemmyPage.state.coup.{hand}[{index - 1}]?.up",
                    timeout=ms(15),
                )
            tp.settle()
        elif can_toss:
            expect(page.locator("#sq-toss")).to_be_focused()
            page.keyboard.press("Enter")
            tp.settle()
        else:
            page.wait_for_timeout(50)
    assert squeezed, f"the turn never came to the keyboard player; the log: {tp.text('#log')}"
    expect(page.locator("#result")).to_be_visible()
    assert tp.state(f"s.lastCoup.roundId === {round_id!r}")

    # STAND: the focus goes back to the Sit buttons (Kai holds the table meanwhile).
    page.wait_for_function("() => Boolean(chemmyPage.state.actions.stand)", timeout=ms(20))
    tab_to(page, "#act-stand", back=True)
    page.keyboard.press("Enter")
    expect(page.locator("#seats .seat.me")).to_have_count(0)
    expect(page.locator("#seats .sit-here[tabindex='0']")).to_be_focused()
    other.request("leave", table="a11y-keys")  # (reads what Kai was sent: a full queue
    other.close()  # would hold the closing handshake for its 10 s timeout)
