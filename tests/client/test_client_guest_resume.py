"""A guest whose connection drops comes back as the same player, seat held (§5): the
client presents the resume token from its last hello. Against a real server."""

from __future__ import annotations

import asyncio
from typing import Any

from client_cli.connection import Connection


async def next_status(conn: Connection, state: str) -> dict[str, Any]:
    async def get() -> dict[str, Any]:
        async for item in conn.stream():
            if item["type"] == "status" and item["state"] == state:
                return item
        raise AssertionError("the stream ended")

    return await asyncio.wait_for(get(), 10)


async def test_a_guest_resumes_after_a_drop_in_the_same_seat(chemmy_server: Any) -> None:
    conn = Connection(
        chemmy_server.url, guest=True, name="Gwen", backoff_initial=0.05, backoff_max=0.2
    )
    await conn.start()
    player = conn.player
    assert player is not None and player.startswith("guest-")
    await conn.join("guest-resume")
    sat = await conn.request("sit", table="guest-resume")
    assert sat["type"] == "ok"

    conn.drop()
    status = await next_status(conn, "resumed")
    assert status["same_player"] is True and status["tables"] == {"guest-resume": True}
    assert conn.player == player
    # still seated: standing up works (it would be refused as not_seated otherwise)
    stood = await conn.request("stand", table="guest-resume")
    assert stood["type"] == "ok"
    await conn.close()
