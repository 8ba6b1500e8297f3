-- RenewCallLease: extend the lease on a call the caller holds.
-- KEYS: 1 call hash
-- ARGV[1]: {owner, untilms (the lease's new end), held (the status of a
--   call under a lease: running)}
-- Returns 1.
local call_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local call = redis.call('HMGET', call_key, 'status', 'lease_owner')
if not call[1] then
  return redis.error_reply('NOT_FOUND call')
end
if call[1] ~= a.held or call[2] ~= a.owner then
  return redis.error_reply('LEASE_LOST call is ' .. call[1] .. ', held by ' .. (call[2] or ''))
end
redis.call('HSET', call_key, 'lease_until', a.untilms)
return 1
