-- RenewStepLease: extend the lease on a step the caller is inferring.
-- KEYS: 1 run hash
-- ARGV[1]: {step, owner, running, inferring (the step the caller holds, as
--           lib.lua's step_refusal checks it), lease_until (ms)}
-- Returns 1.
local run_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local refusal = step_refusal(run_key, a)
if refusal then
  return refusal
end
redis.call('HSET', run_key, 'lease_until', a.lease_until)
return 1
