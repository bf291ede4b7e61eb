"""A guest who drops comes back as the same player (§5: the seat is held for the grace
period): the hello reply hands a guest a resume token signed by the server."""

from __future__ import annotations

from typing import Any

import jwt

from server.table.views import view as snapshot


async def test_a_dropped_guest_resumes_as_the_same_player_in_the_same_seat(net: Any) -> None:
    server = await net.start()
    ann = await net.guest(server, "msgpack", name="Ann")
    token = ann.hello_reply["resume"]
    await ann.join("t1")
    sat = await ann.call("sit", table="t1", seat=4)
    await ann.abort()
    await ann.open()
    again = await ann.call("hello", guest=True, resume=token)
    assert again["player"] == ann.player and again["name"] == "Ann"
    joined = await ann.call("join", table="t1", since=sat["seq"])
    assert joined["resumed"] is True
    seats = snapshot(server.actors["t1"].table, None)["seats"]
    assert [(s["seat"], s["player"], s["connected"]) for s in seats] == [(4, ann.player, True)]


async def test_a_forged_or_foreign_resume_token_is_refused(net: Any) -> None:
    server = await net.start()
    eve = await net.connect(server)
    forged = jwt.encode({"sub": "guest-0123456789abcdef", "kind": "guest", "exp": 2**40}, "x" * 32)
    reply = await eve.rpc("hello", guest=True, resume=forged)
    assert (reply["type"], reply["code"]) == ("error", "bad_token")
    assert "guest-0123" not in reply["message"]  # nothing of the token is echoed
    # the connection survives and a plain guest hello still works
    fresh = await eve.call("hello", guest=True)
    assert fresh["player"].startswith("guest-") and fresh["player"] != "guest-0123456789abcdef"


async def test_a_token_player_gets_no_resume_token(net: Any) -> None:
    server = await net.start()
    bob = await net.player(server, "bob")
    assert "resume" not in bob.hello_reply


async def test_the_hello_reply_passes_the_tokens_language_on(net: Any) -> None:
    """Issue 17: the token's ``language`` claim, as it is, for the client to choose its
    words; ``null`` without one, and for a guest."""
    from server.process.auth import make_token
    from tests.kit import SECRET

    server = await net.start()
    marie = await net.connect(server)
    reply = await marie.call("hello", token=make_token(SECRET, "marie", "Marie", language="fr-CA"))
    assert reply["language"] == "fr-CA"
    ann = await net.connect(server)
    assert (await ann.call("hello", token=make_token(SECRET, "ann")))["language"] is None
    guest = await net.guest(server, "json", name="Bo")
    assert guest.hello_reply["language"] is None
    eve = await net.connect(server)
    bad = jwt.encode({"sub": "eve", "exp": 2**40, "language": "not a tag"}, SECRET)
    refused = await eve.rpc("hello", token=bad)
    assert (refused["type"], refused["code"]) == ("error", "bad_token")
