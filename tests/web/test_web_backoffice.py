"""The operator's back-office page (issue 21): ``/operator/`` on the server's own port,
its data from the operator API (docs/operator-api.md) under an operator's token, in a
real Chromium against a real server where a player played a coup from the web table.

- With an operator token (``#token=`` in the URL; kept in sessionStorage, gone from the
  address bar): the tables list shows the live table (its phase, who sits); the players
  online list the connected player; the round search finds the coup played, and its
  replay shows the cards one by one in the order they were turned (the report's
  ``turned_by``), who turned each, then the totals and the result; the totals show the
  table's day, and the chart has one point per day (one day here; three days of
  synthetic totals give three points).
- The controls: Pause and Resume on a table, Void on a round, each a POST to the
  operator API; the page shows exactly what the server answered (until the voids branch
  is merged, its refusal ``404 not_found``, in plain words); a void without a reason is
  not sent, nor a Close the operator does not confirm.
- Live: a second player who sits and plays at another table shows in the tables and
  players lists without a reload (and leaves them when gone); the round search with one
  round a page follows ``next_cursor`` to the next.
- Without a token, with a player's token (pasted) and with an expired operator token:
  the server's refusal (401 / 403 and its sentence) and no data.
- The page and its files are plain GETs (the API stays under ``/operator/v1/``), with
  the strict CSP and no framing by another origin; axe-core finds no serious or critical
  violation.

Screenshots (PNG) go under the test's tmp_path and to the artifacts folder; the main one
also to docs/img/backoffice.png (linked from the README) when that file is missing or
``CHEMMY_DOCS_SCREENSHOTS=1``.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route, expect
from test_web_a11y import RANKS, SUITS, axe_serious
from web_helpers import (
    FAST,
    ROOT,
    SECRET,
    ServerProcess,
    TablePage,
    holder_ready,
    money,
    ms,
    server_config,
)

from server.process.auth import make_token

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds each

TABLES = [
    {"id": "bo-1", "name": "Back office", "tier": "1-100", "timers": FAST},
    {"id": "bo-2", "name": "Quiet", "tier": "1-100", "timers": FAST},
]
#: How often the back office asks for the tables and players lists (backoffice.js POLL_MS).
POLL_MS = 5000
OPERATOR = make_token(SECRET, "boss", "Boss", roles=["operator"], ttl=3600)
PLAYER = make_token(SECRET, "web-zoe", "Zoe", ttl=3600)
EXPIRED = make_token(SECRET, "boss", "Boss", roles=["operator"], ttl=60, now=time.time() - 3600)


def api(server: ServerProcess, method: str, path: str, token: str | None = None) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if method == "POST":
            headers["Content-Length"] = "0"
        conn.request(method, path, headers=headers)
        r = conn.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-backoffice"), server_config(TABLES)).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def played(browser: Browser, server: ServerProcess) -> Iterator[dict[str, Any]]:
    """Ann plays one coup at bo-1 from the web table, and stays connected."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(ms(10))
    tp = TablePage(context.new_page(), "ann").open(server, "web-ann", "Ann", table="bo-1")
    holder_ready(tp, 1)
    tp.chip(2)
    tp.bet("banker")
    round_id = tp.round_id()
    tp.click("#act-done")
    tp.toss_until_settled(round_id)
    status, _, body = api(server, "GET", f"/operator/v1/rounds/{round_id}", OPERATOR)
    assert status == 200, body
    yield {"round_id": round_id, "report": json.loads(body), "page": tp}
    context.close()


def keep(page: Page, tmp_path: Path, artifacts: Path, name: str) -> Path:
    """A PNG under the test's tmp_path, copied to the artifacts folder."""
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    shutil.copy(path, artifacts / path.name)
    return path


def refusal_text(status: int, body: bytes) -> str:
    """What the page says of a refusal: the English catalog's ``bo.refused``."""
    data = json.loads(body)
    return f"Refused by the server ({status} {data['status']}): {data['message']}"


# ---------------------------------------------------------------------------- data


def test_an_operator_sees_tables_players_rounds_a_replay_and_totals(
    server: ServerProcess,
    played: dict[str, Any],
    office: Callable[..., Page],
    tmp_path: Path,
    artifacts: Path,
) -> None:
    round_id, report = played["round_id"], played["report"]
    page = office(f"{server.http}/operator/#token={OPERATOR}")
    expect(page.locator("#status")).to_have_text("Signed in as an operator")
    expect(page.locator("#refusal")).to_be_hidden()
    # The token left the address bar for this tab's storage.
    assert "token" not in page.url
    assert page.evaluate("sessionStorage.getItem('chemmy.operator.token')") == OPERATOR

    # The tables, live: Ann sits at bo-1, whose next coup is open for bets or waits.
    row = page.locator("#tables-list tr[data-table='bo-1']")
    expect(row.locator(".seated")).to_have_text("1 of 14")
    expect(row.locator(".last")).to_contain_text(round_id)
    expect(page.locator("#tables-list tr[data-table='bo-2'] .seated")).to_have_text("0 of 14")
    expect(page.locator("#tables-list tr[data-table='bo-2'] .phase")).to_have_text(
        "Waiting for players"
    )
    # Players online: Ann, at bo-1.
    ann = page.locator("#players-list tr[data-player='web-ann']")
    expect(ann).to_contain_text("Ann")
    expect(ann).to_contain_text("bo-1")

    # The round search: by table and player, the coup is found.
    form = page.locator("#rounds-form")
    form.locator("input[name='table']").fill("bo-1")
    form.locator("input[name='player']").fill("web-ann")
    page.click("#rounds-search")
    found = page.locator(f"#rounds-list tr[data-round='{round_id}']")
    expect(found).to_be_visible()
    expect(page.locator("#rounds-list tbody tr")).to_have_count(1)
    staked = money(report["money"]["staked"])
    assert report["money"]["staked"] > 0
    expect(found).to_contain_text(staked)
    # ... and replayed card by card, in the order turned.
    found.locator(".replay-open").click()
    expect(page.locator("#replay-title")).to_have_text(f"Round {round_id}")
    rec = report["round"]
    turned = rec["turned_by"]
    order = [("player", 0), ("player", 1), ("banker", 0), ("banker", 1)]
    order += [(hand, 2) for hand in ("player", "banker") if len(turned[hand]) > 2]
    count = len(order)
    expect(page.locator("#replay-step")).to_have_text(f"{count} cards to turn: press Next card")
    expect(page.locator("#replay-player [role='img']")).to_have_count(0)
    hands = {"player": "Player", "banker": "Banker"}
    seen = {"player": 0, "banker": 0}
    for n, (hand, index) in enumerate(order, 1):
        page.click("#replay-next")
        step = turned[hand][index]
        by = "the croupier" if step["by"] in (None, "croupier") else step["by"]
        expect(page.locator("#replay-step")).to_contain_text(f"Card {n} of {count}: ")
        rank, suit = step["card"][:-1], step["card"][-1]
        words = f"{RANKS.get(rank, rank)} of {SUITS[suit]}"  # "10 of hearts"
        expect(page.locator("#replay-step")).to_contain_text(f"turns {words} for the {hands[hand]}")
        if step["by"] not in (None, "croupier"):
            expect(page.locator("#replay-step")).to_contain_text(by)
        seen[hand] += 1
        for h_, k in seen.items():
            expect(page.locator(f"#replay-{h_} [role='img']")).to_have_count(k)
        if n < count:
            expect(page.locator("#replay-result")).to_have_text("")
        if n == 2:
            keep(page, tmp_path, artifacts, "backoffice-replay-step")
    expect(page.locator("#replay-next")).to_be_disabled()
    expect(page.locator("#replay-player-total")).to_have_text(f"Total {rec['player_total']}")
    expect(page.locator("#replay-banker-total")).to_have_text(f"Total {rec['banker_total']}")
    outcome = {"player": "Player", "banker": "Banker", "tie": "Tie"}[rec["outcome"]]
    expect(page.locator("#replay-result")).to_have_text(
        f"{outcome}: Player {rec['player_total']}, Banker {rec['banker_total']}"
    )
    expect(page.locator("#replay-bets")).to_contain_text("web-ann")
    expect(page.locator("#replay-money")).to_contain_text(f"Staked {staked}")
    # Back one card, then all at once.
    page.click("#replay-prev")
    expect(page.locator("#replay-result")).to_have_text("")
    page.click("#replay-all")
    expect(page.locator("#replay-next")).to_be_disabled()

    # Totals: the day's line for bo-1 and a chart with one point per day.
    page.click("#totals-show")
    day = time.strftime("%Y-%m-%d", time.gmtime(rec["time"]))
    expect(page.locator(f"#totals-list tr[data-day='{day}'][data-table='bo-1']")).to_be_visible()
    status, _, body = api(server, "GET", "/operator/v1/totals", OPERATOR)
    assert status == 200, body
    totals = json.loads(body)
    days = {line["day"] for line in totals["totals"]}
    expect(page.locator("#totals-chart svg circle.point")).to_have_count(len(days))
    expect(page.locator(f"#totals-chart circle.point[data-day='{day}']")).to_have_attribute(
        "data-amount", str(sum(x["house_result"] for x in totals["totals"] if x["day"] == day))
    )
    house = totals["by_currency"][0]["house_result"]
    expect(page.locator("#totals-currency .house")).to_have_text(
        ("+" if house > 0 else "") + money(house)
    )
    # The chart's drawing, over three days of two tables: one point per day.
    points = page.evaluate(
        """async () => {
          const { chartSvg, houseSeries } = await import('/operator/static/chart.js');
          const lines = [
            { day: '2026-11-29', table: 'a', currency: null, house_result: 500 },
            { day: '2026-11-29', table: 'b', currency: null, house_result: -200 },
            { day: '2026-11-30', table: 'a', currency: null, house_result: -700 },
            { day: '2026-12-01', table: 'b', currency: null, house_result: 1200 },
          ];
          const svg = chartSvg(houseSeries(lines), (m) => String(m));
          return [...svg.querySelectorAll('circle.point')].map((c) => [c.dataset.day, Number(c.dataset.amount)]);
        }"""
    )
    assert points == [["2026-11-29", 300], ["2026-11-30", -700], ["2026-12-01", 1200]]

    page.locator("#tables").scroll_into_view_if_needed()
    shot = keep(page, tmp_path, artifacts, "backoffice")
    # The README's picture: refreshed on demand (a run must not dirty the work tree).
    readme = ROOT / "docs" / "img" / "backoffice.png"
    if os.environ.get("CHEMMY_DOCS_SCREENSHOTS") == "1" or not readme.exists():
        readme.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, readme)


# ---------------------------------------------------------------------------- controls


def test_the_controls_show_the_servers_answer(
    server: ServerProcess,
    played: dict[str, Any],
    office: Callable[..., Page],
    tmp_path: Path,
    artifacts: Path,
) -> None:
    page = office(f"{server.http}/operator/#token={OPERATOR}")
    row = page.locator("#tables-list tr[data-table='bo-2']")
    # Offered only as the table's state allows (issue 34 §6): Resume on a table that is
    # not paused is off, and so is Pause on a paused one.
    expect(row.locator("button[data-action='resume']")).to_be_disabled()
    for action, other in (("pause", "resume"), ("resume", "pause")):
        button = row.locator(f"button[data-action='{action}']")
        expect(button).to_be_enabled()
        with page.expect_response(re.compile(rf"/operator/v1/tables/bo-2/{action}$")) as got:
            button.click()
        response = got.value
        assert response.request.method == "POST"
        assert response.request.headers["authorization"] == f"bearer {OPERATOR}"
        assert response.ok, response.body()
        done = "paused" if action == "pause" else "resumed"
        expect(page.locator("#table-answer")).to_contain_text(f"Table bo-2 {done}")
        expect(button).to_be_disabled()
        expect(row.locator(f"button[data-action='{other}']")).to_be_enabled()
    # Close asks first; dismissed, nothing is sent.
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    page.once("dialog", lambda dialog: dialog.dismiss())
    row.locator("button[data-action='close']").click()
    page.wait_for_timeout(300)
    assert sent == []

    # A settled round's replay offers no void (the server would refuse it, 409: issue
    # 34 §6), and says why; nothing is sent.
    page.locator("#rounds-form input[name='round_id']").fill(played["round_id"])
    page.click("#rounds-search")
    page.locator(f"#rounds-list tr[data-round='{played['round_id']}'] .replay-open").click()
    expect(page.locator("#replay")).to_be_visible()
    expect(page.locator("#void-round")).to_be_hidden()
    expect(page.locator("#void-settled")).to_have_text(
        "This round is over (settled or voided): only a round in play may be voided. "
        "A settled round is corrected with a transfer."
    )
    page.wait_for_timeout(300)
    assert [u for u in sent if u.endswith("/void")] == []
    keep(page, tmp_path, artifacts, "backoffice-controls")


# ---------------------------------------------------------------------------- refusals


def until(page: Page, done: Callable[[], bool], timeout: float = 10) -> None:
    """Let the page run until ``done()`` (the page's CSP forbids wait_for_function's eval)."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the page did not get there in time"
        page.wait_for_timeout(50)


def no_data(page: Page) -> None:
    expect(page.locator("#data")).to_be_hidden()
    for list_ in ("#tables-list", "#players-list", "#rounds-list", "#totals-list"):
        expect(page.locator(f"{list_} tr")).to_have_count(0)
    expect(page.locator("#totals-chart svg")).to_have_count(0)
    assert "bo-1" not in page.locator("body").inner_text()


def test_without_an_operators_token_the_refusal_and_no_data(
    server: ServerProcess,
    played: dict[str, Any],
    office: Callable[..., Page],
    tmp_path: Path,
    artifacts: Path,
) -> None:
    page = office()
    page.clock.install()  # (time flows; the test jumps it past a poll's period below)
    page.goto(f"{server.http}/operator/")
    status, _, body = api(server, "GET", "/operator/v1/tables")
    assert status == 401
    expect(page.locator("#refusal")).to_have_text(refusal_text(status, body))
    expect(page.locator("#status")).to_have_text("Paste an operator token to see the data")
    no_data(page)
    keep(page, tmp_path, artifacts, "backoffice-no-token")

    # A player's token, pasted: 403, and still nothing.
    page.fill("#token-input", PLAYER)
    page.click("#token-use")
    status, _, body = api(server, "GET", "/operator/v1/tables", PLAYER)
    assert status == 403
    expect(page.locator("#refusal")).to_have_text(refusal_text(status, body))
    expect(page.locator("#status")).to_have_text(
        "This token does not open the back office: no data is shown"
    )
    no_data(page)
    assert page.locator("#token-input").input_value() == ""  # not left on screen

    # An expired operator token: 401.
    page.fill("#token-input", EXPIRED)
    page.click("#token-use")
    status, _, body = api(server, "GET", "/operator/v1/tables", EXPIRED)
    assert status == 401
    expect(page.locator("#refusal")).to_have_text(refusal_text(status, body))
    no_data(page)

    # The operator's token: the data; Forget: refused again. The totals' answer is held
    # until after Forget (a slow answer under the forgotten token): it is dropped unseen.
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)

    page.route("**/operator/v1/totals?*", hold)
    page.fill("#token-input", OPERATOR)
    page.click("#token-use")
    expect(page.locator("#tables-list tr[data-table='bo-1']")).to_be_visible()
    expect(page.locator("#refusal")).to_be_hidden()
    until(page, lambda: bool(held))
    assert len(held) == 1, "the totals were asked once under the operator's token"
    page.click("#token-forget")
    expect(page.locator("#refusal")).to_contain_text("Refused by the server (401 unauthorized)")
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    held[0].continue_()
    page.unroute("**/operator/v1/totals?*", hold)
    dropped = "chemmyBackOffice.dropped.filter((path) => path.includes('/v1/totals'))"
    until(page, lambda: page.evaluate(f"({dropped}).length") == 1)
    no_data(page)
    # Nor does the load that asked for them poll on under no token (the page's clock jumped
    # past the poll's period: nothing is asked).
    page.clock.fast_forward(POLL_MS + 1000)
    page.wait_for_timeout(200)
    assert [u for u in asked if "/operator/v1/" in u] == [], asked
    assert page.evaluate("sessionStorage.getItem('chemmy.operator.token')") is None


def test_the_page_in_french(
    server: ServerProcess, played: dict[str, Any], office: Callable[..., Page]
) -> None:
    page = office(f"{server.http}/operator/?lang=fr#token={OPERATOR}")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page.locator("#players-title")).to_have_text("Joueurs en ligne")
    expect(page.locator("#tables-list tr[data-table='bo-2'] .seated")).to_have_text("0 sur 14")
    expect(
        page.locator("#tables-list tr[data-table='bo-2'] button[data-action='pause']")
    ).to_have_text("Suspendre")


# ---------------------------------------------------------------------------- serving


def test_the_page_and_its_files_are_plain_gets(server: ServerProcess) -> None:
    static = ROOT / "web" / "operator"
    status, headers, body = api(server, "GET", "/operator/")
    assert status == 200 and body == (static / "index.html").read_bytes()
    assert headers["content-type"] == "text/html; charset=utf-8"
    csp = headers["content-security-policy"]
    assert "frame-ancestors 'none';" in csp and "script-src 'self'" in csp
    assert headers["x-frame-options"] == "DENY"
    assert "require-trusted-types-for 'script'" in csp and "unsafe" not in csp
    assert headers["cross-origin-resource-policy"] == "same-origin"
    for name, kind in (
        ("backoffice.js", "text/javascript; charset=utf-8"),
        ("chart.js", "text/javascript; charset=utf-8"),
        ("replay.js", "text/javascript; charset=utf-8"),
        ("backoffice.css", "text/css; charset=utf-8"),
    ):
        status, headers, body = api(server, "GET", f"/operator/static/{name}")
        assert (status, headers["content-type"]) == (200, kind), name
        assert body == (static / name).read_bytes()
    for path in ("/operator/index.html", "/operator/static/index.html", "/operator/nope.js"):
        assert api(server, "GET", path)[0] == 404, path
    assert api(server, "POST", "/operator/")[0] == 405
    # The API is still the API, JSON refusals and all.
    status, headers, body = api(server, "GET", "/operator/v1/tables")
    assert status == 401 and headers["content-type"] == "application/json"
    assert json.loads(body)["status"] == "unauthorized"
    status, _, body = api(server, "GET", "/operator/v1/tables", OPERATOR)
    assert status == 200 and {t["table"] for t in json.loads(body)["tables"]} == {"bo-1", "bo-2"}


# ---------------------------------------------------------------------------- a11y


def test_axe_finds_no_serious_violation(
    server: ServerProcess,
    played: dict[str, Any],
    office: Callable[..., Page],
    tmp_path: Path,
    artifacts: Path,
) -> None:
    # (axe is injected: the page's CSP is bypassed for it, as in test_web_a11y.)
    page = office(f"{server.http}/operator/", bypass_csp=True)
    expect(page.locator("#refusal")).to_be_visible()
    problems = axe_serious(page, "refused")
    page.fill("#token-input", OPERATOR)
    page.click("#token-use")
    expect(page.locator("#tables-list tr[data-table='bo-1']")).to_be_visible()
    page.locator(f"#rounds-list tr[data-round='{played['round_id']}'] .replay-open").click()
    page.click("#replay-next")
    page.click("#replay-next")
    expect(page.locator("#totals-chart svg")).to_be_visible()
    problems += axe_serious(page, "with data and a replay")
    # On a phone the lists scroll sideways: still no serious violation.
    phone = office(f"{server.http}/operator/#token={OPERATOR}", bypass_csp=True)
    phone.set_viewport_size({"width": 390, "height": 844})
    expect(phone.locator("#tables-list tr[data-table='bo-1']")).to_be_visible()
    phone.locator(f"#rounds-list tr[data-round='{played['round_id']}'] .replay-open").click()
    problems += axe_serious(phone, "phone")
    # The lists scroll inside their boxes; the page itself does not scroll sideways.
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    keep(phone, tmp_path, artifacts, "backoffice-phone")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------- live


def test_the_lists_are_live_and_the_search_pages_by_cursor(
    browser: Browser, server: ServerProcess, played: dict[str, Any], office: Callable[..., Page]
) -> None:
    page = office()
    # The page's clock is Playwright's (time flows as it does), so that where the test
    # waits for the page's next poll of the lists (POLL_MS, 5 s) it jumps to it.
    page.clock.install()
    page.goto(f"{server.http}/operator/#token={OPERATOR}")
    page.locator("body[data-ready='1']").wait_for(state="attached")
    expect(page.locator("#tables-list tr[data-table='bo-2'] .seated")).to_have_text("0 of 14")
    expect(page.locator("#players-list tr[data-player='web-ben']")).to_have_count(0)
    # Ben sits at bo-2 and plays a coup: the open page sees him without a reload.
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(ms(10))
    try:
        ben = TablePage(context.new_page(), "ben").open(server, "web-ben", "Ben", table="bo-2")
        holder_ready(ben, 2)
        ben.chip(2)
        ben.bet("player")
        second = ben.round_id()
        ben.click("#act-done")
        ben.toss_until_settled(second)
        page.clock.fast_forward(POLL_MS)  # the next poll, now
        live = {"timeout": ms(15)}
        expect(page.locator("#tables-list tr[data-table='bo-2'] .seated")).to_have_text(
            "1 of 14", **live
        )
        expect(page.locator("#tables-list tr[data-table='bo-2'] .last")).to_contain_text(
            second, **live
        )
        expect(page.locator("#players-list tr[data-player='web-ben']")).to_contain_text(
            "bo-2", **live
        )
        # One round a page: the newest first, then the next page by its cursor.
        page.locator("#rounds-form input[name='limit']").fill("1")
        with page.expect_response(re.compile(r"/operator/v1/rounds\?")) as got:
            page.click("#rounds-search")
        assert "limit=1" in got.value.url and "cursor" not in got.value.url
        expect(page.locator("#rounds-list tbody tr")).to_have_count(1)
        expect(page.locator(f"#rounds-list tr[data-round='{second}']")).to_be_visible()
        with page.expect_response(re.compile(r"/operator/v1/rounds\?.*cursor=")) as got:
            page.click("#rounds-more")
        expect(page.locator("#rounds-list tbody tr")).to_have_count(2)
        expect(page.locator(f"#rounds-list tr[data-round='{played['round_id']}']")).to_be_visible()
    finally:
        context.close()
    # Ben gone: the list follows.
    page.clock.fast_forward(POLL_MS)
    expect(page.locator("#players-list tr[data-player='web-ben']")).to_have_count(0, timeout=ms(15))
