-- EndStep: once every call of the step is terminal, append the tool-result
-- messages and either end the run (its keys then expire after the
-- retention, lib.lua) or move it to the next step.
-- KEYS: 1 run hash, 2 events stream, 3 messages list, 4 step list,
--       5.. the call hashes of the step list as the caller read it, then
--       last the run's plugin state hash
-- ARGV: 1 step, 2 now (ms), 3 terminal call statuses (",succeeded,...,"),
--       4 finish ("1" ends the run, "0" goes on), 5 reason, 6 code,
--       7 detail, 8 step.ended event JSON, 9 run.finished event JSON,
--       10 n = number of calls, 11..10+n their ids in list order,
--       11+n.. tool-result message JSON, then k state updates as key, value
--       pairs ("" deletes) and last k
-- Returns {run hash, held decisions hash}: the decisions still held when
-- the run ended ({} when it goes on). "RETRY" when the step list is not
-- what the caller read (it read before the step was committed).
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
local n = tonumber(ARGV[10])
local ids = redis.call('LRANGE', KEYS[4], 0, -1)
local nstate = tonumber(ARGV[#ARGV])
local argEnd = #ARGV - 1 - 2 * nstate
if #ids ~= n or #KEYS - 5 ~= n then
  return redis.error_reply('RETRY step list changed')
end
for i = 1, n do
  if ids[i] ~= ARGV[10 + i] then
    return redis.error_reply('RETRY step list changed')
  end
end
for i = 1, n do
  local cs = redis.call('HGET', KEYS[4 + i], 'status') or 'missing'
  if not string.find(ARGV[3], ',' .. cs .. ',', 1, true) then
    return redis.error_reply('STALE call ' .. ids[i] .. ' is ' .. cs .. ', not terminal')
  end
end
set_state(KEYS[#KEYS], argEnd + 1, #ARGV - 1)
rpush(KEYS[3], ARGV, 11 + n, argEnd)
redis.call('XADD', KEYS[2], '*', 'e', ARGV[8])
if ARGV[4] == '1' then
  redis.call('HSET', KEYS[1], 'status', 'done', 'term_reason', ARGV[5], 'term_code', ARGV[6],
    'term_detail', ARGV[7], 'updated_at', ARGV[2])
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[9])
  retire(KEYS[1])
  -- The run's held decisions share its hash tag, so its slot.
  return {redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', string.sub(KEYS[1], 1, -4) .. 'held')}
else
  redis.call('HSET', KEYS[1], 'step', tonumber(step) + 1, 'step_state', 'pending', 'attempts', '0',
    'lease_owner', '', 'lease_until', '0', 'updated_at', ARGV[2])
end
return {redis.call('HGETALL', KEYS[1]), {}}
