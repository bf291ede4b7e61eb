"""Hostile and mistaken input over real sockets: every message is answered, nothing breaks.

Each bad frame or command must get an ``error`` reply with a stable code, change nothing
at the table (its full internal state and every balance are compared before and after),
and leave the connection open: the next normal command still works. The exceptions are
the ones the protocol names: a frame over ``max_frame`` closes the connection with 1009
(the others and the table are unharmed), a wrong ``Origin`` is refused at the handshake
(403), and a client that keeps flooding past the rate limit is cut off (1008).

A Hypothesis fuzz test then throws random frames (bytes, text, maps of random types for
every command name) at a live table; every one must be answered ok or error (never
``internal``, never a dropped connection), and the ledger must still balance.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import math
from dataclasses import dataclass
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from server.gateway.server import ChemmyServer
from server.process.auth import make_token
from server.protocol.messages import SCHEMAS
from tests.kit import OTHER_SECRET, SECRET, Client, Game, scaled, table_def

LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60, "grace": 60}


@dataclass
class Scene:
    server: ChemmyServer
    ann: Client  # JSON, seat 1, holds the shoe
    bob: Client  # msgpack, seat 2
    game: Game

    def state(self) -> tuple[dict[str, Any], dict[str, int]]:
        table = self.server.actors["t1"].table.to_state()
        return copy.deepcopy(table), dict(self.server.actors["t1"].wallet.balances)

    async def unharmed(self, before: tuple[dict[str, Any], dict[str, int]]) -> None:
        """Nothing changed, and both players can still talk to the server."""
        assert self.state() == before
        for client in (self.ann, self.bob):
            assert not client.closed
            await client.call("ping")
            client.assert_clean()


async def scene(net: Any, phase: str = "betting", **config: Any) -> Scene:
    """A table with long timers (nothing fires during the test), at ``phase``."""
    server = await net.start(tables=(table_def("t1", timers=LONG),), **config)
    ann = await net.player(server, "ann", "json")
    bob = await net.player(server, "bob", "msgpack")
    for client in (ann, bob):
        await client.join("t1")
        await client.call("sit", table="t1")
    game = Game("t1", {"ann": ann, "bob": bob}, ann)
    if phase == "shoe_offer":
        return Scene(server, ann, bob, game)
    await game.act("ann", "accept_shoe")
    if phase == "cut":
        return Scene(server, ann, bob, game)
    await game.to_betting()
    await game.act("ann", "bet", area="banker", amount=500)
    if phase == "betting":
        return Scene(server, ann, bob, game)
    await game.act("bob", "bet", area="player", amount=700)
    await game.act("ann", "done")
    await game.act("bob", "done")
    assert game.prompt()["data"] == {**game.prompt()["data"], "hand": "player", "turner": "bob"}
    return Scene(server, ann, bob, game)


# ---------------------------------------------------------------------- malformed frames
async def test_undecodable_frames(net: Any) -> None:
    s = await scene(net)
    before = s.state()
    cases: list[tuple[Client, str | bytes, str]] = [
        (s.bob, b"\xc1\xc1\xc1", "bad_frame"),  # 0xc1 is never used in msgpack
        (s.bob, b"\x92\x01", "bad_frame"),  # truncated array
        (s.bob, b"\x81\xa4type", "bad_frame"),  # truncated map
        (s.bob, msgpack.packb({"type": "ping"}) + b"\x00", "bad_frame"),  # trailing data
        (s.bob, msgpack.packb(msgpack.ExtType(1, b"x")), "bad_frame"),  # extension type
        (s.bob, '{"type": "ping"}', "bad_frame"),  # a text frame on a msgpack connection
        (s.bob, msgpack.packb([1, 2, 3]), "bad_message"),  # not a map
        (s.bob, msgpack.packb({1: "ping"}), "bad_frame"),  # a non-string key
        (s.bob, msgpack.packb({"type": 5}), "bad_message"),
        (s.bob, msgpack.packb({"type": "ping", "x": math.nan}), "bad_message"),
        (s.ann, "not json at all", "bad_frame"),
        (s.ann, '{"type": "ping"', "bad_frame"),
        (s.ann, '{"type": "ping", "x": NaN}', "bad_frame"),
        (s.ann, b'{"type": "ping"}', "bad_frame"),  # a binary frame on a JSON connection
        (s.ann, "[1, 2]", "bad_message"),
        (s.ann, '"ping"', "bad_message"),
        (s.ann, "{}", "bad_message"),
        (s.ann, '{"type": ""}', "bad_message"),
        (s.ann, '{"type": "ping", "x": 1e400}', "bad_message"),
        # a lone surrogate parses, but could not be relayed (to msgpack clients, say)
        (s.ann, '{"type": "chat", "table": "t1", "text": "\\ud800"}', "bad_message"),
        (s.ann, '{"type": "ping", "x": ' + "[" * 40 + "]" * 40 + "}", "bad_message"),
        (s.ann, "\x00\xff garbage \ufffd", "bad_frame"),
    ]
    for client, frame, code in cases:
        start = await client.send_raw(frame)
        reply = await client.next_reply(start)
        assert reply["type"] == "error" and reply["code"] == code, (frame, reply)
        assert reply["id"] is None
        await s.unharmed(before)


async def test_wrong_types_missing_extra_and_unknown(net: Any) -> None:
    s = await scene(net)
    before = s.state()
    for client in (s.ann, s.bob):
        for amount in ("10", 1.5, True, None, [100], {"n": 100}):
            await client.refused("bad_message", "bet", table="t1", area="player", amount=amount)
        for amount in (-5, 0):
            await client.refused("bad_amount", "bet", table="t1", area="player", amount=amount)
        await client.refused("bad_message", "bet", table="t1", area="player", amount=2**53)
        await client.refused("bad_message", "bet", table="t1", area="player")  # no amount
        await client.refused("bad_message", "bet", table="t1", amount=100)  # no area
        await client.refused("bad_message", "bet", area="player", amount=100)  # no table
        await client.refused("bad_message", "bet", table=1, area="player", amount=100)
        await client.refused("bad_message", "bet", table="t1", area="player", amount=100, seat=2)
        await client.refused("bad_message", "ping", extra=True)
        await client.refused("bad_message", "chat", table="t1", text="x" * 1001)
        await client.refused("bad_message", "join", table="t1", since="3")
        await client.refused("unknown_command", "bet_everything", table="t1")
        await client.refused("unknown_command", "Bet", table="t1", area="player", amount=100)
        await client.refused("bad_area", "bet", table="t1", area="jackpot", amount=100)
        await client.refused("no_table", "bet", table="nope", area="player", amount=100)
        await client.refused("no_table", "join", table="nope")
        await client.refused("bad_limit", "history", limit=0)
        await client.refused("bad_limit", "history", limit=101)
        await client.refused("no_record", "shoe_record", table="t1", shoe=-1)
        await client.refused("bad_message", "ping", msg_id="x" * 65)  # ids: at most 64 characters
        await client.refused("bad_message", "ping", msg_id=2**53)  # and integers JSON can carry
        for bad_id in ([1], {"a": 1}, 1.5, True):
            start = await client.send({"type": "ping", "id": bad_id})
            reply = await client.next_reply(start)
            assert (
                reply["type"] == "error" and reply["code"] == "bad_message" and reply["id"] is None
            )
    await s.unharmed(before)
    # A normal command still works after all that.
    await s.game.act("bob", "bet", area="player", amount=100)
    assert s.ann.events("t1", "bets")[-1]["data"]["bets"] == {"player": 100}


async def test_commands_out_of_turn_or_for_another_seat(net: Any) -> None:
    s = await scene(net, "shoe_offer")  # the shoe is offered to ann
    before = s.state()
    await s.bob.refused("not_offered", "accept_shoe", table="t1")
    await s.bob.refused("not_offered", "decline_shoe", table="t1")
    await s.bob.refused("wrong_phase", "cut", table="t1", position=100)
    await s.bob.refused("wrong_phase", "bet", table="t1", area="player", amount=100)
    await s.bob.refused("already_seated", "sit", table="t1", seat=1)
    await s.unharmed(before)

    await s.game.act("ann", "accept_shoe")  # now ann cuts
    before = s.state()
    await s.bob.refused("not_cutter", "cut", table="t1", position=100)
    await s.ann.refused("bad_cut", "cut", table="t1", position=5)
    await s.ann.refused("bad_cut", "cut", table="t1", position=416 - 9)
    await s.ann.refused("wrong_phase", "accept_shoe", table="t1")  # offers: shoe_offer only
    await s.unharmed(before)

    await s.game.to_betting()
    await s.game.act("ann", "bet", area="banker", amount=500)
    spectator = await net.player(s.server, "cy", "msgpack")
    before = s.state()
    await s.bob.refused("not_holder", "pass_shoe", table="t1")
    await s.ann.refused("too_early", "pass_shoe", table="t1")  # not before one coup
    await s.bob.refused("wrong_phase", "turn", table="t1", hand="player", card=1)
    await s.bob.refused("wrong_phase", "squeeze", table="t1", hand="player", style="peek")
    await s.bob.refused("no_bet", "remove_bet", table="t1", area="banker")  # ann's bet, not bob's
    await s.bob.refused("wrong_phase", "cut", table="t1", position=100)
    await spectator.refused("not_joined", "bet", table="t1", area="player", amount=100)
    await spectator.refused("not_joined", "sit", table="t1")
    await s.unharmed(before)
    await spectator.join("t1")
    before = s.state()  # cy joined: that changed the table
    await spectator.refused("not_seated", "done", table="t1")  # (a bettor presses no DONE)
    await spectator.refused("not_seated", "stand", table="t1")
    await spectator.refused("seat_taken", "sit", table="t1", seat=2)
    await spectator.refused("bad_seat", "sit", table="t1", seat=15)
    await spectator.refused("bad_seat", "sit", table="t1", seat=0)
    await s.unharmed(before)

    await s.game.act("bob", "bet", area="player", amount=700)
    await s.game.act("ann", "done")
    await s.game.act("bob", "done")  # bob turns Player, ann (the holder) Banker
    before = s.state()
    await s.ann.refused("not_your_turn", "turn", table="t1", hand="player", card=1)
    await s.ann.refused("not_your_turn", "toss", table="t1", hand="player")
    await s.ann.refused("not_your_turn", "toss", table="t1", hand="banker")  # not yet
    await s.bob.refused("not_your_turn", "squeeze", table="t1", hand="banker", style="peek")
    await s.bob.refused("bad_hand", "toss", table="t1", hand="tie")
    await s.bob.refused("not_squeezing", "turn", table="t1", hand="player", card=1)
    await s.bob.refused("bad_style", "squeeze", table="t1", hand="player", style="slow")
    await s.bob.refused("wrong_phase", "bet", table="t1", area="player", amount=100)
    await s.bob.refused("wager_in_play", "stand", table="t1")
    await s.ann.refused("wager_in_play", "leave", table="t1")
    await s.bob.refused("not_squeezing", "progress", table="t1", hand="player", card=1, percent=5)
    await s.unharmed(before)
    await s.game.act("bob", "squeeze", hand="player", style="side")
    before = s.state()
    await s.bob.refused("already_squeezing", "squeeze", table="t1", hand="player", style="peek")
    await s.bob.refused("bad_card", "turn", table="t1", hand="player", card=3)
    await s.bob.refused("bad_card", "turn", table="t1", hand="player", card=0)
    await s.bob.refused("bad_amount", "progress", table="t1", hand="player", card=1, percent=101)
    await s.unharmed(before)
    await s.game.act("bob", "turn", hand="player", card=1)
    before = s.state()
    await s.bob.refused("card_already_turned", "turn", table="t1", hand="player", card=1)
    await s.unharmed(before)
    await s.game.act("bob", "turn", hand="player", card=2)
    # The coup still finishes normally.
    while not s.ann.events("t1", "settled"):
        prompt = s.game.prompt()
        await s.game.act(prompt["data"]["turner"], "toss", hand=prompt["data"]["hand"])
    audit = await s.server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]


async def test_replayed_command_ids_are_applied_once(net: Any) -> None:
    s = await scene(net)
    available = (await s.bob.call("balance"))["available"]
    first = await s.bob.call("bet", msg_id="bet-1", table="t1", area="player", amount=1_000)
    assert first["duplicate"] is False
    again = await s.bob.call("bet", msg_id="bet-1", table="t1", area="player", amount=1_000)
    assert again["duplicate"] is True and again["seq"] == first["seq"]
    # Even with other fields, the id was used: the retry is the same command.
    other = await s.bob.call("bet", msg_id="bet-1", table="t1", area="tie", amount=200)
    assert other["duplicate"] is True
    assert (await s.bob.call("balance"))["available"] == available - 1_000
    bets = [e for e in s.ann.events("t1", "bets") if e["data"]["player"] == "bob"]
    assert len(bets) == 1 and bets[0]["data"]["bets"] == {"player": 1_000}
    # A refused command's id is not used up: fixing the command and retrying works.
    await s.bob.refused("over_max", "bet", msg_id="bet-2", table="t1", area="tie", amount=2_000)
    ok = await s.bob.call("bet", msg_id="bet-2", table="t1", area="tie", amount=200)
    assert ok["duplicate"] is False
    # Ids are the player's: ann's "bet-1" is hers, not a replay of bob's.
    mine = await s.ann.call("bet", msg_id="bet-1", table="t1", area="player", amount=100)
    assert mine["duplicate"] is False
    # Integer ids too, and the same id from a second connection of the same player (one
    # the kit's own numbering, shared by every test of this process, never reaches).
    number = 10**12 + 77
    await s.bob.call("bet", msg_id=number, table="t1", area="banker", amount=300)
    bob2 = await net.player(s.server, "bob", "json")
    await bob2.join("t1")
    assert (await bob2.call("bet", msg_id=number, table="t1", area="banker", amount=300))[
        "duplicate"
    ] is True
    assert (await s.bob.call("balance"))["available"] == available - 1_000 - 200 - 300
    # A deposit's id is its idempotency key.
    d1 = await s.bob.call("deposit", msg_id="dep-1", amount=5_000)
    d2 = await s.bob.call("deposit", msg_id="dep-1", amount=5_000)
    assert (d1["duplicate"], d2["duplicate"]) == (False, True) and d1["balance"] == d2["balance"]


async def test_a_fresh_id_is_a_duplicate_only_when_it_changed_nothing(net: Any) -> None:
    """docs/protocol.md §5: duplicate is true for a repeated id, and for a command that
    succeeded but changed nothing (a second DONE, issue 8 defect 8); never otherwise."""
    s = await scene(net)
    assert (await s.ann.call("done", table="t1"))["duplicate"] is False
    events = len(s.ann.events("t1"))
    assert (await s.ann.call("done", table="t1"))["duplicate"] is True  # a new id, no change
    assert len(s.ann.events("t1")) == events  # and no event
    for _ in range(2):  # a fresh id that changes something is never a duplicate
        reply = await s.ann.call("bet", table="t1", area="banker", amount=100)
        assert reply["duplicate"] is False


async def test_unauthenticated_commands(net: Any, server: ChemmyServer) -> None:
    client = await net.connect(server, "msgpack")
    for kind, fields in [
        ("join", {"table": "t1"}),
        ("tables", {}),
        ("balance", {}),
        ("deposit", {"amount": 100}),
        ("bet", {"table": "t1", "area": "player", "amount": 100}),
        ("history", {}),
        ("chat", {"table": "t1", "text": "hi"}),
        ("create_table", {"table": "x1"}),
    ]:
        await client.refused("auth_required", kind, **fields)
    await client.call("ping")  # allowed before hello
    await client.refused("auth_required", "hello")  # neither a token nor a guest
    await client.refused("auth_required", "hello", guest=False)
    reply = await client.hello(guest=True, name="Late")
    assert reply["guest"] is True and reply["player"].startswith("guest-")
    await client.refused("already_authenticated", "hello", guest=True)
    await client.call("tables")


async def test_bad_tokens_and_names(net: Any, server: ChemmyServer) -> None:
    client = await net.connect(server, "json")
    forged = make_token(OTHER_SECRET, "ann")
    await client.refused("bad_token", "hello", token=forged)
    expired = make_token(SECRET, "ann", ttl=-3_600)
    reply = await client.refused("token_expired", "hello", token=expired)
    assert expired not in json.dumps(reply)
    await client.refused("bad_token", "hello", token="not.a.token")
    await client.refused("bad_token", "hello", token=make_token(SECRET, "guest-1234"))
    await client.refused("bad_name", "hello", guest=True, name="   ")
    await client.refused("bad_name", "hello", guest=True, name="x" * 33)
    await client.refused("bad_name", "hello", guest=True, name="evil\u202e")
    await client.refused("auth_required", "balance")  # none of that logged anybody in
    await client.hello(token=make_token(SECRET, "ann"))
    assert client.player == "ann"


async def test_tokens_on_a_guest_only_server(net: Any) -> None:
    server = await net.start(jwt_secret=None)
    client = await net.connect(server, "json")
    await client.refused("bad_token", "hello", token=make_token(SECRET, "ann"))
    server2 = await net.start(db=str(net.tmp_path / "other.db"), guest=False)
    client2 = await net.connect(server2, "msgpack")
    await client2.refused("auth_required", "hello", guest=True)


async def test_deposit_limits(net: Any, server: ChemmyServer) -> None:
    client = await net.player(server, "ann", "msgpack")
    balance = await client.balance()
    await client.refused("bad_amount", "deposit", amount=server.config.max_deposit + 1)
    await client.refused("bad_amount", "deposit", amount=0)
    await client.refused("bad_amount", "deposit", amount=-100)
    await client.refused("bad_message", "deposit", amount="100")
    start = await client.send({"type": "deposit", "amount": 100})  # no id: no idempotency key
    reply = await client.next_reply(start)
    assert reply["type"] == "error" and reply["code"] == "bad_message"
    assert await client.balance() == balance
    ok = await client.call("deposit", amount=server.config.max_deposit)
    assert ok["balance"] == balance + server.config.max_deposit
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]


async def test_chat_too_long_too_fast_and_not_joined(net: Any) -> None:
    s = await scene(net, chat_max_len=50, chat_rate=3)
    outsider = await net.player(s.server, "zed", "json")
    before = s.state()
    await outsider.refused("not_joined", "chat", table="t1", text="hello")
    await s.ann.refused("chat_too_long", "chat", table="t1", text="x" * 51)
    await s.ann.refused("bad_chat", "chat", table="t1", text=" \t\n ")
    await s.ann.call("chat", table="t1", text="  one   two  ")  # whitespace is folded
    await s.ann.call("chat", table="t1", text="two")
    await s.ann.call("chat", table="t1", text="three")
    await s.ann.refused("chat_rate", "chat", table="t1", text="four")
    await s.bob.call("chat", table="t1", text="bob may still talk")
    assert [c["text"] for c in await _chats(s.bob, 4)] == [
        "one two",
        "two",
        "three",
        "bob may still talk",
    ]
    await s.unharmed(before)


async def _chats(client: Client, n: int) -> list[dict[str, Any]]:
    await client.wait_frame(lambda m: m.get("type") == "chat" and len(client.chats()) >= n)
    return client.chats()


# ---------------------------------------------------------------------- size, rate, origin
@pytest.mark.parametrize("fmt", ["json", "msgpack"])
async def test_a_frame_over_max_frame_closes_that_connection_only(net: Any, fmt: str) -> None:
    s = await scene(net)
    big = await net.player(s.server, "cy", fmt)
    await big.join("t1")
    await big.call("sit", table="t1")
    await big.call("bet", table="t1", area="tie", amount=100)
    before_money = dict(s.server.actors["t1"].wallet.balances)
    message = {"type": "chat", "id": 1, "table": "t1", "text": "x" * 70_000}
    await big.send(message)
    assert await big.wait_closed() == 1009  # message too big
    await s.ann.wait_event("disconnected", lambda e: e["data"]["player"] == "cy", table="t1")
    assert dict(s.server.actors["t1"].wallet.balances) == before_money
    for client in (s.ann, s.bob):
        await client.call("ping")
    # The table plays on, cy's chips (placed, not held) included when the coup is dealt.
    await big.reconnect("t1")
    s.game.players["cy"] = big
    log = await s.game.play_coup({})
    assert log.bets["cy"] == {"tie": 100}
    just_under = {"type": "ping", "id": 2, "pad": "y" * 60_000}
    start = await s.bob.send(just_under)
    assert (await s.bob.next_reply(start))["type"] == "error"  # extra field, but answered


async def test_flood_past_the_rate_limit(net: Any, server: ChemmyServer) -> None:
    assert (server.config.rate_limit, server.config.rate_burst) == (20.0, 40)
    client = await net.player(server, "ann", "msgpack")
    start = len(client.frames)
    for n in range(60):
        await client.send({"type": "ping", "id": f"f{n}"})
    await client.wait_frame(lambda m: m.get("id") == "f59")
    replies = client.replies(start)
    assert len(replies) == 60
    codes = [r.get("code", "ok") for r in replies]
    assert codes[:39] == ["ok"] * 39  # the burst (less the hello)
    assert codes.count("rate_limited") >= 15
    assert set(codes) == {"ok", "rate_limited"}
    # Below the close threshold the connection survives: once the bucket refills (no event
    # to wait for here: it is time), commands work again.
    await asyncio.sleep(scaled(0.2))
    await client.call("ping")
    assert not client.closed


async def test_a_flood_past_the_close_threshold_is_cut_off_at_once(net: Any) -> None:
    s = await scene(net)
    try:
        with contextlib.suppress(ConnectionClosed):
            for n in range(320):
                await s.bob.send({"type": "ping", "id": f"g{n}"})
        await s.bob.wait_frame(
            lambda m: len([r for r in s.bob.replies() if r.get("code") == "rate_limited"]) >= 200
        )
        # The table hears bob is gone (and his socket is closed) promptly.
        await s.ann.wait_event(
            "disconnected", lambda e: e["data"]["player"] == "bob", table="t1", timeout=scaled(2)
        )
        assert await s.bob.wait_closed(timeout=scaled(1)) == 1008
    finally:
        await s.bob.abort()  # do not wait out the server's close_timeout


async def test_a_flood_of_garbage_is_rate_limited_too(net: Any, server: ChemmyServer) -> None:
    client = await net.player(server, "ann", "msgpack")
    with contextlib.suppress(ConnectionClosed):
        for _ in range(300):
            await client.send_raw(b"\xc1")
    assert await client.wait_closed() == 1008
    codes = [r.get("code") for r in client.replies()]
    assert codes[1:30] == ["bad_frame"] * 29  # answered, within the burst
    assert codes.count("rate_limited") >= 200  # then refused, then cut off


async def test_wrong_origin_is_closed_with_4003_before_anything_is_read(net: Any) -> None:
    """docs/protocol.md §2: a browser from an origin not in ``--origins`` is closed at
    once with 4003 ``origin_not_allowed`` (a page can read a close code, not a 403), its
    hello never answered; the server's own origin (the ``Host`` it was asked for) needs
    no entry; no Origin (the CLI, bots) is admitted."""
    server = await net.start(origins=("https://good.example",))
    url = f"ws://127.0.0.1:{server.port}/"
    for origin in ("https://evil.example", f"http://localhost:{server.port}", "null"):
        async with connect(
            url,
            origin=origin,
            subprotocols=["chemmy.v1.json"],
            proxy=None,  # type: ignore[arg-type, list-item]
        ) as ws:
            with contextlib.suppress(ConnectionClosed):
                await ws.send(json.dumps({"type": "hello", "id": "h", "guest": True}))
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
        assert closed.value.rcvd is not None, origin
        assert closed.value.rcvd.code == 4003, origin
        assert closed.value.rcvd.reason.startswith("origin_not_allowed: "), origin
    good = await net.connect(server, "json", origin="https://good.example")
    await good.hello(guest=True)
    own = await net.connect(server, "json", origin=f"http://127.0.0.1:{server.port}")
    await own.hello(guest=True)
    cli = await net.connect(server, "msgpack")  # no Origin: not a browser (the CLI, bots)
    await cli.hello(guest=True)


# ---------------------------------------------------------------------- fuzzing
LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=8),
)
VALUE = st.recursive(
    LEAF,
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3)
    ),
    max_leaves=8,
)
BY_FIELD: dict[str, st.SearchStrategy[Any]] = {
    "table": st.sampled_from(["t1"] * 9 + ["t2"]),
    "area": st.sampled_from(["player", "banker", "tie", "player_pair", "banker_pair", "super6"]),
    "amount": st.sampled_from([-1, 0, 99, 100, 150, 500, 1_000, 1_500, 10_000, 10_001, 2**53 - 1]),
    "hand": st.sampled_from(["player", "banker", "tie"]),
    "style": st.sampled_from(["peek", "side", "quick", "fast"]),
    "card": st.integers(min_value=0, max_value=4),
    "percent": st.integers(min_value=-1, max_value=101),
    "position": st.integers(min_value=5, max_value=420),
    "seat": st.integers(min_value=0, max_value=16),
    "since": st.integers(min_value=-1, max_value=60),
    "limit": st.integers(min_value=-1, max_value=101),
    "shoe": st.integers(min_value=-1, max_value=3),
    "options": st.dictionaries(st.sampled_from(["tier", "decks", "timers", "x"]), LEAF, max_size=2),
}
BY_TYPE: dict[type, st.SearchStrategy[Any]] = {
    int: st.integers(min_value=-(2**53), max_value=2**53),
    str: st.text(max_size=12),
    bool: st.booleans(),
    dict: st.dictionaries(st.text(max_size=5), LEAF, max_size=2),
}
NAMES = sorted(SCHEMAS)


@st.composite
def command(draw: st.DrawFn) -> dict[str, Any]:
    """A map for a known command (mostly), its fields mostly of the right type and
    plausible, sometimes of any type, missing, or with an extra field."""
    name = draw(st.sampled_from(NAMES)) if draw(st.integers(0, 9)) else draw(st.text(max_size=10))
    message: dict[str, Any] = {"type": name}
    for field, (types, required) in SCHEMAS.get(name, {}).items():
        if draw(st.integers(0, 9)) >= (9 if required else 5):
            continue  # left out
        roll = draw(st.integers(0, 9))
        if roll < 7 and field in BY_FIELD:
            message[field] = draw(BY_FIELD[field])
        elif roll < 9:
            kinds = types if isinstance(types, tuple) else (types,)
            message[field] = draw(st.sampled_from([BY_TYPE[t] for t in kinds]).flatmap(lambda x: x))
        else:
            message[field] = draw(VALUE)
    roll = draw(st.integers(0, 9))
    if roll < 7:
        message["id"] = draw(st.integers(min_value=1, max_value=2**40))
    elif roll < 9:
        message["id"] = draw(st.text(max_size=70) | VALUE)
    if draw(st.integers(0, 14)) == 0:
        message[draw(st.text(max_size=6))] = draw(VALUE)
    return message


@st.composite
def fuzz_frame(draw: st.DrawFn) -> tuple[str, Any]:
    """("own", map) in the connection's format, ("other", map) in the other one, or noise."""
    roll = draw(st.integers(0, 19))
    if roll < 17:
        return "own", draw(command())
    if roll < 18:
        return "other", draw(command())
    return "noise", draw(st.binary(max_size=200) | st.text(max_size=200))


def to_frame(message: dict[str, Any], fmt: str) -> str | bytes:
    if fmt == "msgpack":
        return msgpack.packb(message, use_bin_type=True)
    return json.dumps(message, default=lambda b: b.hex(), allow_nan=True)


@pytest.fixture
async def fuzz_scene(net: Any) -> Scene:
    return await scene(net, rate_limit=100_000.0, rate_burst=100_000)


@pytest.mark.slow
@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(frames=st.lists(fuzz_frame(), min_size=1, max_size=6), to_bob=st.booleans())
async def test_fuzz_every_frame_is_answered(
    fuzz_scene: Scene, frames: list[Any], to_bob: bool
) -> None:
    s = fuzz_scene
    client = s.bob if to_bob else s.ann
    own, other = ("msgpack", "json") if to_bob else ("json", "msgpack")
    # A fuzzed leave or stand takes a player away; bring both back, to fuzz deeper.
    table = s.server.actors["t1"].table
    for player in (s.ann, s.bob):
        if str(player.player) not in table.players or "t1" not in _joined(s.server, player):
            await player.call("join", table="t1")
        if table.players[str(player.player)].seat is None:
            await player.rpc("sit", table="t1")  # refused only if the seat was taken meanwhile
    for which, item in frames:
        frame = item if which == "noise" else to_frame(item, own if which == "own" else other)
        start = await client.send_raw(frame)
        reply = await client.next_reply(start, timeout=scaled(5))
        assert reply["type"] in ("ok", "error"), reply
        if reply["type"] == "error":
            assert reply["code"] != "internal", (item, reply)
            assert isinstance(reply["message"], str) and reply["message"]
        assert not client.closed, (item, client.close_codes)
    client.assert_clean()
    audit = await s.server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"], audit


def _joined(server: ChemmyServer, client: Client) -> set[str]:
    """The tables this client's connection is joined to, as the server sees it."""
    for session in server.sessions.values():
        identity = session.identity
        if identity is not None and identity.player_id == client.player:
            return set(session.tables)
    return set()
