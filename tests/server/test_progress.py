"""A squeezed card's bend over real sockets: shown to every watcher, never stored.

``progress`` is a third of a busy table's steps (bench/evening.py), and a bend is of no
use once the card is turned, so the table shows it as a ``progress`` message (not an
event, docs/protocol.md §6 ``progress``): it has no ``seq`` of its own, the store is not
written for it, and a resume does not replay it. The server here is a real one on a
port and a real SQLite file; its store's ``commit`` is counted, not replaced. The test
kit's client also checks, for every test that squeezes, that each bend comes after the
event of its ``seq`` and before the next.
"""

from __future__ import annotations

from typing import Any

from server.gateway.server import ChemmyServer
from tests.kit import Client, Game, table_def

LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60, "grace": 60}


def count_commits(server: ChemmyServer) -> list[int]:
    """The store's commits from now on (the real ``commit``, counted)."""
    store, counted = server.store, [0]
    commit = store.commit

    async def counting(*args: Any, **kwargs: Any) -> Any:
        result = await commit(*args, **kwargs)
        counted[0] += 1
        return result

    store.commit = counting  # type: ignore[method-assign]
    return counted


def is_bend(m: dict[str, Any]) -> bool:
    return m.get("type") == "progress" and "turner" in m


async def squeezing(net: Any) -> tuple[ChemmyServer, Client, Client, Client, Game]:
    """ann (JSON) holds the shoe, bob (msgpack) squeezes the Player hand, spec watches."""
    server = await net.start(tables=(table_def("t1", timers=LONG),))
    ann = await net.player(server, "ann", "json")
    bob = await net.player(server, "bob", "msgpack")
    spec = await net.player(server, "spec", "json")
    for client in (ann, bob):
        await client.join("t1")
        await client.call("sit", table="t1")
    await spec.join("t1")
    game = Game("t1", {"ann": ann, "bob": bob}, spec)
    await game.act("ann", "accept_shoe")
    await game.to_betting()
    await game.act("ann", "bet", area="banker", amount=500)
    await game.act("bob", "bet", area="player", amount=700)
    await game.act("ann", "done")
    await game.act("bob", "done")
    await game.act("bob", "squeeze", hand="player", style="peek")
    return server, ann, bob, spec, game


async def test_a_bend_reaches_every_watcher_and_writes_nothing(net: Any) -> None:
    server, ann, bob, spec, game = await squeezing(net)
    seq = spec.last_seq["t1"]
    stored = await server.store.events_after("t1", seq - 1)
    assert stored is not None and [e["seq"] for e in stored] == [seq]  # the squeeze
    commits = count_commits(server)
    starts = [len(c.frames) for c in (ann, bob, spec)]

    reply = await bob.call("progress", table="t1", hand="player", card=1, percent=40)
    assert reply == {"type": "ok", "id": reply["id"], "seq": seq, "duplicate": False}
    want = {
        "type": "progress",
        "table": "t1",
        "seq": seq,  # the event it follows: it has none of its own
        "hand": "player",
        "card": 1,
        "percent": 40,
        "turner": "bob",
    }
    for client, start in zip((ann, bob, spec), starts, strict=True):
        assert await client.wait_frame(is_bend, start=start) == want  # msgpack's the same
        assert client.events("t1", start=start) == []  # not an event
    assert commits == [0]  # nothing stored
    assert await server.store.events_after("t1", seq) == []

    # Coalesced (the same instant, or not forward): answered ok, shown to nobody.
    for percent in (50, 30):
        again = await bob.call("progress", table="t1", hand="player", card=1, percent=percent)
        assert again["seq"] == seq and not again["duplicate"]
    await spec.call("ping")  # (after whatever the table sent before the ping's answer)
    assert [m for m in (f.msg for f in spec.frames[starts[2] :]) if is_bend(m)] == [want]

    # The next stored step follows with no gap, and is stored as every step is.
    turned = await game.act("bob", "turn", hand="player", card=1)
    assert turned["seq"] == seq + 1 and commits == [1]
    stored = await server.store.events_after("t1", seq - 1)
    assert stored is not None and [(e["seq"], e["kind"]) for e in stored] == [
        (seq, "squeeze"),
        (seq + 1, "card"),
    ]
    for client in (ann, bob, spec):
        client.assert_clean()  # every bend in order (tests/kit/client.py checks it)


async def test_a_resume_replays_the_events_and_no_bend(net: Any) -> None:
    server, _ann, bob, spec, game = await squeezing(net)
    seq = spec.last_seq["t1"]
    await bob.call("progress", table="t1", hand="player", card=1, percent=20)
    await game.act("bob", "turn", hand="player", card=1)
    late = await net.player(server, "late", "json")
    resumed = await late.call("join", table="t1", since=seq - 1)
    assert resumed["resumed"] is True and resumed["seq"] == seq + 1
    await late.wait_seq("t1", seq + 1)
    assert [e["kind"] for e in late.events("t1")] == ["squeeze", "card"]
    assert not any(is_bend(f.msg) for f in late.frames)
    # A bend from now on reaches the one who resumed, after the event it follows.
    start = len(late.frames)
    await bob.call("progress", table="t1", hand="player", card=2, percent=60)
    bend = await late.wait_frame(is_bend, start=start)
    assert bend["seq"] == seq + 1 and bend["percent"] == 60
    late.assert_clean()


async def test_the_stored_row_is_the_last_stored_steps(net: Any) -> None:
    """A bend changes the live table (the coalescing rule needs its last bend) and not
    its stored row: that is the last stored step's, whose next stored step carries the
    bend along. So a crash mid-squeeze resumes with the same cards, turner and style, and
    only the bend since is lost."""
    server, _ann, bob, _spec, game = await squeezing(net)

    async def stored_coup() -> dict[str, Any]:
        rows = {r.table_id: r for r in await server.store.load_tables()}
        coup = rows["t1"].state["coup"]
        assert isinstance(coup, dict)
        return coup

    before = await stored_coup()
    await bob.call("progress", table="t1", hand="player", card=1, percent=70)
    live = server.actors["t1"].table.coup
    assert live is not None and live.progress["player1"][0] == 70
    assert await stored_coup() == before  # nothing written
    assert before["progress"] == {} and before["style"] == "peek"
    await game.act("bob", "turn", hand="player", card=2)  # a stored step
    after = await stored_coup()
    assert after["progress"]["player1"][0] == 70 and after["player"][1]["up"] is True
