-- CancelRun: end a run that is not done yet from outside: cancel every call
-- of its current step that has not finished, reject its held decisions and
-- finish it cancelled; its keys expire after the retention (lib.lua).
-- KEYS: 1 run hash, 2 events stream, 3 step list, 4 seen decision ids set,
--       5 held decisions hash, 6.. the call hashes of the step list as the
--       caller read it
-- ARGV: 1 step, 2 now (ms), 3 terminal call statuses (",succeeded,...,"),
--       4 detail, 5 the error of a cancelled call, 6 run.finished event
--       JSON, 7 n = number of calls, then per call its id and its
--       tool_call.finished event JSON, then m = number of held decisions,
--       then per held decision: call id, the held entry as read, decision
--       id, decision.rejected event JSON; last, the id of the cancel_run
--       decision ("" none): seen, with an outcome, once
-- Returns the run hash. "RETRY" when the step, its list or the held
-- decisions are not what the caller read.
local run = redis.call('HMGET', KEYS[1], 'status', 'step', 'term_reason')
local status, step = run[1], run[2]
if not status then
  return redis.error_reply('NOT_FOUND run')
end
local decision = ARGV[#ARGV]
if status == 'done' then
  if decision ~= '' and redis.call('SADD', KEYS[4], decision) == 1 then
    inherit(KEYS[1], KEYS[4])
    outcome(KEYS[1], decision, '', 'rejected', 'run is already done')
  end
  return redis.error_reply('STALE run is already done (' .. (run[3] or '') .. ')')
end
if tonumber(step) ~= tonumber(ARGV[1]) then
  return redis.error_reply('RETRY run is at step ' .. step)
end
local n = tonumber(ARGV[7])
local ids = redis.call('LRANGE', KEYS[3], 0, -1)
if #ids ~= n or #KEYS - 5 ~= n then
  return redis.error_reply('RETRY step list changed')
end
for i = 1, n do
  if ids[i] ~= ARGV[6 + 2 * i] then
    return redis.error_reply('RETRY step list changed')
  end
end
local h = 8 + 2 * n
local m = tonumber(ARGV[h])
if redis.call('HLEN', KEYS[5]) ~= m then
  return redis.error_reply('RETRY held decisions changed')
end
for j = 1, m do
  local a = h + 4 * (j - 1)
  if redis.call('HGET', KEYS[5], ARGV[a + 1]) ~= ARGV[a + 2] then
    return redis.error_reply('RETRY held decisions changed')
  end
end
for i = 1, n do
  local cs = redis.call('HGET', KEYS[5 + i], 'status')
  if cs and not string.find(ARGV[3], ',' .. cs .. ',', 1, true) then
    redis.call('HSET', KEYS[5 + i], 'status', 'cancelled', 'error', ARGV[5], 'lease_owner', '', 'lease_until', '0',
      'updated_at', ARGV[2])
    redis.call('XADD', KEYS[2], '*', 'e', ARGV[7 + 2 * i])
  end
end
for j = 1, m do
  local a = h + 4 * (j - 1)
  redis.call('SADD', KEYS[4], ARGV[a + 3])
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[a + 4])
  outcome(KEYS[1], ARGV[a + 3], ARGV[a + 1], 'rejected', 'run is done')
end
if decision ~= '' then
  redis.call('SADD', KEYS[4], decision)
  outcome(KEYS[1], decision, '', 'applied', '')
end
redis.call('DEL', KEYS[5])
redis.call('HSET', KEYS[1], 'status', 'done', unpack(termination('cancelled', '', ARGV[4], ARGV[2])))
redis.call('XADD', KEYS[2], '*', 'e', ARGV[6])
retire(KEYS[1])
return redis.call('HGETALL', KEYS[1])
