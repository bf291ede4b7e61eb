"""One write a watcher for each step the table publishes (server/gateway/hub.py ``_Out``):
the frames of a step's events (a burst of bettors' chips and chat lines, a coup's cards)
are gathered per connection and written together, not one system call a frame: at a
table of two thousand watchers each write cost tens of ms a frame (issue 37 §3). A real
server, real sockets; the server side of one watcher's connection is watched as it
writes."""

from __future__ import annotations

import random
from typing import Any

from tests.kit import Game, table_def

FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}


async def test_a_step_of_several_events_is_one_write_to_each_watcher(net: Any) -> None:
    server = await net.start(**FAST, tables=(table_def("t1"),))
    watcher = await net.guest(server, "json", name="Watcher")
    await watcher.join("t1")
    ann = await net.player(server, "ann", "msgpack", name="Ann")
    await ann.join("t1")
    await ann.call("sit", table="t1", seat=1)
    game = Game("t1", {"ann": ann}, watcher, rng=random.Random(3))
    await game.to_betting()
    await game.act("ann", "bet", area="banker", amount=100)
    (session,) = [
        s
        for s in server.sessions.values()
        if s.identity is not None and s.identity.player_id == watcher.player
    ]
    transport = session.conn.transport
    writes: list[bytes] = []
    write = transport.write

    def counted(data: Any) -> None:
        writes.append(bytes(data))
        write(data)

    transport.write = counted
    try:
        mark = watcher.last_seq["t1"]
        reply = await game.act("ann", "done")  # betting closes and the coup is dealt
        await watcher.wait_seq("t1", reply["seq"])
    finally:
        transport.write = write
    events = [e for e in watcher.events("t1") if e["seq"] > mark]
    assert len(events) >= 3, [e["kind"] for e in events]  # betting_closed, dealt, ...
    # The step's events in one write (the watcher asked nothing meanwhile).
    assert len(writes) == 1, (len(writes), [e["kind"] for e in events])
    assert all(f'"seq":{e["seq"]}'.encode() in writes[0] or f'"seq": {e["seq"]}'.encode()
               in writes[0] for e in events)  # fmt: skip
