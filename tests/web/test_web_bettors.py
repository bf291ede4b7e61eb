"""Bets without a seat on the web table (GAME_RULES §5, issue 37 §1), in Chromium against
a real server: Bob, a spectator, bets Player more than Alice (seated, holding the shoe),
so he turns the Player cards: he squeezes them as a seated turner would, the coup settles
and his page's money is the server's. Alice's page shows the felt's totals with Bob's
chips in them, but never Bob nor his bets while he is only a bettor. At a seated-only
table the areas stay closed for a spectator, saying why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
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
    shot_still,
)

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds

TABLES = [
    {"id": "bt", "name": "Bettors", "tier": "1-100", "timers": RELAXED},
    {"id": "so", "name": "Seated only", "tier": "1-100", "bettors": 0, "timers": RELAXED},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-bettors"), server_config(TABLES)).start()
    yield s
    s.stop()


def area(tp: TablePage, name: str) -> str:
    return f"#layout .area[data-area='{name}']"


def play_out(pages: list[TablePage], round_id: str, seconds: float = 40) -> None:
    """TOSS whatever each page has to turn until coup ``round_id`` is settled on all."""
    deadline = time.monotonic() + scaled(seconds)
    while any(tp.state(f"s.lastCoup?.roundId !== {round_id!r}") for tp in pages):
        assert time.monotonic() < deadline, f"coup {round_id} not settled"
        for tp in pages:
            if tp.enabled("#sq-toss"):
                tp.toss()
        pages[0].page.wait_for_timeout(50)


def test_a_bettor_without_a_seat_turns_the_player_cards(
    server: ServerProcess, open_page: Callable[..., Page], artifacts: Path
) -> None:
    # -- Alice sits, takes the shoe, cuts; she bets 1.00 on Player
    alice = TablePage(open_page(viewport=(1280, 900)), "alice")
    alice.open(server, "alice", "Alice", table="bt")
    holder_ready(alice, 1)
    alice.bet("player")

    # -- Bob watches from a phone: the areas are open to him, DONE is not there
    bob = TablePage(open_page(viewport=(390, 844), is_mobile=True, has_touch=True), "bob")
    bob.open(server, "bob", "Bob", table="bt")
    expect(bob.page.locator("#you-seat")).to_contain_text("You are watching")
    expect(bob.page.locator("#bettor-note")).to_contain_text("bet without a seat")
    expect(bob.page.locator(area(bob, "player"))).to_be_enabled()
    expect(bob.page.locator(area(bob, "player"))).to_have_attribute("data-total", "100")
    expect(bob.page.locator("#chips")).to_be_visible()
    expect(bob.page.locator("#act-done")).to_be_hidden()
    expect(bob.page.locator("#act-sit")).to_be_visible()

    # He puts four chips on Player, regrets one, and is betting without a seat.
    bob.bet("player", times=4)
    bob.click("#act-regret")
    expect(bob.page.locator(area(bob, "player"))).to_have_attribute("data-mine", "300")
    expect(bob.page.locator("#you-seat")).to_contain_text("You are betting without a seat")
    expect(bob.page.locator(area(bob, "player"))).to_have_attribute("data-total", "400")
    expect(bob.page.locator("#bet")).to_have_text("3.00")
    expect(bob.page.locator("#balance")).to_have_text(
        money(server_balance(server, "bob")["available"])
    )

    # -- Alice sees the felt: Bob's chips in Player's total, one bettor, never Bob
    expect(alice.page.locator(area(alice, "player"))).to_have_attribute("data-total", "400")
    expect(alice.page.locator(area(alice, "player") + " .balloon")).to_have_text("4.00")
    expect(alice.page.locator("#you-seat")).to_contain_text("1 betting without a seat")
    shot(bob.page, artifacts / "bettor-phone-betting.jpg")
    shot(alice.page, artifacts / "bettor-seated-view.jpg")
    seen = alice.page.evaluate(
        "() => document.body.innerText + JSON.stringify([...chemmyPage.state.names]) + "
        "JSON.stringify(chemmyPage.state.stacks()) + chemmyPage.log.map((x) => x.text).join()"
    )
    assert "bob" not in seen.lower(), "a bettor without a seat is named to nobody"

    # -- Alice's DONE closes the betting (a bettor never holds it open): Bob turns Player
    round_id = alice.round_id()
    alice.click("#act-done")
    bob.page.wait_for_function(
        "() => chemmyPage.state.actions.squeeze?.hand === 'player'", timeout=ms(10)
    )
    expect(bob.page.locator("#squeeze-bar")).to_be_visible()
    expect(alice.page.locator("#turner-player")).to_contain_text("Bob")
    bob.squeeze("peek")
    shot(bob.page, artifacts / "bettor-phone-turned.jpg")
    play_out([alice, bob], round_id)

    # -- settled: Bob's pile collected or paid, his money the server's
    outcome = bob.page.locator(area(bob, "player") + " .pile.mine").get_attribute("data-outcome")
    assert outcome in ("win", "lose", "push")
    shot_still(bob.page, artifacts / "bettor-phone-settled.jpg")
    net = bob.state("s.lastNet")
    assert net == {"win": 300, "lose": -300, "push": 0}[outcome]
    bob.page.wait_for_function("() => chemmyPage.inflight === 0")
    expect(bob.page.locator("#balance")).to_have_text(
        money(server_balance(server, "bob")["available"])
    )
    assert server_balance(server, "bob")["available"] == 100000 + net


def test_a_seated_only_table_keeps_its_areas_closed_to_spectators(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    carol = TablePage(open_page(viewport=(1280, 800)), "carol")
    carol.open(server, "carol", "Carol")
    tile = carol.page.locator(".table-tile[data-tile='so']")
    expect(tile.locator(".table-bettors")).to_have_text("seated players only")
    expect(carol.page.locator(".table-tile[data-tile='bt'] .table-bettors")).to_contain_text(
        "betting without a seat"
    )
    tile.locator(".table-card").click()
    carol.page.locator("#table").wait_for(state="visible")
    expect(carol.page.locator("#bettor-note")).to_have_text(
        "Only seated players bet at this table: take a seat to bet."
    )
    expect(carol.page.locator("#chips")).to_be_hidden()
    for el in carol.page.locator("#layout .area").all():
        expect(el).to_be_disabled()
