"""SQLite is one process's store (issue 18.1): a second ``chemmy-server`` started by
mistake on the database a live server serves refuses to start, with one clear line and
exit status 2, and claims nothing; one that cannot bind its port (the running server's)
fails before it claims anything. Either way the running server keeps every table and
serves its players as before. Real processes on a real SQLite file."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.kit import ROOT, ServerProcess, open_guest, scaled

SERVER = (sys.executable, "-m", "server.process.main", "--host", "127.0.0.1")


def second_server(db: str, port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVER, "--port", str(port), "--db", db],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(60),
        stdin=subprocess.DEVNULL,
    )


async def still_serves(server: ServerProcess) -> None:
    """Every default table is there, and t1 seats a player and gives them the shoe."""
    guest = await open_guest(server.url, name="Still")
    try:
        for table in ("t1", "t2", "t3"):
            await guest.join(table)
        await guest.call("sit", table="t1", seat=3)
        await guest.wait_event("shoe_offered", table="t1")
        await guest.call("accept_shoe", table="t1")
    finally:
        await guest.close()


@pytest.mark.slow
async def test_a_second_server_on_a_served_sqlite_file_refuses_and_claims_nothing(tmp_path):
    running = ServerProcess(tmp_path / "running")
    running.start()
    try:
        # Another port: the lock says no before any table is claimed.
        other = second_server(str(running.db), 0)
        assert other.returncode == 2, other.stderr
        lines = [line for line in other.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, other.stderr
        assert lines[0].startswith("chemmy-server: error: ")
        assert "served by another running chemmy-server" in lines[0]
        assert "--store redis://" in lines[0]

        # The same port: the bind fails first, before the store is even claimed.
        same = second_server(str(running.db), running.port)
        assert same.returncode == 1, same.stderr
        assert "address already in use" in same.stderr.lower()

        await still_serves(running)
        log = running.log_text(400)
        assert "newer owner" not in log and "stale" not in log, log
        assert running.running
    finally:
        running.stop()


@pytest.mark.slow
async def test_the_claim_ends_with_the_process_even_by_kill_9(tmp_path):
    first = ServerProcess(tmp_path / "first")
    first.start()
    assert first.proc is not None
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(timeout=scaled(10))
    after = ServerProcess(tmp_path / "after", db=first.db)
    after.start()
    try:
        await still_serves(after)
    finally:
        after.stop()
