-- DeferStep: give back a step the caller claimed but may not infer yet (a
-- limit of its model): the step is pending again, the claim's attempt is
-- not counted, its request is unmarked (so the sweeper requests it again)
-- and "defer" holds "<step>@<until ms>", before which no reconcile does.
-- KEYS: 1 run hash, 2 events stream
-- ARGV[1]: {step, owner, running, inferring (the step the caller holds, as
--           lib.lua's step_refusal checks it), state (the step state Go
--           moves it to), untilms, now (ms), event (the step.deferred entry)}
-- Returns 1.
local run_key, events_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local refusal = step_refusal(run_key, a)
if refusal then
  return refusal
end
give_back_step(run_key, a.state, a.now, {'defer', a.step .. '@' .. a.untilms})
emit(events_key, a.event)
return 1
