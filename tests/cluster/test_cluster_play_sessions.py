"""A player's play session holds over the whole cluster, over two real ``chemmy-server``
processes on a real Redis: a reality check that came due on one process is sent again
by the other at hello and refuses that connection's bets until answered, and an answer
there clears it on the first process too; both processes report the one session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.kit.client import Client, open_player
from tests.kit.cluster import Cluster

pytestmark = pytest.mark.slow  # server subprocesses: seconds each

#: A reality check every 2.4 s of play.
EVERY = 0.04


def is_check(message: dict[str, Any]) -> bool:
    return message.get("type") == "reality_check"


async def session_of(client: Client) -> dict[str, Any]:
    found = (await client.call("limits"))["session"]
    assert isinstance(found, dict)
    return found


async def test_a_reality_check_due_on_one_process_holds_on_the_other(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(2, reality_check=EVERY)
    await cluster.ready()
    one_url, two_url = (node.url for node in cluster.nodes)
    clients: list[Client] = []
    try:
        on_one = await open_player(one_url, "ann", name="Ann")
        clients.append(on_one)
        await on_one.next_frame(is_check, timeout=15)
        started = (await session_of(on_one))["started"]
        on_two = await open_player(two_url, "ann", name="Ann")
        clients.append(on_two)
        await on_two.next_frame(is_check, timeout=5)  # sent right after its hello
        session = await session_of(on_two)
        assert session["started"] == started and session["reality_check_due"] is True
        await on_two.join("t1")
        await on_two.refused("reality_check_due", "bet", table="t1", area="banker", amount=100)
        assert (await on_two.call("reality_ack", choice="continue"))["choice"] == "continue"
        session = await session_of(on_one)
        assert session["started"] == started and session["reality_check_due"] is False
        await on_one.refused("no_reality_check", "reality_ack", choice="continue")
    finally:
        for client in clients:
            await client.close()
