"""The currency in round records (issue 21, docs/operator-api.md, docs/protocol.md §11).

Every round record names its table's currency (``TableOptions.currency``; ``None``: play
money), the void's record too, so that the operator's views read a round's currency from
the round itself, not from a table that may have closed since: a table in EUR plays a
coup and has one voided, is closed, and the totals, the CSV of rounds and the round
report still say EUR for its rounds. A record stored before records carried a currency
is read in its table's currency now (``null`` once the table is gone).
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from typing import Any

import pytest

from server.engine.coup import finish_coup
from server.gateway.server import ChemmyServer
from server.table.settlement import round_record
from server.table.state import CoupState
from tests.kit import Game, table_def
from tests.server.test_operator_api import FAST, KEY, T0, Operator, fake_round
from tests.server.test_operator_voids import Back

LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60}


@pytest.fixture
async def server(net: Any) -> ChemmyServer:
    return await net.start(
        operator_key=KEY, wallet="transfer", tables=(table_def("t1", timers=LONG),), **FAST
    )


@pytest.fixture
async def ops(server: ChemmyServer) -> AsyncIterator[tuple[Operator, Back]]:
    """The back office: signed GETs and signed POSTs."""
    reads, calls = Operator(server), Back(server.port, KEY)
    yield reads, calls
    await reads.http.aclose()
    await calls.http.aclose()


def test_round_record_names_the_currency_it_is_given() -> None:
    coup = CoupState(
        round_id="eu-1-1",
        coup_no=1,
        player=[],
        banker=[],
        turners={"player": None, "banker": None},
        held={},
        balances_before={},
        holder=None,
    )
    result = finish_coup(["9c", "Kd"], ["2h", "4s"])
    for currency in ("EUR", None):
        record = round_record(
            table_id="eu",
            currency=currency,
            shoe_no=1,
            coup=coup,
            result=result,
            payouts=[],
            on_behalf=[],
            balances_after={},
            time=T0,
        )
        assert record["currency"] == currency


async def test_a_closed_eur_tables_rounds_are_still_reported_in_eur(
    net: Any, server: ChemmyServer, ops: tuple[Operator, Back]
) -> None:
    reads, calls = ops
    made = await calls.post(
        "/operator/v1/tables", {"table": "eu", "options": {"currency": "EUR", "timers": LONG}}
    )
    assert made.status_code == 200, made.text
    assert made.json()["table"]["currency"] == "EUR"
    # Euros are the operator's money (a transfer wallet: issue 34 §7); the play-money
    # round of t1 is a record as settlement writes it (nobody has play money here).
    funded = await calls.post(
        "/operator/v1/transfers/deposit",
        {"transaction_id": "eve-1", "player": "eve", "amount": 100_000, "currency": "EUR"},
    )
    assert funded.status_code == 200, funded.text
    eve = await net.player(server, "eve", currency="EUR")
    await eve.join("eu")
    await eve.call("sit", table="eu")
    euro = Game("eu", {"eve": eve}, eve)
    played = await euro.play_coup({"eve": {"banker": 500}})
    plain = {**fake_round(3, T0 + 3, "t1", ("ann",)), "currency": None}
    await server.store.commit(records=[plain])
    # A second EUR round, voided during its betting: the void's record names it too.
    opened = await euro.to_betting()
    voided = opened["data"]["round_id"]
    await eve.call("bet", table="eu", area="player", amount=700)
    answer = await calls.void(voided, "a dispute at the table")
    assert answer.status_code == 200, answer.text
    await eve.wait_event("voided", table="eu")
    for rid, currency in ((played.round_id, "EUR"), (voided, "EUR"), (plain["round_id"], None)):
        record = await server.store.round_record(rid)
        assert record is not None and record["currency"] == currency, (rid, record)
    history = (await eve.call("history"))["rounds"]
    assert [(r["round_id"], r["currency"]) for r in history] == [
        (voided, "EUR"),
        (played.round_id, "EUR"),
    ]
    closed = await calls.post("/operator/v1/tables/eu/close")
    assert closed.status_code == 200, closed.text
    await eve.wait_event("closed", table="eu")
    lines = (await reads.json("/operator/v1/tables"))["tables"]
    assert [line["table"] for line in lines] == ["t1"]  # eu is gone
    # A record stored before records carried a currency: its table's now (eu: none).
    old = fake_round(1, T0, "eu", ("eve",))
    await server.store.commit(records=[old])

    totals = await reads.json("/operator/v1/totals?per=range")
    rows = {(r["table"], r["currency"]): r for r in totals["totals"]}
    assert set(rows) == {("eu", "EUR"), ("eu", None), ("t1", None)}, totals
    eur = rows[("eu", "EUR")]
    assert eur["coups"] == 2 and eur["staked"] == 500 + 700
    assert eur["house_result"] == eur["staked"] - eur["returned"]
    assert rows[("eu", None)]["coups"] == 1 and rows[("t1", None)]["coups"] == 1
    by_currency = {c["currency"]: c for c in totals["by_currency"]}
    assert set(by_currency) == {"EUR", None}
    assert by_currency["EUR"] == {
        "currency": "EUR",
        **{k: eur[k] for k in eur if k not in ("day", "table", "currency")},
    }

    answer = await reads.get("/operator/v1/rounds?format=csv")
    assert answer.status_code == 200
    by_round = {
        row["round_id"]: row["currency"]
        for row in csv.DictReader(io.StringIO(answer.content.decode("utf-8")))
    }
    assert by_round == {
        played.round_id: "EUR",
        voided: "EUR",
        plain["round_id"]: "",
        old["round_id"]: "",
    }
    report = await reads.json(f"/operator/v1/rounds/{played.round_id}")
    assert report["currency"] == "EUR" and report["round"]["currency"] == "EUR"
    assert report["shoe_revealed"] is True  # the close revealed the shoe
    assert (await reads.json(f"/operator/v1/rounds/{old['round_id']}"))["currency"] is None
