-- ARGV[2]: the commit's arguments, one msgpack array of strings (read in order).
local A = cmsgpack.unpack(ARGV[2])
local day, cutoff = A[1], A[2]
local i = 3
local function nxt() local v = A[i]; i = i + 1; return v end
local entries = {}
for n = 1, tonumber(nxt()) do
  entries[n] = {key = nxt(), src = nxt(), dst = nxt(), amount = nxt(), packed = nxt(),
                player = nxt(), s = nxt(), n = nxt(), d = nxt()}
end
local tbl = nil
if nxt() == '1' then
  tbl = {id = nxt(), config = nxt(), state = nxt(), none = nxt() == '1', seq = nxt(),
         closed = nxt(), epoch = nxt(), retention = nxt(), drop = nxt() == '1',
         listed = nxt() == '1', parts = {}}
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
  -- Not looked up when the writer saw it listed in this epoch and the stored epoch is
  -- this one (issue 36: a ZSCORE a commit; a Redis that lost the epoch lost the list).
  if tbl.closed == '1' then
    redis.call('ZREM', P .. 'tables', tbl.id)
  elseif tbl.listed and stored_epoch > 0 and stored_epoch == tonumber(tbl.epoch) then
    -- (listed: it was, and only a commit closing it in this epoch takes it off)
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
-- The audit's counter moves with what it reads (entries, balances, round records) only,
-- and not where the ledger's seq moved already (entries posted: INCRBY, in post; the
-- audit reads both: issue 36, an INCR of most commits).
if #new == 0 and #records > 0 then redis.call('INCR', P .. 'commits') end
-- The reported balances: those the entries moved as posted, the others read (one HMGET).
local out, unmoved = {#new}, {}
for _, a in ipairs(report) do
  if new.after[a] == nil then unmoved[#unmoved + 1] = a end
end
local found = hmget(P .. 'balances', unmoved)
for _, a in ipairs(report) do
  local moved = new.after[a]
  out[#out + 1] = moved == nil and (found[a] or '0') or whole(moved)
end
return out
