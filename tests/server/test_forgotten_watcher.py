"""A table's owner that does not know a watcher the gateway joined (it took the table
over, starting as after a restart, before the gateway's join again reached it): the
watcher's command is answered ``unavailable``, the gateway joins again, and the same
command retried with its id goes through. A real server on port 0."""

from __future__ import annotations

from server.gateway.server import ChemmyServer
from tests.kit.inproc import Net


async def test_a_forgotten_watcher_is_joined_again_and_retries(net: Net) -> None:
    server: ChemmyServer = await net.start()
    sam = await net.player(server, "sam", name="Sam")
    await sam.join("t1")
    actor = server.actors["t1"]
    del actor.table.players["sam"]  # (as a new owner knows nobody at first)
    refused = await sam.refused("unavailable", "sit", table="t1", msg_id="s1")
    assert "moved" in refused["message"]
    reply = await sam.call("sit", table="t1", msg_id="s1")
    assert reply["duplicate"] is False
    assert "sam" in actor.table.players and actor.table.players["sam"].seat is not None
