"""A client that floods in bursts with small gaps is still cut off: refusals are counted
over time, not "in a row" (one accepted message between bursts used to reset the count,
and 18,701 refused messages went through in 8 s)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed


async def test_bursts_with_gaps_are_cut_off(net: Any) -> None:
    server = await net.start(rate_limit=20.0, rate_burst=40)
    client = await net.player(server, "ann", "msgpack")
    sent = 0
    with contextlib.suppress(ConnectionClosed):
        for _burst in range(40):
            for _ in range(60):
                await client.send({"type": "ping", "id": sent})
                sent += 1
            await asyncio.sleep(0.12)  # a token or two come back: some pings pass
            if client.closed:
                break
    assert await client.wait_closed() == 1008
    codes = [r.get("code") for r in client.replies()]
    refused = codes.count("rate_limited")
    accepted = sum(1 for r in client.replies() if r.get("type") == "ok")
    assert accepted > 40  # gaps let some through, as before
    assert 200 <= refused < 200 + 5 * 0.2 * 40 + 60, refused  # the cut-off came in time


@pytest.mark.slow
async def test_a_steady_client_at_its_rate_is_never_cut_off(net: Any) -> None:
    server = await net.start(rate_limit=50.0, rate_burst=10)
    client = await net.player(server, "bob", "json")
    for n in range(60):  # 30 a second: under the rate
        reply = await client.rpc("ping", msg_id=n)
        assert reply["type"] == "ok"
        await asyncio.sleep(1 / 30)
    assert not client.closed
