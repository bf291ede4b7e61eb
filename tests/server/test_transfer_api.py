"""The transfer API (docs/wallet.md §2) on a real server's one port, with httpx.

A server in ``--wallet transfer`` mode (in this process, on port 0, over SQLite) is
called as an operator's back office would: signed requests (§1) or an operator's JWT.
After each test the store's books are audited: every balance its ledger sum, the sum 0,
and the ``operator`` account exactly minus what is in the players' accounts. The same
port still serves the WebSocket protocol and the plain GET pages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from server.gateway.server import ChemmyServer
from server.ledger.accounts import OPERATOR
from server.operator import http as operator_http
from server.process.auth import make_token
from tests.kit import Game
from tests.kit.client import http_get
from tests.kit.inproc import Net
from tests.kit.operator import Signer
from tests.kit.tables import OTHER_SECRET, SECRET, table_def

KEY = "the-operators-key-for-the-tests-0123456789"
DEPOSIT = "/operator/v1/transfers/deposit"
WITHDRAW = "/operator/v1/transfers/withdraw"


class Operator:
    """The operator's back office: signed calls to one server's transfer API."""

    def __init__(self, server: ChemmyServer, key: str = KEY) -> None:
        self.base = f"http://127.0.0.1:{server.port}"
        self.key = key.encode()
        self.sign = Signer(self.key)  # (each call a new signed request)
        self.http = httpx.AsyncClient(base_url=self.base, timeout=10)

    async def post(
        self,
        path: str,
        body: Any,
        *,
        at: float | None = None,
        headers: dict[str, str] | None = None,
        signed: bool = True,
    ) -> httpx.Response:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent = {"Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex}
        sent.update(headers or {})
        if signed:
            sent["Chemmy-Signature"] = self.sign("POST", path, raw, at)
        return await self.http.post(path, content=raw, headers=sent)

    async def get(
        self, target: str, *, headers: dict[str, str] | None = None, signed: bool = True
    ) -> httpx.Response:
        sent = dict(headers or {})
        if signed:
            sent["Chemmy-Signature"] = self.sign("GET", target, b"")
        return await self.http.get(target, headers=sent)

    async def deposit(self, at: float | None = None, **fields: Any) -> httpx.Response:
        """A deposit under a new ``Idempotency-Key``, signed at ``at`` (None: now; the
        same request signed in the same second is the same signed request)."""
        return await self.post(DEPOSIT, transfer(**fields), at=at)

    async def withdraw(self, at: float | None = None, **fields: Any) -> httpx.Response:
        return await self.post(WITHDRAW, transfer(**fields), at=at)

    async def balance(self, player: str) -> httpx.Response:
        return await self.get(f"/operator/v1/transfers/balance?player={player}")


def transfer(**fields: Any) -> dict[str, Any]:
    return {
        "transaction_id": "op-1",
        "player": "alice",
        "amount": 25_000,
        "currency": "EUR",
    } | fields


def refused(response: httpx.Response, http_status: int, status: str) -> dict[str, Any]:
    assert response.status_code == http_status, (response.status_code, response.text)
    body = response.json()
    assert body["status"] == status, body
    assert isinstance(body["message"], str) and body["message"], body
    assert set(body) == {"status", "message"}, body
    return dict(body)


async def books(server: ChemmyServer) -> dict[str, int]:
    """The audited balances: conserved, each its ledger sum, the operator's side the
    negative of what the players hold."""
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"] and audit["holds_ok"], audit
    balances = await server.store.load_balances()
    held = sum(v for a, v in balances.items() if a.startswith(("player:", "stake:", "held:")))
    house = balances.get("house", 0)
    assert balances.get(OPERATOR, 0) == -(held + house), balances
    return balances


@pytest.fixture
async def server(net: Net) -> ChemmyServer:
    return await net.start(wallet="transfer", operator_key=KEY)


@pytest.fixture
async def operator(server: ChemmyServer) -> AsyncIterator[Operator]:
    made = Operator(server)
    yield made
    await made.http.aclose()


async def test_deposit_withdraw_and_balance(server: ChemmyServer, operator: Operator) -> None:
    answer = await operator.deposit()
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {
        "status": "ok",
        "transaction_id": "op-1",
        "player": "alice",
        "amount": 25_000,
        "currency": "EUR",
        "balance": 25_000,
        "available": 25_000,
        "duplicate": False,
    }
    # The operator retries under a new key (a new signature): nothing moves.
    again = await operator.deposit()
    assert again.json() == answer.json() | {"duplicate": True}
    more = await operator.deposit(transaction_id="op-2", amount=100_000)
    assert more.json()["balance"] == 125_000
    out = await operator.withdraw(transaction_id="op-3", amount=25_000)
    assert out.status_code == 200, out.text
    assert out.json() == {
        "status": "ok",
        "transaction_id": "op-3",
        "player": "alice",
        "amount": 25_000,
        "currency": "EUR",
        "balance": 100_000,
        "available": 100_000,
        "duplicate": False,
    }
    assert (await operator.withdraw(transaction_id="op-3", amount=25_000)).json()["duplicate"]
    balance = await operator.balance("alice")
    assert balance.status_code == 200
    assert balance.json() == {
        "status": "ok",
        "player": "alice",
        "currency": "EUR",
        "balance": 100_000,
        "available": 100_000,
    }
    # One entry each, no welcome money, and the operator's side of each.
    ledger = await server.store.ledger("player:alice")
    assert [(e.kind, e.src, e.dst, e.amount) for e in reversed(ledger)] == [
        ("transfer_deposit", OPERATOR, "player:alice", 25_000),
        ("transfer_deposit", OPERATOR, "player:alice", 100_000),
        ("transfer_withdraw", "player:alice", OPERATOR, 25_000),
    ]
    assert [e.key for e in reversed(ledger)] == ["transfer:op-1", "transfer:op-2", "transfer:op-3"]
    balances = await books(server)
    assert balances["player:alice"] == 100_000 and balances[OPERATOR] == -100_000
    status, _, metrics = await http_get(server.port, "/metrics")
    assert status == 200
    text = metrics.decode()
    assert 'chemmy_transfers_total{kind="deposit",status="ok"} 2.0' in text
    assert 'chemmy_transfers_total{kind="deposit",status="duplicate"} 1.0' in text
    assert 'chemmy_transfers_total{kind="withdraw",status="duplicate"} 1.0' in text


async def test_signatures(server: ChemmyServer, operator: Operator) -> None:
    body = json.dumps(transfer()).encode()
    wrong = Operator(server, key="not-the-operators-key-0123456789abcdef")
    try:
        refused(await wrong.post(DEPOSIT, body), 401, "bad_signature")
    finally:
        await wrong.http.aclose()
    refused(await operator.post(DEPOSIT, body, signed=False), 401, "bad_signature")
    garbled = {"Chemmy-Signature": "t=1,v1=zz"}
    refused(await operator.post(DEPOSIT, body, signed=False, headers=garbled), 401, "bad_signature")
    # Signed for another body, another path, another method: not this request.
    header = operator.sign("POST", DEPOSIT, body.replace(b"25000", b"25001"))
    sent = {"Chemmy-Signature": header}
    refused(await operator.post(DEPOSIT, body, signed=False, headers=sent), 401, "bad_signature")
    header = operator.sign("POST", WITHDRAW, body)
    sent = {"Chemmy-Signature": header}
    refused(await operator.post(DEPOSIT, body, signed=False, headers=sent), 401, "bad_signature")
    # A request recorded and replayed later (or a clock 5 minutes off) is stale.
    refused(await operator.post(DEPOSIT, body, at=time.time() - 301), 401, "stale_signature")
    refused(await operator.post(DEPOSIT, body, at=time.time() + 301), 401, "stale_signature")
    assert await server.store.player_name("alice") is None  # nothing was done
    assert (await server.store.audit())["entries"] == 0


async def test_a_request_replayed_within_the_window_moves_nothing(
    server: ChemmyServer, operator: Operator
) -> None:
    body = json.dumps(transfer(amount=7_000)).encode()
    recorded = {"Chemmy-Signature": operator.sign("POST", DEPOSIT, body), "Idempotency-Key": "k1"}
    first = await operator.post(DEPOSIT, body, signed=False, headers=recorded)
    assert first.json()["duplicate"] is False and "idempotent-replayed" not in first.headers
    # Replayed as captured, and under other keys: the first answer, nothing moved.
    for key in ("k1", "k2", "k3"):
        replayed = await operator.post(
            DEPOSIT, body, signed=False, headers={**recorded, "Idempotency-Key": key}
        )
        assert replayed.status_code == 200
        assert replayed.json() == first.json()
        assert replayed.headers["idempotent-replayed"] == "true"
    assert (await books(server))["player:alice"] == 7_000
    assert (await server.store.audit())["entries"] == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"amount": -1},
        {"amount": 0},
        {"amount": 2**53},
        {"amount": 10**30},
        {"amount": 1.5},
        {"amount": 100.0},
        {"amount": "100"},
        {"amount": True},
        {"amount": None},
        {"transaction_id": ""},
        {"transaction_id": "x" * 129},
        {"transaction_id": "caf\u00e9"},
        {"transaction_id": "tab\there"},
        {"transaction_id": 17},
        {"player": "guest-1234"},
        {"player": "croupier"},
        {"player": "has space"},
        {"player": ""},
        {"currency": "eur"},
        {"currency": "EURO"},
        {"currency": "ABC"},
        {"currency": 978},
        {"note": "an unknown field"},
    ],
)
async def test_bad_fields_are_refused(
    server: ChemmyServer, operator: Operator, fields: dict[str, Any]
) -> None:
    refused(await operator.deposit(**fields), 400, "bad_request")
    refused(await operator.withdraw(**fields), 400, "bad_request")
    assert (await server.store.audit())["entries"] == 0


async def test_bodies_that_are_not_transfers(server: ChemmyServer, operator: Operator) -> None:
    refused(await operator.post(DEPOSIT, b"{not json"), 400, "bad_request")
    refused(await operator.post(DEPOSIT, b"[1, 2]"), 400, "bad_request")
    refused(await operator.post(DEPOSIT, b""), 400, "bad_request")
    refused(await operator.post(DEPOSIT, b"\xff\xfe"), 400, "bad_request")
    nan = b'{"transaction_id": "n", "player": "alice", "amount": NaN, "currency": "EUR"}'
    refused(await operator.post(DEPOSIT, nan), 400, "bad_request")
    missing = transfer()
    del missing["currency"]
    refused(await operator.post(DEPOSIT, missing), 400, "bad_request")
    big = transfer(transaction_id="x" * 100) | {"pad": "y" * operator_http.MAX_BODY}
    refused(await operator.post(DEPOSIT, big), 413, "too_large")

    async def chunks() -> AsyncIterator[bytes]:
        yield json.dumps(transfer()).encode()

    chunked = await operator.http.post(DEPOSIT, content=chunks())  # Transfer-Encoding
    refused(chunked, 501, "not_implemented")
    assert (await server.store.audit())["entries"] == 0


async def test_unknown_players_and_insufficient_funds(
    server: ChemmyServer, operator: Operator
) -> None:
    refused(await operator.withdraw(player="nobody"), 404, "unknown_player")
    refused(await operator.balance("nobody"), 404, "unknown_player")
    refused(await operator.get("/operator/v1/transfers/balance"), 400, "bad_request")
    assert await server.store.player_name("nobody") is None
    await operator.deposit(amount=1_000)
    refused(await operator.withdraw(transaction_id="w1", amount=1_001), 409, "insufficient_funds")
    assert (await operator.withdraw(transaction_id="w2", amount=1_000)).json()["balance"] == 0
    refused(await operator.withdraw(transaction_id="w3", amount=1), 409, "insufficient_funds")
    assert (await books(server))["player:alice"] == 0


async def test_one_currency_per_player(server: ChemmyServer, operator: Operator) -> None:
    assert (await operator.deposit(currency="JPY", amount=500)).status_code == 200
    refused(await operator.deposit(transaction_id="op-2", currency="EUR"), 409, "currency_mismatch")
    refused(
        await operator.withdraw(transaction_id="op-3", currency="USD", amount=1),
        409,
        "currency_mismatch",
    )
    assert (await operator.balance("alice")).json()["currency"] == "JPY"
    assert (await operator.deposit(transaction_id="op-4", player="bob")).status_code == 200
    assert (await operator.balance("bob")).json()["currency"] == "EUR"
    # A player who said hello but never got a deposit has no currency yet.
    assert await server.store.ensure_player("carol", "Carol", 0) == 0
    refused(
        await operator.withdraw(transaction_id="op-5", player="carol", amount=1),
        409,
        "currency_mismatch",
    )
    assert (await operator.balance("carol")).json() == {
        "status": "ok",
        "player": "carol",
        "currency": None,
        "balance": 0,
        "available": 0,
    }
    await books(server)


async def test_the_accounts_currency_decides_at_hello(
    net: Net, server: ChemmyServer, operator: Operator
) -> None:
    """Issue 33 point 5: an account funded in JPY is played in JPY only; a token that
    says another currency (or none: play money) is refused at hello, before anything is
    written, and a player with no money yet may come in any currency."""
    assert (await operator.deposit(player="ann", currency="JPY", amount=10_000)).status_code == 200
    before = await server.store.audit()
    for currency in ("EUR", None):
        client = await net.connect(server, label=f"ann-{currency}")
        token = make_token(SECRET, "ann", currency=currency)
        refusal = await client.refused("currency_mismatch", "hello", token=token)
        assert "JPY" in refusal["message"]
        await client.refused("auth_required", "tables")  # still not in
    assert await server.store.audit() == before
    assert await server.store.player_currency("ann") == "JPY"
    ann = await net.player(server, "ann", currency="JPY")
    assert ann.hello_reply["currency"] == "JPY" and ann.hello_reply["balance"] == 10_000
    eve = await net.player(server, "eve", currency="EUR")  # no transfer yet: no currency
    assert eve.hello_reply["balance"] == 0
    await books(server)


async def test_a_transaction_id_is_used_once(server: ChemmyServer, operator: Operator) -> None:
    await operator.deposit(amount=5_000)
    refused(await operator.deposit(amount=5_001), 409, "id_reused")
    refused(await operator.deposit(player="bob"), 409, "id_reused")
    refused(await operator.withdraw(amount=5_000), 409, "id_reused")
    assert (await books(server))["player:alice"] == 5_000
    assert (await server.store.audit())["entries"] == 1


async def test_operator_tokens(net: Net) -> None:
    server = await net.start(wallet="transfer", operator_key=KEY, operator_players=("boss",))
    http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}", timeout=10)

    async def deposit(token: str, tid: str) -> httpx.Response:
        return await http.post(
            DEPOSIT,
            json=transfer(transaction_id=tid),
            headers={"Authorization": f"Bearer {token}", "Idempotency-Key": tid},
        )

    try:
        by_role = await deposit(make_token(SECRET, "backoffice", roles=["operator"]), "t1")
        assert by_role.status_code == 200, by_role.text
        by_name = await deposit(make_token(SECRET, "boss"), "t2")  # --operator-players
        assert by_name.status_code == 200, by_name.text
        refused(await deposit(make_token(SECRET, "alice"), "t3"), 403, "forbidden")
        refused(await deposit(make_token(OTHER_SECRET, "boss"), "t4"), 401, "unauthorized")
        expired = make_token(SECRET, "boss", ttl=60, now=time.time() - 3600)
        refused(await deposit(expired, "t5"), 401, "unauthorized")
        refused(await deposit("not.a.token", "t6"), 401, "unauthorized")
        balance = await http.get(
            "/operator/v1/transfers/balance?player=alice",
            headers={"Authorization": f"Bearer {make_token(SECRET, 'boss')}"},
        )
        assert balance.json()["balance"] == 50_000
    finally:
        await http.aclose()
    assert (await books(server))["player:alice"] == 50_000


async def test_routes_and_an_api_that_is_off(net: Net) -> None:
    server = await net.start(wallet="transfer", operator_key=KEY)
    operator = Operator(server)
    try:
        refused(await operator.get("/operator/v1/nothing"), 404, "not_found")
        unsigned = await operator.http.get("/operator/v1/nothing")
        refused(unsigned, 401, "bad_signature")  # who asks is checked first
        wrong = await operator.get(DEPOSIT)
        refused(wrong, 405, "method_not_allowed")
        assert wrong.headers["allow"] == "POST"
    finally:
        await operator.http.aclose()
    # Play money (the internal wallet): no transfer API, whoever asks.
    internal = await net.start(db=str(net.tmp_path / "internal.sqlite3"), operator_key=KEY)
    operator = Operator(internal)
    try:
        refused(await operator.deposit(), 404, "not_found")
    finally:
        await operator.http.aclose()
    # No operator key and no JWT key: nobody could be let in, so there is no API at all.
    off = await net.start(db=str(net.tmp_path / "off.sqlite3"), wallet="transfer", jwt_secret=None)
    operator = Operator(off)
    try:
        refused(await operator.deposit(), 404, "not_found")
        refused(await operator.balance("alice"), 404, "not_found")
    finally:
        await operator.http.aclose()


async def test_a_slow_request_is_timed_out(
    server: ChemmyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(operator_http, "READ_TIMEOUT", 0.3)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(b"POST /operator/v1/transfers/deposit HTTP/1.1\r\nHost: x\r\n")
        await writer.drain()
        async with asyncio.timeout(5):
            answer = await reader.read()
    finally:
        writer.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b'"status":"timeout"' in answer


async def test_bad_http_is_refused(server: ChemmyServer) -> None:
    async def send(raw: bytes) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            writer.write(raw)
            await writer.drain()
            async with asyncio.timeout(5):
                return await reader.read()
        finally:
            writer.close()

    no_host = await send(b"POST /operator/v1/transfers/deposit HTTP/1.1\r\n\r\n")
    assert no_host.startswith(b"HTTP/1.1 400 "), no_host
    no_length = b"POST /operator/v1/transfers/deposit HTTP/1.1\r\nHost: x\r\n\r\n"
    assert (await send(no_length)).startswith(b"HTTP/1.1 411 ")
    huge_head = b"GET /operator/v1/x HTTP/1.1\r\nHost: x\r\nX: " + b"y" * 20_000 + b"\r\n\r\n"
    assert (await send(huge_head)).startswith(b"HTTP/1.1 431 ")
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(b"POST /operator/v1/transfers/dep")
        writer.write_eof()  # the client stops sending before its request is whole
        async with asyncio.timeout(5):
            assert (await reader.read()).startswith(b"HTTP/1.1 400 ")
    finally:
        writer.close()


async def test_the_cashier_is_closed_and_nobody_gets_play_money(
    net: Net, server: ChemmyServer
) -> None:
    ann = await net.player(server, "ann")
    assert ann.hello_reply["balance"] == 0  # no welcome money
    reply = await ann.refused("deposits_closed", "deposit", msg_id="d1", amount=1_000)
    assert "operator" in reply["message"]
    guest = await net.guest(server)
    assert guest.hello_reply["balance"] == 0
    await guest.refused("deposits_closed", "deposit", msg_id="d1", amount=1_000)
    assert (await guest.call("balance"))["balance"] == 0
    assert (await server.store.audit())["entries"] == 0


async def test_the_port_still_serves_websockets_and_pages(
    net: Net, server: ChemmyServer, operator: Operator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    assert (await operator.deposit(player="ann")).status_code == 200
    ann = await net.player(server, "ann", currency="EUR")  # a WebSocket after an operator call
    assert ann.hello_reply["balance"] == 25_000
    assert (await ann.call("balance"))["available"] == 25_000
    status, _, body = await http_get(server.port, "/healthz")
    assert (status, body) == (200, b"ok\n")
    status, headers, _ = await http_get(server.port, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as http:
        # (websockets answers a request's head; one with a body it cuts off, as before)
        assert (await http.post("/healthz")).status_code == 405
        assert (await http.post("/")).status_code == 405
        assert (await http.get("/nothing-here")).status_code == 404
        assert (await http.get("/operatorx")).status_code == 404
    # Each operator call is logged once, at info, and nothing is logged as an error: the
    # handshake of a connection taken over ends quietly.
    calls = [r for r in caplog.records if r.name == "chemmy.operator"]
    assert [r.levelno for r in calls] == [logging.INFO]
    assert "POST /operator/v1/transfers/deposit by operator-key" in calls[0].getMessage()
    assert ": 200" in calls[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.records


async def test_money_deposited_by_the_operator_is_played_over_the_websocket(net: Net) -> None:
    """SQLite, transfer mode: the operator moves money in, the player bets it at the
    table of its currency, the operator takes out what is on no table (never the chips
    on the felt)."""
    server = await net.start(
        wallet="transfer", operator_key=KEY, tables=(table_def("t1", currency="EUR"),)
    )
    operator = Operator(server)
    try:
        await _deposited_money_is_played(net, server, operator)
    finally:
        await operator.http.aclose()


async def _deposited_money_is_played(net: Net, server: ChemmyServer, operator: Operator) -> None:
    assert (await operator.deposit(player="ann", amount=50_000)).status_code == 200
    ann = await net.player(server, "ann", currency="EUR")
    assert ann.hello_reply["balance"] == 50_000
    await ann.join("t1")
    await ann.call("sit", table="t1")
    game = Game("t1", {"ann": ann}, ann)
    await game.to_betting()
    await ann.call("bet", table="t1", area="banker", amount=1_000)
    told = (await operator.balance("ann")).json()
    assert (told["balance"], told["available"]) == (50_000, 49_000)
    refused(
        await operator.withdraw(transaction_id="w1", player="ann", amount=49_001),
        409,
        "insufficient_funds",
    )
    out = await operator.withdraw(transaction_id="w2", player="ann", amount=9_000)
    assert (out.json()["balance"], out.json()["available"]) == (41_000, 40_000)
    await ann.call("clear_bets", table="t1")
    low = await operator.withdraw(transaction_id="w3", player="ann", amount=40_900)
    assert low.json()["available"] == 100
    # A deposit while she sits is hers to bet at once.
    await operator.deposit(transaction_id="d2", player="ann", amount=5_000)
    log = await game.play_coup({"ann": {"player": 500, "banker": 4_500}})
    assert log.round_id
    after = (await operator.balance("ann")).json()
    balances = await books(server)
    assert after["available"] == balances["player:ann"]
    assert after["balance"] == after["available"] + balances.get("stake:t1:ann", 0)
    rest = after["available"]
    final = await operator.withdraw(transaction_id="w4", player="ann", amount=rest)
    assert final.status_code == 200 and final.json()["available"] == 0
    await books(server)


async def test_transfers_on_a_redis_store(net: Net, redis_url: str) -> None:
    """A process of a cluster (the Redis store) answers the same, with the same books."""
    server = await net.start(store=redis_url, wallet="transfer", operator_key=KEY)
    operator = Operator(server)
    try:
        assert (await operator.deposit(amount=9_000)).json()["duplicate"] is False
        again = await operator.deposit(amount=9_000)
        assert again.json()["duplicate"] is True
        refused(
            await operator.deposit(transaction_id="op-2", currency="USD"), 409, "currency_mismatch"
        )
        refused(await operator.deposit(amount=1), 409, "id_reused")
        refused(
            await operator.withdraw(transaction_id="w1", amount=9_001), 409, "insufficient_funds"
        )
        out = await operator.withdraw(transaction_id="w2", amount=4_000)
        assert (out.json()["balance"], out.json()["available"]) == (5_000, 5_000)
        assert (await operator.balance("alice")).json()["currency"] == "EUR"
    finally:
        await operator.http.aclose()
    balances = await books(server)
    assert balances["player:alice"] == 5_000 and balances[OPERATOR] == -5_000


def test_a_route_with_a_path_parameter_is_found_and_exact_paths_come_first() -> None:
    from server.operator.api import OperatorAPI, OperatorAuth
    from server.store import SQLiteStore

    api = OperatorAPI(OperatorAuth(None, None), SQLiteStore(":memory:"))

    async def one(call: object) -> dict[str, object]:
        return {}

    api.add("POST", "/operator/v1/rounds/{round_id}/void", one)
    api.add("GET", "/operator/v1/rounds/{round_id}", one)
    api.add("GET", "/operator/v1/rounds/csv", one)
    methods, params = api._find("/operator/v1/rounds/t1-2-3%3Ax/void")
    assert methods is not None and set(methods) == {"POST"} and params == {"round_id": "t1-2-3:x"}
    methods, params = api._find("/operator/v1/rounds/csv")
    assert methods is not None and params == {}
    assert api._find("/operator/v1/rounds/a/b/void") == (None, {})
