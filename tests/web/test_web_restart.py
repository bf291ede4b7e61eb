"""The page survives a server restart: it says plainly that the connection is lost,
refuses to pretend a command was sent, reconnects by itself, resumes (the restarted
server has lost its in-memory events, so it sends a fresh snapshot) and the players are
in the same seats with the same chips on the table; then the coup is played out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from web_helpers import RELAXED, ServerProcess, TablePage, holder_ready, money, ms, server_balance

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each


def test_the_page_survives_a_server_restart(
    make_server: Callable[[list[dict[str, Any]]], ServerProcess], open_page: Callable[..., Page]
) -> None:
    server = make_server([{"id": "web-r", "name": "Restart", "tier": "1-100", "timers": RELAXED}])
    eve = TablePage(open_page(), "eve").open(server, "eve", "Eve", table="web-r")
    holder_ready(eve, 1)
    frank = TablePage(open_page(viewport=(800, 900)), "frank").open(
        server, "frank", "Frank", table="web-r"
    )
    frank.sit(3)
    eve.chip(1)
    eve.bet("banker")  # 5.00 placed, betting open
    expect(eve.page.locator("#bet")).to_have_text("5.00")

    server.stop()
    for tp in (eve, frank):
        banner = tp.page.locator("#banner")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("Connection lost — reconnecting")
        expect(tp.page.locator("#conn")).to_have_text("reconnecting…")
        expect(tp.page.locator("#log")).to_contain_text("Connection lost: reconnecting…")
        # Nothing to press while disconnected; what is typed anyway is not sent.
        expect(tp.page.locator("#act-done")).to_be_disabled()
        expect(tp.page.locator("#layout .area[data-area='player']")).to_be_disabled()
    frank.page.locator("#chat-input").fill("anyone there?")
    frank.page.locator("#chat-input").press("Enter")
    expect(frank.page.locator("#message")).to_have_text("Not connected: chat was not sent")
    expect(frank.page.locator("#message")).to_have_attribute("data-code", "disconnected")

    server.start()  # the same port and database
    for tp, seat in ((eve, 1), (frank, 3)):
        expect(tp.page.locator("#banner")).to_be_hidden(timeout=ms(20))
        expect(tp.page.locator("#conn")).to_have_text("connected")
        expect(tp.page.locator("#log")).to_contain_text("Reconnected")
        expect(tp.page.locator(f"#seats .seat.me[data-seat='{seat}']")).to_be_visible()
        expect(tp.page.locator("#seats .seat.away")).to_have_count(0)
    expect(eve.page.locator("#seats .seat[data-seat='1'] .shoe-mark")).to_be_visible()
    expect(eve.page.locator("#bet")).to_have_text("5.00")
    expect(frank.page.locator("#layout .area[data-area='banker'] .balloon")).to_have_text("5.00")
    assert frank.state("s.seats.get('eve').bets") == {"banker": 500}

    # Play the coup out: Eve turns the Banker hand (the croupier the Player hand: no
    # Player bet), and both balances agree with the server.
    eve.page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(10))
    round_id = eve.round_id()
    eve.click("#act-done")
    frank.click("#act-done")
    eve.toss_until_settled(round_id)
    expect(eve.page.locator("#result")).to_be_visible()
    for tp, player in ((eve, "eve"), (frank, "frank")):
        expect(tp.page.locator("#balance")).to_have_text(
            money(server_balance(server, player)["available"])
        )
