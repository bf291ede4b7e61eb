"""Smaller things seen at the web table (issue 34 §7), each in a real Chromium against a
real server:

- a player verifies any shoe of their History in the browser (only the table's latest
  could be: "Verify the last shoe"): a shoe they played in, after the table has ended
  another one since;
- a prompt outranks a note: "The shoe is offered to you: ACCEPT or DECLINE" stays on
  the display when the page's randomness is committed (which replaced it);
- with an expired token the message display says so (it said "Connecting…");
- German "UNENTSCHIEDEN" is never broken inside the word on a phone (it is drawn
  smaller to fit its area), and the phone's top bar shows the whole plaque ("Tie ≤
  ¥15,…" was cut).

(The result said once in the log, a language chosen in Options at once: test_web_i18n.py;
no Sit offered during a break: test_web_responsible.py; a currency table refused on
play money: tests/server/test_currency.py and test_web_currency.py.)
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from playwright.sync_api import Page, expect
from web_helpers import (
    FAST,
    SECRET,
    TRANSFER,
    ServerProcess,
    TablePage,
    holder_ready,
    ms,
    scaled,
    server_config,
    transfer_in,
)

from server.process.auth import make_token
from tests.kit import Client, Game

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds each

T = TypeVar("T")
TABLES = [
    # Six decks, the stop card 100 from the end: a shoe of about 48 coups, played fast.
    {"id": "det-shoes", "name": "Shoes", "tier": "1-100", "currency": "EUR", "decks": 6,
     "stop_offset": 100, "timers": FAST},
    {"id": "det-prompt", "name": "Prompt", "tier": "1-100", "timers": FAST},
    {"id": "det-de", "name": "Tisch", "tier": "1-100", "timers": FAST},
    {"id": "det-yen", "name": "Salon yen", "currency": "JPY", "min": 100, "max": 100_000,
     "tie_max": 15_000, "side_max": 15_000, "timers": FAST},
]  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # A bot plays two shoes fast: above a player's message rates.
    rates = "".join(
        f"{kind}_rate_{what} = {value}\n"
        for kind in ("player", "address")
        for what, value in (("limit", 2000.0), ("burst", 4000))
    )
    fast = f"rate_limit = 2000.0\nrate_burst = 4000\n{rates}"
    config = TRANSFER + fast + server_config(TABLES)
    s = ServerProcess(tmp_path_factory.mktemp("web-details"), config).start()
    yield s
    s.stop()


class Loop:
    """An asyncio loop in a thread of its own, for the kit's async clients."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], seconds: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(scaled(seconds))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(scaled(10))
        self.loop.close()


@pytest.fixture
def loop() -> Iterator[Loop]:
    made = Loop()
    yield made
    made.close()


async def finish_shoes(url: str, table: str, shoes: int) -> int:
    """A bot plays ``table`` alone until ``shoes`` more shoes have ended; the number of
    the last one ended."""
    bot = Client(url, "json", label="det-bot")
    await bot.open()
    try:
        await bot.hello(token=make_token(SECRET, "det-bot", "Bot", currency="EUR"))
        await bot.join(table)
        await bot.call("sit", table=table)
        solo = Game(table, {"det-bot": bot}, bot, rng=random.Random(7), accept=lambda pid: False)
        ended: list[int] = []
        for _ in range(400):
            ended = [int(e["data"]["shoe_no"]) for e in bot.events(table, "shoe_ended")]
            if len(ended) >= shoes:
                break
            await solo.to_betting()
            if solo.holder() == "det-bot":
                reply = await bot.rpc("pass_shoe", table=table)
                if reply["type"] == "ok":
                    continue
            await solo.act("det-bot", "bet", area="banker", amount=100)
            await solo.play_coup({})
        assert len(ended) >= shoes, ended
        await bot.call("stand", table=table)
        return ended[-1]
    finally:
        await bot.close()


def test_any_shoe_of_the_history_is_verified_in_the_browser(
    server: ServerProcess, open_page: Callable[..., Page], loop: Loop
) -> None:
    for player in ("det-val", "det-bot"):
        transfer_in(server, player, 100_000, "EUR")
    tp = TablePage(open_page(), "val").open(
        server, "det-val", "Val", table="det-shoes", currency="EUR"
    )
    holder_ready(tp, 1)
    tp.bet("banker")
    first = tp.round_id()
    tp.click("#act-done")
    tp.toss_until_settled(first)
    shoe = tp.state("s.shoe.no")
    tp.click("#act-stand")
    tp.page.wait_for_function("() => chemmyPage.state.mySeat === null", timeout=ms(10))
    tp.click("#btn-lobby")  # she leaves the table; her History stays hers
    expect(tp.page.locator("#lobby")).to_be_visible()
    # The shoe Val played in ends, then another: the table's latest is not hers.
    last = loop.run(finish_shoes(server.ws, "det-shoes", 2))
    assert last > shoe
    tp.click("#btn-history")
    row = tp.page.locator(f"#history-body tr[data-round='{first}']")
    button = row.locator("button.verify-shoe")
    expect(button).to_have_text(f"Verify shoe {shoe}")
    button.click()
    status = tp.page.locator("#verify-status")
    expect(status).to_have_text(
        re.compile(rf"^Shoe {shoe} verifies: its seed matches the commitment"), timeout=ms(20)
    )
    expect(status).to_have_attribute("data-tone", "ok")


def test_a_prompt_outranks_a_note(server: ServerProcess, open_page: Callable[..., Page]) -> None:
    tp = TablePage(open_page(), "pam").open(server, "det-pam", "Pam", table="det-prompt")
    page = tp.page
    tp.sit(1)
    offer = "The shoe is offered to you: ACCEPT or DECLINE"
    expect(page.locator("#log li").filter(has_text="Your randomness is committed")).to_have_count(1)
    expect(page.locator("#message")).to_have_text(offer)
    expect(page.locator("#message")).to_have_attribute("data-tone", "turn")
    tp.click("#act-accept")  # answered: the next words are the display's again
    expect(page.locator("#message")).not_to_have_text(offer)


def test_an_expired_token_is_said_on_the_message_display(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    page = open_page()
    expired = make_token(SECRET, "det-old", "Old", ttl=60, now=time.time() - 3600)
    page.goto(f"{server.http}/?token={expired}")
    expect(page.locator("#banner")).to_contain_text("token_expired")
    expect(page.locator("#message")).to_have_text("Your sign-in is no longer valid: not connected")


@pytest.mark.parametrize("viewport", [(390, 844), (844, 390)])
def test_a_long_area_name_and_the_plaque_fit_a_phone(
    server: ServerProcess, open_page: Callable[..., Page], viewport: tuple[int, int]
) -> None:
    page = open_page(viewport=viewport)
    page.goto(f"{server.http}/?guest=1&lang=de&table=det-de")
    page.locator("#table").wait_for(state="visible")
    name = page.locator(".area[data-area='tie'] .area-name")
    expect(name).to_have_text("Unentschieden")
    lines = page.evaluate(
        """() => { const el = document.querySelector(".area[data-area='tie'] .area-name");
          const r = document.createRange(); r.selectNodeContents(el);
          const area = el.closest('.area').getBoundingClientRect(); const box = r.getBoundingClientRect();
          return { rects: r.getClientRects().length, inside: box.left >= area.left && box.right <= area.right }; }"""
    )
    assert lines == {"rects": 1, "inside": True}, lines  # one line, in its area
    transfer_in(server, f"det-yu{viewport[0]}", 100_000, "JPY")
    token = make_token(SECRET, f"det-yu{viewport[0]}", "Yu", ttl=3600, currency="JPY")
    page.goto(f"{server.http}/?token={token}&table=det-yen")
    plaque = page.locator("#plaque")
    expect(plaque).to_have_text("Salon yen · ¥100\u2013¥100,000 · Tie ≤ ¥15,000")
    cut = plaque.evaluate(
        "(el) => el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight"
    )
    assert not cut, "the plaque is cut"
