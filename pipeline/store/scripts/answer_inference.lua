-- AnswerInference: hand a batch's answer to the step that awaits it. Only
-- a run still running at that step, awaiting that custom_id, takes it: the
-- answer is kept beside the run ("answer": {step, body}) and the step is
-- pending again, for its claim to commit the answer instead of inferring.
-- Any other answer (a duplicate, one for a cancelled run or an older
-- attempt) changes nothing.
-- KEYS: 1 run hash
-- ARGV[1]: {step, custom_id, running (the run status it must have),
--           awaiting (the step state it must have), to (the state Go moves
--           it to), body (the answer, JSON text kept as is), now (ms)}
-- Returns 1 when the step took the answer, 0 when not.
local run_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local r = redis.call('HMGET', run_key, 'status', 'step', 'step_state', 'awaiting')
if r[1] ~= a.running or tonumber(r[2]) ~= a.step or r[3] ~= a.awaiting or r[4] ~= a.custom_id then
  return 0
end
local answer = part(run_key, 'answer')
redis.call('HSET', answer, 'step', a.step, 'body', a.body)
inherit(run_key, answer)
redis.call('HSET', run_key, 'step_state', a.to, 'awaiting', '', 'updated_at', a.now)
return 1
