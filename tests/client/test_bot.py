"""``chemmy bot`` against a real server: five bots play a whole shoe, and every bot's
final balance is its starting balance plus the results the server recorded for it;
the revealed shoe then verifies (``chemmy verify --table``). Also the command line,
the strategies' limits and the report's check."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from client_cli.bot import Bot, BotReport, choose_bets, play_bots
from client_cli.bot import Wallet as Memory
from client_cli.main import main
from client_cli.model import CardView, CoupView, Seat, TableModel
from tests.kit.timing import scaled

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
async def test_five_bots_play_a_whole_shoe(
    chemmy_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    strategies = ["banker", "player", "random", "martingale", "random"]
    bots = [
        Bot(
            url=chemmy_server.url,
            table="bots",
            name=f"Bot{i + 1}",
            strategy=strategies[i],
            rounds=1000,  # more than a shoe: the shoe's end stops them
            shoes=1,
            rng=random.Random(i),
            squeeze_rate=0.3,
        )
        for i in range(5)
    ]
    reports = await play_bots(bots, timeout=scaled(90))
    for r in reports:
        assert r.error is None, r
        assert r.final_balance == r.start_balance + r.recorded_net, r
        assert r.net == r.recorded_net
        assert r.rounds == r.recorded_rounds, r
    rounds = {r.rounds for r in reports}
    assert min(rounds) >= 25, (
        f"a 6-deck shoe stopped 100 cards from the end has ~40 coups: {rounds}"
    )
    assert sum(r.squeezes for r in reports) > 0 and sum(r.tosses for r in reports) > 0
    assert sum(r.shoes_held for r in reports) >= 1

    # The shoe is over and its seed revealed: chemmy verify --table checks it.
    capsys.readouterr()
    code = await asyncio.to_thread(
        main, ["verify", "--url", chemmy_server.url, "--table", "bots", "--shoe", "1"]
    )
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "OK: seed matches the commitment" in out


@pytest.mark.slow
async def test_bots_bet_without_a_seat_beside_seated_bots(chemmy_server: Any) -> None:
    """``--no-seat`` (GAME_RULES §5): two bots bet without a seat beside two seated
    ones: they play their rounds (the seated bots' DONE and the timer close the
    betting), turn the Player cards when theirs is the highest Player bet, and their
    balances move by exactly what the server recorded for them."""
    bots = [
        Bot(
            url=chemmy_server.url,
            table="bots-no-seat",
            name=f"Bot{i + 1}",
            strategy="player" if i % 2 else "random",
            # (the seated bots play on longer: a bettor refused a coup, too late on a
            # busy machine, still finds coups to play its rounds before they leave)
            rounds=6 if i >= 2 else 10,
            rng=random.Random(100 + i),
            unit=None if i < 2 else 500,  # (Bot4's 500 on Player: always the highest)
            seated=i < 2,
        )
        for i in range(4)
    ]
    reports = await play_bots(bots, timeout=scaled(90))
    for bot, r in zip(bots, reports, strict=True):
        assert r.error is None, r
        assert r.final_balance == r.start_balance + r.recorded_net, r
        assert r.rounds >= 6 and r.recorded_rounds >= 6, r
        if not bot.seated:
            assert r.shoes_held == 0  # never offered the shoe
    bettors = reports[2:]
    assert sum(r.squeezes + r.tosses for r in bettors) > 0  # a bettor turned the cards


@pytest.mark.slow  # a bot process plays coups: a second or more
def test_bot_command_line(chemmy_server: Any) -> None:
    """The console command: two bots, three rounds each, a JSON report, exit 0; the
    server from ``$CHEMMY_URL``."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "client_cli",
            "bot",
            "--table",
            "bots-cli",
            "--count",
            "2",
            "--strategy",
            "martingale",
            "--rounds",
            "3",
            "--seed",
            "7",
            "--json",
        ],
        cwd=ROOT,
        env={**os.environ, "CHEMMY_URL": chemmy_server.url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True and len(report["bots"]) == 2
    for bot in report["bots"]:
        assert bot["rounds"] == 3 and bot["recorded_rounds"] == 3
        assert bot["final_balance"] == bot["start_balance"] + bot["recorded_net"]


def test_bot_plain_report(chemmy_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "bot",
            "--url",
            chemmy_server.url,
            "--table",
            "bots-cli",
            "--count",
            "1",
            "--rounds",
            "1",
            "--seed",
            "1",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert out.splitlines()[0].split() == [
        "BOT",
        "ROUNDS",
        "START",
        "FINAL",
        "NET",
        "RECORDED",
        "CHECK",
    ]
    assert "Bot1" in out and " ok" in out


def test_bot_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bot", "--table", "t", "--strategy", "double"]) == 2
    assert main(["bot", "--table", "t", "--squeeze", "2"]) == 2
    assert main(["bot", "--table", "t", "--unit", "1.234"]) == 2
    assert main(["bot", "--table", "t", "--no-seat", "--squeeze", "-1"]) == 2
    assert main(["bot", "--url", "nope://x", "--table", "t"]) == 2
    err = capsys.readouterr().err
    assert err.count("chemmy: error:") == 5 and "ws://" in err
    # The URL as a positional argument (before --url) gets a pointer to --url.
    assert main(["bot", "ws://127.0.0.1:1", "--table", "t"]) == 2
    assert "--url" in capsys.readouterr().err


def test_unreachable_server_is_a_failed_report(
    capsys: pytest.CaptureFixture[str], refused_url: str
) -> None:
    code = main(["bot", "--url", refused_url, "--table", "t", "--timeout", "10"])
    out, _ = capsys.readouterr()
    assert code == 1 and "error" in out


def _model(limits: dict[str, int], available: int, areas: list[str] | None = None) -> TableModel:
    """A seated bot while betting is open, with the ``actions`` such a server sends: each
    area from the minimum to its maximum, capped by the funds (none under the minimum)."""
    seat = Seat(1, "me", "Me")
    areas = areas or ["player", "banker", "tie"]
    options = {"limits": limits, "areas": areas, "seats": 14}
    bounds = {}
    for area in areas:
        top = limits["max"] if area in ("player", "banker") else limits["tie_max"]
        if min(top, available) >= limits["min"]:
            bounds[area] = {"min": limits["min"], "max": min(top, available)}
    actions = {"done": {}, "stand": {}, **({"bet": {"areas": bounds}} if bounds else {})}
    return TableModel(
        me="me",
        phase="betting",
        options=options,
        seats={"me": seat},
        available=available,
        server_actions=actions,
    )


@pytest.mark.parametrize("strategy", ["banker", "player", "random", "martingale"])
def test_strategies_keep_within_limits_and_balance(strategy: str) -> None:
    limits = {"min": 100, "max": 1000, "tie_max": 150, "side_max": 150}
    area_max = {"player": 1000, "banker": 1000, "tie": 150}
    rng = random.Random(3)
    memory = Memory(losses=12)  # a long losing streak: martingale wants 4096 units
    for available in (50, 100, 250, 5000):
        model = _model(limits, available)
        for _ in range(50):
            bets = choose_bets(strategy, model, rng, memory)
            if available < 100:
                assert bets == {}
                continue
            ((area, amount),) = bets.items()
            assert 100 <= amount <= min(available, area_max[area])
            if strategy in ("banker", "player"):
                assert area == strategy


def test_martingale_doubles_after_a_loss() -> None:
    model = _model({"min": 100, "max": 10_000, "tie_max": 1500, "side_max": 1500}, 100_000)
    rng = random.Random(0)
    assert choose_bets("martingale", model, rng, Memory(0)) == {"banker": 100}
    assert choose_bets("martingale", model, rng, Memory(3)) == {"banker": 800}
    assert choose_bets("martingale", model, rng, Memory(10)) == {"banker": 10_000}


def test_strategies_keep_within_the_servers_bounds() -> None:
    """With the server's ``actions``, the bounds are its answer, not the table limits:
    here it lets the bot add at most 300 to Banker and nothing to Player."""
    actions = {
        "bet": {"areas": {"banker": {"min": 100, "max": 300}, "tie": {"min": 100, "max": 150}}},
        "done": {},
    }
    model = replace(
        _model({"min": 100, "max": 10_000, "tie_max": 1500, "side_max": 1500}, 100_000),
        server_actions=actions,
    )
    rng = random.Random(1)
    assert choose_bets("martingale", model, rng, Memory(5)) == {"banker": 300}
    assert choose_bets("player", model, rng, Memory(0)) == {
        "banker": 100
    }  # Player not open to it: Banker
    no_funds = replace(model, server_actions={"done": {}})
    assert choose_bets("banker", no_funds, rng, Memory(0)) == {}


def test_a_report_checks_the_books() -> None:
    r = BotReport(
        "B", "p", rounds=2, start_balance=1000, final_balance=1095, net=95, recorded_net=95
    )
    assert r.ok and r.to_dict()["ok"] is True
    assert not BotReport("B", "p", start_balance=1000, final_balance=1000, recorded_net=5).ok


async def test_a_bot_acts_on_the_servers_actions() -> None:
    """What a bot sends comes from the server's ``actions``: the cut within its bounds,
    bets within each area's, DONE, and the turn of the hand it is given."""
    bot = Bot(url="ws://unused", table="t", name="B", rng=random.Random(4), squeeze_rate=0.0)
    sent: list[tuple[str, dict[str, Any]]] = []

    async def act(kind: str, _play: Any, **fields: Any) -> bool:
        sent.append((kind, fields))
        return True

    bot._act = act  # type: ignore[method-assign]
    seated = _model({"min": 100, "max": 10_000, "tie_max": 1500, "side_max": 1500}, 100_000)

    await bot._decide(
        replace(seated, phase="cut", cutter="me", server_actions={"cut": {"min": 12, "max": 20}})
    )
    ((kind, fields),) = sent
    assert kind == "cut" and 12 <= fields["position"] <= 20

    sent.clear()
    betting = {"bet": {"areas": {"banker": {"min": 100, "max": 250}}}, "done": {}}
    await bot._decide(replace(seated, coup_no=2, server_actions=betting))
    assert sent == [("bet", {"area": "banker", "amount": 100}), ("done", {})]

    sent.clear()  # stale actions from before betting opened: wait for the server's
    await bot._decide(replace(seated, coup_no=3, server_actions={}))
    assert sent == [] and not bot.finished

    sent.clear()
    coup = CoupView("t-1-3", 3, player=(CardView(), CardView()), turners={"player": "me"})
    turning = replace(seated, phase="turn", coup=coup, server_actions={"toss": {"hand": "player"}})
    await bot._decide(turning)
    assert sent == [("toss", {"hand": "player"})]
