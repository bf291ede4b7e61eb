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
from collections.abc import Iterable, Mapping
from typing import Any

from server.store.base import Store
from server.table.wallet import player_account
from tests.kit import scaled
from tests.kit.game import CoupLog, Game
from tests.wallet.wallet_helpers import ReferenceWallet

__all__ = [
    "PLAYERS",
    "START",
    "check_wallet_books",
    "play_seamless_coup",
    "wait_until",
    "watcher_seq",
]

START = 100_000
PLAYERS = ("alice", "bob", "carol")


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
        log = CoupLog(rid, opened["data"]["coup_no"], game.holder(), dict(result["bets"]))
        await game.settle(log, start)
    return result


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
        elif call["state"] == "refused":  # refused for good: nothing to close
            assert closing == [], (txn, closing)
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
        debited = sum(
            c["amount"]
            for c in calls
            if c["player"] == pid and c["kind"] == "debit" and c["state"] == "acknowledged"
        )
        returned = sum(
            c["amount"]
            for c in calls
            if c["player"] == pid
            and (c["kind"] == "credit" or (c["kind"] == "rollback" and c["reason"] == "voided"))
        )
        at_wallet = state["players"][pid]["balance"]
        assert at_wallet == START - debited + returned, (pid, at_wallet, debited, returned)
        mirror = (await store.balances([player_account(pid)]))[player_account(pid)]
        assert mirror == at_wallet, (pid, mirror, at_wallet)
    audit = await store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"] and audit["holds_ok"], audit
    return {"calls": calls, "wallet": state}
