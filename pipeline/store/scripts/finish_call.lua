-- FinishCall: record the outcome of a running call the caller holds.
-- KEYS: 1 call hash, 2 events stream
-- ARGV: 1 owner, 2 now (ms), 3 status, 4 result JSON, 5 error,
--       6 tool_call.finished event JSON
-- Returns the call hash.
local call = redis.call('HMGET', KEYS[1], 'status', 'lease_owner')
if not call[1] then
  return redis.error_reply('NOT_FOUND call')
end
if call[1] ~= 'running' then
  return redis.error_reply('STALE call is ' .. call[1])
end
if call[2] ~= ARGV[1] then
  return redis.error_reply('LEASE_LOST call is held by ' .. (call[2] or ''))
end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'result', ARGV[4], 'error', ARGV[5], 'lease_owner', '',
  'lease_until', '0', 'updated_at', ARGV[2])
redis.call('XADD', KEYS[2], '*', 'e', ARGV[6])
return redis.call('HGETALL', KEYS[1])
