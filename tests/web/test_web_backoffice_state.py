"""The back office as a support agent needs it (issue 34 §6), in a real Chromium against a
real server with players at real tables:

- it offers only what a table's state allows: an empty table "Waiting for players"
  names no round in play (the operator API gave it a ``round_id``, and a void of it
  wrote a void record with no wagers) and offers no "Void current round"; the void of
  that round is refused ``404 not_found``; Pause and Resume follow the table's
  ``paused`` (test_web_backoffice.py); a settled round's replay offers no void;
- the void form says that the reason is shown to the players word for word;
- the totals chart draws each currency as its own series, on an axis in its units,
  named in a legend;
- closing a table sends its players to the lobby at once (they saw a dead table for
  2-8 s: "No shoe: shuffling", the odds still counting);
- a ``#token=`` given to a tab already open is used at once, without a reload.
"""

from __future__ import annotations

import http.client
import json
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from test_web_backoffice import OPERATOR, keep
from web_helpers import RELAXED, ServerProcess, TablePage, holder_ready, ms, server_config

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds each

TABLES = [
    {"id": f"bs-{n}", "name": f"Support {n}", "tier": "1-100", "timers": RELAXED} for n in (1, 2, 3)
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-bo-state"), server_config(TABLES)).start()
    yield s
    s.stop()


def call(server: ServerProcess, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """An operator's call with their token (a POST with a new Idempotency-Key)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        headers = {"Authorization": f"Bearer {OPERATOR}"}
        raw = b""
        if method == "POST":
            raw = json.dumps(body or {}).encode()
            headers |= {"Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex}
        conn.request(method, path, body=raw or None, headers=headers)
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        conn.close()


def line_of(server: ServerProcess, table: str) -> dict[str, Any]:
    status, data = call(server, "GET", "/operator/v1/tables")
    assert status == 200, data
    return dict(next(t for t in data["tables"] if t["table"] == table))


def test_an_empty_table_names_no_round_and_offers_no_void(
    server: ServerProcess,
    open_page: Callable[..., Page],
    office: Callable[..., Page],
) -> None:
    # Nell takes the shoe and cuts: betting opens on round 1 ... then she stands.
    tp = TablePage(open_page(), "nell").open(server, "bs-nell", "Nell", table="bs-1")
    holder_ready(tp, 1)
    opened = tp.round_id()
    assert line_of(server, "bs-1")["round_id"] == opened  # bets open on it
    tp.click("#act-stand")
    tp.page.wait_for_function("() => chemmyPage.state.phase === 'waiting'", timeout=ms(10))
    line = line_of(server, "bs-1")
    assert line["phase"] == "waiting" and line["seated"] == 0
    assert line["round_id"] is None, line  # as docs/operator-api.md says
    page = office(f"{server.http}/operator/#token={OPERATOR}")
    row = page.locator("#tables-list tr[data-table='bs-1']")
    expect(row.locator(".phase")).to_have_text("Waiting for players")
    void = row.locator("button[data-action='void']")
    expect(void).to_be_disabled()
    expect(void).to_have_attribute("title", "No round in play at this table")
    # Asked anyway (another back office, a stale page): refused, nothing written.
    status, answer = call(server, "POST", f"/operator/v1/rounds/{opened}/void", {"reason": "x"})
    assert status == 404 and answer["status"] == "not_found", answer
    status, found = call(server, "GET", f"/operator/v1/rounds?round_id={opened}")
    assert status == 200 and found["rounds"] == [], found


def test_the_void_form_says_the_reason_is_shown_word_for_word(
    server: ServerProcess,
    open_page: Callable[..., Page],
    office: Callable[..., Page],
    tmp_path: Path,
    artifacts: Path,
) -> None:
    tp = TablePage(open_page(), "ola").open(server, "bs-ola", "Ola", table="bs-2")
    holder_ready(tp, 1)
    page = office(f"{server.http}/operator/#token={OPERATOR}")
    row = page.locator("#tables-list tr[data-table='bs-2']")
    row.locator("button[data-action='void']").click()
    note = page.locator("#live-void-note")
    expect(note).to_be_visible()
    expect(note).to_have_text(
        "Every player at the table is shown this reason word for word: write it for them."
    )
    expect(page.locator("#live-void-reason")).to_have_attribute(
        "aria-describedby", "live-void-note"
    )
    keep(page, tmp_path, artifacts, "backoffice-void-note")
    page.click("#live-void-cancel")


def test_the_chart_draws_each_currency_on_its_own_axis_with_a_legend(
    server: ServerProcess, office: Callable[..., Page], tmp_path: Path, artifacts: Path
) -> None:
    page = office(f"{server.http}/operator/#token={OPERATOR}")
    drawn = page.evaluate(
        """async () => {
          const { chartSvg, houseSeries } = await import('/operator/static/chart.js');
          const i18n = await import('/i18n.js');
          const money = (minor, currency) => {
            i18n.setCurrency(currency, 2);
            const text = i18n.formatMoney(minor, { sign: true });
            i18n.setCurrency(null, 2);
            return text;
          };
          const lines = [
            { day: '2026-11-29', table: 'a', currency: null, house_result: 500000 },
            { day: '2026-11-30', table: 'a', currency: null, house_result: -300000 },
            { day: '2026-11-29', table: 'e', currency: 'EUR', house_result: 1250 },
            { day: '2026-11-30', table: 'e', currency: 'EUR', house_result: 4200 },
          ];
          const svg = chartSvg(houseSeries(lines), money);
          document.querySelector('#totals-chart').replaceChildren(svg);
          const series = [...svg.querySelectorAll('g.series')];
          return {
            series: series.map((g) => ({
              currency: g.dataset.currency,
              labels: [...g.querySelectorAll('.axis-label')].map((t) => t.textContent),
              title: g.querySelector('.axis-title')?.textContent ?? null,
              ys: [...g.querySelectorAll('circle.point')].map((c) => Number(c.getAttribute('cy'))),
            })),
            legend: [...svg.querySelectorAll('.legend-entry')].map((e) => e.textContent),
          };
        }"""
    )
    series = {s["currency"]: s for s in drawn["series"]}
    assert set(series) == {"", "EUR"}, drawn
    eur, play = series["EUR"], series[""]
    assert eur["title"] == "House result per day, in EUR"
    assert play["title"] == "House result per day, in play money"
    money_labels = [x for x in eur["labels"] if not re.fullmatch(r"\d{4}-\d\d-\d\d", x)]
    assert money_labels and all("€" in x for x in money_labels), eur
    plain = [x for x in play["labels"] if not re.fullmatch(r"\d{4}-\d\d-\d\d", x)]
    assert plain and not any("€" in x for x in plain), play
    # Each on its own scale: the euros' small amounts are not flattened by play money's.
    assert abs(eur["ys"][0] - eur["ys"][1]) > 40, eur
    assert drawn["legend"] == ["House result in play money", "House result in EUR"]
    keep(page, tmp_path, artifacts, "backoffice-chart")


def test_closing_a_table_sends_its_players_to_the_lobby_at_once(
    server: ServerProcess,
    open_page: Callable[..., Page],
    office: Callable[..., Page],
) -> None:
    tp = TablePage(open_page(), "pia").open(server, "bs-pia", "Pia", table="bs-3")
    tp.sit(3)
    tp.page.evaluate(
        """() => {
          window.__closed = null; window.__lobby = null;
          chemmyPage.client.on('event', ({ kind }) => { if (kind === 'closed') window.__closed = performance.now(); });
          const lobby = document.querySelector('#lobby');
          new MutationObserver(() => { if (!lobby.hidden && window.__lobby === null) window.__lobby = performance.now(); })
            .observe(lobby, { attributes: true, attributeFilter: ['hidden'] });
        }"""
    )
    page = office(f"{server.http}/operator/#token={OPERATOR}")
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_response(re.compile(r"/operator/v1/tables/bs-3/close$")) as got:
        page.locator("#tables-list tr[data-table='bs-3'] button[data-action='close']").click()
    assert got.value.ok
    expect(tp.page.locator("#lobby")).to_be_visible()
    expect(tp.page.locator("#message")).to_contain_text("Support 3 was closed")
    waited = tp.page.evaluate("() => window.__lobby - window.__closed")
    assert 0 <= waited < 500, f"the lobby came {waited:.0f} ms after the table closed"
    expect(tp.page.locator("#tables .table-tile[data-tile='bs-3']")).to_have_count(0)


def test_a_token_given_to_an_open_tab_is_used_without_a_reload(
    server: ServerProcess, office: Callable[..., Page]
) -> None:
    page = office(f"{server.http}/operator/")
    expect(page.locator("#status")).to_have_text("Paste an operator token to see the data")
    page.evaluate("() => { window.__same = 'same page'; }")
    page.evaluate(f"() => {{ location.hash = '#token={OPERATOR}'; }}")
    expect(page.locator("#status")).to_have_text("Signed in as an operator")
    expect(page.locator("#tables-list tr[data-table='bs-1']")).to_be_visible()
    assert page.evaluate("() => window.__same") == "same page", "the tab was reloaded"
    assert "token" not in page.evaluate("() => location.href")  # out of the address bar
