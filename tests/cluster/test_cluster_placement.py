"""Where tables run in a cluster: rendezvous placement over the live processes.

The pure part (server/croupier/cluster.py ``placement``): tables spread evenly and move
as little as possible when a process joins or leaves. The real part: three real server
processes over a real Redis share 30 tables, 8 to 12 each; when one is killed (-9), its
tables spread over the other two once its lease runs out, and no table is lost.
"""

from __future__ import annotations

import socket
import time

import pytest

from server.croupier.cluster import Leases, placement
from server.protocol.errors import StoreUnavailable
from tests.kit import scaled, table_def
from tests.kit.cluster import LEASE, settle

TABLES = [f"t{n}" for n in range(1, 31)]
NODES = ["host-101-aaaaaa", "host-102-bbbbbb", "host-103-cccccc"]


def test_thirty_tables_spread_eight_to_twelve_over_three() -> None:
    placed = placement(TABLES, NODES)
    counts = {node: sum(1 for n in placed.values() if n == node) for node in NODES}
    assert set(placed) == set(TABLES)
    assert all(8 <= c <= 12 for c in counts.values()), counts


def test_placement_is_the_same_whoever_computes_it() -> None:
    assert placement(TABLES, NODES) == placement(reversed(TABLES), list(reversed(NODES)))


@pytest.mark.parametrize("gone", NODES)
def test_a_leaving_node_moves_only_its_own_tables(gone: str) -> None:
    before = placement(TABLES, NODES)
    survivors = [n for n in NODES if n != gone]
    after = placement(TABLES, survivors, before)
    moved = {t for t in TABLES if before[t] != after[t]}
    assert moved == {t for t in TABLES if before[t] == gone}
    assert {after[t] for t in moved} == set(survivors)  # spread, not dumped on one


def test_a_joining_node_takes_only_what_it_gets() -> None:
    before = placement(TABLES, NODES)
    after = placement(TABLES, [*NODES, "host-104-dddddd"], before)
    moved = {t for t in TABLES if before[t] != after[t]}
    assert all(after[t] == "host-104-dddddd" for t in moved)
    assert len(moved) == 30 - 3 * 8  # the others keep their fair share (8 each)


@pytest.mark.parametrize("tables", [1, 2, 7, 30, 101])
@pytest.mark.parametrize("members", [1, 2, 3, 5])
def test_spread_is_even_from_any_start(tables: int, members: int) -> None:
    names = [f"t{n}" for n in range(tables)]
    nodes = [f"n{n}" for n in range(members)]
    lopsided = {t: nodes[0] for t in names}  # one node ran everything
    for current in (None, lopsided):
        placed = placement(names, nodes, current)
        counts = [sum(1 for n in placed.values() if n == node) for node in nodes]
        assert set(placed) == set(names)
        assert max(counts) - min(counts) <= 1 or max(counts) <= -(-tables // members)


async def test_leases_without_redis_raise_the_stores_error_not_redis() -> None:
    """Issue 35: ``Leases`` translates Redis' errors itself (a real socket to a port
    nobody listens on), so the croupier, the lobby and the operator API catch only
    ``StoreUnavailable``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nobody listens there
    leases = Leases(f"redis://127.0.0.1:{port}/0", "host-101-aaaaaa", ttl=1.0)
    try:
        for call in (
            leases.acquire("t1"),
            leases.owner("t1"),
            leases.owners(["t1"]),
            leases.alive(),
            leases.summaries(),
            leases.tick(["t1"], ["t1"]),
        ):
            with pytest.raises(StoreUnavailable):
                await call
        await leases.release("t1")  # giving back never raises (a clean stop)
        await leases.leave()
    finally:
        await leases.close()


def test_no_member_no_placement() -> None:
    assert placement(TABLES, []) == {}


@pytest.mark.slow  # three server processes; the placement tests above are pure
@pytest.mark.xdist_group("elapsed")  # asserts how long it took: never beside another
async def test_three_processes_share_thirty_tables_and_survive_a_kill(make_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster = make_cluster(3, [table_def(t) for t in TABLES])

    def counts() -> dict[str, int]:
        owners = cluster.owners()
        return {m: sum(1 for o in owners.values() if o == m) for m in cluster.members()}

    # The processes started one after the other: the later ones take their share.
    await settle(lambda: len(cluster.owners()) == 30 and len(counts()) == 3)
    # ... until placement is at rest: at most its fair share each, 10 (the issue: 8-12).
    await settle(lambda: sorted(counts().values()) == [10, 10, 10], timeout=LEASE * 4)
    names = {cluster.node_name(node): node for node in cluster.nodes}
    owners = cluster.owners()
    assert set(owners.values()) == set(names)

    victim = cluster.nodes[0]
    victim_name = cluster.node_name(victim)
    orphans = {t for t, o in owners.items() if o == victim_name}
    victim.kill()
    killed = time.monotonic()
    survivors = set(names) - {victim_name}
    await settle(
        lambda: (
            set(cluster.owners()) == set(TABLES) and set(cluster.owners().values()) <= survivors
        ),
        timeout=LEASE * 4,
    )
    took = time.monotonic() - killed
    assert took <= scaled(LEASE + 1.5), took  # the lease time, and a placement round
    # A survivor that took more than its share of the orphans hands the rest on (a table
    # moving is unowned for a moment): at rest, each holds its share.
    await settle(lambda: sorted(counts().values()) == [15, 15], timeout=LEASE * 4)
    after = cluster.owners()
    assert set(after) == set(TABLES), cluster.logs()
    for table, owner in owners.items():  # the survivors kept what they had
        if table not in orphans:
            assert after[table] == owner
    assert {after[t] for t in orphans} == survivors  # the orphans spread over both
