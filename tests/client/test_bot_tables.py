"""``chemmy bot`` at several tables and as token players (issue 37 §2), against a real
server: a bot plays two tables on one connection and its report, per table and in total,
agrees with the server's records; bots play as the operator's players with tokens from a
file or signed with the server's secret, their rounds recorded under the tokens' player
ids; a bad or expired token stops the run before anything is played; and token bots
load a seamless wallet (the reference operator wallet), their wagers debited and
credited there under their player ids and sessions."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from conftest import SECRET

from client_cli.main import main
from tests.kit import ServerProcess, scaled
from tests.kit.client import open_player
from tests.wallet.wallet_helpers import ReferenceWallet, reference_wallet

pytestmark = pytest.mark.slow  # bots play real coups: seconds each


def run_bots(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    """``chemmy bot ARGS --json``: the exit status, the report, and stderr."""
    capsys.readouterr()
    code = main(["bot", *args, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


async def recorded(url: str, player: str) -> list[dict[str, Any]]:
    """The player's rounds as the server recorded them (their own ``history``)."""
    client = await open_player(url, player, secret=SECRET)
    try:
        reply = await client.call("history", limit=100)
    finally:
        await client.close()
    return list(reply["rounds"])


async def test_a_bot_plays_two_tables(
    chemmy_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """One bot, two tables on one connection: it bets three rounds at each, and its
    report per table (rounds, the settlements' results) and in total (its balance)
    matches what the server recorded at each table."""
    url = chemmy_server.url
    code, report, err = await asyncio.to_thread(
        run_bots,
        capsys,
        *("--url", url, "--table", "bots-multi-a", "--table", "bots-multi-b"),
        *("--rounds", "3", "--seed", "5", "--strategy", "random", "--squeeze", "0"),
    )
    assert code == 0, (report, err)
    assert report["ok"] is True
    ((bot),) = report["bots"]
    assert set(bot["tables"]) == {"bots-multi-a", "bots-multi-b"}
    for name, part in bot["tables"].items():
        assert part["rounds"] == 3 and part["recorded_rounds"] == 3, (name, part)
        assert part["net"] == part["recorded_net"] and part["ok"] is True
        assert report["tables"][name]["rounds"] == 3
    assert bot["rounds"] == 6 and bot["recorded_rounds"] == 6
    assert bot["final_balance"] == bot["start_balance"] + bot["recorded_net"]
    assert bot["recorded_net"] == sum(p["recorded_net"] for p in bot["tables"].values())


async def test_token_bots_from_a_file_and_from_a_secret(
    chemmy_server: Any,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    make_token: Callable[..., str],
) -> None:
    """Bots as the operator's players: tokens from a file (one per bot), then tokens the
    bots sign with the server's secret; each bot is the token's player, and the server
    recorded its rounds under that player id."""
    url = chemmy_server.url
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(
        "# the operator's players\n"
        + make_token("tok-ann", "Ann")
        + "\n\n"
        + make_token("tok-bob", "Bob")
        + "\n"
    )
    code, report, err = await asyncio.to_thread(
        run_bots,
        capsys,
        *("--url", url, "--table", "bots-token", "--tokens", str(tokens), "--rounds", "2"),
    )
    assert code == 0 and report["ok"] is True, (report, err)
    assert [b["player"] for b in report["bots"]] == ["tok-ann", "tok-bob"]
    for bot in report["bots"]:
        rounds = await recorded(url, bot["player"])
        assert len(rounds) == bot["rounds"] == 2
        mine = [p for r in rounds for p in r["bets"] if p["player"] == bot["player"]]
        assert sum(p["returned"] - p["stake"] for p in mine) == bot["recorded_net"]

    # The bots sign their own tokens with the secret given in a file.
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    code, report, err = await asyncio.to_thread(
        run_bots,
        capsys,
        *("--url", url, "--table", "bots-token", "--count", "2", "--rounds", "2"),
        *("--token-secret-file", str(secret_file), "--player-prefix", "signed-"),
    )
    assert code == 0 and report["ok"] is True, (report, err)
    assert [b["player"] for b in report["bots"]] == ["signed-1", "signed-2"]
    for bot in report["bots"]:
        assert len(await recorded(url, bot["player"])) == 2

    # The same players again: only this run's rounds are in its report.
    code, report, err = await asyncio.to_thread(
        run_bots,
        capsys,
        *("--url", url, "--table", "bots-token", "--count", "1", "--rounds", "1"),
        *("--token-secret", SECRET, "--player-prefix", "signed-"),
    )
    assert code == 0 and report["ok"] is True, (report, err)
    ((bot),) = report["bots"]
    assert bot["player"] == "signed-1" and bot["recorded_rounds"] == 1
    assert len(await recorded(url, "signed-1")) == 3


async def test_a_bad_token_is_refused_and_nothing_is_played(
    chemmy_server: Any,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    make_token: Callable[..., str],
) -> None:
    url = chemmy_server.url
    good = make_token("tok-good", "Good")
    cases = {
        # expired: refused before anything is sent
        "expired": jwt.encode(
            {"sub": "tok-old", "exp": int(time.time()) - 60}, SECRET, algorithm="HS256"
        ),
        "not a token": "hello-there",
        # signed with another secret: the server refuses it at hello
        "forged": jwt.encode(
            {"sub": "tok-forged", "exp": int(time.time()) + 600},
            "not-the-servers-secret-0123456789abcdef",
            algorithm="HS256",
        ),
    }
    for what, bad in cases.items():
        path = tmp_path / f"{what}.txt"
        path.write_text(f"{good}\n{bad}\n")
        code, report, err = await asyncio.to_thread(
            run_bots, capsys, "--url", url, "--table", "bots-token", "--tokens", str(path)
        )
        assert code == 2 and report == {}, (what, report, err)
        assert err.startswith("chemmy: error: bot:") and bad not in err, err
        if what == "forged":
            assert "refused Bot2's token (bad_token" in err and "nothing was played" in err
        else:
            assert "token 2 of" in err and ("expired" in err or "not a player token" in err)
    assert await recorded(url, "tok-good") == []  # the good bot never bet either

    code, _report, err = await asyncio.to_thread(
        run_bots, capsys, "--url", url, "--table", "bots-token", "--token-secret", "short"
    )
    assert code == 2 and "fewer than 32 bytes" in err
    two = tmp_path / "two.txt"
    two.write_text(f"{good}\n{make_token('tok-good2')}\n")
    code, _report, err = await asyncio.to_thread(
        run_bots,
        capsys,
        *("--url", url, "--table", "bots-token", "--tokens", str(two), "--count", "3"),
    )
    assert code == 2 and "--count 3 but" in err


# ------------------------------------------------------------------ a seamless wallet

WALLET_START = 50_000  # €500.00 each at the reference wallet
WALLET_SECRET = "chemmy-bot-wallet-secret-0123456789abcdef-0123"


@pytest.fixture(scope="module")
def wallet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceWallet]:
    with reference_wallet(
        tmp_path_factory.mktemp("bot-wallet"), start_balance=WALLET_START
    ) as made:
        yield made


@pytest.fixture(scope="module")
def seamless_server(
    tmp_path_factory: pytest.TempPathFactory, wallet: ReferenceWallet
) -> Iterator[ServerProcess]:
    timers = "{ betting = 1, squeeze = 2, third_card = 2, shoe_offer = 2, cut = 2, grace = 5 }"
    config = f"""
jwt_secret = "{WALLET_SECRET}"
guest = false
wallet = "seamless"
wallet_url = "{wallet.url}"
wallet_secret = "{wallet.secret}"
wallet_timeout = {scaled(3.0):g}

[[tables]]
id = "bots-eur-a"
name = "Bots in euros"
tier = "1-100"
currency = "EUR"
timers = {timers}

[[tables]]
id = "bots-eur-b"
name = "Bots in euros, two"
tier = "1-100"
currency = "EUR"
timers = {timers}
"""
    server = ServerProcess(
        tmp_path_factory.mktemp("bot-wallet-server"), config, "--log-level", "warning"
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_token_bots_load_a_seamless_wallet(
    seamless_server: ServerProcess, wallet: ReferenceWallet, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two bots sign EUR tokens with the operator's secret and play two tables of a
    seamless server: every wager is debited at the operator's wallet under the bot's
    player id and its own session, each bot's final balance is the wallet's, and what
    it recorded matches the wallet's movement."""
    code, report, err = await asyncio.to_thread(
        run_bots,
        capsys,
        *("--url", seamless_server.url, "--table", "bots-eur-a", "--table", "bots-eur-b"),
        *("--count", "2", "--rounds", "2", "--squeeze", "0"),
        *("--token-secret", WALLET_SECRET, "--currency", "EUR", "--player-prefix", "op-"),
    )
    assert code == 0 and report["ok"] is True, (report, err)
    log = await asyncio.to_thread(wallet.log)
    for bot in report["bots"]:
        pid = bot["player"]
        assert bot["start_balance"] == WALLET_START and bot["rounds"] == 4
        debits = [e for e in log if e["endpoint"] == "debit" and e["player"] == pid]
        assert len({e["transaction_id"] for e in debits}) >= 4, debits
        sessions = {e["session"] for e in debits}
        assert len(sessions) == 1 and str(sessions.pop()).startswith("chemmy-bot-")

        async def settled(pid: str = pid, bot: dict[str, Any] = bot) -> bool:
            balance = await asyncio.to_thread(wallet.balance, pid)
            return bool(balance == bot["final_balance"])

        deadline = time.monotonic() + scaled(15)
        while not await settled():
            assert time.monotonic() < deadline, f"the wallet's balance of {pid}"
            await asyncio.sleep(0.05)
        assert bot["final_balance"] == WALLET_START + bot["recorded_net"]
    assert {b["player"] for b in report["bots"]} == {"op-1", "op-2"}
