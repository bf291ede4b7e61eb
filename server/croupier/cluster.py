"""Many processes over one Redis: who is alive, who owns which table, and handing over.

With a Redis store, every ``chemmy-server`` process is a member of the cluster:

- **Presence.** Each process writes a heartbeat (``chemmy:nodes``, a sorted set scored
  by when the heartbeat expires, a lease and a sixth after it) at every tick of its
  placement loop: at rest a third of a lease apart, and when another member's heartbeat
  expires; every ``ttl / 6`` while anything changes, or at once on a notice. A process
  that stops beating drops out once its heartbeat expires. A draining process marks
  itself in ``chemmy:draining`` and is given no tables.
- **Placement.** Tables spread evenly over the live, non-draining processes (at most
  ``ceil(tables / processes)`` each); a table stays where it runs while that process has
  room, and otherwise goes to the process with the highest rendezvous hash of
  ``(table, process)`` that has room. Every process computes the same answer from the
  same facts (members and current owners); a process leaving moves only its tables, a
  process joining takes only what the others shed for it (:func:`placement`).
- **Placement by players** (``placement = "players"``, for a load balancer that sends a
  table's connections to one process by ``?table=``): each process publishes how many
  of its clients watch each table (``chemmy:watching``, with its read of the owners), and
  a table runs where most of its watchers are, once they are more than twice its
  owner's: a client on another process than its table's owner costs that process a
  relay of its commands and every step heard over the bus (docs/benchmarks.md). A
  process's own counts are fresher than the others' (read every 2 s), so two may see
  a table's place apart for a moment: the one handing it over says so (``released``),
  and the others look at once; a table both want is settled by its lease.
- **Ownership by lease.** A table's actor runs only where its lease is held:
  ``chemmy:{<table>}:lease`` = the owner's name, taken with ``SET NX PX ttl`` and renewed
  by a compare-and-renew script. Taking it, the new owner claims the table's next epoch
  in the store (``Store.claim_table``); the store refuses every write with an older
  epoch, so an owner paused past its lease can never write again. Only the lease's
  expiry hands a table over from a process that vanished; a process that no longer
  should own a table (a new member, or draining) hands it over itself at a step boundary
  (every step is stored) and deletes its lease, so the next owner takes over at once.
- **Failover is the restart path.** The new owner loads the table's row and starts it
  exactly as after a crash (``Table.from_state``, then a catch-up ``Tick``): the round
  goes on with the same cards and held wagers (GAME_RULES §8).
- **The lobby.** Each owner keeps its tables' summary lines in ``chemmy:lobby`` (a hash),
  so any process can list every table, with seats and watchers counted over all.

This module never decides a rule; it decides where tables run.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.connect.redis import connect
from server.protocol.errors import StoreUnavailable

__all__ = ["Leases", "placement"]

log = logging.getLogger("chemmy.cluster")

PREFIX = "chemmy"
#: Seconds between two reads of every table's owner by a process's tick (it beats at
#: every tick, a third of a lease apart at rest; placing by players, every OWNERS_EVERY
#: at most: the members' lines are read with the owners. See ``Rebalancer._next_look``),
#: less READ_SLACK (a timer may fire a moment early).
OWNERS_EVERY, READ_SLACK = 2.0, 0.05
#: A lease is renewed when a third of it has passed since its last renewal (a tick at
#: rest, every other one while things change: issue 36, a GET and a PEXPIRE per table per
#: tick were a seventh of Redis's commands); it then still has two thirds of its time to run.
RENEW_AFTER = 1 / 3
#: A heartbeat outlives its beat by a lease and a sixth of one (``Leases.beat_ms``): at
#: rest a process beats when it renews, a third of a lease apart, so a member is still
#: found gone no later than it was when it beat every sixth of a lease with a heartbeat
#: of one lease, and keeps as long a grace through a pause or a Redis failover (issue 36).
BEAT_EXTRA = 1 / 6
#: How long after another member's heartbeat expires a process at rest looks (seconds):
#: a timer may fire a moment early, and the two clocks are read apart. (Its leases
#: renewed with that beat expired before, a lease from it; one it took later in a long
#: step may outlive the heartbeat, and its taker's ``SET NX`` waits for that.)
EXPIRY_MARGIN = 0.02

# A process's whole tick in one call (issue 36: it was an EVAL of the full script text
# per table, a transaction and a read, every half second). KEYS: the members, the
# draining, the watchers, then the ``ARGV[5]`` leases of this process's tables, then the
# leases whose owners are read. ARGV: this node, ttl ms, now ms, draining ('1'/'0'), how
# many owned, the heartbeat's ms, this node's watchers (JSON, and then everyone's are
# read; '' for neither: placement by hash).
# Beats (and drops expired members), renews each owned lease still ours, and answers
# {the owned leases lost (their places, 1-based), the members, the draining, each read
# lease's owner ('' for none), one a line (one string, not a reply per table: parsing
# those was most of an idle process's tick, issue 36), when the first other member's
# heartbeat expires (ms; '' for no other), every member's watchers (a flat HGETALL of the
# live members' lines, the others' deleted; or empty)}.
_TICK = """
local node, ttl, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local owned, beat = tonumber(ARGV[5]), tonumber(ARGV[6])
redis.call('ZADD', KEYS[1], now + beat, node)
if ARGV[4] == '1' then redis.call('ZADD', KEYS[2], now + beat, node) end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[3], node, ARGV[7]) end
-- A set's members whose mark has not expired, with their expiries; the expired ones are
-- taken off (one ZRANGE, and a ZREM only when one expired: issue 36).
local function live(key)
  local names, scores, gone = {}, {}, {}
  local scored = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  for i = 1, #scored, 2 do
    if tonumber(scored[i + 1]) <= now then
      gone[#gone + 1] = scored[i]
    else
      names[#names + 1], scores[#scores + 1] = scored[i], scored[i + 1]
    end
  end
  if #gone > 0 then redis.call('ZREM', key, unpack(gone)) end
  return names, scores
end
-- The leases read with one MGET a chunk (issue 36: a GET each, renewed and read, were
-- the most of Redis's commands after the commits').
local function read(first, last)
  local out = {}
  for i = first, last, 256 do
    local found = redis.call('MGET', unpack(KEYS, i, math.min(i + 255, last)))
    for _, v in ipairs(found) do out[#out + 1] = v end
  end
  return out
end
local lost = {}
for n, holder in ipairs(read(4, 3 + owned)) do
  if holder == node then
    redis.call('PEXPIRE', KEYS[3 + n], ttl)
  else
    lost[#lost + 1] = n
  end
end
local owners = {}
for _, holder in ipairs(read(4 + owned, #KEYS)) do owners[#owners + 1] = holder or '' end
local members, expiries = live(KEYS[1])
local soonest = ''
for i, name in ipairs(members) do
  if name ~= node then soonest = expiries[i]; break end
end
-- The live members' watchers; a line of any other (gone, or left without its delete) is
-- deleted as it is read.
local watched, stale, alive = {}, {}, {}
if ARGV[7] ~= '' then
  for _, name in ipairs(members) do alive[name] = true end
  local lines = redis.call('HGETALL', KEYS[3])
  for i = 1, #lines, 2 do
    if alive[lines[i]] then
      watched[#watched + 1], watched[#watched + 2] = lines[i], lines[i + 1]
    else
      stale[#stale + 1] = lines[i]
    end
  end
  if #stale > 0 then redis.call('HDEL', KEYS[3], unpack(stale)) end
end
return {lost, members, (live(KEYS[2])), table.concat(owners, '\\n'), soonest, watched}
"""
# KEYS[1] = the lease; ARGV[1] = this node. Deletes the lease only if it is ours.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


@functools.lru_cache(maxsize=1 << 14)
def _score(table: str, node: str) -> bytes:
    """A table's rendezvous hash at a node (remembered: placement runs at every tick of
    every process, over every table, and the answers never change)."""
    return hashlib.blake2b(f"{table}\x00{node}".encode(), digest_size=8).digest()


def placement(
    tables: Iterable[str],
    nodes: Iterable[str],
    current: Mapping[str, str | None] | None = None,
    watchers: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, str]:
    """Where each table belongs: balanced, and moving as little as possible.

    Every member takes at most ``ceil(tables / members)`` tables. A table stays with its
    ``current`` owner while that owner is a member with room (its best-hashed tables
    first); every other table goes to the member with the highest rendezvous hash of
    ``(table, member)`` that still has room. So with no owners yet the tables spread
    evenly; a member leaving moves only its own tables (to the others with room), and a
    member joining takes only the tables the others must shed to make room for it.

    With ``watchers`` (each member's watchers a table: ``placement = "players"``), a
    table goes first where its watchers are (:func:`_followed`), up to half as many
    tables again as a member's room; the rest are placed as above around them.

    Deterministic: every process computes the same answer from the same facts; the
    last answer is kept, and given again for the same facts (every tick of an idle
    process asks the same question).
    """
    facts = (tuple(tables), tuple(nodes), dict(current or {}), dict(watchers or {}))
    if _last_placement and _last_placement[0] == facts:
        return dict(_last_placement[1])
    placed = _place(*facts)
    _last_placement[:] = [facts, placed]
    return dict(placed)


#: The last call of :func:`placement`: its facts and its answer.
_last_placement: list[Any] = []

#: A table moves to where its watchers are only when that member has more than
#: ``FOLLOW_MARGIN`` times its owner's (and at least one): a watcher or two coming and
#: going must not send a table back and forth (each move is a handover).
FOLLOW_MARGIN = 2


def _followed(
    tables: list[str],
    members: list[str],
    current: Mapping[str, str | None],
    watchers: Mapping[str, Mapping[str, int]],
) -> list[tuple[str, list[str]]]:
    """The tables with watchers among the members, those staying with their owner first,
    then the most watched: (table, the members it may go to, best first). Its choice is the
    member with the most of its watchers (the rendezvous hash breaks a tie), unless its
    owner is a member and the choice has no more than :data:`FOLLOW_MARGIN` times the
    owner's: then its owner. After the choice, the other members watching it, the most
    first (for when the choice is full). A table staying with its owner comes before any
    moving, whatever their counts: a member full of tables its players keep does not hand
    one over to make room for another (their counts crossing would move both back and
    forth)."""
    chosen: list[tuple[bool, int, str, list[str]]] = []
    for table in tables:
        counts = {m: watchers.get(m, {}).get(table, 0) for m in members}
        ranked = sorted(
            (m for m in members if counts[m] > 0),
            key=lambda m: (counts[m], _score(table, m)),
            reverse=True,
        )
        if not ranked:
            continue
        owner = current.get(table)
        if owner in counts and counts[ranked[0]] <= FOLLOW_MARGIN * counts[owner]:
            ranked.remove(str(owner))
            ranked.insert(0, str(owner))
        chosen.append((ranked[0] != owner, -counts[ranked[0]], table, ranked))
    chosen.sort(key=lambda c: c[:3])
    return [(table, ranked) for _, _, table, ranked in chosen]


def _place(
    tables: Iterable[str],
    nodes: Iterable[str],
    current: Mapping[str, str | None],
    watchers: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, str]:
    members = sorted(set(nodes))
    if not members:
        return {}
    tables = sorted(set(tables))
    room = -(-len(tables) // len(members))  # ceil
    load = dict.fromkeys(members, 0)
    placed: dict[str, str] = {}
    if watchers:
        # Up to half a room more where the players are; the others still fit around
        # them: the room left over all members is at least the tables left.
        for table, ranked in _followed(tables, members, current, watchers):
            member = next((m for m in ranked if load[m] < room + -(-room // 2)), None)
            if member is not None:
                placed[table] = member
                load[member] += 1
    staying = [t for t in tables if t not in placed and current.get(t) in load]
    staying.sort(key=lambda t: _score(t, str(current[t])), reverse=True)
    for table in staying:
        owner = str(current[table])
        if load[owner] < room:
            placed[table] = owner
            load[owner] += 1
    for table in tables:
        if table in placed:
            continue
        for member in sorted(members, key=lambda m: _score(table, m), reverse=True):
            if load[member] < room:
                placed[table] = member
                load[member] += 1
                break
    return placed


def lease_key(table: str) -> str:
    """A table's lease, in the table's hash slot (``{table}``) like its other keys."""
    return f"{PREFIX}:{{{table}}}:lease"


class Leases:
    """Presence, leases and the shared lobby, for one process (``node``). Redis failing
    is raised as :class:`~server.store.base.StoreUnavailable` (never redis' own errors)."""

    def __init__(self, url: str, node: str, *, ttl: float = 3.0) -> None:
        self.url = url
        self.node = node
        self.ttl = ttl
        self._redis: aioredis.Redis | None = None
        self._owners: dict[str, tuple[str | None, float]] = {}  # table -> (node, when read)
        #: When (``time.monotonic()``) another member's heartbeat expires first, as the
        #: last tick read it (None: no other member): nobody can be found gone before.
        self.others_expire: float | None = None
        #: Hears that Redis answered a tick (the bus's probe need not ask it meanwhile).
        self.on_answer: Callable[[], None] | None = None
        #: Placement by players (``placement = "players"``): this process's watchers a
        #: table, published at each read of the owners; every member's, as last read.
        self.watching: Callable[[], Mapping[str, int]] | None = None
        self.watched: dict[str, dict[str, int]] = {}
        #: Hears every read of them, with ``None`` for each live member that published no
        #: line (``server.bus.audience``).
        self.on_lines: Callable[[Mapping[str, Mapping[str, int] | None]], None] | None = None

    @property
    def redis(self) -> aioredis.Redis:
        if self._redis is None:
            self._redis = connect(self.url, socket_connect_timeout=2, socket_timeout=self.ttl / 2)
            # Sent by their digest (EVALSHA), loaded again by redis-py if Redis lost them.
            self._tick = self._redis.register_script(_TICK)
            self._release = self._redis.register_script(_RELEASE)
        return self._redis

    async def tick(
        self,
        owned: Iterable[str],
        tables: Iterable[str],
        *,
        draining: bool = False,
        watching: Mapping[str, int] | None = None,
    ) -> tuple[set[str], list[str], dict[str, str | None]]:
        """Beat, renew this process's leases (``owned``) and read who holds each of
        ``tables``, in one scripted call: (the owned tables whose lease was lost, the
        live members that take tables, sorted, each table's owner). With ``watching``
        (this process's watchers a table), it is published, and every member's is read
        into :attr:`watched`."""
        owned, tables = list(owned), list(tables)
        redis = self.redis
        keys = [f"{PREFIX}:nodes", f"{PREFIX}:draining", f"{PREFIX}:watching"]
        keys += [lease_key(t) for t in owned] + [lease_key(t) for t in tables]
        now_ms = int(time.time() * 1000)
        args: list[str | int] = [self.node, self.ttl_ms, now_ms, "1" if draining else "0"]
        mine = "" if watching is None else json.dumps(dict(watching), separators=(",", ":"))
        args += [len(owned), self.beat_ms, mine]
        with _unavailable():
            answer = await self._tick(keys=keys, args=args, client=redis)
        lost, live, leaving, found, soonest, watched = answer
        self.others_expire = _monotonic(soonest)
        if self.on_answer is not None:
            self.on_answer()
        members = {_text(n) for n in live} - {_text(n) for n in leaving}
        named = _text(found).split("\n") if tables else []  # (a node's name has no line break)
        owners = {t: v or None for t, v in zip(tables, named, strict=True)}
        now = time.monotonic()
        for table, node in owners.items():
            self._owners[table] = (node, now)
        if watching is not None:
            self.watched = _watchers(watched)
            if self.on_lines is not None:
                self.on_lines({**dict.fromkeys(map(_text, live)), **self.watched})
        return {owned[int(n) - 1] for n in lost}, sorted(members), owners

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    @property
    def ttl_ms(self) -> int:
        return int(self.ttl * 1000)

    @property
    def beat_ms(self) -> int:
        """How long a heartbeat lasts after its beat (:data:`BEAT_EXTRA`)."""
        return int(self.ttl * (1 + BEAT_EXTRA) * 1000)

    # -- presence ----------------------------------------------------------------------
    async def alive(self) -> list[str]:
        """Every process whose heartbeat has not expired (draining ones included: they
        still serve their clients until they close them)."""
        now_ms = int(time.time() * 1000)
        with _unavailable():
            found = await self.redis.zrangebyscore(f"{PREFIX}:nodes", now_ms, "+inf")
        return sorted(_text(n) for n in found if isinstance(n, bytes | str))

    @contextlib.asynccontextmanager
    async def lock(self, name: str) -> AsyncIterator[None]:
        """A short cluster-wide lock (``SET NX PX``, deleted only by its holder): for
        work two processes must not do at once, such as defining the configured tables
        when several start together."""
        key, token = f"{PREFIX}:lock:{name}", f"{self.node}:{time.monotonic_ns()}"
        with _unavailable():
            async with asyncio.timeout(self.ttl * 4):
                while not await self.redis.set(key, token, nx=True, px=self.ttl_ms):
                    await asyncio.sleep(0.05)
        try:
            yield
        finally:
            with contextlib.suppress(RedisError, OSError):
                await self._release(keys=[key], args=[token], client=self.redis)

    async def leave(self) -> None:
        """Drop out of the member list at once (a clean stop)."""
        with contextlib.suppress(RedisError, OSError):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.zrem(f"{PREFIX}:nodes", self.node)
                pipe.zrem(f"{PREFIX}:draining", self.node)
                pipe.hdel(f"{PREFIX}:watching", self.node)
                await pipe.execute()

    # -- leases ------------------------------------------------------------------------
    async def acquire(self, table: str) -> bool:
        """Take the table's lease if nobody holds it."""
        with _unavailable():
            taken = await self.redis.set(lease_key(table), self.node, nx=True, px=self.ttl_ms)
        if taken:
            self._owners[table] = (self.node, time.monotonic())
        return bool(taken)

    async def release(self, table: str) -> None:
        """Give the lease back (only if it is still ours): the next owner need not wait
        for it to expire."""
        with contextlib.suppress(RedisError, OSError):
            await self._release(keys=[lease_key(table)], args=[self.node], client=self.redis)
        self._owners.pop(table, None)

    async def owner(self, table: str) -> str | None:
        """Who holds the table's lease: as the tick last read it (every
        :data:`OWNERS_EVERY` s) or a notice said (a change of owner is announced), and
        read from Redis only when older than that and a third of a lease (issue 36: a
        relayed command cost a ``GET`` in one relay in two, read at ``ttl/3``). A stale
        answer costs a retry, never a wrong write: a process that no longer owns the
        table refuses the command ``unavailable``, and its sender tries again."""
        cached = self._owners.get(table)
        if cached is not None and time.monotonic() - cached[1] < OWNERS_EVERY + self.ttl / 3:
            return cached[0]
        with _unavailable():
            found = await self.redis.get(lease_key(table))
        node = None if found is None else _text(found)
        self._owners[table] = (node, time.monotonic())
        return node

    async def owners(self, tables: Iterable[str]) -> dict[str, str | None]:
        """Who holds each table's lease now (one round trip)."""
        tables = list(tables)
        if not tables:
            return {}
        with _unavailable():
            found = await self.redis.mget([lease_key(t) for t in tables])
        owners = {t: None if v is None else _text(v) for t, v in zip(tables, found, strict=True)}
        now = time.monotonic()
        for table, node in owners.items():
            self._owners[table] = (node, now)
        return owners

    def known_owners(self, tables: Iterable[str]) -> dict[str, str | None]:
        """Who held each of ``tables`` when last read or heard (None: not known)."""
        return {t: self._owners[t][0] if t in self._owners else None for t in tables}

    def heard_owner(self, table: str, node: str | None) -> None:
        """A notice said who owns ``table`` now."""
        self._owners[table] = (node, time.monotonic())

    def heard_released(self, table: str, node: str) -> None:
        """A notice said ``node`` handed ``table`` over: unowned, unless another was
        heard taking it since (notices from two processes may come in either order)."""
        if table in self._owners and self._owners[table][0] in (node, None):
            self.heard_owner(table, None)

    # -- the lobby -----------------------------------------------------------------------
    async def put_summary(self, table: str, summary: dict[str, Any]) -> None:
        with _unavailable():
            await self.redis.hset(f"{PREFIX}:lobby", table, json.dumps(summary))

    async def drop_summary(self, table: str) -> None:
        with _unavailable():
            await self.redis.hdel(f"{PREFIX}:lobby", table)

    async def summaries(self) -> dict[str, dict[str, Any]]:
        with _unavailable():
            found = await self.redis.hgetall(f"{PREFIX}:lobby")
        return {_text(k): json.loads(v) for k, v in found.items()}


@contextlib.contextmanager
def _unavailable() -> Iterator[None]:
    """Redis' errors, as the store's :class:`StoreUnavailable`: the callers of
    :class:`Leases` never catch a driver's exception (docs/architecture.md §2)."""
    try:
        yield
    except TimeoutError:
        raise  # (an OSError, but a deadline of ours: a lock waited too long)
    except (RedisError, OSError) as exc:
        raise StoreUnavailable(f"Redis: {exc}") from exc


def _watchers(flat: list[bytes | str]) -> dict[str, dict[str, int]]:
    """Every member's watchers a table, from the tick's ``HGETALL`` (a member's line that
    does not read as counts is taken as none: placement must not fail on it)."""
    out: dict[str, dict[str, int]] = {}
    for node, line in zip(flat[::2], flat[1::2], strict=True):
        try:
            counts = json.loads(line)
            out[_text(node)] = {str(t): int(n) for t, n in counts.items() if int(n) > 0}
        except (ValueError, TypeError, AttributeError):
            log.warning("cluster: unreadable watchers of %s", _text(node))
    return out


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _monotonic(expiry_ms: bytes | str) -> float | None:
    """A heartbeat's expiry (wall-clock ms, as the tick's ``now`` writes it) on this
    process's monotonic clock (None: no expiry given)."""
    text = _text(expiry_ms)
    return time.monotonic() + float(text) / 1000 - time.time() if text else None


class Rebalancer:
    """The loop that keeps this process's tables where placement says: it beats, takes
    the leases of tables placed here, renews them, and hands over the ones placed
    elsewhere. ``own`` and ``disown`` are the croupier's (start / stop an actor)."""

    def __init__(
        self,
        leases: Leases,
        *,
        tables: Callable[[], Any],
        owned: Callable[[], set[str]],
        own: Callable[[str], Any],
        disown: Callable[[str, str], Any],
        interval: float | None = None,
    ) -> None:
        self.leases = leases
        self.tables = tables
        self.owned = owned
        self.own = own
        self.disown = disown
        #: How soon the loop looks again while anything is changing: a member joined or
        #: left, a table to take or give up, Redis not answering (as often as it looked
        #: before issue 36). At rest it looks when something can have changed (:meth:`_next_look`).
        self.interval = leases.ttl / 6 if interval is None else interval
        #: Whether the last step found everything in place (nothing taken, lost or given up,
        #: the same members): then the loop sleeps until :meth:`_next_look`.
        self.at_rest = False
        self._stepped = 0.0  # when the last step began (time.monotonic())
        self._failed_at = -1e9  # when a step last found Redis failing
        self.draining = False
        self.members: list[str] = []
        self._wake = asyncio.Event()
        # One step at a time: a drain's step (SIGTERM) comes while the loop's may be in
        # flight, and a step placed before the drain would take a table back the drain
        # had just handed over (it read "wanted" before the drain released it).
        self._stepping = asyncio.Lock()
        self.changes = 0  # tables taken or given up (for /metrics)
        #: Hears the live processes (draining ones too) when a member left.
        self.on_members: Callable[[set[str]], None] | None = None
        #: Hears a table this process handed over (placed elsewhere), its lease released.
        self.on_released: Callable[[str], None] | None = None

    def poke(self) -> None:
        """Look again now (a notice: tables created or closed, a member joined or left),
        at every table's owner too."""
        self._owners_read = -1e9
        self._notices += 1
        self._wake.set()

    stopping = False

    async def run(self) -> None:
        while not self.stopping:
            self._wake.clear()  # (before the step: a notice during it is looked at after it)
            try:
                await self.step()
            except asyncio.CancelledError:
                raise
            except StoreUnavailable as exc:  # (Redis' errors, translated by Leases)
                self.at_rest, self._failed_at = False, time.monotonic()
                log.warning("cluster: Redis unreachable (%s)", exc)
                await self._lose_all_if_expired()
            except Exception:
                self.at_rest = False
                log.exception("cluster: placement failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, self._next_look() - time.monotonic())):
                    await self._wake.wait()

    def _next_look(self) -> float:
        """When (``time.monotonic()``) the loop steps again, unless a notice comes first
        (issue 36: an idle process's ticks were most of its CPU). While anything changes,
        and for a lease and a sixth after Redis failed, :attr:`interval` after the last
        step began. At rest, at the earliest of: this process's
        renewal due (its leases and its heartbeat, a third of a lease after the last:
        two thirds of the lease still to run), and the moment another member's heartbeat
        expires (and :data:`EXPIRY_MARGIN`): before it nothing can be found gone, and a
        member that died is found gone, and its tables taken, no later than at a tick
        every :attr:`interval` (its heartbeat is longer by :data:`BEAT_EXTRA`). Placing by
        players, every OWNERS_EVERY at the latest, at rest or not (the members' lines are
        read with the owners: ``server.bus.audience`` counts on it)."""
        # After Redis failed (a restart, a Sentinel failover), leases and heartbeats may
        # lapse as it comes back, and tables move: as often as ever until they would have.
        recovering = time.monotonic() - self._failed_at < self.leases.beat_ms / 1000
        by_players = self.leases.watching is not None  # (the lines read every 2 s at most)
        if not self.at_rest or recovering:
            return self._stepped + (
                min(self.interval, OWNERS_EVERY) if by_players else self.interval
            )
        due = self._last_renewal + self.leases.ttl * RENEW_AFTER
        if by_players:
            due = min(due, self._owners_read + OWNERS_EVERY)
        expiry = self.leases.others_expire
        return due if expiry is None else min(due, expiry + EXPIRY_MARGIN)

    _last_renewal = 0.0

    async def _lose_all_if_expired(self) -> None:
        """Without Redis a lease cannot be renewed: once it may have expired, stop
        writing (the store's epoch would refuse us anyway)."""
        if time.monotonic() - self._last_renewal > self.leases.ttl:
            for table in list(self.owned()):
                await self.disown(table, "lease expired")

    _owners_read = -1e9
    _notices = 0  # notices heard (a step's fresh read does not answer one heard during it)

    async def step(self, ticked: Callable[[], None] | None = None) -> None:
        """Beat, renew, read the owners and act on placement: one at a time. ``ticked``
        hears that the tick was written (a drain: the draining mark), before any table
        is given up or taken."""
        async with self._stepping:
            await self._step(ticked)

    async def _step(self, ticked: Callable[[], None] | None = None) -> None:
        self.at_rest = False  # (until this step has found everything in place)
        self._stepped = time.monotonic()
        tables = await self.tables()
        # One call: beat, renew, and who holds every table (Leases.tick); the owners only
        # every OWNERS_EVERY seconds, or at once after a notice or a change of members
        # (in between, as last read: a table taken meanwhile refuses a second owner, the
        # lease's SET NX, and its new owner announces itself).
        now = time.monotonic()
        notices = self._notices
        fresh = now - self._owners_read >= OWNERS_EVERY - READ_SLACK
        # Renewed at the tick after a third of the lease passed (a tick's jitter allowed).
        renew = now - self._last_renewal >= self.leases.ttl * RENEW_AFTER - self.interval / 2
        # By players: this process's watchers published, everyone's read, with the owners.
        follow = self.leases.watching
        lost, members, current = await self.leases.tick(
            self.owned() if renew else (),
            tables if fresh else [],
            draining=self.draining,
            watching=follow() if follow is not None and fresh else None,
        )
        if ticked is not None:
            ticked()
        if fresh and self._notices == notices:  # (a notice meanwhile: read again)
            self._owners_read = now
        elif set(members) != set(self.members):
            self._owners_read = -1e9  # (read them at the next step)
            current = self.leases.known_owners(tables)
        else:
            current = self.leases.known_owners(tables)
        if renew:
            self._last_renewal = now
        await self._lose(lost)
        before = set(self.members)
        self.members = members
        if before - set(self.members) and self.on_members is not None:
            self.on_members(set(await self.leases.alive()))
        placed = placement(tables, self.members, current, self.leases.watched if follow else None)
        wanted = {t for t, n in placed.items() if n == self.leases.node}
        at_rest = not lost and set(self.members) == before and wanted == self.owned()
        for table in sorted(self.owned() - wanted):
            await self.disown(table, "placed elsewhere")
            await self.leases.release(table)
            if self.on_released is not None:
                self.on_released(table)
            self.changes += 1
            await self._keep_leases()
        for table in sorted(wanted - self.owned()):
            if await self.leases.acquire(table):
                try:
                    await self.own(table)
                    self.changes += 1
                except Exception:
                    log.exception("table %s: could not start here", table, extra={"table": table})
                    await self.leases.release(table)
                await self._keep_leases()
        self.at_rest = at_rest

    async def _keep_leases(self) -> None:
        """Renew this process's leases when due between a step's slow parts (each
        actor's stop or start awaits the store): a step that takes many tables on a
        loaded machine must not let the ones it already holds run out."""
        now = time.monotonic()
        if now - self._last_renewal < self.leases.ttl * RENEW_AFTER:
            return
        lost, _, _ = await self.leases.tick(self.owned(), [], draining=self.draining)
        self._last_renewal = now
        await self._lose(lost)

    async def _lose(self, lost: Iterable[str]) -> None:
        for table in lost:
            log.warning("table %s: lease lost; stopping here", table, extra={"table": table})
            await self.disown(table, "lease lost")
            self.changes += 1
