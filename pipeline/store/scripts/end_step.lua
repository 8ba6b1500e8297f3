-- EndStep: once every call of the step is terminal, append the tool-result
-- messages and either end the run (its keys then expire after the
-- retention, lib.lua) or move it to the next step, claimed at once for a
-- caller that runs it (as claim_step claims it: its first attempt).
-- KEYS: 1 run hash, 2 events stream, 3 messages list, 4 step list,
--       5.. the call hashes of the step list as the caller read it, then
--       last the run's plugin state hash
-- ARGV: 1 step, 2 now (ms), 3 terminal call statuses (",succeeded,...,"),
--       4 finish ("1" ends the run, "0" goes on), 5 reason, 6 code,
--       7 detail, 8 step.ended event JSON, 9 run.finished event JSON,
--       10 the owner that claims the next step ("": none), 11 its lease
--       until (ms), 12 the claimed step's step.started event JSON,
--       13 the run's created_at as the caller's one read of the run and
--       its step saw every call terminal ("": it did not), 14 n = number
--       of calls, 15..14+n their ids in list order, 15+n.. tool-result
--       message JSON, then k state updates as key, value pairs ("" deletes)
--       and last k
-- Returns {run hash, held decisions hash}: the run as the script left it,
-- and the decisions still held when the run ended ({} when it goes on).
-- "RETRY" when the step list is not what the caller read (it read before
-- the step was committed).
local run, at = read_hash(KEYS[1])
local status, step, state = run[at.status], run[at.step], run[at.step_state]
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
local n = tonumber(ARGV[14])
local nstate = tonumber(ARGV[#ARGV])
local argEnd = #ARGV - 1 - 2 * nstate
if #KEYS - 5 ~= n then
  return redis.error_reply('RETRY step list changed')
end
-- The statuses of the step's calls, checked against the step list; not
-- read again when the caller saw them all terminal in one read of this
-- run (the same run: its created_at) at this step, committed, as it is
-- here: a terminal status is final and the calls of a committed step are
-- fixed (ADR 0045). A call commit_step marked "alone" (the only call of
-- its step) is the whole list when its step is this one: one read gives
-- both. Any other step reads its list.
local function check()
  local ids, statuses
  local only = n == 1 and redis.call('HMGET', KEYS[5], 'status', 'alone', 'step')
  if only and only[2] and tonumber(only[3]) == tonumber(step) then
    ids, statuses = {ARGV[15]}, {only[1]}
  else
    ids = redis.call('LRANGE', KEYS[4], 0, -1)
    if #ids ~= n then
      return redis.error_reply('RETRY step list changed')
    end
    for i = 1, n do
      if ids[i] ~= ARGV[14 + i] then
        return redis.error_reply('RETRY step list changed')
      end
    end
    statuses = {}
    for i = 1, n do
      statuses[i] = redis.call('HGET', KEYS[4 + i], 'status')
    end
  end
  for i = 1, n do
    local cs = statuses[i] or 'missing'
    if not string.find(ARGV[3], ',' .. cs .. ',', 1, true) then
      return redis.error_reply('STALE call ' .. ids[i] .. ' is ' .. cs .. ', not terminal')
    end
  end
end
if ARGV[13] == '' or ARGV[13] ~= run[at.created_at] then
  local refused = check()
  if refused then
    return refused
  end
end
set_state(KEYS[#KEYS], argEnd + 1, #ARGV - 1)
rpush(KEYS[3], ARGV, 15 + n, argEnd)
redis.call('XADD', KEYS[2], '*', 'e', ARGV[8])
if ARGV[4] == '1' then
  local set = {'status', 'done', unpack(termination(ARGV[5], ARGV[6], ARGV[7], ARGV[2]))}
  redis.call('HSET', KEYS[1], unpack(set))
  patch(run, at, set)
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[9])
  retire(KEYS[1], step)
  -- The run's held decisions share its hash tag, so its slot.
  return {run, redis.call('HGETALL', string.sub(KEYS[1], 1, -4) .. 'held')}
end
local set = {'step', tonumber(step) + 1, 'step_state', 'pending', 'attempts', '0', 'lease_owner', '',
  'lease_until', '0', 'updated_at', ARGV[2]}
if ARGV[10] ~= '' then
  set[4], set[6], set[8], set[10] = 'inferring', '1', ARGV[10], ARGV[11]
end
redis.call('HSET', KEYS[1], unpack(set))
patch(run, at, set)
if ARGV[10] ~= '' then
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[12])
end
return {run, {}}
