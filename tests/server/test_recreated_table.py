"""Issue 8, defect 2: a table closed and created again under the same id replays none
of the closed table's events. The new table numbers its events on from the closed
one's last ``seq`` (a ``seq`` is never used twice for one id), so no log, bus or client
can take one table's events for the other's: a resume from before the close finds the
events it asks for gone (a snapshot); a resume from the close itself gets the new
table's events only."""

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
    closed = await ann.wait_event("closed", table="t9")
    await op.call("create_table", table="t9")

    # From before the close: those events are not the new table's; a snapshot.
    probe = await net.player(server, "bob", "json")
    reply = await probe.call("join", table="t9", since=1)
    assert reply["resumed"] is False, reply
    assert reply["snapshot"]["seats"] == []
    assert reply["seq"] >= closed["seq"]  # numbered on, never again from 1
    seated = await probe.call("sit", table="t9")
    await probe.wait_seq("t9", seated["seq"])
    sat = [e for e in probe.events("t9") if e["kind"] == "sat"]
    assert [e["data"]["player"] for e in sat] == ["bob"] and sat[0]["seq"] > closed["seq"]

    # From the close: exactly the new table's events.
    late = await net.player(server, "cat", "json")
    start = len(late.frames)
    again = await late.call("join", table="t9", since=closed["seq"])
    assert again["resumed"] is True, again
    await late.call("ping")  # the replayed events come before this reply
    replayed = late.events("t9", start=start)
    assert [e["seq"] for e in replayed] == list(range(closed["seq"] + 1, again["seq"] + 1))
    assert [e["data"]["player"] for e in replayed if e["kind"] == "sat"] == ["bob"]
    assert all(e["kind"] != "closed" for e in replayed), replayed
    # Ann, who watched the closed table, is not subscribed to the new one by it.
    assert not [e for e in ann.events("t9") if e["seq"] > closed["seq"]]
