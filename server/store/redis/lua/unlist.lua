local P, tid = ARGV[1], ARGV[2]
if redis.call('HGET', P .. '{' .. tid .. '}:row', 'closed') == '1' then
  return redis.call('ZREM', P .. 'tables', tid)
end
return 0
