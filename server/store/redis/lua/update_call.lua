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
