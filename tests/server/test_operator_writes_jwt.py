"""Every operator write (``POST``) under an operator's JWT (issue 21, docs/wallet.md §1,
docs/operator-api.md): the back-office page sends ``Authorization: Bearer <JWT>``, not
the operator key's signature, so each write must work with a token and only with an
operator's one.

For each write route (a deposit and a withdrawal, a round's void, a table created,
closed, paused and resumed, a player's restriction and limits, a failed wallet call sent
again or resolved), on a real server on port 0 in
transfer mode, with a player seated and a bet placed on the round in play:

- refused, with nothing changed (balances, the ledger, the tables and their rounds,
  the player's restriction, the stored rounds), for no credential, a player's token
  (no ``operator`` role: 403 ``forbidden``), a token signed with another key, a token
  whose claims were changed to say ``operator`` under the player's signature, and an
  expired operator token (401);
- authorised with an operator's token (a ``roles`` claim holding ``"operator"``): the
  write happens, and is done in the token's name (``token:<sub>``).

Each runs on a server with no ``--operator-key`` (a token is the only way in: no
credential is ``401 unauthorized``) and on one with a key as well (no credential is
``401 bad_signature``; tokens are judged the same). After each, the books are audited.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from server.gateway.server import ChemmyServer
from server.ledger.accounts import OPERATOR
from server.process.auth import make_token
from server.protection.rules import current_limits
from server.store.base import (
    RoundQuery,
)
from server.wallet.calls import credit_call
from tests.kit import OTHER_SECRET, SECRET, Client, Game, table_def
from tests.kit.inproc import Net

KEY = "the-operators-key-for-the-jwt-write-tests-0123456789"
LONG = {"betting": 300, "squeeze": 300, "third_card": 300, "shoe_offer": 300, "cut": 300}
FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}
OPERATOR_SUB = "backoffice"
FUNDS = 50_000
STAKE = 1_000


def operator_token(**over: Any) -> str:
    return make_token(SECRET, OPERATOR_SUB, "Back office", roles=["operator"], **over)


def claims_changed() -> str:
    """A player's token whose payload now says ``operator``, under the player's
    signature: a forgery the signature check must catch."""
    head, _, sig = make_token(SECRET, "ann").split(".")
    payload = {"sub": OPERATOR_SUB, "roles": ["operator"], "iat": int(time.time())}
    payload["exp"] = payload["iat"] + 3600
    raw = json.dumps(payload, separators=(",", ":")).encode()
    body = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return f"{head}.{body}.{sig}"


#: name -> (Authorization header or None, HTTP status, code on a keyless server).
BAD: dict[str, Callable[[], tuple[str | None, int, str]]] = {
    "no credential": lambda: (None, 401, "unauthorized"),
    "a player's token": lambda: (f"Bearer {make_token(SECRET, 'ann')}", 403, "forbidden"),
    "another key's token": lambda: (
        f"Bearer {make_token(OTHER_SECRET, OPERATOR_SUB, roles=['operator'])}",
        401,
        "unauthorized",
    ),
    "claims changed": lambda: (f"Bearer {claims_changed()}", 401, "unauthorized"),
    "an expired token": lambda: (
        f"Bearer {operator_token(ttl=60, now=time.time() - 3600)}",
        401,
        "unauthorized",
    ),
}


@dataclass
class Scene:
    """The server and what was set up on it: Ann funded (by the operator's token),
    seated at t1 with a bet on the round in play (``rid``); t2 empty; t3 paused."""

    server: ChemmyServer
    http: httpx.AsyncClient
    ann: Client
    rid: str
    #: Two credits of Ann's the wallet refused for good: one to send again, one to resolve.
    failed: dict[str, str]

    async def post(self, path: str, body: Any, authorization: str | None) -> httpx.Response:
        headers = {"Idempotency-Key": uuid.uuid4().hex}
        if authorization is not None:
            headers["Authorization"] = authorization
        return await self.http.post(path, json=body, headers=headers)

    async def state(self) -> dict[str, Any]:
        """What any write would change."""
        store = self.server.store
        lines = {
            line["table"]: (line["phase"], line["paused"], line["round_id"], line["seated"])
            for line in await self.server.lobby.tables()
        }
        return {
            "balances": await store.load_balances(),
            "entries": (await store.audit())["entries"],
            "tables": lines,
            "stored_tables": sorted(row.table_id for row in await store.load_tables()),
            "restriction": await store.player_restriction("ann"),
            "limits": await store.player_limits("ann", rule=current_limits),
            "zed": await store.player_name("zed"),
            "rounds": [r["round_id"] for r in await store.round_records(RoundQuery(limit=100))],
            "calls": {
                name: (await store.wallet_call(txn) or {}).get("state")
                for name, txn in self.failed.items()
            },
        }


@pytest.fixture(params=[False, True], ids=["token only", "token and key"])
def keyed(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
async def scene(net: Net, keyed: bool) -> AsyncIterator[Scene]:
    extra = {"operator_key": KEY} if keyed else {}
    server = await net.start(
        **FAST,
        **extra,
        wallet="transfer",
        tables=(table_def("t1", timers=LONG, currency="EUR"), table_def("t2"), table_def("t3")),
    )
    http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}", timeout=10)
    good = f"Bearer {operator_token()}"
    funded = await http.post(
        "/operator/v1/transfers/deposit",
        json={"transaction_id": "fund-ann", "player": "ann", "amount": FUNDS, "currency": "EUR"},
        headers={"Authorization": good, "Idempotency-Key": "fund-ann"},
    )
    assert funded.status_code == 200, funded.text
    paused = await http.post(
        "/operator/v1/tables/t3/pause", headers={"Authorization": good, "Idempotency-Key": "t3"}
    )
    assert paused.status_code == 200, paused.text
    ann = await net.player(server, "ann", currency="EUR")  # her account is in EUR
    await ann.join("t1")
    await ann.call("sit", table="t1")
    opened = await Game("t1", {"ann": ann}, ann).to_betting()
    await ann.call("bet", table="t1", area="banker", amount=STAKE)
    failed: dict[str, str] = {}
    for name, rid in (("retry", "t1-0-1"), ("resolve", "t1-0-2")):
        call = credit_call("t1", rid, "ann", [], "EUR", time.time())
        await server.store.commit(calls=[call])
        await server.store.update_wallet_call(call["transaction_id"], {"state": "failed"})
        failed[name] = call["transaction_id"]
    try:
        yield Scene(server, http, ann, str(opened["data"]["round_id"]), failed)
    finally:
        await http.aclose()


# ------------------------------------------------------------------------ the writes
Check = Callable[[Scene, dict[str, Any], dict[str, Any], dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class Write:
    """One write route: its path and body (given the scene), and what the authorised
    call must have done (``check(scene, answer, before, after)``)."""

    path: Callable[[Scene], str]
    body: dict[str, Any]
    check: Check


async def deposited(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    assert answer["player"] == "zed" and answer["balance"] == 7_000 and not answer["duplicate"]
    assert after["balances"]["player:zed"] == 7_000 and after["zed"] is not None


async def withdrawn(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    assert answer["available"] == FUNDS - STAKE - 2_000
    assert after["balances"]["player:ann"] == before["balances"]["player:ann"] - 2_000


async def voided(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    assert answer["voided"] is True and answer["round_id"] == s.rid
    assert answer["by"] == f"token:{OPERATOR_SUB}"
    event = await s.ann.wait_event("voided", table="t1")
    assert event["data"]["refunded"] == {"ann": STAKE}
    assert await s.ann.balance() == FUNDS
    record = await s.server.store.round_record(s.rid)
    assert record is not None and record["void"] is True


async def created(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    assert answer["table"]["table"] == "t9" and "t9" in after["tables"]


async def closed(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    assert answer == {"table": "t2", "closed": True} and "t2" not in after["tables"]


async def paused(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    assert answer["paused"] is True and after["tables"]["t2"][1] is True


async def resumed(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    assert answer["paused"] is False and after["tables"]["t3"][1] is False


async def restricted(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    kept = answer["restriction"]
    assert kept["kind"] == "break" and kept["by"] == f"operator:token:{OPERATOR_SUB}"
    assert kept["until"] > time.time() + 23 * 3600
    assert after["restriction"] == kept
    await s.ann.refused("player_blocked", "bet", table="t1", area="player", amount=STAKE)


async def limited(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    kept = answer["limits"]["wager_day"]
    assert kept["amount"] == STAKE and kept["by"] == f"operator:token:{OPERATOR_SUB}"
    assert after["limits"]["wager_day"]["amount"] == STAKE


async def retried(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    assert answer["changed"] is True and after["calls"]["retry"] == "pending"


async def resolved(s: Scene, answer: dict[str, Any], before: Any, after: Any) -> None:
    assert answer["changed"] is True and after["calls"]["resolve"] == "acknowledged"
    lines = answer["transaction"]["resolutions"]
    assert lines[-1]["by"] == f"token:{OPERATOR_SUB}" and lines[-1]["outcome"] == "applied"


def transfer(tid: str, player: str, amount: int) -> dict[str, Any]:
    return {"transaction_id": tid, "player": player, "amount": amount, "currency": "EUR"}


WRITES: dict[str, Write] = {
    "deposit": Write(
        lambda s: "/operator/v1/transfers/deposit", transfer("d-1", "zed", 7_000), deposited
    ),
    "withdraw": Write(
        lambda s: "/operator/v1/transfers/withdraw", transfer("w-1", "ann", 2_000), withdrawn
    ),
    "void": Write(
        lambda s: f"/operator/v1/rounds/{s.rid}/void", {"reason": "a test of tokens"}, voided
    ),
    "create": Write(lambda s: "/operator/v1/tables", {"table": "t9"}, created),
    "close": Write(lambda s: "/operator/v1/tables/t2/close", {}, closed),
    "pause": Write(lambda s: "/operator/v1/tables/t2/pause", {}, paused),
    "resume": Write(lambda s: "/operator/v1/tables/t3/resume", {}, resumed),
    "restriction": Write(
        lambda s: "/operator/v1/players/ann/restriction", {"period": "24h"}, restricted
    ),
    "limits": Write(
        lambda s: "/operator/v1/players/ann/limits", {"changes": {"wager_day": STAKE}}, limited
    ),
    "retry": Write(
        lambda s: f"/operator/v1/wallet/calls/{s.failed['retry']}/retry",
        {"note": "the wallet is fixed"},
        retried,
    ),
    "resolve": Write(
        lambda s: f"/operator/v1/wallet/calls/{s.failed['resolve']}/resolve",
        {"outcome": "applied", "note": "found applied at the wallet"},
        resolved,
    ),
}


async def test_every_write_route_is_covered(scene: Scene) -> None:
    """The routes this module writes to are every POST the operator API has."""
    posts = {
        path for path, methods in scene.server.operator_api.routes.items() if "POST" in methods
    }
    assert posts == {
        "/operator/v1/transfers/deposit",
        "/operator/v1/transfers/withdraw",
        "/operator/v1/rounds/{round_id}/void",
        "/operator/v1/tables",
        "/operator/v1/tables/{table}/close",
        "/operator/v1/tables/{table}/pause",
        "/operator/v1/tables/{table}/resume",
        "/operator/v1/players/{player}/restriction",
        "/operator/v1/players/{player}/limits",
        "/operator/v1/wallet/calls/{transaction_id}/retry",
        "/operator/v1/wallet/calls/{transaction_id}/resolve",
    }
    assert len(WRITES) == len(posts)


async def books(server: ChemmyServer) -> None:
    """The audited books: conserved, each balance its ledger sum, every hold with one
    outcome; the operator's side (transfer mode) the negative of what is on this side."""
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"], audit
    assert audit["holds_ok"] and not audit["problems"], audit["problems"]
    balances = await server.store.load_balances()
    ours = sum(v for a, v in balances.items() if a.startswith(("player:", "stake:", "held:")))
    assert balances.get(OPERATOR, 0) == -(ours + balances.get("house", 0)), balances


@pytest.mark.parametrize("name", list(WRITES))
async def test_a_write_needs_an_operators_token(scene: Scene, keyed: bool, name: str) -> None:
    write = WRITES[name]
    path = write.path(scene)
    before = await scene.state()
    for bad, make in BAD.items():
        authorization, status, code = make()
        if keyed and authorization is None:
            code = "bad_signature"  # a server with a key asks for its signature first
        answer = await scene.post(path, write.body, authorization)
        assert (answer.status_code, answer.json().get("status")) == (status, code), (
            bad,
            answer.text,
        )
        assert set(answer.json()) == {"status", "message"}, answer.json()
        assert await scene.state() == before, f"{name} refused for {bad}, yet something changed"
    assert not scene.ann.events("t1", "voided")
    answer = await scene.post(path, write.body, f"Bearer {operator_token()}")
    assert answer.status_code == 200, (name, answer.text)
    after = await scene.state()
    assert after != before
    await write.check(scene, answer.json(), before, after)
    await books(scene.server)
