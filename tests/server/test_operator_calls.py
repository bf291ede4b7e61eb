"""The operator's calls taken once and answered as documented (issue 33, points 4 and 6),
on a real server over real sockets (docs/operator-api.md "Idempotency", "Refusals of
the request itself").

- A captured signed call replayed within the signature's 300 s acts once: ``POST
  /operator/v1/tables {}`` replayed as captured and under other keys makes one table; a
  captured lift of a restriction replayed after a 5-year exclusion leaves the exclusion;
  a captured pause replayed after a resume leaves the table playing. Every replay is
  answered the first answer (``Idempotent-Replayed: true``), also after a restart (the
  keys are in the store).
- Every state-changing call needs an ``Idempotency-Key`` (``400
  idempotency_key_required``), under a signature and under a bearer token; a key used
  for another request is refused ``409 idempotency_key_reused``, one whose first call is
  still being answered ``409 idempotency_key_in_use``; nothing changes either way.
- Authentication: a ``Chemmy-Signature`` or a bearer token with bytes that are not ASCII
  is ``401`` (no ``500``, nothing logged at error); an address that failed too often is
  refused ``429 rate_limited`` with ``Retry-After`` (its next good call too), others are
  not, and it may try again as its allowance refills.
- The request itself: a request line dribbled and never finished is answered ``408``;
  ``Transfer-Encoding: identity`` ``501 not_implemented``; ``Content-Length: 10^20``
  ``413 too_large``; every answer under ``/operator/`` forbids framing.
- A void's reason passes the text check of chat: control, bidi and zero-width characters
  are refused ``400 bad_reason`` and nothing is voided.
- A transfer the store cannot hold (a balance past 2^53 - 1) is ``409 out_of_range``,
  not ``500 store_failed``; nothing moves.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from server.gateway import session as gateway
from server.gateway.server import ChemmyServer
from server.ledger.rules import (
    MAX_AMOUNT,
)
from server.operator import http as operator_http
from server.operator.api import AuthFailures
from server.process.auth import make_token
from tests.kit import SECRET, Game, table_def
from tests.kit.inproc import Net
from tests.kit.operator import KEY, SignedOperator, audited

DAY = 86_400.0
LONG = {"betting": 60, "squeeze": 60, "third_card": 60}
RESTRICTION = "/operator/v1/players/ann/restriction"


@pytest.fixture
async def server(net: Net) -> ChemmyServer:
    return await net.start(
        operator_key=KEY,
        operator_players=("boss",),
        trusted_proxies=("127.0.0.1",),
        tables=(table_def("t1", timers=LONG),),
    )


@pytest.fixture
async def operator(server: ChemmyServer) -> AsyncIterator[SignedOperator]:
    made = SignedOperator(server.port)
    yield made
    await made.http.aclose()


class Captured:
    """A signed request as it went over the wire: sent again byte for byte (a replay),
    or with its ``Idempotency-Key`` changed."""

    def __init__(self, op: SignedOperator, path: str, body: Any, key: str) -> None:
        self.op = op
        self.path = path
        self.raw = b"" if body is None else json.dumps(body).encode()
        self.headers = {
            "Content-Type": "application/json",
            "Chemmy-Signature": op.sign("POST", path, self.raw),
            "Idempotency-Key": key,
        }

    async def send(self, key: str | None = None) -> httpx.Response:
        headers = self.headers if key is None else {**self.headers, "Idempotency-Key": key}
        return await self.op.http.post(self.path, content=self.raw, headers=headers)


async def raw_exchange(port: int, data: bytes, wait: float = 5.0) -> bytes:
    """Send ``data`` on a new connection; everything the server answers until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        async with asyncio.timeout(wait):
            return await reader.read()
    finally:
        writer.close()


def status_of(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body) if body else {}


def refused(answer: httpx.Response, status: int, code: str) -> None:
    assert answer.status_code == status, (answer.status_code, answer.text)
    assert answer.json()["status"] == code, answer.json()


async def table_ids(server: ChemmyServer) -> list[str]:
    return sorted(line["table"] for line in await server.lobby.tables())


# ------------------------------------------------------------------------ point 4: replays
async def test_a_replayed_table_creation_makes_one_table(
    net: Net, server: ChemmyServer, operator: SignedOperator
) -> None:
    captured = Captured(operator, "/operator/v1/tables", {}, "create-1")
    first = await captured.send()
    assert first.status_code == 200, first.text
    made = first.json()["table"]["table"]
    assert "idempotent-replayed" not in first.headers
    assert first.headers["x-frame-options"] == "DENY"
    for key in (None, "create-2", "another"):  # as captured, and under other keys
        again = await captured.send(key)
        assert again.status_code == 200 and again.json() == first.json()
        assert again.headers["idempotent-replayed"] == "true"
    assert await table_ids(server) == sorted(["t1", made])
    # The keys are in the store: after a restart on the same file, still one table.
    await net.stop(server)
    back = await net.start(operator_key=KEY, tables=(table_def("t1", timers=LONG),))
    captured.op.http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{back.port}", timeout=10)
    try:
        again = await captured.send("after-restart")
        assert again.status_code == 200 and again.json() == first.json()
        assert await table_ids(back) == sorted(["t1", made])
    finally:
        await captured.op.http.aclose()


async def test_a_captured_lift_replayed_after_an_exclusion_leaves_it(
    server: ChemmyServer, operator: SignedOperator
) -> None:
    await operator.post(RESTRICTION, {"period": "24h"})
    lift = Captured(operator, RESTRICTION, {"lift": True}, "lift-1")
    lifted = await lift.send()
    assert lifted.status_code == 200 and lifted.json()["restriction"] is None
    excluded = await operator.post(RESTRICTION, {"period": "exclude_5y"})
    assert excluded.status_code == 200, excluded.text
    kept = excluded.json()["restriction"]
    assert kept["kind"] == "exclusion" and kept["until"] > time.time() + 4 * 365 * DAY
    for key in (None, "lift-2"):
        replayed = await lift.send(key)
        assert replayed.json() == lifted.json()  # the first answer, and nothing done
        assert replayed.headers["idempotent-replayed"] == "true"
    assert await server.store.player_restriction("ann") == kept


async def test_a_captured_pause_replayed_after_a_resume_leaves_the_table_playing(
    server: ChemmyServer, operator: SignedOperator
) -> None:
    pause = Captured(operator, "/operator/v1/tables/t1/pause", None, "pause-1")
    paused = await pause.send()
    assert paused.status_code == 200 and paused.json()["paused"] is True
    resumed = await operator.post("/operator/v1/tables/t1/resume", None)
    assert resumed.status_code == 200 and resumed.json()["paused"] is False
    for key in (None, "pause-2"):
        replayed = await pause.send(key)
        assert replayed.json() == paused.json()
        assert replayed.headers["idempotent-replayed"] == "true"
    (line,) = [x for x in await server.lobby.tables() if x["table"] == "t1"]
    assert line["paused"] is False


async def test_a_state_changing_call_needs_a_key_and_a_key_is_for_one_request(
    server: ChemmyServer, operator: SignedOperator
) -> None:
    path = "/operator/v1/tables"
    raw = b"{}"
    headers = {"Content-Type": "application/json", "Chemmy-Signature": ""}
    headers["Chemmy-Signature"] = operator.sign("POST", path, raw)
    refused(
        await operator.http.post(path, content=raw, headers=headers),
        400,
        "idempotency_key_required",
    )
    for bad in ("", "k" * 129, "caf\u00e9".encode("latin-1"), "a\tb"):
        headers["Chemmy-Signature"] = operator.sign("POST", path, raw)
        sent = {**headers, "Idempotency-Key": bad}
        refused(await operator.http.post(path, content=raw, headers=sent), 400, "bad_request")
    assert await table_ids(server) == ["t1"]
    made = await operator.post(path, {"table": "t5"}, key="k-1")
    assert made.status_code == 200, made.text
    # The same key for another request: refused, nothing made.
    refused(await operator.post(path, {"table": "t6"}, key="k-1"), 409, "idempotency_key_reused")
    refused(
        await operator.post("/operator/v1/tables/t1/pause", None, key="k-1"),
        409,
        "idempotency_key_reused",
    )
    assert await table_ids(server) == ["t1", "t5"]
    # A new signature of the same request under the key: the first answer.
    again = await operator.post(path, {"table": "t5"}, key="k-1")
    assert again.json() == made.json() and again.headers["idempotent-replayed"] == "true"
    # Reads need none.
    assert (await operator.get("/operator/v1/tables")).status_code == 200


async def test_a_repeat_while_the_first_call_runs_is_refused_in_use(
    server: ChemmyServer, operator: SignedOperator, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = server.ask_table
    release = asyncio.Event()

    async def slow(table: str, kind: str, fields: Any = None) -> Any:
        await release.wait()
        return await asked(table, kind, fields)

    monkeypatch.setattr(server, "ask_table", slow)
    pause = Captured(operator, "/operator/v1/tables/t1/pause", None, "slow-1")
    first = asyncio.ensure_future(pause.send())
    await asyncio.sleep(0.3)
    refused(await pause.send(), 409, "idempotency_key_in_use")
    refused(await pause.send("slow-2"), 409, "idempotency_key_in_use")
    release.set()
    assert (await first).json()["paused"] is True
    assert (await pause.send()).json()["paused"] is True


async def test_a_bearer_calls_key_is_required_and_kept(server: ChemmyServer) -> None:
    token = make_token(SECRET, "boss")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as http:
        auth = {"Authorization": f"Bearer {token}"}
        refused(
            await http.post("/operator/v1/tables", json={}, headers=auth),
            400,
            "idempotency_key_required",
        )
        keyed = {**auth, "Idempotency-Key": "b-1"}
        first = await http.post("/operator/v1/tables", json={}, headers=keyed)
        again = await http.post("/operator/v1/tables", json={}, headers=keyed)
        assert first.status_code == 200 and again.json() == first.json()
        assert again.headers["idempotent-replayed"] == "true"
        other = await http.post(
            "/operator/v1/tables", json={}, headers={**auth, "Idempotency-Key": "b-2"}
        )
        assert other.status_code == 200 and other.json() != first.json()
    assert len(await table_ids(server)) == 3


# ----------------------------------------------------------------- point 6: authentication
async def test_non_ascii_credentials_are_unauthorised_not_a_failure(
    server: ChemmyServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    heads = [
        b"Chemmy-Signature: t=1764601200,v1=" + b"\xff" * 64,
        b"Chemmy-Signature: t=\xc2\xb2,v1=" + b"a" * 64,
        b"Chemmy-Signature: \xe2\x80\xaet=1,v1=" + b"0" * 64,
        b"Authorization: Bearer \xff\xfe.\xfd.\xfc",
    ]
    for head in heads:
        answer = await raw_exchange(
            server.port,
            b"POST /operator/v1/tables HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
            b"Idempotency-Key: k\r\n" + head + b"\r\n\r\n{}",
        )
        status, body = status_of(answer)
        assert status == 401 and body["status"] in ("bad_signature", "unauthorized"), answer
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert await table_ids(server) == ["t1"]


async def test_an_address_that_fails_too_often_is_refused_a_while(
    server: ChemmyServer, operator: SignedOperator
) -> None:
    now = [1000.0]
    server.operator_api.failures = AuthFailures(burst=5, refill=3.0, clock=lambda: now[0])
    path = "/operator/v1/tables"
    bad = {"Chemmy-Signature": "t=1,v1=" + "0" * 64}

    async def get(address: str, headers: dict[str, str]) -> httpx.Response:
        return await operator.http.get(path, headers={**headers, "X-Forwarded-For": address})

    for _ in range(5):
        refused(await get("203.0.113.7", bad), 401, "bad_signature")
    limited = await get("203.0.113.7", bad)
    refused(limited, 429, "rate_limited")
    assert limited.headers["retry-after"] == "3"
    good = {"Chemmy-Signature": operator.sign("GET", path, b"")}
    refused(await get("203.0.113.7", good), 429, "rate_limited")  # before the credential
    assert (await get("203.0.113.8", good)).status_code == 200  # another address
    now[0] += 3.0  # one more attempt
    assert (await get("203.0.113.7", good)).status_code == 200
    refused(await get("203.0.113.7", bad), 401, "bad_signature")
    refused(await get("203.0.113.7", good), 429, "rate_limited")


# -------------------------------------------------------------------- point 6: the request
async def test_a_request_line_dribbled_and_never_finished_is_answered_408(
    server: ChemmyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (READ_TIMEOUT is 5 s; 1 s here keeps the test short, the path is the same.)
    monkeypatch.setattr(gateway, "READ_TIMEOUT", 1.0)
    monkeypatch.setattr(operator_http, "READ_TIMEOUT", 1.0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        for byte in b"POST /oper":
            writer.write(bytes([byte]))
            await asyncio.sleep(0.05)
        started = time.monotonic()
        async with asyncio.timeout(5):
            answer = await reader.read()
    finally:
        writer.close()
    assert time.monotonic() - started < 2.0
    assert status_of(answer) == (
        408,
        {"status": "timeout", "message": "the request took too long to send"},
    )


@pytest.mark.parametrize(
    ("header", "status", "code"),
    [
        (b"Transfer-Encoding: identity", 501, "not_implemented"),
        (b"Transfer-Encoding: chunked", 501, "not_implemented"),
        (b"Content-Length: 100000000000000000000", 413, "too_large"),
        (b"Content-Length: 10000000000000000000", 413, "too_large"),
        (b"Content-Length: 16385", 413, "too_large"),
    ],
)
async def test_bodies_the_server_does_not_take_are_refused_as_documented(
    server: ChemmyServer, header: bytes, status: int, code: str
) -> None:
    answer = await raw_exchange(
        server.port, b"POST /operator/v1/tables HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n"
    )
    assert status_of(answer)[0] == status, answer
    assert status_of(answer)[1]["status"] == code
    assert b"\r\nX-Frame-Options: DENY\r\n" in answer


async def test_every_answer_under_operator_forbids_framing(server: ChemmyServer) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as http:
        for path in ("/operator/", "/operator/static/backoffice.js", "/operator/nope"):
            answer = await http.get(path)
            assert answer.headers.get_list("x-frame-options") == ["DENY"], path
        page = await http.get("/operator/")
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        api = await http.get("/operator/v1/tables")
        assert api.status_code == 401 and api.headers["x-frame-options"] == "DENY"
        assert api.headers["content-security-policy"] == "frame-ancestors 'none'"
        assert "x-frame-options" not in (await http.get("/")).headers  # the web table


# ---------------------------------------------------------------- point 6: voids, transfers
@pytest.mark.parametrize(
    "reason",
    [
        "reader \x1b[2J failed",
        "reader \u202efailed",
        "reader\u200bfailed",
        "bell\x07",
        "reader\x85failed",
    ],
)
async def test_a_void_reason_is_checked_as_chat_is(
    net: Net, server: ChemmyServer, operator: SignedOperator, reason: str
) -> None:
    ann = await net.player(server, "ann")
    await ann.join("t1")
    await ann.call("sit", table="t1")
    opened = await Game("t1", {"ann": ann}, ann).to_betting()
    rid = opened["data"]["round_id"]
    refused(
        await operator.post(f"/operator/v1/rounds/{rid}/void", {"reason": reason}),
        400,
        "bad_reason",
    )
    assert not ann.events("t1", "voided")
    # Plain text passes, normalized as chat is (runs of spaces to one).
    answer = await operator.post(f"/operator/v1/rounds/{rid}/void", {"reason": " the  reader "})
    assert answer.status_code == 200, answer.text
    voided = await ann.wait_event("voided", table="t1")
    assert voided["data"]["reason"] == "the reader"


async def test_a_transfer_the_store_cannot_hold_is_refused_409(net: Net) -> None:
    server = await net.start(wallet="transfer", operator_key=KEY)
    operator = SignedOperator(server.port)
    body = {"transaction_id": "op-1", "player": "ann", "amount": 1, "currency": "EUR"}
    try:
        assert (await operator.post("/operator/v1/transfers/deposit", body)).status_code == 200
        huge = {**body, "transaction_id": "op-2", "amount": MAX_AMOUNT}
        refused(await operator.post("/operator/v1/transfers/deposit", huge), 409, "out_of_range")
        other = {**huge, "player": "bob"}  # the operator account cannot go that low either
        refused(await operator.post("/operator/v1/transfers/deposit", other), 409, "out_of_range")
    finally:
        await operator.http.aclose()
    balances = await server.store.load_balances()
    assert balances["player:ann"] == 1 and balances.get("player:bob", 0) == 0
    await audited(server)
