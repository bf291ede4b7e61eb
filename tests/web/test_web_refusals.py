"""Bad input from the page's side, the croupier acting for a player, and the rest of
the page's controls.

- A refused bet (25.00 on Tie, whose maximum is 15.00) shows the refusal on the
  message display and changes nothing: not the page's chips or balance, not the
  server's.
- A stale command: Dave's connection lags (the test holds the frames the server sends
  him), so his page still shows betting open after the table has moved on; his click
  on Banker reaches the server too late, is refused, and once the frames arrive his
  page shows the coup as it is, with the refusal said plainly and nothing of his bet.
- The croupier's steps on a player's behalf (a cut and a turn that timed out) are
  marked on the cards, said on the message display and listed in the history.
- REGRET, CLEAR, SAME BET, a right click, the cashier, help, the options (kept over a
  reload, as is the seat) and PASS THE SHOE.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, WebSocketRoute, expect
from web_helpers import (
    FAST,
    RELAXED,
    Inspector,
    ServerProcess,
    TablePage,
    holder_ready,
    money,
    ms,
    server_balance,
    server_config,
)

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

TABLES = [
    {"id": "web-bad", "name": "Refusals", "tier": "1-100", "timers": RELAXED},
    # Erin lets every turn run out there: the croupier turns each hand half a second on
    # (the cut keeps FAST's 1.5 s: the test sees her cut box before the croupier cuts).
    {
        "id": "web-fast",
        "name": "Croupier",
        "tier": "1-100",
        "timers": {**FAST, "squeeze": 0.5, "third_card": 0.5},
    },
    {"id": "web-buttons", "name": "Buttons", "tier": "1-100", "timers": RELAXED},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-refusals"), server_config(TABLES)).start()
    yield s
    s.stop()


class Lag:
    """Holds the frames the server sends a page, then lets them through in order."""

    def __init__(self) -> None:
        self.holding = False
        self.held: list[tuple[WebSocketRoute, str | bytes]] = []

    def route(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def down(message: str | bytes) -> None:
            if self.holding:
                self.held.append((ws, message))
            else:
                ws.send(message)

        server.on_message(down)
        ws.on_message(lambda message: server.send(message))

    def release(self) -> None:
        self.holding = False
        held, self.held = self.held, []
        for ws, message in held:
            ws.send(message)


def test_a_refused_bet_and_a_stale_command_change_nothing(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    carol = TablePage(open_page(), "carol").open(server, "carol", "Carol", table="web-bad")
    holder_ready(carol, 1)
    inspector = Inspector(server, "inspector", "Inspector")
    before = server_balance(server, "carol")

    # -- a refused bet: 25.00 on Tie (maximum 15.00)
    carol.chip(3)
    expect(carol.page.locator("#chips .chip[data-index='3']")).to_have_attribute(
        "aria-pressed", "true"
    )
    carol.click("#layout .area[data-area='tie']")
    message = carol.page.locator("#message")
    expect(message).to_have_attribute("data-code", "over_max")
    expect(message).to_have_text("Refused: Over the maximum on Tie (15.00)")
    expect(message).to_have_attribute("data-tone", "refused")
    expect(carol.page.locator("#bet")).to_have_text("0.00")
    expect(carol.page.locator("#balance")).to_have_text(money(before["available"]))
    expect(carol.page.locator("#layout .area[data-area='tie'] .pile")).to_have_count(0)
    assert server_balance(server, "carol") == before
    (seat,) = inspector.snapshot("web-bad")["seats"]
    assert seat["player"] == "carol" and seat["bets"] == {}

    # -- a stale command: Dave's frames lag behind the table
    lag = Lag()
    dave_page = open_page()
    dave_page.route_web_socket(re.compile(r"^ws://"), lag.route)
    dave = TablePage(dave_page, "dave").open(server, "dave", "Dave", table="web-bad")
    dave.sit(2)
    dave_before = server_balance(server, "dave")
    carol.chip(0)
    carol.bet("player")
    carol.click("#act-done")
    dave.page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(10))
    lag.holding = True
    dave.click("#act-done")  # Dave is done too: betting closes at the server...
    round_id = wait_betting_closed(inspector, "web-bad")
    assert "dave" not in inspector.snapshot("web-bad")["coup"]["bets"]
    # ...but Dave's page has not heard: it still shows betting open, and he bets.
    assert dave.state("s.phase") == "betting"
    dave.chip(0)
    dave.click("#layout .area[data-area='banker']")
    expect_held(dave.page, lag, "wrong_phase")
    lag.release()
    expect(dave.page.locator("#message")).to_have_attribute("data-code", "wrong_phase")
    expect(dave.page.locator("#message")).to_contain_text("Too late — the table has moved on")
    dave.page.wait_for_function(
        f"() => chemmyPage.state.coup?.roundId === {round_id!r}", timeout=ms(10)
    )
    expect(dave.page.locator("#bet")).to_have_text("0.00")
    expect(dave.page.locator("#balance")).to_have_text(money(dave_before["available"]))
    assert server_balance(server, "dave") == dave_before
    snap = inspector.snapshot("web-bad")
    assert snap["coup"]["round_id"] == round_id and set(snap["coup"]["bets"]) == {"carol"}
    assert dave.state("Object.keys(s.coup.bets)") == ["carol"]
    # The refusal is in the table log too.
    expect(dave.page.locator("#log li[data-tone='refused']")).to_have_count(1)

    # Carol turns both hands (Player: her bet; Banker: her shoe); the coup settles.
    carol.toss_until_settled(round_id)
    carol.page.wait_for_function(
        f"() => chemmyPage.state.lastCoup?.roundId === {round_id!r}", timeout=ms(10)
    )
    expect(carol.page.locator("#balance")).to_have_text(
        money(server_balance(server, "carol")["available"])
    )
    inspector.close()


def wait_betting_closed(inspector: Inspector, table: str) -> str:
    """The round id once betting has closed (asked at 10 a second: the inspector is a
    client like any other, and a tight loop of joins is rate_limited past its burst)."""
    for _ in range(200):
        coup = inspector.snapshot(table)["coup"]
        if coup is not None:
            return str(coup["round_id"])
        time.sleep(0.1)
    raise AssertionError("betting did not close")


def expect_held(page: Page, lag: Lag, code: str) -> None:
    """The refusal is among the frames held back from the page (waiting on the page
    lets Playwright run the route's callbacks)."""
    for _ in range(200):
        if any(isinstance(m, str) and f'"code":"{code}"' in m for _, m in lag.held):
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"no {code} refusal was sent: {[m for _, m in lag.held]!r}")


def test_the_croupier_acting_for_a_player_is_marked(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    erin = TablePage(open_page(), "erin").open(server, "erin", "Erin", table="web-fast")
    erin.sit(1)
    erin.click("#act-accept")
    expect(erin.page.locator("#cut-box")).to_be_visible()
    # Erin does not cut: the croupier cuts for her when the cut timer runs out.
    expect(erin.page.locator("#log")).to_contain_text(
        "The croupier cut the shoe at", timeout=ms(10)
    )
    expect(erin.page.locator("#log")).to_contain_text("for you (time ran out)")
    erin.page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(10))
    round_id = erin.state("`${s.table}-${s.shoe.no}-${s.coupNo}`")
    erin.chip(0)
    erin.bet("player")
    erin.click("#act-done")
    # Erin turns both hands and does nothing: the croupier turns them for her.
    erin.page.wait_for_function(
        f"() => chemmyPage.state.lastCoup?.roundId === {round_id!r}", timeout=ms(20)
    )
    marked = erin.page.locator("#hands .card[data-croupier='1']")
    expect(marked).not_to_have_count(0)
    expect(marked.first.locator(".croupier-mark")).to_have_text("croupier")
    assert marked.count() == erin.page.locator("#hands .card").count(), (
        "every card was turned for her"
    )
    expect(erin.page.locator("#log li[data-tone='croupier']")).to_contain_text(
        [
            re.compile(r"The croupier cut the shoe"),
            re.compile(r"The croupier turned Player card 1 .* for you: time ran out"),
        ]
    )
    expect(erin.page.locator("#log")).to_contain_text("(finished by the croupier for you)")
    # The history lists what the croupier did on her behalf.
    erin.click("#btn-history")
    row = erin.page.locator(f"#history-body tr[data-round='{round_id}']")
    expect(row).to_contain_text("croupier for you:")
    erin.click("#dlg-history [data-close]")


def test_betting_buttons_cashier_help_and_options(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    gina = TablePage(open_page(), "gina").open(server, "gina", "Gina", table="web-buttons")
    page = gina.page

    # Help: the rules, from the terminal client's text.
    gina.click("#btn-help")
    expect(page.locator("#help-body h1")).to_have_text("Chemmy: the rules in short")
    expect(page.locator("#help-body table").first).to_contain_text("draws when p3 is")
    gina.click("#dlg-help [data-close]")

    # Cashier: a deposit of play money, checked against the server.
    before = server_balance(server, "gina")
    gina.click("#btn-cashier")
    page.locator("#cashier-amount").fill("twelve")
    gina.click("#cashier-deposit")
    expect(page.locator("#cashier-result")).to_have_text("Enter an amount, like 50 or 12.50")
    page.locator("#cashier-amount").fill("50")
    gina.click("#cashier-deposit")
    after = before["balance"] + 5000
    expect(page.locator("#cashier-result")).to_have_text(f"Deposited 50.00: balance {money(after)}")
    gina.click("#dlg-cashier [data-close]")
    assert server_balance(server, "gina")["balance"] == after
    expect(page.locator("#balance")).to_have_text(money(after))

    # The betting buttons, each enabled by the server's actions.
    holder_ready(gina, 1)
    for button in ("#act-regret", "#act-clear", "#act-same"):
        expect(page.locator(button)).to_be_disabled()
    gina.chip(0)
    gina.bet("player", times=2)
    expect(page.locator("#bet")).to_have_text("2.00")
    gina.take_back("player", "right")  # a right click regrets a chip
    expect(page.locator("#bet")).to_have_text("1.00")
    gina.click("#act-regret")
    expect(page.locator("#bet")).to_have_text("0.00")
    gina.bet("banker", times=3)
    expect(page.locator("#layout .area[data-area='banker'] .pile-value")).to_have_text("3.00")
    gina.click("#act-clear")
    expect(page.locator("#bet")).to_have_text("0.00")
    expect(page.locator("#balance")).to_have_text(money(after))
    gina.bet("tie")
    gina.bet("player", times=2)
    expect(page.locator("#bet")).to_have_text("3.00")
    play_out(gina)
    # SAME BET repeats the last coup's bets. Coups go on until Gina may pass the shoe
    # (she holds it and has dealt a coup with it: a Player win takes it away).
    for _ in range(10):
        if gina.enabled("#act-accept"):
            gina.click("#act-accept")
        page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(10))
        gina.click("#act-same")
        expect(page.locator("#bet")).to_have_text("3.00")
        assert gina.state("s.myBets") == {"tie": 100, "player": 200}
        if gina.state("Boolean(s.actions.pass_shoe)"):
            break
        play_out(gina)
    else:
        raise AssertionError("Gina never kept the shoe")

    # Options: chip balloons off hides them (and is remembered).
    expect(page.locator("#layout .balloon").first).to_be_visible()
    gina.click("#btn-options")
    page.locator("#options-form input[name='balloons']").uncheck()
    gina.click("#dlg-options [data-close]")
    expect(page.locator("#layout .balloon").first).to_be_hidden()
    page.reload()
    page.locator("#table").wait_for(state="visible")
    expect(page.locator("#layout .balloon").first).to_be_hidden()
    expect(
        page.locator("#seats .seat.me[data-seat='1']")
    ).to_be_visible()  # the same seat after a reload

    # PASS THE SHOE, after a coup dealt.
    expect(page.locator("#act-pass")).to_be_visible()
    gina.click("#act-pass")
    expect(page.locator("#seats .seat[data-seat='1'] .shoe-mark")).to_have_count(0)
    expect(page.locator("#log")).to_contain_text("The shoe leaves you (passed)")


def play_out(tp: TablePage) -> None:
    """DONE, then TOSS whatever is the player's to turn until the coup is settled."""
    round_id = tp.round_id()
    tp.click("#act-done")
    tp.toss_until_settled(round_id)
