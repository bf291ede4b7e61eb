"""The aggregators' language (issue 33, point 12), on a real server calling the
reference wallet (examples/wallet, a real subprocess over HTTP):

- every call carries the game and the player's session at the operator (the token's
  ``sid``, else its ``jti``), brand and jurisdiction, so the wallet refuses the debit
  of a session that has ended, and applies the credit of a coup played before it did;
- each status of the vocabulary reaches the player in its own words; a credit refused
  for the session or the account, whatever its HTTP status, is never given up;
- calls signed with a key pair the wallet checks with the public half (Ed25519, then
  RSA, through a switch of keys with both held), and the operator's calls to Chemmy
  likewise;
- a ``failed`` credit sent again, or resolved with what the wallet really did, and the
  books that match the wallet's to the minor unit after each (docs/wallet.md §4,
  whose house-result formula is checked against Chemmy's ledger, a voided round in it).
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from server.gateway.server import ChemmyServer
from server.ledger.accounts import HOUSE, player_account
from server.process.auth import make_token
from server.wallet.signing import (
    key_signature_header,
)
from tests.kit import scaled
from tests.kit.client import Client
from tests.kit.game import Game
from tests.kit.inproc import Net
from tests.kit.operator import SignedOperator
from tests.kit.tables import SECRET, table_def
from tests.server.test_operator_voids import Back
from tests.wallet.seamless_helpers import (
    START,
    check_wallet_books,
    debit_outcome,
    place_and_close,
    play_seamless_coup,
    settle_dealt,
    wait_until,
)
from tests.wallet.wallet_helpers import ReferenceWallet, reference_wallet, write_keys

pytestmark = pytest.mark.slow  # a wallet subprocess, and whole coups, per test

ROOT = Path(__file__).resolve().parents[2]
KEY = "the-operators-key-for-the-aggregator-tests-0123456789"
#: Bets that always return something (one of player and banker wins, or a tie pushes).
BOTH = {"player": 500, "banker": 500}


@pytest.fixture
async def net(tmp_path: Path) -> AsyncIterator[Net]:
    n = Net(tmp_path)
    try:
        yield n
    finally:
        await n.close()


async def server_on(net: Net, wallet: ReferenceWallet, **over: Any) -> ChemmyServer:
    settings: dict[str, Any] = {
        "wallet": "seamless",
        "wallet_url": wallet.url,
        "wallet_secret": wallet.secret,
        "wallet_timeout": scaled(1.5),
        "guest": False,
        "operator_key": KEY,
        "tables": (table_def("t1", currency="EUR", timers={"betting": 30}),),
    }
    settings.update(over)
    return await net.start(**settings)


async def player(net: Net, server: ChemmyServer, pid: str, **claims: Any) -> Client:
    """``pid`` connected with a token in euros carrying ``claims`` (``sid``, ``jti``,
    ``brand``, ``jurisdiction``), at t1."""
    client = await net.connect(server, label=pid)
    await client.hello(token=make_token(SECRET, pid, currency="EUR", **claims))
    await client.join("t1")
    return client


async def seated(
    net: Net, server: ChemmyServer, claims: Mapping[str, Mapping[str, Any]]
) -> dict[str, Client]:
    clients = {}
    for seat, (pid, given) in enumerate(claims.items(), start=1):
        clients[pid] = await player(net, server, pid, **given)
        await clients[pid].call("sit", table="t1", seat=seat)
    return clients


async def quiet(server: ChemmyServer) -> None:
    async def done() -> bool:
        return not await server.store.wallet_calls(state="pending", limit=1)

    await wait_until(done, timeout=60, what="the pending wallet calls")


# -- the session, brand, jurisdiction and game of every call --------------------------


async def test_every_call_carries_the_game_and_the_players_session_brand_and_jurisdiction(
    net: Net, tmp_path: Path
) -> None:
    claims = {
        "alice": {
            "sid": "s-alice-1",
            "jti": "j-alice-1",
            "brand": "casino-one",
            "jurisdiction": "MT",
        },
        "bob": {"jti": "j-bob-1", "jurisdiction": "US-NJ"},  # no sid: the jti is the session
        "carol": {},  # neither: null, and the wallet takes it
    }
    with reference_wallet(tmp_path, game="chemmy-baccarat") as wallet:
        server = await server_on(net, wallet, wallet_game="chemmy-baccarat")
        clients = await seated(net, server, claims)
        game = Game("t1", clients, clients["alice"], rng=random.Random(3))
        wallet.faults({"endpoint": "debit", "fault": "timeout", "player": "carol", "seconds": 30})
        outcome = await play_seamless_coup(game, {pid: BOTH for pid in claims})
        assert outcome["refused"] == {"carol": "wallet_unavailable"}  # and rolled back
        wallet.reset()
        await quiet(server)
        await check_wallet_books(server.store, wallet, claims)
        expected = {
            "alice": ("s-alice-1", "casino-one", "MT"),
            "bob": ("j-bob-1", None, "US-NJ"),
            "carol": (None, None, None),
        }
        seen: dict[str, set[str]] = {pid: set() for pid in claims}
        for entry in wallet.log():
            pid = entry["player"]
            where = (entry["session"], entry["brand"], entry["jurisdiction"])
            assert entry["game"] == "chemmy-baccarat" and where == expected[pid], entry
            seen[pid].add(entry["endpoint"])
        assert seen == {
            "alice": {"balance", "debit", "credit"},
            "bob": {"balance", "debit", "credit"},
            "carol": {"balance", "debit", "rollback"},
        }
        # Chemmy keeps exactly what it sent.
        for call in await server.store.wallet_calls(limit=100):
            body = call["body"]
            assert (body["session"], body["brand"], body["jurisdiction"]) == expected[
                call["player"]
            ]
            assert body["game"] == "chemmy-baccarat"


async def test_a_logged_out_session_is_refused_its_debit_and_still_paid_its_coup(
    net: Net, wallet: ReferenceWallet
) -> None:
    claims = {"alice": {"sid": "s-alice-1"}, "bob": {"sid": "s-bob-1"}}
    server = await server_on(net, wallet)
    clients = await seated(net, server, claims)
    game = Game("t1", clients, clients["bob"], rng=random.Random(5))
    bets = {pid: BOTH for pid in claims}
    opened = await place_and_close(game, bets)
    rid, start = opened["data"]["round_id"], opened["start"]
    await wait_until(lambda: debit_outcome(game, rid, start) is not None, what="the debits")
    dealt = debit_outcome(game, rid, start)
    assert dealt is not None and dealt["kind"] == "dealt"
    wallet.end_session("s-alice-1")  # alice logs out at the operator mid-coup
    await settle_dealt(game, rid, opened["data"]["coup_no"], start, dealt["bets"])
    await quiet(server)
    credit = wallet.transaction(f"{rid}:alice:credit")
    assert credit["state"] == "applied" and credit["amount"] >= 500  # paid all the same
    # Her next debit, in the session that ended, is refused; she is told why.
    outcome = await play_seamless_coup(game, bets)
    assert outcome["refused"] == {"alice": "session_expired"}
    # She logs in again: a new session, and her bets stand.
    again = await player(net, server, "alice", sid="s-alice-2")
    await clients["alice"].close()
    game.players["alice"] = again
    outcome = await play_seamless_coup(game, bets)
    assert outcome["kind"] == "dealt" and outcome["refused"] == {}
    await quiet(server)
    books = await check_wallet_books(server.store, wallet, claims)
    sessions = [
        (e["endpoint"], e["session"], e["status"]) for e in wallet.log() if e["player"] == "alice"
    ]
    assert ("debit", "s-alice-1", "session_expired") in sessions
    assert ("debit", "s-alice-2", "ok") in sessions
    assert books["wallet"]["ended_sessions"] == ["s-alice-1"]


async def test_a_credit_refused_for_the_session_or_the_account_is_never_given_up(
    net: Net, wallet: ReferenceWallet
) -> None:
    """A wallet that breaks the rule (a ``403 session_expired``, a ``409
    account_locked``): Chemmy sends the credit again, with the same ids, until it is
    applied; it never marks it ``failed`` as it does another ``4xx``."""
    claims = {"alice": {"sid": "s-a"}, "bob": {"sid": "s-b"}}
    server = await server_on(net, wallet)
    clients = await seated(net, server, claims)
    game = Game("t1", clients, clients["bob"], rng=random.Random(8))
    wallet.faults(
        {
            "endpoint": "credit",
            "fault": "refuse",
            "player": "alice",
            "code": "session_expired",
            "http": 403,
            "count": 2,
        },
        {
            "endpoint": "credit",
            "fault": "refuse",
            "player": "bob",
            "code": "account_locked",
            "http": 409,
            "count": 1,
        },
    )
    outcome = await play_seamless_coup(game, {pid: BOTH for pid in claims})
    assert outcome["kind"] == "dealt"
    await quiet(server)
    books = await check_wallet_books(server.store, wallet, claims)
    credits = {c["player"]: c for c in books["calls"] if c["kind"] == "credit"}
    assert credits["alice"]["attempts"] == 3 and credits["bob"]["attempts"] == 2
    assert [e["http"] for e in wallet.log() if e["endpoint"] == "credit"].count(403) == 2


async def test_each_refusal_of_the_vocabulary_reaches_its_player(net: Net, tmp_path: Path) -> None:
    claims = {pid: {"sid": f"s-{pid}"} for pid in ("alice", "bob", "carol", "dave", "erin")}
    with reference_wallet(tmp_path, known_players_only=True) as wallet:
        for pid in claims:
            wallet.set_player(pid, balance=START)
        server = await server_on(net, wallet)
        clients = await seated(net, server, claims)
        game = Game("t1", clients, clients["alice"], rng=random.Random(9))
        wallet.set_player("bob", locked=True)
        wallet.set_player("carol", currency="JPY")
        wallet.end_session("s-dave")
        # (erin is known to the wallet, or she would have no balance to bet: the refusal
        # of a player it does not know is said on cue)
        wallet.faults(
            {"endpoint": "debit", "fault": "refuse", "code": "unknown_player", "player": "erin"}
        )
        outcome = await play_seamless_coup(game, {pid: BOTH for pid in claims})
        assert outcome["kind"] == "dealt"
        assert outcome["refused"] == {
            "bob": "account_locked",
            "carol": "currency_mismatch",
            "dave": "session_expired",
            "erin": "unknown_player",
        }
        mine = [
            e
            for e in game.players["dave"].events("t1", "debit_refused")
            if e["data"]["player"] == "dave"
        ]
        assert mine[-1]["data"]["message"] == "your session has ended; log in again to play"
        await quiet(server)
        await check_wallet_books(server.store, wallet, claims)


# -- signatures with key pairs ---------------------------------------------------------


async def test_wallet_calls_signed_with_key_pairs_through_a_switch_of_keys(
    net: Net, tmp_path: Path
) -> None:
    old_private, old_public = write_keys(
        tmp_path / "keys", "old", ed25519.Ed25519PrivateKey.generate()
    )
    new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    new_private, new_public = write_keys(tmp_path / "keys", "new", new_key)
    claims = {"alice": {"sid": "s-a"}, "bob": {"sid": "s-b"}}
    keys = {"chemmy-old": old_public, "chemmy-new": new_public}  # the switch: both held
    with reference_wallet(tmp_path, secret=None, keys=keys) as wallet:
        kids: list[str | None] = []
        for algorithm, private, kid in (
            ("ed25519", old_private, "chemmy-old"),
            ("rsa", new_private, "chemmy-new"),
        ):
            server = await server_on(
                net,
                wallet,
                wallet_secret=None,
                wallet_signature=algorithm,
                wallet_signing_key_file=str(private),
                wallet_key_id=kid,
            )
            if not kids:
                clients = await seated(net, server, claims)
            else:  # the same store, restarted: back at the seats it kept for them
                clients = {pid: await player(net, server, pid, **claims[pid]) for pid in claims}
            game = Game("t1", clients, clients["bob"], rng=random.Random(len(kids)))
            outcome = await play_seamless_coup(game, {pid: BOTH for pid in claims})
            assert outcome["kind"] == "dealt" and outcome["refused"] == {}
            await quiet(server)
            await check_wallet_books(server.store, wallet, claims)
            kids.append(wallet.log()[-1]["kid"])
            for client in clients.values():
                await client.close()
            await net.stop(server)
        assert kids == ["chemmy-old", "chemmy-new"]
        assert {e["kid"] for e in wallet.log()} == {"chemmy-old", "chemmy-new"}
        # The wallet holds no key that signs: a shared-key signature is refused, and so
        # is a key it does not hold (the old one, once dropped, would be).
        body = {
            "request_id": "b",
            "player": "alice",
            "currency": "EUR",
            "game": "chemmy",
            "session": None,
            "brand": None,
            "jurisdiction": None,
        }
        refused = wallet.call("balance", body, secret="a-shared-secret-of-more-than-32-bytes")
        assert refused.status_code == 401 and refused.json()["status"] == "bad_signature"
        stranger = ed25519.Ed25519PrivateKey.generate()
        raw = httpx.Request("POST", "http://x", json=body).content
        header = key_signature_header(stranger, "chemmy-old", time.time(), "POST", "/balance", raw)
        refused = wallet.call("balance", raw, signature=header)
        assert refused.status_code == 401 and refused.json()["status"] == "bad_signature"
        header = key_signature_header(new_key, "chemmy-new", time.time(), "POST", "/balance", raw)
        assert wallet.call("balance", raw, signature=header).status_code == 200


# -- failed calls: sent again, or resolved --------------------------------------------


async def test_failed_credits_are_sent_again_or_resolved_and_the_books_match_the_wallet(
    net: Net, wallet: ReferenceWallet
) -> None:
    claims = {"alice": {"sid": "s-a"}, "bob": {"sid": "s-b"}, "carol": {"sid": "s-c"}}
    server = await server_on(net, wallet)
    clients = await seated(net, server, claims)
    game = Game("t1", clients, clients["alice"], rng=random.Random(12))
    wallet.faults(
        {"endpoint": "credit", "fault": "refuse", "code": "debit_closed", "http": 409, "count": 3}
    )
    outcome = await play_seamless_coup(game, {pid: BOTH for pid in claims})
    rid = outcome["round_id"]
    await quiet(server)
    calls = {c["player"]: c for c in await server.store.wallet_calls(kind="credit")}
    assert {c["state"] for c in calls.values()} == {"failed"}
    op = SignedOperator(server.port, KEY)
    try:

        async def act(txn: str, what: str, body: Any) -> httpx.Response:
            path = f"/operator/v1/wallet/calls/{quote(txn, safe='')}/{what}"
            return await op.post(path, body)

        alice, bob, carol = (f"{rid}:{pid}:credit" for pid in ("alice", "bob", "carol"))
        # alice's: the wallet fixed, sent again; a repeat changes nothing.
        first = await act(alice, "retry", {"note": "wallet fixed"})
        assert first.status_code == 200 and first.json()["changed"] is True, first.text
        await quiet(server)
        repeat = await act(alice, "retry", {"note": "wallet fixed"})
        assert repeat.json()["changed"] is False
        assert repeat.json()["transaction"]["state"] == "acknowledged"
        # bob's: the operator paid it by hand (the very call), then says so.
        by_hand = wallet.call("credit", calls["bob"]["body"])
        assert by_hand.json()["status"] == "ok"
        resolved = await act(bob, "resolve", {"outcome": "applied", "note": "paid by hand"})
        assert resolved.json()["transaction"]["state"] == "acknowledged"
        [line] = resolved.json()["transaction"]["resolutions"]
        assert line["action"] == "resolve" and line["by"] == "operator-key"
        assert line["note"] == "paid by hand" and line["outcome"] == "applied"
        again = await act(bob, "resolve", {"outcome": "applied", "note": "paid by hand"})
        assert again.json()["changed"] is False
        other = await act(bob, "resolve", {"outcome": "not_applied", "note": "no"})
        assert (other.status_code, other.json()["status"]) == (409, "already_resolved")
        # carol's: the operator will not pay it (it kept the money): cancelled, and
        # Chemmy's ledger takes back what it had paid her.
        house_before = (await server.store.balances([HOUSE]))[HOUSE]
        gone = await act(carol, "resolve", {"outcome": "not_applied", "note": "kept"})
        assert gone.json()["transaction"]["state"] == "cancelled"
        assert (await server.store.balances([HOUSE]))[HOUSE] == house_before + calls["carol"][
            "amount"
        ]
        assert (await act(carol, "resolve", {"outcome": "not_applied", "note": "kept"})).json()[
            "changed"
        ] is False
        assert (await server.store.balances([HOUSE]))[HOUSE] == house_before + calls["carol"][
            "amount"
        ]
        # Refusals change nothing.
        assert (await act("t1-9-9:zed:credit", "retry", {})).status_code == 404
        debit = f"{rid}:alice:debit"
        assert (await act(debit, "retry", {})).json()["status"] == "not_failed"
        bad = await act(carol, "resolve", {"outcome": "maybe", "note": "x"})
        assert (bad.status_code, bad.json()["status"]) == (400, "bad_request")
        assert (await act(carol, "resolve", {"outcome": "applied"})).status_code == 400
        # Every player's mirror is the wallet's balance once it is asked again, and the
        # books close: what the wallet took, less what it paid, is the house's result.
        for pid in claims:
            await clients[pid].close()
            clients[pid] = await player(net, server, pid, sid=f"s-{pid[0]}")
            mirror = (await server.store.balances([player_account(pid)]))[player_account(pid)]
            assert mirror == wallet.balance(pid), pid
        assert wallet.balance("carol") == START - 1000  # never paid
        # A voided round besides: its debits end rolled_back, so §4's formula holds.
        game = Game("t1", clients, clients["alice"], rng=random.Random(13))
        await void_a_dealt_coup(game, server, {pid: BOTH for pid in claims})
        await quiet(server)
        listed = (await op.get("/operator/v1/transactions/totals")).json()["totals"]
    finally:
        await op.aclose()
    acknowledged = {
        kind: sum(t["amount"] for t in listed if t["kind"] == kind and t["state"] == "acknowledged")
        for kind in ("debit", "credit")
    }
    assert {t["state"] for t in listed if t["kind"] == "debit"} == {"acknowledged", "rolled_back"}
    house = (await server.store.balances([HOUSE]))[HOUSE]
    assert house == acknowledged["debit"] - acknowledged["credit"]
    doc = " ".join((ROOT / "docs" / "wallet.md").read_text(encoding="utf-8").split())
    assert (
        "house result at a table is its acknowledged debits less its acknowledged credits." in doc
    )
    assert "and voided rollbacks" not in doc
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"] and audit["holds_ok"], audit


async def void_a_dealt_coup(
    game: Game, server: ChemmyServer, bets: Mapping[str, Mapping[str, int]]
) -> None:
    opened = await place_and_close(game, bets)
    rid = opened["data"]["round_id"]
    await game.watcher.wait_event("dealt", table="t1")
    back = Back(server.port, KEY)
    try:
        assert (await back.void(rid, "the shoe jammed")).status_code == 200
    finally:
        await back.http.aclose()
    await game.watcher.wait_event("voided", table="t1")
