"""The terminal client in the player's currency (issue "Currency"): every amount it
shows, and every amount typed, in the currency the hello reply names, with as many
decimals as its minor units have (JPY none, EUR two, KWD three); play money exactly as
before (two decimals, no symbol)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from client_cli.bot import Bot, format_reports, play_bots
from client_cli.i18n import set_language
from client_cli.main import main
from client_cli.money import (
    current_currency,
    current_decimals,
    format_money,
    parse_money,
    set_currency,
)
from server.wallet.signing import signature_header
from tests.client.conftest import SECRET, SHORT
from tests.kit import ServerProcess
from tests.kit.operator import KEY
from tests.kit.timing import scaled

NBSP, NNBSP = "\u00a0", "\u202f"


@pytest.fixture(autouse=True)
def english() -> Any:
    set_language("en")
    yield
    set_language("en")


@pytest.mark.parametrize(
    ("currency", "minor", "text"),
    [
        (None, 123456, "1,234.56"),
        (None, -5, "-0.05"),
        ("EUR", 123456, "€1,234.56"),
        ("EUR", 5, "€0.05"),
        ("EUR", -100000, "-€1,000.00"),
        ("JPY", 123456, "¥123,456"),
        ("JPY", 0, "¥0"),
        ("KWD", 123456, "KWD123.456"),
        ("KWD", 5, "KWD0.005"),
    ],
)
def test_amounts_in_a_currency(currency: str | None, minor: int, text: str) -> None:
    assert format_money(minor, currency=currency) == text
    set_currency(currency)
    assert format_money(minor) == text  # the current currency, as a hello sets it


@pytest.mark.parametrize(
    ("lang", "currency", "text"),
    [
        ("fr", "EUR", f"1{NNBSP}234,56{NBSP}€"),
        ("de", "EUR", f"1.234,56{NBSP}€"),
        ("de", "JPY", f"123.456{NBSP}¥"),
        ("fr", None, f"1{NNBSP}234,56"),
    ],
)
def test_amounts_in_a_currency_and_a_language(lang: str, currency: str | None, text: str) -> None:
    assert format_money(123456, lang=lang, currency=currency) == text


def test_signs_and_play_money_as_before() -> None:
    set_currency("EUR", 2)
    assert format_money(950, sign=True) == "+€9.50"
    assert format_money(0, sign=True) == "€0.00"
    set_currency(None)
    assert (format_money(950, sign=True), format_money(123456)) == ("+9.50", "1,234.56")
    assert (current_currency(), current_decimals()) == (None, 2)


def test_the_hellos_currency_and_decimals() -> None:
    assert set_currency("JPY", 0) == "JPY" and current_decimals() == 0
    assert set_currency("KWD", None) == "KWD" and current_decimals() == 3  # Babel's
    assert set_currency("NOPE", 2) is None and current_decimals() == 2  # unknown: play money


@pytest.mark.parametrize(
    ("currency", "text", "minor"),
    [
        (None, "12.50", 1250),
        ("EUR", "12.50", 1250),
        ("EUR", "€12.50", 1250),
        ("EUR", "1,000", 100000),
        ("JPY", "1,000", 1000),
        ("JPY", "¥500", 500),
        ("KWD", "1.234", 1234),
        ("KWD", "2", 2000),
    ],
)
def test_typed_amounts_in_the_currencys_minor_units(
    currency: str | None, text: str, minor: int
) -> None:
    assert parse_money(text, currency=currency) == minor
    set_currency(currency)
    assert parse_money(text) == minor


@pytest.mark.parametrize(
    ("currency", "text", "words"),
    [
        ("JPY", "12.50", "no decimals in JPY"),
        ("EUR", "1.234", "at most two decimals"),
        ("KWD", "1.2345", "at most three decimals"),
        (None, "1.234", "at most two decimals"),
    ],
)
def test_too_many_decimals_are_refused(currency: str | None, text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_money(text, currency=currency)


def test_french_amounts_in_euros() -> None:
    set_language("fr")
    assert parse_money("12,5", currency="EUR") == 1250
    assert parse_money("1 000,00 €", currency="EUR") == 100000


def test_history_in_yen() -> None:
    from client_cli.scripts import format_history

    set_currency("JPY", 0)
    row = {
        "round_id": "yen-1-1",
        "result": "Banker wins 7 to 5",
        "player": ["5h", "Kd"],
        "banker": ["7s", "Qc"],
        "bets": {"player": 300},
        "net": -300,
        "balance_after": 99_700,
    }
    text = format_history({"player": "ken", "name": "Ken", "rounds": [row], "net": -300})
    assert "Player ¥300" in text and "-¥300" in text and "¥99,700" in text
    assert text.endswith("1 rounds, net -¥300")


# ------------------------------------------------------------------ over a real server

# Money in a currency is the operator's (issue 34 §7: a currency table needs a transfer
# or seamless wallet): these tables' server moves it in through the transfer API.
CURRENCY_CONFIG = f"""
jwt_secret = "{SECRET}"
wallet = "transfer"
operator_key = "{KEY}"

[[tables]]
id = "euro"
name = "Salon euro"
tier = "1-100"
currency = "EUR"
timers = {SHORT}

[[tables]]
id = "yen"
name = "Salon yen"
currency = "JPY"
min = 100
max = 100000
tie_max = 15000
side_max = 15000
timers = {SHORT}
"""


@pytest.fixture(scope="module")
def currency_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess(
        tmp_path_factory.mktemp("currency-server"), CURRENCY_CONFIG, "--log-level", "warning"
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def transfer_in(server: ServerProcess, player: str, amount: int, currency: str) -> None:
    """The operator moves ``amount`` of ``currency`` to ``player`` (docs/wallet.md §2)."""
    path = "/operator/v1/transfers/deposit"
    body = {"transaction_id": f"{player}-in", "player": player, "amount": amount}
    raw = json.dumps({**body, "currency": currency}).encode()
    headers = {
        "Content-Type": "application/json",
        "Idempotency-Key": uuid.uuid4().hex,
        "Chemmy-Signature": signature_header(KEY.encode(), time.time(), "POST", path, raw),
    }
    answer = httpx.post(f"http://127.0.0.1:{server.port}{path}", content=raw, headers=headers)
    assert answer.status_code == 200, answer.text


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def as_player(
    monkeypatch: pytest.MonkeyPatch, make_token: Callable[..., str], chemmy_server: Any
) -> Callable[..., str]:
    def use(player: str, currency: str | None, server: Any = chemmy_server) -> str:
        tok = make_token(player, player.capitalize(), currency=currency)
        monkeypatch.setenv("CHEMMY_TOKEN", tok)
        monkeypatch.setenv("CHEMMY_URL", server.url)
        return tok

    return use


def test_a_euro_player_sees_euros_and_euro_tables(
    as_player: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    currency_server: ServerProcess,
) -> None:
    transfer_in(currency_server, "cur-eve", 100_000, "EUR")
    as_player("cur-eve", "EUR", currency_server)
    code, out, err = run(capsys, "tables")
    assert code == 0, err
    assert "Salon euro" in out and "€1.00-€100.00" in out and "€15.00" in out
    assert "Salon yen" not in out
    code, out, err = run(capsys, "balance")
    assert code == 0 and "Balance €1,000.00" in out, (out, err)
    code, out, err = run(capsys, "deposit", "12.50", "--key", "eve-1")
    assert code != 0 and "deposits_closed" in err, (out, err)  # the operator's site's


def test_a_yen_player_types_and_sees_no_decimals(
    as_player: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    currency_server: ServerProcess,
) -> None:
    transfer_in(currency_server, "cur-ken", 101_000, "JPY")
    as_player("cur-ken", "JPY", currency_server)
    code, out, err = run(capsys, "tables")
    assert code == 0 and "¥100-¥100,000" in out and "Salon euro" not in out, (out, err)
    code, out, err = run(capsys, "balance")
    assert code == 0 and "Balance ¥101,000" in out, (out, err)
    code, out, err = run(capsys, "deposit", "12.50", "--key", "ken-2")
    assert code != 0 and "no decimals in JPY" in err, (out, err)
    code, out, err = run(capsys, "balance", "--json")
    assert json.loads(out)["balance"] == 101_000  # minor units: yen


def test_a_play_money_player_sees_what_they_always_saw(
    as_player: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    as_player("cur-ann", None)
    code, out, err = run(capsys, "tables")
    assert code == 0 and "1.00-100.00" in out and "€" not in out and "¥" not in out
    code, out, err = run(capsys, "balance")
    assert "Balance 1,000.00" in out, (out, err)


async def test_a_bots_unit_is_read_in_its_currency(
    currency_server: ServerProcess, make_token: Callable[..., str]
) -> None:
    chemmy_server = currency_server
    transfer_in(currency_server, "cur-yenbot", 100_000, "JPY")
    bot = Bot(
        url=chemmy_server.url,
        table="yen",
        name="YenBot",
        rounds=1,
        token=make_token("cur-yenbot", "YenBot", currency="JPY"),
        unit_text="300",
    )
    (report,) = await play_bots([bot], scaled(60))
    assert report.error is None and report.ok, report
    assert bot.unit == 300  # ¥300: no minor unit
    text = format_reports([report], "yen", "banker", 1.0)
    assert "¥" in text and "." not in text.split("\n")[1].split("¥", 1)[1].split()[0]
    wrong = Bot(
        url=chemmy_server.url,
        table="yen",
        name="YenBot2",
        token=make_token("cur-yenbot2", "YenBot2", currency="JPY"),
        unit_text="2.50",
    )
    (report,) = await play_bots([wrong], scaled(60))
    assert report.error is not None and "no decimals in JPY" in report.error
