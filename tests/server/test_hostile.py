"""What a hostile or unlucky world does to the gateway, replayed against a real server.

Each test drives a live server (port 0, real WebSocket clients) the way the attack that
found the weakness did (issue 9, "What a hostile or unlucky world does to the gateway"):

- 32 connections of one player bursting ``join`` while a real player bets: the real
  player's commands are never refused ``busy`` and never wait behind more than a handful
  of the flood's; connections are capped per player and per client address, messages
  are limited per player and per address, and behind a trusted proxy the address comes
  from ``X-Forwarded-For``;
- a flood of WebSocket pings is limited like messages, and cut off;
- chat and names refuse ESC/ANSI sequences, controls, bidi and zero-width characters;
- a token whose ``sub`` is ``croupier`` is refused, and so are time claims that are not
  whole numbers;
- an error keeps the request id when the frame had a valid one;
- ``/healthz``, ``/readyz`` and ``/metrics`` answer 405 to other methods than GET/HEAD;
- hellos (each may make a guest) are limited per client address.

Clients on other addresses connect from other loopback addresses (``127.0.0.2``...).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import jwt
import msgpack
import pytest
from websockets.exceptions import ConnectionClosed

from server.gateway.server import ChemmyServer
from server.limits.local import PLAYER_IN_FLIGHT
from server.process.auth import make_token
from server.protocol.records import CommandRecord, ReplyRecord
from tests.kit import SECRET, Client, Game, scaled, table_def

LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60, "grace": 60}


def token(player: str, **claims: Any) -> str:
    """A signed player token with exactly these claims (``sub`` = ``player``)."""
    return jwt.encode({"sub": player, **claims}, SECRET, algorithm="HS256")


def soon() -> int:
    return int(time.time()) + 3600


async def eventually(check: Callable[[], bool], what: str) -> None:
    """Wait until ``check()`` holds (the server's own bookkeeping after a close)."""
    async with asyncio.timeout(scaled(5)):
        while not check():
            await asyncio.sleep(0.01)
    assert check(), what


async def from_address(
    net: Any, server: ChemmyServer, address: str, fmt: str = "json", **kwargs: Any
) -> Client:
    """A client connecting from the loopback address ``address`` (no hello yet)."""
    return await net.connect(server, fmt, label=address, local_addr=(address, 0), **kwargs)


# -- 1. many connections ------------------------------------------------------------------


async def burst(client: Client, kind: str, count: int = 40) -> None:
    """``count`` frames of ``kind`` at t1 as fast as they go, no reply awaited."""
    for n in range(count):
        await client.send({"type": kind, "id": n, "table": "t1"})


async def honest_player_betting(net: Any, server: ChemmyServer) -> Client:
    """Ann, from her own address, seated at t1 with the shoe, betting open."""
    ann = await from_address(net, server, "127.0.0.2")
    await ann.hello(token=make_token(SECRET, "ann"))
    await ann.join("t1")
    await ann.call("sit", table="t1")
    game = Game("t1", {"ann": ann}, ann)
    await game.act("ann", "accept_shoe")
    await game.to_betting()
    return ann


async def honest_play(ann: Client) -> list[str | None]:
    """An honest player's 20 commands at t1 (bet, take back, ...): each one's error
    code, None when done."""
    codes: list[str | None] = []
    for n in range(20):
        kind = "bet" if n % 2 == 0 else "remove_bet"
        codes.append((await ann.rpc(kind, table="t1", area="player", amount=100)).get("code"))
    return codes


FLOOD_ADDRESSES = 16


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
@pytest.mark.slow
async def test_a_flood_from_many_addresses_costs_its_senders_not_the_table(net: Any) -> None:
    """The attack (issue 18.4): 16 addresses, each with its share of places at the
    gateway, together held every place of the table's queue, so an honest player's
    commands were answered ``busy`` and waited behind hundreds of the flood's. The
    table's queue now has a line per address, served in turn, and a full queue makes
    room from the longest line: the honest player waits behind at most one command of
    each flooding address, and is never ``busy``."""
    server = await net.start(
        tables=(table_def("t1", timers=LONG),),
        rate_limit=10_000.0,
        rate_burst=10_000,
        max_connections_per_address=8,
    )
    ann = await honest_player_betting(net, server)

    # Count, for each of ann's commands, how many others the table stepped before it.
    queue = server.actors["t1"].queue
    put, get = queue.put, queue.get_nowait
    served = 0
    put_at: dict[int, int] = {}
    ahead_of_ann: list[int] = []
    most = 0

    def counting_put(sender: str, item: Any) -> Any:
        nonlocal most
        pushed = put(sender, item)
        if item.record is not None and item.record.player == "ann":
            put_at[id(item)] = served
        most = max(most, len(queue))
        return pushed

    def counting_get() -> Any:
        nonlocal served
        item = get()
        served += 1
        if id(item) in put_at:
            ahead_of_ann.append(served - 1 - put_at.pop(id(item)))
        return item

    queue.put = counting_put  # type: ignore[method-assign]
    queue.get_nowait = counting_get  # type: ignore[method-assign]

    flood = []
    for a in range(FLOOD_ADDRESSES):
        for _ in range(8):
            client = await from_address(net, server, f"127.0.1.{a + 1}", "msgpack")
            await client.hello(guest=True)
            await client.join("t1")
            flood.append(client)

    floods = (burst(c, "roads") for c in flood)
    *_, codes = await asyncio.gather(*floods, honest_play(ann))
    for c in flood:
        await c.wait_frame(lambda _m, c=c: len(c.replies()) >= 42, what="every roads answered")

    assert most == server.config.queue_size, "the flood filled the table's queue"
    assert codes == [None] * 20  # every one of ann's commands was done: none was busy
    # Behind one command of each flooding address at most (and one of the croupier's).
    assert ahead_of_ann and max(ahead_of_ann) <= FLOOD_ADDRESSES + 1, ahead_of_ann
    answered = Counter(r.get("code", "ok") for c in flood for r in c.replies()[2:])
    assert answered["ok"] >= 1  # the flood is served its share, not locked out


async def test_a_players_flood_of_joins_never_gets_another_players_commands_refused(
    net: Any,
) -> None:
    """The attack: one player on 32 connections, each bursting 40 ``join`` s, while a
    real player (another address) bets and takes bets back 20 times. It used to fill the
    table's queue and get 8 of the 20 refused ``busy``."""
    server = await net.start(tables=(table_def("t1", timers=LONG),))
    ann = await honest_player_betting(net, server)

    # Watch the table's queue: how many of each player's commands are in it (sent to
    # the table, not answered yet), and how many of mallory's are ahead of each of ann's.
    outstanding: Counter[str] = Counter()
    asker: dict[Any, str] = {}
    ahead_of_ann: list[int] = []
    peak = 0
    submit, reply = server.bus.submit, server.bus.reply

    def counting_submit(record: CommandRecord) -> None:
        nonlocal peak
        submit(record)
        if record.reply_to is not None:
            asker[record.reply_to.request] = record.player
            if record.player == "ann":
                ahead_of_ann.append(outstanding["mallory"])
            outstanding[record.player] += 1
            peak = max(peak, outstanding["mallory"])

    def counting_reply(record: ReplyRecord) -> None:
        player = asker.pop(record.to.request, None)
        if player is not None:
            outstanding[player] -= 1
        reply(record)

    server.bus.submit = counting_submit  # type: ignore[method-assign]
    server.bus.reply = counting_reply  # type: ignore[method-assign]

    mallory = [await net.connect(server, "msgpack", label=f"mallory-{n}") for n in range(32)]
    hellos = [await m.rpc("hello", token=make_token(SECRET, "mallory")) for m in mallory]
    cap = server.config.max_connections_per_player
    assert [h["type"] for h in hellos] == ["ok"] * cap + ["error"] * (32 - cap)
    assert {h.get("code") for h in hellos[cap:]} == {"too_many_connections"}

    *_, codes = await asyncio.gather(*(burst(m, "join") for m in mallory), honest_play(ann))
    for m in mallory:
        await m.wait_frame(lambda _m, m=m: len(m.replies()) >= 41, what="every join answered")

    assert codes == [None] * 20  # every one of ann's commands was done: none was busy
    assert ahead_of_ann and max(ahead_of_ann) <= PLAYER_IN_FLIGHT  # never behind the flood
    assert peak <= PLAYER_IN_FLIGHT  # the flood's share of the table's queue
    joins = Counter(r.get("code", "ok") for m in mallory[:cap] for r in m.replies()[1:])
    assert joins["ok"] >= 1  # mallory is limited, not locked out
    assert joins["rate_limited"] > 0
    assert set(joins) == {"ok", "rate_limited"}, joins  # and never busy
    # The connections refused at hello are not let in (and their address is slowed down).
    outside = Counter(r.get("code") for m in mallory[cap:] for r in m.replies()[1:])
    assert outside["auth_required"] > 0
    assert set(outside) <= {"auth_required", "rate_limited"}, outside
    ann.assert_clean()


async def test_connections_per_address_are_capped(net: Any) -> None:
    server = await net.start(max_connections_per_address=3)
    first = [await from_address(net, server, "127.0.0.3") for _ in range(3)]
    for client in first:
        await client.call("ping")
    extra = await from_address(net, server, "127.0.0.3")
    assert await extra.wait_closed() == 1008
    assert extra.ws is not None and extra.ws.close_reason == (
        "too many connections from this address"
    )
    # Another address is someone else.
    other = await from_address(net, server, "127.0.0.4")
    await other.call("ping")
    # Once one of the three leaves, a new one is let in.
    await first[0].close()
    await eventually(
        lambda: server.limits.addresses["127.0.0.3"].connections == 2, "the close counted"
    )
    again = await from_address(net, server, "127.0.0.3")
    await again.call("ping")


async def test_a_trusted_proxy_names_the_client_and_nobody_else_can(net: Any) -> None:
    def via(client_ip: str) -> dict[str, Any]:
        return {"additional_headers": {"X-Forwarded-For": client_ip}}

    # Behind our proxy (the TCP peer 127.0.0.1 is trusted): the header names the client.
    server = await net.start(max_connections_per_address=2, trusted_proxies=("127.0.0.0/30",))
    for _ in range(2):
        await (await net.connect(server, **via("198.51.100.7"))).call("ping")
    full = await net.connect(server, **via("198.51.100.7"))
    assert await full.wait_closed() == 1008
    # The client may write its own X-Forwarded-For; the proxy appends what it saw, and
    # only that hop (the nearest that is not a trusted proxy) is believed.
    forged = await net.connect(server, **via("203.0.113.9, 198.51.100.7"))
    assert await forged.wait_closed() == 1008
    # Another client behind the same proxy, even with proxies in between, is let in.
    await (await net.connect(server, **via("198.51.100.8, 127.0.0.2"))).call("ping")
    assert server.limits.addresses["198.51.100.8"].connections == 1

    # Without trusted proxies the header is ignored: the address is the TCP peer.
    plain = await net.start(max_connections_per_address=2, db=str(net.tmp_path / "plain.sqlite3"))
    for n in range(2):
        client = await from_address(net, plain, "127.0.0.5", **via(f"192.0.2.{n}"))
        await client.call("ping")
    refused = await from_address(net, plain, "127.0.0.5", **via("192.0.2.99"))
    assert await refused.wait_closed() == 1008
    assert "192.0.2.99" not in plain.limits.addresses


async def test_messages_are_limited_per_address_and_per_player(net: Any) -> None:
    server = await net.start(
        address_rate_limit=0.5, address_rate_burst=12, player_rate_limit=0.5, player_rate_burst=6
    )
    started = time.monotonic()

    async def pings(client: Client, count: int) -> list[str]:
        start = len(client.frames)
        for n in range(count):
            await client.send({"type": "ping", "id": f"p{n}"})
        await client.wait_frame(lambda m: m.get("id") == f"p{count - 1}", start=start)
        return [r.get("code", "ok") for r in client.replies(start)]

    # Three guests at one address, each far within its own connection's rate, share the
    # address's 12 (the hellos took 3).
    guests = []
    for _ in range(3):
        guest = await from_address(net, server, "127.0.0.6")
        await guest.hello(guest=True)
        guests.append(guest)
    codes = [code for guest in guests for code in await pings(guest, 6)]
    assert 0 < codes.count("rate_limited") < len(codes), codes
    refill = 0.5 * (time.monotonic() - started)
    assert codes.count("ok") <= 12 - 3 + refill + 1, codes  # the burst the hellos left
    # ... while a guest at another address is not slowed down.
    other = await from_address(net, server, "127.0.0.7")
    await other.hello(guest=True)
    assert await pings(other, 5) == ["ok"] * 5

    # One player on three connections (three addresses) shares the player's 6.
    tabs = []
    for n in range(3):
        tab = await from_address(net, server, f"127.0.1.{n + 1}")
        await tab.hello(token=make_token(SECRET, "mallory"))
        tabs.append(tab)
    codes = [code for tab in tabs for code in await pings(tab, 4)]
    assert 0 < codes.count("rate_limited") < len(codes), codes
    assert all(not tab.closed for tab in tabs)


# -- 2. pings -------------------------------------------------------------------------------


def count_pongs(client: Client) -> list[bytes]:
    """Record every pong frame the client receives."""
    assert client.ws is not None
    pongs: list[bytes] = []
    acknowledge = client.ws.acknowledge_pings

    def counted(data: bytes) -> None:
        pongs.append(data)
        acknowledge(data)

    client.ws.acknowledge_pings = counted  # type: ignore[method-assign]
    return pongs


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_a_ping_flood_is_limited_then_cut_off(net: Any) -> None:
    """75,000 WebSocket pings a second on one connection were each answered (websockets
    answers them inside its protocol). Now a ping spends a message token: over the rate
    it is not answered, and a connection that keeps on is cut off like a message flood."""
    server = await net.start()
    client = await net.player(server, "mallory", "msgpack")
    pongs = count_pongs(client)
    assert client.ws is not None
    sent = 0
    started = time.monotonic()
    with contextlib.suppress(ConnectionClosed):
        for n in range(20_000):
            await client.ws.ping(str(n))
            sent += 1
            if n % 50 == 0:
                await asyncio.sleep(0)  # the server runs in this loop: let it read
    assert await client.wait_closed() == 1008
    elapsed = time.monotonic() - started
    config = server.config
    assert sent < 20_000  # cut off long before the end
    assert 1 <= len(pongs) <= config.rate_burst + config.rate_limit * elapsed + 1, (
        len(pongs),
        elapsed,
    )


@pytest.mark.slow
async def test_pings_at_a_keepalive_pace_are_all_answered(net: Any) -> None:
    server = await net.start(rate_limit=20.0, rate_burst=5)
    client = await net.player(server, "ann")
    pongs = count_pongs(client)
    assert client.ws is not None
    for n in range(30):  # 10 a second: under the rate, for longer than the burst
        waiter = await client.ws.ping(f"k{n}")
        await asyncio.wait_for(waiter, scaled(2))
        await asyncio.sleep(0.1)
    assert len(pongs) == 30
    assert not client.closed


# -- 3. text others see ---------------------------------------------------------------------

HOSTILE_TEXT = [
    "\x1b[2J\x1b[Hcleared your screen",  # ESC: ANSI/VT sequences
    "\x1b]0;pwned\x07",  # an OSC title, ended by BEL
    "nul\x00byte",
    "bell\x07",
    "del\x7f",
    "c1\x9bcsi",  # C1 CSI
    "next line\x85",  # C1 NEL
    "\u202eevil",  # bidi override
    "\u2067isolate\u2069",  # bidi isolates
    "\u200ftext",  # RLM
    "zero\u200bwidth",
    "zero\u2060joiner",
    "a\u200db",  # a joiner outside an emoji sequence
    "\ufeffbom",
    "soft\u00adhyphen",
]


async def test_chat_refuses_what_would_act_on_a_watchers_screen(net: Any) -> None:
    server = await net.start()
    ann = await net.player(server, "ann")
    bob = await net.player(server, "bob", "msgpack")
    for client in (ann, bob):
        await client.join("t1")
    for text in HOSTILE_TEXT:
        reply = await ann.refused("bad_chat", "chat", table="t1", text=text)
        assert "U+" in reply["message"], reply  # says which character
    # Plain text, whitespace, accents and emoji (joined ones too) pass, normalized.
    await ann.call(
        "chat", table="t1", text="  bonne\tchance,\n Zoe\u0301 👩\u200d💻 1\ufe0f\u20e3 "
    )
    chat = await bob.wait_frame(lambda m: m.get("type") == "chat", what="the chat")
    assert chat["text"] == "bonne chance, Zoé 👩\u200d💻 1\ufe0f\u20e3"
    assert len(bob.chats()) == 1  # none of the refused ones reached anyone


async def test_names_pass_the_same_check(net: Any) -> None:
    server = await net.start()
    for text in HOSTILE_TEXT:
        guest = await net.connect(server)
        await guest.refused("bad_name", "hello", guest=True, name=text)
        player = await net.connect(server)
        await player.refused("bad_token", "hello", token=token("ann", exp=soon(), name=text))
    guest = await net.connect(server)
    assert (await guest.call("hello", guest=True, name=" Zoe\u0301  👩\u200d💻 "))[
        "name"
    ] == "Zoé 👩\u200d💻"


# -- 4. identities --------------------------------------------------------------------------


async def test_the_croupiers_id_and_loose_time_claims_are_refused(net: Any) -> None:
    server = await net.start()
    cases = [
        token("croupier", exp=soon()),  # the table's own actor
        token("ann", exp=str(soon())),  # PyJWT took int("...")
        token("ann", exp=1e300),  # ... and int(1e300): a token for ever
        token("ann", exp=float(soon())),
        token("ann", exp=2**64),
        token("ann", exp=True),
        token("ann", exp=soon(), iat=str(int(time.time()))),
        token("ann", exp=soon(), nbf=1.5),
        token("ann", exp=str(int(time.time()) - 3600)),  # a string, even a past one
    ]
    for bad in cases:
        client = await net.connect(server)
        reply = await client.refused("bad_token", "hello", token=bad)
        assert bad not in reply["message"]
        assert not client.closed
    # Whole numbers still work, and still expire.
    client = await net.connect(server)
    await client.call("hello", token=token("ann", exp=soon(), iat=int(time.time())))
    client = await net.connect(server)
    await client.refused("token_expired", "hello", token=token("ann", exp=int(time.time()) - 60))


# -- 5. errors keep the request id ----------------------------------------------------------


async def test_an_error_keeps_the_request_id_of_a_frame_with_a_bad_value(net: Any) -> None:
    server = await net.start()
    ann = await net.player(server, "ann", "json")
    bob = await net.player(server, "bob", "msgpack")
    big = 2**64  # a 65-bit integer: JSON parses it, no client could be sent it back
    cases: list[tuple[Client, str | bytes, Any]] = [
        (ann, json.dumps({"type": "ping", "id": 7, "x": big}), 7),
        (ann, json.dumps({"type": "ping", "id": "j1", "x": [1, {"y": -big - 1}]}), "j1"),
        (ann, '{"type": "ping", "id": "j2", "x": 1e400}', "j2"),  # an infinity
        (ann, '{"type": "ping", "id": "j3", "x": "\\ud800"}', "j3"),  # a lone surrogate
        (ann, '{"id": "j4", "type": 5, "x": 1e400}', "j4"),  # no string type either
        (bob, msgpack.packb({"type": "ping", "id": "m1", "x": float("inf")}), "m1"),
        (bob, msgpack.packb({"type": "bet", "id": 12, "x": [float("-inf")]}), 12),
        (bob, msgpack.packb({"type": "ping", "id": 3, "x": float("nan")}), 3),
        # ... but an id the wire could not carry back is not echoed.
        (ann, json.dumps({"type": "ping", "id": big, "x": 1}), None),
        (ann, '{"type": "ping", "id": "\\ud800"}', None),
        (bob, msgpack.packb({"type": "ping", "id": float("inf")}), None),
        (bob, msgpack.packb({"type": "ping", "id": True, "x": float("inf")}), None),
    ]
    for client, frame, mid in cases:
        start = await client.send_raw(frame)
        reply = await client.next_reply(start)
        assert reply["type"] == "error" and reply["code"] == "bad_message", (frame, reply)
        assert reply["id"] == mid, (frame, reply)
    for client in (ann, bob):
        client.assert_clean()
        await client.call("ping")


# -- 6. HTTP methods ------------------------------------------------------------------------


async def http(port: int, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    """One plain HTTP/1.1 request: (status, headers, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        async with asyncio.timeout(scaled(5)):
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            status_line, *lines = head.strip().split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines)}
            body = await reader.read()
        return int(status_line.split()[1]), headers, body
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def test_http_endpoints_answer_405_to_other_methods(net: Any) -> None:
    server = await net.start()
    for path in ("/healthz", "/readyz", "/metrics"):
        for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"):
            status, headers, _body = await http(server.port, method, path)
            assert status == 405, (method, path, status)
            assert headers["allow"] == "GET, HEAD"
        status, _headers, body = await http(server.port, "GET", path)
        assert status == 200 and body
        status, headers, body = await http(server.port, "HEAD", path)
        assert status == 200 and body == b"" and int(headers["content-length"]) > 0


# -- 7. hellos ------------------------------------------------------------------------------


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_hellos_are_limited_per_address(net: Any) -> None:
    """One client made 434-943 permanent guests a second, each on a new connection."""
    server = await net.start(hello_rate_limit=2.0, hello_rate_burst=5)
    started = time.monotonic()
    replies = []
    for _ in range(30):
        client = await from_address(net, server, "127.0.0.8")
        replies.append(await client.rpc("hello", guest=True))
        await client.close()
    elapsed = time.monotonic() - started
    made = [r for r in replies if r["type"] == "ok"]
    refused = [r for r in replies if r["type"] == "error"]
    assert 5 <= len(made) <= 5 + 2 * elapsed + 1, (len(made), elapsed)
    assert refused and {r["code"] for r in refused} == {"rate_limited"}
    # Closing connections earned nothing back; another address is not held back; and
    # the address gets a hello again once its bucket refills.
    other = await from_address(net, server, "127.0.0.9")
    await other.call("hello", guest=True)
    await asyncio.sleep(scaled(0.6))
    again = await from_address(net, server, "127.0.0.8")
    await again.call("hello", guest=True)
