"""A routed cluster publishes a table's steps only while another process hears it
(``server.bus.audience``, placement by players; issue 36). Two real server processes over
a real Redis: with every client of a table on its owner, its steps stay on the owner (no
``SPUBLISH`` for a whole coup, ``chemmy_bus_unpublished_steps`` counting them); a spectator
joining on the other process is heard at once (its join is relayed to the owner), and the
game is driven from what that spectator sees, so every step must reach it live; the books
hold after it.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest

from server.bus.audience import HOLD
from tests.kit import Client, Game, open_guest, open_player, table_def
from tests.kit.checks import check_coup, random_bets
from tests.kit.cluster import check_books, metric
from tests.kit.timing import scaled

UNPUBLISHED = "chemmy_bus_unpublished_steps"


def spublished(cluster_: Any) -> int:
    return int(cluster_.redis.info("commandstats").get("cmdstat_spublish", {}).get("calls", 0))


@pytest.mark.slow  # two server processes, coups until the owner's first marks are over
async def test_a_tables_steps_stay_on_its_owner_until_a_spectator_elsewhere_joins(
    make_cluster: Any,
) -> None:
    cluster_ = make_cluster(2, [table_def("t1", decks=6, stop_offset=100)], placement="players")
    await cluster_.ready(tables=1)
    owner = cluster_.owner("t1")
    assert owner is not None
    other = cluster_.others(owner)[0]
    clients: dict[str, Client] = {}
    for n in (1, 2):
        client = await open_player(owner.url, f"p{n}", "msgpack" if n % 2 else "json")
        await client.join("t1")
        await client.call("sit", table="t1", seat=n)
        clients[f"p{n}"] = client
    home = await open_guest(owner.url, "json", name="Home")
    await home.join("t1")
    away: Client | None = None
    try:
        balances = {pid: c.hello_reply["balance"] for pid, c in clients.items()}  # type: ignore[index]
        rng = random.Random(20261208)
        game = Game("t1", clients, home, rng=rng)
        # The owner's mark from taking the table ends (audience.HOLD): then its steps
        # stay home, and a whole coup publishes nothing.
        until = time.monotonic() + scaled(HOLD * 3)
        while True:
            before = spublished(cluster_)
            check_coup(await game.play_coup(random_bets(rng, list(clients))), balances)
            if await metric(owner, UNPUBLISHED) > 0 and spublished(cluster_) == before:
                break
            assert time.monotonic() < until, "the owner published every step"
            await asyncio.sleep(0.5)
        assert await metric(other, UNPUBLISHED) == 0  # (it owns no table with events)

        # A spectator on the other process: its join goes to the owner, which from then
        # on publishes; the game waits on what this spectator sees.
        away = await open_guest(other.url, "msgpack", name="Away")
        await away.join("t1")
        before = spublished(cluster_)
        game = Game("t1", clients, away, rng=rng)
        for _ in range(2):
            check_coup(await game.play_coup(random_bets(rng, list(clients))), balances)
        assert spublished(cluster_) > before
        assert cluster_.owner("t1") is owner  # (two watchers and a player there still)
        for client in [home, away, *clients.values()]:
            client.assert_clean()
    finally:
        for client in [home, *([away] if away else []), *clients.values()]:
            await client.close()
    await check_books(cluster_.url, tables=["t1"])
