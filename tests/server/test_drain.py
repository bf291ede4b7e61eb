"""SIGTERM during a coup: the server drains, then exits cleanly.

README / ``server.gateway.server.ChemmyServer.drain``: on SIGTERM ``/readyz`` answers 503,
new connections are turned away, new bets are refused with ``draining``, the running coup
finishes (bounded by ``drain_timeout``), every client is closed with 1001 (going away) so
it reconnects elsewhere, and the process exits 0. A coup still unfinished when the bound
runs out is stored and resumes on the next start (GAME_RULES §8).

The server runs as a subprocess (``python -m server.process.main``, the test kit's launcher);
the players, the table and the database checks are those of the crash tests
(``kit/crash.py``).
"""

from __future__ import annotations

import asyncio
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

import tests.kit.crash as H
from tests.kit.timing import scaled

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

TABLE = H.TABLE
PLAYERS = H.PLAYERS


def _config(squeeze: float, third: float) -> str:
    return H.CONFIG.replace(
        "squeeze = 60, third_card = 60", f"squeeze = {squeeze}, third_card = {third}"
    )


def readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/readyz", timeout=scaled(5)
        ) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)


async def wait_status(port: int, status: int, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while True:
        got = await asyncio.to_thread(readyz, port)
        if got == status:
            return
        assert time.monotonic() < end, f"/readyz stayed {got}, expected {status}"
        await asyncio.sleep(0.02)


async def squeezing_table(server: Any) -> tuple[Any, str]:
    """Three players, bets held, cards dealt, Bob squeezing the Player's cards."""
    table = await H.Table.seat(server.url)
    await table.to_betting()
    await table.place_bets()
    rid = await table.press_done()
    assert await table.play_turns(stop_at_squeeze=True) is None
    return table, rid


async def closed_with(player: Any, timeout: float = 10.0) -> int | None:
    """Wait for the server to close the player's connection; the close code it sent."""
    code: int | None = await player.wait_closed(timeout)
    return code


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_sigterm_mid_coup_finishes_the_coup_and_exits_0(tmp_path: Path) -> None:
    server = H.ServerProcess(tmp_path, _config(60, 60), "--drain-timeout", "20")
    server.start()
    try:
        table, rid = await squeezing_table(server)
        assert await asyncio.to_thread(readyz, server.port) == 200
        sent = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        await wait_status(server.port, 503)
        # New connections are turned away while draining.
        with pytest.raises(InvalidStatus) as refused:
            async with connect(server.url, subprotocols=["chemmy.v1.json"]):  # type: ignore[list-item]
                pass
        assert refused.value.response.status_code == 503
        # Connected players stay; a new bet is refused with "draining".
        reply = await table["carol"].rpc("bet", table=TABLE, area="banker", amount=500)
        assert reply["type"] == "error" and reply["code"] == "draining", reply
        balance = await table["carol"].call("balance")
        assert balance["balance"] == H.FUNDS - sum(H.BETS["carol"].values())
        # The coup in play finishes: Bob tosses, the rest is turned, it is settled.
        await table["bob"].call("toss", table=TABLE, hand="player")
        settled = await table.play_turns()
        assert settled is not None and settled["data"]["round_id"] == rid
        # Then every client is closed with 1001 and the process exits 0.
        for name in PLAYERS:
            assert await closed_with(table[name]) == 1001, name
        assert server.wait_exit(scaled(10)) == 0
        assert time.monotonic() - sent < 20
        await table.close()
        money = await H.check_money(server.db)
        assert list(money["rounds"]) == [rid]
    finally:
        server.kill()


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_sigterm_coup_finished_by_the_croupier_timers_within_the_bound(
    tmp_path: Path,
) -> None:
    """Nobody acts after SIGTERM: the turn timers finish the coup, then the server exits."""
    server = H.ServerProcess(tmp_path, _config(2, 1), "--drain-timeout", "15")
    server.start()
    try:
        table, rid = await squeezing_table(server)
        sent = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        await wait_status(server.port, 503)
        settled = await table.wait_for("settled")
        assert settled["data"]["round_id"] == rid
        for name in PLAYERS:
            assert await closed_with(table[name]) == 1001, name
        assert server.wait_exit(scaled(10)) == 0
        # Squeeze 2 s + at most a banker squeeze 2 s and two third cards 1 s each.
        assert time.monotonic() - sent < 10
        await table.close()
        money = await H.check_money(server.db)
        record = money["rounds"][rid]
        assert {x["player"] for x in record["on_behalf"]} <= {"alice", "bob"}
        assert record["on_behalf"], "the croupier turned on the turners' behalf"
    finally:
        server.kill()


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_drain_timeout_bounds_the_wait_and_the_coup_resumes_on_restart(
    tmp_path: Path,
) -> None:
    """A coup longer than the drain bound: the server still exits 0 in time; the coup is
    stored and, after a restart, finishes with the same cards and held wagers."""
    server = H.ServerProcess(tmp_path, _config(60, 60), "--drain-timeout", "1")
    server.start()
    try:
        table, rid = await squeezing_table(server)
        known = dict(table.known)
        sent = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        for name in PLAYERS:
            assert await closed_with(table[name]) == 1001, name
        assert server.wait_exit(scaled(10)) == 0
        assert time.monotonic() - sent < 5
        assert not any(p.events(TABLE, "settled") for p in table.players.values())
        await table.close()

        state = await H.table_state(server.db)
        assert state["coup"]["round_id"] == rid and state["coup"]["held"] == H.BETS
        stored = H.coup_cards(state)
        assert [stored["player"][0], stored["player"][1]] == [
            known[("player", 1)],
            known[("player", 2)],
        ]
        money = await H.check_money(server.db, settled_all=False)
        assert money["balances"][f"held:{TABLE}"] == sum(sum(b.values()) for b in H.BETS.values())

        server.start()
        table = await H.Table.rejoin(server.url)
        settled = await table.resume_coup(table.snapshots[PLAYERS[0]])
        assert settled["data"]["round_id"] == rid
        history = await table["carol"].call("history", limit=5)
        (record,) = [r for r in history["rounds"] if r["round_id"] == rid]
        assert record["player"][:2] == stored["player"][:2]
        assert record["banker"][:2] == stored["banker"][:2]
        await table.close()
        assert server.terminate() == 0
        money = await H.check_money(server.db)
        assert list(money["rounds"]) == [rid]
    finally:
        server.kill()
