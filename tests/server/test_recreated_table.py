"""Issue 8, defect 2: a table closed and created again under the same id starts afresh.
A client that resumes the new table with an old ``since`` never gets the closed table's
events (the gateway's recent log and the stored log were both reused)."""

from __future__ import annotations

from typing import Any


async def test_a_recreated_table_replays_none_of_the_closed_ones_events(net: Any) -> None:
    server = await net.start()
    op = await net.player(server, "root", "msgpack", roles=("operator",))
    await op.call("create_table", table="t9")
    ann = await net.player(server, "ann")
    await ann.join("t9")
    await ann.call("sit", table="t9")
    old = ann.events("t9")
    assert len(old) >= 2  # at least the seat and the offer of the shoe
    await op.call("close_table", table="t9")
    await ann.wait_event("closed", table="t9")
    await op.call("create_table", table="t9")

    probe = await net.player(server, "bob", "json")
    reply = await probe.call("join", table="t9", since=1)
    await probe.wait_seq("t9", reply["seq"])
    replayed = probe.events("t9")
    if reply["resumed"]:  # only the new table's own events, if any
        assert all(e["kind"] != "sat" and e["kind"] != "closed" for e in replayed), replayed
    else:
        assert reply["snapshot"]["seats"] == [] and replayed == []
    assert reply["seq"] <= 2  # numbering started again (a shoe, then waiting)
