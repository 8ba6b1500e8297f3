-- EndStep: once every call of the step is terminal, append the tool-result
-- messages and either end the run (its keys then expire after the
-- retention, lib.lua) or move it to the next step, claimed at once for a
-- caller that runs it (as claim_step claims it: its first attempt). It
-- reads the step's calls itself and decides from what it reads.
-- KEYS: 1 run hash, 2 events stream, 3 messages list, 4 plugin state hash
-- ARGV[1]: {step, now (ms), expect {status, state} (the run's status and
--   step state Go expects), terminal (the statuses that end a call), ids
--   (the step's call ids in list order, as the caller read them and made
--   the messages of; null: any), messages (the tool-result messages, JSON
--   each, in call order), updates (plugin state updates, {key, value}; ""
--   deletes), failed (the action.failed entries of StepEnd), ended (the
--   step.ended entry), finish (absent: the run goes
--   on; else {status (the run's, Go moved it), reason, code, detail, event
--   (the run.finished entry)}), next (with the run going on: the next
--   step's {state, attempts, owner, untilms} as Go computed them, and
--   event, its step.started entry when it is claimed)}
-- Returns {run hash, held decisions hash}: the run as the script left it,
-- and the decisions still held when the run ended ({} when it goes on).
local run_key, events_key, msgs_key, state_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local a = cjson.decode(ARGV[1])
local run = read_fields(run_key)
local status, step, state = run.status, run.step, run.step_state
if not status then
  return redis.error_reply('NOT_FOUND run')
end
if status ~= a.expect.status then
  return redis.error_reply('STALE run is ' .. status)
end
if tonumber(step) ~= a.step then
  return redis.error_reply('STALE run is at step ' .. step)
end
if state ~= a.expect.state then
  return redis.error_reply('STALE step ' .. step .. ' is ' .. state .. ', not ' .. a.expect.state)
end
-- The step's calls, as its list names them (fixed once the step is
-- committed), each terminal.
local ids = redis.call('LRANGE', part(run_key, 'step:' .. step), 0, -1)
if type(a.ids) == 'table' then
  local same = #ids == #a.ids
  for i = 1, #ids do
    same = same and ids[i] == a.ids[i]
  end
  if not same then
    return redis.error_reply('STALE step ' .. step .. ' has ' .. #ids .. ' calls, not the ' .. #a.ids .. ' read')
  end
end
local terminal = set_of(a.terminal)
for _, id in ipairs(ids) do
  local cs = redis.call('HGET', part(run_key, 'call:' .. id), 'status') or 'missing'
  if not terminal[cs] then
    return redis.error_reply('STALE call ' .. id .. ' is ' .. cs .. ', not terminal')
  end
end
put_state(state_key, a.updates)
emit_failed(events_key, a.failed)
rpush(msgs_key, a.messages, 1, #a.messages)
emit(events_key, a.ended)
if a.finish then
  local set = {'status', a.finish.status, unpack(termination(a.finish.reason, a.finish.code, a.finish.detail, a.now))}
  redis.call('HSET', run_key, unpack(set))
  set_fields(run, set)
  emit(events_key, a.finish.event)
  retire(run_key, step)
  -- The run's held decisions share its hash tag, so its slot.
  return {fields_reply(run), redis.call('HGETALL', part(run_key, 'held'))}
end
local set = {'step', a.step + 1, 'step_state', a.next.state, 'attempts', a.next.attempts,
  'lease_owner', a.next.owner, 'lease_until', a.next.untilms, 'updated_at', a.now}
redis.call('HSET', run_key, unpack(set))
set_fields(run, set)
if a.next.event then
  emit(events_key, a.next.event)
end
return {fields_reply(run), {}}
