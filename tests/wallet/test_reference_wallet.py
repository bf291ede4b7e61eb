"""The reference operator wallet (examples/wallet) keeps docs/wallet.md §3, over real HTTP.

Each test runs ``python -m examples.wallet`` as a subprocess (the ``wallet`` fixture)
and calls it as Chemmy does, signed (§1): signatures good, wrong and stale; a
``transaction_id`` applied at most once, a repeat answered with the first answer, a
reuse refused; debits refused for funds, blocks and limits; a rollback that comes before
its debit, and one after; and every fault of §5, seen from the caller's side and in the
wallet's state and log. No assertion bounds a duration from above: a busy machine only
makes them slower.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.wallet.signing import sign, signature_header
from tests.kit import scaled
from tests.wallet.wallet_helpers import SECRET, ReferenceWallet, reference_wallet

ROOT = Path(__file__).resolve().parents[2]
START = 100_000
#: What every call carries besides the call (docs/wallet.md §3): the game, and the
#: player's session, brand and jurisdiction (null when the token had none).
ORIGIN: dict[str, Any] = {"game": "chemmy", "session": None, "brand": None, "jurisdiction": None}


def debit(round_id: str, player: str = "alice", amount: int = 1500, **more: Any) -> dict[str, Any]:
    """A debit body as Chemmy sends it."""
    return {
        "request_id": f"req-{round_id}-{player}-debit",
        "transaction_id": f"{round_id}:{player}:debit",
        "player": player,
        "currency": "EUR",
        "amount": amount,
        "round_id": round_id,
        "table": "t1",
        "bets": [{"area": "banker", "amount": amount}],
        **ORIGIN,
        **more,
    }


def closing(kind: str, round_id: str, player: str = "alice", amount: int = 1500) -> dict[str, Any]:
    """A credit or rollback body closing :func:`debit` ``(round_id, player)``."""
    body = {
        **debit(round_id, player, amount),
        "request_id": f"req-{round_id}-{player}-{kind}",
        "transaction_id": f"{round_id}:{player}:{kind}",
        "debit_transaction_id": f"{round_id}:{player}:debit",
    }
    del body["bets"]
    if kind == "rollback":
        body["reason"] = "debit_unanswered"
    return body


def balance_call(player: str = "alice") -> dict[str, Any]:
    return {"request_id": f"b-{player}", "player": player, "currency": "EUR", **ORIGIN}


def ok(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    assert body["status"] == "ok", body
    return body


# -- §1: signatures ---------------------------------------------------------------------


def test_the_signature_example_of_docs_wallet_md_is_its_test_vector() -> None:
    key = b"0123456789abcdef0123456789abcdef"
    vector = sign(key, 1764601200, "POST", "/wallet/debit", b'{"a":1}')
    assert vector == "547216e06500e198a14897e4a08076a3e6f21ecb73cb3a1f66b0c8a1640a09b3"
    assert vector in (ROOT / "docs" / "wallet.md").read_text(encoding="utf-8")


def test_a_signed_call_is_answered_and_the_listening_url_is_the_wallets(
    wallet: ReferenceWallet,
) -> None:
    assert wallet.url.startswith("http://127.0.0.1:")
    assert wallet.secret == SECRET
    assert ok(wallet.call("balance", balance_call())) == {
        "status": "ok",
        "balance": START,
        "currency": "EUR",
    }


@pytest.mark.parametrize(
    ("how", "status"),
    [
        ({"signature": ""}, "bad_signature"),
        ({"signature": "t=1764601200"}, "bad_signature"),
        ({"secret": "another-secret-of-more-than-32-bytes-0123"}, "bad_signature"),
        ({"skew": -301}, "stale_signature"),
        ({"skew": +3600}, "stale_signature"),
    ],
    ids=["none", "malformed", "wrong-key", "old", "future"],
)
def test_a_call_not_signed_right_is_refused_401_and_moves_nothing(
    wallet: ReferenceWallet, how: dict[str, Any], status: str
) -> None:
    if "skew" in how:  # the time is taken now, not when the tests were collected
        how = {"now": time.time() + how["skew"]}
    answer = wallet.call("debit", debit("r1"), **how)
    assert answer.status_code == 401
    assert answer.json()["status"] == status
    assert answer.json()["message"]
    assert wallet.state()["transactions"] == []
    assert wallet.log()[-1]["http"] == 401


def test_the_signature_covers_the_bytes_sent_and_the_path(wallet: ReferenceWallet) -> None:
    body = (
        b'{"request_id": "b", "player": "alice", "currency": "EUR", "game": "chemmy",'
        b' "session": null, "brand": null, "jurisdiction": null}'
    )
    header = f"t={int(time.time())},v1={sign(SECRET.encode(), int(time.time()), 'POST', '/balance', body)}"
    assert wallet.call("balance", body, signature=header).status_code == 200
    tampered = body.replace(b"alice", b"mallory")
    assert wallet.call("balance", tampered, signature=header).json()["status"] == "bad_signature"
    # A debit signed as a balance call: the path is signed too.
    debit_body = b'{"request_id": "b", "player": "alice", "currency": "EUR"}'
    assert wallet.call("debit", debit_body, signature=header).json()["status"] == "bad_signature"


def test_a_body_that_is_not_the_call_is_400_bad_request(wallet: ReferenceWallet) -> None:
    for body in (
        b"not json",
        b"[]",
        {"player": "alice"},
        debit("r1", amount=-5),
        debit("r1", amount=0),
    ):
        answer = wallet.call("debit", body)
        assert answer.status_code == 400, body
        assert answer.json()["status"] == "bad_request"
    too_long = wallet.call("debit", b" " * (16 * 1024 + 1))
    assert (too_long.status_code, too_long.json()["status"]) == (413, "bad_request")
    assert wallet.state()["transactions"] == []
    # The control API takes a POST with no body (as curl -X POST sends it).
    assert httpx.post(f"{wallet.url}/_control/reset").status_code == 200


# -- §3: the calls ----------------------------------------------------------------------


def test_a_new_player_starts_with_the_start_balance_in_the_wallets_currency(
    wallet: ReferenceWallet,
) -> None:
    assert ok(wallet.call("balance", balance_call("zoe")))["balance"] == START
    answer = wallet.call("balance", {**balance_call("zoe"), "currency": "JPY"})
    assert answer.status_code == 200  # a refusal of the vocabulary (docs/wallet.md §3)
    assert answer.json()["status"] == "currency_mismatch"
    refused = wallet.call("debit", {**debit("r1", "zoe"), "currency": "JPY"})
    assert refused.status_code == 200 and refused.json()["status"] == "currency_mismatch"
    # A credit in another currency cannot close a debit of hers: refused for good.
    credit = {**closing("credit", "r1", "zoe"), "currency": "JPY"}
    assert wallet.call("credit", credit).status_code == 409
    assert wallet.balance("zoe") == START


def test_a_coup_debit_then_credit_moves_the_money_and_the_credit_closes_the_debit(
    wallet: ReferenceWallet,
) -> None:
    assert ok(wallet.call("debit", debit("r1"))) == {
        "status": "ok",
        "transaction_id": "r1:alice:debit",
        "balance": START - 1500,
    }
    assert (
        ok(wallet.call("credit", closing("credit", "r1", amount=2950)))["balance"] == START + 1450
    )
    assert wallet.balance("alice") == START + 1450
    the_debit = wallet.transaction("r1:alice:debit")
    assert the_debit["state"] == "applied"
    assert the_debit["closed_by"] == "r1:alice:credit"
    assert the_debit["closed"] == "credit"
    credit = wallet.transaction("r1:alice:credit")
    assert credit["debit_transaction_id"] == "r1:alice:debit"
    assert credit["moved"] == 2950


def test_a_credit_of_zero_closes_a_lost_coup(wallet: ReferenceWallet) -> None:
    ok(wallet.call("debit", debit("r1")))
    assert ok(wallet.call("credit", closing("credit", "r1", amount=0)))["balance"] == START - 1500
    assert wallet.transaction("r1:alice:debit")["closed"] == "credit"


def test_a_repeat_is_answered_with_the_first_answer_and_applied_once(
    wallet: ReferenceWallet,
) -> None:
    first = wallet.call("debit", debit("r1"))
    ok(wallet.call("credit", closing("credit", "r1", amount=500)))  # the balance moves on
    again = wallet.call("debit", debit("r1"))
    assert (again.status_code, again.json()) == (first.status_code, first.json())
    assert again.json()["balance"] == START - 1500  # the first answer's, not today's
    assert wallet.balance("alice") == START - 1000
    assert [t["transaction_id"] for t in wallet.state()["transactions"]].count(
        "r1:alice:debit"
    ) == 1
    deliveries = [e for e in wallet.log() if e["transaction_id"] == "r1:alice:debit"]
    assert [e["repeat"] for e in deliveries] == [False, True]
    assert {e["request_id"] for e in deliveries} == {"req-r1-alice-debit"}


def test_the_same_debit_delivered_many_times_at_once_is_applied_once(
    wallet: ReferenceWallet,
) -> None:
    answers: list[httpx.Response] = []
    go = threading.Barrier(8)

    def deliver() -> None:
        go.wait()
        answers.append(wallet.call("debit", debit("r1")))

    threads = [threading.Thread(target=deliver) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {(a.status_code, a.json()["balance"]) for a in answers} == {(200, START - 1500)}
    assert wallet.balance("alice") == START - 1500
    assert sorted(e["repeat"] for e in wallet.log()) == [False] + [True] * 7


@pytest.mark.parametrize(
    ("endpoint", "change"),
    [
        ("debit", {"amount": 1600}),
        ("debit", {"player": "bob"}),
        ("debit", {"round_id": "r2"}),
        ("credit", {"debit_transaction_id": "r1:alice:debit"}),
    ],
    ids=["amount", "player", "round", "kind"],
)
def test_a_transaction_id_reused_for_another_call_is_409_id_reused(
    wallet: ReferenceWallet, endpoint: str, change: dict[str, Any]
) -> None:
    ok(wallet.call("debit", debit("r1")))
    answer = wallet.call(endpoint, {**debit("r1"), **change})
    assert answer.status_code == 409
    assert answer.json()["status"] == "id_reused"
    assert wallet.balance("alice") == START - 1500
    assert len(wallet.state()["transactions"]) == 1


def test_a_debit_over_the_balance_is_refused_insufficient_funds_and_so_is_its_repeat(
    wallet: ReferenceWallet,
) -> None:
    wallet.set_player("alice", balance=1000)
    answer = wallet.call("debit", debit("r1", amount=1500))
    assert answer.status_code == 200
    assert answer.json()["status"] == "insufficient_funds"
    assert wallet.balance("alice") == 1000
    wallet.set_player("alice", balance=5000)
    # The first answer stands: the retry of a refused debit is refused the same way.
    assert wallet.call("debit", debit("r1", amount=1500)).json() == answer.json()
    assert wallet.balance("alice") == 5000
    assert wallet.transaction("r1:alice:debit")["state"] == "refused"


def test_a_rollback_before_its_debit_is_ok_and_the_late_debit_is_refused_rolled_back(
    wallet: ReferenceWallet,
) -> None:
    assert ok(wallet.call("rollback", closing("rollback", "r1")))["balance"] == START
    late = wallet.call("debit", debit("r1"))
    assert late.status_code == 200
    assert late.json()["status"] == "rolled_back"
    assert wallet.balance("alice") == START
    the_debit = wallet.transaction("r1:alice:debit")
    assert (the_debit["state"], the_debit["closed"]) == ("rolled_back", "rollback")
    assert wallet.transaction("r1:alice:rollback")["moved"] == 0
    # ... and again if the late debit is delivered twice.
    assert wallet.call("debit", debit("r1")).json()["status"] == "rolled_back"
    assert wallet.balance("alice") == START


def test_a_rollback_of_an_applied_debit_returns_the_money_once(wallet: ReferenceWallet) -> None:
    ok(wallet.call("debit", debit("r1")))
    assert ok(wallet.call("rollback", closing("rollback", "r1")))["balance"] == START
    assert ok(wallet.call("rollback", closing("rollback", "r1")))["balance"] == START  # a repeat
    assert wallet.balance("alice") == START
    the_debit = wallet.transaction("r1:alice:debit")
    assert (the_debit["state"], the_debit["closed_by"]) == ("rolled_back", "r1:alice:rollback")
    # A rollback of the same debit under another id would pay it back twice: refused.
    other = {**closing("rollback", "r1"), "transaction_id": "r1:alice:rollback-2"}
    answer = wallet.call("rollback", other)
    assert (answer.status_code, answer.json()["status"]) == (409, "debit_closed")
    assert wallet.balance("alice") == START


def test_a_rollback_of_a_credited_debit_is_refused_409(wallet: ReferenceWallet) -> None:
    ok(wallet.call("debit", debit("r1")))
    ok(wallet.call("credit", closing("credit", "r1", amount=0)))
    answer = wallet.call("rollback", closing("rollback", "r1"))
    assert (answer.status_code, answer.json()["status"]) == (409, "debit_closed")
    assert wallet.balance("alice") == START - 1500


def test_a_rollback_of_a_refused_debit_moves_nothing_and_closes_it(
    wallet: ReferenceWallet,
) -> None:
    wallet.set_player("alice", balance=100)
    assert wallet.call("debit", debit("r1")).json()["status"] == "insufficient_funds"
    assert ok(wallet.call("rollback", closing("rollback", "r1")))["balance"] == 100
    the_debit = wallet.transaction("r1:alice:debit")
    assert (the_debit["state"], the_debit["closed"]) == ("refused", "rollback")


# -- per-player controls ---------------------------------------------------------------


def test_a_blocked_player_is_refused_player_blocked(wallet: ReferenceWallet) -> None:
    assert wallet.set_player("alice", blocked=True)["blocked"] is True
    assert wallet.call("debit", debit("r1")).json()["status"] == "player_blocked"
    wallet.set_player("alice", blocked=False)
    ok(wallet.call("debit", debit("r2")))
    assert wallet.balance("alice") == START - 1500


def test_a_debit_over_the_players_limits_is_refused_limit_reached(
    wallet: ReferenceWallet,
) -> None:
    wallet.set_player("alice", debit_limit=1000)
    assert wallet.call("debit", debit("r1", amount=1001)).json()["status"] == "limit_reached"
    ok(wallet.call("debit", debit("r2", amount=1000)))
    wallet.set_player("alice", debit_limit=None, daily_limit=2500)
    ok(wallet.call("debit", debit("r3", amount=1500)))  # 2500 today
    assert wallet.call("debit", debit("r4", amount=1)).json()["status"] == "limit_reached"
    ok(wallet.call("rollback", closing("rollback", "r3")))  # rolled back: not spent
    ok(wallet.call("debit", debit("r5", amount=1500)))
    assert wallet.balance("alice") == START - 2500


def test_the_control_api_sets_players_and_shows_everything(wallet: ReferenceWallet) -> None:
    assert wallet.set_player("bob", balance=700, debit_limit=50) == {
        "currency": "EUR",
        "balance": 700,
        "blocked": False,
        "locked": False,
        "debit_limit": 50,
        "daily_limit": None,
    }
    ok(wallet.call("debit", debit("r1")))
    state = wallet.state()
    assert set(state["players"]) == {"alice", "bob"}
    assert state["transactions"] == [
        {
            "transaction_id": "r1:alice:debit",
            "kind": "debit",
            "player": "alice",
            "amount": 1500,
            "round_id": "r1",
            "debit_transaction_id": None,
            "state": "applied",
            "status": "ok",
            "moved": -1500,
            "closed_by": None,
            "closed": None,
        }
    ]
    assert state["faults"] == {"latency": 0.0, "rules": []}
    bad = httpx.post(f"{wallet.url}/_control/players", json={"player": "bob", "cash": 1})
    assert (bad.status_code, bad.json()["status"]) == (400, "bad_request")
    bad = httpx.post(f"{wallet.url}/_control/faults", json={"rules": [{"fault": "explode"}]})
    assert bad.status_code == 400


# -- §5: faults ------------------------------------------------------------------------


def test_http500_fails_count_calls_of_the_player_then_lets_them_through(
    wallet: ReferenceWallet,
) -> None:
    wallet.faults({"endpoint": "debit", "fault": "http500", "count": 2, "player": "bob"})
    ok(wallet.call("debit", debit("r1", "alice")))  # another player: untouched
    for _ in range(2):
        answer = wallet.call("debit", debit("r1", "bob"))
        assert answer.status_code == 500
    assert "bob" not in wallet.state()["players"]  # nothing applied: not even seen
    ok(wallet.call("debit", debit("r1", "bob")))
    assert wallet.balance("bob") == START - 1500
    bobs = [e for e in wallet.log() if e["player"] == "bob"]
    assert [(e["http"], e["fault"], e["repeat"]) for e in bobs] == [
        (500, "http500", False),
        (500, "http500", False),
        (200, None, False),
    ]
    (rule,) = wallet.state()["faults"]["rules"]
    assert (rule["fired"], rule["count"]) == (2, 0)


def test_reset_drops_the_connection_before_applying(wallet: ReferenceWallet) -> None:
    wallet.faults({"endpoint": "debit", "fault": "reset", "count": 1})
    with pytest.raises(httpx.TransportError):
        wallet.call("debit", debit("r1"))
    assert wallet.state()["transactions"] == []
    ok(wallet.call("debit", debit("r1")))  # the retry is the first delivery applied
    assert [(e["fault"], e["http"], e["repeat"]) for e in wallet.log()] == [
        ("reset", None, False),
        (None, 200, False),
    ]


def test_lost_answer_applies_the_call_and_the_repeat_gets_the_first_answer(
    wallet: ReferenceWallet,
) -> None:
    wallet.faults({"endpoint": "debit", "fault": "lost_answer", "count": 1})
    with pytest.raises(httpx.TransportError):
        wallet.call("debit", debit("r1"))
    assert wallet.balance("alice") == START - 1500  # applied, though nobody heard
    again = ok(wallet.call("debit", debit("r1")))
    assert again == {"status": "ok", "transaction_id": "r1:alice:debit", "balance": START - 1500}
    assert wallet.balance("alice") == START - 1500
    assert [(e["fault"], e["status"], e["http"], e["repeat"]) for e in wallet.log()] == [
        ("lost_answer", "ok", None, False),
        (None, "ok", 200, True),
    ]


def test_timeout_holds_the_request_applies_nothing_and_reset_lets_it_go(
    wallet: ReferenceWallet,
) -> None:
    wallet.faults({"endpoint": "debit", "fault": "timeout", "seconds": 600})
    with pytest.raises(httpx.TimeoutException):
        wallet.call("debit", debit("r1"), timeout=0.5)
    # (On a busy machine the request may reach the wallet after the client gave up.)
    wallet.wait_for_log(lambda entry: entry["fault"] == "timeout")
    assert wallet.state()["transactions"] == []
    wallet.reset()  # the held request is dropped now, not in 600 s
    ok(wallet.call("debit", debit("r1")))
    assert wallet.balance("alice") == START - 1500


def test_refuse_answers_each_code_and_records_it_as_the_first_answer(
    wallet: ReferenceWallet,
) -> None:
    for n, code in enumerate(("insufficient_funds", "limit_reached", "player_blocked")):
        wallet.faults({"endpoint": "debit", "fault": "refuse", "code": code, "count": 1})
        answer = wallet.call("debit", debit(f"r{n}"))
        assert (answer.status_code, answer.json()["status"]) == (200, code)
        # The rule is spent, and the retry is still refused: the first answer stands.
        assert wallet.call("debit", debit(f"r{n}")).json()["status"] == code
        assert wallet.transaction(f"r{n}:alice:debit")["state"] == "refused"
    assert wallet.balance("alice") == START


def test_a_refused_credit_is_not_kept_so_the_retry_is_applied(wallet: ReferenceWallet) -> None:
    ok(wallet.call("debit", debit("r1")))
    wallet.faults({"endpoint": "credit", "fault": "refuse", "code": "player_blocked", "count": 1})
    assert (
        wallet.call("credit", closing("credit", "r1", amount=3000)).json()["status"]
        == "player_blocked"
    )
    assert (
        ok(wallet.call("credit", closing("credit", "r1", amount=3000)))["balance"] == START + 1500
    )
    assert wallet.transaction("r1:alice:debit")["closed"] == "credit"


def test_latency_and_slow_delay_the_answer_and_still_apply_the_call(
    wallet: ReferenceWallet,
) -> None:
    wallet.faults(latency=0.3)
    began = time.monotonic()
    ok(wallet.call("balance", balance_call()))
    assert time.monotonic() - began >= 0.3
    wallet.faults({"endpoint": "debit", "fault": "slow", "seconds": 0.4, "count": 1})
    began = time.monotonic()
    ok(wallet.call("debit", debit("r1")))
    assert time.monotonic() - began >= 0.4
    assert wallet.balance("alice") == START - 1500
    wallet.reset()
    assert wallet.state()["faults"] == {"latency": 0.0, "rules": []}


def test_held_applies_the_call_at_once_and_holds_only_its_answer(
    wallet: ReferenceWallet,
) -> None:
    ok(wallet.call("debit", debit("r1")))
    wallet.faults({"endpoint": "credit", "fault": "held", "seconds": 600, "count": 1})
    with pytest.raises(httpx.TimeoutException):
        wallet.call("credit", closing("credit", "r1", amount=3000), timeout=0.5)
    wallet.wait_for_log(lambda entry: entry["fault"] == "held")
    assert wallet.balance("alice") == START + 1500  # applied, its answer still held
    wallet.reset()  # what it holds goes now
    again = ok(wallet.call("credit", closing("credit", "r1", amount=3000)))
    assert again["balance"] == START + 1500  # the repeat: applied once
    assert [(e["fault"], e["http"], e["repeat"]) for e in wallet.log()] == [
        (None, 200, False),
        ("held", 200, False),
        (None, 200, True),
    ]


@pytest.mark.slow  # 0.01 s for each of the answer's bytes: two seconds
def test_drip_applies_the_call_and_dribbles_every_byte_of_its_answer(
    wallet: ReferenceWallet,
) -> None:
    wallet.faults({"endpoint": "debit", "fault": "drip", "seconds": 0.01, "count": 1})
    began = time.monotonic()
    answer = wallet.call("debit", debit("r1"))
    took = time.monotonic() - began
    assert ok(answer)["balance"] == START - 1500
    # Every byte but the first waited its 0.01 s: the status line, headers and body.
    head = len("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \r\n\r\n")
    assert took >= 0.01 * (head + len(answer.content)), took
    # A caller who gives up finds the call applied; a reset sends the rest at once.
    wallet.faults({"endpoint": "debit", "fault": "drip", "seconds": 600})
    with pytest.raises(httpx.TimeoutException):
        wallet.call("debit", debit("r2"), timeout=0.5)
    wallet.wait_for_log(lambda entry: entry["fault"] == "drip")
    assert wallet.transaction("r2:alice:debit")["state"] == "applied"
    wallet.reset()
    assert ok(wallet.call("debit", debit("r2")))["balance"] == START - 3000
    assert wallet.balance("alice") == START - 3000


def test_a_rule_with_no_count_fires_until_the_faults_are_reset(wallet: ReferenceWallet) -> None:
    wallet.faults({"fault": "http500"})
    for endpoint, body in (("balance", balance_call()), ("debit", debit("r1"))):
        assert wallet.call(endpoint, body).status_code == 500
    wallet.reset()
    ok(wallet.call("debit", debit("r1")))


# -- the process -----------------------------------------------------------------------


def test_a_restart_keeps_the_balances_the_transactions_and_the_url(
    wallet: ReferenceWallet,
) -> None:
    first = ok(wallet.call("debit", debit("r1")))
    url = wallet.url
    wallet.faults({"fault": "http500"})
    wallet.restart()
    assert wallet.url == url
    assert ok(wallet.call("debit", debit("r1"))) == first  # no faults after a restart
    assert wallet.balance("alice") == START - 1500
    assert [e["repeat"] for e in wallet.log()] == [True]  # the log starts again


def test_the_control_api_answers_only_loopback(tmp_path: Path) -> None:
    from examples.wallet.service import control_allowed

    assert control_allowed("127.0.0.1") and control_allowed("::1")
    assert not control_allowed("10.1.2.3") and not control_allowed("2001:db8::1")
    # And through a real socket, from this machine's own outside address (when it has
    # one: a machine with loopback only has no other way in).
    address = _outside_address() or "127.0.0.1"
    with reference_wallet(tmp_path, host="0.0.0.0") as wallet:
        port = wallet.url.rsplit(":", 1)[1]
        outside = httpx.get(f"http://{address}:{port}/_control/state", timeout=scaled(10))
        expected = 200 if address == "127.0.0.1" else 404
        assert outside.status_code == expected, outside.text
        assert "players" in wallet.state()  # from loopback


def _outside_address() -> str | None:
    """An address of this machine's that is not loopback, or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: only the route is chosen
        except OSError:
            return None
        address: str = probe.getsockname()[0]
    return None if ipaddress.ip_address(address).is_loopback else address


def test_kill_leaves_nothing_listening(wallet: ReferenceWallet) -> None:
    url = wallet.url
    wallet.kill()
    assert not wallet.process.running
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/_control/state", timeout=scaled(5))


def test_a_credit_of_a_rolled_back_debit_is_refused_for_good(wallet: ReferenceWallet) -> None:
    """Paying a coup whose stake went back already would pay the player twice."""
    body = {
        "request_id": "r-d",
        "transaction_id": "t1-9-1:zed:debit",
        "player": "zed",
        "currency": "EUR",
        "amount": 500,
        "round_id": "t1-9-1",
        "table": "t1",
        "bets": [{"area": "banker", "amount": 500}],
        **ORIGIN,
    }
    assert wallet.call("debit", body).json()["status"] == "ok"
    back = {**body, "request_id": "r-r", "transaction_id": "t1-9-1:zed:rollback"}
    back.pop("bets")
    back.update(debit_transaction_id="t1-9-1:zed:debit", reason="voided")
    assert wallet.call("rollback", back).json()["status"] == "ok"
    credit = {**back, "request_id": "r-c", "transaction_id": "t1-9-1:zed:credit"}
    credit.pop("reason")
    credit.update(amount=975, payouts=[{"area": "banker", "stake": 500, "returned": 975}])
    refused = wallet.call("credit", credit)
    assert refused.status_code == 409 and refused.json()["status"] == "debit_closed"
    assert wallet.balance("zed") == 100_000


# -- the aggregators' fields, statuses and signatures (issue 33, point 12) -------------


def test_every_call_must_say_its_game_and_where_the_player_plays_from(tmp_path: Path) -> None:
    with reference_wallet(tmp_path, game="chemmy") as wallet:
        for missing in ("game", "session", "brand", "jurisdiction"):
            body = debit("r1")
            del body[missing]
            answer = wallet.call("debit", body)
            assert answer.status_code == 400 and missing in answer.json()["message"]
        other = wallet.call("debit", debit("r1", game="punto-banco"))
        assert other.status_code == 400 and "punto-banco" in other.json()["message"]
        assert wallet.state()["transactions"] == []
        where = {"session": "s-1", "brand": "casino-one", "jurisdiction": "MT"}
        ok(wallet.call("debit", debit("r1", **where)))
        logged = wallet.log()[-1]
        assert {k: logged[k] for k in (*where, "game", "kid")} == {
            **where,
            "game": "chemmy",
            "kid": None,
        }


def test_an_ended_session_or_a_locked_account_refuses_debits_never_credits_or_rollbacks(
    wallet: ReferenceWallet,
) -> None:
    ok(wallet.call("debit", debit("r1", session="s-1")))
    ok(wallet.call("debit", debit("r2", session="s-1")))
    wallet.end_session("s-1")  # logged out, with two coups in play
    refused = wallet.call("debit", debit("r3", session="s-1"))
    assert refused.status_code == 200 and refused.json()["status"] == "session_expired"
    assert wallet.call("balance", {**balance_call(), "session": "s-1"}).json()["status"] == (
        "session_expired"
    )
    ok(wallet.call("debit", debit("r4", session="s-2")))  # a new login plays
    credit = {**closing("credit", "r1"), "session": "s-1", "amount": 2925}
    ok(wallet.call("credit", credit))  # the coup was played: paid all the same
    wallet.set_player("alice", locked=True)
    locked = wallet.call("debit", debit("r5", session="s-2"))
    assert locked.json()["status"] == "account_locked"
    ok(wallet.call("rollback", {**closing("rollback", "r2"), "session": "s-1"}))
    assert wallet.balance("alice") == START - 1500 + 2925 - 1500  # r1 paid, r2 back, r4 taken
    again = wallet.call("debit", debit("r3", session="s-1"))  # a repeat: its first answer
    assert again.json()["status"] == "session_expired" and wallet.log()[-1]["repeat"]
    assert wallet.state()["ended_sessions"] == ["s-1"]


def test_a_wallet_of_known_players_only_does_not_know_a_stranger(tmp_path: Path) -> None:
    with reference_wallet(tmp_path, known_players_only=True) as wallet:
        assert wallet.call("balance", balance_call("zed")).json()["status"] == "unknown_player"
        refused = wallet.call("debit", debit("r1", "zed"))
        assert refused.status_code == 200 and refused.json()["status"] == "unknown_player"
        # A rollback of what was never taken: ok; a credit of a stranger: needs a person.
        ok(wallet.call("rollback", closing("rollback", "r1", "zed")))
        credit = wallet.call("credit", closing("credit", "r2", "zed"))
        assert (credit.status_code, credit.json()["status"]) == (409, "unknown_player")
        wallet.set_player("zed", balance=2000)
        ok(wallet.call("debit", debit("r3", "zed", amount=2000)))
        assert "zed" in wallet.state()["players"]


def test_a_wallet_holding_chemmys_public_keys_takes_either_and_nothing_else(
    tmp_path: Path,
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

    from server.wallet.signing import key_signature_header

    old = ed25519.Ed25519PrivateKey.generate()
    new = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    keys = {}
    for kid, key in (("old", old), ("new", new)):
        keys[kid] = tmp_path / f"{kid}.pub.pem"
        keys[kid].write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
    with reference_wallet(tmp_path, secret=None, keys=keys) as wallet:
        raw = json.dumps(balance_call()).encode()

        def signed(key: Any, kid: str, path: str = "/balance") -> str:
            return key_signature_header(key, kid, time.time(), "POST", path, raw)

        assert wallet.call("balance", raw, signature=signed(old, "old")).status_code == 200
        assert wallet.call("balance", raw, signature=signed(new, "new")).status_code == 200
        assert [e["kid"] for e in wallet.log()] == ["old", "new"]
        for header in (
            signed(old, "new"),  # the other key's id
            signed(new, "newer"),  # a key it does not hold
            signed(old, "old", "/debit"),  # signed for another path
            signature_header(SECRET.encode(), time.time(), "POST", "/balance", raw),  # shared
        ):
            answer = wallet.call("balance", raw, signature=header)
            assert answer.status_code == 401 and answer.json()["status"] == "bad_signature"
