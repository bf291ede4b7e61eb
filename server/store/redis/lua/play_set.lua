local S, N, pid = ARGV[1] .. 'play_sessions', ARGV[1] .. 'play_seen', ARGV[2]
if (redis.call('HGET', S, pid) or '') ~= ARGV[3] then return 0 end
if (redis.call('HGET', N, pid) or '') ~= ARGV[4] then return 0 end
redis.call('HSET', S, pid, ARGV[5])
redis.call('HSET', N, pid, ARGV[6])
return 1
