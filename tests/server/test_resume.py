"""Dropped connections and resuming over real sockets (§5 grace, §8 resume).

A player's socket is cut abruptly (``transport.abort()``, no closing handshake) in every
phase of play; the player comes back as the SAME player (a JWT token: guests are new
at every hello) and joins with ``since`` = the last seq received. The server must send
exactly the events missed, each as that player may see it, seqs continuing with no gap
and no duplicate; the seat is held through the grace period, and a player who stays
away longer is stood up. A ``since`` the server no longer holds gets a snapshot.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import server.gateway.hub as hub_module
from server.gateway.server import ChemmyServer
from server.store.base import (
    EVENT_RETENTION,
)
from server.table.views import view_event
from server.vocabulary.events import Event
from tests.kit import Client, CoupLog, Game, scaled, table_def

FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}


def logged(server: ChemmyServer, table: str, seq: int, viewer: str | None) -> dict[str, Any]:
    """What ``viewer`` should have received for event ``seq`` (from the server's own log)."""
    for event in server.hub.room(table).log:
        if event.seq == seq:
            return {"type": "event", "table": table, **view_event(event, viewer)}
    raise AssertionError(f"event {seq} is not in the log")


def check_stream(server: ChemmyServer, client: Client, table: str = "t1", start: int = 0) -> None:
    """Every event the client received is the logged event as that player sees it,
    and the seqs run on without a gap or a duplicate (across reconnections)."""
    client.assert_clean()
    events = client.events(table, start=start)
    for event in events:
        assert event == logged(server, table, event["seq"], client.player)


async def drop(client: Client, watcher: Client, table: str = "t1") -> int:
    """Cut the client's socket; wait until the table has noticed. Returns its last seq."""
    last = client.last_seq[table]
    await client.abort()
    event = await watcher.wait_event(
        "disconnected", lambda e: e["data"]["player"] == client.player, table=table, after=last
    )
    assert event["data"]["grace_deadline"] is not None  # seated: the seat is held
    return last


async def resume(
    server: ChemmyServer,
    client: Client,
    last: int,
    table: str = "t1",
    back: str | None = "reconnected",
) -> list[dict[str, Any]]:
    """Reconnect with since=last; return the missed events (checked exactly). The last one
    says the player is back (``reconnected``); once the grace ran out the player comes
    back as a spectator, which is no event (``back=None``)."""
    frames_before = len(client.frames)
    reply = await client.reconnect(table)
    assert reply is not None and reply["resumed"] is True and "snapshot" not in reply
    assert reply["seq"] > last
    await client.wait_seq(table, reply["seq"])
    missed = [e for e in client.events(table, start=frames_before) if e["seq"] <= reply["seq"]]
    assert [e["seq"] for e in missed] == list(range(last + 1, reply["seq"] + 1))  # no gap, no dup
    assert missed[0]["kind"] == "disconnected"
    if back is not None:
        assert missed[-1]["kind"] == back and missed[-1]["data"]["player"] == client.player
    check_stream(server, client, table)
    return missed


async def setup(net: Any, **table: Any) -> tuple[ChemmyServer, Client, Client, Client]:
    """ann (JSON, seat 1) and bob (msgpack, seat 2) seated, cat (msgpack) watching."""
    server = await net.start(**FAST, tables=(table_def("t1", **table),))
    cat = await net.player(server, "cat", "msgpack")
    await cat.join("t1")
    ann = await net.player(server, "ann", "json")
    bob = await net.player(server, "bob", "msgpack")
    for client in (ann, bob):
        await client.join("t1")
        await client.call("sit", table="t1")
    return server, ann, bob, cat


async def newcomer_sits(net: Any, server: ChemmyServer, name: str = "dan") -> Client:
    """Something happens while a player is away: somebody joins the table, sits down and
    stands up again (watching alone is no event)."""
    dan = await net.player(server, name, "json")
    await dan.join("t1")
    await dan.call("sit", table="t1")
    await dan.call("stand", table="t1")
    return dan


PHASES = ["shoe_offer", "cut", "betting", "turn", "settled"]


@pytest.mark.parametrize("phase", PHASES)
async def test_resume_in_every_phase(net: Any, phase: str) -> None:
    server, ann, bob, cat = await setup(net)
    game = Game("t1", {"ann": ann, "bob": bob}, cat)
    missed_actions: dict[str, Callable[[], Awaitable[Any]]] = {}

    if phase == "shoe_offer":  # ann (the lowest seat) is being offered the shoe
        assert game.prompt()["data"]["player"] == "ann"
        away, other = ann, bob
        missed_actions[phase] = lambda: newcomer_sits(net, server)
    elif phase == "cut":
        await game.act("ann", "accept_shoe")
        assert game.prompt()["kind"] == "cut_offered"
        away, other = ann, bob
        missed_actions[phase] = lambda: newcomer_sits(net, server)
    elif phase == "betting":
        await game.to_betting()
        await game.act("ann", "bet", area="banker", amount=500)
        away, other = ann, bob
        missed_actions[phase] = lambda: game.act("bob", "bet", area="player", amount=700)
    elif phase == "turn":
        await game.to_betting()
        await game.act("ann", "bet", area="banker", amount=500)
        await game.act("bob", "bet", area="player", amount=700)
        await game.act("ann", "done")
        await game.act("bob", "done")
        assert game.prompt()["data"]["turner"] == "bob"
        await game.act("bob", "squeeze", hand="player", style="peek")
        away, other = bob, ann
        missed_actions[phase] = lambda: newcomer_sits(net, server)
    else:
        await game.play_coup({"ann": {"banker": 500}, "bob": {"player": 700}})
        await game.to_betting()
        away, other = ann, bob
        missed_actions[phase] = lambda: game.act("bob", "bet", area="tie", amount=200)

    last = await drop(away, cat)
    await missed_actions[phase]()
    missed = await resume(server, away, last)
    kinds = [e["kind"] for e in missed]
    assert kinds[0] == "disconnected" and kinds[-1] == "reconnected"
    assert {"sat", "bets"} & set(kinds), kinds  # what happened while away came too
    assert not any(  # the seat was held
        e["kind"] == "stood" and e["data"]["player"] == away.player for e in missed
    )

    # The table goes on with the player who came back: finish this coup and one more.
    if phase == "shoe_offer":
        await game.act("ann", "accept_shoe")
    if phase == "turn":
        await game.act("bob", "turn", hand="player", card=1)
        await game.act("bob", "turn", hand="player", card=2)
        scratch = CoupLog("scratch", 0, None, {})
        while not any(e["kind"] == "settled" for e in cat.events("t1")):
            await game.turn_stage(game.prompt(), scratch)
    elif phase == "betting":
        log = await game.play_coup({})
        assert log.bets == {"ann": {"banker": 500}, "bob": {"player": 700}}
    elif phase == "settled":
        log = await game.play_coup({})
        assert log.bets == {"bob": {"tie": 200}}
    log = await game.play_coup({"ann": {"player": 300}, "bob": {"banker": 400}})
    assert set(log.private) == {"ann", "bob"}
    for client in (ann, bob, cat, other):
        check_stream(server, client)
    seats = {
        s["player"]: s["seat"] for s in (await cat.call("join", table="t1"))["snapshot"]["seats"]
    }
    assert seats == {"ann": 1, "bob": 2}


async def test_turner_reconnecting_without_since_sees_own_squeeze(net: Any) -> None:
    server, ann, bob, cat = await setup(net)
    game = Game("t1", {"ann": ann, "bob": bob}, cat)
    await game.to_betting()
    await game.act("bob", "bet", area="player", amount=700)
    await game.act("ann", "done")
    await game.act("bob", "done")
    reply = await game.act("bob", "squeeze", hand="player", style="quick")
    private = bob.events("t1", "squeeze")[-1]["data"]["cards"]
    assert "cards" not in cat.events("t1", "squeeze")[-1]["data"]
    await drop(bob, cat)
    rejoin = await bob.reconnect("t1", since=False)
    assert rejoin is not None and rejoin["resumed"] is False
    coup = rejoin["snapshot"]["coup"]
    assert [c["card"] for c in coup["player"]] == [private["1"], private["2"]]
    assert coup["style"] == "quick" and rejoin["snapshot"]["seq"] > reply["seq"]
    others = (await cat.call("join", table="t1"))["snapshot"]["coup"]
    assert [c["card"] for c in others["player"]] == [None, None]
    assert [c["card"] for c in others["banker"]] == [None, None]
    await game.act("bob", "turn", hand="player", card=2)
    card = cat.events("t1", "card")[-1]["data"]
    assert (card["index"], card["card"]) == (2, private["2"])
    for client in (ann, bob, cat):
        check_stream(server, client, start=client.snapshot_at["t1"])


async def test_seat_held_during_grace_then_stood_up(net: Any) -> None:
    server, ann, bob, cat = await setup(net, timers={"grace": 0.5})
    game = Game("t1", {"ann": ann, "bob": bob}, cat)
    await game.to_betting()  # ann holds the shoe
    last = await drop(ann, cat)
    during = (await cat.call("join", table="t1"))["snapshot"]
    seat = next(s for s in during["seats"] if s["player"] == "ann")
    assert seat["seat"] == 1 and seat["connected"] is False and during["holder"] == "ann"
    stood = await cat.wait_event(
        "stood", lambda e: e["data"]["player"] == "ann", table="t1", after=last, timeout=scaled(5)
    )
    assert stood["data"] == {
        "player": "ann",
        "seat": 1,
        "reason": "timeout",
        "free_seats": [1, *range(3, 15)],
        "totals": {},  # the felt (GAME_RULES §5)
        "bettors": 0,
    }
    passed = await cat.wait_event("shoe_passed", table="t1", after=last)
    assert passed["data"] == {"player": "ann", "reason": "timeout"}  # §5: loses the shoe too
    assert (await cat.wait_event("shoe_offered", table="t1", after=last))["data"]["player"] == "bob"
    # She is gone from the table (she is not there to watch it either).
    assert "ann" not in server.actors["t1"].table.players
    # She comes back later: resumed (the events are still held), as a newcomer.
    missed = await resume(server, ann, last, back=None)
    assert [e["kind"] for e in missed if e["kind"] == "stood"] == ["stood"]
    after = (await ann.call("join", table="t1"))["snapshot"]
    assert after["you"]["seat"] is None
    await ann.call("sit", table="t1")


@pytest.mark.slow
async def test_grace_running_out_mid_coup_waits_for_the_settlement(net: Any) -> None:
    server, ann, bob, cat = await setup(net, timers={"grace": 0.2, "squeeze": 1, "third_card": 0.3})
    game = Game("t1", {"ann": ann, "bob": bob}, cat)
    await game.to_betting()  # ann holds the shoe: she turns the Banker hand
    balance_before = await ann.balance()
    await game.act("ann", "bet", area="banker", amount=1_000)
    await game.act("bob", "bet", area="player", amount=500)
    await game.act("ann", "done")
    await game.act("bob", "done")
    last = await drop(ann, cat)
    grace_deadline = cat.events("t1", "disconnected")[-1]["data"]["grace_deadline"]
    await game.act("bob", "toss", hand="player")
    # The Banker hand waits for ann's squeeze timer, which ends after her grace did; her
    # wager is in play, so she keeps her seat until the coup is settled (§5, §8).
    turn = [e for e in cat.events("t1", "turn") if e["seq"] > last][-1]["data"]
    assert turn["turner"] == "ann" and turn["deadline"] > grace_deadline
    settled = await cat.wait_event("settled", table="t1", after=last, timeout=scaled(10))
    between = [e for e in cat.events("t1") if last < e["seq"] < settled["seq"]]
    assert not any(e["kind"] == "stood" for e in between)
    assert any(e["kind"] == "card" and e["data"]["on_behalf"] == "ann" for e in between)
    stood = await cat.wait_event(
        "stood", lambda e: e["data"]["player"] == "ann", table="t1", after=last
    )
    assert stood["seq"] > settled["seq"] and stood["data"]["reason"] == "timeout"
    net_win = sum(
        p["returned"] - p["stake"] for p in settled["data"]["payouts"] if p["player"] == "ann"
    )
    await resume(server, ann, last, back=None)
    assert await ann.balance() == balance_before + net_win  # she was paid
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]


async def test_resume_with_a_seq_too_old_gets_a_snapshot(
    net: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/protocol.md §5: a resume further back than the table's stored log (its last
    # EVENT_RETENTION events, 4,096) is answered with a snapshot; both logs are made
    # short here, to outrun them with a few commands.
    monkeypatch.setattr(hub_module, "RETAINED_EVENTS", 12)  # a short log, to outrun it
    server, ann, bob, cat = await setup(net)
    assert server.store.event_retention == EVENT_RETENTION == 4096  # what the docs say
    server.store.event_retention = 12  # and the stored log as short
    game = Game("t1", {"ann": ann, "bob": bob}, cat)
    await game.to_betting()
    last = await drop(ann, cat)
    for _ in range(8):  # 16 events: more than the log keeps
        await game.act("bob", "bet", area="player", amount=100)
        await game.act("bob", "clear_bets")
    log = server.hub.room("t1").log
    assert log[0].seq > last + 1
    frames_before = len(ann.frames)
    reply = await ann.reconnect("t1")
    assert reply is not None and reply["resumed"] is False
    snapshot = reply["snapshot"]
    assert snapshot["seq"] == reply["seq"] == server.actors["t1"].table.seq
    assert snapshot["you"]["seat"] == 1 and snapshot["phase"] == "betting"
    assert ann.events("t1", start=frames_before) == []  # a snapshot, not a replay
    # From the snapshot on, the stream continues without a gap.
    await game.act("bob", "bet", area="player", amount=100)
    assert ann.events("t1", start=frames_before)[0]["seq"] == snapshot["seq"] + 1
    ann.assert_clean()

    # The oldest seq still held resumes; one before it does not; a future one does not.
    first = log[0].seq
    probe = await net.player(server, "ann", "msgpack")
    ok = await probe.call("join", table="t1", since=first - 1)
    assert ok["resumed"] is True
    await probe.wait_seq("t1", ok["seq"])
    assert [e["seq"] for e in probe.events("t1")] == list(range(first, ok["seq"] + 1))
    probe2 = await net.player(server, "ann", "json")
    assert (await probe2.call("join", table="t1", since=first - 2))["resumed"] is False
    probe3 = await net.player(server, "ann", "json")
    assert (await probe3.call("join", table="t1", since=10**9))["resumed"] is False
    probe4 = await net.player(server, "ann", "json")
    assert (await probe4.call("join", table="t1", since=-1))["resumed"] is False


async def test_resume_past_the_recent_log_gets_the_events_from_the_stored_log(
    net: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hub keeps a table's last few events in memory (RETAINED_EVENTS, 256 by
    # default: a longer log was most of a busy process's memory); a resume from before
    # them is served from the table's stored log, still as events, not a snapshot.
    assert hub_module.RETAINED_EVENTS == 256
    monkeypatch.setattr(hub_module, "RETAINED_EVENTS", 6)
    server, ann, bob, cat = await setup(net)
    game = Game("t1", {"ann": ann, "bob": bob}, cat)
    await game.to_betting()
    last = await drop(ann, cat)
    for _ in range(5):  # 10 events: more than the recent log keeps
        await game.act("bob", "bet", area="player", amount=100)
        await game.act("bob", "clear_bets")
    log = server.hub.room("t1").log
    assert len(log) == 6 and log[0].seq > last + 1
    frames_before = len(ann.frames)
    reply = await ann.reconnect("t1")
    assert reply is not None and reply["resumed"] is True
    await ann.wait_seq("t1", reply["seq"])
    got = ann.events("t1", start=frames_before)
    assert [e["seq"] for e in got] == list(range(last + 1, reply["seq"] + 1))
    stored = [Event.from_dict(e) for e in await server.store.events_after("t1", last) or []]
    assert got == [{"type": "event", "table": "t1", **view_event(e, "ann")} for e in stored]
    ann.assert_clean()


async def test_resume_after_a_server_restart_gets_the_missed_events(net: Any) -> None:
    """The events are stored with each step: a client that resumes with ``since`` after a
    restart gets exactly the events it missed, not a snapshot (as long as they are kept)."""
    server, ann, bob, cat = await setup(net)
    game = Game("t1", {"ann": ann, "bob": bob}, cat)
    await game.to_betting()
    await game.act("ann", "bet", area="banker", amount=500)
    last = ann.last_seq["t1"]
    await net.stop(server)
    for client in (ann, bob, cat):
        assert await client.wait_closed() == 1001  # going away
    server2 = await net.start()
    for client in (ann, bob):
        client.url = f"ws://127.0.0.1:{server2.port}/"
    reply = await ann.reconnect("t1")
    assert reply is not None and reply["resumed"] is True and "snapshot" not in reply
    await ann.wait_seq("t1", reply["seq"])
    missed = [e for e in ann.events("t1") if e["seq"] > last]
    assert [e["seq"] for e in missed] == list(range(last + 1, reply["seq"] + 1))  # no gap
    # The restart left every seat held for the grace period; ann is back.
    kinds = [(e["kind"], e["data"].get("player")) for e in missed]
    assert ("disconnected", "ann") in kinds and ("disconnected", "bob") in kinds
    assert kinds[-1] == ("reconnected", "ann")
    reply = await bob.reconnect("t1", since=False)
    assert reply is not None and reply["snapshot"]["you"]["seat"] == 2
    you = reply["snapshot"]["you"]
    assert you["bets"] == {} and you["available"] == you["balance"]
    ann_now = (await ann.call("join", table="t1"))["snapshot"]["you"]
    assert ann_now["bets"] == {"banker": 500}
    assert ann_now["available"] == ann_now["balance"] - 500


async def test_players_who_never_come_back_after_a_restart_are_stood_up(net: Any) -> None:
    server, ann, bob, cat = await setup(net, timers={"grace": 0.3})
    game = Game("t1", {"ann": ann, "bob": bob}, cat)
    await game.to_betting()
    # The process dies (a crash, a kill -9): nothing after its last step is recorded, in
    # particular not that the sockets went away.
    server._left = lambda session: None  # type: ignore[method-assign]
    await net.stop(server)
    server2 = await net.start()
    # Only bob comes back; ann's socket died with the old process: her seat is held for
    # the grace period, then she is stood up (§5); the spectator is gone.
    bob.url = f"ws://127.0.0.1:{server2.port}/"
    reply = await bob.reconnect("t1", since=False)
    assert reply is not None
    seats = {s["player"]: s for s in reply["snapshot"]["seats"]}
    assert seats["ann"]["seat"] == 1 and seats["ann"]["connected"] is False
    assert reply["snapshot"]["spectators"] == 0
    stood = await bob.wait_event(
        "stood",
        lambda e: e["data"]["player"] == "ann",
        table="t1",
        after=reply["seq"],
        timeout=scaled(3),
    )
    assert stood["data"]["reason"] == "timeout"
