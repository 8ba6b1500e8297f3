-- DeferStep: give back a step the caller claimed but may not infer yet (a
-- limit of its model): the step is pending again, the claim's attempt is
-- not counted, its request is unmarked (so the sweeper requests it again)
-- and "defer" holds "<step>@<until ms>", before which no reconcile does.
-- KEYS: 1 run hash, 2 events stream
-- ARGV: 1 step, 2 owner, 3 deferred until (ms), 4 now (ms), 5 step.deferred
--       event JSON
-- Returns 1.
local refusal = step_refusal(KEYS[1], ARGV[1], ARGV[2])
if refusal then
  return refusal
end
local attempts = tonumber(redis.call('HGET', KEYS[1], 'attempts') or '1')
redis.call('HSET', KEYS[1], 'step_state', 'pending', 'lease_owner', '', 'lease_until', 0,
  'attempts', math.max(attempts - 1, 0), 'step_sent', '', 'defer', ARGV[1] .. '@' .. ARGV[3], 'updated_at', ARGV[4])
redis.call('XADD', KEYS[2], '*', 'e', ARGV[5])
return 1
