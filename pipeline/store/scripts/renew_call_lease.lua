-- RenewCallLease: extend the lease on a running call the caller holds.
-- KEYS: 1 call hash
-- ARGV: 1 owner, 2 lease until (ms)
-- Returns 1.
local call = redis.call('HMGET', KEYS[1], 'status', 'lease_owner')
if not call[1] then
  return redis.error_reply('NOT_FOUND call')
end
if call[1] ~= 'running' or call[2] ~= ARGV[1] then
  return redis.error_reply('LEASE_LOST call is ' .. call[1] .. ', held by ' .. (call[2] or ''))
end
redis.call('HSET', KEYS[1], 'lease_until', ARGV[2])
return 1
