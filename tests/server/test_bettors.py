"""Bettors without a seat over a real server (GAME_RULES §5, §6, §8; issue 37): spectators
bet beside the seated players over real sockets, in JSON and msgpack, a guest among them
(stored by their first bet, not by watching); they turn the Player cards when theirs is
the highest Player bet; each one's bets and result reach only them while everyone sees
the felt's totals; one who loses the connection mid-coup keeps the wagers, settled in
their absence; a table's ``bettors`` option refuses them. Every coup is checked against
the rules oracle, and the ledger is audited after."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.kit import Client, Game, table_def
from tests.kit.checks import check_coup, check_public_views_agree

FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}


async def _audit(server: Any, table: str = "t1") -> None:
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"] and audit["holds_ok"], audit
    assert (await server.store.balances([f"held:{table}"]))[f"held:{table}"] == 0


async def _replies(
    clients: dict[str, Client], sent: dict[str, tuple[Any, int]]
) -> dict[str, dict[str, Any]]:
    """Each player's reply to the command they sent (``send_command``'s id and start)."""
    return {
        pid: await clients[pid].wait_frame(
            lambda m, mid=mid: m.get("id") == mid, start=start, what="the reply"
        )
        for pid, (mid, start) in sent.items()
    }


def _bets(rng: random.Random) -> dict[str, int]:
    area = rng.choice(["player", "player", "banker", "tie"])
    return {area: rng.randrange(100, 1_501, 100)}


@pytest.mark.slow
async def test_bettors_without_a_seat_play_beside_the_seated_players(net: Any) -> None:
    server = await net.start(**FAST, guest_balance=200_000, tables=(table_def("t1"),))
    watcher = await net.guest(server, "msgpack", name="Watcher")
    await watcher.join("t1")
    seated: dict[str, Client] = {}
    for n, fmt in enumerate(("json", "msgpack"), start=1):
        client = await net.player(server, f"p{n}", fmt, name=f"P{n}")
        await client.join("t1")
        await client.call("sit", table="t1", seat=n)
        seated[client.player] = client
    bettors: dict[str, Client] = {}
    for n, fmt in enumerate(("json", "msgpack"), start=1):
        client = await net.player(server, f"b{n}", fmt, name=f"B{n}")
        await client.join("t1")
        bettors[client.player] = client
    guest = await net.guest(server, "json", name="Guest")
    bettors[str(guest.player)] = guest
    balances = {pid: server.config.guest_balance for pid in [*seated, *bettors]}
    rng = random.Random(37)
    game = Game("t1", seated, watcher, rng=rng, bettors=bettors, progress=True)
    await game.to_betting()
    snap = await guest.join("t1")
    # A guest who only watches is not stored, yet may bet: their actions say with what.
    assert snap["snapshot"]["you"]["available"] == server.config.guest_balance
    assert snap["snapshot"]["you"]["actions"]["bet"]["areas"]["player"]["max"] == 10_000
    assert await server.store.player_name(guest.player) is None
    turned_by_a_bettor = False
    for coup in range(6):
        bets = {pid: _bets(rng) for pid in [*seated, *bettors]}
        if coup == 0:  # a bettor's the highest Player bet: they turn the Player cards
            bets[guest.player] = {"player": 5_000}
        log = await game.play_coup(bets)
        check_coup(log, balances)  # turners, payouts, balances: bettors' too
        turned_by_a_bettor |= log.turners["player"] in bettors
    assert turned_by_a_bettor
    assert await server.store.player_name(guest.player) == "Guest"  # stored by the bet

    # What everyone saw: the felt, never a bettor's bets or result (unless they turn).
    turners = {log.turners["player"] for log in game.log}
    for client in [watcher, *seated.values()]:
        for event in client.events("t1"):
            for pid in bettors:
                if pid not in turners and event["kind"] != "chat":
                    assert f'"{pid}"' not in json.dumps(event), (pid, event)
    for pid, client in bettors.items():
        others = [p for p in bettors if p != pid and p not in turners]
        for event in client.events("t1"):
            assert not any(f'"{o}"' in json.dumps(event) for o in others), event
        settled = client.events("t1", "settled")
        assert all({p["player"] for p in e["data"]["own"]} == {pid} for e in settled)
        assert [e["data"]["balance"] for e in settled][-1] == balances[pid]
    opened = watcher.events("t1", "bets")
    assert any(e["data"]["player"] is None and e["data"]["bettors"] >= 1 for e in opened)

    # Their balance, their history: their own, as a seated player's.
    for pid, client in bettors.items():
        reply = await client.call("balance")
        assert reply["balance"] == balances[pid]
        rounds = (await client.call("history", limit=100))["rounds"]
        assert [r["round_id"] for r in rounds] == [log.round_id for log in reversed(game.log)]
        assert all({b["player"] for b in r["bets"]} == {pid} for r in rounds)
    check_public_views_agree(watcher, [*seated.values(), *bettors.values()], "t1")
    for client in [watcher, *seated.values(), *bettors.values()]:
        client.assert_clean()
    await _audit(server)


@pytest.mark.slow
async def test_a_bettor_who_drops_mid_coup_keeps_the_wager_and_is_paid(net: Any) -> None:
    server = await net.start(
        **FAST, tables=(table_def("t1", timers={"squeeze": 1.0, "third_card": 1.0}),)
    )
    ann = await net.player(server, "ann", name="Ann")
    await ann.join("t1")
    await ann.call("sit", table="t1")
    zoe = await net.player(server, "zoe", "msgpack", name="Zoe")
    await zoe.join("t1")
    game = Game("t1", {"ann": ann}, ann, bettors={"zoe": zoe}, style=lambda *a: None)
    opened = await game.to_betting()
    await game.act("zoe", "bet", area="player", amount=1_000)  # Zoe turns the Player cards
    await game.act("zoe", "bet", area="tie", amount=100)
    before = (await zoe.call("balance"))["available"]
    await game.act("ann", "bet", area="banker", amount=100)
    reply = await game.act("ann", "done")  # closed: Zoe's bettors' chips count, not waited for
    dealt = await ann.wait_event("dealt", table="t1", after=reply["seq"] - 3)
    assert dealt["data"]["turners"]["player"] == "zoe"
    assert dealt["data"]["names"]["zoe"] == "Zoe"
    await zoe.abort()  # gone mid-coup: the croupier turns for her when her timer runs out
    settled = await ann.wait_event("settled", table="t1", timeout=30)
    assert settled["data"]["round_id"] == opened["data"]["round_id"]
    record = await server.store.round_record(opened["data"]["round_id"])
    assert record is not None and "zoe" in record["players"]
    assert any(x["player"] == "zoe" for x in record["on_behalf"])
    net_zoe = sum(b["returned"] - b["stake"] for b in record["bets"] if b["player"] == "zoe")
    await zoe.reconnect("t1", since=False)
    assert (await zoe.call("balance"))["available"] == before + 1_100 + net_zoe
    mine = (await zoe.call("history", limit=1))["rounds"][0]
    assert mine["round_id"] == opened["data"]["round_id"]
    await _audit(server)


async def test_a_tables_bettors_option(net: Any) -> None:
    server = await net.start(
        **FAST,
        tables=(table_def("solo", bettors=0), table_def("one", bettors=1)),
    )
    ann = await net.player(server, "ann", name="Ann")
    cy = await net.player(server, "cy", name="Cy")
    dee = await net.player(server, "dee", name="Dee")
    for table in ("solo", "one"):
        lines = {line["table"]: line for line in (await dee.call("tables"))["tables"]}
        assert lines[table]["bettors_max"] == (0 if table == "solo" else 1)
        for client in (ann, cy, dee):
            await client.join(table)
        await ann.call("sit", table=table)
        game = Game(table, {"ann": ann}, ann)
        await game.to_betting()
    await cy.refused("seated_only", "bet", table="solo", area="player", amount=100)
    await cy.call("bet", table="one", area="player", amount=100)
    await dee.refused("bettors_full", "bet", table="one", area="player", amount=100)
    snap = (await dee.call("join", table="one"))["snapshot"]
    assert snap["felt"] == {"totals": {"player": 100}, "bettors": 1}
    assert "bet" not in snap["you"]["actions"] and snap["options"]["bettors"] == 1
    line = {x["table"]: x for x in (await dee.call("tables"))["tables"]}["one"]
    assert line["bettors"] == 1
    await cy.call("clear_bets", table="one")
    await dee.call("bet", table="one", area="banker", amount=100)  # room again
    # A bettor's own limits hold their chips as a seated player's (the gateway's
    # allowance, the store's guards): Dee's wager limit of 150 leaves 50 more.
    await dee.call("set_limit", kind="wager_day", amount=150)
    await dee.refused("limit_reached", "bet", table="one", area="banker", amount=100)
    await _audit(server, "one")


async def test_bettors_betting_at_once_are_told_together_in_one_commit(net: Any) -> None:
    """Forty bettors without a seat bet at the same moment (issue 37 §3): the table steps
    their chips in bursts, each burst one commit and one ``bets`` event for all of them
    (each bettor's own copy with their chips), not an event each to everyone watching;
    a bet over the table's limit among them is refused alone; every other is answered
    ok after the event that shows it; the felt and the books are exact."""
    server = await net.start(**FAST, guest_balance=200_000, tables=(table_def("t1"),))
    watcher = await net.guest(server, "msgpack", name="Watcher")
    await watcher.join("t1")
    seated = {"p1": await net.player(server, "p1", "json", name="P1")}
    await seated["p1"].join("t1")
    await seated["p1"].call("sit", table="t1", seat=1)
    bettors: dict[str, Client] = {}
    for n in range(40):
        client = await net.player(server, f"b{n}", "msgpack" if n % 2 else "json")
        await client.join("t1")
        bettors[client.player] = client
    game = Game("t1", seated, watcher, rng=random.Random(7), bettors=bettors)
    await game.to_betting()
    mark = watcher.last_seq["t1"]
    amounts = {pid: 100 * (1 + n % 7) for n, pid in enumerate(bettors)}
    amounts["b13"] = 10_000_000  # over the table's limit: refused, alone
    sent = {pid: await c.send_command("bet", table="t1", area="player", amount=amounts[pid])
            for pid, c in bettors.items()}  # fmt: skip
    replies = await _replies(bettors, sent)
    assert replies.pop("b13")["type"] == "error"
    assert all(r["type"] == "ok" for r in replies.values()), replies
    await watcher.wait_seq("t1", max(r["seq"] for r in replies.values()))
    told = [e for e in watcher.events("t1", "bets") if e["seq"] > mark]
    assert 1 <= len(told) < len(replies) // 2, f"{len(told)} events for {len(replies)} bets"
    total = sum(amounts[pid] for pid in replies)
    assert told[-1]["data"]["totals"] == {"player": total} and told[-1]["data"]["bettors"] == 39
    # Each bettor's own copy, before their reply: their chips; nobody else's name.
    for pid, reply in replies.items():
        mine = [e for e in bettors[pid].events("t1", "bets") if e["seq"] > mark]
        own = [e for e in mine if e["data"]["player"] == pid]
        assert own and own[-1]["seq"] <= reply["seq"], (pid, mine)
        assert own[-1]["data"]["bets"] == {"player": amounts[pid]}
        assert own[-1]["data"]["actions"]["remove_bet"]["areas"]["player"]["have"] == amounts[pid]
        others = set(bettors) - {pid}
        assert not any(f'"{o}"' in json.dumps(e) for e in mine for o in others)
    # The money exact: each bettor's chips on the felt, the rest available.
    after = await server.store.audit()
    assert after["sum"] == 0 and after["ledger_matches"], after
    for pid in replies:
        money = await bettors[pid].call("balance")
        assert (money["balance"], money["available"]) == (200_000, 200_000 - amounts[pid])
    for client in [watcher, *bettors.values()]:
        client.assert_clean()


async def test_a_burst_the_store_refuses_for_one_bettor_is_stepped_again_one_by_one(
    net: Any,
) -> None:
    """Bob's balance at t1 is out of date: he spent most of it at t2 meanwhile. His bet at
    t1 comes in a burst with ten others'; the store refuses the burst's commit (his
    balance would go below zero), so the table goes back to its last stored step and
    steps each command alone: his is refused ``insufficient_funds``, the others' are
    taken, and the books are exact."""
    server = await net.start(**FAST, guest_balance=1_000, tables=(table_def("t1"), table_def("t2")))
    watcher = await net.guest(server, "json", name="Watcher")
    games = {}
    for t in ("t1", "t2"):
        seat = await net.player(server, f"s-{t}", "json")
        await seat.join(t)
        await seat.call("sit", table=t, seat=1)
        await watcher.join(t)
        games[t] = Game(t, {seat.player: seat}, watcher, rng=random.Random(5))
        await games[t].to_betting()
    bob = await net.player(server, "bob", "msgpack", name="Bob")
    others: dict[str, Client] = {}
    for n in range(10):
        client = await net.player(server, f"o{n}", "json")
        await client.join("t1")
        others[client.player] = client
    await bob.join("t1")  # t1 reads his balance: 1,000
    await bob.join("t2")
    await bob.call("bet", table="t2", area="banker", amount=900)  # 100 left
    sent = {"bob": await bob.send_command("bet", table="t1", area="player", amount=800)}
    for pid, client in others.items():
        sent[pid] = await client.send_command("bet", table="t1", area="player", amount=100)
    clients = {"bob": bob, **others}
    replies = await _replies(clients, sent)
    assert replies.pop("bob")["code"] == "insufficient_funds"
    assert all(r["type"] == "ok" for r in replies.values()), replies
    await watcher.wait_seq("t1", max(r["seq"] for r in replies.values()))
    last = watcher.events("t1", "bets")[-1]["data"]
    assert last["totals"] == {"player": 1_000} and last["bettors"] == 10
    money = await bob.call("balance")
    assert (money["balance"], money["available"]) == (1_000, 100)
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"], audit
    for client in [watcher, bob, *others.values()]:
        client.assert_clean()
