"""The clients' own randomness in every shoe (docs/fairness.md §9): the terminal client
and the bots commit and reveal by themselves (:class:`client_cli.contribute.Contributor`),
from the platform's secure generator, once each per shoe, as the server's actions say."""

from __future__ import annotations

import hashlib
import random
from typing import Any

from client_cli.bot import Bot, play_bots
from client_cli.contribute import Contributor
from client_cli.model import TableModel
from tests.kit.timing import scaled


def model(no: int | None, step: str | None) -> TableModel:
    actions = {"contribute": {"step": step}} if step else {}
    shoe = None if no is None else {"no": no, "commitment": "ab" * 32}
    return TableModel(me="ann", seq=1, shoe=shoe, server_actions=actions)


def test_commit_then_reveal_once_each_per_shoe() -> None:
    draws = iter([b"\x01" * 32, b"\x02" * 32])
    c = Contributor(draw=lambda n: next(draws))
    assert c.next(model(1, None)) is None and c.next(model(None, "commit")) is None
    first = c.next(model(1, "commit"))
    assert first == {"commitment": hashlib.sha256(b"\x01" * 32).hexdigest()}
    assert c.next(model(1, "commit")) is None  # once
    assert c.next(model(1, "reveal")) == {"value": (b"\x01" * 32).hex()}
    assert c.next(model(1, "reveal")) is None and c.revealed == {1}
    second = c.next(model(2, "commit"))  # a new shoe, a new value
    assert second == {"commitment": hashlib.sha256(b"\x02" * 32).hexdigest()}
    assert c.next(model(3, "reveal")) is None  # nothing committed to shoe 3 here


def test_the_values_come_from_the_secure_generator() -> None:
    a, b = Contributor(), Contributor()
    ca, cb = a.next(model(1, "commit")), b.next(model(1, "commit"))
    assert ca is not None and cb is not None and ca != cb
    assert len(a.values[1]) == 32


async def test_bots_contribute_by_themselves(chemmy_server: Any) -> None:
    bots = [
        Bot(
            url=chemmy_server.url,
            table="bots-contribute",
            name=f"Giver{i + 1}",
            rounds=2,
            rng=random.Random(i),
            squeeze_rate=0.0,
        )
        for i in range(2)
    ]
    reports = await play_bots(bots, timeout=scaled(60))
    assert all(r.error is None for r in reports), reports
    givers = [bot for bot in bots if bot.contributor.revealed]
    assert givers, "no bot contributed"
    for bot in givers:
        assert bot.model is not None and bot.model.shoe is not None
        entries = {c["player"]: c for c in bot.model.shoe["contributions"]}
        mine = entries[bot.model.me]
        no = bot.model.shoe["no"]
        assert mine["value"] == bot.contributor.values[no].hex()
        assert hashlib.sha256(bytes.fromhex(mine["value"])).hexdigest() == mine["commitment"]
