-- SetWaiting: the step's calls are all parked or terminal and at least one
-- is parked, so the run waits for decisions. Its event stream, which gets
-- nothing more until a decision, is compacted (lib.lua).
-- KEYS: 1 run hash, 2 events stream
-- ARGV[1]: {step, now (ms), expect {status, state} (the run's status and
--   step state Go expects), to (the status Go moves the run to), reason
--   (its termination reason), in_flight (the statuses of a call in
--   flight), parked (the status of a parked call), sequential (true: only
--   the calls up to the first that is not terminal count, the ones after
--   it wait for it), event (the run.finished entry)}
-- Returns the run hash.
local run_key, events_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local run = redis.call('HMGET', run_key, 'status', 'step', 'step_state')
local status, step, state = run[1], run[2], run[3]
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
local in_flight = set_of(a.in_flight)
local parked = 0
for _, id in ipairs(redis.call('LRANGE', part(run_key, 'step:' .. step), 0, -1)) do
  local cs = redis.call('HGET', part(run_key, 'call:' .. id), 'status') or 'missing'
  if in_flight[cs] then
    return redis.error_reply('STALE call ' .. id .. ' is ' .. cs)
  end
  if cs == a.parked then
    parked = parked + 1
    if a.sequential then
      break
    end
  end
end
if parked == 0 then
  return redis.error_reply('STALE no call of step ' .. step .. ' is ' .. a.parked)
end
-- A running run has no termination code or detail to clear (only an
-- ended one has them): the reason says it waits.
redis.call('HSET', run_key, 'status', a.to, 'term_reason', a.reason, 'updated_at', a.now)
emit(events_key, a.event)
compact(events_key, 0) -- a waiting run's keys have no time to live
return redis.call('HGETALL', run_key)
