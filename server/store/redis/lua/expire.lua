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
