-- Calls over many arguments a chunk at a time (Lua's unpack has a limit).
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
-- (and, as their ``after``, each account's balance once they are posted) or an error
-- reply. Nothing is written. The stored entries and balances they need are read in one
-- HMGET each (not one HGET an entry and an account).
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
  new.after = staged
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
-- A number as Redis keeps it (exact: within the range where a double is).
local function whole(v) return v == 0 and '0' or string.format('%.0f', v) end
-- Each player's flows of the day (sums keyed '<player>\n<s|n|d>'): one HMGET of the day's
-- three fields (no '<day>:n' yet: the day's first flow, their fields of days < cutoff
-- dropped first), then one HSET of the new values (issue 36: it was an HEXISTS and an
-- HINCRBY a field); an HINCRBY a part for a value past the range where a double is exact.
local function write_flows(flows, day, cutoff)
  local mine, players = {}, {}
  for _, k in ipairs(flows.order) do
    local player, f = string.match(k, '^(.*)\n(.)$')
    if not mine[player] then mine[player] = {}; players[#players + 1] = player end
    mine[player][f] = k
  end
  for _, player in ipairs(players) do
    local F, names = P .. 'flows:' .. player, {day .. ':s', day .. ':n', day .. ':d'}
    local got = redis.call('HMGET', F, names[1], names[2], names[3])
    local out, big = {}, {}
    if not got[2] then
      for _, f in ipairs(redis.call('HKEYS', F)) do
        if string.sub(f, 1, 10) < cutoff then redis.call('HDEL', F, f) end
      end
      got[2] = '0'
      out[2] = '0'
    end
    for i, f in ipairs({'s', 'n', 'd'}) do
      local k = mine[player][f]
      if k and (flows.big[k] or flows.sum[k] ~= 0) then
        local was = tonumber(got[i] or '0')
        local v = was + flows.sum[k]
        if flows.big[k] or math.abs(was) > MAX or math.abs(v) > MAX then
          big[#big + 1] = {names[i], k}
        else
          out[i] = whole(v)
        end
      end
    end
    local set = {}
    for i = 1, 3 do
      if out[i] then set[#set + 1] = names[i]; set[#set + 1] = out[i] end
    end
    if #set > 0 then redis.call('HSET', F, unpack(set)) end
    for _, b in ipairs(big) do
      for _, part in ipairs(flows.parts[b[2]]) do redis.call('HINCRBY', F, b[1], part) end
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
-- HSET of the accounts' new balances (checked within the range by check_entries, so
-- exact: issue 36, it was an HINCRBY an account), one HINCRBY per flow a commit moves
-- (not one of each per entry).
local function post(new, day, cutoff)
  if #new == 0 then return end
  local first = redis.call('INCRBY', P .. 'ledger_seq', #new) - #new
  local bodies, ledger, by_account, accounts = {}, {}, {}, {}
  local flows = new_sums()
  for n, e in ipairs(new) do
    local seq = first + n
    bodies[#bodies + 1] = e.key; bodies[#bodies + 1] = e.packed
    ledger[#ledger + 1] = seq; ledger[#ledger + 1] = e.key
    for _, a in ipairs({e.src, e.dst}) do
      if not by_account[a] then by_account[a] = {}; accounts[#accounts + 1] = a end
      local z = by_account[a]
      z[#z + 1] = seq; z[#z + 1] = e.key
    end
    if day and e.player and e.player ~= '' then
      for _, x in ipairs({{'s', e.s}, {'n', e.n}, {'d', e.d}}) do
        if x[2] ~= '0' then add_to(flows, e.player .. '\n' .. x[1], e.amount, x[2] == '-1') end
      end
    end
  end
  call_pairs('HSET', P .. 'entries', bodies)
  call_pairs('ZADD', P .. 'ledger', ledger)
  for _, a in ipairs(accounts) do call_pairs('ZADD', P .. 'acct:' .. a, by_account[a]) end
  local after = {}
  for _, a in ipairs(accounts) do
    after[#after + 1] = a
    after[#after + 1] = whole(new.after[a])
  end
  call_pairs('HSET', P .. 'balances', after)
  if #flows.order > 0 then write_flows(flows, day, cutoff) end
end
