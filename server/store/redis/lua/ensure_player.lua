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
