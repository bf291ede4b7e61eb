"""The per-player and per-address limits hold for the whole cluster, over three real
``chemmy-server`` processes on a real Redis (issue 18.5: each process used to count
alone, and one guest held 3 x the cap, an address got 3 x the hello burst):

- one guest's connections over the three processes: the player cap, then
  ``too_many_connections`` wherever the next hello comes; one address's connections: the
  address cap, then 1008 on any process;
- a killed process's connections stop counting once it has left the cluster;
- an address's hellos over the three: the burst (+ at most a chunk per process);
- one player's messages over the three: the cluster-wide burst, not three; then their
  WebSocket pings are left unanswered on every process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from server.limits.shared import chunk
from tests.kit.client import Client, open_guest, open_player
from tests.kit.cluster import Cluster, settle

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

PLAYER_CAP = 5
ADDRESS_CAP = 14


async def _guest_again(url: str, resume: str) -> tuple[Client, dict[str, Any]]:
    """A new connection to ``url`` saying hello as the guest ``resume`` brings back."""
    client = await Client(url, label="again").open()
    return client, await client.rpc("hello", guest=True, resume=resume)


async def _opened(url: str) -> tuple[Client, bool]:
    """A plain connection to ``url``; whether it stayed open (else it was closed 1008)."""
    client = await Client(url, label="plain").open()
    try:
        reply = await client.rpc("ping")
    except (ConnectionError, ConnectionClosed):  # (closed before or after the ping went)
        reply = None
    if reply is not None and reply.get("type") == "ok":
        return client, True
    code = await client.wait_closed()
    assert code == 1008, code
    return client, False


async def test_connections_are_capped_over_the_cluster(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(
        3, max_connections_per_player=PLAYER_CAP, max_connections_per_address=ADDRESS_CAP
    )
    await cluster.ready()
    urls = [node.url for node in cluster.nodes]
    clients: list[Client] = []
    try:
        first = await open_guest(urls[0], name="Ann")
        clients.append(first)
        assert first.hello_reply is not None
        resume = first.hello_reply["resume"]
        # 2 more on node 2, 2 on node 1: the guest's 5; then one more on each is refused.
        places = [2, 2, 1, 1, 0, 1, 2]
        answers = []
        for n in places:
            client, reply = await _guest_again(urls[n], resume)
            clients.append(client)
            answers.append(reply)
        assert [a["type"] for a in answers] == ["ok"] * 4 + ["error"] * 3, answers
        assert all(a["player"] == first.player for a in answers[:4])
        assert {a["code"] for a in answers[4:]} == {"too_many_connections"}
        # The address: 8 connections open; 6 more over the three, then 1008 on each.
        opened = []
        for n in range(9):
            client, ok = await _opened(urls[n % 3])
            clients.append(client)
            opened.append(ok)
        assert opened == [True] * (ADDRESS_CAP - 8) + [False] * 3, opened

        # Node 2 (2 guest connections, 1 refused hello, 2 plain) is killed: once it has
        # left the cluster its connections count no more.
        gone = cluster.nodes[2]
        gone_name = cluster.node_name(gone)
        gone.kill()
        await settle(lambda: gone_name not in cluster.members(), timeout=10)
        for _ in range(2):
            client, reply = await _guest_again(urls[0], resume)
            clients.append(client)
            assert reply["type"] == "ok", reply
        client, reply = await _guest_again(urls[1], resume)
        clients.append(client)
        assert reply["type"] == "error" and reply["code"] == "too_many_connections", reply
        # 14 - 5 on node 2 + 3 new: 12 open; two more, then 1008.
        opened = []
        for n in range(3):
            client, ok = await _opened(urls[n % 2])
            clients.append(client)
            opened.append(ok)
        assert opened == [True, True, False], opened
    finally:
        for client in clients:
            await client.close()


async def test_rates_are_shared_over_the_cluster(make_cluster: Callable[..., Cluster]) -> None:
    hello_burst, player_burst = 60, 40
    cluster = make_cluster(
        3,
        hello_rate_limit=0.01,
        hello_rate_burst=hello_burst,
        player_rate_limit=0.01,
        player_rate_burst=player_burst,
    )
    await cluster.ready()
    urls = [node.url for node in cluster.nodes]
    clients: list[Client] = []
    try:
        # One player's messages (pings), a connection on each process, sent in turn.
        players = [await open_player(url, "pat") for url in urls]
        clients.extend(players)
        for player in players:  # a ping frame is answered while the bucket has tokens
            assert player.ws is not None
            await asyncio.wait_for(await player.ws.ping(), 5)
        answered = [0, 0, 0]
        for _round in range(2 * player_burst):
            replies = await asyncio.gather(*(p.rpc("ping") for p in players))
            for n, reply in enumerate(replies):
                if reply["type"] == "ok":
                    answered[n] += 1
                else:
                    assert reply["code"] == "rate_limited", reply
        # One process alone would answer all 40 of its own.
        total = sum(answered)
        assert player_burst - 3 <= total <= player_burst + 3 * chunk(player_burst), answered
        # WebSocket ping frames spend the same bucket: on every process (each of which
        # answered under 40 itself) a ping is now left unanswered.
        for player in players:
            assert player.ws is not None
            pong = await player.ws.ping()
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(pong, 0.5)
        # One address's hellos: each process in turn is sent 2 x the burst (all but the
        # first hello of a connection are answered already_authenticated: they still
        # spend a hello).
        said = []
        for url in urls:
            client = await Client(url, label="hellos").open()
            clients.append(client)
            answers = [await client.rpc("hello", guest=True) for _ in range(2 * hello_burst)]
            said.append(sum(a.get("code") != "rate_limited" for a in answers))
        # The player's three hellos above spent three.
        assert hello_burst - 3 <= sum(said) <= hello_burst + 3 * chunk(hello_burst), said

    finally:
        for client in clients:
            await client.close()
