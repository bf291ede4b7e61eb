"""The Redis store's Lua scripts, as text: each write of money, of a table or of a
player's session is one script (Redis runs it alone), which checks everything first and
answers a coded error reply before it writes anything.

The money rules in them are generated from the ledger (:data:`LUA_RULES`, from
``server.ledger.rules``); the rest is written here once. This module only holds text:
it must never run a script nor talk to Redis.
"""

from __future__ import annotations

from typing import Final

from server.ledger.rules import LUA_RULES

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
