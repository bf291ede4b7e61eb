"""What a table shows and never stores reaches its watchers on every process of a
cluster: a chat line and a squeezed card's bend, over two real ``chemmy-server``
processes on a real Redis. Each is a transient event of the table's owner, in its place
among the table's events (its ``seq`` is the stored event's before it: the test kit's
client checks every one's order), so a chat said through one process is read through
the other (it used to reach only the process that took it), and a bend made through the
process that does not own the table reaches the one that does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.kit import Game
from tests.kit.client import Client, open_player
from tests.kit.cluster import Cluster

pytestmark = pytest.mark.slow  # server subprocesses: seconds each


def said(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda m: m.get("type") == "chat" and m.get("text") == text


def is_bend(m: dict[str, Any]) -> bool:
    return m.get("type") == "progress" and "turner" in m


async def test_chat_and_a_bend_reach_the_other_process(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(2)
    await cluster.ready()
    owner = cluster.owner("t1")
    assert owner is not None
    (other,) = [node for node in cluster.nodes if node is not owner]
    clients: list[Client] = []
    try:
        ann = await open_player(owner.url, "ann", name="Ann")  # holds the shoe
        bob = await open_player(other.url, "bob", fmt="msgpack", name="Bob")  # relayed
        spec = await open_player(other.url, "spec", name="Spec")
        clients += [ann, bob, spec]
        for client in clients:
            await client.join("t1")

        # A chat said on one process is read on the other, both ways, once each.
        for speaker, text in ((ann, "good luck"), (bob, "merci")):
            starts = [len(c.frames) for c in clients]
            assert (await speaker.call("chat", table="t1", text=text)).keys() == {"type", "id"}
            for client, start in zip(clients, starts, strict=True):
                line = await client.wait_frame(said(text), start=start, timeout=10)
                assert line["seq"] == client.last_seq["t1"] and line["table"] == "t1"
                assert line["name"] == ("Ann" if speaker is ann else "Bob")
        for client in clients:
            assert [m["text"] for m in client.chats()] == ["good luck", "merci"]

        # A bend made through the process that does not own the table.
        for client in (ann, bob):
            await client.call("sit", table="t1")
        game = Game("t1", {"ann": ann, "bob": bob}, spec)
        await game.act("ann", "accept_shoe")
        await game.to_betting()
        await game.act("ann", "bet", area="banker", amount=500)
        await game.act("bob", "bet", area="player", amount=700)  # bob turns Player
        await game.act("ann", "done")
        await game.act("bob", "done")
        await game.act("bob", "squeeze", hand="player", style="peek")
        starts = [len(c.frames) for c in clients]
        reply = await bob.call("progress", table="t1", hand="player", card=1, percent=40)
        for client, start in zip(clients, starts, strict=True):
            bend = await client.wait_frame(is_bend, start=start, timeout=10)
            assert bend["seq"] == reply["seq"] and bend["percent"] == 40
            assert bend["turner"] == "bob"
        await game.act("bob", "turn", hand="player", card=1)  # the next stored step
        for client in clients:
            client.assert_clean()  # every chat line and bend in its place
    finally:
        for client in clients:
            await client.close()
