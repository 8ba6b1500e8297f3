-- RenewStepLease: extend the lease on a step the caller is inferring.
-- KEYS: 1 run hash
-- ARGV: 1 step, 2 owner, 3 lease until (ms)
-- Returns 1.
local run = redis.call('HMGET', KEYS[1], 'status', 'step', 'step_state', 'lease_owner')
if not run[1] then
  return redis.error_reply('NOT_FOUND run')
end
if run[1] ~= 'running' or run[2] ~= ARGV[1] or run[3] ~= 'inferring' or run[4] ~= ARGV[2] then
  return redis.error_reply('LEASE_LOST run is ' .. run[1] .. ' at step ' .. run[2] .. ' (' .. (run[3] or '') .. '), held by ' .. (run[4] or ''))
end
redis.call('HSET', KEYS[1], 'lease_until', ARGV[3])
return 1
