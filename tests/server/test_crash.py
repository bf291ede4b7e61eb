"""Crash tests: ``kill -9`` a real server mid-round, restart it on the same database.

GAME_RULES §8: whatever stops a round midway, it resumes from its last recorded step with
the same cards and the same held wagers. The croupier stores every step before its events
are sent, so what a client saw before the crash is always in the database, and nothing is
paid twice.

Each test runs ``python -m server.process.main`` as a subprocess (the test kit's launcher) with
one table, on a temporary SQLite file or (``[redis]``) on a Redis the test started (AOF
on; the server a one-process cluster with a short lease), plays with three
token-authenticated players over real websockets (the kit's client and driver; the table
of ``kit/crash.py``), SIGKILLs the server at a chosen point (betting open with chips
placed; a squeeze in progress; right after the final card's TOSS is sent), checks what
the dead server left in the store, restarts it on the same store (on a new port),
reconnects the same players, finishes the round and checks the cards, the records and the
money:

- the table row's ``seq`` is at least every event ``seq`` a client saw (stored before sent);
- the players resume with the events they missed (stored with each step: the restart's
  ``disconnected``, their ``reconnected``, and whatever the restarted table did), without
  a gap, not with a snapshot;
- the cards dealt after the restart are the ones the stored shoe and coup held, and the
  ones the turner had already seen squeezing;
- ``audit()`` sums to 0, every balance matches its ledger and every hold has exactly one
  outcome; players + house + held tables add up to what was funded; the held account is
  empty once rounds are settled; no ledger key is there twice;
- every bet of every recorded round has exactly one ``hold`` entry and exactly one of
  ``lose`` / ``return`` (plus one ``win`` when it won), with the amounts of the record.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from server.store import open_store
from tests.kit import Client, scaled
from tests.kit.crash import (
    BETS,
    CONFIG,
    FUNDS,
    PLAYERS,
    TABLE,
    CrashServer,
    Table,
    check_money,
    check_resume,
    connect_player,
    coup_cards,
    max_seq,
    next_coup,
    record_cards,
    table_state,
)

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest) -> str | None:
    """Where the server keeps everything: None (its SQLite file) or a Redis URL."""
    if request.param == "redis":
        return str(request.getfixturevalue("redis_url"))
    return None


@pytest.fixture
def server(tmp_path: Path, store: str | None) -> Iterable[CrashServer]:
    made = CrashServer(tmp_path, store)
    made.start()
    yield made
    made.kill()


def seen_by(table: Table) -> dict[str, int]:
    """The last seq each player saw (what each resumes from after a restart)."""
    return {name: max_seq(p) for name, p in table.players.items()}


async def caught_up(table: Table) -> dict[str, int]:
    """:func:`seen_by`, once every player has every event any of them saw (another
    player's command reaches each connection a moment apart)."""
    last = table.max_seq
    for p in table.players.values():
        await p.wait_seq(TABLE, last)
    return seen_by(table)


# ---------------------------------------------------------------------- the tests
async def test_kill_during_betting_keeps_the_chips_and_deals_the_stored_shoe(
    server: CrashServer,
) -> None:
    table = await Table.seat(server.url)
    await table.to_betting()
    await table.place_bets()
    for name in PLAYERS[:2]:  # two of three pressed DONE: betting still open
        await table[name].call("done", table=TABLE)
    since = await caught_up(table)
    seen = table.max_seq
    commitment = table.joined[PLAYERS[0]]["shoe"]["commitment"]
    server.kill()
    await table.close()

    state = await table_state(server.store_url)
    assert state["seq"] >= seen, "an event was sent before its step was stored"
    assert state["phase"] == "betting" and state["coup"] is None
    placed = {p["id"]: p["bets"] for p in state["players"]}
    assert placed == BETS
    expected = next_coup(state)

    server.start()
    table = await Table.rejoin(server.url, since)
    for name in PLAYERS:
        # What happened while they were away: the restart took everyone for gone, and
        # they came back (nothing else: betting waits for the last DONE).
        kinds = {e["kind"] for e in table.replayed[name]}
        assert kinds == {"disconnected", "reconnected"}, table.replayed[name]
        snap = table.snapshots[name]
        assert snap["phase"] == "betting" and snap["coup"] is None
        assert snap["shoe"]["commitment"] == commitment
        you = snap["you"]
        assert you["bets"] == BETS[name]
        assert you["balance"] == FUNDS
        assert you["available"] == FUNDS - sum(BETS[name].values())
        assert {s["player"]: s["bets"] for s in snap["seats"]} == BETS
        assert {s["player"]: s["done"] for s in snap["seats"]} == {
            "alice": True,
            "bob": True,
            "carol": False,
        }
    # The placed chips are the table's stakes in the ledger: the restart keeps them.
    for name in PLAYERS:
        wallet = await table[name].call("balance")
        assert wallet["balance"] == FUNDS
        assert wallet["available"] == FUNDS - sum(BETS[name].values())
    await table["carol"].call("done", table=TABLE)
    closed = await table.wait_for("betting_closed")
    assert closed["data"]["bets"] == BETS
    settled = await table.play_turns()
    assert settled is not None
    rid = closed["data"]["round_id"]
    history = await table["bob"].call("history", limit=5)
    (record,) = [r for r in history["rounds"] if r["round_id"] == rid]
    assert record_cards(record) == expected, "the restarted table dealt other cards"
    assert table.known == {
        (h, i + 1): c for h, cards in expected.items() for i, c in enumerate(cards)
    }
    await table.close()
    assert server.terminate() == 0
    money = await check_money(server.store_url)
    assert list(money["rounds"]) == [rid]


async def test_kill_during_a_squeeze_resumes_with_the_same_cards(server: CrashServer) -> None:
    table = await Table.seat(server.url)
    await table.to_betting()
    await table.place_bets()
    rid = await table.press_done()
    assert await table.play_turns(stop_at_squeeze=True) is None
    squeezed = dict(table.known)  # Bob saw the Player's two cards, face down to the rest
    assert set(squeezed) == {("player", 1), ("player", 2)}
    seen, since = table.max_seq, seen_by(table)
    server.kill()
    await table.close()

    state = await table_state(server.store_url)
    assert state["seq"] >= seen, "an event was sent before its step was stored"
    assert state["phase"] == "turn" and state["coup"]["round_id"] == rid
    assert state["coup"]["style"] == "peek" and state["coup"]["stage"] == "player"
    stored = coup_cards(state)
    assert stored["player"][:2] == [squeezed[("player", 1)], squeezed[("player", 2)]]
    held = {pid: bets for pid, bets in state["coup"]["held"].items()}
    assert held == BETS

    server.start()
    table = await Table.rejoin(server.url, since)
    for name in PLAYERS:
        coup = table.snapshots[name]["coup"]
        assert coup is not None and coup["round_id"] == rid and coup["stage"] == "player"
        assert coup["bets"] == BETS
        faces = [slot["card"] for slot in coup["player"]]
        if name == "bob":  # still squeezing: he alone still sees the two cards
            assert faces == stored["player"][:2]
        else:
            assert faces == [None, None]
        assert [slot["card"] for slot in coup["banker"]] == [None, None]
        assert table.snapshots[name]["you"]["balance"] == FUNDS - sum(BETS[name].values())
    # Bob turns the squeezed cards one at a time: the same cards come up.
    bob = table["bob"]
    for index in (1, 2):
        await bob.call("turn", table=TABLE, hand="player", card=index)
    table._note_cards(bob.events(TABLE))
    settled = await table.play_turns()
    assert settled is not None and settled["data"]["round_id"] == rid
    full = {h: table._hand(h) for h in ("player", "banker")}
    assert full["player"][:2] == stored["player"][:2]
    assert full["banker"][:2] == stored["banker"][:2]
    history = await table["alice"].call("history", limit=5)
    (record,) = [r for r in history["rounds"] if r["round_id"] == rid]
    assert record_cards(record) == full
    await table.close()
    assert server.terminate() == 0
    money = await check_money(server.store_url)
    assert list(money["rounds"]) == [rid]


# Seconds between sending the last TOSS and the kill: blocking (nothing read meanwhile),
# then a negative one: wait for the settlement's events to reach the players first.
DELAYS = (0.0, 0.0, 0.0002, 0.0005, 0.001, 0.002, 0.004, -0.05)
# On Redis every restart waits for the dead process's lease to run out: fewer kills.
REDIS_DELAYS = (0.0, 0.0005, 0.002, -0.05)


async def test_kill_at_settlement_is_all_or_nothing(server: CrashServer, store: str | None) -> None:
    """Kill right after the coup's last TOSS is sent, at several delays: either the
    settlement was stored (and maybe sent) or not (and not sent); never half, never twice."""
    outcomes: list[str] = []
    table = await Table.seat(server.url)
    rounds: list[tuple[str, dict[str, list[str]]]] = []
    for delay in DELAYS if store is None else REDIS_DELAYS:
        await table.to_betting()
        await table.place_bets()
        rid = await table.press_done()

        async def kill_after_toss(
            turner: Client, hand: str, delay: float = delay, table: Table = table
        ) -> None:
            await turner.send_command("toss", table=TABLE, hand=hand)
            if delay > 0:
                time.sleep(delay)  # not asyncio: nothing more is read before the kill
            elif delay < 0:
                # With the house holding, a Player third card may still follow: toss it.
                while (event := await table.next_event())["kind"] != "settled":
                    if event["kind"] == "turn":
                        turn = event["data"]
                        await table[turn["turner"]].call("toss", table=TABLE, hand=turn["hand"])
                await asyncio.sleep(-delay)
            server.kill()

        assert await table.play_turns(on_final=kill_after_toss) is None
        seen_settled = any(
            e["data"].get("round_id") == rid
            for p in table.players.values()
            for e in p.events(TABLE, "settled")
        )
        seen = table.max_seq
        since = seen_by(table)
        known, turners = dict(table.known), dict(table.turners)
        await table.close()

        state = await table_state(server.store_url)
        assert state["seq"] >= seen, "an event was sent before its step was stored"
        store = await open_store(server.store_url)
        record = await store.round_record(rid)
        await store.close()
        if state["coup"] is not None:
            assert not seen_settled, "settled was sent but not stored"
            assert record is None
            assert state["coup"]["round_id"] == rid
            stored = coup_cards(state)
            outcomes.append("before")
        else:
            assert record is not None, "the coup is gone but its round was not recorded"
            stored = record_cards(record)
            outcomes.append("after+sent" if seen_settled else "after")
        for (hand, index), card in known.items():
            assert stored[hand][index - 1] == card, (hand, index, stored)

        server.start()
        table = await Table.rejoin(server.url, since)
        snap = table.snapshots[PLAYERS[0]]
        if state["coup"] is not None:
            assert snap["coup"] is not None and snap["coup"]["round_id"] == rid
            settled = await table.resume_coup(snap)
            assert settled["data"]["round_id"] == rid
            history = await table["bob"].call("history", limit=5)
            (record,) = [r for r in history["rounds"] if r["round_id"] == rid]
        else:
            assert snap["coup"] is None and snap["last_result"]["round_id"] == rid
        final = record_cards(record)
        # The restarted table went on with the same cards (with the house holding, the
        # croupier may have dealt a third card after the last card a player turned).
        assert {h: final[h][: len(cards)] for h, cards in stored.items()} == stored
        if turners.get("banker", "?") is not None:
            assert final == stored
        await check_resume(server.url, "carol", since["carol"])  # a second tab, too
        rounds.append((rid, final))
    await table.close()
    assert server.terminate() == 0
    money = await check_money(server.store_url)
    assert sorted(money["rounds"]) == sorted(rid for rid, _ in rounds)
    for rid, cards in rounds:
        assert record_cards(money["rounds"][rid]) == cards
    for name in PLAYERS:
        net = sum(
            b["returned"] - b["stake"]
            for record in money["rounds"].values()
            for b in record["bets"]
            if b["player"] == name
        )
        assert money["balances"][f"player:{name}"] == FUNDS + net
    print("settlement kill outcomes:", outcomes)


TIMED_CONFIG = CONFIG.replace("squeeze = 60, third_card = 60", "squeeze = 3, third_card = 1")


async def test_timers_that_ran_out_while_down_are_done_on_the_turners_behalf(
    tmp_path: Path,
) -> None:
    """Killed mid-squeeze and restarted after the squeeze timer expired: the croupier turns
    the cards the turner was squeezing (the same ones) on their behalf, then the rest."""
    server = CrashServer(tmp_path, config=TIMED_CONFIG)
    server.start()
    try:
        table = await Table.seat(server.url)
        await table.to_betting()
        await table.place_bets()
        rid = await table.press_done()
        await table.play_turns(stop_at_squeeze=True)
        squeezed = dict(table.known)
        server.kill()
        await table.close()

        state = await table_state(server.store_url)
        assert state["coup"]["stage"] == "player" and state["coup"]["style"] == "peek"
        stored = coup_cards(state)
        deadline = state["coup"]["deadline"]
        await asyncio.sleep(max(0.0, deadline - time.time()) + scaled(0.2))

        server.start()
        table = await Table.rejoin(server.url)
        snap = table.snapshots["bob"]
        if snap["coup"] is not None:  # the restart's first tick turned the Player's cards
            assert [s["card"] for s in snap["coup"]["player"][:2]] == stored["player"][:2]
            assert all(s["up"] and s["by"] == "croupier" for s in snap["coup"]["player"][:2])
        # Nobody acts: every later step times out and is done on the turner's behalf.
        settled = await table.wait_for("settled")
        assert settled["data"]["round_id"] == rid
        history = await table["bob"].call("history", limit=5)
        (record,) = [r for r in history["rounds"] if r["round_id"] == rid]
        assert (
            record["player"][:2]
            == stored["player"][:2]
            == [squeezed[("player", 1)], squeezed[("player", 2)]]
        )
        assert record["banker"][:2] == stored["banker"][:2]
        steps = {(x["step"], x["player"]) for x in record["on_behalf"]}
        assert {("turn player card 1", "bob"), ("turn player card 2", "bob")} <= steps
        for slot in record["turned_by"]["player"][:2]:
            assert slot == {"card": slot["card"], "by": "croupier", "on_behalf": "bob"}
        await table.close()
        assert server.terminate() == 0
        money = await check_money(server.store_url)
        assert list(money["rounds"]) == [rid]
    finally:
        server.kill()


async def test_spectators_coming_back_on_several_tabs_at_once_join_on_all(
    tmp_path: Path,
) -> None:
    """Spectators watching when the server died are removed at the restart (their seats
    are not held); each comes back on several tabs at once, and every tab is let in.

    Regression: the server used to choose Join or Reconnect outside the table's actor, so
    all but one of a player's simultaneous first joins were refused with already_joined.
    """
    server = CrashServer(tmp_path)
    server.start()
    try:
        names = ("erin", "frank", "gina", "hugo", "iris", "jack")
        watchers = [await connect_player(server.url, name) for name in names]
        for watcher in watchers:
            await watcher.call("join", table=TABLE)
        server.kill()
        for watcher in watchers:
            await watcher.close()

        server.start()
        tabs = [await connect_player(server.url, name) for name in names for _ in range(5)]
        replies = await asyncio.gather(*(tab.rpc("join", table=TABLE) for tab in tabs))
        for tab in tabs:
            await tab.close()
        refused = [r for r in replies if r["type"] != "ok"]
        assert refused == []
    finally:
        server.kill()
