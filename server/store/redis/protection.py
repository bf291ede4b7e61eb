"""The Redis store's rows of player protection and the cashier: a player's currency,
restriction, per-day flows, limits and play session, each changed atomically with the
rule its caller hands in (under ``WATCH``, or a compare-and-set script).

It must never decide a rule of protection itself (``rule=`` is the caller's,
``server.protection.rules``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from server.ledger.flows import flow_day
from server.protocol.errors import StoreUnavailable
from server.store.base import AckRule, CurrentRule, LimitsRule, PlayRule, RestrictionRule
from server.store.front import StoredBetReads
from server.store.players import (
    check_currency,
    check_limit_changes,
    check_play_open,
    check_play_time,
    play_baseline,
)
from server.store.records import dump_json
from server.store.redis.core import _FLOW_FIELDS, RedisCore, _text


class RedisPlayers(RedisCore):
    """A player's rows in :class:`~server.store.redis.RedisStore`."""

    # -- a player's currency ----------------------------------------------------------
    async def player_currency(self, player_id: str) -> str | None:
        with self._translated():
            found = await self._redis().hget(self._key("currencies"), player_id)
        return None if found is None else _text(found)

    async def set_player_currency(self, player_id: str, currency: str) -> str:
        check_currency(player_id, currency)
        with self._translated():
            redis = self._redis()
            # Set once (HSETNX) and never changed: the value read after is the one kept.
            await redis.hsetnx(self._key("currencies"), player_id, currency)
            found = await redis.hget(self._key("currencies"), player_id)
        if found is None:
            raise StoreUnavailable(f"the currency of {player_id!r} was not kept")
        return _text(found)

    # -- a player's time-out or self-exclusion ---------------------------------------
    async def _stored_restriction(self, player_id: str) -> dict[str, Any] | None:
        with self._translated():
            found = await self._redis().hget(self._key("restrictions"), player_id)
        return None if found is None else dict(json.loads(found))

    async def set_player_restriction(
        self, player_id: str, kind: str, until: float, by: str, *, rule: RestrictionRule
    ) -> dict[str, Any] | None:
        key = self._key("restrictions")
        kept: dict[str, Any] | None = None

        async def merge(pipe: Any) -> None:
            # WATCHed: a concurrent change to the hash retries this with what it wrote.
            nonlocal kept
            found = await pipe.hget(key, player_id)
            old = None if found is None else json.loads(_text(found))
            kept = rule(old, kind, until, by, time.time())
            pipe.multi()
            if kept is None:
                pipe.hdel(key, player_id)
            else:
                pipe.hset(key, player_id, json.dumps(kept))

        with self._translated():
            await self._tracked.wrote([player_id], self._redis().transaction(merge, key))
        return kept

    # -- a player's usage and limits ----------------------------------------------------
    async def _stored_days(self, player_id: str, since_day: str) -> dict[str, list[int]]:
        with self._translated():
            found = await self._redis().hgetall(self._key("flows:", player_id))
        return _days_of([x for kv in found.items() for x in kv])

    async def _stored_bet_reads(self, player_id: str, since_day: str) -> StoredBetReads:
        names = ("restrictions", "limits", "play_sessions", "play_seen", f"flows:{player_id}")
        with self._translated():  # (kept while Redis says its keys did not change)
            self._redis()
            keys = [self._key(name) for name in names]
            found = await self._tracked.read(player_id, keys, [player_id])
        restriction, limits, body, seen, flows = found
        return (
            None if restriction is None else dict(json.loads(restriction)),
            None if limits is None else json.loads(limits),
            _play_of("" if body is None else _text(body), "" if seen is None else _text(seen)),
            _days_of(flows),
        )

    async def player_limits(self, player_id: str, *, rule: CurrentRule) -> dict[str, Any]:
        with self._translated():
            found = await self._redis().hget(self._key("limits"), player_id)
        stored = None if found is None else json.loads(_text(found))
        return rule(stored, self.clock())

    async def set_player_limits(
        self, player_id: str, changes: Mapping[str, int | None], by: str, *, rule: LimitsRule
    ) -> dict[str, Any]:
        changes = check_limit_changes(changes, by)
        key = self._key("limits")
        kept: dict[str, Any] = {}

        async def merge(pipe: Any) -> None:
            # WATCHed: a concurrent change to the hash retries this with what it wrote.
            nonlocal kept
            found = await pipe.hget(key, player_id)
            old = None if found is None else json.loads(_text(found))
            kept = rule(old, changes, by, self.clock())
            pipe.multi()
            if kept:
                pipe.hset(key, player_id, dump_json(kept))
            else:
                pipe.hdel(key, player_id)

        with self._translated():
            await self._tracked.wrote([player_id], self._redis().transaction(merge, key))
        return kept

    # -- a player's play session --------------------------------------------------------
    async def _read_play(self, player_id: str) -> tuple[str, str]:
        """The stored session's JSON and its seen, as stored (``''``: none), read at once."""
        async with self._redis().pipeline(transaction=True) as pipe:
            pipe.hget(self._key("play_sessions"), player_id)
            pipe.hget(self._key("play_seen"), player_id)
            body, seen = await pipe.execute()
        return ("" if body is None else _text(body)), ("" if seen is None else _text(seen))

    async def _change_play(
        self, player_id: str, change: Callable[[dict[str, Any] | None], Awaitable[Any]]
    ) -> dict[str, Any] | None:
        """Read the player's session, ``change`` it (None: keep it as it is) and write it
        if it is still as read, reading again if it changed meanwhile."""
        with self._translated():
            for _ in range(100):
                body, seen = await self._read_play(player_id)
                kept = await change(_play_of(body, seen))
                if kept is None:
                    return None
                new = dump_json({k: v for k, v in kept.items() if k != "seen"})
                args = [self.prefix, player_id, body, seen, new, repr(float(kept["seen"]))]
                written = self._replicated(self._scripts["play_set"], args)
                if await self._tracked.wrote([player_id], written) == 1:
                    return dict(kept)
        raise StoreUnavailable(f"the play session of {player_id!r} kept changing while written")

    async def open_play_session(
        self, player_id: str, now: float, gap: float, every: float | None, *, rule: PlayRule
    ) -> dict[str, Any]:
        now, gap, every = check_play_open(player_id, now, gap, every)

        async def change(old: dict[str, Any] | None) -> dict[str, Any]:
            baseline: dict[str, int] = {}
            if old is None or now - old["seen"] > gap:  # a new one: its baseline
                baseline = play_baseline(await self._stored_days(player_id, flow_day(now)), now)
            return rule(old, now, gap, every, baseline)

        kept = await self._change_play(player_id, change)
        assert kept is not None
        return kept

    async def play_session(self, player_id: str) -> dict[str, Any] | None:
        with self._translated():
            body, seen = await self._read_play(player_id)
        return _play_of(body, seen)

    async def touch_play_sessions(self, player_ids: Sequence[str], now: float) -> None:
        now = check_play_time(now, "time")
        wanted = list(dict.fromkeys(player_ids))
        if wanted:
            with self._translated():
                await self._scripts["play_touch"](args=[self.prefix, repr(now), *wanted])

    async def ack_reality_check(
        self, player_id: str, now: float, *, rule: AckRule
    ) -> dict[str, Any] | None:
        now = check_play_time(now, "time")

        async def change(old: dict[str, Any] | None) -> dict[str, Any] | None:
            return rule(old, now)

        return await self._change_play(player_id, change)


def _days_of(fields: Sequence[bytes | str]) -> dict[str, list[int]]:
    """A player's days (day -> ``[staked, net, deposited]``) from their flow fields and
    values, flat."""
    days: dict[str, list[int]] = {}
    for field, value in zip(fields[::2], fields[1::2], strict=True):
        day, _, which = _text(field).rpartition(":")
        if which in _FLOW_FIELDS:
            days.setdefault(day, [0, 0, 0])[_FLOW_FIELDS.index(which)] = int(value)
    return days


def _play_of(body: str, seen: str) -> dict[str, Any] | None:
    """A play session from its stored JSON and seen (``''``: none)."""
    if not body:
        return None
    kept = dict(json.loads(body))
    return {**kept, "seen": float(seen or kept["started"])}
