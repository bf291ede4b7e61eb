"""A command whose table never answers (its owner died before it could, or the bus lost
the reply) is answered ``timeout`` at the client's gateway, and the connection goes on;
retried with the same id, it is applied once (issue 11, "Commands in flight")."""

from __future__ import annotations

from typing import Any

import pytest

from server.protocol.records import CommandRecord
from tests.kit import Game, scaled


@pytest.mark.slow
async def test_an_unanswered_command_times_out_and_its_retry_applies_once(net: Any) -> None:
    server = await net.start(command_timeout=1.0)
    ann = await net.player(server, "ann")
    await ann.join("t1")
    await ann.call("sit", table="t1")
    await Game("t1", {"ann": ann}, ann).to_betting()
    real = server.bus.submit
    lost: list[CommandRecord] = []

    def lose_bets(record: CommandRecord) -> None:
        if record.kind == "bet" and not lost:
            lost.append(record)  # into the void: no owner ever hears of it
            return
        real(record)

    server.bus.submit = lose_bets  # type: ignore[method-assign]
    reply = await ann.rpc(
        "bet", msg_id="b-1", table="t1", area="banker", amount=500, timeout=scaled(5)
    )
    assert (reply["type"], reply["code"], reply["id"]) == ("error", "timeout", "b-1")
    assert lost and lost[0].id == "b-1"
    assert await ann.call("ping")  # the connection goes on
    first = await ann.call("bet", msg_id="b-1", table="t1", area="banker", amount=500)
    again = await ann.call("bet", msg_id="b-1", table="t1", area="banker", amount=500)
    assert (first["duplicate"], again["duplicate"]) == (False, True)
    you = (await ann.call("join", table="t1"))["snapshot"]["you"]
    assert you["bets"] == {"banker": 500}  # once
