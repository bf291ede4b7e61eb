"""The gateway's limits over a cluster: every process counts the same connections and
spends the same buckets, kept in Redis (``server.gateway.limits`` is one process's).

:class:`SharedLimits` is :class:`~server.gateway.limits.Limits` with a Redis part, used when
the processes share a Redis (``--store redis://``):

- **Connections** per address and per player are counted in a hash per key
  (``chemmy:limits:conn:a:<address>`` / ``...:p:<player>``), one field per process. A
  script (:data:`_OPEN`) sums the fields of the *live* processes only (those whose
  heartbeat in ``chemmy:nodes`` has not expired, and this one) and adds one to this
  process's field unless the sum is at the cap; it deletes the fields of processes that
  left, so a killed process's connections stop counting once its heartbeat expires (a
  lease). A close takes one off (:data:`_CLOSE`). What a process writes besides is only
  what may be wrong: every :data:`RESYNC_EVERY` seconds it writes again the counts an
  open or a close failed to (a decrement lost, a call timed out), and all of them only
  when a Redis that restarted empty is seen (its marker, ``...:limits:node:<node>``, is
  gone) or every :data:`FULL_EVERY` seconds (which also renews the keys' expiry). A
  cluster at rest writes nothing but that marker's check.
- **Rates**: each shared bucket (an address's messages and hellos, a player's
  messages and deposits) is a token bucket in Redis (``chemmy:limits:rate:...``, :data:`_TAKE`:
  refilled by elapsed time on Redis's clock, hands out up to N tokens). A process keeps
  a local budget per bucket and takes tokens in chunks (:func:`chunk`, a tenth of the
  burst), asking for the next one in the background when the last is spent (issue 36:
  asked for when half of one was left, every ask brought half a chunk, and the asks were
  a tenth of a cluster's Redis commands). So a message costs no Redis round trip; it is
  decided at once (pings are decided inside the frame parser), and while a chunk is on
  its way the process goes up to one chunk into credit, paid back from what it gets (the
  asks of one turn of the loop go in one write on a connection of their own:
  ``server.connect.redis.Asks``). The cluster-wide rate is the configured one: what the processes spend together is at most
  the bucket's burst plus its rate over time, plus one chunk of credit per process.
- **Without Redis** (a call fails or times out) the process falls back to its local
  limits (the per-process ones, always checked as well) and tries Redis again after
  :data:`RETRY_AFTER` seconds; connections opened meanwhile are counted in Redis at the
  next resync.

Nothing here knows a rule of the game or sends a frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from redis.exceptions import RedisError

from server.bus.channels import PREFIX
from server.connect.redis import Asks, connect
from server.limits.local import Limits, deposits_refused
from server.protocol.errors import Refused

if TYPE_CHECKING:
    from server.limits.context import LimitSettings as ServerConfig

__all__ = ["FULL_EVERY", "RESYNC_EVERY", "RETRY_AFTER", "SharedLimits", "chunk"]

log = logging.getLogger("chemmy.limits")

#: Seconds between two writes of the connection counts that may be wrong in Redis.
RESYNC_EVERY: Final = 5.0
#: Seconds between two writes of all of this process's connection counts (they renew the
#: keys' expiry, and put right a drift nobody saw: a write a failover lost). Issue 36: at
#: 60 s, an ``HSET`` and a ``PEXPIRE`` of every unchanged count key a minute
#: (the issue's evening at 840 seated, a coup: ``PEXPIRE`` 60.4 → 48.3, ``HSET`` 181.6 → 172.0).
FULL_EVERY: Final = 300.0
#: The same after a Redis call failed (not sooner after the last: not a write of every
#: count at each resync while a slow Redis times calls out).
FULL_SOON: Final = 60.0
#: Seconds a process uses only its local limits after a Redis call failed.
RETRY_AFTER: Final = 1.0
#: Seconds a Redis call of the limits may take before it counts as failed.
REDIS_TIMEOUT: Final = 0.5
#: Seconds a local budget unused is kept (its tokens, at most a chunk, are then lost; a
#: budget spent on credit is kept until it is paid back, else a flooder who paused
#: would be forgiven a chunk each time).
BUDGET_IDLE: Final = 60.0

# KEYS[1] = the count hash, KEYS[2] = the members (chemmy:nodes, scored by when each
# heartbeat expires, ms). ARGV[1] = this node, ARGV[2] = the cap (0: none), ARGV[3] =
# the keys' expiry (ms). Sums the live nodes' fields (deleting the others'); below the
# cap adds one to this node's field: 1, else 0.
_OPEN = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local fields = redis.call('HGETALL', KEYS[1])
local total = 0
for i = 1, #fields, 2 do
  local node, n = fields[i], tonumber(fields[i + 1])
  local alive = node == ARGV[1]
  if not alive then
    local until_ms = redis.call('ZSCORE', KEYS[2], node)
    alive = until_ms and tonumber(until_ms) >= now_ms
  end
  if alive then total = total + n else redis.call('HDEL', KEYS[1], node) end
end
local cap = tonumber(ARGV[2])
if cap > 0 and total >= cap then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""
# KEYS[1] = the count hash; ARGV[1] = this node. One connection fewer.
_CLOSE = """
local n = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if n <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
return n
"""
#: How long a shared bucket outlives the moment it would be full again (ms): its expiry
#: is set again only once that moment passes it (:data:`_TAKE`).
TAKE_MARGIN: Final = 30_000
# KEYS[1] = the bucket; ARGV[1] = rate (tokens a second), ARGV[2] = burst, ARGV[3] = how
# many wanted. Refills by the time elapsed (Redis's clock), hands out as many whole
# tokens as it has, up to the number wanted: how many. The bucket lives at least until
# it would be full again (then it is as good as gone). Its expiry is set only when that
# moment passes the one it was last set to (``x``, :data:`TAKE_MARGIN` ms beyond what
# was needed), or when the last ask was not one of these (``w``, the stamp ``s`` of the
# last ask that kept ``x``: a process of before, which set the expiry itself): issue 36,
# a ``PEXPIRE`` an ask was a fifth of the asks' commands.
_TAKE = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + tonumber(now[2]) / 1000
local rate, burst, want = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local saved = redis.call('HMGET', KEYS[1], 't', 's', 'x', 'w')
local tokens, stamp = tonumber(saved[1]), tonumber(saved[2])
if tokens == nil or stamp == nil then tokens, stamp = burst, now_ms end
tokens = math.min(burst, tokens + math.max(0, now_ms - stamp) * rate / 1000)
local got = math.max(0, math.min(want, math.floor(tokens)))
tokens = tokens - got
local s = tostring(now_ms)
local full = now_ms + math.ceil((burst - tokens) / rate * 1000) + 1000
local until_ms = tonumber(saved[3])
if until_ms and saved[4] == saved[2] and until_ms >= full then
  redis.call('HSET', KEYS[1], 't', tostring(tokens), 's', s, 'w', s)
else
  until_ms = full + TAKE_MARGIN
  redis.call('HSET', KEYS[1], 't', tostring(tokens), 's', s, 'w', s, 'x', tostring(until_ms))
  redis.call('PEXPIRE', KEYS[1], math.ceil(until_ms - now_ms))
end
return got
""".replace("TAKE_MARGIN", str(TAKE_MARGIN))


def chunk(burst: int) -> int:
    """How many tokens a process takes from a shared bucket at once: a tenth of the
    burst (at least one)."""
    return max(1, burst // 10)


@dataclass(slots=True)
class _Budget:
    """This process's share of one shared bucket."""

    key: str
    rate: float
    burst: int
    chunk: int
    #: Tokens taken from the shared bucket, not spent yet (below 0: spent on credit).
    tokens: int = 0
    asking: bool = False
    quiet_until: float = 0.0  # the shared bucket was dry: not asked again before this
    used: float = 0.0

    def allows(self) -> bool:
        return self.tokens > -self.chunk


class SharedLimits(Limits):
    """:class:`Limits` whose caps and buckets hold for the whole cluster (see the module
    docstring). ``url`` is the cluster's Redis, ``node`` this process's name in it."""

    def __init__(
        self,
        config: ServerConfig,
        url: str,
        node: str,
        clock: Callable[[], float] = time.monotonic,
        *,
        lease: float = 3.0,
    ) -> None:
        super().__init__(config, clock)
        self.node = node
        self.lease = lease
        self.redis = connect(
            url, socket_connect_timeout=REDIS_TIMEOUT, socket_timeout=REDIS_TIMEOUT
        )
        self._open = self.redis.register_script(_OPEN)
        self._close = self.redis.register_script(_CLOSE)
        self._take = self.redis.register_script(_TAKE)
        #: The buckets' asks, on a connection of their own (those of one turn in one write).
        self._asks = Asks(self.redis)
        self._budgets: dict[str, _Budget] = {}
        self._counted: set[str] = set()  # count keys with a field of this node
        #: Count keys whose field an open or a close may have left wrong (a failed or
        #: cancelled call): the next resync writes them.
        self._dirty: set[str] = set()
        self._full_at = 0.0  # when all the counts were last written (monotonic)
        self._full_fallbacks = 0  # the calls that had failed when that write began
        self._down_until = 0.0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._resync: asyncio.Task[None] | None = None
        self.fallbacks = 0  # Redis calls that failed (the local limits decided)

    # -- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        if self._resync is None:
            self._resync = asyncio.create_task(self._resync_loop())

    async def close(self) -> None:
        tasks = [t for t in (self._resync, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._resync = None
        await self._asks.close()
        await self.redis.aclose()

    @property
    def shared(self) -> bool:
        """Whether Redis is used now (else the local limits alone decide)."""
        return self.clock() >= self._down_until

    def _failed(self, exc: BaseException) -> None:
        if self.shared:
            log.warning("limits: Redis unreachable (%s); local limits for now", exc)
        self.fallbacks += 1
        self._down_until = self.clock() + RETRY_AFTER

    # -- connections ------------------------------------------------------------------
    async def open_connection(self, address: str) -> bool:
        if not self.connect(address):  # this process alone is at the cap already
            return False
        cap = self.config.max_connections_per_address
        try:
            counted = await self._count(_conn_key("a", address), cap)
        except BaseException:  # cancelled: not opened (the next resync writes the count)
            self.disconnect(address, shared=False)
            raise
        if not counted:
            self.disconnect(address, shared=False)
        return counted

    def disconnect(self, address: str, *, shared: bool = True) -> None:
        super().disconnect(address)
        if shared:
            self._uncount(_conn_key("a", address))

    async def open_player(self, player: str) -> None:
        self.sign_in(player)  # this process's count (refuses at its own cap)
        cap = self.config.max_connections_per_player
        try:
            counted = await self._count(_conn_key("p", player), cap)
        except BaseException:  # cancelled: not signed in (the next resync writes the count)
            super().sign_out(player)
            raise
        if not counted:
            super().sign_out(player)
            raise _refuse_player(cap)

    def sign_out(self, player: str) -> None:
        super().sign_out(player)
        self._uncount(_conn_key("p", player))

    async def _count(self, key: str, cap: int) -> bool:
        """Count one more connection of ``key`` cluster-wide: False at the cap. Without
        Redis, True (the local cap has decided; the next resync counts it). No cap: not
        counted at all."""
        if not cap or not self.shared:
            return True
        self._counted.add(key)  # from here the resync writes its count, whatever comes
        self._dirty.add(key)  # (until the script has answered: it may have run or not)
        try:
            async with asyncio.timeout(REDIS_TIMEOUT * 2):
                opened = await self._open(
                    keys=[key, f"{PREFIX}:nodes"], args=[self.node, cap, self._expiry_ms]
                )
        except (RedisError, OSError, TimeoutError) as exc:
            self._failed(exc)
            return True
        self._dirty.discard(key)
        return bool(opened)

    def _uncount(self, key: str) -> None:
        if key in self._counted and self.shared:
            self._spawn(self._uncount_now(key))

    async def _uncount_now(self, key: str) -> None:
        self._dirty.add(key)
        try:
            await self._close(keys=[key], args=[self.node])
        except (RedisError, OSError, TimeoutError) as exc:
            self._failed(exc)  # the next resync writes the right count
        else:
            self._dirty.discard(key)

    @property
    def _expiry_ms(self) -> int:
        return int(max(FULL_EVERY * 3, self.lease * 4) * 1000)

    @property
    def _marker(self) -> str:
        """Set at each full write: gone, the Redis lost what this process wrote."""
        return f"{PREFIX}:limits:node:{self.node}"

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(RESYNC_EVERY)
            try:
                await self.resync(full=self.full_due())
            except (RedisError, OSError, TimeoutError) as exc:
                self._failed(exc)

    def full_due(self) -> bool:
        """Whether the next resync writes all the counts: :data:`FULL_EVERY` after the last
        such write, or :data:`FULL_SOON` after it once a call failed since (a failover may
        have lost writes it acknowledged: a drift nobody sees)."""
        failed = self.fallbacks != self._full_fallbacks
        return self.clock() - self._full_at >= (FULL_SOON if failed else FULL_EVERY)

    async def resync(self, *, full: bool = False) -> None:
        """Write this process's connection counts to Redis as it holds them: those an
        open or a close may have left wrong, or (``full``, or when Redis lost this
        process's marker) all of them, with their expiry renewed."""
        if not full and self._counted:
            async with asyncio.timeout(REDIS_TIMEOUT * 2):
                full = not await self.redis.exists(self._marker)
        counts = self._counts()
        if full:
            keys = {k for k, n in counts.items() if n > 0} | self._counted
        else:
            keys = set(self._dirty)
        if not keys and not full:
            return
        dirty, failures = set(self._dirty), self.fallbacks
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in sorted(keys):
                n = counts.get(key, 0)
                if n > 0:
                    pipe.hset(key, self.node, n)
                    pipe.pexpire(key, self._expiry_ms)
                else:
                    pipe.hdel(key, self.node)
            if full:
                pipe.set(self._marker, 1, px=self._expiry_ms)
            async with asyncio.timeout(REDIS_TIMEOUT * 4):
                await pipe.execute()
        if full:  # (a call that failed meanwhile still asks for the next one soon)
            self._full_at, self._full_fallbacks = self.clock(), failures
        # Written as held: clean, unless an open or a close went wrong again meanwhile.
        self._dirty -= dirty & keys
        now = self._counts()  # a key still at 0 after the write has no field any more
        self._counted -= {k for k in keys if not counts.get(k, 0) and not now.get(k, 0)}

    def _counts(self) -> dict[str, int]:
        """This process's connections per count key."""
        config, counts = self.config, {}
        if config.max_connections_per_address:
            counts = {_conn_key("a", a): p.connections for a, p in self.addresses.items()}
        if config.max_connections_per_player:
            counts.update({_conn_key("p", k): p.connections for k, p in self.players.items()})
        return counts

    # -- rates ------------------------------------------------------------------------
    def take(self, address: str, player: str | None) -> bool:
        budgets = [self._budget("m:a", address, self._address_rate)]
        if player is not None:
            budgets.append(self._budget("m:p", player, self._player_rate))
        live = [b for b in budgets if b is not None]
        return self._spend(live, lambda: Limits.take(self, address, player))

    def take_hello(self, address: str) -> bool:
        config = self.config
        budget = self._budget("h:a", address, (config.hello_rate_limit, config.hello_rate_burst))
        return self._spend(
            [] if budget is None else [budget],
            lambda: Limits.take_hello(self, address),
        )

    def deposit(self, player: str) -> None:
        per_day = self.config.deposits_per_day
        if not per_day:
            return
        budget = self._budget("d:p", player, (per_day / 86_400, self.config.deposit_burst))
        assert budget is not None

        def local() -> bool:
            Limits.deposit(self, player)  # raises rate_limited
            return True

        if not self._spend([budget], local):
            raise deposits_refused(per_day)

    def _spend(self, budgets: list[_Budget], local: Callable[[], bool]) -> bool:
        """One token of each shared budget and of the local buckets (``local``), or
        none: whether all allow it."""
        if not self.shared:
            return local()
        now = self.clock()
        if not all(budget.allows() for budget in budgets):
            for budget in budgets:
                self._ask(budget, now)
            return False
        if not local():
            return False
        for budget in budgets:
            budget.tokens -= 1
            budget.used = now
            if budget.tokens < 1:  # (spent: the next chunk comes while on credit)
                self._ask(budget, now)
        return True

    def _budget(self, kind: str, who: str, rate: tuple[float, int]) -> _Budget | None:
        if rate[0] <= 0:
            return None
        key = f"{PREFIX}:limits:rate:{kind}:{who}"
        budget = self._budgets.get(key)
        if budget is None:
            budget = _Budget(key, rate[0], rate[1], chunk(rate[1]), used=self.clock())
            self._budgets[key] = budget
        return budget

    def _ask(self, budget: _Budget, now: float | None = None) -> None:
        """Ask the shared bucket for a chunk (in the background), unless already asking
        or it was dry a moment ago."""
        now = self.clock() if now is None else now
        want = budget.chunk - budget.tokens
        if budget.asking or now < budget.quiet_until or want <= 0:
            return
        budget.asking = True
        self._spawn(self._ask_now(budget, want))

    async def _ask_now(self, budget: _Budget, want: int) -> None:
        got = 0
        try:
            ask = ["EVALSHA", self._take.sha, "1", budget.key, str(budget.rate)]
            async with asyncio.timeout(REDIS_TIMEOUT * 2):
                got = int(await self._asks.ask([*ask, str(budget.burst), str(want)], _TAKE))
        except (RedisError, OSError, TimeoutError) as exc:
            self._failed(exc)
        finally:
            budget.asking = False
        budget.tokens += got
        if got < want:  # dry: the missing tokens come back at the bucket's rate
            budget.quiet_until = self.clock() + min(1.0, max(0.01, (want - got) / budget.rate))

    def _spawn(self, job: Any) -> None:
        task = asyncio.get_running_loop().create_task(job)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def sweep(self, now: float | None = None) -> None:
        now = self.clock() if now is None else now
        super().sweep(now)
        for key, budget in list(self._budgets.items()):
            if budget.asking or now - budget.used <= BUDGET_IDLE:
                continue
            if budget.tokens >= 0:
                del self._budgets[key]  # its unspent tokens are lost: stricter, not looser
            elif self.shared:
                self._ask(budget, now)  # spent on credit: kept until paid back


def _conn_key(kind: str, who: str) -> str:
    return f"{PREFIX}:limits:conn:{kind}:{who}"


def _refuse_player(cap: int) -> Refused:
    return Refused(
        "too_many_connections",
        f"this player already has {cap} open connections, the most allowed; close one",
    )
