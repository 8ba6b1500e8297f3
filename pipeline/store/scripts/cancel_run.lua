-- CancelRun: end a run that is not done yet from outside: cancel every call
-- of its current step that has not finished, reject its held decisions and
-- finish it cancelled; its keys expire after the retention (lib.lua).
-- KEYS: 1 run hash, 2 events stream, 3 step list, 4 seen decision ids set,
--       5 held decisions hash
-- ARGV[1]: {step, now (ms),
--   ended: the status of an ended run, which the run is then in,
--   terminal: the set of statuses of a call that has finished,
--   to: the status of a call the cancel ends, error: its error,
--   reason, detail: the termination's, finished: the run.finished entry,
--   calls: the step's calls as the caller read the list, [{id, event
--     (its tool_call.finished)}],
--   held: the held decisions as read, [{call, entry, id, event (its
--     decision.rejected)}],
--   decision: the id of the cancel_run decision ("" none): seen, with an
--     outcome, once,
--   close: how the approval requests of the calls still parked close
--     (lib.lua's close_parked)}
-- Returns the run hash. "RETRY" when the step, its list or the held
-- decisions are not what the caller read.
local run_key, events_key, list_key, seen_key, held_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local a = cjson.decode(ARGV[1])
local run = redis.call('HMGET', run_key, 'status', 'step', 'term_reason')
local status, step = run[1], run[2]
if not status then
  return redis.error_reply('NOT_FOUND run')
end
if status == a.ended then
  if a.decision ~= '' and redis.call('SADD', seen_key, a.decision) == 1 then
    inherit(run_key, seen_key)
    outcome(run_key, a.decision, '', 'rejected', 'run is already done')
  end
  return redis.error_reply('STALE run is already done (' .. (run[3] or '') .. ')')
end
if tonumber(step) ~= a.step then
  return redis.error_reply('RETRY run is at step ' .. step)
end
local ids = redis.call('LRANGE', list_key, 0, -1)
if #ids ~= #a.calls then
  return redis.error_reply('RETRY step list changed')
end
for i, c in ipairs(a.calls) do
  if ids[i] ~= c.id then
    return redis.error_reply('RETRY step list changed')
  end
end
if redis.call('HLEN', held_key) ~= #a.held then
  return redis.error_reply('RETRY held decisions changed')
end
for _, h in ipairs(a.held) do
  if redis.call('HGET', held_key, h.call) ~= h.entry then
    return redis.error_reply('RETRY held decisions changed')
  end
end
close_parked(run_key, ids, a.close)
local terminal = set_of(a.terminal)
for _, c in ipairs(a.calls) do
  local key = part(run_key, 'call:' .. c.id)
  local cs = redis.call('HGET', key, 'status')
  if cs and not terminal[cs] then
    redis.call('HSET', key, 'status', a.to, 'error', a.error, 'lease_owner', '', 'lease_until', '0',
      'updated_at', a.now)
    emit(events_key, c.event)
  end
end
for _, h in ipairs(a.held) do
  redis.call('SADD', seen_key, h.id)
  emit(events_key, h.event)
  outcome(run_key, h.id, h.call, 'rejected', 'run is done')
end
if a.decision ~= '' then
  redis.call('SADD', seen_key, a.decision)
  outcome(run_key, a.decision, '', 'applied', '')
end
redis.call('DEL', held_key)
redis.call('HSET', run_key, 'status', a.ended, unpack(termination(a.reason, '', a.detail, a.now)))
emit(events_key, a.finished)
retire(run_key)
return redis.call('HGETALL', run_key)
