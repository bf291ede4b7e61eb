"""No ghost spectators (issue 18.8): a connection that says hello, sends ``join`` and
closes before the join's reply must not leave a spectator that the table never forgets.
The closing connection's tables were read before the pending join was added, so the
table never heard that the player had gone. Real sockets, a real server on port 0."""

from __future__ import annotations

import asyncio
import time

from tests.kit import scaled

ATTEMPTS = 60


async def spectators(observer, table: str = "t1") -> int:
    tables = {t["table"]: t for t in (await observer.call("tables"))["tables"]}
    return int(tables[table]["spectators"])


async def test_a_join_whose_connection_closes_first_leaves_no_spectator(net, server) -> None:
    observer = await net.player(server, "observer")
    for i in range(ATTEMPTS):
        ghost = await net.player(server, f"ghost{i}")
        await ghost.send({"type": "join", "id": "j", "table": "t1"})
        if i % 2:
            await asyncio.sleep(0)  # vary where in the join's travel the close falls
        await ghost.abort()
    deadline = time.monotonic() + scaled(10)
    while (left := await spectators(observer)) != 0:
        assert time.monotonic() < deadline, f"{left} ghost spectators still at t1"
        await asyncio.sleep(0.05)
    assert not server.actors["t1"].table.players, "the table still counts someone"
