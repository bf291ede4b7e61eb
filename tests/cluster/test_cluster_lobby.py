"""The lobby and the operators across processes (issue 11, "Lobby and presence"): real
``chemmy-server`` processes over a real Redis.

- ``tables`` asked of any process lists every table, with the seats taken and the
  watchers counted over every process (each owner keeps its tables' lines in Redis);
- an operator's ``create_table`` on one process makes a table every process lists and
  serves; ``close_table`` on another closes it everywhere (listed nowhere, joined
  nowhere);
- a table id closed and created again is a new table on every process, numbering its
  events on from the closed one's last ``seq``: a ``join`` resuming from the close gets
  the new table's events only (neither a process's recent events nor the stored ones
  of the old table), and the new table's events reach every process's clients.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.kit import Client, Game, open_player, scaled, table_def
from tests.kit.cluster import Cluster, retry, settle

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each


async def lines(client: Client) -> dict[str, dict[str, Any]]:
    """The lobby as ``client``'s process lists it: table id -> its line."""
    reply = await client.call("tables")
    return {line["table"]: line for line in reply["tables"]}


async def listed(clients: list[Client], check: Callable[[dict[str, dict[str, Any]]], bool]) -> None:
    """Wait until the lobby every client's process lists passes ``check``."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        async with asyncio.timeout(scaled(10)):
            while True:
                for client in clients:
                    found[client.label] = await lines(client)
                if all(check(lobby) for lobby in found.values()):
                    return
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"the lobbies never agreed: {found}") from None


def counts(line: dict[str, Any]) -> tuple[int, int]:
    return line["seated"], line["spectators"]


async def test_the_lobby_and_the_operators_work_from_any_process(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster(3, [table_def("t1"), table_def("t2")])
    await cluster.ready(tables=2)
    a, b, c = cluster.nodes
    ops = {
        node.url: await open_player(node.url, f"op{n}", roles=("operator",), label=f"op{n}")
        for n, node in enumerate(cluster.nodes)
    }
    ann = await open_player(a.url, "ann")
    bob = await open_player(b.url, "bob", "msgpack")
    sue = await open_player(b.url, "sue")
    tom = await open_player(c.url, "tom", "msgpack")
    una = await open_player(a.url, "una")
    everyone = [*ops.values(), ann, bob, sue, tom, una]
    try:
        # Seats and watchers at t1 come from three processes; t2 has one watcher.
        # Placement may still move a table just after the start (answered
        # "unavailable"): each is retried with its id, as a client does.
        for client, table, sit in (
            (ann, "t1", True),
            (bob, "t1", True),
            (sue, "t1", False),
            (tom, "t1", False),
            (una, "t2", False),
        ):
            await retry(client, "join", msg_id=f"join-{client.label}", table=table)
            if sit:
                await retry(client, "sit", msg_id=f"sit-{client.label}", table=table)
        await listed(
            list(ops.values()),
            lambda lobby: (
                set(lobby) == {"t1", "t2"}
                and counts(lobby["t1"]) == (2, 2)
                and counts(lobby["t2"]) == (0, 1)
            ),
        )
        # A watcher leaves on one process: every process counts one fewer.
        await tom.call("leave", table="t1")
        await listed(list(ops.values()), lambda lobby: counts(lobby["t1"]) == (2, 1))

        # An operator on c opens t9; every process lists it, and it is played from a.
        made = await ops[c.url].call("create_table", table="t9", options={"tier": "1-100"})
        assert made["table"]["table"] == "t9"
        await listed([*ops.values(), ann], lambda lobby: "t9" in lobby)
        await settle(lambda: "t9" in cluster.owners())
        # (The lease is taken a moment before its owner serves: ``unavailable`` meanwhile.)
        await retry(sue, "join", msg_id="sue-t9", table="t9")  # b keeps t9's events
        await retry(ann, "join", msg_id="ann-t9", table="t9")
        await ann.call("sit", table="t9")
        await Game("t9", {"ann": ann}, ann).to_betting()  # a few events to number
        old_seq = ann.last_seq["t9"]
        await sue.wait_seq("t9", old_seq)
        assert old_seq >= 1
        await listed(list(ops.values()), lambda lobby: counts(lobby["t9"]) == (1, 1))

        # The operator on b closes it: it is gone everywhere.
        closed = await ops[b.url].call("close_table", table="t9")
        assert closed["closed"] is True
        closed_seq = (await sue.wait_event("closed", table="t9"))["seq"]
        assert closed_seq > old_seq
        await listed([*ops.values(), tom], lambda lobby: "t9" not in lobby)
        await settle(lambda: "t9" not in cluster.owners())
        for client in (ann, tom):
            await client.refused("no_table", "join", table="t9")

        # Created again by the operator on a: a new table, on every process.
        await ops[a.url].call("create_table", table="t9", options={"tier": "1-100"})
        await listed(list(ops.values()), lambda lobby: "t9" in lobby)
        await settle(lambda: "t9" in cluster.owners())
        for client in (sue, tom):
            reply = await retry(client, "join", msg_id=f"{client.label}-rejoin", table="t9")
            assert reply["resumed"] is False and reply["snapshot"]["seats"] == []
        # Its events reach the watchers on every process, numbered on from the close.
        await bob.join("t9")
        sat = await bob.call("sit", table="t9")
        assert sat["seq"] > closed_seq
        for client in (sue, tom):
            await client.wait_seq("t9", sat["seq"])
            event = await client.wait_event("sat", table="t9", start=client.snapshot_at["t9"])
            assert event["data"]["player"] == "bob" and event["seq"] <= sat["seq"]
        # Resuming finds the new table's events only, wherever asked (b kept the old
        # table's recent events, c and a never watched it).
        for client in (sue, tom, una):
            start = len(client.frames)
            reply = await client.call("join", table="t9", since=closed_seq)
            assert reply["resumed"] is True, reply
            await client.call("ping")  # the replayed events come before this reply
            replayed = client.events("t9", start=start)
            assert [e["seq"] for e in replayed] == list(range(closed_seq + 1, reply["seq"] + 1))
            sitters = [e["data"]["player"] for e in replayed if e["kind"] == "sat"]
            assert sitters == ["bob"], replayed
        for client in everyone:
            client.assert_clean()
    finally:
        for client in everyone:
            await client.close()
