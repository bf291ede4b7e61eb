local P, pid = ARGV[1], ARGV[2]
local limits = redis.call('HGET', P .. 'limits', pid)
local flows = {}
if limits then flows = redis.call('HGETALL', P .. 'flows:' .. pid) end
return {redis.call('HGET', P .. 'restrictions', pid), limits,
        redis.call('HGET', P .. 'play_sessions', pid), redis.call('HGET', P .. 'play_seen', pid),
        flows}
