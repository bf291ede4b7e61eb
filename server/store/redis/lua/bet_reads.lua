local pid = ARGV[1]
local limits = redis.call('HGET', KEYS[2], pid)
local flows = {}
if limits then flows = redis.call('HGETALL', KEYS[5]) end
return {redis.call('HGET', KEYS[1], pid), limits, redis.call('HGET', KEYS[3], pid),
        redis.call('HGET', KEYS[4], pid), flows}
