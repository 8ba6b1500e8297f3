-- DeferStep: give back a step the caller claimed but may not infer yet (a
-- limit of its model): the step is pending again, the claim's attempt is
-- not counted, its request is unmarked (so the sweeper requests it again)
-- and "defer" holds "<step>@<until ms>", before which no reconcile does.
-- KEYS: 1 run hash, 2 events stream
-- ARGV[1]: {step, owner, state (the step state Go moves it to), until (ms),
--           now (ms), event (the step.deferred entry)}
-- Returns 1.
local a = cjson.decode(ARGV[1])
local refusal = step_refusal(KEYS[1], tostring(a.step), a.owner)
if refusal then
  return refusal
end
local attempts = tonumber(redis.call('HGET', KEYS[1], 'attempts') or '1')
redis.call('HSET', KEYS[1], 'step_state', a.state, 'lease_owner', '', 'lease_until', 0,
  'attempts', math.max(attempts - 1, 0), 'step_sent', '', 'defer', a.step .. '@' .. a.untilms, 'updated_at', a.now)
emit(KEYS[2], a.event)
return 1
