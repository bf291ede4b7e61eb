"""PASS THE SHOE in a real browser (issue 17, point 1; ../shared/GAME_RULES.md §5): a
voluntary pass goes to the next occupied seat other than the holder's, and with nobody
else seated the house holds the shoe: the page never offers it back to the one who
passed, and says that the house holds it, as the server does."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

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

TABLES = [{"id": "pass", "name": "Pass salon", "tier": "1-100", "timers": RELAXED}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-pass"), server_config(TABLES)).start()
    yield s
    s.stop()


def play_until_pass_is_offered(tp: TablePage, seconds: float = 90) -> None:
    """Bet Banker, DONE and TOSS coup after coup (taking the shoe back whenever a Player
    win offers it to the lone player again) until PASS THE SHOE is offered: the holder has
    dealt a coup and kept the shoe."""
    deadline = time.monotonic() + scaled(seconds)
    while not tp.enabled("#act-pass"):
        assert time.monotonic() < deadline, f"PASS THE SHOE never offered: {tp.text('#message')!r}"
        if tp.enabled("#act-accept"):
            tp.click("#act-accept")
        elif tp.enabled("#act-cut"):
            tp.click("#act-cut")
        elif tp.enabled("#act-done"):
            if tp.state("Object.keys(s.myBets).length === 0"):
                tp.chip(0)
                tp.bet("banker")
            round_id = tp.round_id()
            tp.click("#act-done")
            tp.toss_until_settled(round_id)
        else:
            tp.page.wait_for_timeout(50)
        tp.settle()


def test_pass_with_nobody_else_seated_goes_to_the_house(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    alice = TablePage(open_page(), "alice")
    alice.open(server, "alice", "Alice", table="pass")
    holder_ready(alice, 1)
    play_until_pass_is_offered(alice)
    assert alice.state("s.holder") == "alice"

    alice.click("#act-pass")
    alice.settle()
    expect(alice.page.locator("#you-seat")).to_contain_text("the house holds the shoe")
    expect(alice.page.locator("#log")).to_contain_text("The house holds the shoe")
    # Never offered back: no offer box, no ACCEPT, and betting goes on with the house.
    alice.page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(10))
    expect(alice.page.locator("#offer-box")).to_be_hidden()
    expect(alice.page.locator("#act-pass")).to_be_hidden()
    snap = Inspector(server, "inspector", "Inspector").snapshot("pass")
    assert snap["house_holds"] is True
    assert snap["holder"] is None and snap["offer"] is None
    assert snap["phase"] == "betting"
