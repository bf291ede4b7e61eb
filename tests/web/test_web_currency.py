"""The web table in the player's currency (issue "Currency"): the hello reply's
``currency`` and ``decimals`` say how every amount is written (Intl.NumberFormat,
style currency), the lobby lists only that currency's tables, and play money looks as
it always did (two decimals, no symbol).

Money in a currency is the operator's (a transfer wallet: issue 34 §7), moved in before
each player comes.

- A EUR player: the balance ``€1,000.00``, the lobby's one euro table with its limits in
  euros, the table's plaque and chips in euros; in French ``1 000,00 €``.
- A JPY player: no decimals anywhere (``¥100,000``, ``¥100`` to ``¥100,000``).
- The page's money functions (i18n.js) in KWD (three decimals), JPY and play money:
  formatted and read back exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect
from web_helpers import (
    RELAXED,
    SECRET,
    TRANSFER,
    ServerProcess,
    TablePage,
    server_config,
    transfer_in,
)

from server.process.auth import make_token

pytestmark = pytest.mark.slow  # a server subprocess and a browser: seconds each

NBSP, NNBSP = "\u00a0", "\u202f"
DASH = "\u2013"  # between a minimum and a maximum
TABLES = [
    {"id": "web-play", "name": "Salon", "tier": "1-100", "timers": RELAXED},
    {"id": "web-eur", "name": "Salon euro", "tier": "1-100", "currency": "EUR", "timers": RELAXED},
    {
        "id": "web-jpy",
        "name": "Salon yen",
        "currency": "JPY",
        "min": 100,
        "max": 100_000,
        "tie_max": 15_000,
        "side_max": 15_000,
        "timers": RELAXED,
    },
    {"id": "web-kwd", "name": "Salon dinar", "tier": "1-100", "currency": "KWD", "timers": RELAXED},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    config = TRANSFER + server_config(TABLES)
    s = ServerProcess(tmp_path_factory.mktemp("web-currency"), config).start()
    yield s
    s.stop()


def lobby_cards(page: Page) -> list[str]:
    page.locator("#tables .table-card").first.wait_for()
    return [
        str(c)
        for c in page.locator("#tables .table-card").evaluate_all(
            "cards => cards.map((c) => c.dataset.table)"
        )
    ]


def test_a_euro_player_sees_euros(server: ServerProcess, open_page: Callable[..., Page]) -> None:
    transfer_in(server, "web-eve", 100_000, "EUR")
    tp = TablePage(open_page(), "eve").open(server, "web-eve", "Eve", currency="EUR")
    expect(tp.page.locator("#balance")).to_have_text("€1,000.00")
    assert lobby_cards(tp.page) == ["web-eur"]  # only the euro tables
    card = tp.page.locator("#tables .table-card[data-table='web-eur']")
    expect(card.locator(".table-limits")).to_have_text(f"€1.00{DASH}€100.00")
    expect(card.locator(".table-tie")).to_contain_text("€15.00")
    card.click()
    tp.page.locator("#table").wait_for(state="visible")
    expect(tp.page.locator("#plaque")).to_contain_text(f"€1.00{DASH}€100.00")
    expect(tp.page.locator("#plaque")).to_contain_text("€15.00")
    # A chip says its value, the currency's sign under it (and its whole name to a reader).
    chip = tp.page.locator("#chips .chip[data-index='0']")
    expect(chip.locator(".chip-label")).to_have_text("1")
    expect(chip.locator(".chip-unit")).to_have_text("€")
    expect(chip).to_have_attribute("aria-label", "€1")
    expect(tp.page.locator("#balance")).to_have_text("€1,000.00")
    expect(tp.page.locator("#bet")).to_have_text("€0.00")


def test_in_french_the_euros_come_after(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    transfer_in(server, "web-eva", 100_000, "EUR")
    tp = TablePage(open_page(), "eva").open(
        server, "web-eva", "Eva", "web-eur", currency="EUR", lang="fr"
    )
    expect(tp.page.locator("#balance")).to_have_text(f"1{NNBSP}000,00{NBSP}€")
    expect(tp.page.locator("#plaque")).to_contain_text(f"1,00{NBSP}€{DASH}100,00{NBSP}€")


def test_a_yen_player_sees_no_decimals(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    transfer_in(server, "web-ken", 100_000, "JPY")
    tp = TablePage(open_page(), "ken").open(server, "web-ken", "Ken", currency="JPY")
    expect(tp.page.locator("#balance")).to_have_text("¥100,000")
    assert lobby_cards(tp.page) == ["web-jpy"]
    card = tp.page.locator("#tables .table-card[data-table='web-jpy']")
    expect(card.locator(".table-limits")).to_have_text(f"¥100{DASH}¥100,000")
    card.click()
    tp.page.locator("#table").wait_for(state="visible")
    expect(tp.page.locator("#plaque")).to_contain_text(f"¥100{DASH}¥100,000 ·")
    expect(tp.page.locator("#bet")).to_have_text("¥0")
    tp.sit(1)
    tp.click("#act-accept")
    tp.click("#act-cut")
    tp.page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)")
    tp.bet("banker")  # the first chip: ¥100
    expect(tp.page.locator("#bet")).to_have_text("¥100")
    expect(tp.page.locator("#balance")).to_have_text("¥99,900")


def test_a_play_money_player_sees_what_they_always_saw(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    tp = TablePage(open_page(), "ann").open(server, "web-ann", "Ann")
    expect(tp.page.locator("#balance")).to_have_text("0.00")  # no welcome money here
    assert lobby_cards(tp.page) == ["web-play"]
    expect(tp.page.locator("#tables .table-card .table-limits")).to_have_text(f"1.00{DASH}100.00")


def test_the_pages_money_in_three_currencies(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    page = open_page(server.http + "/")
    result = page.evaluate(
        """async () => {
          const m = await import("/i18n.js");
          const out = {};
          for (const [code, digits] of [["KWD", 3], ["JPY", 0], ["EUR", 2], [null, 2]]) {
            m.setCurrency(code, digits);
            out[code ?? "play"] = {
              shown: [1234, 5, -100000].map((n) => m.formatMoney(n)),
              signed: m.formatMoney(1250, { sign: true }),
              read: ["1.234", "12.5", "1,000", "12"].map((s) => m.parseMoney(s)),
            };
          }
          m.setCurrency("NOPE", 2);
          out.unknown = m.currency();
          m.setCurrency(null);
          return out;
        }"""
    )
    assert result["KWD"]["shown"] == [f"KWD{NBSP}1.234", f"KWD{NBSP}0.005", f"-KWD{NBSP}100.000"]
    assert result["KWD"]["read"] == [1234, 12500, 1000000, 12000]
    assert result["JPY"]["shown"] == ["¥1,234", "¥5", "-¥100,000"]
    assert result["JPY"]["read"] == [None, None, 1000, 12]  # no decimals in yen
    assert result["EUR"]["shown"] == ["€12.34", "€0.05", "-€1,000.00"]
    assert result["EUR"]["signed"] == "+€12.50"
    assert result["EUR"]["read"] == [None, 1250, 100000, 1200]
    assert result["play"]["shown"] == ["12.34", "0.05", "-1,000.00"]
    assert result["play"]["read"] == [None, 1250, 100000, 1200]
    assert result["unknown"] == {"currency": None, "decimals": 2}


def test_a_german_dinar_player_never_sees_english_amounts(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    """Issue 34 §3: a German KWD player saw "KWD 100.000" (the browser's English, where
    "." is the decimal point) beside a lobby in "100,000 KWD": a German reader reads a
    thousand times the amount. Every amount, from the first one drawn, is German."""
    transfer_in(server, "web-dieter", 100_000, "KWD")
    page = open_page(locale="en-US")
    page.add_init_script(
        """window.__balances = [];
        addEventListener("DOMContentLoaded", () => {
          const el = document.querySelector("#balance");
          new MutationObserver(() => window.__balances.push(el.textContent)).observe(
            el, { childList: true, characterData: true, subtree: true });
        });"""
    )
    token = make_token(SECRET, "web-dieter", "Dieter", ttl=3600, currency="KWD", language="de")
    page.goto(f"{server.http}/?token={token}")
    german = f"100,000{NBSP}KWD"
    expect(page.locator("#balance")).to_have_text(german)
    expect(page.locator("#tables .table-card .table-limits")).to_have_text(
        f"0,100{NBSP}KWD{DASH}10,000{NBSP}KWD"
    )
    page.wait_for_timeout(300)
    shown = page.evaluate("window.__balances")
    assert set(shown) <= {german, DASH}, shown  # never "KWD 100.000"
