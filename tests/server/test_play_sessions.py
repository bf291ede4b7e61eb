"""A player's play session is the player's, not a connection's (responsible play), over
real servers on port 0 and real WebSocket clients.

A reality check that came due stays due through a reconnect, is sent again to the new
connection, and holds its bets until answered; a second connection of the player sees
it too, and one answer clears it for both (each connection is sent it once, and the
others are told of the answer: ``reality_answered``, over Redis between processes). The
session's time limit counts from the session's start through a reconnect. A gap without
a connection longer than ``--session-gap`` begins a new session, a shorter one does
not, and an open connection keeps its session going however long. A restart of the
server (the same SQLite file) keeps the session and its due check; so does another
gateway over the same Redis (two processes of a cluster). A store that cannot be read
refuses the bet instead of letting it past the check, and a failed answer leaves the
check due.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from server.gateway.server import ChemmyServer
from server.protection import play_session
from server.protocol.errors import StoreUnavailable
from tests.kit.client import Client
from tests.kit.inproc import Net
from tests.kit.operator import audited

#: A reality check every 2.4 s of play.
EVERY = 0.04


def later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The play sessions' clock (``server.protection.play_session.now``) ``seconds`` ahead."""
    monkeypatch.setattr(play_session, "now", lambda: time.time() + seconds)


def is_check(message: dict[str, Any]) -> bool:
    return message.get("type") == "reality_check"


def is_answered(message: dict[str, Any]) -> bool:
    return message.get("type") == "reality_answered"


def checks(client: Client, start: int = 0) -> list[dict[str, Any]]:
    return [f.msg for f in client.frames[start:] if is_check(f.msg)]


async def gone(server: ChemmyServer, player: str) -> None:
    """Wait until ``server`` has seen ``player``'s connections close (and touched their
    session as they did)."""
    for _ in range(200):
        if not [s for s in server.sessions.values() if s.identity and s.player == player]:
            await asyncio.sleep(0.05)
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{player}'s connections stayed open")


async def session_of(client: Client) -> dict[str, Any]:
    reply = await client.call("limits")
    found = reply["session"]
    assert isinstance(found, dict)
    return found


async def bet(client: Client) -> dict[str, Any]:
    return await client.call("bet", table="t1", area="banker", amount=100)


async def due_refused(client: Client) -> None:
    await client.refused("reality_check_due", "bet", table="t1", area="banker", amount=100)


@pytest.mark.slow  # (waits for a reality check)
async def test_a_due_reality_check_survives_a_reconnect(net: Net) -> None:
    server = await net.start(reality_check=EVERY)
    ann, _bob, _game = await net.seated_pair(server)
    first = await ann.next_frame(is_check, timeout=10)
    started = (await session_of(ann))["started"]
    await due_refused(ann)
    mark = len(ann.frames)
    await ann.reconnect("t1")  # a new connection: the check is still due, and said again
    again = await ann.next_frame(is_check, start=mark, timeout=5)
    assert again.index > first.index and again.msg["session_seconds"] >= 2
    assert again.msg["every"] == EVERY
    assert ann.hello_reply is not None and ann.hello_reply["reality_check"] == EVERY
    session = await session_of(ann)
    assert session["started"] == started and session["reality_check_due"] is True
    assert session["next_reality_check"] == pytest.approx(started + EVERY * 60)
    await due_refused(ann)
    await ann.refused("reality_check_due", "same_bet", table="t1")
    assert (await ann.call("reality_ack", choice="continue"))["choice"] == "continue"
    await bet(ann)
    session = await session_of(ann)
    assert session["reality_check_due"] is False and session["started"] == started
    # The next one is the session's second period, not a period from the answer.
    assert session["next_reality_check"] == pytest.approx(started + 2 * EVERY * 60)
    await audited(server)


@pytest.mark.slow  # (waits for a reality check)
async def test_a_second_connection_sees_it_and_one_answer_clears_both(net: Net) -> None:
    server = await net.start(reality_check=EVERY)
    ann, _bob, _game = await net.seated_pair(server)
    other = await net.player(server, "ann", name="Ann")
    await other.join("t1")
    await ann.next_frame(is_check, timeout=10)
    await other.next_frame(is_check, timeout=5)
    await due_refused(other)
    await due_refused(ann)
    await other.refused("bad_choice", "reality_ack", choice="later")  # changes nothing
    await due_refused(other)
    await ann.call("reality_ack", choice="continue")
    # The other connection is told, so that it stops asking; the one that answered is not.
    told = await other.next_frame(is_answered, timeout=5)
    assert told.msg == {"type": "reality_answered", "choice": "continue"}
    assert not [f for f in ann.frames if is_answered(f.msg)]
    # Each connection was sent that check once (its timer, then the refusals and the
    # hello of the other did not send it again), up to the answer.
    assert len(checks(ann)) == 1 and len(checks(other)) == 1
    await bet(other)  # cleared for the other connection too
    await other.refused("no_reality_check", "reality_ack", choice="continue")
    await audited(server)


async def test_the_session_limit_survives_a_reconnect(
    net: Net, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await net.start()
    ann, _bob, _game = await net.seated_pair(server)
    await ann.call("set_limit", kind="session", amount=1)
    started = (await session_of(ann))["started"]
    later(monkeypatch, 61)  # a minute of play, without waiting one
    await ann.reconnect("t1")  # a new connection does not start the clock again
    over = await ann.refused("limit_reached", "bet", table="t1", area="banker", amount=100)
    assert over["limit"] == {"kind": "session", "amount": 1, "remaining": 0}
    reply = await ann.call("limits")
    assert reply["session"]["started"] == started and reply["session"]["seconds"] >= 61
    assert reply["limits"]["session"]["used"] == 1 and reply["limits"]["session"]["remaining"] == 0
    second = await net.player(server, "ann")  # nor does a second one
    await second.join("t1")
    await second.refused("limit_reached", "bet", table="t1", area="banker", amount=100)
    await audited(server)


@pytest.mark.slow
async def test_a_gap_longer_than_the_session_gap_starts_a_new_session(net: Net) -> None:
    server = await net.start(session_gap=0.02)  # 1.2 s
    ann = await net.player(server, "ann")
    started = (await session_of(ann))["started"]
    await ann.close()
    ann = await net.player(server, "ann")  # back at once: the same session
    assert (await session_of(ann))["started"] == started
    await ann.close()
    await asyncio.sleep(1.5)
    ann = await net.player(server, "ann")
    new = (await session_of(ann))["started"]
    assert new > started + 1.5


async def test_an_open_connection_keeps_its_session_going(
    net: Net, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await net.start()  # the default gap: 15 minutes
    ann = await net.player(server, "ann")
    bob = await net.player(server, "bob")
    started = (await session_of(ann))["started"]
    await bob.close()
    await gone(server, "bob")
    later(monkeypatch, 3600)  # an hour on; Ann's connection was open all along
    await server.touches.touch(server._playing())  # (the process's periodic touch)
    again = await net.player(server, "ann")
    assert (await session_of(again))["started"] == started
    bob = await net.player(server, "bob")  # Bob had none open: a new session
    assert (await session_of(bob))["started"] > started + 3000


@pytest.mark.slow  # (waits for a reality check)
async def test_a_restart_keeps_the_session_and_its_due_check(net: Net) -> None:
    server = await net.start(reality_check=EVERY)
    ann = await net.player(server, "ann")
    await ann.join("t1")
    await ann.next_frame(is_check, timeout=10)
    started = (await session_of(ann))["started"]
    await net.stop(server)
    server = await net.start(reality_check=EVERY)  # the same SQLite file
    ann = await net.player(server, "ann")
    await ann.next_frame(is_check, timeout=5)  # sent right after hello
    session = await session_of(ann)
    assert session["started"] == started and session["reality_check_due"] is True
    await ann.join("t1")
    await due_refused(ann)
    await ann.call("reality_ack", choice="continue")
    assert (await session_of(ann))["reality_check_due"] is False


@pytest.mark.slow  # (waits for a reality check)
async def test_a_due_check_holds_on_another_gateway_over_the_same_redis(
    net: Net, redis_url: str
) -> None:
    one = await net.start(store=redis_url, reality_check=EVERY)
    two = await net.start(store=redis_url, reality_check=EVERY)
    ann_one = await net.player(one, "ann")
    await ann_one.next_frame(is_check, timeout=10)
    ann_two = await net.player(two, "ann")
    await ann_two.next_frame(is_check, timeout=5)
    assert (await session_of(ann_two))["started"] == (await session_of(ann_one))["started"]
    await ann_two.join("t1")
    await due_refused(ann_two)
    await ann_one.call("reality_ack", choice="leave")
    # The other process's connection is told (a cluster notice over Redis).
    told = await ann_two.next_frame(is_answered, timeout=10)
    assert told.msg == {"type": "reality_answered", "choice": "leave"}
    assert not [f for f in ann_one.frames if is_answered(f.msg)]
    assert (await session_of(ann_two))["reality_check_due"] is False
    await ann_two.refused("no_reality_check", "reality_ack", choice="continue")


@pytest.mark.slow  # (waits for a reality check)
async def test_a_store_that_cannot_say_refuses_the_bet(
    net: Net, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await net.start(reality_check=EVERY)
    ann, _bob, _game = await net.seated_pair(server)
    await ann.next_frame(is_check, timeout=10)
    store = server.store
    read, reads, ack = store.play_session, store.bet_reads, store.ack_reality_check

    async def down(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("the disk is gone")

    monkeypatch.setattr(store, "play_session", down)
    monkeypatch.setattr(store, "bet_reads", down)  # (a bet's reads, together)
    await ann.refused("store_unavailable", "bet", table="t1", area="banker", amount=100)
    await ann.refused("store_unavailable", "reality_ack", choice="continue")
    monkeypatch.setattr(store, "play_session", read)
    monkeypatch.setattr(store, "bet_reads", reads)
    monkeypatch.setattr(store, "ack_reality_check", down)
    await ann.refused("store_unavailable", "reality_ack", choice="continue")
    monkeypatch.setattr(store, "ack_reality_check", ack)
    await due_refused(ann)  # still due: the failed answer changed nothing
    await ann.call("reality_ack", choice="continue")
    await bet(ann)
    await audited(server)


def test_an_open_connection_is_touched_every_quarter_gap_at_most_a_minute() -> None:
    assert play_session.touch_every(900.0) == 60.0
    assert play_session.touch_every(120.0) == 30.0


async def test_a_touch_names_every_player_once_in_short_calls() -> None:
    calls: list[tuple[list[str], float]] = []

    class Store:
        async def touch_play_sessions(self, players: list[str], now: float) -> None:
            calls.append((players, now))

    players = [f"p{n:04d}" for n in range(1201)]
    await play_session.touch(Store(), [*players, "p0001"], 123.0)  # type: ignore[arg-type]
    assert [len(names) for names, _ in calls] == [500, 500, 201]
    assert [name for names, _ in calls for name in names] == players
    assert {when for _, when in calls} == {123.0}
    calls.clear()
    await play_session.touch(Store(), [])  # type: ignore[arg-type]
    assert calls == []
