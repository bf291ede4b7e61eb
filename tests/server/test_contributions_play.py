"""A whole shoe over real sockets with three players contributing (issue 24,
docs/fairness.md §9).

Three seated players commit before the cut and reveal at ``reveal_opened`` (the test
kit's :class:`~tests.kit.Game` with ``contributors``); a spectator watches. The shoe is
then recomputed from nothing but what was published, the seed revealed at its end and the
values in ``contributions_closed``: every card dealt, in order, is the card the key puts
there; the shoe record lists the commitments and values, and ``chemmy verify`` accepts it
(and refuses it without the contributions).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from client_cli.main import main as chemmy
from server.engine.cards import burn_count
from server.engine.shoe import commitment, contribution_key, cut_order, shuffle_order
from tests.kit import Client, CoupLog, Game, table_def
from tests.kit.checks import check_coup, random_bets

FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}


@pytest.mark.slow
async def test_a_whole_shoe_with_three_contributions(net: Any, tmp_path: Path, capsys: Any) -> None:
    server = await net.start(
        **FAST, guest_balance=2_000_000, tables=(table_def("t1", decks=6, stop_offset=100),)
    )
    spectator = await net.guest(server, "msgpack", name="Watcher")
    await spectator.join("t1")
    clients: dict[str, Client] = {}
    for n, fmt in enumerate(["json", "msgpack", "json"], start=1):
        client = await net.player(server, f"p{n}", fmt, name=f"Player {n}")
        await client.join("t1")
        await client.call("sit", table="t1", seat=n)
        clients[client.player] = client
    balances = {pid: c.hello_reply["balance"] for pid, c in clients.items()}
    rng = random.Random(24)
    game = Game("t1", clients, spectator, rng=rng, contributors=tuple(clients))
    logs: list[CoupLog] = []
    while not spectator.events("t1", "shoe_ended"):
        log = await game.play_coup(random_bets(rng, list(clients)))
        check_coup(log, balances)
        logs.append(log)

    # What was published, in order: the commitments, the reveal, the values.
    committed = {
        e["data"]["player"]: e["data"]["commitment"]
        for e in spectator.events("t1", "contribution_committed")
    }
    assert set(committed) == set(clients)
    opened = spectator.events("t1", "reveal_opened")[0]["data"]
    assert sorted(opened["players"]) == sorted(clients)
    closed = spectator.events("t1", "contributions_closed")[0]["data"]
    assert closed["withheld"] == []
    values = {c["player"]: bytes.fromhex(c["value"]) for c in closed["contributions"]}
    assert set(values) == set(clients)
    for pid, value in values.items():
        assert hashlib.sha256(value).hexdigest() == committed[pid]
        assert value == game.values[pid, 1]  # each player's own secret
    kinds = [e["kind"] for e in spectator.events("t1")]
    assert kinds.index("contributions_closed") < kinds.index("shoe_cut") < kinds.index("burned")

    # Recomputed from the seed (revealed at the end) and the published values alone.
    ended = spectator.events("t1", "shoe_ended")[0]["data"]
    seed = bytes.fromhex(ended["seed"])
    assert commitment(seed) == spectator.snapshots["t1"]["shoe"]["commitment"]
    key = contribution_key(seed, values.values())
    cards = cut_order(shuffle_order(key, 6), game.cuts[0])
    burned = spectator.events("t1", "burned")[0]["data"]
    assert burned["card"] == cards[0] and burned["count"] == burn_count(cards[0])
    dealt = [c for log in logs for c in dealt_order(log)]
    start = 1 + burned["count"]
    assert dealt == cards[start : start + len(dealt)]
    # ... and not from the seed alone: the contributions made this order
    assert cut_order(shuffle_order(seed, 6), game.cuts[0]) != cards

    # The record lists them, and chemmy verify accepts it (and not without them).
    record = (await spectator.call("shoe_record", table="t1", shoe=1))["record"]
    assert record["contributions"] == [
        {"player": pid, "commitment": committed[pid], "value": values[pid].hex()}
        for pid in committed
    ]
    assert record["withheld"] == []
    path = tmp_path / "shoe.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    capsys.readouterr()
    assert chemmy(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 player contributions match their commitments" in out, out
    assert f"{len(logs)} coups match the shoe" in out
    path.write_text(json.dumps({**record, "contributions": [], "withheld": []}), encoding="utf-8")
    assert chemmy(["verify", str(path)]) == 1


def dealt_order(log: CoupLog) -> list[str]:
    """A coup's cards in the order the shoe dealt them (§2): P B P B, then the thirds."""
    p, b = log.player_cards, log.banker_cards
    return [p[0], b[0], p[1], b[1], *p[2:], *b[2:]]
