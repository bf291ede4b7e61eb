local body = redis.call('HGET', ARGV[1], 'body')
if body then return body end
redis.call('HSET', ARGV[1], 'fingerprint', ARGV[2], 'body', ARGV[3])
redis.call('PEXPIRE', ARGV[1], ARGV[4])
return false
