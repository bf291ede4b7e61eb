"""The store contract of a player's time-out or self-exclusion (issue 21), on every store.

SQLite and a real Redis (the ``redis_url`` fixture): a restriction is read back
while in force and not after its ``until``; a player only lengthens one (a shorter one
keeps what is in force), an operator sets a shorter one or lifts it; bad shapes are
refused; it survives the store being opened again.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from server.protection.rules import merge_restriction
from server.protocol.errors import StoreError
from server.store import Store
from tests.server.conftest import make_store

DAY = 86_400.0


async def test_none_until_set(store: Store) -> None:
    assert await store.player_restriction("ann") is None


async def test_a_break_is_kept_until_it_ends(store: Store) -> None:
    until = time.time() + DAY
    kept = await store.set_player_restriction(
        "ann", "break", until, "player", rule=merge_restriction
    )
    assert kept is not None
    assert kept["kind"] == "break" and kept["until"] == until and kept["by"] == "player"
    assert await store.player_restriction("ann") == kept
    assert await store.player_restriction("bob") is None
    ended = await store.set_player_restriction(
        "cat", "break", time.time() + 0.2, "operator", rule=merge_restriction
    )
    assert ended is not None
    await asyncio.sleep(0.3)
    assert await store.player_restriction("cat") is None


async def test_a_player_never_shortens_one(store: Store) -> None:
    long = time.time() + 183 * DAY
    await store.set_player_restriction("ann", "exclusion", long, "player", rule=merge_restriction)
    kept = await store.set_player_restriction(
        "ann", "break", time.time() + DAY, "player", rule=merge_restriction
    )
    assert kept is not None and kept["kind"] == "exclusion" and kept["until"] == long
    assert (
        await store.set_player_restriction("ann", "break", 0.0, "player", rule=merge_restriction)
        == kept
    )
    longer = long + 365 * DAY
    kept = await store.set_player_restriction(
        "ann", "exclusion", longer, "player", rule=merge_restriction
    )
    assert kept is not None and kept["until"] == longer
    assert (await store.player_restriction("ann") or {})["until"] == longer


async def test_an_operator_sets_and_lifts(store: Store) -> None:
    await store.set_player_restriction(
        "ann", "exclusion", time.time() + 183 * DAY, "player", rule=merge_restriction
    )
    short = time.time() + DAY
    kept = await store.set_player_restriction(
        "ann", "break", short, "operator:ops", rule=merge_restriction
    )
    assert kept is not None and kept["until"] == short and kept["by"] == "operator:ops"
    assert (
        await store.set_player_restriction(
            "ann", "break", 0.0, "operator:ops", rule=merge_restriction
        )
        is None
    )
    assert await store.player_restriction("ann") is None


@pytest.mark.parametrize(
    ("kind_", "until", "by"),
    [("nap", 1e10, "player"), ("break", float("nan"), "player"), ("break", 1e10, "")],
)
async def test_bad_shapes_are_refused(store: Store, kind_: str, until: float, by: str) -> None:
    with pytest.raises(StoreError):
        await store.set_player_restriction("ann", kind_, until, by, rule=merge_restriction)
    assert await store.player_restriction("ann") is None


async def test_concurrent_players_keep_the_longest(store: Store) -> None:
    now = time.time()
    await asyncio.gather(
        *(
            store.set_player_restriction(
                "ann", "break", now + n * DAY, "player", rule=merge_restriction
            )
            for n in (1, 30, 7)
        )
    )
    assert (await store.player_restriction("ann") or {})["until"] == now + 30 * DAY


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_it_survives_opening_again(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    first = make_store(kind, request, tmp_path)
    await first.open()
    until = time.time() + 183 * DAY
    await first.set_player_restriction("ann", "exclusion", until, "player", rule=merge_restriction)
    await first.close()
    again = make_store(kind, request, tmp_path)
    await again.open()
    try:
        assert (await again.player_restriction("ann") or {})["until"] == until
    finally:
        await again.close()
