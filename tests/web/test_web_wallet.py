"""The web table at a seamless table (docs/wallet.md §3): a real server with ``--wallet
seamless`` calling the reference operator wallet (``examples/wallet``, a real
subprocess), which refuses debits on cue.

- A EUR player bets and presses DONE while the wallet refuses the debit
  (``limit_reached``): the page names the phase while the wallet is asked ("Taking the
  bets", with the catalog's sentence ``ev.debiting``), then says the catalog's plain
  sentence (``ev.debit_refused.limit_reached``) on the message display, where it stays,
  and in the table log; the chips come off the felt and the balance in euros is the
  wallet's, nothing taken.
- The next coup the wallet does not answer (a ``timeout`` fault, past the server's short
  ``wallet_timeout``): the page shows the phase all the while, then
  ``ev.debit_refused.wallet_unavailable``; the late debit is rolled back and the balance
  is still the wallet's.
- A coup the wallet takes is played out: the balance shown after it is the wallet's.
- Under a token with ``language: fr``, the French catalog's sentence and phase name,
  and euros written the French way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from web_helpers import (
    RELAXED,
    SECRET,
    ServerProcess,
    TablePage,
    holder_ready,
    money,
    ms,
    scaled,
    server_config,
)

from server.process.auth import make_token
from tests.wallet.wallet_helpers import ReferenceWallet, reference_wallet

pytestmark = pytest.mark.slow  # a server subprocess, a wallet and a browser: seconds each

NBSP, NNBSP = "\u00a0", "\u202f"
START = 100_000  # the reference wallet's starting balance: €1,000.00
TABLES = [
    {"id": "web-wallet", "name": "Wallet", "currency": "EUR", "timers": RELAXED},
    {"id": "web-wallet-fr", "name": "Portefeuille", "currency": "EUR", "timers": RELAXED},
    {"id": "web-wallet-2", "name": "Wallet 2", "currency": "EUR", "timers": RELAXED},
]
WALLET_TIMEOUT = 2.0  # seconds the wallet has to answer a coup's debits (scaled)
EN = {
    "phase": "Taking the bets",
    "debiting": "No more bets: the wallet is taking the bets",
    "limit_reached": "Your bets were not placed: they would go over a limit on your account",
    "wallet_unavailable": (
        "Your bets were not placed: your wallet did not answer in time. Nothing was taken"
    ),
}


@pytest.fixture(scope="module")
def wallet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceWallet]:
    with reference_wallet(tmp_path_factory.mktemp("web-wallet"), start_balance=START) as w:
        yield w


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, wallet: ReferenceWallet
) -> Iterator[ServerProcess]:
    settings = [
        'wallet = "seamless"',
        f'wallet_url = "{wallet.url}"',
        f'wallet_secret = "{wallet.secret}"',
        f"wallet_timeout = {scaled(WALLET_TIMEOUT):g}",
        "guest = false",
    ]
    config = "\n".join(settings) + "\n" + server_config(TABLES)
    s = ServerProcess(tmp_path_factory.mktemp("web-wallet-server"), config).start()
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def no_faults(wallet: ReferenceWallet) -> Iterator[None]:
    wallet.reset()
    yield
    wallet.reset()


def euros(minor: int) -> str:
    """As the page writes euros in English: 100000 -> "€1,000.00"."""
    return f"€{money(minor)}"


def open_table(
    page: Page,
    server: ServerProcess,
    player: str,
    name: str,
    table: str = "web-wallet",
    language: str | None = None,
) -> TablePage:
    """``table``'s page for a EUR player (their token's ``language``, if any)."""
    token = make_token(SECRET, player, name, ttl=3600, currency="EUR", language=language)
    page.goto(f"{server.http}/?token={token}&table={table}")
    page.locator("#table").wait_for(state="visible")
    return TablePage(page, player)


def watch_display(tp: TablePage) -> None:
    """Record every text the phase box and the message display show from now on (the
    wallet may answer faster than a look at the page)."""
    tp.page.evaluate(
        """() => {
          window.shown = { phase: [], message: [] };
          for (const [key, sel] of [["phase", "#phase"], ["message", "#message"]]) {
            const el = document.querySelector(sel);
            new MutationObserver(() => window.shown[key].push(el.textContent)).observe(
              el, { childList: true, characterData: true, subtree: true });
          }
        }"""
    )


def shown(tp: TablePage) -> dict[str, list[str]]:
    result: dict[str, list[str]] = tp.page.evaluate("() => window.shown")
    return result


def bet_and_done(tp: TablePage, area: str = "banker") -> str:
    """One chip (the first) on ``area`` and DONE; the round id bet on."""
    tp.page.wait_for_function("() => Boolean(chemmyPage.state.actions.done)", timeout=ms(10))
    round_id = tp.round_id()
    tp.bet(area)
    expect(tp.page.locator(f"#layout .area[data-area='{area}'] .pile")).to_have_count(1)
    watch_display(tp)
    tp.click("#act-done")
    return round_id


def expect_refused(
    tp: TablePage, sentence: str, balance: str, bet: str = "€0.00", area: str = "banker"
) -> None:
    """The refusal said and kept on the message display, logged, the chips off the
    felt, and the balance as given."""
    message = tp.page.locator("#message")
    expect(message).to_have_text(sentence)
    expect(message).to_have_attribute("data-tone", "lose")
    expect(tp.page.locator("#log li[data-tone='lose']").last).to_have_text(sentence)
    expect(tp.page.locator(f"#layout .area[data-area='{area}'] .pile")).to_have_count(0)
    expect(tp.page.locator("#bet")).to_have_text(bet)
    expect(tp.page.locator("#balance")).to_have_text(balance)
    tp.page.wait_for_timeout(ms(0.5))  # what follows (the next round) leaves it there
    expect(message).to_have_text(sentence)


def wait_for(check: Callable[[], Any], what: str, seconds: float = 15) -> Any:
    deadline = time.monotonic() + scaled(seconds)
    while not (result := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return result


def test_refused_debits_on_the_page(
    server: ServerProcess,
    wallet: ReferenceWallet,
    open_page: Callable[..., Page],
    artifacts: Path,
) -> None:
    pid = "web-wendy"
    tp = open_table(open_page(), server, pid, "Wendy")
    holder_ready(tp, 1)
    expect(tp.page.locator("#balance")).to_have_text(euros(START))
    assert wallet.balance(pid) == START

    # -- coup 1: the wallet refuses (limit_reached), a moment after it is asked
    wallet.faults(
        {"endpoint": "debit", "fault": "refuse", "code": "limit_reached", "player": pid},
        latency=scaled(0.3),
    )
    first = bet_and_done(tp)
    expect(tp.page.locator("#balance")).to_have_text(euros(START - 100))  # the chip placed
    expect_refused(tp, EN["limit_reached"], euros(START))
    seen = shown(tp)
    assert EN["phase"] in seen["phase"], seen  # PHASE_NAMES.debiting, while it was asked
    assert EN["debiting"] in seen["message"], seen
    assert seen["message"].index(EN["debiting"]) < seen["message"].index(EN["limit_reached"])
    # Nothing stood: the round ended undealt and the next one is open, nothing dealt.
    tp.page.wait_for_function(
        f"() => chemmyPage.state.phase === 'betting' && chemmyPage.state.coup === null"
        f" && `${{chemmyPage.state.table}}-${{chemmyPage.state.shoe.no}}-${{chemmyPage.state.coupNo}}` !== {first!r}",
        timeout=ms(10),
    )
    expect(tp.page.locator("#hands .card")).to_have_count(0)
    refused = wallet.wait_for_log(lambda r: r["endpoint"] == "debit" and r["player"] == pid)
    assert refused["status"] == "limit_reached", refused
    assert wallet.balance(pid) == START

    # -- coup 2: the wallet does not answer in time (wallet_unavailable)
    wallet.reset()
    wallet.faults({"endpoint": "debit", "fault": "timeout", "seconds": 30, "player": pid})
    bet_and_done(tp)
    phase = tp.page.locator("#phase")
    expect(phase).to_have_text(EN["phase"])  # the whole wallet_timeout long
    expect(tp.page.locator("#message")).to_have_text(EN["debiting"])
    expect(tp.page.locator("#layout .area[data-area='banker'] .pile")).to_have_count(1)
    tp.page.screenshot(path=str(artifacts / "wallet-debiting.png"), type="jpeg", quality=85)
    expect_refused(tp, EN["wallet_unavailable"], euros(START))
    tp.page.screenshot(path=str(artifacts / "wallet-refused.png"), type="jpeg", quality=85)
    wallet.reset()  # the held debit goes on late; Chemmy rolls it back
    wallet.wait_for_log(
        lambda r: r["endpoint"] == "rollback" and r["player"] == pid and r["http"] == 200
    )
    wait_for(lambda: wallet.balance(pid) == START, "the late debit rolled back")
    expect(tp.page.locator("#balance")).to_have_text(euros(wallet.balance(pid)))

    # -- coup 3: the wallet takes the bet; the coup is played out
    round_id = bet_and_done(tp)
    tp.toss_until_settled(round_id)
    debit = wallet.wait_for_log(lambda r: r["endpoint"] == "debit" and r["status"] == "ok")
    assert debit["player"] == pid and debit["transaction_id"] == f"{round_id}:{pid}:debit"
    # Once the wallet has the coup's credit (if any), the page shows its balance.
    net = tp.state("s.lastNet")
    wait_for(lambda: wallet.balance(pid) == START + net, f"the wallet to credit {net}")
    expect(tp.page.locator("#balance")).to_have_text(euros(START + net))


def test_in_french_under_a_french_token(
    server: ServerProcess, wallet: ReferenceWallet, open_page: Callable[..., Page]
) -> None:
    pid = "web-francoise"
    tp = open_table(open_page(), server, pid, "Françoise", "web-wallet-fr", language="fr")
    holder_ready(tp, 1)
    french = f"1{NNBSP}000,00{NBSP}€"
    expect(tp.page.locator("#balance")).to_have_text(french)
    wallet.faults(
        {"endpoint": "debit", "fault": "refuse", "code": "insufficient_funds", "player": pid},
        latency=scaled(0.3),
    )
    bet_and_done(tp)
    sentence = "Vos mises n'ont pas été placées : votre portefeuille n'a pas assez d'argent"
    message = tp.page.locator("#message")
    expect(message).to_have_text(sentence)
    expect(tp.page.locator("#balance")).to_have_text(french)
    expect(tp.page.locator("#bet")).to_have_text(f"0,00{NBSP}€")
    seen = shown(tp)
    assert "Débit des mises" in seen["phase"], seen
    assert "Rien ne va plus : le portefeuille débite les mises" in seen["message"], seen
    assert wallet.balance(pid) == START


def test_after_a_refused_debit_the_bar_shows_the_wallets_money(
    server: ServerProcess,
    wallet: ReferenceWallet,
    open_page: Callable[..., Page],
) -> None:
    """Issue 34 §3: the wallet's balance moved on its own (the player spent at the
    operator's other games) and refused the coup's debit; the bottom bar kept an old
    Available (30.00, then 10.00) while the wallet and the Cashier said 3.00. It shows
    the server's figure, which is the wallet's."""
    pid = "web-wilma"
    tp = open_table(open_page(), server, pid, "Wilma", "web-wallet-2")
    holder_ready(tp, 1)
    expect(tp.page.locator("#balance")).to_have_text(euros(START))
    wallet.set_player(pid, balance=300)  # €3.00 at the operator, spent elsewhere
    tp.chip(2)
    bet_and_done(tp)  # a €10.00 chip: more than the wallet holds, refused at the debit
    message = tp.page.locator("#message")
    expect(message).to_have_attribute("data-tone", "lose")
    expect(tp.page.locator("#balance")).to_have_text(euros(300))
    tp.page.click("#btn-cashier")
    expect(tp.page.locator("#cashier-available")).to_have_text(euros(300))
    assert wallet.balance(pid) == 300
