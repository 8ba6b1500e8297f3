-- AppendDelta: append a streamed text delta to the events of a step the
-- caller is inferring (a worker that lost the step writes nothing). The
-- run's delta_from field keeps the first delta's id until CommitStep trims
-- the deltas (trim_deltas in lib.lua).
-- KEYS: 1 run hash, 2 events stream
-- ARGV[1]: {step, owner, running, inferring (the step the caller holds, as
--           lib.lua's step_refusal checks it), event (the message.delta
--           entry)}
-- Returns 1.
local run_key, events_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local refusal = step_refusal(run_key, a)
if refusal then
  return refusal
end
redis.call('HSETNX', run_key, 'delta_from', emit(events_key, a.event))
return 1
