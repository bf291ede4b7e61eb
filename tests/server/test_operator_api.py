"""The operator's read views (issue 21, docs/operator-api.md) over a real server on port 0.

Every endpoint, authorised (the operator's signature, an operator's token) and refused
(no credential, a player's token, a forged signature, an expired token); thousands of
rounds written straight into the store and paged through by cursor, none missed or
repeated; the CSV parsed by Python's csv module; totals per day and currency; and a
really played coup's report, whose shoe, once the table's close reveals it, ``chemmy
verify FILE`` accepts.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from client_cli.main import main as chemmy
from server.gateway.server import ChemmyServer
from server.operator.api import AuthFailures
from server.process.auth import make_token
from server.wallet.signing import signature_header
from tests.kit import Game, table_def
from tests.kit.tables import SECRET

KEY = "the-operators-key-for-the-tests-0123456789"
FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}
DAY = 86_400.0
T0 = 1_700_006_400.0  # 2023-11-15 00:00:00 UTC
ENDPOINTS = (
    "/operator/v1/rounds",
    "/operator/v1/rounds?format=csv",
    "/operator/v1/rounds/t1-1-1",
    "/operator/v1/tables",
    "/operator/v1/players",
    "/operator/v1/players/ann",
    "/operator/v1/players/ann/restriction",
    "/operator/v1/players/ann/limits",
    "/operator/v1/transactions",
    "/operator/v1/transactions/totals",
    "/operator/v1/totals",
)


class Operator:
    """Signed GETs to one server's operator API (docs/wallet.md §1)."""

    def __init__(self, server: ChemmyServer, key: str = KEY) -> None:
        self.key = key.encode()
        self.http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}", timeout=10)

    async def get(self, target: str, **headers: str) -> httpx.Response:
        signed = {"Chemmy-Signature": signature_header(self.key, time.time(), "GET", target, b"")}
        return await self.http.get(target, headers=headers or signed)

    async def json(self, target: str) -> dict[str, Any]:
        answer = await self.get(target)
        assert answer.status_code == 200, (target, answer.status_code, answer.text)
        assert answer.headers["content-type"] == "application/json"
        return dict(answer.json())


@pytest.fixture
async def server(net: Any) -> ChemmyServer:
    made: ChemmyServer = await net.start(
        **FAST,
        operator_key=KEY,
        operator_players=("boss",),
        tables=(table_def("t1"), table_def("t2", currency="EUR")),
    )
    # These tests make every refusal for every route from one address: far more failed
    # authentications than an address may make a minute (test_operator_calls.py).
    made.operator_api.failures = AuthFailures(burst=10_000)
    return made


@pytest.fixture
async def operator(server: ChemmyServer) -> AsyncIterator[Operator]:
    made = Operator(server)
    yield made
    await made.http.aclose()


def refused(answer: httpx.Response, status: int, code: str) -> None:
    assert answer.status_code == status, (answer.status_code, answer.text)
    body = answer.json()
    assert body["status"] == code and set(body) == {"status", "message"}, body


def fake_round(
    n: int, when: float, table: str = "t1", players: tuple[str, ...] = ("ann",)
) -> dict[str, Any]:
    """A round record as settlement writes it (the fields the views read)."""
    stake = 100 * (n % 5 + 1)
    won = n % 3 == 0
    return {
        "kind": "round",
        "round_id": f"{table}-9-{n}",
        "table": table,
        "shoe_no": 9,
        "coup_no": n,
        "time": when,
        "players": list(players),
        "player": ["9h", "Kd"],
        "banker": ["2c", "3d", "4s"],
        "player_total": 9,
        "banker_total": 9,
        "outcome": "tie",
        "natural": True,
        "bets": [
            {
                "player": p,
                "area": "tie",
                "stake": stake,
                "returned": 9 * stake if won else 0,
                "win": 8 * stake if won else 0,
                "commission": 0,
                "outcome": "win" if won else "lose",
            }
            for p in players
        ],
        "commission": 0,
        "holder": None,
        "turners": {"player": None, "banker": None},
        "turned_by": {"player": [], "banker": []},
        "on_behalf": [],
        "balances": {},
    }


async def test_the_endpoints_tried_are_every_read_route(server: ChemmyServer) -> None:
    """Every GET the operator API has is among the ENDPOINTS tried below (its
    parameters filled in), so a new read route cannot go untested for its refusals."""
    gets = {path for path, methods in server.operator_api.routes.items() if "GET" in methods}
    filled = {path.replace("{round_id}", "t1-1-1").replace("{player}", "ann") for path in gets}
    assert filled == {target.partition("?")[0] for target in ENDPOINTS}


async def test_every_endpoint_is_refused_without_an_operators_credential(
    server: ChemmyServer, operator: Operator
) -> None:
    player = make_token(SECRET, "ann")
    expired = make_token(SECRET, "boss", ttl=60, now=time.time() - 3600)
    forged = signature_header(b"not-the-key-0123456789", time.time(), "GET", "/x", b"")
    for target in ENDPOINTS:
        refused(await operator.http.get(target), 401, "bad_signature")
        refused(await operator.get(target, authorization=f"Bearer {player}"), 403, "forbidden")
        refused(await operator.get(target, authorization=f"Bearer {expired}"), 401, "unauthorized")
        refused(await operator.get(target, **{"Chemmy-Signature": forged}), 401, "bad_signature")
        stale = signature_header(KEY.encode(), time.time() - 400, "GET", target, b"")
        refused(await operator.get(target, **{"Chemmy-Signature": stale}), 401, "stale_signature")
        # Signed for another path: refused too.
        other = signature_header(KEY.encode(), time.time(), "GET", "/operator/v1/x", b"")
        refused(await operator.get(target, **{"Chemmy-Signature": other}), 401, "bad_signature")
        # An operator's token and the key's signature are let in.
        token = make_token(SECRET, "backoffice", roles=["operator"])
        by_token = await operator.get(target, authorization=f"Bearer {token}")
        assert by_token.status_code in (200, 404), (target, by_token.text)
        assert (await operator.get(target)).status_code == by_token.status_code
    refused(await operator.get("/operator/v1/rounds/nope"), 404, "not_found")
    refused(await operator.get("/operator/v1/players/nobody"), 404, "not_found")
    refused(await operator.get("/operator/v1/rounds?limit=0"), 400, "bad_request")
    refused(await operator.get("/operator/v1/rounds?limit=1001"), 400, "bad_request")
    refused(await operator.get("/operator/v1/rounds?limit=2.5"), 400, "bad_request")
    refused(await operator.get("/operator/v1/rounds?cursor=xyz"), 400, "bad_request")
    refused(await operator.get("/operator/v1/rounds?format=xml"), 400, "bad_request")
    refused(await operator.get("/operator/v1/rounds?since=soon"), 400, "bad_request")
    refused(await operator.get("/operator/v1/rounds?table=a&table=b"), 400, "bad_request")
    refused(await operator.get("/operator/v1/totals?per=week"), 400, "bad_request")
    answer = await operator.http.post(
        "/operator/v1/totals",
        headers={
            "Chemmy-Signature": signature_header(
                KEY.encode(), time.time(), "POST", "/operator/v1/totals", b""
            )
        },
    )
    assert answer.status_code == 405 and answer.headers["allow"] == "GET"


@pytest.mark.slow  # thousands of rounds: a second or more
async def test_thousands_of_rounds_paged_by_cursor_and_as_csv(
    server: ChemmyServer, operator: Operator
) -> None:
    # 2,100 rounds on two tables over three days, two of each time (ties by round id).
    made = [
        fake_round(
            n, T0 + (n // 2) * 200.0, "t1" if n % 3 else "t2", ("ann",) if n % 2 else ("bob",)
        )
        for n in range(2100)
    ]
    for start in range(0, len(made), 300):
        await server.store.commit(records=made[start : start + 300])
    expected = [
        r["round_id"] for r in sorted(made, key=lambda r: (r["time"], r["round_id"]), reverse=True)
    ]

    async def walk(query: str, limit: int) -> list[str]:
        seen: list[str] = []
        cursor = None
        while True:
            target = f"/operator/v1/rounds?limit={limit}{query}"
            page = await operator.json(target + (f"&cursor={cursor}" if cursor else ""))
            seen += [r["round_id"] for r in page["rounds"]]
            cursor = page["next_cursor"]
            if cursor is None:
                return seen

    everything = await walk("", 250)
    assert everything == expected and len(set(everything)) == 2100
    assert await walk("", 1000) == expected
    on_t2 = await walk("&table=t2", 99)
    assert on_t2 == [rid for rid in expected if rid.startswith("t2-")]
    bobs = await walk("&player=bob", 300)
    by_id = {r["round_id"]: r for r in made}
    assert bobs == [rid for rid in expected if by_id[rid]["players"] == ["bob"]]
    since, until = T0 + DAY, T0 + DAY + 3600
    window = await walk(f"&since={since:.0f}&until={until:.0f}", 50)
    assert window == [rid for rid in expected if since <= by_id[rid]["time"] < until]
    one = await operator.json("/operator/v1/rounds?round_id=t2-9-3")
    assert one == {"rounds": [by_id["t2-9-3"]], "next_cursor": None}
    first = await operator.json("/operator/v1/rounds")
    assert len(first["rounds"]) == 100  # the default limit

    # The CSV of a page parses, a row per round, and its next cursor is in a header.
    answer = await operator.get("/operator/v1/rounds?limit=500&format=csv")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(answer.content.decode("utf-8"))))
    assert [row["round_id"] for row in rows] == expected[:500]
    top = by_id[expected[0]]
    assert time.gmtime(top["time"]).tm_mday == 17
    money = {"staked": 0, "returned": 0}
    for bet in top["bets"]:
        money["staked"] += bet["stake"]
        money["returned"] += bet["returned"]
    assert rows[0] == {
        "time": repr(top["time"]),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(top["time"])),
        "round_id": top["round_id"],
        "table": top["table"],
        "shoe_no": "9",
        "coup_no": str(top["coup_no"]),
        "outcome": "tie",
        "player_cards": "9h Kd",
        "banker_cards": "2c 3d 4s",
        "player_total": "9",
        "banker_total": "9",
        "staked": str(money["staked"]),
        "returned": str(money["returned"]),
        "commission": "0",
        "house_result": str(money["staked"] - money["returned"]),
        "players": " ".join(top["players"]),
        # A record stored without a currency (before records carried one): its table's,
        # looked up (t2 is EUR; empty: play money).
        "currency": "EUR" if top["table"] == "t2" else "",
    }
    cursor = answer.headers["chemmy-next-cursor"]
    after = await operator.json(f"/operator/v1/rounds?limit=1&cursor={cursor}")
    assert after["rounds"][0]["round_id"] == expected[500]

    # Totals: per UTC day and table, in each table's currency (t2 is EUR), and per range.
    totals = await operator.json("/operator/v1/totals")
    want: dict[tuple[str, str], dict[str, int]] = {}
    for r in made:
        day = time.strftime("%Y-%m-%d", time.gmtime(r["time"]))
        group = want.setdefault((day, r["table"]), {"coups": 0, "staked": 0, "returned": 0})
        group["coups"] += 1
        group["staked"] += sum(b["stake"] for b in r["bets"])
        group["returned"] += sum(b["returned"] for b in r["bets"])
    got = {(row["day"], row["table"]): row for row in totals["totals"]}
    assert set(got) == set(want) and len({day for day, _ in want}) == 3
    for group, sums in want.items():
        row = got[group]
        assert row["currency"] == ("EUR" if group[1] == "t2" else None)
        assert {k: row[k] for k in sums} == sums
        assert row["house_result"] == sums["staked"] - sums["returned"]
        assert row["commission"] == 0
    currencies = {c["currency"]: c for c in totals["by_currency"]}
    assert set(currencies) == {None, "EUR"}
    assert sum(c["coups"] for c in currencies.values()) == 2100
    ranged = await operator.json(f"/operator/v1/totals?per=range&since={T0 + DAY:.0f}&table=t1")
    assert [(row["day"], row["table"]) for row in ranged["totals"]] == [(None, "t1")]
    assert ranged["totals"][0]["coups"] == sum(
        1 for r in made if r["table"] == "t1" and r["time"] >= T0 + DAY
    )


async def test_a_played_round_its_report_tables_players_and_chemmy_verify(
    net: Any, server: ChemmyServer, operator: Operator, tmp_path: Path, capsys: Any
) -> None:
    ann = await net.player(server, "ann", name="Ann")
    bob = await net.player(server, "bob", name="Bob")
    for seat, client in enumerate((ann, bob), start=1):
        await client.join("t1")
        await client.call("sit", table="t1", seat=seat)
    watcher = await net.guest(server, name="Watcher")
    await watcher.join("t1")
    game = Game("t1", {"ann": ann, "bob": bob}, watcher)
    log = await game.play_coup({"ann": {"banker": 500}, "bob": {"player": 300, "tie": 100}})
    rid = log.round_id

    report = await operator.json(f"/operator/v1/rounds/{rid}")
    record = report["round"]
    assert record == await server.store.round_record(rid)
    assert record["player"] == log.player_cards and record["banker"] == log.banker_cards
    assert {(b["player"], b["area"], b["stake"]) for b in record["bets"]} == {
        ("ann", "banker", 500),
        ("bob", "player", 300),
        ("bob", "tie", 100),
    }
    assert [s["card"] for s in record["turned_by"]["player"]] == log.player_cards
    assert set(record) >= {"holder", "turners", "turned_by", "on_behalf", "balances"}
    assert report["money"]["staked"] == 900
    assert report["money"]["house_result"] == 900 - sum(b["returned"] for b in record["bets"])
    assert report["shoe_revealed"] is False and report["shoe"] is None  # the shoe goes on

    tables = await operator.json("/operator/v1/tables")
    assert tables["process"] == server.bus.node
    lines = {line["table"]: line for line in tables["tables"]}
    assert set(lines) == {"t1", "t2"}
    t1 = lines["t1"]
    assert t1["seated"] == 2 and t1["seats"] >= 2 and t1["owner"] == server.bus.node
    assert t1["spectators"] == 1 and t1["watchers_here"] == 3
    assert t1["last_coup"]["round_id"] == rid and t1["last_coup"]["staked"] == 900
    assert t1["shoe_no"] == record["shoe_no"] and t1["coup_no"] >= record["coup_no"]
    assert lines["t2"]["last_coup"] is None and lines["t2"]["currency"] == "EUR"

    online = await operator.json("/operator/v1/players")
    players = {p["player"]: p for p in online["players"]}
    assert {"ann", "bob"} <= set(players) and len(players) == 3  # and the guest
    assert players["ann"]["tables"] == ["t1"] and players["ann"]["name"] == "Ann"
    assert players["ann"]["sessions"][0]["tables"] == ["t1"]
    at_t2 = await operator.json("/operator/v1/players?table=t2")
    assert at_t2["players"] == []

    annie = await operator.json("/operator/v1/players/ann")
    assert annie["online"] is True and annie["tables"] == ["t1"]
    assert [r["round_id"] for r in annie["rounds"]] == [rid]
    balance, available = await server.money("ann")
    assert (annie["balance"], annie["available"]) == (balance, available)
    kinds = {entry["kind"] for entry in annie["ledger"]}
    assert {"welcome", "stake"} <= kinds
    assert all(
        entry["src"] == "player:ann" or entry["dst"] == "player:ann" for entry in annie["ledger"]
    )

    bare = await operator.json("/operator/v1/players/ann?rounds=0&entries=0")
    assert bare["rounds"] == [] and bare["ledger"] == [] and bare["balance"] == balance
    one = await operator.json("/operator/v1/players/ann?rounds=1&entries=2")
    assert len(one["rounds"]) == 1 and one["ledger"] == annie["ledger"][:2]
    refused(await operator.get("/operator/v1/players/ann?rounds=101"), 400, "bad_request")
    refused(await operator.get("/operator/v1/players/ann?entries=1.5"), 400, "bad_request")

    totals = await operator.json("/operator/v1/totals")
    assert [(row["table"], row["coups"], row["staked"]) for row in totals["totals"]] == [
        ("t1", 1, 900)
    ]

    # The operator closes the table: the shoe is revealed, and the report then holds
    # the shoe record that `chemmy verify` accepts.
    boss = await net.player(server, "boss", roles=("operator",))
    await boss.call("close_table", table="t1")
    report = await operator.json(f"/operator/v1/rounds/{rid}")
    shoe = report["shoe"]
    assert report["shoe_revealed"] is True and shoe is not None
    assert shoe == await server.store.shoe_record("t1", record["shoe_no"])
    assert shoe["seed"] and shoe["complete"] is False
    assert report["verified"] == {"ok": True, "coups_checked": 1, "problems": []}
    assert report["cards_in_shoe"] is True
    path = tmp_path / "shoe.json"
    path.write_text(json.dumps(shoe), encoding="utf-8")
    capsys.readouterr()
    assert chemmy(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert "OK: seed matches the commitment; 1 coups match the shoe" in out
    # A tampered copy is refused.
    bad = dict(shoe, coups=[{"player": ["Ah", "Ah"], "banker": ["Kd", "Kd"]}])
    path.write_text(json.dumps(bad), encoding="utf-8")
    assert chemmy(["verify", str(path)]) == 1


async def test_a_rounds_cards_are_found_in_its_shoe_after_a_round_with_none(
    server: ChemmyServer, operator: Operator
) -> None:
    """Coup 1 was voided in betting (no cards: the shoe's first coup is coup 2's), so a
    round is found among the shoe's dealt coups, not at the place its coup_no says."""
    voided = {**fake_round(1, T0), "player": None, "banker": None, "void": True, "bets": []}
    dealt = fake_round(2, T0 + 60)
    shoe = {
        "kind": "shoe",
        "table": "t1",
        "shoe_no": 9,
        "stacked": True,
        "seed": None,
        "coups": [{"player": dealt["player"], "banker": dealt["banker"]}],
        "complete": False,
    }
    await server.store.commit(records=[voided, dealt, shoe])
    assert (await operator.json("/operator/v1/rounds/t1-9-2"))["cards_in_shoe"] is True
    assert (await operator.json("/operator/v1/rounds/t1-9-1"))["cards_in_shoe"] is None
    other = {**fake_round(3, T0 + 120), "player": ["Ah", "2h"]}
    await server.store.commit(records=[other])
    assert (await operator.json("/operator/v1/rounds/t1-9-3"))["cards_in_shoe"] is False


async def test_two_processes_of_a_cluster_answer_from_the_shared_store(
    net: Any, redis_url: str
) -> None:
    """Two processes over one Redis: rounds, reports, tables (with each table's lease
    owner) and totals are the same from either; players, each its own connections."""
    tables = (table_def("t1"), table_def("t2", currency="EUR"))
    one = await net.start(store=redis_url, operator_key=KEY, tables=tables, **FAST)
    two = await net.start(store=redis_url, operator_key=KEY, tables=tables, **FAST)
    ops = [Operator(one), Operator(two)]
    try:
        await one.store.commit(records=[fake_round(n, T0 + n, f"t{n % 2 + 1}") for n in range(30)])
        answers = [await op.json("/operator/v1/rounds?limit=7") for op in ops]
        assert answers[0] == answers[1] and len(answers[0]["rounds"]) == 7
        cursor = answers[0]["next_cursor"]
        pages = [await op.json(f"/operator/v1/rounds?limit=50&cursor={cursor}") for op in ops]
        assert pages[0] == pages[1] and len(pages[0]["rounds"]) == 23
        assert (await ops[0].json("/operator/v1/totals")) == (
            await ops[1].json("/operator/v1/totals")
        )
        report = await ops[1].json("/operator/v1/rounds/t2-9-1")
        assert report["round"]["round_id"] == "t2-9-1" and report["shoe"] is None

        nodes = {one.bus.node, two.bus.node}
        assert len(nodes) == 2
        deadline = time.monotonic() + 10
        while True:  # placement: each table's lease taken by one of them
            seen = [await op.json("/operator/v1/tables") for op in ops]
            owners = [{t["table"]: t["owner"] for t in s["tables"]} for s in seen]
            agreed = owners[0] == owners[1] and set(owners[0]) == {"t1", "t2"}
            if agreed and set(owners[0].values()) <= nodes:
                break
            assert time.monotonic() < deadline, seen
            await asyncio.sleep(0.05)
        assert {s["process"] for s in seen} == nodes
        lines = {t["table"]: t for t in seen[0]["tables"]}
        assert lines["t2"]["currency"] == "EUR"
        assert lines["t1"]["last_coup"]["round_id"] == "t1-9-28"

        ann = await net.player(one, "ann", name="Ann")
        await ann.join("t1")
        here = await ops[0].json("/operator/v1/players")
        there = await ops[1].json("/operator/v1/players")
        assert [p["player"] for p in here["players"]] == ["ann"]
        assert there["players"] == []  # each process answers for its own connections
        assert (await ops[1].json("/operator/v1/players/ann"))["online"] is False
    finally:
        for op in ops:
            await op.http.aclose()
