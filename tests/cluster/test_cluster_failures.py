"""A table survives the loss of its process (issue 11, "Tests"): real ``chemmy-server``
processes over a real ``redis-server`` (AOF on), real players over real sockets.

- ``kill -9`` the table's owner in betting, in a squeeze and at settlement: another
  process takes the table within the lease time and a placement round; the round goes
  on with the same cards (the stored shoe's next cards, the cards the turner had seen
  squeezing); players on the other processes keep their connections and see every event
  once, in order; the player whose process died comes back through another one and
  resumes from her last ``seq``; the books balance and no ledger entry is doubled.

The players are the crash tests' (``kit/crash.py``: alice holds the shoe and turns the
Banker hand, bob has the highest Player bet and turns the Player hand, carol bets too)
at one table with long timers, so nothing happens on anyone's behalf unless a test
says so. Each process is a gateway for its own clients: alice and the spectator sam
are on one process, bob on a second, carol on the table's owner.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from tests.kit import Client, CoupLog, Game, ServerProcess, open_player, scaled, table_def
from tests.kit.checks import check_coup, check_public_views_agree, random_bets
from tests.kit.cluster import (
    FAILOVER,
    LEASE,
    TRANSIENT,
    Cluster,
    check_books,
    come_back,
    metric,
    retry,
    settle,
    stored_row,
)
from tests.kit.crash import BETS, PLAYERS, STEP, TABLE, Table, coup_cards, next_coup, record_cards
from tests.kit.redis import RedisServer

pytestmark = pytest.mark.slow  # a server subprocess, a browser or a terminal: seconds each

LONG = {"betting": 60, "squeeze": 60, "third_card": 60, "shoe_offer": 60, "cut": 60, "grace": 120}


def crash_table() -> dict[str, Any]:
    return table_def(TABLE, name="Crash", timers=LONG)


class Seated:
    """The crash table's players spread over a cluster's processes (see the module
    docstring), and the process each is on."""

    def __init__(self, cluster: Cluster, table: Table, sam: Client, where: dict[str, Any]):
        self.cluster = cluster
        self.table = table
        self.sam = sam
        self.where = where  # client label -> its process

    @classmethod
    async def spread(cls, cluster: Cluster) -> Seated:
        await cluster.ready()
        owner = cluster.owner(TABLE)
        assert owner is not None
        first, second = cluster.others(owner)
        where = {"alice": first, "bob": second, "carol": owner, "sam": first}
        fmts = {"alice": "json", "bob": "msgpack", "carol": "json", "sam": "msgpack"}
        clients: dict[str, Client] = {}
        for name in (*PLAYERS, "sam"):
            client = await open_player(where[name].url, name, fmts[name], timeout=STEP)
            await client.join(TABLE)
            clients[name] = client
        for name in PLAYERS:
            await clients[name].call("sit", table=TABLE)
        sam = clients.pop("sam")
        table = Table(clients, {})
        for name in PLAYERS:
            await sam.wait_event("sat", lambda e, n=name: e["data"]["player"] == n, table=TABLE)
        return cls(cluster, table, sam, where)

    @property
    def clients(self) -> list[Client]:
        return [self.sam, *self.table.players.values()]

    async def fail_over(
        self,
        kill: Callable[[ServerProcess], Awaitable[None]],
        owner: ServerProcess | None = None,
    ) -> tuple[ServerProcess, float]:
        """Take the owner (the table's, or ``owner``) away (``await kill(owner)``),
        bring the clients that were on it back through another process; the new owner
        and how long the takeover took."""
        owner = owner or self.cluster.owner(TABLE)
        assert owner is not None
        old = self.cluster.node_name(owner)
        began = time.monotonic()
        await kill(owner)
        new = await self.cluster.new_owner(TABLE, old)
        took = time.monotonic() - began
        for client in self.clients:
            if self.where[client.label] is owner:
                elsewhere = self.cluster.others(owner)[0]
                reply = await come_back(client, elsewhere.url, TABLE)
                assert reply["resumed"] is True, reply  # the events missed, not a snapshot
                self.where[client.label] = elsewhere
        return new, took

    async def close(self) -> None:
        for client in self.clients:
            await client.close()

    def check_streams(self) -> None:
        """Every client saw every event once, in order (the recording client checks
        each seq), and the same events as the spectator, but for its private parts."""
        for client in self.clients:
            client.assert_clean()
        check_public_views_agree(self.sam, list(self.table.players.values()), TABLE)


async def kill_9(owner: ServerProcess) -> None:
    owner.kill()


async def finished_round(seated: Seated, rid: str) -> dict[str, Any]:
    """The round's record, as a player recalls it."""
    history = await seated.table["bob"].call("history", limit=5)
    (record,) = [r for r in history["rounds"] if r["round_id"] == rid]
    return dict(record)


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
@pytest.mark.parametrize("when", ["betting", "squeeze", "settlement"])
async def test_kill_the_owner_and_the_round_goes_on_elsewhere(
    make_cluster: Callable[..., Cluster], when: str
) -> None:
    cluster = make_cluster(3, [crash_table()], command_timeout=scaled(3))
    seated = await Seated.spread(cluster)
    table = seated.table
    try:
        await table.to_betting()
        await table.place_bets()
        owner = cluster.owner(TABLE)
        assert owner is not None
        outcome = when
        if when == "betting":
            for name in PLAYERS[:2]:  # two of three pressed DONE: betting still open
                await table[name].call("done", table=TABLE)
            state = (await stored_row(cluster.url, TABLE)).state
            assert state is not None and state["phase"] == "betting"
            expected = next_coup(state)  # what the stored shoe deals next
            new, took = await seated.fail_over(kill_9)
            for name in PLAYERS:  # the chips are where they were
                you = (await table[name].call("join", table=TABLE))["snapshot"]["you"]
                assert you["bets"] == BETS[name], (name, you)
            await retry(table["carol"], "done", msg_id="carol-done", table=TABLE)
            rid = str((await table.wait_for("betting_closed"))["data"]["round_id"])
            settled = await table.play_turns()
            assert settled is not None
        elif when == "squeeze":
            rid = await table.press_done()
            assert await table.play_turns(stop_at_squeeze=True) is None
            squeezed = dict(table.known)  # bob saw the Player's two cards, face down to all
            assert set(squeezed) == {("player", 1), ("player", 2)}
            stored = coup_cards((await stored_row(cluster.url, TABLE)).state or {})
            assert stored["player"][:2] == [squeezed[("player", 1)], squeezed[("player", 2)]]
            new, took = await seated.fail_over(kill_9)
            bob = table["bob"]
            for index in (1, 2):  # bob turns the cards he squeezed: the same come up
                await retry(
                    bob, "turn", msg_id=f"bob-turn-{index}", table=TABLE, hand="player", card=index
                )
            settled = await table.play_turns()
            assert settled is not None and settled["data"]["round_id"] == rid
            expected = {h: table._hand(h) for h in ("player", "banker")}
            assert expected["player"][:2] == stored["player"][:2]
            assert expected["banker"][:2] == stored["banker"][:2]
        else:
            rid = await table.press_done()
            turner, last_hand = await table.to_last_toss()
            known = dict(table.known)  # what the turners saw squeezing

            async def kill_after_last_toss(owner: ServerProcess) -> None:
                await turner.send_command("toss", msg_id="last-toss", table=TABLE, hand=last_hand)
                time.sleep(0.002)  # not asyncio: nothing more is read before the kill
                owner.kill()

            new, took = await seated.fail_over(kill_after_last_toss)
            seen_settled = bool(seated.sam.events(TABLE, "settled"))
            # The toss, sent again with its id, is applied once: now, or it already was.
            again = await retry(turner, "toss", msg_id="last-toss", table=TABLE, hand=last_hand)
            stage = "before" if again["duplicate"] else "after"
            outcome = f"settlement (the toss applied {stage} the kill)"
            await seated.sam.wait_event("settled", table=TABLE)
            table._note_cards(table.obs.events(TABLE))
            expected = {h: table._hand(h) for h in ("player", "banker")}
            for (hand, index), card in known.items():
                assert expected[hand][index - 1] == card
            if seen_settled:
                assert again["duplicate"], again
        assert took <= scaled(FAILOVER), took  # the lease time, and a placement round
        assert new is not owner
        record = await finished_round(seated, rid)
        assert record_cards(record) == expected, "the new owner dealt other cards"
        for client in seated.clients:  # everyone, on whichever process, saw it settle
            await client.wait_event("settled", lambda e: e["data"]["round_id"] == rid, table=TABLE)
        seated.check_streams()
        print(f"kill in {outcome}: taken over in {took:.2f} s")
    finally:
        await seated.close()
    money = await check_books(cluster.url, tables=[TABLE])
    assert rid in money["rounds"]


async def test_a_paused_owner_is_fenced_and_writes_nothing_more(
    make_cluster: Callable[..., Cluster],
) -> None:
    """``SIGSTOP`` the owner past its lease: another process takes the table (a new
    epoch). ``SIGCONT``: the old owner finds its lease lost, or its first write refused
    (the store's epoch is newer), and stops its actor without writing anything; it goes
    on serving its clients as a gateway. carol, on the paused process, sent a bet
    while it was paused: it is refused for now or relayed to the new owner, never
    written by the old one, and sent again with its id it counts once."""
    cluster = make_cluster(3, [crash_table()], command_timeout=scaled(3))
    seated = await Seated.spread(cluster)
    table = seated.table
    carol = table["carol"]
    try:
        await table.to_betting()
        await table.place_bets()
        owner = cluster.owner(TABLE)
        assert owner is not None and seated.where["carol"] is owner
        old = cluster.node_name(owner)
        epoch = (await stored_row(cluster.url, TABLE)).epoch
        owner.send_signal(signal.SIGSTOP)
        try:
            new = await cluster.new_owner(TABLE, old)
            assert (await stored_row(cluster.url, TABLE)).epoch == epoch + 1
            # Sent to the paused process: read when it wakes up.
            late, start = await carol.send_command(
                "bet", msg_id="carol-late", table=TABLE, area="banker", amount=300
            )
        finally:
            owner.send_signal(signal.SIGCONT)
        reply = await carol.wait_frame(
            lambda m: m.get("type") in ("ok", "error") and m.get("id") == late, start=start
        )
        if reply["type"] == "error":
            assert reply["code"] in ("unavailable", "timeout"), reply
        again = await retry(carol, "bet", msg_id=late, table=TABLE, area="banker", amount=300)
        print("paused owner: the late bet was", reply.get("code", "relayed"))
        assert again["duplicate"] is (reply["type"] == "ok"), (reply, again)
        # The old owner stopped its actor: it runs no table, and said why. Its croupier
        # says "no longer owned here (why)" whichever way it found out: the lease lost at
        # its renewal, its first write refused as stale, or Redis unreachable for longer
        # than a lease just after the pause (the renewal's connection gave up meanwhile).
        said = ("lease lost", "is stale", "no longer owned here")
        try:
            await settle(lambda: any(why in owner.log_text(400) for why in said))
        except TimeoutError:
            raise AssertionError(
                f"the old owner never said it stopped:\n{owner.log_text(60)}"
            ) from None
        assert await metric(owner, "chemmy_tables") == 0
        assert cluster.owner(TABLE) is new
        assert (await stored_row(cluster.url, TABLE)).epoch == epoch + 1
        # Play goes on, carol still through the old process.
        for name in PLAYERS:
            await retry(table[name], "done", msg_id=f"{name}-done", table=TABLE)
        closed = await table.wait_for("betting_closed")
        rid = str(closed["data"]["round_id"])
        assert closed["data"]["bets"] == {**BETS, "carol": {**BETS["carol"], "banker": 300}}
        settled = await table.play_turns()
        assert settled is not None and settled["data"]["round_id"] == rid
        for client in seated.clients:
            await client.wait_event("settled", lambda e: e["data"]["round_id"] == rid, table=TABLE)
        assert seated.where["carol"] is owner and carol.conn_no == 0  # never reconnected
        seated.check_streams()
        assert cluster.owner(TABLE) is new  # one owner throughout
    finally:
        await seated.close()
    await check_books(cluster.url, tables=[TABLE])


class Patient(Game):
    """The kit's table driver, sending each command again with its id while the answer
    is a transient refusal (the store or the bus away for a moment)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent = itertools.count(1)

    async def act(self, pid: str, kind: str, **fields: Any) -> dict[str, Any]:
        mid = f"{pid}-{kind}-{next(self.sent)}"
        reply = await retry(self.players[pid], kind, msg_id=mid, table=self.table, **fields)
        await self.watcher.wait_seq(self.table, reply["seq"])
        return reply


async def test_redis_restarts_and_dropped_subscriptions_lose_no_event(
    make_cluster: Callable[..., Cluster], make_redis: Callable[..., RedisServer]
) -> None:
    """Players on three processes play coups while Redis drops every subscription
    (``CLIENT KILL TYPE pubsub``) in one squeeze and restarts (AOF on) in another: every
    client sees every event once, in order; every coup is paid as the rules say; the
    books balance."""
    redis = make_redis()
    cluster = make_cluster(
        3, [table_def("t1", timers=LONG)], redis=redis, command_timeout=scaled(3), log_level="debug"
    )
    await cluster.ready()
    clients: dict[str, Client] = {}
    for n, node in enumerate(cluster.nodes):
        clients[f"p{n + 1}"] = await open_player(
            node.url, f"p{n + 1}", "msgpack" if n % 2 else "json"
        )
    watcher = await open_player(cluster.nodes[2].url, "w", "msgpack")
    try:
        for client in [*clients.values(), watcher]:
            await client.join("t1")
        for client in clients.values():
            await retry(client, "sit", msg_id="sit", table="t1")
        balances = {pid: c.hello_reply["balance"] for pid, c in clients.items()}  # type: ignore[index]
        rng = random.Random(20261201)
        game = Patient("t1", clients, watcher, rng=rng, style=lambda pid, hand, third: "peek")
        troubles: list[Callable[[], Awaitable[None]]] = []

        async def drop_subscriptions() -> None:
            assert cluster.redis.execute_command("CLIENT", "KILL", "TYPE", "pubsub") >= 3

        async def restart_redis() -> None:
            await asyncio.to_thread(redis.restart)

        async def squeezed(turner: str, hand: str, cards: dict[str, str]) -> None:
            if troubles:
                await troubles.pop(0)()

        game.on_squeeze = squeezed
        for trouble in (drop_subscriptions, restart_redis, None):
            troubles[:] = [] if trouble is None else [trouble]
            log = await game.play_coup(random_bets(rng, list(clients)))
            check_coup(log, balances)
            assert not troubles, "the coup had no squeeze"
        for pid, client in clients.items():
            reply = await retry(client, "balance", msg_id="balance")
            assert reply["balance"] == balances[pid]
        check_public_views_agree(watcher, list(clients.values()), "t1")
        for client in [watcher, *clients.values()]:
            client.assert_clean()
    finally:
        for client in [watcher, *clients.values()]:
            await client.close()
    await check_books(cluster.url, tables=["t1"])
    for node in cluster.nodes:  # each drains and exits on SIGTERM
        await asyncio.to_thread(node.terminate, scaled(20))


async def test_commands_in_flight_when_the_owner_dies_fail_clearly_and_apply_once(
    make_cluster: Callable[..., Cluster],
) -> None:
    """The owner dies before answering. First paused, then killed: the bet relayed to
    it waits in its socket, and alice's gateway answers ``timeout``. Then killed while
    answering a burst of bob's bets: each is answered (ok, ``timeout`` or
    ``unavailable``). Sent again with their ids once another process owns the table,
    every bet is applied exactly once."""
    cluster = make_cluster(3, [crash_table()], command_timeout=scaled(2))
    seated = await Seated.spread(cluster)
    table = seated.table
    alice, bob = table["alice"], table["bob"]
    try:
        await table.to_betting()
        owner = cluster.owner(TABLE)
        assert owner is not None
        owner.send_signal(signal.SIGSTOP)
        reply = await alice.rpc("bet", msg_id="a-1", table=TABLE, area="banker", amount=400)
        assert (reply["type"], reply["code"]) == ("error", "timeout"), reply
        await seated.fail_over(kill_9, owner)  # killed while paused: it never read the bet
        again = await retry(alice, "bet", msg_id="a-1", table=TABLE, area="banker", amount=400)
        assert again["duplicate"] is False  # applied now, and only now

        owner = cluster.owner(TABLE)
        assert owner is not None
        burst = [f"b-{n}" for n in range(1, 7)]
        for mid in burst:  # the gateway sends them one after another (bob's line)
            await bob.send_command("bet", msg_id=mid, table=TABLE, area="player", amount=100)

        async def kill_after_first_reply(node: ServerProcess) -> None:
            await bob.wait_frame(lambda m: m.get("id") == burst[0] and m.get("type") == "ok")
            node.kill()

        lived_on = seated.where["bob"] is not owner
        await seated.fail_over(kill_after_first_reply)
        answers = {}
        for mid in burst:
            if lived_on:  # bob's connection survived: every bet sent was answered
                answer = await bob.wait_frame(
                    lambda m, mid=mid: m.get("id") == mid and m.get("type") in ("ok", "error")
                )
                answers[mid] = answer.get("code", "ok")
        assert set(answers.values()) <= {"ok", "timeout", "unavailable"}, answers
        for mid in burst:
            await retry(bob, "bet", msg_id=mid, table=TABLE, area="player", amount=100)
        for mid in [*burst, "a-1"]:  # and once more: each is already there
            client = alice if mid == "a-1" else bob
            area, amount = ("banker", 400) if mid == "a-1" else ("player", 100)
            dup = await retry(client, "bet", msg_id=mid, table=TABLE, area=area, amount=amount)
            assert dup["duplicate"] is True, (mid, dup)
        for name, bets in {"alice": {"banker": 400}, "bob": {"player": 600}}.items():
            you = (await table[name].call("join", table=TABLE))["snapshot"]["you"]
            assert you["bets"] == bets, (name, you)
        print("the burst's first answers:", answers)
        for name in PLAYERS:
            await retry(table[name], "done", msg_id=f"{name}-done", table=TABLE)
        closed = await table.wait_for("betting_closed")
        assert closed["data"]["bets"] == {"alice": {"banker": 400}, "bob": {"player": 600}}
        settled = await table.play_turns()
        assert settled is not None
        seated.check_streams()
    finally:
        await seated.close()
    await check_books(cluster.url, tables=[TABLE])


@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_draining_one_of_three_during_play_loses_no_bet(
    make_cluster: Callable[..., Cluster],
) -> None:
    """SIGTERM to the table's owner while players put chips down, two players on each
    of three processes: the table moves to another process at once, the drained
    process closes its clients with 1001 and exits 0, and they come back through the
    other processes (each client tries the next address, as behind a load balancer)
    and resume. Every chip acknowledged, or sent again with its id, is in the coup."""
    cluster = make_cluster(3, [table_def("t1", timers=LONG)], command_timeout=scaled(3))
    await cluster.ready()
    owner = cluster.owner("t1")
    assert owner is not None
    players: dict[str, Client] = {}
    where: dict[str, ServerProcess] = {}
    for n in range(6):
        node = cluster.nodes[n % 3]
        pid = f"p{n + 1}"
        players[pid] = await open_player(node.url, pid, "msgpack" if n % 2 else "json")
        where[pid] = node
    watcher = players["p1"] if where["p1"] is not owner else players["p2"]
    betting: list[asyncio.Task[None]] = []
    try:
        for client in players.values():
            await client.join("t1")
        for client in players.values():
            await client.call("sit", table="t1")
        game = Patient("t1", players, watcher)
        first = await game.play_coup({"p1": {"player": 300}, "p4": {"banker": 500}})
        balances = {pid: c.hello_reply["balance"] for pid, c in players.items()}  # type: ignore[index]
        check_coup(first, balances)

        opened = await game.to_betting()
        rid = opened["data"]["round_id"]
        start = len(watcher.frames)
        others = itertools.cycle(cluster.others(owner))
        # Different amounts: the highest Player bet (p4's) turns the Player hand (§6).
        chips = dict(zip(players, [3, 4, 5, 6, 3, 5], strict=True))
        areas = {pid: "player" if n % 2 else "banker" for n, pid in enumerate(players)}
        going = asyncio.Event()

        async def bet_chips(pid: str) -> None:
            client = players[pid]
            for n in range(chips[pid]):
                mid = f"{pid}-chip-{n}"
                while True:
                    if client.closed:
                        await come_back(client, next(others).url, "t1")
                    try:
                        reply = await client.rpc(
                            "bet", msg_id=mid, table="t1", area=areas[pid], amount=100
                        )
                    except (AssertionError, ConnectionError, ConnectionClosed):
                        continue  # closed while waiting or sending: back through another
                    if reply["type"] == "ok":
                        break
                    assert reply["code"] in TRANSIENT | {"draining"}, (pid, reply)
                    await asyncio.sleep(0.05)
                if n == 1:
                    going.set()
                await asyncio.sleep(0.1)  # a player's pace: the drain comes between chips

        betting += [asyncio.create_task(bet_chips(pid)) for pid in players]
        await going.wait()
        old = cluster.node_name(owner)
        began = time.monotonic()
        owner.send_signal(signal.SIGTERM)
        await cluster.new_owner("t1", old)
        took = time.monotonic() - began
        assert took < scaled(LEASE), took  # handed over, not left to expire
        await asyncio.gather(*betting)
        assert await asyncio.to_thread(owner.wait_exit) == 0, owner.log_text()
        for pid, client in players.items():  # everyone is elsewhere now
            if where[pid] is owner:
                if client.conn_no == 0:  # not betting when it closed: back now
                    if not client.closed:
                        await client.wait_closed()
                    await come_back(client, next(others).url, "t1")
                assert client.close_codes[0] == 1001, (pid, client.close_codes)
                assert client.url != owner.url
        assert cluster.owner("t1") in cluster.others(owner)
        expected = {pid: {areas[pid]: chips[pid] * 100} for pid in players}
        for pid in players:
            await game.act(pid, "done")
        log = await game.settle(CoupLog(rid, 0, game.holder(), {}), start)
        assert log.bets == expected, log.bets  # no chip lost, none twice
        check_coup(log, balances)
        for client in players.values():
            client.assert_clean()
    finally:
        for task in betting:  # (a failure above must not leave them retrying to the timeout)
            task.cancel()
        for client in players.values():
            await client.close()
    await check_books(cluster.url, tables=["t1"])
