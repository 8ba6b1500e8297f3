-- AwaitInference: park a step the caller claimed whose request has joined
-- its model's open batch (batch inference): the step awaits its answer,
-- nobody holds it, the claim's attempt is not counted (the answer's claim
-- counts it) unless `counted` says so (the retry of an error answer, whose
-- request is the next attempt's), its request is unmarked, and "awaiting" names the custom_id
-- whose answer alone may wake it (answer_inference).
-- KEYS: 1 run hash, 2 events stream
-- ARGV[1]: {step, owner, running, inferring (the step the caller holds, as
--           lib.lua's step_refusal checks it), state (the step state Go
--           moves it to), custom_id, counted (keep the claim's attempt),
--           now (ms), event (the step.awaiting_inference entry)}
-- Returns 1.
local run_key, events_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local refusal = step_refusal(run_key, a)
if refusal then
  return refusal
end
give_back_step(run_key, a.state, a.now, {'awaiting', a.custom_id})
if a.counted then
  redis.call('HINCRBY', run_key, 'attempts', 1)
end
emit(events_key, a.event)
return 1
