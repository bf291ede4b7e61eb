"""The test kit itself (tests/kit): the launcher learns the port the server bound and
restarts it on the same database; a refused port refuses; a process that never says it
listens fails with its last words; a client's tap takes the frames it counts."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from tests.kit import (
    SECRET,
    Client,
    Process,
    ServerProcess,
    open_guest,
    open_player,
    refused_port,
    scaled,
)
from tests.kit.inproc import Net

CONFIG = f"""
jwt_secret = "{SECRET}"

[[tables]]
id = "k1"
name = "Kit"
tier = "1-100"
"""


@pytest.mark.slow
async def test_a_server_process_listens_where_it_says_and_restarts_on_the_same_database(
    tmp_path: Path,
) -> None:
    server = ServerProcess(tmp_path, CONFIG)
    server.start()
    try:
        first = server.url
        assert server.port > 0 and first == f"ws://127.0.0.1:{server.port}"
        assert f"chemmy-server listening on {first}" in server.log_text()
        ann = await open_player(server.url, "ann")
        before = await ann.balance()
        await ann.call("deposit", msg_id="kit-1", amount=2_500)
        await ann.close()

        assert server.kill() == -signal.SIGKILL  # kill -9: nothing flushed on the way out
        assert not server.running
        server.start()  # the same database, a port the server chose again
        assert server.starts == 2 and server.db == tmp_path / "chemmy.sqlite3"
        ann = await open_player(server.url, "ann")
        assert await ann.balance() == before + 2_500  # stored before it was answered
        await ann.close()
        assert server.terminate() == 0  # SIGTERM: the server drains and exits cleanly
    finally:
        server.kill()


async def test_a_refused_port_refuses_while_it_is_held() -> None:
    with refused_port() as port:
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", port)
        with pytest.raises(OSError):
            await Client(f"ws://127.0.0.1:{port}").open()


def test_a_process_that_never_listens_fails_with_its_last_words() -> None:
    silent = Process(
        [sys.executable, "-c", "import sys; print('no socket for me', file=sys.stderr)"]
    )
    with pytest.raises(AssertionError, match="no socket for me"):
        silent.start()
    assert not silent.running


async def test_a_tap_takes_the_frames_it_counts_and_replies_still_come(tmp_path: Path) -> None:
    net = Net(tmp_path)
    try:
        server = await net.start()
        url = f"ws://127.0.0.1:{server.port}/"
        taken: list[str | bytes] = []
        seen = asyncio.Event()

        def tap(frame: str | bytes) -> bool:
            if '"type":"event"' not in str(frame):
                return False
            taken.append(frame)
            seen.set()
            return True

        watcher = Client(url, label="tapped", tap=tap)
        await watcher.open()
        await watcher.hello(guest=True, name="Tap")
        await watcher.join("t1")
        bob = await open_guest(url, name="Bob")
        await bob.join("t1")
        await bob.call("sit", table="t1")  # an event to everyone at the table
        async with asyncio.timeout(scaled(5)):
            await seen.wait()
        assert (await watcher.call("ping"))["type"] == "ok"
        assert taken and watcher.events() == []  # taken by the tap, never decoded
        assert watcher.replies() and not watcher.problems
        await watcher.close()
        await bob.close()
    finally:
        await net.close()
