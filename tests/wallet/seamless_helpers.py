"""What the seamless tests share: playing a coup through the wallet's debits, and
closing the books of Chemmy's store against the reference wallet's.

- :func:`play_seamless_coup`: bets, DONE, the wallet's answer, and the coup to its
  settlement (if any wager stood), driven by the kit's :class:`~tests.kit.game.Game`
  over any clients (a server in this process, or a subprocess);
- :func:`check_wallet_books`: every debit the wallet applied has exactly one credit or
  rollback, Chemmy's records and the wallet's agree to the minor unit, each player's
  mirror equals the wallet's balance, no credit was applied twice, and Chemmy's own
  ledger audits clean. It reads any open :class:`~server.store.base.Store` (the running
  server's, or the file a stopped one left) once no call is pending.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import httpx

from server.ledger.accounts import player_account
from server.process.auth import make_token
from server.store.base import (
    Store,
)
from server.wallet.signing import HEADER, signature_header
from tests.kit import scaled
from tests.kit.client import Client
from tests.kit.game import CoupLog, Game
from tests.kit.tables import SECRET, table_def
from tests.wallet.wallet_helpers import ReferenceWallet

__all__ = [
    "BETS",
    "LONG",
    "OPERATOR_KEY",
    "PLAYERS",
    "START",
    "TABLE",
    "after_restart",
    "check_wallet_books",
    "debit_outcome",
    "debit_phase",
    "debits_seen",
    "no_call_pending",
    "operator_calls",
    "place_and_close",
    "play_seamless_coup",
    "refusals",
    "seamless_flags",
    "seamless_table",
    "seat_players",
    "settle_dealt",
    "token_player",
    "wait_until",
    "watcher_seq",
]

START = 100_000
PLAYERS = ("alice", "bob", "carol")
TABLE = "t1"
BETS: dict[str, dict[str, int]] = {
    "alice": {"banker": 1000},
    "bob": {"player": 500, "tie": 100},
    "carol": {"player": 700},
}
#: The key the operator's calls to a server subprocess are signed with (--operator-key).
OPERATOR_KEY = "seamless-tests-operator-key-0123456789abcdef"
#: Timers long enough that nothing happens unless a test (or the wallet) says so.
LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60, "grace": 120}


# ------------------------------------------------------------ a server subprocess
def seamless_table(table: str = TABLE) -> dict[str, Any]:
    """A table in euros with long timers, for a subprocess's TOML (``server_toml``)."""
    return table_def(table, currency="EUR", timers=LONG)


def seamless_flags(wallet: ReferenceWallet, timeout: float = 1.5) -> list[str]:
    """``chemmy-server`` flags: seamless on ``wallet``, its debits' deadline ``timeout``
    (scaled), no guests, and the operator API signed with :data:`OPERATOR_KEY`."""
    return [
        "--wallet",
        "seamless",
        "--wallet-url",
        wallet.url,
        "--wallet-secret",
        wallet.secret,
        "--wallet-timeout",
        str(scaled(timeout)),
        "--no-guest",
        "--operator-key",
        OPERATOR_KEY,
    ]


async def token_player(url: str, pid: str, *, label: str | None = None) -> Client:
    """``pid`` connected to ``url`` with a token in euros (the same player every time)."""
    client = Client(url, label=label or pid, timeout=scaled(15))
    await client.open()
    try:
        await client.hello(token=make_token(SECRET, pid, currency="EUR"))
    except BaseException:
        await client.close()
        raise
    return client


async def seat_players(
    urls: Mapping[str, str], *, sit: bool = True, table: str = TABLE
) -> dict[str, Client]:
    """Each player (player -> the URL of the process they use) joins ``table`` and, with
    ``sit``, sits (seats 1, 2, 3 in order)."""
    clients: dict[str, Client] = {}
    for seat, (pid, url) in enumerate(urls.items(), start=1):
        clients[pid] = client = await token_player(url, pid)
        await client.join(table)
        if sit:
            await client.call("sit", table=table, seat=seat)
    return clients


async def operator_calls(port: int, **query: Any) -> list[dict[str, Any]]:
    """``GET /operator/v1/transactions`` of the server on ``port``, signed with
    :data:`OPERATOR_KEY`: its wallet calls (one page of up to 1000), newest first."""
    target = "/operator/v1/transactions?" + urlencode({"limit": 1000, **query})
    header = signature_header(OPERATOR_KEY.encode(), time.time(), "GET", target, b"")
    async with httpx.AsyncClient(timeout=scaled(10)) as http:
        answer = await http.get(f"http://127.0.0.1:{port}{target}", headers={HEADER: header})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["next_cursor"] is None, "more calls than one page"
    calls: list[dict[str, Any]] = body["transactions"]
    return calls


async def no_call_pending(port: int, what: str = "the pending wallet calls") -> None:
    """Wait until the server on ``port`` has no wallet call pending (each delivered)."""

    async def done() -> bool:
        return not await operator_calls(port, state="pending")

    await wait_until(done, timeout=60, what=what)


def after_restart(game: Game, rid: str) -> str | None:
    """Where the round ``rid`` stands, as a watcher that joined afresh (a snapshot) sees
    it: ``dealt`` (its debits stood: a turn is due or it settled), ``none`` (no wager
    stood: the next round's betting is open), or None (still debiting)."""
    since = game.watcher.snapshot_at.get(game.table, 0)
    seen = debit_outcome(game, rid, since)
    if seen is not None:
        return str(seen["kind"])
    prompt = game.prompt()
    if prompt["kind"] == "turn":
        return "dealt"
    if prompt["kind"] == "betting_opened" and prompt["data"]["round_id"] != rid:
        return "none"
    return None


def debits_seen(wallet: ReferenceWallet, txns: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Every request the wallet logged for each of ``txns``, in order."""
    log = wallet.log()
    return {t: [r for r in log if r["transaction_id"] == t] for t in txns}


async def wait_until(check: Any, timeout: float = 20.0, what: str = "") -> None:
    """Wait (``timeout`` scaled) until ``check()`` (or the coroutine it returns) is true."""
    end = asyncio.get_running_loop().time() + scaled(timeout)
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        assert asyncio.get_running_loop().time() < end, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def watcher_seq(game: Game) -> int:
    events = game.watcher.events(game.table)
    return int(events[-1]["seq"]) if events else 0


async def place_and_close(game: Game, bets: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """Betting open: the bets, then DONE from every player. The betting_opened event,
    with the watcher's frame index before the bets as ``start``."""
    opened = await game.to_betting()
    start = len(game.watcher.frames)
    for pid, areas in bets.items():
        for area, amount in areas.items():
            await game.act(pid, "bet", area=area, amount=amount)
    for pid in game.players:
        await game.act(pid, "done")
    return {**opened, "start": start}


def debit_outcome(game: Game, rid: str, start: int) -> dict[str, Any] | None:
    """What the wallet's debits of ``rid`` came to, as the watcher saw it (None: not yet):
    ``dealt`` (with the bets that stood) or ``none`` (no wager stood)."""
    for event in game.watcher.events(game.table, start=start):
        data = event["data"]
        if event["kind"] == "betting_closed" and data["round_id"] == rid:
            return {"kind": "dealt", "bets": data["bets"]}
        if event["kind"] == "betting_opened" and data["round_id"] != rid:
            return {"kind": "none"}
    return None


def debit_phase(game: Game, rid: str, start: int) -> float | None:
    """Seconds the table spent debiting ``rid``, as the watcher saw it: from the frame of
    its ``debiting`` event to the first that ended it (the cards, a refusal, or the next
    round's betting); None while it lasts."""
    began: float | None = None
    for frame in game.watcher.frames[start:]:
        msg = frame.msg
        if msg.get("type") != "event" or msg.get("table") != game.table:
            continue
        kind, data = msg["kind"], msg["data"]
        if kind == "debiting" and data["round_id"] == rid:
            began = frame.at
        elif began is not None and (
            (kind in ("betting_closed", "debit_refused") and data["round_id"] == rid)
            or (kind == "betting_opened" and data["round_id"] != rid)
        ):
            return frame.at - began
    return None


async def refusals(game: Game, rid: str, start: int) -> dict[str, str]:
    """The debit refusals of ``rid``: player -> the reason that player alone was told."""
    refused = {
        e["data"]["player"] for e in game.watcher.events(game.table, "debit_refused", start=start)
    }
    reasons = {}
    for pid in refused:
        await game.players[pid].wait_seq(game.table, watcher_seq(game))
        mine = [
            e
            for e in game.players[pid].events(game.table, "debit_refused")
            if e["data"]["player"] == pid and e["data"]["round_id"] == rid
        ]
        reasons[pid] = mine[-1]["data"]["reason"]  # private: the reason is theirs alone
    return reasons


async def play_seamless_coup(game: Game, bets: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """Bets, DONE, the wallet's answer, and the coup to its settlement (if any wager
    stood). What happened: the refusals each player was told, and the settled round."""
    opened = await place_and_close(game, bets)
    rid, start = opened["data"]["round_id"], opened["start"]
    await wait_until(
        lambda: debit_outcome(game, rid, start) is not None, what=f"the debits of {rid}"
    )
    result = debit_outcome(game, rid, start)
    assert result is not None
    result["refused"] = await refusals(game, rid, start)
    result["round_id"] = rid
    if result["kind"] == "dealt":
        await settle_dealt(game, rid, opened["data"]["coup_no"], start, result["bets"])
    return result


async def settle_dealt(
    game: Game,
    rid: str,
    coup_no: int,
    start: int,
    bets: Mapping[str, Mapping[str, int]] | None = None,
) -> CoupLog:
    """The coup ``rid``, whose debits stood, turned to its settlement (the kit's
    ``Game.settle`` from the watcher's frame ``start``). Its first turn is waited for
    first: the step that deals it comes as several frames (and, through another
    process of a cluster, a moment after the ``betting_closed`` that opens it)."""

    def turning() -> bool:
        done = game.watcher.events(game.table, "settled", start=start)
        return any(e["data"]["round_id"] == rid for e in done) or game.prompt()["kind"] == "turn"

    await wait_until(turning, what=f"the first turn of {rid}")
    wagers = {p: dict(b) for p, b in (bets or {}).items()}
    return await game.settle(CoupLog(rid, coup_no, game.holder(), wagers), start)


async def check_wallet_books(
    store: Store, wallet: ReferenceWallet, players: Iterable[str] = PLAYERS
) -> dict[str, Any]:
    """Chemmy's records (``store``, no call pending) and the wallet's agree (see the
    module's doc). Returns ``{"calls", "wallet"}``."""
    calls = await store.wallet_calls(limit=1000)
    assert len(calls) < 1000, "more calls than one page"
    assert not [c for c in calls if c["state"] == "pending"], "calls still pending"
    state = wallet.state()
    applied = {t["transaction_id"]: t for t in state["transactions"]}
    by_txn = {c["transaction_id"]: c for c in calls}
    closers: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        if call["kind"] in ("credit", "rollback"):
            assert call["state"] == "acknowledged", call
            closers.setdefault(call["reference"], []).append(call)
    for call in calls:
        if call["kind"] != "debit":
            continue
        txn = call["transaction_id"]
        closing = closers.get(txn, [])
        if call["state"] == "acknowledged":  # it stood: one credit, or one rollback (void)
            assert len(closing) == 1, (txn, closing)
        elif call["state"] == "refused":  # refused: nothing to close (or voided meanwhile)
            assert [c["kind"] for c in closing] in ([], ["rollback"]), (txn, closing)
        else:  # no clear answer: rolled back
            assert call["state"] == "rolled_back", call
            assert [c["kind"] for c in closing] == ["rollback"], (txn, closing)
    # The wallet's side: every debit it applied is closed exactly once, by what Chemmy sent.
    for txn, row in applied.items():
        if row.get("kind") == "debit" and row.get("state") == "applied":
            assert txn in by_txn, f"the wallet applied a debit Chemmy never sent: {txn}"
            assert row["closed"] in ("credit", "rollback"), f"{txn} never closed: {row}"
            closer = by_txn[row["closed_by"]]
            assert closer["kind"] == row["closed"] and closer["reference"] == txn
        if row.get("kind") in ("credit", "rollback"):  # nothing closed Chemmy did not send
            assert by_txn.get(txn, {}).get("state") == "acknowledged", (txn, row)
    credits = [t for t in applied.values() if t.get("kind") == "credit"]
    assert len({t["transaction_id"] for t in credits}) == len(credits)
    # Money: each player's balance at the wallet is the start, less what stood, plus
    # what came back, exactly as Chemmy recorded; and Chemmy's mirror says the same.
    for pid in players:
        if pid not in state["players"]:
            continue
        # What the wallet took (a debit answered ok), and what came back: credits, and
        # the rollbacks of debits it had taken (a rollback of one it never took moved
        # nothing).
        taken = {
            c["transaction_id"]
            for c in calls
            if c["kind"] == "debit" and (c["answer"] or {}).get("status") == "ok"
        }
        debited = sum(
            c["amount"] for c in calls if c["player"] == pid and c["transaction_id"] in taken
        )
        returned = sum(
            c["amount"]
            for c in calls
            if c["player"] == pid
            and (c["kind"] == "credit" or (c["kind"] == "rollback" and c["reference"] in taken))
        )
        at_wallet = state["players"][pid]["balance"]
        assert at_wallet == START - debited + returned, (pid, at_wallet, debited, returned)
        mirror = (await store.balances([player_account(pid)]))[player_account(pid)]
        assert mirror == at_wallet, (pid, mirror, at_wallet)
    audit = await store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"] and audit["holds_ok"], audit
    return {"calls": calls, "wallet": state}
