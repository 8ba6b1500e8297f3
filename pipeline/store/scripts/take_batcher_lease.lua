-- TakeBatcherLease: take or renew the lease of a model's batcher: free or
-- already the caller's, it is the caller's until now + ttl; another's that
-- has not run out is left alone (Redis expires it when it runs out).
-- KEYS: 1 the lease
-- ARGV[1]: {owner, ttl (ms)}
-- Returns 1 when the caller holds the lease, 0 when another does.
local lease_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local holder = redis.call('GET', lease_key)
if holder and holder ~= a.owner then
  return 0
end
redis.call('SET', lease_key, a.owner, 'PX', a.ttl)
return 1
