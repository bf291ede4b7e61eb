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
