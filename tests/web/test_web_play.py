"""The web table in a real browser: two players in Chromium and one terminal bot
(``chemmy bot``) play whole coups at one table, by clicking, in two parts that run side
by side (each on a server of its own):

- :func:`test_two_browsers_take_the_shoe_cut_chat_and_squeeze_a_coup`: Alice (a wide
  screen) chooses the table in the lobby, sits first, takes the shoe and cuts it with
  the slider; Bob (a phone) sits next, sets the slowest squeeze and reads Alice's chat.
  Alice bets Banker, Bob Player, so Bob turns the Player hand (the top Player bettor)
  and Alice the Banker hand (the shoe holder): both squeeze (PEEK and SIDE, card by
  card, each watching the other's progress live). Screenshots: the lobby, a squeeze
  (the turner's phone, and the watcher's page mid-peel) and a settled coup (its
  banner); with ``CHEMMY_DOCS_SCREENSHOTS=1`` they are the README's too
  (docs/img/web-*.jpg; a run must not dirty the work tree otherwise).
- :func:`test_coups_go_on_until_the_shoe_passes_and_a_bot_plays_beside_them`: the same
  two at the table and the bot third, betting Banker; they TOSS, coup after coup, until
  Player has won (the shoe passes to the next seat) and the bot has played its rounds.

After every coup each page's balance is checked against the server's; at the end of the
second part, the bot's report against the server's records and each page's History
against the player's rounds and balance.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from web_helpers import (
    RELAXED,
    ROOT,
    Inspector,
    ServerProcess,
    TablePage,
    money,
    ms,
    scaled,
    server_balance,
    server_config,
    shot,
    shot_still,
)

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

DASH = "\u2013"  # the page writes ranges with an en dash
# The voices: what the page has the browser's speech synthesis say, recorded.
VOICE_SPY = """
window.__said = [];
if (window.speechSynthesis) speechSynthesis.speak = (u) => window.__said.push(u.text);
"""
TABLES = [
    {"id": "web", "name": "Web salon", "tier": "1-100", "timers": RELAXED},
    {"id": "web-2", "name": "Web salon 2", "tier": "10-1000", "timers": RELAXED},
    {"id": "web-3", "name": "Web privé", "tier": "100-10000", "timers": RELAXED},
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server of the test's own: the two parts run side by side."""
    s = ServerProcess(tmp_path / "web-play", server_config(TABLES)).start()
    yield s
    s.stop()


def for_docs(artifact: Path, name: str) -> None:
    """The README's picture ``docs/img/name`` from this run's ``artifact``, on demand."""
    if os.environ.get("CHEMMY_DOCS_SCREENSHOTS") == "1":
        shutil.copy(artifact, ROOT / "docs" / "img" / name)


def check_balance(tp: TablePage, server: ServerProcess, player: str) -> int:
    """The page's Balance display is the server's balance available to bet."""
    held = server_balance(server, player)
    expect(tp.page.locator("#balance")).to_have_text(money(held["available"]))
    return held["balance"]


def test_two_browsers_take_the_shoe_cut_chat_and_squeeze_a_coup(
    server: ServerProcess, open_page: Callable[..., Page], artifacts: Path
) -> None:
    # -- the lobby: three limit tiers; choosing one joins it
    alice = TablePage(open_page(viewport=(1280, 900)), "alice")
    alice.page.add_init_script(VOICE_SPY)
    alice.open(server, "alice", "Alice")
    assert "token=" not in alice.page.url, "the token is taken out of the address bar"
    cards = alice.page.locator("#tables .table-card")
    expect(cards).to_have_count(3)
    expect(alice.page.locator("#tables .tier h2")).to_have_text(
        [f"Limits 1.00{DASH}100.00", f"Limits 10.00{DASH}1,000.00", f"Limits 100.00{DASH}10,000.00"]
    )
    expect(alice.page.locator("#who")).to_have_text("Alice")
    shot(alice.page, artifacts / "lobby.jpg")
    for_docs(artifacts / "lobby.jpg", "web-lobby.jpg")
    alice.click("#tables .table-card[data-table='web']")
    expect(alice.page.locator("#plaque")).to_contain_text(
        f"Web salon · 1.00{DASH}100.00 · Tie ≤ 15.00"
    )
    check_balance(alice, server, "alice")

    # -- Alice sits, is offered the shoe, accepts it and cuts with the slider
    alice.sit(1)
    expect(alice.page.locator("#offer-box")).to_be_visible()
    alice.click("#act-accept")
    expect(alice.page.locator("#cut-box")).to_be_visible()
    low, high = (
        int(alice.page.locator("#cut-range").get_attribute(a) or 0) for a in ("min", "max")
    )
    assert (low, high) == (10, 406), "the cut's bounds come from the server (8 decks)"
    alice.page.locator("#cut-range").fill("150")
    expect(alice.page.locator("#cut-value")).to_contain_text("cut at card 150")
    alice.click("#act-cut")
    # The burn card is shown face up, as the server has it.
    burn = alice.page.locator("#burn .card")
    expect(burn).to_be_visible()
    inspector = Inspector(server, "inspector", "Inspector")
    snap = inspector.snapshot("web")
    inspector.close()
    assert snap["shoe"]["cut"] == 150
    expect(burn).to_have_attribute("data-card", snap["shoe"]["burn"]["card"])
    expect(alice.page.locator("#shoe-info")).to_contain_text(
        f"+{snap['shoe']['burn']['count']} face down"
    )

    # -- Bob, on a phone, goes straight to the table and sits in seat 2
    bob = TablePage(open_page(viewport=(390, 844), is_mobile=True, has_touch=True), "bob")
    bob.open(server, "bob", "Bob", table="web")
    bob.sit(2)
    check_balance(bob, server, "bob")
    # Game speed 1 (the slowest squeeze), saved in the browser.
    bob.click("#btn-options")
    bob.page.locator("#options-form input[name='speed']").fill("1")
    bob.click("#dlg-options [data-close]")
    assert json.loads(bob.page.evaluate("localStorage.getItem('chemmy.options')"))["speed"] == 1
    # Chat at the table.
    alice.page.locator("#chat-input").fill("good luck")
    alice.page.locator("#chat-input").press("Enter")
    expect(bob.page.locator("#chat-log li").last).to_have_text("Alice: good luck")
    expect(alice.page.locator("#chat-input")).to_have_value("")

    # -- coups until both have squeezed their hand (the first coup: both hands)
    squeezes = {"bob": "peek", "alice": "side"}
    players = {"alice": alice, "bob": bob}
    play_coups(
        server,
        players,
        squeezes,
        artifacts,
        done=lambda: not squeezes,
        extras=True,
        player_win=False,
    )


def test_coups_go_on_until_the_shoe_passes_and_a_bot_plays_beside_them(
    server: ServerProcess, open_page: Callable[..., Page], artifacts: Path
) -> None:
    # -- Alice sits, takes the shoe and cuts; Bob, on a phone, sits next
    alice = TablePage(open_page(viewport=(1280, 900)), "alice")
    alice.open(server, "alice", "Alice", table="web")
    start_alice = check_balance(alice, server, "alice")
    alice.sit(1)
    alice.click("#act-accept")
    alice.click("#act-cut")
    expect(alice.page.locator("#burn .card")).to_be_visible()
    bob = TablePage(open_page(viewport=(390, 844), is_mobile=True, has_touch=True), "bob")
    bob.open(server, "bob", "Bob", table="web")
    bob.sit(2)
    start_bob = check_balance(bob, server, "bob")

    # -- the terminal bot takes seat 3 and bets Banker for two coups
    bot = subprocess.Popen(
        [
            sys.executable, "-m", "client_cli", "bot", "--url", server.ws, "--table", "web",
            "--count", "1", "--strategy", "banker", "--rounds", "2", "--squeeze", "0",
            "--seed", "3", "--json", "--timeout", str(scaled(150)),
        ],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        expect(alice.page.locator("#seats .seat[data-seat='3'] .seat-name")).to_have_text("Bot1")
        expect(bob.page.locator("#seats .seat[data-seat='3'] .seat-name")).to_have_text("Bot1")
        players = {"alice": alice, "bob": bob}
        player_won = play_coups(
            server,
            players,
            {},
            artifacts,
            done=lambda: bot.poll() is not None,
            extras=False,
            player_win=True,
        )
        assert player_won, "no Player win in 12 coups"
        report = json.loads(bot.communicate(timeout=scaled(60))[0])
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.communicate()
    # The bot played its two coups, and its balance moved by exactly what the server
    # recorded for it.
    assert report["ok"], report
    (b,) = report["bots"]
    assert b["rounds"] == 2 and b["final_balance"] == b["start_balance"] + b["recorded_net"], b

    # Each page's History shows the player's rounds, and they add up to the balance.
    for name, tp, start in (("alice", alice, start_alice), ("bob", bob, start_bob)):
        tp.click("#btn-history")
        rows = tp.page.locator("#history-body tr")
        expect(rows).not_to_have_count(0)
        reader = Inspector(server, name)
        history = reader.request("history", limit=100)["rounds"]
        reader.close()
        expect(rows).to_have_count(len(history))
        net = sum(p["returned"] - p["stake"] for r in history for p in r["bets"])
        signed = ("+" if net > 0 else "") + money(net)
        rounds = f"{len(history)} round" + ("" if len(history) == 1 else "s")
        expect(tp.page.locator("#history-status")).to_contain_text(f"{rounds} · net {signed}")
        assert server_balance(server, name)["balance"] == start + net
        tp.click("#dlg-history [data-close]")


def play_coups(
    server: ServerProcess,
    players: dict[str, TablePage],
    squeezes: dict[str, str],
    artifacts: Path,
    *,
    done: Callable[[], bool],
    extras: bool,
    player_win: bool,
) -> bool:
    """Coups, 12 at most, until ``done()`` (and, with ``player_win``, Player has won);
    with ``extras``, the first coup's (chips taken back, screenshots, the roads, the
    voice). After each coup every page's balance is the server's; after Player's first
    win the shoe passes. Whether Player won."""
    player_won = False
    coups = 0
    while coups < 12 and not (done() and (player_won or not player_win)):
        coups += 1
        outcome = play_coup(server, players, squeezes, artifacts, first=extras and coups == 1)
        for name, tp in players.items():
            check_balance(tp, server, name)
        if outcome["outcome"] == "player" and not player_won:
            player_won = True
            shoe_passes(players, outcome)
    return player_won


def play_coup(
    server: ServerProcess,
    players: dict[str, TablePage],
    squeezes: dict[str, str],
    artifacts: Path,
    *,
    first: bool,
) -> dict[str, Any]:
    """One coup by clicking: bets, DONE, the cards turned (squeezed once each), then
    the settlement. Returns the result the pages show."""
    alice, bob = players["alice"], players["bob"]
    for tp in players.values():
        accept_if_offered(players)
        tp.page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(20))
    round_id = alice.state("`${s.table}-${s.shoe.no}-${s.coupNo}`")
    holder_before = alice.state("s.holder")
    expect(alice.page.locator("#countdown")).to_have_text(re.compile(r"^\d+s$"))
    alice.chip(0)
    bob.chip(1)
    if first:  # a chip too many each, taken back: Ctrl-click, and a long press on the phone
        alice.bet("banker", times=2)
        alice.take_back("banker", "ctrl")
        bob.bet("player", times=3)
        bob.take_back("player", "long")
    else:
        alice.bet("banker")
        bob.bet("player", times=2)
    # 1.00 on Banker; 10.00 on Player: Bob turns the Player cards
    expect(alice.page.locator("#bet")).to_have_text("1.00")
    expect(bob.page.locator("#bet")).to_have_text("10.00")
    expect(alice.page.locator("#layout .area[data-area='player'] .balloon")).to_have_text("10.00")
    alice.click("#act-done")
    bob.click("#act-done")

    deadline = time.monotonic() + scaled(60)
    while alice.state(f"s.lastCoup?.roundId !== {round_id!r}"):
        assert time.monotonic() < deadline, f"coup {round_id} not settled"
        acted = False
        for name, tp in players.items():
            if not tp.enabled("#sq-toss"):
                continue
            acted = True
            style = squeezes.pop(name, None)
            if style is None:
                tp.toss()
            elif name == "bob":
                bob.squeeze(style, on_card=lambda index: watch_squeeze(players, index, artifacts))
            else:
                tp.squeeze(style)
        if not acted:
            alice.page.wait_for_timeout(50)
    for tp in players.values():
        tp.page.wait_for_function(
            f"() => chemmyPage.state.lastCoup?.roundId === {round_id!r}", timeout=ms(10)
        )
        expect(tp.page.locator("#result")).to_be_visible()
        expect(tp.page.locator("#bet")).to_have_text("0.00")
    result = dict(alice.state("s.lastCoup.result"))
    assert result["round_id"] == round_id
    result["holder_before"] = holder_before
    if first:
        shot_still(alice.page, artifacts / "settled.jpg")  # its banner still large
        shot_still(bob.page, artifacts / "settled-phone.jpg")
        for_docs(artifacts / "settled.jpg", "web-settled.jpg")
        check_roads(server, alice)
        # The voice announced the result.
        said = {"banker": "Banker wins", "player": "Player wins", "tie": "Tie"}[result["outcome"]]
        alice.page.wait_for_function(f"() => window.__said.includes({said!r})", timeout=ms(5))
    return result


def check_roads(server: ServerProcess, tp: TablePage) -> None:
    """The roads and the exact odds, as the server computes them (the ``roads`` command)."""
    inspector = Inspector(server, "roads-reader")
    reply = inspector.request("roads", table="web")
    inspector.close()
    stats = reply["roads"]["stats"]
    expect(tp.page.locator("#road-stats")).to_contain_text(
        f"Coups {stats['coups']} · B {stats['banker']}"
    )
    expect(tp.page.locator("#road-bead .bead")).to_have_count(len(reply["roads"]["bead_plate"]))
    expect(tp.page.locator("#road-big .ring")).to_have_count(
        len(reply["roads"]["big_road"]["cells"])
    )
    odds = reply["odds"]
    expect(tp.page.locator("#odds")).to_contain_text(f"from the {odds['cards']} cards")
    expect(tp.page.locator("#odds tr", has_text="Banker").first).to_contain_text(
        f"{odds['banker'] * 100:.3f}%"
    )


def watch_squeeze(players: dict[str, TablePage], index: int, artifacts: Path) -> None:
    """While Bob opens a Player card, Alice watches it bend live."""
    if index != 1:
        return
    alice, bob = players["alice"], players["bob"]
    mine = bob.page.locator("#cards-player .card[data-index='1'][data-state='squeeze']")
    expect(mine).to_be_visible()
    # Bob sees the face as the back peels off; Alice sees the back bend, not the face.
    alice_card = alice.page.locator("#cards-player .card[data-index='1'][data-state='squeeze']")
    expect(alice_card).to_be_visible()
    assert alice_card.locator(".face.unseen").count() == 1, "the others see a face turned away"
    assert alice_card.locator(".pips, .corner").count() == 0, "the others do not see the card"
    assert mine.locator(".face .pips").count() == 1, "the turner sees it"
    bob.page.wait_for_function(
        "() => Number(document.querySelector(\"#cards-player .card[data-index='1']\")?.dataset.progress ?? 0) >= 40"
    )
    alice.page.wait_for_function(
        "() => Number(document.querySelector(\"#cards-player .card[data-index='1']\")?.dataset.progress ?? 0) >= 25"
    )
    bob.page.locator("#hands").scroll_into_view_if_needed()
    shot(bob.page, artifacts / "squeeze.jpg")
    shot(alice.page, artifacts / "squeeze-watching.jpg")
    for_docs(artifacts / "squeeze.jpg", "web-squeeze-phone.jpg")
    for_docs(artifacts / "squeeze-watching.jpg", "web-squeeze-watching.jpg")


def accept_if_offered(players: dict[str, TablePage]) -> None:
    for tp in players.values():
        if tp.enabled("#act-accept"):
            tp.click("#act-accept")
            tp.page.wait_for_function("() => !chemmyPage.state.actions.accept_shoe", timeout=ms(10))


def shoe_passes(players: dict[str, TablePage], result: dict[str, Any]) -> None:
    """After a Player win the shoe leaves its holder for the next occupied seat, seat
    numbers increasing, wrapping round (GAME_RULES §5)."""
    alice = players["alice"]
    seats = sorted(alice.state("s.seatsInOrder().map((p) => [p.seat, p.player])"))
    holder = result["holder_before"]
    if holder is None:
        return  # the house held it: it offers the shoe again, to the first seat
    order = [p for _, p in seats]
    expected = order[(order.index(holder) + 1) % len(order)]
    seat_of = {p: seat for seat, p in seats}
    expect(
        alice.page.locator(f"#seats .seat[data-seat='{seat_of[holder]}'] .shoe-mark")
    ).to_have_count(0)
    alice.page.wait_for_function(
        f"() => chemmyPage.state.offer?.player === {expected!r} || chemmyPage.state.holder === {expected!r}",
        timeout=ms(10),
    )
    if expected in players:
        tp = players[expected]
        expect(tp.page.locator("#offer-box")).to_be_visible()
        tp.click("#act-accept")
    expect(
        alice.page.locator(f"#seats .seat[data-seat='{seat_of[expected]}'] .shoe-mark")
    ).to_be_visible()
    expect(alice.page.locator("#seats .shoe-mark")).to_have_count(1)
