"""The operator's voids and table controls over HTTP (issue 21), on a real server.

A server on port 0 with ``--operator-key`` is called as a back office would (signed
requests, httpx): a round voided during betting, during a squeeze, and after a
``kill -9`` mid-coup (a real ``chemmy-server`` restarted on the same SQLite file); a
table created, paused, resumed and closed. After each, the books are audited: the sum
0, every balance its ledger sum, every hold with exactly one outcome (a void is one),
and every recorded round as its record says (``tests.kit.crash.check_books``).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

import client_cli.operator
from client_cli.main import main as cli_main
from server.gateway.server import ChemmyServer
from server.operator.tables import table_of_round
from server.protocol.errors import StoreUnavailable
from server.wallet.signing import signature_header
from tests.kit import Game, crash
from tests.kit.inproc import Net
from tests.kit.operator import Signer
from tests.kit.tables import table_def

KEY = "the-operators-key-for-the-void-tests-0123456789"
REASON = "the card reader failed"


class Back:
    """The operator's back office: signed calls to one server's ``/operator/v1/``."""

    def __init__(self, port: int, key: str = KEY) -> None:
        self.key = key.encode()
        self.sign = Signer(self.key)
        self.http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=20)

    async def post(
        self,
        path: str,
        body: Any = None,
        *,
        signed: bool = True,
        key: str | None = None,
        at: float | None = None,
    ) -> httpx.Response:
        """A POST under the ``Idempotency-Key`` ``key`` (None: a new one), signed at
        ``at`` (None: as a new signed request, :class:`~tests.kit.operator.Signer`)."""
        raw = b"" if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Idempotency-Key": key or uuid.uuid4().hex}
        if signed:
            headers["Chemmy-Signature"] = self.sign("POST", path, raw, at)
        return await self.http.post(path, content=raw, headers=headers)

    async def void(
        self, round_id: str, reason: str = REASON, at: float | None = None
    ) -> httpx.Response:
        return await self.post(f"/operator/v1/rounds/{round_id}/void", {"reason": reason}, at=at)

    async def lines(self) -> dict[str, dict[str, Any]]:
        """``GET /operator/v1/tables``: each table's line by its id."""
        path = "/operator/v1/tables"
        signed = {"Chemmy-Signature": signature_header(self.key, time.time(), "GET", path, b"")}
        response = await self.http.get(path, headers=signed)
        assert response.status_code == 200, response.text
        return {line["table"]: line for line in response.json()["tables"]}


def refused(response: httpx.Response, http_status: int, status: str) -> None:
    assert response.status_code == http_status, (response.status_code, response.text)
    assert response.json()["status"] == status, response.json()


async def books(server: ChemmyServer, players: tuple[str, ...], *rounds: str) -> None:
    await crash.check_books(server.store, players, round_ids=rounds)


@pytest.fixture
async def server(net: Net) -> ChemmyServer:
    long = {"betting": 60, "squeeze": 60, "third_card": 60}
    return await net.start(operator_key=KEY, tables=(table_def("t1", timers=long),))


@pytest.fixture
async def back(server: ChemmyServer) -> AsyncIterator[Back]:
    made = Back(server.port)
    yield made
    await made.http.aclose()


def test_a_round_id_names_its_table() -> None:
    assert table_of_round("t1-2-3") == "t1"
    assert table_of_round("high-rollers-12-40") == "high-rollers"
    assert table_of_round("t1-2") is None and table_of_round("t1-x-3") is None


async def test_a_void_during_betting_gives_the_chips_back(
    net: Net, server: ChemmyServer, back: Back
) -> None:
    ann = await net.player(server, "ann")
    await ann.join("t1")
    await ann.call("sit", table="t1")
    game = Game("t1", {"ann": ann}, ann)
    opened = await game.to_betting()
    rid = opened["data"]["round_id"]
    before = await ann.balance()
    await ann.call("bet", table="t1", area="banker", amount=1_000)
    refused(await back.void(rid, ""), 400, "bad_reason")
    refused(await back.void(rid, "x" * 201), 400, "bad_reason")
    refused(
        await back.post(f"/operator/v1/rounds/{rid}/void", {"reason": REASON}, signed=False),
        401,
        "bad_signature",
    )
    answer = await back.void(rid)
    assert answer.status_code == 200, answer.text
    assert answer.json() | {"seq": 0} == {
        "table": "t1",
        "round_id": rid,
        "voided": True,
        "seq": 0,
        "by": "operator-key",
    }
    voided = await ann.wait_event("voided", table="t1")
    assert voided["data"]["round_id"] == rid and voided["data"]["reason"] == REASON
    assert voided["data"]["refunded"] == {"ann": 1_000} and voided["data"]["cards"] is None
    assert voided["data"]["balance"] == voided["data"]["available"] == before
    opened = await ann.wait_event("betting_opened", table="t1", after=voided["seq"])
    assert opened["data"]["round_id"] != rid
    # Over: a second void is refused; a round the table is not playing is not found.
    refused(await back.void(rid), 409, "already_settled")
    refused(await back.void("t1-99-1"), 404, "not_found")
    refused(await back.void("nowhere-1-1"), 404, "not_found")
    refused(await back.void("garbage"), 404, "not_found")
    # The player's history shows it, void, with the reason.
    history = (await ann.call("history"))["rounds"]
    mine = [r for r in history if r["round_id"] == rid]
    assert mine and mine[0]["void"] is True and mine[0]["reason"] == REASON
    record = await server.store.round_record(rid)
    assert record is not None and record["void"] and record["voided_in"] == "betting"
    await books(server, ("ann",), rid)


async def test_a_void_during_a_squeeze_returns_every_held_wager(
    net: Net, server: ChemmyServer, back: Back
) -> None:
    ann = await net.player(server, "ann")
    bob = await net.player(server, "bob")
    for seat, p in enumerate((ann, bob), start=1):
        await p.join("t1")
        await p.call("sit", table="t1", seat=seat)
    game = Game("t1", {"ann": ann, "bob": bob}, ann)
    opened = await game.to_betting()
    rid = opened["data"]["round_id"]
    start = {"ann": await ann.balance(), "bob": await bob.balance()}
    await game.act("ann", "bet", area="player", amount=2_000)
    await game.act("bob", "bet", area="banker", amount=1_500)
    await game.act("ann", "done")
    await game.act("bob", "done")
    turn = await ann.wait_event("turn", table="t1")
    assert turn["data"]["turner"] == "ann"
    await game.act("ann", "squeeze", hand="player", style="peek")
    await game.act("ann", "turn", hand="player", card=1)
    assert (await back.void(rid)).status_code == 200
    voided = await bob.wait_event("voided", table="t1")
    assert voided["data"]["refunded"] == {"ann": 2_000, "bob": 1_500}
    cards = voided["data"]["cards"]
    assert len(cards["player"]) >= 2 and len(cards["banker"]) >= 2  # shown: it no longer counts
    assert voided["data"]["balance"] == start["bob"]
    assert {"ann": await ann.balance(), "bob": await bob.balance()} == start
    entries = [e for e in await server.store.ledger(limit=10_000) if e.round_id == rid]
    assert sorted((e.kind, e.amount) for e in entries if e.kind in ("hold", "void")) == [
        ("hold", 1_500),
        ("hold", 2_000),
        ("void", 1_500),
        ("void", 2_000),
    ]
    refused(await back.void(rid), 409, "already_settled")
    await books(server, ("ann", "bob"), rid)
    # The back office's line says the table's last round was voided, and why.
    last = (await back.lines())["t1"]["last_coup"]
    assert (last["round_id"], last["void"], last["reason"]) == (rid, True, REASON), last
    assert last["outcome"] is None and last["house_result"] == 0, last
    # The table plays on: the next coup is dealt and settled as ever.
    log = await game.play_coup({"bob": {"banker": 500}})
    assert log.round_id != rid
    await books(server, ("ann", "bob"), rid, log.round_id)
    last = (await back.lines())["t1"]["last_coup"]
    assert (last["round_id"], last["void"], last["reason"]) == (log.round_id, False, None), last


async def test_tables_are_created_paused_resumed_and_closed(
    net: Net, server: ChemmyServer, back: Back
) -> None:
    made = await back.post("/operator/v1/tables", {"table": "t9", "options": {"name": "Nine"}})
    assert made.status_code == 200, made.text
    assert made.json()["table"]["table"] == "t9" and made.json()["table"]["paused"] is False
    refused(await back.post("/operator/v1/tables", {"table": "t9"}), 409, "table_exists")
    refused(
        await back.post("/operator/v1/tables", {"table": "t8", "options": {"seats": 99}}),
        400,
        "bad_options",
    )
    refused(await back.post("/operator/v1/tables", {"table": "a b"}), 400, "bad_message")
    refused(await back.post("/operator/v1/tables/t7/pause"), 404, "not_found")
    ann = await net.player(server, "ann")
    await ann.join("t9")
    await ann.call("sit", table="t9")
    game = Game("t9", {"ann": ann}, ann)
    await game.to_betting()
    paused = await back.post("/operator/v1/tables/t9/pause")
    assert paused.status_code == 200, paused.text
    assert paused.json() == {"table": "t9", "paused": True, "phase": "paused"}
    event = await ann.wait_event("paused", table="t9")
    assert event["data"]["coup_finishes"] is False
    lines = (await ann.call("tables"))["tables"]
    assert [line["paused"] for line in lines if line["table"] == "t9"] == [True]
    await ann.refused("wrong_phase", "bet", table="t9", area="banker", amount=500)
    resumed = await back.post("/operator/v1/tables/t9/resume")
    assert resumed.json() == {"table": "t9", "paused": False, "phase": "betting"}
    await ann.wait_event("resumed", table="t9")
    await ann.wait_event("betting_opened", table="t9", after=event["seq"])
    closed = await back.post("/operator/v1/tables/t9/close")
    assert closed.status_code == 200 and closed.json() == {"table": "t9", "closed": True}
    await ann.wait_event("closed", table="t9")
    refused(await back.post("/operator/v1/tables/t9/close"), 404, "not_found")
    await books(server, ("ann",))


# ---------------------------------------------------------------------- after a kill -9
CONFIG = f'operator_key = "{KEY}"\n' + crash.CONFIG


@pytest.mark.slow
async def test_a_coup_restored_after_kill_9_is_voided_and_the_books_close(
    tmp_path: Path,
) -> None:
    server = crash.CrashServer(tmp_path, config=CONFIG)
    server.start()
    try:
        table = await crash.Table.seat(server.url)
        await table.to_betting()
        await table.place_bets()
        rid = await table.press_done()
        assert await table.play_turns(stop_at_squeeze=True) is None  # a squeeze under way
        server.kill()
        await table.close()
        stored = await crash.table_state(server.store_url)
        assert stored["phase"] == "turn" and stored["coup"]["round_id"] == rid

        server.start()  # the same SQLite file: the coup is restored, mid-squeeze
        back = Back(server.port)
        try:
            answer = await back.void(rid, "the server crashed mid-coup")
            assert answer.status_code == 200, answer.text
            refused(await back.void(rid), 409, "already_settled")
        finally:
            await back.http.aclose()
        alice = await crash.connect_player(server.url, "alice")
        try:
            snap = (await alice.call("join", table=crash.TABLE))["snapshot"]
            assert snap["coup"] is None and snap["you"]["balance"] == crash.FUNDS
        finally:
            await alice.close()
        server.kill()
        books = await crash.check_money(server.store_url)
        record = books["rounds"][rid]
        assert record["void"] and record["reason"] == "the server crashed mid-coup"
        assert all(b["returned"] == b["stake"] for b in record["bets"])
    finally:
        server.kill()


async def test_a_void_while_the_store_fails_is_refused_until_it_can_be_stored(
    net: Net, server: ChemmyServer, back: Back, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = await net.player(server, "ann")
    await ann.join("t1")
    await ann.call("sit", table="t1")
    game = Game("t1", {"ann": ann}, ann)
    opened = await game.to_betting()
    rid = opened["data"]["round_id"]
    start = await ann.balance()
    await game.act("ann", "bet", area="player", amount=3_000)
    await game.act("ann", "done")
    await ann.wait_event("turn", table="t1")
    real = server.store.commit
    failing = True

    async def commit(**step: Any) -> Any:
        if failing:
            raise StoreUnavailable("the disk is gone (on cue)")
        return await real(**step)

    monkeypatch.setattr(server.store, "commit", commit)
    for _ in range(2):  # the store does not come back: nothing is voided, nothing sent
        refused(await back.void(rid), 503, "store_unavailable")
    assert not ann.events("t1", "voided")
    failing = False  # it works again: the void is stored, then sent
    assert (await back.void(rid)).status_code == 200
    voided = await ann.wait_event("voided", table="t1")
    assert voided["data"]["refunded"] == {"ann": 3_000} and voided["data"]["balance"] == start
    await books(server, ("ann",), rid)


async def test_the_terminal_voids_pauses_and_resumes(
    net: Net,
    server: ChemmyServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ann = await net.player(server, "ann")
    await ann.join("t1")
    await ann.call("sit", table="t1")
    game = Game("t1", {"ann": ann}, ann)
    opened = await game.to_betting()
    rid = opened["data"]["round_id"]
    await game.act("ann", "bet", area="banker", amount=500)
    url = ["--url", f"ws://127.0.0.1:{server.port}", "--operator-key", KEY]

    async def chemmy(*args: str) -> int:
        return int(await asyncio.to_thread(cli_main, [*args, *url]))

    assert await chemmy("table", "pause", "t1") == 0
    # Both voids signed in one second: the same signed request.
    now = time.time()
    monkeypatch.setattr(client_cli.operator, "time", SimpleNamespace(time=lambda: now))
    assert await chemmy("void", rid, "--reason", REASON) == 0
    assert f"round {rid} voided" in capsys.readouterr().out
    await ann.wait_event("voided", table="t1")
    # The same command again at once is the same signed request: the first answer.
    assert await chemmy("void", rid, "--reason", REASON) == 0
    assert "nothing was done again" in capsys.readouterr().err
    monkeypatch.undo()
    assert await chemmy("void", rid, "--reason", "another") == 2  # already settled
    assert "409" in capsys.readouterr().err
    assert await chemmy("table", "resume", "t1") == 0
    await ann.wait_event("resumed", table="t1")
    await books(server, ("ann",), rid)
