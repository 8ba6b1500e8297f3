-- RenewStepLease: extend the lease on a step the caller is inferring.
-- KEYS: 1 run hash
-- ARGV: 1 step, 2 owner, 3 lease until (ms)
-- Returns 1.
local refusal = step_refusal(KEYS[1], ARGV[1], ARGV[2])
if refusal then
  return refusal
end
redis.call('HSET', KEYS[1], 'lease_until', ARGV[3])
return 1
