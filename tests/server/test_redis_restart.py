"""What a restart keeps, on Redis as on SQLite (issue 10, "Events survive a restart").

A server (in this process) on SQLite or on the test's Redis (``[redis]``: a one-process
cluster) is stopped and a new one started on the same store:

- a player who dropped before the restart and resumes with ``since`` after it gets
  exactly the events they missed (stored with each step), not a snapshot: the seqs run on
  without a gap, the part played while they were away is what a spectator saw live, and
  every event is the stored one as that player may see it;
- a guest keeps their seat: their resume token is signed with a key kept in the store
  (``secret("guest-resume")``), so the new process accepts it and knows the guest.
"""

from __future__ import annotations

from typing import Any

import pytest

from server.table.views import view, view_event
from server.vocabulary.events import Event
from tests.kit import Game, table_def
from tests.kit.checks import check_public_views_agree

LONG = dict.fromkeys(("betting", "squeeze", "third_card", "shoe_offer", "cut", "grace"), 600)


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest) -> dict[str, Any]:
    """``net.start`` settings: the default SQLite file, or the test's Redis."""
    if request.param == "redis":
        return {"store": str(request.getfixturevalue("redis_url"))}
    return {}


async def test_a_resume_after_a_restart_gets_exactly_the_missed_events(
    net: Any, store: dict[str, Any]
) -> None:
    tables = (table_def("t1", timers=LONG),)
    server = await net.start(**store, tables=tables)
    cat = await net.player(server, "cat", "msgpack")  # watches throughout
    await cat.join("t1")
    ann = await net.player(server, "ann")
    bob = await net.player(server, "bob", "msgpack")
    for client in (ann, bob):
        await client.join("t1")
        await client.call("sit", table="t1")
    game = Game("t1", {"ann": ann, "bob": bob}, cat)
    await game.to_betting()
    await game.act("ann", "bet", area="banker", amount=500)
    last = ann.last_seq["t1"]
    await ann.abort()  # ann's connection drops; the table goes on without her
    await cat.wait_event("disconnected", lambda e: e["data"]["player"] == "ann", table="t1")
    await game.act("bob", "bet", area="player", amount=700)
    await game.act("bob", "bet", area="tie", amount=100)
    await game.act("bob", "remove_bet", area="tie")
    watched = cat.last_seq["t1"]

    await net.stop(server)
    server = await net.start(**store, tables=tables)
    ann.url = f"ws://127.0.0.1:{server.port}/"
    reply = await ann.reconnect("t1")
    assert reply is not None and reply["resumed"] is True and "snapshot" not in reply, reply
    await ann.wait_seq("t1", reply["seq"])
    ann.assert_clean()
    missed = [e for e in ann.events("t1") if e["seq"] > last]
    assert [e["seq"] for e in missed] == list(range(last + 1, reply["seq"] + 1))
    # What she missed before the restart is what the spectator saw then (her own view
    # of it: public parts alike); after it, the restart's and her return.
    before = [e for e in missed if e["seq"] <= watched]
    assert [e["kind"] for e in before] == [
        e["kind"] for e in cat.events("t1") if last < e["seq"] <= watched
    ]
    assert before[0]["kind"] == "disconnected" and before[0]["data"]["player"] == "ann"
    check_public_views_agree(cat, [ann], "t1")
    after = [(e["kind"], e["data"].get("player")) for e in missed if e["seq"] > watched]
    assert ("disconnected", "bob") in after and after[-1] == ("reconnected", "ann"), after
    # Each is the stored event as ann may see it (bob's private parts are not hers).
    stored = await server.store.events_after("t1", last)
    assert stored is not None and len(stored) == len(missed)
    for sent, kept in zip(missed, stored, strict=True):
        assert sent == {"type": "event", "table": "t1", **view_event(Event.from_dict(kept), "ann")}
    # And the table is as she left it: her chips, bob's, betting open.
    snap = view(server.actors["t1"].table, "ann")
    assert snap["phase"] == "betting" and snap["you"]["bets"] == {"banker": 500}
    assert {s["player"]: s["bets"] for s in snap["seats"]} == {
        "ann": {"banker": 500},
        "bob": {"player": 700},
    }


async def test_a_guest_keeps_their_seat_across_a_restart(net: Any, store: dict[str, Any]) -> None:
    server = await net.start(**store)
    key = await server.store.secret("guest-resume")
    ann = await net.guest(server, "msgpack", name="Ann")
    token = ann.hello_reply["resume"]
    await ann.join("t1")
    sat = await ann.call("sit", table="t1", seat=4)
    await net.stop(server)

    server = await net.start(**store)
    assert await server.store.secret("guest-resume") == key  # kept, not made anew
    ann.url = f"ws://127.0.0.1:{server.port}/"
    await ann.open()
    again = await ann.call("hello", guest=True, resume=token)
    assert (again["player"], again["name"]) == (ann.player, "Ann")
    assert again["balance"] == server.config.guest_balance  # stored when she sat
    joined = await ann.call("join", table="t1", since=sat["seq"])
    assert joined["resumed"] is True
    await ann.wait_seq("t1", joined["seq"])
    kinds = [(e["kind"], e["data"].get("player")) for e in ann.events("t1")]
    assert kinds[-1] == ("reconnected", ann.player), kinds
    seats = view(server.actors["t1"].table, None)["seats"]
    assert [(s["seat"], s["player"], s["connected"]) for s in seats] == [(4, ann.player, True)]
    # A token the restarted server would not have signed is still refused.
    other = await net.connect(server)
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    refused = await other.rpc("hello", guest=True, resume=forged)
    assert (refused["type"], refused["code"]) == ("error", "bad_token"), refused
