"""Guests without limit (issue 9): a guest is written to the store only when they first
sit or deposit, so a client saying hello in a loop writes nothing; guests who never
played are forgotten once idle; and hellos are rate-limited per address (test_hostile)."""

from __future__ import annotations

import time
from typing import Any

from tests.kit import table_def


async def test_hellos_write_nothing_until_a_guest_sits(net: Any) -> None:
    server = await net.start()
    before = (await server.store.audit())["entries"]
    watchers = [await net.guest(server, "json", name=f"Watcher {n}") for n in range(5)]
    for watcher in watchers:
        await watcher.join("t1")
        assert await watcher.balance() == server.config.guest_balance  # what they'd get
        snapshot = watcher.snapshots["t1"]
        assert snapshot["you"]["balance"] == server.config.guest_balance
    assert (await server.store.audit())["entries"] == before  # no welcome entry yet
    for watcher in watchers:
        assert await server.store.player_name(watcher.player) is None

    player = watchers[0]
    await player.call("sit", table="t1")  # to play, the guest is written, funded once
    assert await server.store.player_name(player.player) == "Watcher 0"
    assert (await server.store.audit())["entries"] == before + 1
    assert await player.balance() == server.config.guest_balance
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]


async def test_a_refused_sit_writes_no_guest(net: Any) -> None:
    """Issue 18.12: a guest is written only when something of theirs must be kept."""
    server = await net.start(tables=(table_def("t1", seats=1),))
    before = (await server.store.audit())["entries"]
    first = await net.guest(server, "json", name="First")
    await first.join("t1")
    await first.call("sit", table="t1")
    entries = (await server.store.audit())["entries"]
    assert entries == before + 1
    for n in range(5):
        late = await net.guest(server, "json", name=f"Late {n}")
        await late.join("t1")
        await late.refused("table_full", "sit", table="t1")
        await late.refused("bad_seat", "sit", table="t1", seat=2)
        assert await server.store.player_name(late.player) is None
        assert await late.balance() == server.config.guest_balance  # what they'd get
    assert (await server.store.audit())["entries"] == entries
    # The seated guest still has their money, stored once.
    assert await first.balance() == server.config.guest_balance
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]


async def test_a_deposit_writes_the_guest_first(net: Any) -> None:
    server = await net.start()
    guest = await net.guest(server, "msgpack")
    reply = await guest.call("deposit", msg_id="d1", amount=5_000)
    assert reply["balance"] == server.config.guest_balance + 5_000
    assert await server.store.player_name(guest.player) is not None


async def test_idle_guests_who_never_played_are_forgotten(net: Any) -> None:
    server = await net.start()
    idle = await net.guest(server, "json", name="Idle")
    await idle.join("t1")
    await idle.call("sit", table="t1")  # written (funded), then never bets
    await idle.call("stand", table="t1")
    player = await net.player(server, "ann")  # a token player is never a guest to forget
    assert await server.store.player_name(idle.player) == "Idle"
    later = time.time() + server.config.guest_idle + 60
    server.store.clock = lambda: later  # a day later
    await server.process.expire_guests()
    assert await server.store.player_name(idle.player) is None
    assert await server.store.player_name(player.player) is not None
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]  # the welcome went back
