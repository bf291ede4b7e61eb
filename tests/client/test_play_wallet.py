"""``chemmy play`` headless (Textual's ``App.run_test``) at a seamless table (docs/wallet.md
§3): a real server with ``--wallet seamless`` (a subprocess) calling the reference
operator wallet (``examples/wallet``, another), which refuses debits on cue.

A EUR player sits, takes the shoe, bets and presses DONE:

- the wallet refuses the debit (``limit_reached``): the phase is ``debiting`` while it
  is asked, then the message line says the catalog's sentence
  (``ev.debit_refused.limit_reached``) and keeps it under the next round's news; the
  chips are off the layout and the balance line is the wallet's balance in euros;
- the next coup the wallet does not answer in time (a ``timeout`` fault past a short
  ``wallet_timeout``): ``ev.debit_refused.wallet_unavailable``, the same balance, and
  the late debit rolled back at the wallet;
- a coup the wallet takes, played out: the balance line is the wallet's after it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from client_helpers import at_table, model_of, text_of, until
from textual.pilot import Pilot

from client_cli.tui import ChemmyApp, CutScreen, Options
from server.process.auth import make_token
from tests.kit import ServerProcess, scaled
from tests.wallet.wallet_helpers import ReferenceWallet, reference_wallet

pytestmark = pytest.mark.slow  # a server subprocess, a wallet and a terminal: seconds each

SIZE = (150, 45)
SECRET = "chemmy-tui-wallet-secret-0123456789abcdef-0123"
START = 100_000  # the reference wallet's starting balance: €1,000.00
WALLET_TIMEOUT = 2.0
TIMERS = "{ betting = 30, squeeze = 30, third_card = 30, shoe_offer = 30, cut = 30, grace = 30 }"
LIMIT = "Your bets were not placed: they would go over a limit on your account"
UNAVAILABLE = "Your bets were not placed: your wallet did not answer in time. Nothing was taken"


@pytest.fixture(scope="module")
def wallet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceWallet]:
    with reference_wallet(tmp_path_factory.mktemp("tui-wallet"), start_balance=START) as w:
        yield w


@pytest.fixture(scope="module")
def seamless_server(
    tmp_path_factory: pytest.TempPathFactory, wallet: ReferenceWallet
) -> Iterator[ServerProcess]:
    config = f"""
jwt_secret = "{SECRET}"
guest = false
wallet = "seamless"
wallet_url = "{wallet.url}"
wallet_secret = "{wallet.secret}"
wallet_timeout = {scaled(WALLET_TIMEOUT):g}

[[tables]]
id = "tui-wallet"
name = "TUI wallet"
tier = "1-100"
currency = "EUR"
timers = {TIMERS}
"""
    server = ServerProcess(
        tmp_path_factory.mktemp("tui-wallet-server"), config, "--log-level", "warning"
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def wait_for(check: Callable[[], Any], what: str, seconds: float = 15) -> None:
    """Poll ``check`` (a call to the wallet: blocking, so off the app's loop)."""
    deadline = time.monotonic() + scaled(seconds)
    while not await asyncio.to_thread(check):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def take_the_shoe_and_cut(pilot: Pilot[Any], app: ChemmyApp) -> None:
    await at_table(pilot, app)
    await pilot.press("s")
    await until(pilot, lambda: app.model is not None and app.model.offered_to_me, "the offer")
    await pilot.press("y")
    await until(pilot, lambda: app.model is not None and app.model.i_cut, "the cut")
    await pilot.press("u")
    await until(pilot, lambda: isinstance(app.screen, CutScreen), "the cut dialog")
    await pilot.press("enter")
    await until(pilot, lambda: model_of(app).phase == "betting", "betting")


async def bet_and_done(pilot: Pilot[Any], app: ChemmyApp) -> str:
    """Chip 1 (€1.00) on Banker, DONE; the round bet on."""
    await until(pilot, lambda: model_of(app).can("done"), "betting open")
    m = model_of(app)
    round_id = f"{m.table_id}-{(m.shoe or {}).get('no')}-{m.coup_no}"
    await pilot.press("1", "b")
    await until(pilot, lambda: model_of(app).my_bets == {"banker": 100}, "€1.00 on Banker")
    assert "€1.00" in text_of(app, "#layout")
    await pilot.press("d")
    return round_id


async def phases_until(pilot: Pilot[Any], app: ChemmyApp, done: Callable[[], bool]) -> list[str]:
    """The phases the model went through until ``done()``."""
    seen: list[str] = []
    end = time.monotonic() + scaled(15)
    while not done():
        assert time.monotonic() < end, f"stuck: {model_of(app).message!r}, phases {seen}"
        if not seen or seen[-1] != model_of(app).phase:
            seen.append(model_of(app).phase)
        await pilot.pause(0.01)
    return seen


async def expect_refused(pilot: Pilot[Any], app: ChemmyApp, sentence: str) -> None:
    await until(pilot, lambda: sentence in text_of(app, "#message"), sentence)
    assert model_of(app).my_bets == {}
    assert "€1.00" not in text_of(app, "#layout")
    await pilot.pause(0.5)  # the next round's news comes at once: the refusal stays
    assert sentence in text_of(app, "#message")
    you = text_of(app, "#you")
    assert "balance €1,000.00" in you and "bet €0.00" in you, you


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_refused_debits_in_the_terminal(
    seamless_server: ServerProcess, wallet: ReferenceWallet
) -> None:
    pid = "tui-walt"
    wallet.reset()
    app = ChemmyApp(
        seamless_server.url,
        token=make_token(SECRET, pid, "Walt", currency="EUR"),
        table="tui-wallet",
        options=Options(speed=5, bell=False),
    )
    async with app.run_test(size=SIZE) as pilot:
        await take_the_shoe_and_cut(pilot, app)
        assert "balance €1,000.00" in text_of(app, "#you")
        assert model_of(app).balance == await asyncio.to_thread(wallet.balance, pid) == START

        # -- the wallet refuses: limit_reached
        await asyncio.to_thread(
            wallet.faults,
            {"endpoint": "debit", "fault": "refuse", "code": "limit_reached", "player": pid},
            latency=scaled(1.5),  # long enough to see debiting on a loaded machine
        )
        first = await bet_and_done(pilot, app)
        seen = await phases_until(pilot, app, lambda: LIMIT in text_of(app, "#message"))
        assert "debiting" in seen, seen
        await expect_refused(pilot, app, LIMIT)
        m = model_of(app)
        assert m.phase == "betting" and m.coup is None and m.coup_no == int(first[-1]) + 1
        assert LIMIT in m.log
        assert await asyncio.to_thread(wallet.balance, pid) == START

        # -- no answer in time: wallet_unavailable
        await asyncio.to_thread(wallet.reset)
        await asyncio.to_thread(
            wallet.faults, {"endpoint": "debit", "fault": "timeout", "seconds": 30, "player": pid}
        )
        asked = time.monotonic()  # (before the debit: its deadline runs from later)
        await bet_and_done(pilot, app)
        await until(
            pilot,
            lambda: (
                model_of(app).phase == "debiting"
                and "wallet is taking the bets" in text_of(app, "#message")
            ),
            "debiting, the wallet taking the bets",
        )
        await expect_refused(pilot, app, UNAVAILABLE)
        # Refused only once the wallet's time ran out: measured from before the bets, not
        # from a pause after debiting was seen (late on a loaded machine: it failed CI
        # runs, the pause outlasting what was left of the debit phase).
        assert time.monotonic() - asked >= scaled(WALLET_TIMEOUT)
        await asyncio.to_thread(wallet.reset)  # the held debit lands late: rolled back
        await wait_for(
            lambda: any(
                r["endpoint"] == "rollback" and r["player"] == pid and r["http"] == 200
                for r in wallet.log()
            ),
            "the rollback",
        )
        await wait_for(lambda: wallet.balance(pid) == START, "the balance back")

        # -- the wallet takes the bet: the coup is played out
        round_id = await bet_and_done(pilot, app)

        def settled() -> bool:
            last = model_of(app).last_coup
            return model_of(app).coup is None and last is not None and last.round_id == round_id

        end = time.monotonic() + scaled(30)
        while not settled():
            assert time.monotonic() < end, f"coup not settled: {model_of(app).message!r}"
            if model_of(app).my_turn and not model_of(app).squeezing:
                await pilot.press("space")
                await pilot.pause(0.2)
            await pilot.pause(0.05)
        net = model_of(app).last_net
        assert isinstance(net, int)
        await wait_for(lambda: wallet.balance(pid) == START + net, f"the wallet to credit {net}")
        await until(pilot, lambda: model_of(app).balance == START + net, "the balance")
        whole, cents = divmod(START + net, 100)
        assert f"balance €{whole:,}.{cents:02d}" in text_of(app, "#you")
