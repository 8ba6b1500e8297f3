-- SetWaiting: the step's calls are all parked or terminal and at least one
-- is parked, so the run waits for decisions. Its event stream, which gets
-- nothing more until a decision, is compacted (lib.lua).
-- KEYS: 1 run hash, 2 events stream, 3 step list,
--       4.. the call hashes of the step list as the caller read it
-- ARGV: 1 step, 2 now (ms), 3 call statuses that keep a run running
--       (",new,running,resuming,"), 4 run.finished event JSON,
--       5 n = number of calls, 6..5+n their ids in list order, 6+n "1" when
--       the step runs its calls sequentially: then only the calls up to the
--       first one that is not terminal count (the ones after it wait for it)
-- Returns the run hash. "RETRY" when the step list is not what the caller
-- read.
local run = redis.call('HMGET', KEYS[1], 'status', 'step', 'step_state')
local status, step, state = run[1], run[2], run[3]
if not status then
  return redis.error_reply('NOT_FOUND run')
end
if status ~= 'running' then
  return redis.error_reply('STALE run is ' .. status)
end
if tonumber(step) ~= tonumber(ARGV[1]) then
  return redis.error_reply('STALE run is at step ' .. step)
end
if state ~= 'tools' then
  return redis.error_reply('STALE step ' .. step .. ' is ' .. state .. ', not tools')
end
local n = tonumber(ARGV[5])
local ids = redis.call('LRANGE', KEYS[3], 0, -1)
if #ids ~= n or #KEYS - 3 ~= n then
  return redis.error_reply('RETRY step list changed')
end
for i = 1, n do
  if ids[i] ~= ARGV[5 + i] then
    return redis.error_reply('RETRY step list changed')
  end
end
local parked = 0
for i = 1, n do
  local cs = redis.call('HGET', KEYS[3 + i], 'status') or 'missing'
  if string.find(ARGV[3], ',' .. cs .. ',', 1, true) then
    return redis.error_reply('STALE call ' .. ids[i] .. ' is ' .. cs)
  end
  if cs == 'suspended' then
    parked = parked + 1
    if ARGV[6 + n] == '1' then
      break
    end
  end
end
if parked == 0 then
  return redis.error_reply('STALE no call of step ' .. step .. ' is suspended')
end
-- A running run has no termination code or detail to clear (only an
-- ended one has them): the reason says it waits.
redis.call('HSET', KEYS[1], 'status', 'waiting', 'term_reason', 'suspended', 'updated_at', ARGV[2])
redis.call('XADD', KEYS[2], '*', 'e', ARGV[4])
compact(KEYS[2], 0) -- a waiting run's keys have no time to live
return redis.call('HGETALL', KEYS[1])
