-- CommitStep: append the assistant turn, create its tool calls (status new)
-- and move the step to tools, if the caller still holds the step.
-- KEYS: 1 run hash, 2 events stream, 3 messages list, 4 step list,
--       5.. one call hash per call, in index order
-- ARGV: 1 step, 2 owner, 3 now (ms), 4 run id, 5 input tokens, 6 output
--       tokens, 7 assistant message JSON, 8 message.assistant event JSON,
--       then per call i (from 0) at 9+6i: id, index, tool, queue, arguments,
--       tool_call.created event JSON
-- Returns {run hash, call hash, call hash, ...}.
local run = redis.call('HMGET', KEYS[1], 'status', 'step', 'step_state', 'lease_owner')
local status, step, state, owner = run[1], run[2], run[3], run[4]
if not status then
  return redis.error_reply('NOT_FOUND run')
end
if tonumber(step) ~= tonumber(ARGV[1]) then
  return redis.error_reply('STALE run is at step ' .. step)
end
if state == 'tools' then
  return redis.error_reply('STALE step ' .. step .. ' is already committed')
end
if status ~= 'running' then
  return redis.error_reply('STALE run is ' .. status)
end
if state ~= 'inferring' then
  return redis.error_reply('STALE step ' .. step .. ' is ' .. state .. ', not inferring')
end
if owner ~= ARGV[2] then
  return redis.error_reply('LEASE_LOST step ' .. step .. ' is held by ' .. (owner or ''))
end
local ncalls = #KEYS - 4
for i = 1, ncalls do
  if redis.call('EXISTS', KEYS[4 + i]) == 1 then
    return redis.error_reply('CONFLICT call ' .. ARGV[9 + 6 * (i - 1)] .. ' already has a record')
  end
end
redis.call('RPUSH', KEYS[3], ARGV[7])
redis.call('HINCRBY', KEYS[1], 'in_tok', ARGV[5])
redis.call('HINCRBY', KEYS[1], 'out_tok', ARGV[6])
redis.call('HSET', KEYS[1], 'step_state', 'tools', 'lease_owner', '', 'lease_until', '0', 'updated_at', ARGV[3])
redis.call('XADD', KEYS[2], '*', 'e', ARGV[8])
local out = {redis.call('HGETALL', KEYS[1])}
for i = 1, ncalls do
  local a = 9 + 6 * (i - 1)
  redis.call('HSET', KEYS[4 + i], 'id', ARGV[a], 'run_id', ARGV[4], 'step', ARGV[1], 'idx', ARGV[a + 1],
    'tool', ARGV[a + 2], 'queue', ARGV[a + 3], 'status', 'new', 'args', ARGV[a + 4], 'result', '',
    'error', '', 'attempts', '0', 'lease_owner', '', 'lease_until', '0', 'updated_at', ARGV[3])
  redis.call('RPUSH', KEYS[4], ARGV[a])
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[a + 5])
  out[#out + 1] = redis.call('HGETALL', KEYS[4 + i])
end
return out
