"""One write a watcher for each step the table publishes (server/gateway/hub.py ``_Out``):
the frames of a step's events (a burst of bettors' chips and chat lines, a coup's cards)
are gathered per connection and written together, not one system call a frame: at a
table of two thousand watchers each write cost tens of ms a frame (issue 37 §3). A real
server, real sockets; the server side of one watcher's connection is watched as it
writes."""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from server.gateway import hub
from tests.kit import Game, http_get, table_def

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
    with _writes(server, watcher.player) as written:
        mark = watcher.last_seq["t1"]
        reply = await game.act("ann", "done")  # betting closes and the coup is dealt
        await watcher.wait_seq("t1", reply["seq"])
    writes = [data for _, _, data in written]
    events = [e for e in watcher.events("t1") if e["seq"] > mark]
    assert len(events) >= 3, [e["kind"] for e in events]  # betting_closed, dealt, ...
    # The step's events in one write (the watcher asked nothing meanwhile).
    assert len(writes) == 1, (len(writes), [e["kind"] for e in events])
    assert all(f'"seq":{e["seq"]}'.encode() in writes[0] or f'"seq": {e["seq"]}'.encode()
               in writes[0] for e in events)  # fmt: skip


def _session_of(server: Any, player: str) -> Any:
    (session,) = [
        s
        for s in server.sessions.values()
        if s.identity is not None and s.identity.player_id == player
    ]
    return session


@contextlib.contextmanager
def _writes(server: Any, *players: str) -> Iterator[list[tuple[str, Any, bytes]]]:
    """Every write the server makes to these players' connections while in the block:
    (the player, the object written, its bytes then)."""
    written: list[tuple[str, Any, bytes]] = []
    restore = []
    for who in players:
        transport = _session_of(server, who).conn.transport
        write = transport.write

        def counted(data: Any, who: str = who, write: Any = write) -> None:
            written.append((who, data, bytes(data)))
            write(data)

        transport.write = counted
        restore.append((transport, write))
    try:
        yield written
    finally:
        for transport, write in restore:
            transport.write = write


async def test_the_senders_reply_goes_with_its_event_ahead_of_the_other_watchers(
    net: Any, monkeypatch: Any
) -> None:
    """The sender's reply is not held behind the step's writes to every other watcher
    (issue 37 §3: a command's round trip was the whole fan-out): the step's event and
    the reply reach the sender in one write, before any other watcher's write of it.
    (A table of thousands: here no connection is written in the publish itself, as
    when more than ``AT_ONCE`` watch.)"""
    server = await net.start(**FAST, tables=(table_def("t1"),))
    watchers = []
    for i in range(4):  # (joined first: today they were written first, the sender last)
        watcher = await net.guest(server, "json", name=f"Watcher{i}")
        await watcher.join("t1")
        watchers.append(watcher)
    ann = await net.player(server, "ann", "msgpack", name="Ann")
    await ann.join("t1")
    await ann.call("sit", table="t1", seat=1)
    game = Game("t1", {"ann": ann}, watchers[0], rng=random.Random(3))
    await game.to_betting()
    monkeypatch.setattr(hub, "AT_ONCE", 0, raising=False)
    with _writes(server, ann.player, *(w.player for w in watchers)) as writes:
        reply = await game.act("ann", "bet", area="banker", amount=100)
        for watcher in watchers:
            await watcher.wait_seq("t1", reply["seq"])
    order = [who for who, _, _ in writes]
    assert order.count(ann.player) == 1, order  # the event and the reply: one write
    assert order[0] == ann.player, order  # ahead of the others
    assert sorted(order[1:]) == sorted(w.player for w in watchers), order


async def test_steps_published_while_the_writes_wait_reach_a_watcher_in_one_write(
    net: Any, monkeypatch: Any
) -> None:
    """Two steps published to a large audience (``AT_ONCE``: here none) before the loop
    writes reach a watcher together: one write for both, in order."""
    from server.vocabulary.events import Event

    monkeypatch.setattr(hub, "AT_ONCE", 0, raising=False)
    server = await net.start(**FAST, tables=(table_def("t1"),))
    watcher = await net.guest(server, "json", name="Watcher")
    await watcher.join("t1")
    with _writes(server, watcher.player) as writes:
        # Two transient chat lines, published back to back as a table would (no await).
        seq = watcher.last_seq["t1"]
        for n in (1, 2):
            chat = Event(seq, "chat", {"player": "x", "name": "X", "text": f"line {n}"},
                         transient=True)  # fmt: skip
            server.hub.publish("t1", [chat])
        start = len(watcher.frames)
        second = await watcher.next_frame(
            lambda m: m.get("type") == "chat" and m.get("text") == "line 2", start=start
        )
    chats = [f.msg for f in watcher.frames[start : second.index + 1] if f.msg["type"] == "chat"]
    assert [m["text"] for m in chats] == ["line 1", "line 2"]
    assert len(writes) == 1, writes


async def test_the_watchers_waiting_for_the_same_frames_share_them(
    net: Any, monkeypatch: Any
) -> None:
    """A step for a large audience (``AT_ONCE``: here none) is added to what waits for
    each watcher as one object for all who wait for the same frames, not as a list a
    watcher (issue 37 §3: two thousand lists a step, a fifth of a burst of bets' step);
    each still gets every frame, in order, in one write."""
    from server.vocabulary.events import Event

    monkeypatch.setattr(hub, "AT_ONCE", 0, raising=False)
    server = await net.start(**FAST, tables=(table_def("t1"),))
    watchers = []
    for i in range(4):
        watcher = await net.guest(server, "json", name=f"Watcher{i}")
        await watcher.join("t1")
        watchers.append(watcher)
    conns = [_session_of(server, w.player).conn for w in watchers]
    seq = watchers[0].last_seq["t1"]
    starts = [len(w.frames) for w in watchers]
    for n in (1, 2):
        chat = Event(seq, "chat", {"player": "x", "name": "X", "text": f"line {n}"},
                     transient=True)  # fmt: skip
        server.hub.publish("t1", [chat])
        waiting = [hub._TAIL.frames.get(conn) for conn in conns]
        assert waiting[0] is not None and len(waiting[0]) == n
        assert all(w is waiting[0] for w in waiting), [id(w) for w in waiting]
    for watcher, start in zip(watchers, starts, strict=True):
        second = await watcher.next_frame(
            lambda m: m.get("type") == "chat" and m.get("text") == "line 2", start=start
        )
        got = [f.msg["text"] for f in watcher.frames[start : second.index + 1]]
        assert got == ["line 1", "line 2"], got


async def _watchers_and_ann(net: Any, count: int = 4) -> tuple[Any, list[Any], Game]:
    """A table of ``count`` JSON watchers and Ann (msgpack), seated, her bet placed."""
    server = await net.start(**FAST, tables=(table_def("t1"),))
    watchers = []
    for i in range(count):
        watcher = await net.guest(server, "json", name=f"Watcher{i}")
        await watcher.join("t1")
        watchers.append(watcher)
    ann = await net.player(server, "ann", "msgpack", name="Ann")
    await ann.join("t1")
    await ann.call("sit", table="t1", seat=1)
    game = Game("t1", {"ann": ann}, watchers[0], rng=random.Random(3))
    await game.to_betting()
    await game.act("ann", "bet", area="banker", amount=100)
    return server, watchers, game


async def test_a_phase_change_encodes_the_spectators_alike_actions_once(
    net: Any, monkeypatch: Any
) -> None:
    """When betting closes every spectator of a table that takes bettors without a seat
    gets new ``actions`` (they may no longer bet), most of them alike: the frame is
    encoded once for all whose private part is the same, not once each (issue 37 §3:
    two thousand encodes a phase change); each still gets its actions."""
    _server, spectators, game = await _watchers_and_ann(net, 6)  # (bettors: 1,000)
    encoded: list[dict[str, Any]] = []
    payload = hub.payload  # (a message encoded as a frame's payload)

    def counted(message: Any, fmt: str) -> Any:
        if message.get("type") == "event":
            encoded.append(message)
        return payload(message, fmt)

    joined = hub._Public.joined

    def joined_counted(public: Any, fmt: str, part: Any, part_json: bytes) -> Any:
        made = joined(public, fmt, part, part_json)
        if made is not None:  # (a private frame joined from its part: made, not encoded)
            encoded.append({"type": "event", "data": part})
        return made

    monkeypatch.setattr(hub, "payload", counted)
    monkeypatch.setattr(hub._Public, "joined", joined_counted)
    mark = spectators[0].last_seq["t1"]
    reply = await game.act("ann", "done")  # betting closes and the coup is dealt
    for spectator in spectators:
        await spectator.wait_seq("t1", reply["seq"])
    monkeypatch.setattr(hub, "payload", payload)
    monkeypatch.setattr(hub._Public, "joined", joined)
    # every spectator was told its new actions, all alike ...
    told = []
    for spectator in spectators:
        step = [e for e in spectator.events("t1") if e["seq"] > mark]
        told.append([e["data"]["actions"] for e in step if "actions" in e["data"]])
    assert all(len(actions) == 1 for actions in told), told
    assert all(actions == told[0] for actions in told), told
    assert "bet" not in told[0][0]
    # ... in one frame made for the six of them
    private = [m for m in encoded if "actions" in m["data"]]
    assert len(private) == 2, private  # the spectators' one, and Ann's


async def test_a_private_part_given_to_many_players_is_made_json_once(
    net: Any, monkeypatch: Any
) -> None:
    """The table gives the players whose actions are made from the same one private part
    (server/table/actions.py), and the hub makes its JSON once for all of them, not once a
    player (issue 37 §3: two thousand spectators' ``actions`` at betting's opening and
    close); each spectator still gets its actions, and only its own frame."""
    _server, spectators, game = await _watchers_and_ann(net, 6)  # (bettors: 1,000)
    dumped: list[Any] = []
    real = hub.orjson

    class Counted:
        OPT_NON_STR_KEYS = real.OPT_NON_STR_KEYS

        @staticmethod
        def dumps(obj: Any, *args: Any, **kwargs: Any) -> bytes:
            if isinstance(obj, dict) and set(obj) == {"actions"}:
                dumped.append(obj)
            return real.dumps(obj, *args, **kwargs)

    monkeypatch.setattr(hub, "orjson", Counted)
    mark = spectators[0].last_seq["t1"]
    reply = await game.act("ann", "done")  # betting closes: every spectator's actions change
    for spectator in spectators:
        await spectator.wait_seq("t1", reply["seq"])
    monkeypatch.setattr(hub, "orjson", real)
    told = []
    for spectator in spectators:
        step = [e for e in spectator.events("t1") if e["seq"] > mark]
        told.append([e["data"]["actions"] for e in step if "actions" in e["data"]])
    assert all(len(actions) == 1 and actions == told[0] for actions in told), told
    assert "bet" not in told[0][0]
    theirs = [part for part in dumped if part["actions"] == told[0][0]]
    assert len(theirs) == 1, dumped  # the spectators' one part (and Ann's, her own)


async def test_a_step_is_joined_once_for_all_its_alike_watchers(net: Any) -> None:
    """The watchers who get the same frames of a step get the very same bytes, joined
    once for all of them, not once a watcher (issue 37 §3: two thousand watchers made
    two thousand joins and lists of a step; now a watcher costs the step its write)."""
    server, watchers, game = await _watchers_and_ann(net)
    with _writes(server, *(w.player for w in watchers)) as written:
        reply = await game.act("ann", "done")  # betting closes and the coup is dealt
        for watcher in watchers:
            await watcher.wait_seq("t1", reply["seq"])
    assert sorted(who for who, _, _ in written) == sorted(w.player for w in watchers), written
    assert len({id(data) for _, data, _ in written}) == 1, [len(b) for _, _, b in written]


async def test_a_publish_asks_no_watcher_whether_it_compresses(net: Any, monkeypatch: Any) -> None:
    """Whether a watcher's frames are compressed is decided once, when it joins the
    table, not asked of its connection for each frame of each step (issue 37 §3: that
    check was a tenth of the fan-out's work at a table of two thousand)."""
    server, watchers, game = await _watchers_and_ann(net)
    asked: list[str] = []
    for watcher in watchers:
        protocol = _session_of(server, watcher.player).conn.protocol

        class Counting(type(protocol)):  # type: ignore[misc]
            @property
            def extensions(self) -> Any:
                asked.append("extensions")
                return self.__dict__["extensions"]

            @extensions.setter
            def extensions(self, value: Any) -> None:
                self.__dict__["extensions"] = value

        protocol.__class__ = Counting
    reply = await game.act("ann", "done")  # betting closes and the coup is dealt
    for watcher in watchers:
        await watcher.wait_seq("t1", reply["seq"])
    assert len(watchers[0].events("t1")) > 3
    assert asked == [], len(asked)


async def test_a_compressed_watcher_gets_what_a_plain_one_gets(net: Any) -> None:
    """A watcher whose connection compresses (``compression = true``, decided at its
    join) gets each step's events, its own ``actions`` among them, in order, as a plain
    watcher of the same table does."""
    server = await net.start(**FAST, compression=True, tables=(table_def("t1"),))
    plain = await net.guest(server, "json", name="Plain")
    await plain.join("t1")
    deflated = await net.connect(server, "json", label="Deflated", compression="deflate")
    await deflated.hello(guest=True, name="Deflated")
    await deflated.join("t1")
    assert _session_of(server, deflated.player).conn.protocol.extensions
    assert not _session_of(server, plain.player).conn.protocol.extensions
    ann = await net.player(server, "ann", "msgpack", name="Ann")
    await ann.join("t1")
    await ann.call("sit", table="t1", seat=1)
    game = Game("t1", {"ann": ann}, plain, rng=random.Random(3))
    await game.to_betting()
    await game.act("ann", "bet", area="banker", amount=100)
    mark = plain.last_seq["t1"]
    reply = await game.act("ann", "done")  # betting closes and the coup is dealt
    await plain.wait_seq("t1", reply["seq"])
    await deflated.wait_seq("t1", reply["seq"])
    seen = [[e for e in c.events("t1") if e["seq"] > mark] for c in (plain, deflated)]
    assert [e["seq"] for e in seen[0]] == [e["seq"] for e in seen[1]]
    assert len(seen[0]) >= 3
    assert [e["data"].get("actions") for e in seen[0]] == [
        e["data"].get("actions") for e in seen[1]
    ]
    assert any("actions" in e["data"] for e in seen[1])


async def _a_watcher_of_a_large_table(
    net: Any, monkeypatch: Any, gap: float
) -> tuple[Any, Any, Callable[[int], Any]]:
    """A server whose tables are written as a large audience's (``AT_ONCE`` 0: a pass at
    a time, ``TAIL_GAP`` ``gap``), one JSON watcher of t1, and a maker of the chat lines
    ``line <n>`` (transient events) to publish to it."""
    from server.vocabulary.events import Event

    monkeypatch.setattr(hub, "AT_ONCE", 0, raising=False)
    monkeypatch.setattr(hub, "TAIL_GAP", gap, raising=False)
    server = await net.start(**FAST, tables=(table_def("t1"),))
    watcher = await net.guest(server, "json", name="Watcher")
    await watcher.join("t1")

    def chat(n: int) -> Event:
        return Event(watcher.last_seq["t1"], "chat", {"player": "x", "name": "X",
                     "text": f"line {n}"}, transient=True)  # fmt: skip

    return server, watcher, chat


async def test_steps_soon_after_a_pass_wait_for_the_next_one_together(
    net: Any, monkeypatch: Any
) -> None:
    """A large audience (``AT_ONCE``: here none) is written a pass at a time, a pass no
    sooner than ``TAIL_GAP`` after the last began: two steps published a few turns of
    the event loop apart, soon after a pass, reach a watcher in one write, not one each
    (issue 37 §3: a write a watcher a step was 41% of the process at two thousand)."""
    # (a TAIL_GAP of a loaded machine's turns)
    server, watcher, chat = await _a_watcher_of_a_large_table(net, monkeypatch, gap=0.5)
    with _writes(server, watcher.player) as writes:
        start = len(watcher.frames)
        server.hub.publish("t1", [chat(1)])  # a pass begins ...
        await watcher.next_frame(lambda m: m.get("text") == "line 1", start=start)
        server.hub.publish("t1", [chat(2)])  # ... and these two come soon after it
        for _ in range(5):
            await asyncio.sleep(0)
        server.hub.publish("t1", [chat(3)])
        third = await watcher.next_frame(lambda m: m.get("text") == "line 3", start=start)
    chats = [f.msg["text"] for f in watcher.frames[start : third.index + 1]
             if f.msg["type"] == "chat"]  # fmt: skip
    assert chats == ["line 1", "line 2", "line 3"]
    assert len(writes) == 2, writes  # line 1; lines 2 and 3 together


def test_a_frame_is_the_bytes_websockets_makes_of_it() -> None:
    """The hub makes its frames' headers itself (``serialize`` cost 2 µs a frame, one for
    each bettor's ``settled``, issue 37): the same bytes, at each length's form."""
    from websockets.frames import Frame, Opcode

    for size in (0, 1, 125, 126, 127, 65535, 65536, 70_000):
        payload = bytes(i % 251 for i in range(size))
        for text, opcode in ((True, Opcode.TEXT), (False, Opcode.BINARY)):
            made = Frame(opcode, payload).serialize(mask=False, extensions=[])
            assert hub._frame(payload, text) == made, (size, text)


def test_a_private_json_frame_joined_from_its_part_is_the_frame_encoded_whole() -> None:
    """A viewer's JSON frame is joined from the event's public view and their part's
    JSON (a thousand bettors' ``settled``, issue 37): the very bytes ``encode`` makes of
    their ``view_event``; a part it cannot join so (a key the public data has too, an
    empty part, msgpack) is left to the encoder."""
    import orjson

    from server.protocol.codec import JSON, MSGPACK, encode
    from server.table.views import view_event
    from server.vocabulary.events import Event

    settled = {"round_id": "r-1", "payouts": [{"player": "ann", "win": 95}], "bettors": 2}
    cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
        (settled, {"balance": 100_500, "net": 500, "own": [{"area": "player", "win": 500}]}),
        (settled, {"actions": {"bet": {"areas": {"player": {"min": 100, "max": 9_000}}}}}),
        ({}, {"actions": {"leave": {}}}),  # no public data
        ({"text": 'é ✓ "quoted" \\ \n'}, {"name": "Zoë", "pad": "x" * 70_000}),  # long, unicode
        ({1: "an int key", "x": None}, {"y": [1.5, True, None]}),
    ]
    for data, part in cases:
        event = Event(7, "settled", data, {"zoe": part, "ann": {"other": 1}})
        whole = encode(hub.envelope("t1", view_event(event, "zoe")), JSON)
        assert isinstance(whole, str)
        joined = hub._Public("t1", event).joined(JSON, part, orjson.dumps(part))
        assert joined == (whole.encode(), True), (data, part)
    event = Event(7, "settled", settled, {"zoe": {"bettors": 3}, "ann": {}})
    public = hub._Public("t1", event)
    assert public.joined(JSON, {"bettors": 3}, b'{"bettors":3}') is None  # a public key
    assert public.joined(JSON, {}, b"{}") is None
    assert public.joined(MSGPACK, {"net": 1}, b'{"net":1}') is None


def _wait_samples(text: str) -> tuple[float, float]:
    """``chemmy_fanout_wait_seconds``' count and sum in a ``/metrics`` text."""
    found = dict(re.findall(r"^chemmy_fanout_wait_seconds_(count|sum) (\S+)$", text, re.M))
    return float(found["count"]), float(found["sum"])


async def test_how_long_a_step_waited_for_its_write_is_in_the_metrics(
    net: Any, monkeypatch: Any
) -> None:
    """``/metrics`` tells how long a step's bytes waited from its publish to their write
    to a watcher (``chemmy_fanout_wait_seconds``, one write in ``WAIT_SAMPLE``; here
    every one): a step published just after a pass began waits for the next one, and
    its wait is counted (issue 37 §3: the server's side of the fan-out promise)."""
    monkeypatch.setattr(hub, "WAIT_SAMPLE", 1, raising=False)
    server, watcher, chat = await _a_watcher_of_a_large_table(net, monkeypatch, gap=0.3)
    _status, _, body = await http_get(server.port, "/metrics")
    count0, sum0 = _wait_samples(body.decode())
    start = len(watcher.frames)
    published = time.perf_counter()
    server.hub.publish("t1", [chat(1)])  # written by a pass ...
    await watcher.next_frame(lambda m: m.get("text") == "line 1", start=start)
    server.hub.publish("t1", [chat(2)])  # ... this one waits for the next
    await watcher.next_frame(lambda m: m.get("text") == "line 2", start=start)
    took = 2 * (time.perf_counter() - published)  # (each waited less than both)
    _status, _, body = await http_get(server.port, "/metrics")
    count1, sum1 = _wait_samples(body.decode())
    assert count1 - count0 == 2  # the two writes
    waited = sum1 - sum0
    assert 0.2 < waited < took, (waited, took)  # (the second's wait: most of TAIL_GAP)
