"""The operator's table controls on a cluster (issue 21): any process takes the HTTP
call and it reaches the table's owner over the bus. Two real ``chemmy-server``
processes over a real Redis; the calls go to the one that does not own the table."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from server.store import open_store
from tests.kit import Game, open_player, table_def
from tests.kit.cluster import Cluster, retry
from tests.kit.crash import check_books
from tests.server.test_operator_voids import KEY, Back

pytestmark = pytest.mark.slow  # server subprocesses: seconds each


async def test_a_void_and_a_pause_sent_to_another_process_reach_the_owner(
    make_cluster: Callable[..., Cluster],
) -> None:
    long = {"betting": 60, "squeeze": 60, "third_card": 60}
    cluster = make_cluster(2, [table_def("t1", timers=long)], operator_key=KEY)
    await cluster.ready(tables=1)
    owner = cluster.owner("t1")
    assert owner is not None
    (other,) = [n for n in cluster.nodes if n is not owner]
    ann = await open_player(other.url, "ann", label="ann")
    back = Back(other.port)
    try:
        await retry(ann, "join", msg_id="ann-join", table="t1")
        await ann.call("sit", table="t1")
        game = Game("t1", {"ann": ann}, ann)
        opened = await game.to_betting()
        rid = opened["data"]["round_id"]
        await game.act("ann", "bet", area="player", amount=1_000)
        paused = await back.post("/operator/v1/tables/t1/pause")
        assert paused.status_code == 200, paused.text
        assert paused.json()["paused"] is True
        await game.act("ann", "done")  # the coup on the felt goes on
        turn = await ann.wait_event("turn", table="t1")
        assert turn["data"]["turner"] == "ann"
        answer = await back.void(rid, "a cluster test")
        assert answer.status_code == 200, answer.text
        voided = await ann.wait_event("voided", table="t1")
        assert voided["data"]["refunded"] == {"ann": 1_000}
        # The lobby line, shared through Redis (each process reads it at most every
        # 0.25 s), says so on the other process too.
        for _ in range(50):
            lines = (await ann.call("tables"))["tables"]
            line = [(x["phase"], x["paused"]) for x in lines if x["table"] == "t1"]
            if line == [("paused", True)]:
                break
            await asyncio.sleep(0.1)
        assert line == [("paused", True)], line
        resumed = await back.post("/operator/v1/tables/t1/resume")
        assert resumed.status_code == 200 and resumed.json()["paused"] is False
        await ann.wait_event("betting_opened", table="t1", after=voided["seq"])
        refused = await back.void(rid)
        assert refused.status_code == 409 and refused.json()["status"] == "already_settled"
    finally:
        await back.http.aclose()
        await ann.close()
    store = await open_store(cluster.url)
    try:
        await check_books(store, ["ann"], round_ids=[rid])
    finally:
        await store.close()
