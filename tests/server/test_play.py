"""Whole shoes played over real sockets by JSON and msgpack clients at one table.

Four players (two JSON, two msgpack) and a msgpack spectator play a whole 8-deck shoe
(stop card 100 from the end, the most a table allows) and the start of the next one:
offers, declines, cuts, bets on every area, squeezes card by card and tosses, third
cards, the shoe passing after each Player win. Every coup is checked against an
independent oracle of the rules (draws, payouts, commission), every balance against
the settled payouts, the history against what the clients saw, the revealed shoe
against its commitment (``server.engine.shoe.verify``), and the ledger afterwards:
it sums to zero, matches every balance, and the money is all there.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from server.engine.shoe import commitment, verify
from tests.kit import Client, CoupLog, Game, scaled, table_def
from tests.kit.checks import check_coup, check_public_views_agree, next_seat_after, random_bets

FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}  # the driver sends as fast as it can


@pytest.mark.slow
@pytest.mark.parametrize("decks", [8, 6])
async def test_whole_shoe_four_players_both_formats(net: Any, decks: int) -> None:
    # Enough money that no run of losses (up to 24,500 a coup for ~70 coups) empties a
    # balance: the bets are drawn before the coup, whatever the shoe deals.
    server = await net.start(
        **FAST, guest_balance=2_000_000, tables=(table_def("t1", decks=decks, stop_offset=100),)
    )
    clients: dict[str, Client] = {}
    seats: dict[str, int] = {}
    spectator = await net.guest(server, "msgpack", name="Watcher")
    await spectator.join("t1")
    for n, fmt in enumerate(["json", "msgpack", "json", "msgpack"], start=1):
        client = await net.player(server, f"p{n}", fmt, name=f"Player {n}")
        await client.join("t1")
        await client.call("sit", table="t1", seat=2 * n)  # seats 2 4 6 8: gaps on purpose
        clients[client.player] = client
        seats[client.player] = 2 * n
    funded = 4 * server.config.guest_balance  # the watching guest is never written (issue 9)
    balances = {pid: c.hello_reply["balance"] for pid, c in clients.items()}
    assert set(balances.values()) == {server.config.guest_balance}

    rng = random.Random(20240501)
    game = Game("t1", clients, spectator, rng=rng, accept=lambda pid: pid != "p3", progress=True)
    shoe_logs: list[CoupLog] = []
    while not spectator.events("t1", "shoe_ended"):
        log = await game.play_coup(random_bets(rng, list(clients)))
        check_coup(log, balances)
        shoe_logs.append(log)
        # §5: the shoe stays on Banker/Tie and passes to the next seat on a Player win.
        after = [e for e in spectator.events("t1") if e["seq"] > log.last_seq]
        passed = [e for e in after if e["kind"] == "shoe_passed"]
        if log.result["outcome"] == "player" and log.holder is not None:
            assert passed and passed[0]["data"] == {"player": log.holder, "reason": "player_won"}
            if not spectator.events("t1", "shoe_ended"):
                offered = [e for e in after if e["kind"] == "shoe_offered"]
                assert offered[0]["data"]["player"] == next_seat_after(seats, log.holder)
        else:
            assert not passed
            if not spectator.events("t1", "shoe_ended"):
                assert game.holder() == log.holder
    # A coup takes 4-6 cards; the burn at most 11: 416 (312) cards less 100 behind the stop
    # card make at least 50 (33) coups, about 65 (43) on average.
    assert len(shoe_logs) >= (decks * 52 - 100 - 11) // 6
    assert any(log.result["outcome"] == "player" and log.holder for log in shoe_logs)
    assert any(len(log.player_cards) == 3 for log in shoe_logs)
    assert any(len(log.banker_cards) == 3 for log in shoe_logs)
    assert any(log.squeezed for log in shoe_logs)
    declined = spectator.events("t1", "shoe_declined")
    assert declined and all(
        e["data"]["player"] == "p3" and not e["data"]["timeout"] for e in declined
    )
    assert all(e["data"]["player"] != "p3" for e in spectator.events("t1", "shoe_accepted"))

    # The revealed shoe: the seed matches the commitment published before the cut,
    # and recomputes every card the clients saw, in order (§4).
    ended = spectator.events("t1", "shoe_ended")[0]["data"]
    committed = spectator.snapshots["t1"]["shoe"]["commitment"]
    record = (await clients["p2"].call("shoe_record", table="t1"))["record"]
    assert record["shoe_no"] == 1 and record["complete"] is True
    assert record["commitment"] == committed == commitment(bytes.fromhex(record["seed"]))
    assert record["seed"] == ended["seed"] and record["coups"] == ended["coups"]
    assert record["cut"] == game.cuts[0]
    assert record["stop_offset"] == 100 and record["decks"] == decks
    assert record["coups"] == [
        {"player": log.player_cards, "banker": log.banker_cards} for log in shoe_logs
    ]
    report = verify(record)
    assert report.ok, str(report)
    assert report.coups_checked == len(shoe_logs)
    assert (await spectator.call("shoe_record", table="t1", shoe=1))["record"] == record

    # The next shoe: a new commitment, a new cut, and play goes on.
    started = spectator.events("t1", "shoe_started")
    assert started[-1]["data"]["shoe_no"] == 2
    assert started[-1]["data"]["commitment"] != committed
    for _ in range(3):
        check_coup(await game.play_coup(random_bets(rng, list(clients))), balances)
    assert len(game.cuts) == 2
    await spectator.refused("no_record", "shoe_record", table="t1", shoe=2)

    # Balances: what the balance command says is what the payouts made.
    for pid, client in clients.items():
        reply = await client.call("balance")
        assert (reply["balance"], reply["available"]) == (balances[pid], balances[pid])

    # History: each player's last rounds, as they were played.
    logs = {log.round_id: log for log in game.log}
    for pid, client in clients.items():
        rounds = (await client.call("history", limit=100))["rounds"]
        mine = [log for log in game.log if pid in log.bets]
        assert [r["round_id"] for r in rounds] == [log.round_id for log in reversed(mine)][:100]
        running = server.config.guest_balance
        for record in reversed(rounds):
            log = logs[record["round_id"]]
            assert record["player"] == log.player_cards and record["banker"] == log.banker_cards
            assert record["outcome"] == log.result["outcome"]
            own = [p for p in log.payouts if p["player"] == pid]  # only their own money (§8)
            assert record["bets"] == sorted(own, key=lambda p: p["area"])
            assert record["commission"] == sum(p["commission"] for p in own)
            assert record["turners"] == log.turners and record["holder"] == log.holder
            assert "balances" not in record and "players" not in record
            net = sum(p["returned"] - p["stake"] for p in own)
            assert record["balance"] == {"before": running, "after": running + net}
            running += net
        assert running == balances[pid]

    # The ledger: double entry sums to zero, every balance is its ledger sum, and all
    # the money funded is with the players, the house, or held.
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"] is True
    books = await server.store.balances(["house", "held:t1", "cashier"])
    house, held = books["house"], books["held:t1"]
    assert held == 0
    players_total = sum(balances.values())
    assert players_total + house + held == funded == -books["cashier"]
    # A guest who only watched has the play money they would get, and no row at all.
    assert await spectator.balance() == server.config.guest_balance
    assert await server.store.player_name(spectator.player) is None
    # The table's own books (its wallet: this table's house result) agree with the store.
    assert server.actors["t1"].wallet.balance("house") == house
    assert audit["holds_ok"] is True, audit["problems"]  # every hold had exactly one outcome
    assert house == -sum(p["returned"] - p["stake"] for log in game.log for p in log.payouts)
    stored = await server.store.balances([f"player:{pid}" for pid in clients])
    assert stored == {f"player:{pid}": balances[pid] for pid in clients}

    check_public_views_agree(spectator, list(clients.values()), "t1")
    for client in [spectator, *clients.values()]:
        client.assert_clean()


async def test_betting_commands_and_limits(net: Any) -> None:
    server = await net.start(**FAST, guest_balance=5_000)
    ann = await net.player(server, "ann", "json")
    bob = await net.player(server, "bob", "msgpack")
    for client in (ann, bob):
        await client.join("t1")
        await client.call("sit", table="t1")
    game = Game("t1", {"ann": ann, "bob": bob}, ann)
    await game.to_betting()

    await ann.call("bet", table="t1", area="player", amount=1_000)
    await ann.call("bet", table="t1", area="player", amount=500)  # adds up
    await ann.call("bet", table="t1", area="tie", amount=200)
    assert (await ann.call("balance"))["available"] == 5_000 - 1_700
    await ann.call("remove_bet", table="t1", area="player", amount=300)  # regret
    await ann.refused("below_min", "remove_bet", table="t1", area="player", amount=1_150)
    await ann.refused("bad_amount", "remove_bet", table="t1", area="player", amount=5_000)
    await ann.refused("no_bet", "remove_bet", table="t1", area="banker")
    await ann.call("remove_bet", table="t1", area="tie")  # all of it
    await ann.refused("below_min", "bet", table="t1", area="banker", amount=99)
    await ann.refused("over_max", "bet", table="t1", area="tie", amount=1_550)
    await ann.refused("over_max", "bet", table="t1", area="player", amount=10_000)  # 1,200 + 10,000
    await ann.refused("insufficient_funds", "bet", table="t1", area="banker", amount=4_000)
    await ann.refused("bad_area", "bet", table="t1", area="super6", amount=100)  # commission table
    await ann.refused("bad_area", "bet", table="t1", area="dragon", amount=100)
    bets = ann.events("t1", "bets")
    assert bets[-1]["data"]["bets"] == {"player": 1_200} and bets[-1]["data"]["available"] == 3_800
    assert "available" not in bob.events("t1", "bets")[-1]["data"]  # ann's, not bob's
    await bob.call("bet", table="t1", area="banker", amount=2_000)
    await bob.call("clear_bets", table="t1")
    await bob.refused("no_bet", "clear_bets", table="t1")
    await bob.refused("no_previous_bets", "same_bet", table="t1")
    await bob.call("bet", table="t1", area="banker", amount=2_000)
    log = await game.play_coup({})  # the bets placed above stand
    assert log.bets == {"ann": {"player": 1_200}, "bob": {"banker": 2_000}}
    balances = {"ann": 5_000, "bob": 5_000}
    check_coup(log, balances)

    # SAME BET repeats the last round's bets, checked against today's balance.
    await game.to_betting()
    await ann.call("same_bet", table="t1")
    await bob.call("same_bet", table="t1")
    mine = [e["data"] for e in ann.events("t1", "bets") if e["data"]["player"] == "ann"]
    assert mine[-1]["bets"] == {"player": 1_200} and mine[-1]["change"] == "same"
    log = await game.play_coup({})
    assert log.bets == {"ann": {"player": 1_200}, "bob": {"banker": 2_000}}
    check_coup(log, balances)
    for pid, client in (("ann", ann), ("bob", bob)):
        assert await client.balance() == balances[pid]
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]


async def test_pass_shoe_and_house_holds(net: Any) -> None:
    server = await net.start(**FAST)
    ann = await net.player(server, "ann", "msgpack")
    bob = await net.player(server, "bob", "json")
    for seat, client in ((3, ann), (5, bob)):
        await client.join("t1")
        await client.call("sit", table="t1", seat=seat)
    players = {"ann": ann, "bob": bob}
    game = Game("t1", players, bob, rng=random.Random(7))
    await game.to_betting()
    assert game.holder() == "ann"  # the first shoe starts with the lowest occupied seat
    await ann.refused("too_early", "pass_shoe", table="t1")  # not before one coup
    await bob.refused("not_holder", "pass_shoe", table="t1")
    # Deal until ann has dealt a coup and kept the shoe (Banker or Tie); then she passes it.
    for _ in range(40):
        log = await game.play_coup({"ann": {"banker": 100}, "bob": {"banker": 100}})
        await game.to_betting()
        if log.holder == "ann" and game.holder() == "ann":
            break
    else:
        pytest.fail("ann never kept the shoe")
    reply = await game.act("ann", "pass_shoe")
    passed = [e for e in bob.events("t1") if e["seq"] <= reply["seq"]]
    assert passed[-2]["kind"] == "shoe_passed" and passed[-2]["data"] == {
        "player": "ann",
        "reason": "passed",
    }
    assert passed[-1]["kind"] == "shoe_offered" and passed[-1]["data"]["player"] == "bob"

    # Bob declines and the shoe is never offered back to ann, who passed it: the house
    # holds the shoe and the croupier turns Banker (§5, §6).
    reply = await game.act("bob", "decline_shoe")
    await ann.refused("wrong_phase", "accept_shoe", table="t1")
    assert [e["kind"] for e in bob.events("t1") if e["seq"] <= reply["seq"]][-3:-1] == [
        "shoe_declined",
        "shoe_held_by_house",
    ]
    game.accept = lambda pid: True
    while True:
        log = await game.play_coup({"bob": {"player": 200}})
        assert log.holder is None and log.turners == {"player": "bob", "banker": None}
        assert all(
            e["data"]["by"] == "croupier"
            for e in bob.events("t1", "card")
            if log.first_seq < e["seq"] < log.last_seq and e["data"]["hand"] == "banker"
        )
        if log.result["outcome"] == "player":
            break
    # After the next Player win the shoe is offered again.
    offered = [e for e in bob.events("t1", "shoe_offered") if e["seq"] > log.last_seq]
    assert offered and offered[0]["data"]["player"] in ("ann", "bob")
    await game.to_betting()
    assert game.holder() in ("ann", "bob")


async def test_croupier_turns_for_a_turner_who_times_out(net: Any) -> None:
    server = await net.start(
        **FAST, tables=(table_def("t1", timers={"squeeze": 0.3, "third_card": 0.3}),)
    )
    ann = await net.player(server, "ann", "json")
    bob = await net.player(server, "bob", "msgpack")
    for client in (ann, bob):
        await client.join("t1")
        await client.call("sit", table="t1")
    game = Game("t1", {"ann": ann, "bob": bob}, bob)
    await game.to_betting()
    await ann.call("bet", table="t1", area="banker", amount=300)
    await bob.call("bet", table="t1", area="player", amount=500)
    await ann.call("done", table="t1")
    reply = await bob.call("done", table="t1")
    assert bob.events("t1", "dealt")[-1]["data"]["turners"] == {"player": "bob", "banker": "ann"}
    await bob.call("squeeze", table="t1", hand="player", style="side")
    # Nobody turns: after each timer the croupier turns on the turner's behalf.
    settled = await bob.wait_event("settled", table="t1", after=reply["seq"], timeout=scaled(10))
    cards = [e["data"] for e in bob.events("t1", "card") if e["seq"] > reply["seq"]]
    assert cards and all(c["by"] == "croupier" for c in cards)
    assert {c["on_behalf"] for c in cards if c["hand"] == "player"} == {"bob"}
    assert {c["on_behalf"] for c in cards if c["hand"] == "banker"} == {"ann"}
    record = (await bob.call("history", limit=1))["rounds"][0]
    assert record["round_id"] == settled["data"]["round_id"]
    steps = {(s["step"], s["player"]) for s in record["on_behalf"]}
    assert ("turn player card 1", "bob") in steps and ("turn banker card 2", "ann") in steps
    assert len(record["on_behalf"]) == len(cards)
    assert all(t["on_behalf"] for h in ("player", "banker") for t in record["turned_by"][h])
