if redis.call('HGET', ARGV[1], 'fingerprint') ~= ARGV[2] then return 0 end
redis.call('HSET', ARGV[1], 'body', ARGV[3])
redis.call('PEXPIRE', ARGV[1], ARGV[4])
return 1
