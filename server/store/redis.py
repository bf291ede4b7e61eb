"""A :class:`~server.store.base.Store` in Redis, which many server processes can share.

Built on ``redis.asyncio``. Every write of money or of a table is **one Lua script** (a
commit, a welcome, an expiry, a wallet call's progress, a play session's change), so it
is atomic (a player's limits and restriction are merged under ``WATCH`` instead, and
retried when the hash changed meanwhile): Redis runs a script alone, and each
script checks everything first (ledger keys, balances, the table's epoch) and answers a
coded error reply (``KEYCONFLICT``, ``OVERDRAWN``, ``STALEEPOCH``, ``RANGE``) before it
writes anything, because Redis does not roll back a script that fails half way. Reads
are plain commands.

Group commit (issue 23): the commits started in one turn of the event loop go out
together, in one pipeline (not a transaction: each ``EVALSHA`` is its own atomic script,
and one's error reply is only its own) and, with ``min_replicas``, one ``WAIT`` for them
all; each caller is answered its own result or refusal once the pipeline (and the
``WAIT``) answered. A lone commit is sent at the next turn of the loop, alone.

Balances are checked inside the script, where they live, so no process needs a copy of
anyone's balance to keep it from going negative (issue 10). Amounts and balances stay
within ±(2**53 - 1): Lua's numbers are doubles, exact up to there, and the arithmetic
itself is Redis's (``HINCRBY``, 64-bit).

The keys (prefix ``chemmy:`` by default) are listed in docs/architecture.md §10: each
table's own keys share the hash tag ``{<table>}``; money, players and round records are
global, so a commit touches two slots (see the docs for why that is fine on one Redis
and how it would shard).

Errors are translated at the boundary: a Redis that cannot be reached (down, loading,
out of memory, read-only, a timeout) is :class:`StoreUnavailable`; anything else Redis
refuses is :class:`StoreError`. The client retries a dropped connection a few times with
jittered exponential backoff, then gives up for that call; the next call reconnects by
itself, so a store object survives Redis restarting. A retried commit whose first
attempt did run is harmless: entries are skipped by key, events by ``seq`` and wallet
calls by transaction id.

It must never ``FLUSH`` or ``KEYS``-scan a database (it may share one), never run a
script that writes after an error reply, never log an entry's contents, and never
show the URL's password.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Final

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.connect.redis import UNAVAILABLE_CODES, connect, unavailable
from server.ledger.accounts import Entry, player_account
from server.ledger.rules import (
    FLOW_NAMES,
    LUA_RULES,
    OUTCOME_KINDS,
    check_entry,
    entry_flow,
    flow_day,
    stake_account,
    welcome_entry,
)
from server.store.base import (
    EVENT_RETENTION,
    HISTORY_LIMIT,
    AckRule,
    BetReads,
    CommitResult,
    CurrentRule,
    KeyConflict,
    LimitGuard,
    LimitPassed,
    LimitsRule,
    OutOfRange,
    Overdrawn,
    PlayRule,
    RestrictionRule,
    RoundIndex,
    RoundQuery,
    StaleEpoch,
    StoreError,
    StoreUnavailable,
    TableRow,
)
from server.store.calls import (
    check_due_kinds,
    check_due_time,
    check_operator_call,
    check_wallet_changes,
    merge_wallet_call,
    operator_call_record,
    wallet_call_matches,
    wallet_filters,
    wallet_limit,
    wallet_totals,
)
from server.store.plan import plan_commit
from server.store.players import (
    check_currency,
    check_day,
    check_limit_changes,
    check_play_open,
    check_play_time,
    flow_buckets,
    guard_measure,
    play_baseline,
)
from server.store.records import (
    audit_report,
    check_span,
    dump_json,
    follows,
    hold_problems,
    index_record,
    own_copy,
    record_time,
    round_query,
)

__all__ = ["RedisStore"]

#: How often a call retries a dropped connection before it raises StoreUnavailable,
#: and the backoff between tries (seconds): about a second in all.
RETRIES: Final = 4
BACKOFF_BASE: Final = 0.05
BACKOFF_CAP: Final = 0.5

#: How long a write waits for ``min_replicas`` replicas to acknowledge it (``WAIT``).
WAIT_TIMEOUT_MS: Final = 1000

#: The most commits one group (one pipeline, one ``WAIT``) takes.
GROUP_MAX: Final = 64

#: Reply prefixes that mean "Redis cannot do it now", not "refused".
_UNAVAILABLE_REPLIES: Final = UNAVAILABLE_CODES

# -- the scripts ----------------------------------------------------------------------
# ARGV[1] is always the key prefix. Lua numbers are doubles: amounts are compared as
# numbers (exact below 2**53) but always written from their decimal strings.

_LUA_COMMON: Final = (
    r"""
local P = ARGV[1]
"""
    + LUA_RULES
    + r"""-- Calls over many arguments a chunk at a time (Lua's unpack has a limit).
local CHUNK = 256
local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, CHUNK do
    local part = {}
    for j = i, math.min(i + CHUNK - 1, #fields) do part[#part + 1] = fields[j] end
    local got = redis.call('HMGET', key, unpack(part))
    for k, f in ipairs(part) do out[f] = got[k] end
  end
  return out
end
local function call_pairs(cmd, key, args)
  for i = 1, #args, 2 * CHUNK do
    local part = {}
    for j = i, math.min(i + 2 * CHUNK - 1, #args) do part[#part + 1] = args[j] end
    redis.call(cmd, key, unpack(part))
  end
end
-- Check entries (key, src, dst, amount string, packed) in order; return the new ones
-- or an error reply. Nothing is written. The stored entries and balances they need are
-- read in one HMGET each (not one HGET an entry and an account).
local function check_entries(entries)
  local keys, accounts, listed = {}, {}, {}
  for _, e in ipairs(entries) do
    keys[#keys + 1] = e.key
    for _, a in ipairs({e.src, e.dst}) do
      if not listed[a] then listed[a] = true; accounts[#accounts + 1] = a end
    end
  end
  local stored, kept = hmget(P .. 'entries', keys), hmget(P .. 'balances', accounts)
  local staged, fresh, new = {}, {}, {}
  local function balance(a)
    local v = staged[a]
    if v == nil then v = tonumber(kept[a] or '0') end
    return v
  end
  for _, e in ipairs(entries) do
    local old = fresh[e.key] or stored[e.key]
    if old then
      if old ~= e.packed then
        return nil, redis.error_reply('KEYCONFLICT ledger key ' .. e.key .. ' holds a different entry')
      end
    else
      local amount = tonumber(e.amount)
      local s, d = balance(e.src) - amount, balance(e.dst) + amount
      if s < 0 and guarded(e.src) then
        return nil, redis.error_reply('OVERDRAWN ' .. e.src .. ' would be overdrawn by ' .. e.amount)
      end
      if s < -MAX or d > MAX then
        return nil, redis.error_reply('RANGE a balance would leave the range of 2**53')
      end
      staged[e.src], staged[e.dst] = s, d
      fresh[e.key] = e.packed
      new[#new + 1] = e
    end
  end
  return new
end
-- Sums of signed amounts (decimal strings), exact: a key's amounts are added as numbers
-- while its running sum stays within 2**53 (exact in a double), else each is written
-- on its own (one HINCRBY each, from its string).
local function new_sums() return {order = {}, sum = {}, parts = {}, big = {}} end
local function add_to(sums, k, amount, negative)
  if sums.sum[k] == nil then
    sums.sum[k], sums.parts[k] = 0, {}
    sums.order[#sums.order + 1] = k
  end
  local parts = sums.parts[k]
  if negative then
    parts[#parts + 1] = '-' .. amount
    sums.sum[k] = sums.sum[k] - tonumber(amount)
  else
    parts[#parts + 1] = amount
    sums.sum[k] = sums.sum[k] + tonumber(amount)
  end
  if math.abs(sums.sum[k]) > MAX then sums.big[k] = true end
end
-- HINCRBY each sum (keyed k) into hash key_of(k), field field_of(k); a zero sum is not
-- written unless ``always``.
local function write_sums(sums, key_of, field_of, always)
  for _, k in ipairs(sums.order) do
    if sums.big[k] then
      for _, part in ipairs(sums.parts[k]) do redis.call('HINCRBY', key_of(k), field_of(k), part) end
    elseif sums.sum[k] ~= 0 or always then
      redis.call('HINCRBY', key_of(k), field_of(k), string.format('%.0f', sums.sum[k]))
    end
  end
end
-- Refuse (an error reply) when the new entries (from check_entries) raise a guarded
-- usage past its cap: the guard's flow ('s', 'n', 'd'; opposite '1' for a loss, whose
-- usage is max(0, -net)) summed over the player's days >= since, after the entries.
local function hold_guards(guards, new)
  for _, g in ipairs(guards) do
    local added = 0
    for _, e in ipairs(new) do
      if e.player == g.player then added = added + tonumber(e[g.flow]) * tonumber(e.amount) end
    end
    local sign = 1
    if g.opposite == '1' then sign = -1 end
    if added * sign > 0 then
      local total = added
      local fields = redis.call('HGETALL', P .. 'flows:' .. g.player)
      for k = 1, #fields, 2 do
        local f = fields[k]
        if string.sub(f, 12) == g.flow and string.sub(f, 1, 10) >= g.since then
          total = total + tonumber(fields[k + 1])
        end
      end
      local function usage(v)
        if v * sign < 0 then return 0 end
        return v * sign
      end
      if usage(total) > tonumber(g.cap) then
        local left = tonumber(g.cap) - usage(total - added)
        if left < 0 then left = 0 end
        return redis.error_reply('LIMIT ' .. g.kind .. ' ' .. g.cap .. ' ' .. string.format('%.0f', left))
      end
    end
  end
  return nil
end
-- Write the new entries (from check_entries) and move their balances; with a day, add
-- their flows to their players' fields '<day>:s', '<day>:n', '<day>:d' (a player's
-- first flow of a day, no '<day>:n' yet, first drops their fields of days < cutoff).
-- Grouped: one HSET of the entries, one ZADD of the ledger and one per account, one
-- HINCRBY per account and per flow a commit moves (not one of each per entry).
local function post(new, day, cutoff)
  if #new == 0 then return end
  local first = redis.call('INCRBY', P .. 'ledger_seq', #new) - #new
  local bodies, ledger, by_account, accounts = {}, {}, {}, {}
  local moves, flows = new_sums(), new_sums()
  for n, e in ipairs(new) do
    local seq = first + n
    bodies[#bodies + 1] = e.key; bodies[#bodies + 1] = e.packed
    ledger[#ledger + 1] = seq; ledger[#ledger + 1] = e.key
    for _, a in ipairs({e.src, e.dst}) do
      if not by_account[a] then by_account[a] = {}; accounts[#accounts + 1] = a end
      local z = by_account[a]
      z[#z + 1] = seq; z[#z + 1] = e.key
    end
    add_to(moves, e.src, e.amount, true)
    add_to(moves, e.dst, e.amount, false)
    if day and e.player and e.player ~= '' then
      for _, x in ipairs({{'s', e.s}, {'n', e.n}, {'d', e.d}}) do
        if x[2] ~= '0' then add_to(flows, e.player .. '\n' .. x[1], e.amount, x[2] == '-1') end
      end
    end
  end
  call_pairs('HSET', P .. 'entries', bodies)
  call_pairs('ZADD', P .. 'ledger', ledger)
  for _, a in ipairs(accounts) do call_pairs('ZADD', P .. 'acct:' .. a, by_account[a]) end
  write_sums(moves, function() return P .. 'balances' end, function(a) return a end, true)
  if #flows.order == 0 then return end
  local pruned = {}
  for _, k in ipairs(flows.order) do
    local player = string.match(k, '^(.*)\n')
    if not pruned[player] then
      pruned[player] = true
      local F = P .. 'flows:' .. player
      if redis.call('HEXISTS', F, day .. ':n') == 0 then
        for _, f in ipairs(redis.call('HKEYS', F)) do
          if string.sub(f, 1, 10) < cutoff then redis.call('HDEL', F, f) end
        end
        redis.call('HSET', F, day .. ':n', 0)
      end
    end
  end
  write_sums(
    flows,
    function(k) return P .. 'flows:' .. string.match(k, '^(.*)\n') end,
    function(k) return day .. ':' .. string.match(k, '\n(.)$') end,
    false
  )
end
"""
)

_LUA_COMMIT: Final = (
    _LUA_COMMON
    + r"""
local day, cutoff = ARGV[2], ARGV[3]
local i = 4
local function nxt() local v = ARGV[i]; i = i + 1; return v end
local entries = {}
for n = 1, tonumber(nxt()) do
  entries[n] = {key = nxt(), src = nxt(), dst = nxt(), amount = nxt(), packed = nxt(),
                player = nxt(), s = nxt(), n = nxt(), d = nxt()}
end
local tbl = nil
if nxt() == '1' then
  tbl = {id = nxt(), config = nxt(), state = nxt(), none = nxt() == '1', seq = nxt(),
         closed = nxt(), epoch = nxt(), retention = nxt(), drop = nxt() == '1', parts = {}}
  for n = 1, tonumber(nxt()) do tbl.parts[n] = {key = nxt(), keep = nxt() == '1', body = nxt()} end
end
local events = {}
for n = 1, tonumber(nxt()) do events[n] = {seq = nxt(), body = nxt()} end
local records = {}
for n = 1, tonumber(nxt()) do
  if nxt() == 'r' then
    local r = {round = true, rid = nxt(), body = nxt(), players_json = nxt(), table = nxt(),
               time = nxt(), players = {}}
    for m = 1, tonumber(nxt()) do r.players[m] = nxt() end
    records[n] = r
  else
    records[n] = {round = false, table = nxt(), shoe_no = nxt(), revealed = nxt(), body = nxt()}
  end
end
local keep = tonumber(nxt())
local report = {}
for n = 1, tonumber(nxt()) do report[n] = nxt() end
local calls = {}
for n = 1, tonumber(nxt()) do
  calls[n] = {txn = nxt(), data = nxt(), due = nxt() == '1', next_at = nxt()}
end
local guards = {}
for n = 1, tonumber(nxt()) do
  guards[n] = {player = nxt(), kind = nxt(), flow = nxt(), opposite = nxt(), cap = nxt(),
               since = nxt()}
end

-- Check everything first: the epoch (fencing), then the ledger.
local T = nil
local stored_epoch = 0
if tbl then
  T = P .. '{' .. tbl.id .. '}:'
  stored_epoch = tonumber(redis.call('GET', T .. 'epoch') or '0')
  if tonumber(tbl.epoch) < stored_epoch then
    return redis.error_reply('STALEEPOCH table ' .. tbl.id .. ': epoch ' .. tbl.epoch .. ' < ' .. stored_epoch)
  end
end
local new, err = check_entries(entries)
if err then return err end
err = hold_guards(guards, new)
if err then return err end

-- Then write.
post(new, day, cutoff)
if tbl then
  if tonumber(tbl.epoch) > stored_epoch then redis.call('SET', T .. 'epoch', tbl.epoch) end
  redis.call('HSET', T .. 'row', 'config', tbl.config, 'state', tbl.state, 'seq', tbl.seq,
             'closed', tbl.closed)
  -- The open tables, in the order they were first saved (a closed one leaves the list).
  if tbl.closed == '1' then
    redis.call('ZREM', P .. 'tables', tbl.id)
  elseif not redis.call('ZSCORE', P .. 'tables', tbl.id) then
    redis.call('ZADD', P .. 'tables', redis.call('INCR', P .. 'table_order'), tbl.id)
  end
  -- Its parts (bettors without a seat): all dropped for a table created or closed.
  if tbl.drop then redis.call('DEL', T .. 'parts') end
  for _, part in ipairs(tbl.parts) do
    if part.keep then
      redis.call('HSET', T .. 'parts', part.key, part.body)
    else
      redis.call('HDEL', T .. 'parts', part.key)
    end
  end
  local stream = T .. 'events'
  if tbl.none then redis.call('DEL', stream) end
  -- An event at or below the last one stored (a retried step; one pruned since too) is
  -- refused by XADD itself (its id not above the stream's last): skipped. (Issue 36: the
  -- stream's top was read first, an XREVRANGE a commit.)
  for _, ev in ipairs(events) do
    local added = redis.pcall('XADD', stream, 'MAXLEN', tbl.retention, ev.seq .. '-1', 'e', ev.body)
    if type(added) == 'table' and added.err and not string.find(added.err, 'equal or smaller', 1, true) then
      return added
    end
  end
end
for _, r in ipairs(records) do
  if r.round then
    local index = redis.call('HGET', P .. 'round_index', r.rid)
    local seq
    if index then
      local space = string.find(index, ' ', 1, true)
      seq = string.sub(index, 1, space - 1)
      for _, p in ipairs(cjson.decode(string.sub(index, space + 1))) do
        redis.call('ZREM', P .. 'played:' .. p, r.rid)
      end
      local old = redis.call('HGET', P .. 'rounds', r.rid)
      if old then
        local was = cjson.decode(old).table
        if was ~= r.table then redis.call('ZREM', P .. 'round_times:' .. was, r.rid) end
      end
    else
      seq = tostring(redis.call('INCR', P .. 'round_seq'))
    end
    redis.call('HSET', P .. 'rounds', r.rid, r.body)
    redis.call('HSET', P .. 'round_index', r.rid, seq .. ' ' .. r.players_json)
    redis.call('ZADD', P .. 'round_times', r.time, r.rid)
    redis.call('ZADD', P .. 'round_times:' .. r.table, r.time, r.rid)
    for _, p in ipairs(r.players) do
      local played = P .. 'played:' .. p
      redis.call('ZADD', played, seq, r.rid)
      redis.call('ZREMRANGEBYRANK', played, 0, -(keep + 1))
    end
  else
    local S = P .. '{' .. r.table .. '}:'
    redis.call('HSET', S .. 'shoes', r.shoe_no, r.body)
    redis.call('ZADD', S .. 'shoe_nos', r.shoe_no, r.shoe_no)
    if r.revealed == '1' then
      redis.call('ZADD', S .. 'revealed', r.shoe_no, r.shoe_no)
    else
      redis.call('ZREM', S .. 'revealed', r.shoe_no)
    end
  end
end
-- Wallet calls: insert if absent (a stored transaction id is kept as it is).
local W = P .. 'wcall:'
for _, c in ipairs(calls) do
  if redis.call('HEXISTS', W .. 'data', c.txn) == 0 then
    local seq = redis.call('INCR', W .. 'seq')
    redis.call('HSET', W .. 'data', c.txn, seq .. ' ' .. c.data)
    redis.call('ZADD', W .. 'order', seq, c.txn)
    if c.due then redis.call('ZADD', W .. 'due', c.next_at, c.txn) end
  end
end
redis.call('INCR', P .. 'commits')
local out = {#new}
for _, a in ipairs(report) do
  out[#out + 1] = redis.call('HGET', P .. 'balances', a) or '0'
end
return out
"""
)

# ARGV: prefix, player id, name, account, welcome key, packed, amount ('0': none),
# guest ('1'/'0'), now.
_LUA_ENSURE_PLAYER: Final = (
    _LUA_COMMON
    + r"""
local pid, name, account, key, packed, amount, guest, now =
  ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
if redis.call('HEXISTS', P .. 'players', pid) == 0 then
  redis.call('HSETNX', P .. 'balances', account, '0')
  if amount ~= '0' then
    local new, err = check_entries({{key = key, src = CASHIER, dst = account,
                                     amount = amount, packed = packed}})
    if err then return err end
    post(new)
  end
  redis.call('INCR', P .. 'commits')
end
redis.call('HSET', P .. 'players', pid, name)
if guest == '1' then
  redis.call('ZADD', P .. 'guests', now, pid)
else
  redis.call('ZREM', P .. 'guests', pid)
end
return redis.call('HGET', P .. 'balances', account) or '0'
"""
)

# ARGV: prefix, cutoff, player ids... Expires each idle guest whose only entry is their
# untouched welcome; a guest with more is dropped from the candidates for good (the
# ledger only grows) until their next hello.
_LUA_EXPIRE: Final = (
    _LUA_COMMON
    + r"""
local cutoff = tonumber(ARGV[2])
local gone = 0
for n = 3, #ARGV do
  local pid = ARGV[n]
  local seen = redis.call('ZSCORE', P .. 'guests', pid)
  if seen and tonumber(seen) <= cutoff then
    local account = PLAYER .. pid
    local index = P .. 'acct:' .. account
    local key = WELCOME .. pid
    local count = redis.call('ZCARD', index)
    local balance = redis.call('HGET', P .. 'balances', account) or '0'
    local ok = count == 0 and balance == '0'
    if count == 1 and redis.call('ZRANGE', index, 0, 0)[1] == key then
      local e = cjson.decode(redis.call('HGET', P .. 'entries', key))
      ok = e[1] == CASHIER and e[2] == account and e[4] == 'welcome'
           and tonumber(balance) == e[3]
    end
    redis.call('ZREM', P .. 'guests', pid)
    if ok then
      if count == 1 then
        redis.call('HDEL', P .. 'entries', key)
        redis.call('ZREM', P .. 'ledger', key)
        redis.call('ZREM', P .. 'acct:' .. CASHIER, key)
        redis.call('DEL', index)
        redis.call('HINCRBY', P .. 'balances', CASHIER, balance)
      end
      redis.call('HDEL', P .. 'balances', account)
      redis.call('HDEL', P .. 'players', pid)
      redis.call('HDEL', P .. 'play_sessions', pid)
      redis.call('HDEL', P .. 'play_seen', pid)
      redis.call('DEL', P .. 'played:' .. pid)
      gone = gone + 1
    end
  end
end
if gone > 0 then redis.call('INCR', P .. 'commits') end
return gone
"""
)


# ARGV: prefix, transaction id, the stored value read, the new one, due ('1'/'0'),
# next_at. Writes only if the call is still as read (an atomic compare-and-set: the
# merge is made in Python, where the JSON is); answers 1 (written), 0 (no such call)
# or -1 (changed meanwhile: read it again).
_LUA_UPDATE_CALL: Final = r"""
local W = ARGV[1] .. 'wcall:'
local txn, old, new, due, next_at = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local stored = redis.call('HGET', W .. 'data', txn)
if not stored then return 0 end
if stored ~= old then return -1 end
redis.call('HSET', W .. 'data', txn, new)
if due == '1' then
  redis.call('ZADD', W .. 'due', next_at, txn)
else
  redis.call('ZREM', W .. 'due', txn)
end
return 1
"""

# A player's play session (``play_sessions``: its JSON but for ``seen``; ``play_seen``:
# when a connection of theirs was last seen, apart so that a touch is one small write).
# ARGV: prefix, player, the session read ('' none), its seen read ('' none), the new
# session, its seen. Writes only if both are still as read (an atomic compare-and-set:
# the caller's rule is run in Python, ``rule=``); answers 1 (written) or 0
# (changed meanwhile: read it again).
_LUA_PLAY_SET: Final = r"""
local S, N, pid = ARGV[1] .. 'play_sessions', ARGV[1] .. 'play_seen', ARGV[2]
if (redis.call('HGET', S, pid) or '') ~= ARGV[3] then return 0 end
if (redis.call('HGET', N, pid) or '') ~= ARGV[4] then return 0 end
redis.call('HSET', S, pid, ARGV[5])
redis.call('HSET', N, pid, ARGV[6])
return 1
"""

# ARGV: prefix, player id. What a bet is checked against, in one call (issue 36): the
# player's restriction, limits, play session and its seen, and (only when they have
# limits) their flow fields and values, flat.
_LUA_BET_READS: Final = r"""
local P, pid = ARGV[1], ARGV[2]
local limits = redis.call('HGET', P .. 'limits', pid)
local flows = {}
if limits then flows = redis.call('HGETALL', P .. 'flows:' .. pid) end
return {redis.call('HGET', P .. 'restrictions', pid), limits,
        redis.call('HGET', P .. 'play_sessions', pid), redis.call('HGET', P .. 'play_seen', pid),
        flows}
"""

# ARGV: prefix, table id. A table closed before the commit took closed tables off the
# open list ('tables') is taken off it, unless it was opened again.
_LUA_UNLIST: Final = r"""
local P, tid = ARGV[1], ARGV[2]
if redis.call('HGET', P .. '{' .. tid .. '}:row', 'closed') == '1' then
  return redis.call('ZREM', P .. 'tables', tid)
end
return 0
"""

# ARGV: prefix, now, players...: each one's seen becomes now, unless it is later
# already or they have no session.
_LUA_PLAY_TOUCH: Final = r"""
local S, N, now = ARGV[1] .. 'play_sessions', ARGV[1] .. 'play_seen', tonumber(ARGV[2])
for n = 3, #ARGV do
  local pid = ARGV[n]
  if redis.call('HEXISTS', S, pid) == 1 then
    if tonumber(redis.call('HGET', N, pid) or '0') < now then
      redis.call('HSET', N, pid, ARGV[2])
    end
  end
end
return 0
"""

# The operator's calls made once: a hash per key (``fingerprint``, ``body``: the record)
# that expires. ARGV: the key, the fingerprint, the record, the milliseconds to keep it.
# A claim answers the record kept, or (nothing kept) keeps this one and answers false.
_LUA_CLAIM_CALL: Final = r"""
local body = redis.call('HGET', ARGV[1], 'body')
if body then return body end
redis.call('HSET', ARGV[1], 'fingerprint', ARGV[2], 'body', ARGV[3])
redis.call('PEXPIRE', ARGV[1], ARGV[4])
return false
"""

# Keep the answer's record if the key is still this fingerprint's.
_LUA_ANSWER_CALL: Final = r"""
if redis.call('HGET', ARGV[1], 'fingerprint') ~= ARGV[2] then return 0 end
redis.call('HSET', ARGV[1], 'body', ARGV[3])
redis.call('PEXPIRE', ARGV[1], ARGV[4])
return 1
"""

#: The suffixes of a player's flow fields (``<day>:s``, ``<day>:n``, ``<day>:d``), in
#: :func:`~server.store.base.entry_flow`'s order.
_FLOW_FIELDS: Final = ("s", "n", "d")

#: How many wallet calls a listing or a due query reads from an index at a time.
CALL_PAGE: Final = 500


def _call_of(value: bytes | str) -> dict[str, Any]:
    """A stored wallet call (``<seq> <JSON>``) with its ``seq``."""
    seq, _, text = _text(value).partition(" ")
    return {**json.loads(text), "seq": int(seq)}


def _pack(entry: Entry) -> str:
    """An entry's fields as stored (and compared: identical fields, identical text)."""
    fields = [entry.src, entry.dst, entry.amount, entry.kind, entry.round_id]
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def _unpack(key: str, packed: bytes | str) -> Entry:
    src, dst, amount, kind, round_id = json.loads(packed)
    return Entry(key, src, dst, int(amount), kind, round_id)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _texts(found: Any) -> list[str]:
    """A list reply's members as text."""
    return [_text(value) for value in found]


def redact(url: str) -> str:
    """``url`` without its password, to name it in messages (a sentinel URL's list of
    hosts too)."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    credentials, at, hosts = netloc.rpartition("@")
    if not sep or not at or ":" not in credentials:
        return url
    user = credentials.partition(":")[0]
    return f"{scheme}://{user}:***@{hosts}{slash}{path}"


class RedisStore:
    """A :class:`~server.store.base.Store` in the Redis at ``url``
    (``redis://[user:password@]host:port/db``, ``rediss://``, ``unix://``, or
    ``redis+sentinel://HOST:PORT[,HOST:PORT…]/SERVICE/DB``: see
    :mod:`server.connect.redis`).

    ``prefix`` starts every key; ``event_retention`` is the events kept per table;
    ``round_index`` the rounds a player's history index keeps; ``clock`` says when a
    player was seen.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "chemmy:",
        event_retention: int = EVENT_RETENTION,
        round_index: int = HISTORY_LIMIT,
        clock: Callable[[], float] = time.time,
        socket_timeout: float = 3.0,
        min_replicas: int = 0,
    ) -> None:
        if event_retention < 1 or round_index < HISTORY_LIMIT:
            raise StoreError("retention keeps at least 1 event and 100 rounds a player")
        if min_replicas < 0:
            raise StoreError("min_replicas is a count of replicas, not negative")
        #: A commit (and a table's epoch claim) is answered only once this many replicas
        #: have it (``WAIT``); see docs/architecture.md §10, "Redis: durability".
        self.min_replicas = min_replicas
        self.url = url
        self.prefix = prefix
        self.event_retention = event_retention
        self.round_index = round_index
        self.clock = clock
        self.socket_timeout = socket_timeout
        self._client: aioredis.Redis | None = None
        self._scripts: dict[str, Any] = {}
        #: The commits queued for the next group (their script's arguments and their
        #: callers' futures), whether a flush is due, and the flushes under way.
        self._queued: list[tuple[list[bytes], asyncio.Future[Any]]] = []
        self._flush_due = False
        self._flushes: set[asyncio.Task[None]] = set()
        #: Commits stored, and the pipelines (groups) they went in.
        self.commits = 0
        self.groups = 0

    def __repr__(self) -> str:
        return f"RedisStore({redact(self.url)!r})"

    # -- the boundary ----------------------------------------------------------------
    @contextmanager
    def _translated(self) -> Iterator[None]:
        """Third-party errors become :class:`StoreError` here, and only here."""
        try:
            yield
        except ResponseError as exc:
            if unavailable(exc):  # READONLY, LOADING, MASTERDOWN: a switch of primary
                raise StoreUnavailable(f"redis: {exc.status_code or ''} {exc}") from None
            raise _translate_reply(str(exc)) from None
        except (RedisConnectionError, RedisTimeoutError, OSError, TimeoutError) as exc:
            raise StoreUnavailable(f"redis at {redact(self.url)}: {exc}") from None
        except RedisError as exc:
            raise StoreError(f"redis: {exc}") from None
        except UnicodeError as exc:
            raise StoreError(f"not storable text: {exc}") from None

    def _redis(self) -> aioredis.Redis:
        if self._client is None:
            raise StoreError("the store is not open")
        return self._client

    def _key(self, *parts: str) -> str:
        return self.prefix + "".join(parts)

    def _table_key(self, table_id: str, what: str) -> str:
        """A table's own keys share its hash tag (one Cluster slot per table)."""
        return f"{self.prefix}{{{table_id}}}:{what}"

    # -- lifecycle -------------------------------------------------------------------
    async def open(self) -> None:
        if self._client is not None:
            return
        retry = Retry(ExponentialWithJitterBackoff(cap=BACKOFF_CAP, base=BACKOFF_BASE), RETRIES)
        with self._translated():
            try:
                client = connect(
                    self.url,
                    retry=retry,
                    retry_on_error=[RedisConnectionError, RedisTimeoutError],
                    socket_timeout=self.socket_timeout,
                    socket_connect_timeout=self.socket_timeout,
                    health_check_interval=30,
                )
            except ValueError as exc:
                raise StoreError(f"not a redis URL: {redact(self.url)} ({exc})") from None
            try:
                await client.ping()
            except BaseException:
                await client.aclose()
                raise
        self._scripts = {
            "commit": client.register_script(_LUA_COMMIT),
            "ensure_player": client.register_script(_LUA_ENSURE_PLAYER),
            "expire": client.register_script(_LUA_EXPIRE),
            "update_call": client.register_script(_LUA_UPDATE_CALL),
            "play_set": client.register_script(_LUA_PLAY_SET),
            "play_touch": client.register_script(_LUA_PLAY_TOUCH),
            "claim_call": client.register_script(_LUA_CLAIM_CALL),
            "answer_call": client.register_script(_LUA_ANSWER_CALL),
            "unlist": client.register_script(_LUA_UNLIST),
            "bet_reads": client.register_script(_LUA_BET_READS),
        }
        self._client = client
        with self._translated():  # a group's first pipeline finds it (no NOSCRIPT)
            await client.script_load(_LUA_COMMIT)
        await self._index_round_times()

    async def _index_round_times(self) -> None:
        """Put the round records stored before the time index (``round_times``) in it,
        once per database (``round_times_ready`` says it is done). Harmless if two
        processes do it at once, or a commit adds a round meanwhile: ``ZADD`` of the
        same score."""
        with self._translated():
            redis = self._redis()
            if await redis.exists(self._key("round_times_ready")):
                return
            cursor = 0
            while True:
                cursor, found = await redis.hscan(self._key("rounds"), cursor, count=500)
                if isinstance(found, dict) and found:
                    async with redis.pipeline(transaction=False) as pipe:
                        for rid, body in found.items():
                            record = json.loads(body)
                            when, member = record_time(record), _text(rid)
                            pipe.zadd(self._key("round_times"), {member: when})
                            table = str(record.get("table", ""))
                            pipe.zadd(self._key("round_times:", table), {member: when})
                        await pipe.execute()
                if not cursor:
                    break
            await redis.set(self._key("round_times_ready"), "1")

    async def claim_serving(self) -> None:
        """A cluster's shared store: every process serves it (tables are claimed by lease)."""

    async def close(self) -> None:
        while self._flushes:  # the commits already queued go out first
            await asyncio.gather(*self._flushes, return_exceptions=True)
        client, self._client = self._client, None
        if client is not None:
            with suppress(RedisError, OSError):
                await client.aclose()

    # -- players and balances --------------------------------------------------------
    async def ensure_player(
        self, player_id: str, name: str, initial_balance: int, *, guest: bool = False
    ) -> int:
        if not isinstance(initial_balance, int) or initial_balance < 0:
            raise StoreError("an initial balance is a whole number, not negative")
        key = packed = ""
        if initial_balance > 0:
            welcome = welcome_entry(player_id, initial_balance)
            check_entry(welcome)
            key, packed = welcome.key, _pack(welcome)
        args = [
            self.prefix,
            player_id,
            name,
            player_account(player_id),
            key,
            packed,
            str(initial_balance),
            "1" if guest else "0",
            repr(float(self.clock())),
        ]
        with self._translated():
            self._redis()
            found = await self._replicated(self._scripts["ensure_player"], args)
        return int(found)

    async def player_name(self, player_id: str) -> str | None:
        with self._translated():
            found = await self._redis().hget(self._key("players"), player_id)
        return None if found is None else _text(found)

    async def expire_guests(self, idle_seconds: float) -> int:
        cutoff = self.clock() - idle_seconds
        gone = 0
        with self._translated():
            redis = self._redis()
            for _ in range(10_000):  # each pass drops every candidate it saw
                found = await redis.zrangebyscore(
                    self._key("guests"), "-inf", repr(float(cutoff)), start=0, num=500
                )
                if not found:
                    break
                args = [self.prefix, repr(float(cutoff)), *_texts(found)]
                gone += int(await self._scripts["expire"](args=args))
                if len(found) < 500:
                    break
        return gone

    async def load_balances(self) -> dict[str, int]:
        with self._translated():
            found = await self._redis().hgetall(self._key("balances"))
        return {_text(a): int(b) for a, b in found.items()}

    async def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(accounts))
        if not wanted:
            return {}
        with self._translated():
            found = await self._redis().hmget(self._key("balances"), wanted)
        return {a: int(b or 0) for a, b in zip(wanted, found, strict=True)}

    async def player_money(self, player_id: str, tables: Iterable[str] = ()) -> tuple[int, int]:
        stakes = [stake_account(t, player_id) for t in dict.fromkeys(tables)]
        found = await self.balances([player_account(player_id), *stakes])
        available = found[player_account(player_id)]
        return available + sum(found[a] for a in stakes), available

    async def has_entry(self, key: str) -> bool:
        with self._translated():
            return bool(await self._redis().hexists(self._key("entries"), key))

    # -- the one write ---------------------------------------------------------------
    async def commit(
        self,
        *,
        entries: Sequence[Entry] = (),
        table: TableRow | None = None,
        records: Sequence[Mapping[str, Any]] = (),
        events: Sequence[Mapping[str, Any]] = (),
        calls: Sequence[Mapping[str, Any]] = (),
        guards: Sequence[LimitGuard] = (),
    ) -> CommitResult:
        plan = plan_commit(self.clock(), entries, table, records, events, calls, guards)
        args: list[str] = [self.prefix, plan.day, plan.cutoff, str(len(plan.entries))]
        for entry in plan.entries:
            args += [entry.key, entry.src, entry.dst, str(entry.amount), _pack(entry)]
            flow = entry_flow(entry)
            args += ["", "0", "0", "0"] if flow is None else [str(part) for part in flow]
        table = plan.table
        if table is None or plan.row is None or plan.parts is None:
            args.append("0")
        else:
            config, state = plan.row
            drop, parts = plan.parts
            args += [
                "1",
                table.table_id,
                config,
                state,
                "1" if table.state is None else "0",
                str(table.seq),
                "1" if table.closed else "0",
                str(table.epoch),
                str(self.event_retention),
                "1" if drop else "0",
                str(len(parts)),
            ]
            for key, body in parts:
                args += [key, "0" if body is None else "1", body or ""]
        args.append(str(len(plan.events)))
        for seq, body in plan.events:
            args += [str(seq), body]
        args.append(str(len(plan.records)))
        for index, body in plan.records:
            if isinstance(index, RoundIndex):
                players = json.dumps(list(index.players), ensure_ascii=False)
                args += ["r", index.round_id, body, players, index.table, repr(index.time)]
                args.append(str(len(index.players)))
                args += index.players
            else:
                revealed = "1" if index.revealed else "0"
                args += ["s", index.table, str(index.shoe_no), revealed, body]
        report = plan.report
        args += [str(self.round_index), str(len(report)), *report]
        args += self._call_args(plan.calls)
        args.append(str(len(plan.guards)))
        for guard in plan.guards:
            measure, opposite = guard_measure(guard.kind)
            field = _FLOW_FIELDS[measure]
            args += [guard.player, guard.kind, field, "1" if opposite else "0"]
            args += [str(guard.cap), guard.since]
        with self._translated():
            self._redis()
            # Encoded here: a text Redis cannot take is this commit's refusal alone.
            encoded = [arg.encode() for arg in args]
        out = await self._grouped(encoded)
        return CommitResult(int(out[0]), {a: int(b) for a, b in zip(report, out[1:], strict=True)})

    # -- the group commit ------------------------------------------------------------
    def _grouped(self, args: list[bytes]) -> asyncio.Future[Any]:
        """Queue a commit script's ``args`` for the next group; its answer. The commits
        queued before the flush runs (the same turn of the loop) go out together, so a
        lone commit waits for no company, and every commit is sent in the order it was
        queued."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queued.append((args, future))
        if not self._flush_due:
            self._flush_due = True
            self._spawn()
        return future

    def _spawn(self) -> None:
        task = asyncio.get_running_loop().create_task(self._flush())
        self._flushes.add(task)
        task.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Task[None]) -> None:
        """A flush is over. One cancelled before it took its group (its loop closing)
        leaves nothing behind: the commits still queued are cancelled with it, and the
        next commit starts a flush of its own."""
        self._flushes.discard(task)
        if task.cancelled():
            queued, self._queued = self._queued, []
            for _, future in queued:
                future.cancel()
            self._flush_due = False

    async def _flush(self) -> None:
        group = self._queued[:GROUP_MAX]
        del self._queued[:GROUP_MAX]
        if not group:  # (taken by a flush cancelled before it)
            return
        if self._queued:  # more than a group: the next one goes out beside it
            self._spawn()
        else:
            self._flush_due = False
        try:
            outcomes = await self._send(args for args, _ in group)
        except asyncio.CancelledError:  # the loop is closing: so are the callers waiting
            for _, future in group:
                future.cancel()
            raise
        except Exception as exc:  # the whole pipeline failed: every commit with it
            outcomes = [self._store_error(exc)] * len(group)
        for (_, future), outcome in zip(group, outcomes, strict=True):
            if future.done():  # the caller gave up; the commit was sent all the same
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(own_copy(outcome))
            else:
                future.set_result(outcome)

    async def _send(self, group: Iterable[list[bytes]]) -> list[Any]:
        """Send the commits in one pipeline (not a transaction: each ``EVALSHA`` is its
        own atomic script, and one's error reply is its own), then one ``WAIT`` with
        :attr:`min_replicas`: each commit's answer, or its :class:`StoreError`. A
        script Redis does not know (``NOSCRIPT``: it ran nothing) is loaded and the
        commits it refused are sent again."""
        pending = list(group)
        outcomes: list[Any] = [None] * len(pending)
        todo = list(range(len(pending)))
        script = self._scripts["commit"]
        for attempt in range(2):
            replies = await self._execute(script.sha, [pending[i] for i in todo])
            self.groups += 1
            in_doubt = self._wait_failure(replies[-1]) if self.min_replicas else None
            again = []
            for i, reply in zip(todo, replies, strict=False):
                if isinstance(reply, NoScriptError) and not attempt:
                    again.append(i)
                elif isinstance(reply, BaseException):
                    outcomes[i] = self._store_error(reply)
                else:
                    outcomes[i] = in_doubt or reply
                    self.commits += in_doubt is None
            if not again:
                break
            with self._translated():
                script.sha = await self._redis().script_load(script.script)
            todo = again
        return outcomes

    async def _execute(self, sha: str, group: list[list[bytes]]) -> list[Any]:
        """The replies (error replies as exceptions) of the commit script run with each
        of ``group``'s arguments, then of ``WAIT`` with :attr:`min_replicas`: in one
        pipeline, or a plain call for a lone commit (no pipeline's cost)."""
        redis = self._redis()
        if len(group) == 1 and not self.min_replicas:
            try:
                return [await redis.evalsha(sha, 0, *group[0])]
            except ResponseError as exc:
                return [exc]
        async with redis.pipeline(transaction=False) as pipe:
            for args in group:
                pipe.evalsha(sha, 0, *args)
            if self.min_replicas:
                pipe.wait(self.min_replicas, WAIT_TIMEOUT_MS)
            replies: list[Any] = await pipe.execute(raise_on_error=False)
        return replies

    def _wait_failure(self, acked: Any) -> BaseException | None:
        """What a commit whose script ran is answered when the group's ``WAIT``
        answered ``acked``: ``None`` when enough replicas have it."""
        if isinstance(acked, BaseException):
            return self._store_error(acked)
        if int(acked) < self.min_replicas:
            return StoreUnavailable(
                f"redis: {acked} of {self.min_replicas} replicas acknowledged the write "
                f"in {WAIT_TIMEOUT_MS} ms; it may be kept all the same"
            )
        return None

    def _store_error(self, exc: BaseException) -> BaseException:
        """``exc`` as :meth:`_translated` raises it (a Redis error as a StoreError)."""
        try:
            with self._translated():
                raise exc
        except BaseException as translated:
            return translated
        return exc  # pragma: no cover (the raise above always raises)

    # -- tables ----------------------------------------------------------------------
    async def claim_table(self, table_id: str) -> int:
        if not isinstance(table_id, str) or not table_id:
            raise StoreError("a table has an id")
        with self._translated():
            if not self.min_replicas:
                return int(await self._redis().incr(self._table_key(table_id, "epoch")))
            # Fencing must survive a failover: an epoch a promoted replica never had
            # could be handed out twice.
            async with self._redis().pipeline(transaction=False) as pipe:
                pipe.incr(self._table_key(table_id, "epoch"))
                return int(await self._waited(pipe))

    async def _replicated(self, script: Any, args: Sequence[Any]) -> Any:
        """Run a write script; with :attr:`min_replicas`, answered only once that many
        replicas have it (``WAIT`` on the same connection, in one pipeline)."""
        if not self.min_replicas:
            return await script(args=args)
        async with self._redis().pipeline(transaction=False) as pipe:
            await script(args=args, client=pipe)
            return await self._waited(pipe)

    async def _waited(self, pipe: Any) -> Any:
        """Execute ``pipe``'s one write followed by ``WAIT``: the write's answer, or
        :class:`StoreUnavailable` when fewer than :attr:`min_replicas` replicas
        acknowledged it in :data:`WAIT_TIMEOUT_MS`. The write may be kept all the same
        (on the primary, and on a replica later): the caller is told it is in doubt,
        and a retried commit is applied once (entries by key, events by seq)."""
        pipe.wait(self.min_replicas, WAIT_TIMEOUT_MS)
        out, acked = await pipe.execute(raise_on_error=False)
        for result in (out, acked):
            if isinstance(result, Exception):
                raise result
        if int(acked) < self.min_replicas:
            raise StoreUnavailable(
                f"redis: {acked} of {self.min_replicas} replicas acknowledged the write "
                f"in {WAIT_TIMEOUT_MS} ms; it may be kept all the same"
            )
        return out

    async def table_seq(self, table_id: str) -> int:
        with self._translated():
            seq = await self._redis().hget(self._table_key(table_id, "row"), "seq")
        return 0 if seq is None else int(seq)

    async def load_tables(self) -> list[TableRow]:
        with self._translated():
            ids = _texts(await self._redis().zrange(self._key("tables"), 0, -1))
        return [row for row in await self._rows(ids) if row is not None]

    async def table_ids(self) -> list[str]:
        with self._translated():
            return _texts(await self._redis().zrange(self._key("tables"), 0, -1))

    async def load_table(self, table_id: str) -> TableRow | None:
        return (await self._rows([table_id]))[0]

    async def _rows(self, ids: list[str]) -> list[TableRow | None]:
        """The open tables' rows of ``ids`` (None for one closed or never saved). A
        closed one still listed (a table closed before closing took it off the list)
        is taken off."""
        with self._translated():
            redis = self._redis()
            async with redis.pipeline(transaction=True) as pipe:
                for tid in ids:
                    pipe.hmget(self._table_key(tid, "row"), ["config", "state", "seq", "closed"])
                    pipe.get(self._table_key(tid, "epoch"))
                    pipe.hgetall(self._table_key(tid, "parts"))
                found = await pipe.execute()
            rows: list[TableRow | None] = []
            for n, tid in enumerate(ids):
                (config, state, seq, closed), epoch = found[3 * n], found[3 * n + 1]
                parts = {_text(k): json.loads(v) for k, v in found[3 * n + 2].items()}
                if config is None or closed == b"1":
                    if closed == b"1":  # (unless opened again meanwhile)
                        await self._scripts["unlist"](args=[self.prefix, tid], client=redis)
                    rows.append(None)
                    continue
                rows.append(
                    TableRow(
                        tid,
                        json.loads(config),
                        json.loads(state),
                        int(seq),
                        False,
                        int(epoch or 0),
                        parts or None,
                    )
                )
        return rows

    async def save_table(self, row: TableRow) -> None:
        await self.commit(table=row)

    async def events_after(self, table_id: str, seq: int) -> list[dict[str, Any]] | None:
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            return follows(seq, [], 0)  # raises the one error for a bad seq
        with self._translated():
            async with self._redis().pipeline(transaction=True) as pipe:
                pipe.xrange(self._table_key(table_id, "events"), f"{seq + 1}-0", "+")
                pipe.hget(self._table_key(table_id, "row"), "seq")
                kept, top = await pipe.execute()
        events = [(int(_text(eid).split("-", 1)[0]), _text(fields[b"e"])) for eid, fields in kept]
        return follows(seq, events, int(top or 0))

    # -- records ---------------------------------------------------------------------
    async def history(self, player_id: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        limit = max(0, min(limit, HISTORY_LIMIT))
        if not limit:
            return []
        with self._translated():
            redis = self._redis()
            ids = _texts(await redis.zrevrange(self._key("played:", player_id), 0, limit - 1))
            if not ids:
                return []
            bodies = await redis.hmget(self._key("rounds"), ids)
        return [json.loads(body) for body in bodies if body is not None]

    async def round_record(self, round_id: str) -> dict[str, Any] | None:
        with self._translated():
            found = await self._redis().hget(self._key("rounds"), round_id)
        return None if found is None else dict(json.loads(found))

    async def round_records(
        self,
        query: RoundQuery,
    ) -> list[dict[str, Any]]:
        wanted = round_query(query)
        if not wanted.limit:
            return []
        if wanted.round_id is not None:  # one record: read it, then apply the rest
            record = await self.round_record(wanted.round_id)
            if record is None:
                return []
            index = index_record(record)
            return [record] if isinstance(index, RoundIndex) and wanted.matches(index) else []
        key = (
            self._key("round_times")
            if wanted.table is None
            else self._key("round_times:", wanted.table)
        )
        top = "+inf" if wanted.high == float("inf") else f"({wanted.high!r}"
        if wanted.before is not None and wanted.before[0] < wanted.high:
            top = repr(wanted.before[0])  # inclusive: its ties below its round_id count
        bottom = "-inf" if wanted.low == float("-inf") else repr(wanted.low)
        batch = max(2 * wanted.limit, 200)
        chosen: list[str] = []
        offset = 0
        with self._translated():
            redis = self._redis()
            while len(chosen) < wanted.limit:
                found: list[Any] = await redis.zrevrangebyscore(
                    key, top, bottom, start=offset, num=batch, withscores=True
                )
                offset += len(found)
                ids = [
                    _text(rid)
                    for rid, score in found
                    if wanted.before is None or (float(score), _text(rid)) < wanted.before
                ]
                if wanted.player is not None and ids:
                    indexes = await redis.hmget(self._key("round_index"), ids)
                    ids = [
                        rid
                        for rid, index in zip(ids, indexes, strict=True)
                        if index is not None
                        and wanted.player in json.loads(_text(index).split(" ", 1)[1])
                    ]
                chosen += ids[: wanted.limit - len(chosen)]
                if len(found) < batch:
                    break
            if not chosen:
                return []
            bodies = await redis.hmget(self._key("rounds"), chosen)
        return [json.loads(body) for body in bodies if body is not None]

    async def shoe_record(self, table_id: str, shoe_no: int | None = None) -> dict[str, Any] | None:
        with self._translated():
            redis = self._redis()
            if shoe_no is None:
                top = await redis.zrevrange(self._table_key(table_id, "revealed"), 0, 0)
                if not top:
                    return None
                number = _texts(top)[0]
            else:
                number = str(shoe_no)
            found = await redis.hget(self._table_key(table_id, "shoes"), number)
        return None if found is None else dict(json.loads(found))

    async def shoe_records(self, table_id: str, limit: int = 20) -> list[dict[str, Any]]:
        if limit <= 0:
            return []
        with self._translated():
            redis = self._redis()
            numbers = _texts(
                await redis.zrevrange(self._table_key(table_id, "shoe_nos"), 0, limit - 1)
            )
            if not numbers:
                return []
            bodies = await redis.hmget(self._table_key(table_id, "shoes"), numbers)
        return [json.loads(body) for body in bodies if body is not None]

    async def secret(self, name: str, nbytes: int = 32) -> bytes:
        if not isinstance(name, str) or not name or not 16 <= nbytes <= 1024:
            raise StoreError("a secret has a name and 16 to 1024 bytes")
        key = self._key("secret:", name)
        with self._translated():
            redis = self._redis()
            await redis.set(key, secrets.token_bytes(nbytes), nx=True)
            value: Any = await redis.get(key)
        if value is None:
            raise StoreUnavailable(f"the secret {name!r} was not kept")
        return bytes(value)

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
    async def player_restriction(self, player_id: str) -> dict[str, Any] | None:
        with self._translated():
            found = await self._redis().hget(self._key("restrictions"), player_id)
        if found is None:
            return None
        kept = dict(json.loads(_text(found)))
        return kept if kept["until"] > time.time() else None

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
            await self._redis().transaction(merge, key)
        return kept

    # -- a player's usage and limits ----------------------------------------------------
    async def player_days(self, player_id: str, since_day: str) -> dict[str, dict[str, int]]:
        since_day = check_day(since_day)
        with self._translated():
            found = await self._redis().hgetall(self._key("flows:", player_id))
        return _days_of([x for kv in found.items() for x in kv], since_day)

    async def bet_reads(self, player_id: str, since_day: str, *, rule: CurrentRule) -> BetReads:
        since_day = check_day(since_day)
        with self._translated():
            found = await self._scripts["bet_reads"](args=[self.prefix, player_id])
        restriction, limits, body, seen, flows = found
        kept = None if restriction is None else dict(json.loads(_text(restriction)))
        if kept is not None and kept["until"] <= time.time():
            kept = None
        stored = None if limits is None else json.loads(_text(limits))
        return BetReads(
            kept,
            rule(stored, self.clock()),
            _play_of("" if body is None else _text(body), "" if seen is None else _text(seen)),
            _days_of(flows, since_day),
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
            await self._redis().transaction(merge, key)
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
                if await self._replicated(self._scripts["play_set"], args) == 1:
                    return dict(kept)
        raise StoreUnavailable(f"the play session of {player_id!r} kept changing while written")

    async def open_play_session(
        self, player_id: str, now: float, gap: float, every: float | None, *, rule: PlayRule
    ) -> dict[str, Any]:
        now, gap, every = check_play_open(player_id, now, gap, every)

        async def change(old: dict[str, Any] | None) -> dict[str, Any]:
            baseline: dict[str, int] = {}
            if old is None or now - old["seen"] > gap:  # a new one: its baseline
                days = await self.player_days(player_id, flow_day(now))
                sums = {day: [row[name] for name in FLOW_NAMES] for day, row in days.items()}
                baseline = play_baseline(sums, now)
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

    # -- checking --------------------------------------------------------------------
    async def ledger(self, account: str | None = None, limit: int = 1000) -> list[Entry]:
        if limit <= 0:
            return []
        index = self._key("ledger") if account is None else self._key("acct:", account)
        with self._translated():
            redis = self._redis()
            keys = _texts(await redis.zrevrange(index, 0, limit - 1))
            if not keys:
                return []
            packed = await redis.hmget(self._key("entries"), keys)
        return [_unpack(k, p) for k, p in zip(keys, packed, strict=True) if p is not None]

    # -- the wallet calls' outbox ---------------------------------------------------------
    @staticmethod
    def _call_args(calls: Sequence[tuple[dict[str, Any], str]]) -> list[str]:
        """The commit script's arguments for ``calls`` (checked: :func:`plan_commit`)."""
        args = [str(len(calls))]
        for checked, text in calls:
            due = "1" if checked["state"] == "pending" else "0"
            args += [checked["transaction_id"], text, due, repr(checked["next_at"])]
        return args

    async def update_wallet_call(
        self,
        transaction_id: str,
        changes: Mapping[str, Any],
        *,
        only_from: str | None = None,
    ) -> dict[str, Any] | None:
        changes = check_wallet_changes(changes)
        data = self._key("wcall:data")
        with self._translated():
            redis = self._redis()
            for _ in range(100):
                old = await redis.hget(data, transaction_id)
                if old is None:
                    return None
                stored = _call_of(old)
                if only_from is not None and stored["state"] != only_from:
                    return stored  # (the script's compare-and-set makes it atomic)
                call, text = merge_wallet_call(stored, changes)
                due = "1" if call["state"] == "pending" else "0"
                args = [self.prefix, transaction_id, old, f"{stored['seq']} {text}", due]
                done = await self._replicated(
                    self._scripts["update_call"], [*args, repr(call["next_at"])]
                )
                if done == 1:
                    return {**call, "seq": stored["seq"]}
                if done == 0:
                    return None
        raise StoreUnavailable(f"wallet call {transaction_id!r} kept changing while updated")

    async def due_wallet_calls(
        self,
        now: float,
        limit: int = 100,
        kinds: Sequence[str] = ("credit", "rollback"),
    ) -> list[dict[str, Any]]:
        now, limit, wanted = check_due_time(now), wallet_limit(limit), check_due_kinds(kinds)
        if not limit or not wanted:
            return []
        found: list[dict[str, Any]] = []

        def order(call: dict[str, Any]) -> tuple[float, int]:
            return call["next_at"], call["seq"]

        with self._translated():
            redis = self._redis()
            offset = 0
            while True:
                page: list[Any] = await redis.zrangebyscore(
                    self._key("wcall:due"),
                    "-inf",
                    repr(now),
                    start=offset,
                    num=CALL_PAGE,
                    withscores=True,
                )
                if not page:
                    break
                bodies = await redis.hmget(self._key("wcall:data"), [t for t, _ in page])
                for body in bodies:
                    call = None if body is None else _call_of(body)
                    if call is not None and call["state"] == "pending" and call["kind"] in wanted:
                        found.append(call)
                if len(page) < CALL_PAGE:
                    break
                # Enough, and nothing further can come first (ties of next_at go by seq).
                found.sort(key=order)
                if len(found) >= limit and page[-1][1] > found[limit - 1]["next_at"]:
                    break
                offset += len(page)
        found.sort(key=order)
        return [call for call in found if call["next_at"] <= now][:limit]

    async def wallet_call(self, transaction_id: str) -> dict[str, Any] | None:
        with self._translated():
            found = await self._redis().hget(self._key("wcall:data"), transaction_id)
        return None if found is None else _call_of(found)

    async def wallet_calls(
        self,
        *,
        state: str | None = None,
        player: str | None = None,
        table: str | None = None,
        round_id: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        before_seq: int | None = None,
    ) -> list[dict[str, Any]]:
        filters = wallet_filters(
            state=state,
            player=player,
            table=table,
            round_id=round_id,
            kind=kind,
            before_seq=before_seq,
        )
        limit = wallet_limit(limit)
        found: list[dict[str, Any]] = []
        top = "+inf" if before_seq is None else f"({before_seq}"
        # Pages by seq (a cursor, not an offset: calls inserted meanwhile go above it).
        page_size = CALL_PAGE if filters else limit
        with self._translated():
            redis = self._redis()
            while len(found) < limit:
                page: list[Any] = await redis.zrevrangebyscore(
                    self._key("wcall:order"),
                    top,
                    "-inf",
                    start=0,
                    num=page_size,
                    withscores=True,
                )
                if not page:
                    break
                bodies = await redis.hmget(self._key("wcall:data"), [t for t, _ in page])
                for body in bodies:
                    call = None if body is None else _call_of(body)
                    if call is not None and wallet_call_matches(call, filters):
                        found.append(call)
                if len(page) < page_size:
                    break
                top = f"({int(page[-1][1])}"
        return found[:limit]

    async def wallet_totals(
        self, *, since: float | None = None, until: float | None = None
    ) -> list[dict[str, Any]]:
        check_span(since, until)
        calls: list[dict[str, Any]] = []
        with self._translated():
            async for _, body in self._redis().hscan_iter(self._key("wcall:data"), count=1000):
                calls.append(_call_of(body))
        return wallet_totals(calls, since, until)

    # -- the operator's calls, each made once -------------------------------------------
    async def claim_operator_call(
        self, key: str, fingerprint: str, keep: float
    ) -> dict[str, Any] | None:
        keep = check_operator_call(key, fingerprint, keep)
        record = operator_call_record(fingerprint, None)
        args = [self._key("operator_calls:", key), fingerprint, record, max(1, int(keep * 1000))]
        with self._translated():  # (with min_replicas, kept on the replicas before acting)
            found = await self._replicated(self._scripts["claim_call"], args)
        return None if found is None else dict(json.loads(_text(found)))

    async def answer_operator_call(
        self, key: str, fingerprint: str, answer: Mapping[str, Any], keep: float
    ) -> None:
        keep = check_operator_call(key, fingerprint, keep)
        record = operator_call_record(fingerprint, answer)
        args = [self._key("operator_calls:", key), fingerprint, record, max(1, int(keep * 1000))]
        with self._translated():
            await self._replicated(self._scripts["answer_call"], args)

    async def audit(self) -> dict[str, Any]:
        """Reads the whole ledger in chunks (it never blocks Redis with one long call);
        when a write lands meanwhile it reads again, so the figures are of one moment."""
        with self._translated():
            redis = self._redis()
            for _ in range(20):
                before = await redis.get(self._key("commits"))
                report = await self._audit_once(redis)
                if await redis.get(self._key("commits")) == before:
                    return report
        raise StoreUnavailable("the ledger kept changing while it was audited")

    async def _audit_once(self, redis: aioredis.Redis) -> dict[str, Any]:
        balances: dict[str, int] = {}
        async for account, balance in redis.hscan_iter(self._key("balances"), count=1000):
            balances[_text(account)] = int(balance)
        flows: dict[str, int] = {}
        wagers: list[Entry] = []
        count = 0
        kinds = ("hold", *OUTCOME_KINDS)
        async for key, packed in redis.hscan_iter(self._key("entries"), count=1000):
            entry = _unpack(_text(key), packed)
            count += 1
            flows[entry.src] = flows.get(entry.src, 0) - entry.amount
            flows[entry.dst] = flows.get(entry.dst, 0) + entry.amount
            if entry.kind in kinds:
                wagers.append(entry)
        rounds = sorted({e.round_id for e in wagers if e.kind == "hold" and e.round_id})
        recorded: set[str] = set()
        if rounds:
            async with redis.pipeline(transaction=False) as pipe:
                for round_id in rounds:
                    pipe.hexists(self._key("rounds"), round_id)
                found = await pipe.execute()
            recorded = {r for r, there in zip(rounds, found, strict=True) if there}
        return audit_report(balances, flows, count, hold_problems(wagers, recorded, balances))


def _translate_reply(message: str) -> StoreError:
    """A Redis error reply as a :class:`StoreError` (the scripts' coded replies first)."""
    code, _, text = message.partition(" ")
    if code == "KEYCONFLICT":
        return KeyConflict(text)
    if code == "OVERDRAWN":
        return Overdrawn(text)
    if code == "STALEEPOCH":
        return StaleEpoch(text)
    if code == "LIMIT":
        kind, cap, left = text.split(" ")
        return LimitPassed(kind, int(cap), int(left))
    if code == "RANGE":
        return OutOfRange(text)
    if code.startswith(_UNAVAILABLE_REPLIES):
        return StoreUnavailable(f"redis: {message}")
    return StoreError(f"redis: {message}")


def _days_of(fields: Sequence[bytes | str], since_day: str) -> dict[str, dict[str, int]]:
    """:meth:`RedisStore.player_days` from a player's flow fields and values, flat."""
    days: dict[str, list[int]] = {}
    for field, value in zip(fields[::2], fields[1::2], strict=True):
        day, _, which = _text(field).rpartition(":")
        if which in _FLOW_FIELDS:
            days.setdefault(day, [0, 0, 0])[_FLOW_FIELDS.index(which)] = int(value)
    return flow_buckets(days, since_day)


def _play_of(body: str, seen: str) -> dict[str, Any] | None:
    """A play session from its stored JSON and seen (``''``: none)."""
    if not body:
        return None
    kept = dict(json.loads(body))
    return {**kept, "seen": float(seen or kept["started"])}
