"""Placement by players (``placement = "players"``): a table runs on the process most of
its watchers are connected to (issue 36: a client on another process than its table's
owner costs that process a relay of its commands and every step heard over the bus).

The pure part (server/croupier/cluster.py ``placement`` with ``watchers``): a table
follows its watchers once they are more than twice its owner's, never overfills a
member past half a room more than its share, and every table is still placed. The real
part: two server processes over a real Redis; players joining a table on the process
that does not run it bring the table to them, play there, and when that process is
killed (-9) the table goes back, its watchers' line is dropped, and the books hold.
"""

from __future__ import annotations

import json
import random
from types import SimpleNamespace
from typing import Any, cast

import pytest
import redis.asyncio as aioredis
from hypothesis import given, settings
from hypothesis import strategies as st

from server.croupier import cluster
from server.croupier.cluster import FOLLOW_MARGIN, Leases, Rebalancer, lease_key, placement
from server.croupier.host import Croupier
from server.store.redis import RedisStore
from tests.kit import Client, Game, open_guest, open_player, table_def
from tests.kit.checks import check_coup, random_bets
from tests.kit.cluster import LEASE, settle

TABLES = [f"t{n}" for n in range(1, 11)]
A, B, C = "host-101-aaaaaa", "host-102-bbbbbb", "host-103-cccccc"


def test_without_watchers_it_is_the_hash_placement() -> None:
    before = placement(TABLES, [A, B])
    assert placement(TABLES, [A, B], before, {}) == before
    assert placement(TABLES, [A, B], before, {A: {}, B: {}}) == before


def test_a_table_goes_where_its_only_watchers_are() -> None:
    before = placement(TABLES, [A, B])
    table = next(t for t in TABLES if before[t] == A)
    after = placement(TABLES, [A, B], before, {B: {table: 1}})
    assert after[table] == B
    counts = {m: sum(1 for n in after.values() if n == m) for m in (A, B)}
    assert counts == {A: 5, B: 5}, counts  # another of B's went to A: still balanced
    assert placement(TABLES, [A, B], None, {B: {table: 1}})[table] == B  # (no owner yet)


@pytest.mark.parametrize(("mine", "theirs", "moves"), [(1, 2, False), (3, 6, False), (3, 7, True)])
def test_a_table_moves_only_for_more_than_twice_its_owners_watchers(
    mine: int, theirs: int, moves: bool
) -> None:
    assert FOLLOW_MARGIN == 2
    before = placement(TABLES, [A, B])
    table = next(t for t in TABLES if before[t] == A)
    after = placement(TABLES, [A, B], before, {A: {table: mine}, B: {table: theirs}})
    assert after[table] == (B if moves else A)


def test_watchers_of_a_process_that_is_no_member_count_for_nothing() -> None:
    before = placement(TABLES, [A, B])
    assert placement(TABLES, [A, B], before, {C: dict.fromkeys(TABLES, 50)}) == before


def test_a_member_takes_at_most_half_a_room_more_for_its_players() -> None:
    """Every table watched on A only: A takes its room (5 of 10) and half of it again
    (3), the most watched first; B takes the rest."""
    counts = {t: n for n, t in enumerate(TABLES, start=1)}  # t10 the most watched
    after = placement(TABLES, [A, B], None, {A: counts})
    on_a = sorted((t for t, m in after.items() if m == A), key=counts.__getitem__)
    assert on_a == TABLES[2:], after
    assert set(after) == set(TABLES)


@settings(max_examples=300, deadline=None)
@given(
    tables=st.integers(1, 40),
    members=st.integers(1, 4),
    seed=st.integers(0, 2**32),
)
def test_every_table_is_placed_the_same_by_all_and_no_member_overfills(
    tables: int, members: int, seed: int
) -> None:
    rng = random.Random(seed)
    names = [f"t{n}" for n in range(tables)]
    nodes = [f"n{n}" for n in range(members)]
    current = {t: rng.choice([*nodes, None, "gone"]) for t in names}
    watchers = {m: {t: rng.choice([0, 0, 1, 2, 5, 11]) for t in names} for m in [*nodes, "gone"]}
    placed = placement(names, nodes, current, watchers)
    assert set(placed) == set(names) and set(placed.values()) <= set(nodes)
    room = -(-tables // members)
    assert all(sum(1 for n in placed.values() if n == m) <= room + -(-room // 2) for m in nodes)
    flipped = {m: dict(reversed(w.items())) for m, w in reversed(watchers.items())}
    assert cluster._place(list(reversed(names)), list(reversed(nodes)), current, flipped) == placed
    # And placed again from where it now is, with the same watchers, nothing moves.
    assert placement(names, nodes, placed, watchers) == placed


def test_a_member_full_of_tables_its_players_keep_takes_no_more() -> None:
    """A at its most (10 tables: a room of 5, and 3 more for its players) with eight
    tables it runs and watches: two tables on B watched more on A do not push two of
    A's out (and, their counts crossing next, back again): every table stays."""
    current = {t: A for t in TABLES[:8]} | {t: B for t in TABLES[8:]}
    watched = {t: 1 for t in TABLES[:8]} | {t: 5 for t in TABLES[8:]}
    assert placement(TABLES, [A, B], current, {A: watched}) == current


def test_an_unreadable_watchers_line_counts_as_none() -> None:
    line = json.dumps({"t1": 3, "t2": 0}).encode()
    read = cluster._watchers([b"n1", line, b"n2", b"not json", b"n3", b'["t1"]'])
    assert read == {"n1": {"t1": 3}}


@pytest.mark.slow  # two server processes and a whole kill: seconds
async def test_a_table_moves_to_its_players_process_plays_there_and_goes_back_when_it_dies(
    make_cluster: Any,
) -> None:
    tables = ["t1", "t2", "t3", "t4"]
    cluster_ = make_cluster(
        2, [table_def(t, decks=6, stop_offset=100) for t in tables], placement="players"
    )
    await cluster_.ready(tables=4)

    def counts() -> list[int]:
        owners = cluster_.owners()
        return sorted(sum(1 for o in owners.values() if o == m) for m in cluster_.members())

    await settle(lambda: counts() == [2, 2], timeout=LEASE * 4)
    first = cluster_.owner("t1")
    assert first is not None
    there = cluster_.others(first)[0]
    there_name = cluster_.node_name(there)
    clients: dict[str, Client] = {}
    for n in (1, 2):
        client = await open_player(there.url, f"p{n}", "msgpack" if n % 2 else "json")
        await client.join("t1")
        await client.call("sit", table="t1", seat=n)
        clients[f"p{n}"] = client
    spectator = await open_guest(there.url, "msgpack", name="Watcher")
    await spectator.join("t1")
    try:
        # Its three watchers are on ``there``: t1 moves there, and one of ``there``'s
        # unwatched tables goes the other way (still two each).
        await settle(lambda: cluster_.lease("t1") == there_name, timeout=LEASE * 4)
        await settle(lambda: counts() == [2, 2], timeout=LEASE * 4)
        published = json.loads(cluster_.redis.hget("chemmy:watching", there_name))
        assert published == {"t1": 3}, published
        balances = {pid: c.hello_reply["balance"] for pid, c in clients.items()}  # type: ignore[index]
        rng = random.Random(20261207)
        game = Game("t1", clients, spectator, rng=rng)
        for _ in range(3):  # the table plays where its players are, nothing relayed
            check_coup(await game.play_coup(random_bets(rng, list(clients))), balances)
        assert cluster_.lease("t1") == there_name
        for client in [spectator, *clients.values()]:
            client.assert_clean()
    finally:
        for client in [spectator, *clients.values()]:
            await client.close()

    there.kill()
    survivor = cluster_.node_name(first)
    await settle(lambda: cluster_.owners() == dict.fromkeys(tables, survivor), timeout=LEASE * 4)
    # Its watchers' line went with it (taken off with its heartbeat, by the survivor).
    await settle(lambda: there_name not in cluster_.redis.hkeys("chemmy:watching"))
    store = RedisStore(cluster_.url)
    await store.open()
    try:
        audit = await store.audit()
        assert audit["sum"] == 0 and audit["ledger_matches"], audit
        assert audit["holds_ok"], audit["problems"]
    finally:
        await store.close()


async def test_the_owner_hands_a_table_to_its_players_process_and_says_so(
    redis_url: str,
) -> None:
    """Two placement loops over a real Redis, by players. B's watchers of a table A runs:
    B wants it at once but cannot take it (A's lease); A, at its next read of the
    watchers, hands it over and says so (``on_released``: the croupier's notice, on which
    the others look at once), and B's next step takes it; a table of B's goes to A to keep
    two each. A member's line is left alone by a tick that does not publish, deleted when
    it leaves, and a line of no member is deleted as it is read."""
    tables = ["t1", "t2", "t3", "t4"]
    loops: dict[str, Rebalancer] = {}
    owned: dict[str, set[str]] = {A: set(), B: set()}
    seen: dict[str, dict[str, int]] = {A: {}, B: {}}
    released: list[tuple[str, str]] = []

    async def listed() -> list[str]:
        return tables

    for name in (A, B):
        leases = Leases(redis_url, name, ttl=3.0)
        leases.watching = lambda name=name: seen[name]  # type: ignore[misc]

        async def own(table: str, name: str = name) -> None:
            owned[name].add(table)

        async def disown(table: str, why: str, name: str = name) -> None:
            owned[name].discard(table)

        loop = Rebalancer(
            leases,
            tables=listed,
            owned=lambda name=name: set(owned[name]),
            own=own,
            disown=disown,
        )
        loop.on_released = lambda t, name=name: released.append((name, t))
        loops[name] = loop

    async def step(name: str) -> None:
        loops[name].poke()  # (a fresh read of the owners and the watchers)
        await loops[name].step()

    raw = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        for name in (A, B, A, B):
            await step(name)
        assert sorted(map(len, owned.values())) == [2, 2], owned
        table = sorted(owned[A])[0]
        released.clear()  # (A took all four first, and handed two to B)
        seen[B] = {table: 1}
        await step(B)  # wants it, cannot take it yet; makes room (one of its own to A)
        assert table in owned[A] and table not in owned[B]
        assert [who for who, _ in released] == [B] and len(owned[B]) == 1, released
        await step(A)  # hands it over, and says so (and takes the one B handed over)
        assert released[1:] == [(A, table)] and table not in owned[A]
        assert await raw.get(lease_key(table)) is None  # (released: free for B at once)
        await step(B)  # takes it
        assert table in owned[B]
        await step(A)
        await step(B)
        assert sorted(map(len, owned.values())) == [2, 2] and table in owned[B], owned
        assert json.loads(await raw.hget("chemmy:watching", B) or "") == {table: 1}
        await loops[B].leases.tick([], [])  # (no watching given: its line is left)
        assert await raw.hget("chemmy:watching", B) is not None
        await raw.hset("chemmy:watching", "host-999-gone", json.dumps({table: 50}))
        await step(A)
        assert await raw.hget("chemmy:watching", "host-999-gone") is None
        assert set(loops[A].leases.watched) == {A, B}
        loops[B].draining = True  # a draining member's line is kept (it still serves)
        await step(B)
        await step(A)
        assert set(loops[A].leases.watched) == {A, B}
        await loops[B].leases.leave()
        assert await raw.hget("chemmy:watching", B) is None
    finally:
        await raw.aclose()
        for loop in loops.values():
            await loop.leases.close()


def test_a_released_notice_forgets_the_owner_it_names_and_looks_again() -> None:
    """A croupier hearing ``released``: the table is unowned if the notice's sender was
    its owner as last known (not if another was heard taking it since: two senders'
    notices come in either order), and its placement loop looks again at once."""
    told: list[dict[str, Any]] = []
    bus = SimpleNamespace(node=A, control=told.append)
    leases = Leases("redis://127.0.0.1:1/0", A)  # (never asked: notices only)
    croupier = Croupier(cast(Any, None), cast(Any, bus), grace=1.0, cluster=leases)

    async def nothing(*args: Any) -> Any:
        return set()

    croupier.rebalancer = Rebalancer(leases, tables=nothing, owned=set, own=nothing, disown=nothing)
    leases.heard_owner("t1", C)  # C took it after B handed it over
    croupier._notice({"kind": "released", "table": "t1", "node": B})
    assert leases.known_owners(["t1"]) == {"t1": C}
    looked = croupier.rebalancer._notices
    croupier._notice({"kind": "released", "table": "t1", "node": C})
    assert leases.known_owners(["t1"]) == {"t1": None}
    assert croupier.rebalancer._notices == looked + 1
    croupier._released("t2")  # what this process says when it hands one over
    assert told == [{"kind": "released", "table": "t2", "node": A}]


async def test_the_lines_name_a_live_member_without_one_and_say_they_were_read(
    redis_url: str,
) -> None:
    """``Leases.on_lines`` (``server.bus.audience``'s): every live member's line, ``None`` for
    one that publishes none (C places by hash), a new mapping at each read, heard by
    ``on_lines``; a tick that reads no lines says nothing."""
    a, c = Leases(redis_url, A, ttl=3.0), Leases(redis_url, C, ttl=3.0)
    heard: list[dict[str, dict[str, int] | None]] = []
    a.on_lines = heard.append
    try:
        await c.tick([], ["t1"])  # (a member, no line)
        await a.tick([], ["t1"], watching={"t1": 2})
        assert heard == [{A: {"t1": 2}, C: None}]
        await a.tick([], [])  # (no read of the lines: as they were)
        assert len(heard) == 1
        await c.tick([], ["t1"], watching={})
        await a.tick([], ["t1"], watching={"t1": 1})
        assert heard[1] == {A: {"t1": 1}, C: {}} and heard[1] is not heard[0]
    finally:
        await a.close()
        await c.close()


def test_placing_by_players_a_loop_at_rest_reads_the_lines_every_two_seconds() -> None:
    """The members' lines are read with the owners, at most OWNERS_EVERY apart whatever
    the lease (``server.bus.audience``'s hold counts on it); by hash, a loop at rest looks
    when its renewal is due, a third of a lease on."""

    async def none() -> list[str]:
        return []

    def at_rest(watching: bool) -> float:
        leases = Leases("redis://127.0.0.1:1/0", A, ttl=30.0)
        if watching:
            leases.watching = dict
        loop = Rebalancer(leases, tables=none, owned=set, own=none, disown=none)  # type: ignore[arg-type]
        loop.at_rest, loop._last_renewal, loop._owners_read = True, 100.0, 100.0
        return loop._next_look()

    assert at_rest(watching=True) == 100.0 + cluster.OWNERS_EVERY
    assert at_rest(watching=False) == 100.0 + 10.0
