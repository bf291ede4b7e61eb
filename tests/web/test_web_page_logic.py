"""What the page shows follows the server (issue 17), in Chromium.

- Money: after STAND or the Lobby with chips on the layout, the bottom bar's Available
  is the server's at once (no reload); the Cashier names its two figures apart; a
  deposit too large is refused in money, a stale command without a doubled prefix.
- Messages: a refusal does not stay through later good bets; "Your turn" gives way to
  the squeeze; the last result and its winning areas leave the felt with the next
  coup's chips; a spectator reads the result line once.
- The table's own areas: the odds panel has a row per area the table has (Super 6 and
  Dragon only where they are), and every area the server paid as won glows, the side
  bets too; the odds count the burn card from the cut on.
- Embedding (docs/embedding.md §3): the iframe's ``?table=`` with a token-only
  ``chemmy:connect``; a frame waiting for its host says so and what the host must send;
  an expired token says who must sign the player in again, and tells the host page.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect
from web_helpers import (
    RELAXED,
    SECRET,
    Inspector,
    ServerProcess,
    TablePage,
    holder_ready,
    money,
    ms,
    server_balance,
    server_config,
    token,
)

from server.engine.payouts import Area
from server.process.auth import make_token

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

#: How long a settled coup stays on the felt under others' chips (app.js RESULT_MIN_MS).
RESULT_MIN_MS = 5000
TABLES = [
    {"id": "logic-money", "name": "Money", "tier": "1-100", "timers": RELAXED},
    {
        "id": "logic-side",
        "name": "Side bets",
        "tier": "1-100",
        "commission": False,
        "super6": True,
        "dragon": True,
        "timers": RELAXED,
    },
    {"id": "logic-embed", "name": "Framed", "tier": "1-100", "timers": RELAXED},
]
ALL_AREAS = [a.value for a in Area]  # every area, in the order a table lists them
NAMES = {
    "player": "Player",
    "banker": "Banker",
    "tie": "Tie",
    "player_pair": "Player Pair",
    "banker_pair": "Banker Pair",
    "super6": "Super 6",
    "dragon_player": "Dragon Player",
    "dragon_banker": "Dragon Banker",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-logic"), server_config(TABLES)).start()
    yield s
    s.stop()


def odds_rows(tp: TablePage) -> list[str]:
    return [t.strip() for t in tp.page.locator("#odds tbody th").all_inner_texts()]


def test_money_refusals_and_words(server: ServerProcess, open_page: Callable[..., Page]) -> None:
    tp = TablePage(open_page(), "mona").open(server, "mona", "Mona", table="logic-money")
    page = tp.page
    message = page.locator("#message")
    holder_ready(tp, 1)
    start = server_balance(server, "mona")

    # The odds follow this table's areas: no Super 6, no Dragon here.
    expect(page.locator("#odds tbody th").first).to_be_visible()
    assert odds_rows(tp) == [
        *(NAMES[a] for a in tp.state("s.areas")),
        "Natural",
    ]
    assert not {"Super 6", "Banker 6", "Dragon Player", "Dragon Banker"} & set(odds_rows(tp))

    # A refusal, then a good bet: the refusal does not stay on the display.
    tp.chip(3)  # 25.00 on Tie: over its maximum (15.00)
    tp.click("#layout .area[data-area='tie']")
    expect(message).to_have_text("Refused: Over the maximum on Tie (15.00)")
    tp.chip(3)  # 25.00 on Player, four times
    tp.bet("player", times=4)
    expect(message).not_to_have_attribute("data-tone", "refused")
    expect(message).to_have_text("Your bets: Player 100.00")
    expect(page.locator("#balance")).to_have_text(money(start["available"] - 10000))

    # A command the table no longer takes (what a late click sends): one "Too late".
    page.evaluate("chemmyPage.cmd('cut', {position: 100})")
    expect(message).to_have_attribute("data-code", "wrong_phase")
    expect(message).to_have_text("Too late — the table has moved on (Place your bets)")

    # STAND with 100.00 on the layout: the chips come back, and the bottom bar says so
    # at once (the stood event carries no money: the page asks the server).
    tp.click("#act-stand")
    expect(page.locator("#act-sit")).to_be_visible()
    assert server_balance(server, "mona")["available"] == start["available"]
    expect(page.locator("#balance")).to_have_text(money(start["available"]), timeout=ms(3))
    expect(page.locator("#bottombar .display").first).to_contain_text("Available")

    # The Cashier names its two figures apart, each the server's.
    tp.click("#btn-cashier")
    held = server_balance(server, "mona")
    expect(page.locator("#cashier-available")).to_have_text(money(held["available"]))
    expect(page.locator("#cashier-balance")).to_have_text(money(held["balance"]))
    expect(page.locator("#dlg-cashier")).to_contain_text("Available")
    expect(page.locator("#dlg-cashier")).to_contain_text("Balance with chips placed")
    # A deposit over the maximum is refused in money, not in minor units.
    page.locator("#cashier-amount").fill("20000")
    tp.click("#cashier-deposit")
    expect(page.locator("#cashier-result")).to_have_text("Refused: a deposit is 0.01 to 10,000.00")
    tp.click("#dlg-cashier [data-close]")

    # Sit again, bet, and go to the Lobby: the lobby's figure is the server's too.
    tp.sit(1)
    tp.click("#act-accept")  # the shoe is offered again (it is cut already)
    page.wait_for_function("() => Boolean(chemmyPage.state.actions.bet)", timeout=ms(10))
    tp.chip(2)
    tp.bet("banker")
    expect(page.locator("#balance")).to_have_text(money(start["available"] - 1000))
    tp.click("#btn-lobby")
    expect(page.locator("#lobby")).to_be_visible()
    assert server_balance(server, "mona")["available"] == start["available"]
    expect(page.locator("#balance")).to_have_text(money(start["available"]), timeout=ms(3))


def won_areas(tp: TablePage) -> set[str]:
    return {
        str(el.get_attribute("data-area"))
        for el in tp.page.locator("#layout .area[data-won='1']").all()
    }


def test_the_tables_own_areas_the_burn_and_stale_messages(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    tp = TablePage(open_page(), "sid").open(server, "sid", "Sid", table="logic-side")
    page = tp.page
    message = page.locator("#message")
    # The watcher's clock is Playwright's (time flows as it does): the test jumps to the
    # end of the settled coup's minimum time on the felt (RESULT_MIN_MS) where it waited.
    watching = open_page()
    watching.clock.install()
    watcher = TablePage(watching, "wat").open(server, "wat", "Wat", table="logic-side")
    inspector = Inspector(server, "sid")  # the same player: their own history
    holder_ready(tp, 1)
    assert tp.state("s.areas") == ALL_AREAS

    # After the cut the odds count the burn card, as the server's roads reply does.
    snap = inspector.snapshot("logic-side")
    shoe = snap["shoe"]
    odds = inspector.request("roads", table="logic-side")["odds"]
    assert shoe["burn"] is not None and odds["cards"] == shoe["cards_left"] + shoe["burn"]["count"]
    expect(page.locator("#odds")).to_contain_text(
        f"from the {odds['cards']} cards not yet seen: {shoe['cards_left']} in the shoe"
        f" and {shoe['burn']['count']} burned face down"
    )
    expect(page.locator("#shoe-info")).to_contain_text(f"{shoe['cards_left']} cards")
    # A row per area of this table, Super 6 and both Dragons included.
    assert odds_rows(tp) == [*(NAMES[a] for a in ALL_AREAS), "Natural"]
    s6 = page.locator("#odds tbody tr", has_text="Super 6")
    expect(s6).to_contain_text(f"{odds['banker_six'] * 100:.3f}%")
    expect(s6).to_contain_text(f"{odds['edges']['super6'] * 100:.3f}%")

    # Coups with 1.00 on every area, until a Dragon has won: after each, the areas that
    # glow are exactly those the server paid as won (the player's own history).
    tp.chip(0)
    dragon_won = False
    for n in range(12):
        # After a Player win the shoe is offered again (to Sid, the only one seated).
        page.wait_for_function(
            "() => { const a = chemmyPage.state.actions; return Boolean(a.done || a.accept_shoe); }",
            timeout=ms(10),
        )
        if tp.enabled("#act-accept"):
            tp.click("#act-accept")
        page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(10))
        if n == 0:
            for area in ALL_AREAS:
                tp.bet(area)
        else:
            # The last coup's result and glow are on until the next coup's chips.
            expect(page.locator("#result")).to_be_visible()
            assert won_areas(tp)
            tp.click("#act-same")
            expect(page.locator("#bet")).to_have_text("8.00")
            expect(page.locator("#result")).to_be_hidden()
            expect(page.locator("#layout .area[data-won='1']")).to_have_count(0)
            expect(page.locator("#hands .card")).to_have_count(0)
            if n == 1:
                # The others' chips take it off the watcher's felt too, RESULT_MIN_MS
                # after the settlement, while the betting round goes on.
                watching.clock.fast_forward(RESULT_MIN_MS + 50)
                expect(watcher.page.locator("#result")).to_be_hidden(timeout=ms(8))
                expect(watcher.page.locator("#layout .area[data-won='1']")).to_have_count(0)
                assert watcher.state("s.phase") == "betting"
        round_id = tp.round_id()
        tp.click("#act-done")
        if n == 0:
            # Sid turns the Player cards; squeezing, "Your turn" gives way.
            page.wait_for_function("() => Boolean(chemmyPage.state.actions.squeeze)")
            expect(message).to_contain_text("Your turn: turn the Player cards")
            tp.click("#sq-peek")
            expect(message).to_have_text(
                "You squeeze the Player cards (PEEK): open them with the CARD buttons, or TOSS"
            )
        tp.toss_until_settled(round_id)
        (record,) = inspector.request("history", limit=1)["rounds"]
        assert record["round_id"] == round_id
        paid = {b["area"] for b in record["bets"] if b["outcome"] == "win"}
        assert len(record["bets"]) == len(ALL_AREAS)
        expect(page.locator("#result")).to_be_visible()
        assert won_areas(tp) == paid, (record["player"], record["banker"])
        # The spectator, with no chips anywhere, sees the same areas lit: the ones the
        # server's result says won (result.won), whoever bet there.
        watcher.page.wait_for_function(
            f"() => chemmyPage.state.lastCoup?.roundId === {round_id!r}", timeout=ms(10)
        )
        said = set(watcher.state("s.lastCoup.result.won"))
        assert said == paid
        expect(watcher.page.locator("#layout .area[data-won='1']")).to_have_count(len(said))
        assert won_areas(watcher) == said
        if n == 0:
            # The spectator reads the result line once in the table log.
            watcher.page.wait_for_function(
                f"() => chemmyPage.state.lastCoup?.roundId === {round_id!r}", timeout=ms(10)
            )
            line = watcher.text("#result .sr-only")  # the banner's sentence
            assert line.startswith(("Player wins", "Banker wins", "Tie"))
            texts = [t.strip() for t in watcher.page.locator("#log li").all_inner_texts()]
            assert texts.count(line) == 1, texts[-6:]
        dragon_won = dragon_won or bool(paid & {"dragon_player", "dragon_banker"})
        if dragon_won and n >= 1:
            break
    assert dragon_won, "no Dragon won in 12 coups"
    inspector.close()


# ---------------------------------------------------------------------------- embedding


class Host:
    """An operator's site at ``localhost`` (another origin than the server's
    ``127.0.0.1``): one page framing the table at ``chemmy_origin + query`` (``ORIGIN``
    in the query is this site's origin), sending ``connect`` when the table is ready."""

    def __init__(self, chemmy_origin: str, query: str, connect: dict[str, object]) -> None:
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.origin = f"http://localhost:{self.httpd.server_address[1]}"
        frame_src = chemmy_origin + "/" + query.replace("ORIGIN", self.origin)
        self.body = f"""<!doctype html>
<html><head><title>Operator</title></head><body>
<script>
  window.received = [];
  addEventListener("message", (ev) => {{
    if (ev.origin !== {json.dumps(chemmy_origin)}) return;
    received.push(ev.data);
    if (ev.data.type === "chemmy:ready") ev.source.postMessage({json.dumps(connect)}, ev.origin);
  }});
  window.toTable = (m) => document.getElementById("chemmy").contentWindow.postMessage(m, {json.dumps(chemmy_origin)});
</script>
<iframe id="chemmy" src="{frame_src}" width="1100" height="800"></iframe>
</body></html>""".encode()
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = site.body
                path = self.path.split("?")[0]
                ok = path == "/"
                self.send_response(200 if ok else 204 if path == "/favicon.ico" else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body) if ok else 0))
                self.end_headers()
                if ok:
                    self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def host() -> Iterator[Callable[..., Host]]:
    made: list[Host] = []

    def _make(chemmy_origin: str, query: str, connect: dict[str, object]) -> Host:
        made.append(Host(chemmy_origin, query, connect))
        return made[-1]

    yield _make
    for h in made:
        h.close()


def test_an_iframe_set_up_as_the_docs_say_opens_its_table(
    server: ServerProcess, open_page: Callable[..., Page], host: Callable[..., Host]
) -> None:
    # The src names the table; the message has the token only (docs/embedding.md §3).
    site = host(
        server.http,
        "?parent=ORIGIN&table=logic-embed",
        {"type": "chemmy:connect", "token": token("ivy", "Ivy")},
    )
    page = open_page()
    page.goto(site.origin + "/")
    table = page.frame_locator("#chemmy")
    expect(table.locator("#who")).to_have_text("Ivy")
    expect(table.locator("#table")).to_be_visible()
    expect(table.locator("#plaque")).to_contain_text("Framed")
    expect(table.locator("#message")).not_to_have_text("Waiting for the host page…")
    expect(table.locator("#banner")).to_be_hidden()

    # Without a table anywhere, the lobby; the display says the page is connected.
    lobby = host(
        server.http, "?parent=ORIGIN", {"type": "chemmy:connect", "token": token("ike", "Ike")}
    )
    page = open_page()
    page.goto(lobby.origin + "/")
    table = page.frame_locator("#chemmy")
    expect(table.locator("#lobby")).to_be_visible()
    expect(table.locator("#message")).to_have_text("Connected as Ike")


def test_a_frame_waiting_for_its_host_says_what_it_waits_for(
    server: ServerProcess, open_page: Callable[..., Page], host: Callable[..., Host]
) -> None:
    # ?embed=1 alone, not in a frame: nobody will send the token.
    page = open_page(server.http + "/?embed=1")
    expect(page.locator("#message")).to_have_text("Waiting for the host page…")
    expect(page.locator("#plaque")).to_have_text("Waiting for the host page")
    expect(page.locator("#conn")).to_have_text("waiting for the host page")
    banner = page.locator("#banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text('{type: "chemmy:connect", token} by postMessage')
    expect(banner).to_contain_text("not in a frame")
    page.wait_for_timeout(ms(0.5))
    expect(page.locator("#plaque")).not_to_contain_text("Connecting")

    # A frame whose ?parent= is another site than its host: the host's message is
    # ignored, and the frame says which origin it waits for and which one it ignored.
    other = "https://casino.example"
    site = host(
        server.http, f"?parent={other}", {"type": "chemmy:connect", "token": token("jo", "Jo")}
    )
    framed = open_page()
    framed.goto(site.origin + "/")
    table = framed.frame_locator("#chemmy")
    framed.wait_for_function("() => received.some((m) => m.type === 'chemmy:ready')")
    expect(table.locator("#banner")).to_contain_text(f"by postMessage from {other}")
    expect(table.locator("#banner")).to_contain_text(f"(a message from {site.origin} was ignored)")
    expect(table.locator("#plaque")).to_have_text("Waiting for the host page")
    expect(table.locator("#who")).to_have_text("")


def expired(player: str, name: str) -> str:
    return make_token(SECRET, player, name, ttl=60, now=time.time() - 3600)


def test_an_expired_token_says_who_signs_the_player_in_again(
    server: ServerProcess, open_page: Callable[..., Page], host: Callable[..., Host]
) -> None:
    # In the address: a reload is refused the same way, so the page does not offer it.
    page = open_page(server.http + f"/?token={expired('kim', 'Kim')}")
    banner = page.locator("#banner")
    expect(banner).to_contain_text("Disconnected: token_expired")
    expect(banner).to_contain_text("the casino's site must sign you in again")
    expect(banner).not_to_contain_text("Reload the page to try again")
    expect(page.locator("#plaque")).to_have_text("Not connected")
    page.reload()
    expect(banner).to_contain_text("Disconnected: token_expired")
    expect(banner).to_contain_text("the casino's site must sign you in again")

    # By postMessage: the host page is told (chemmy:status, closed, why), sends a fresh
    # token, and the table connects again at once.
    site = host(
        server.http,
        "?parent=ORIGIN&table=logic-embed",
        {"type": "chemmy:connect", "token": expired("lee", "Lee")},
    )
    framed = open_page()
    framed.goto(site.origin + "/")
    framed.wait_for_function(
        "() => received.some((m) => m.type === 'chemmy:status' && m.state === 'closed'"
        " && (m.reason ?? '').startsWith('token_expired'))",
        timeout=ms(10),
    )
    table = framed.frame_locator("#chemmy")
    expect(table.locator("#banner")).to_contain_text("The host page has been told")
    framed.evaluate(f"toTable({{type: 'chemmy:token', token: {json.dumps(token('lee', 'Lee'))}}})")
    expect(table.locator("#who")).to_have_text("Lee")
    expect(table.locator("#table")).to_be_visible()
    expect(table.locator("#banner")).to_be_hidden()
