-- AppendDelta: append a streamed text delta to the events of a step the
-- caller is inferring (a worker that lost the step writes nothing). The
-- run's delta_from field keeps the first delta's id until CommitStep trims
-- the deltas (trim_deltas in lib.lua).
-- KEYS: 1 run hash, 2 events stream
-- ARGV: 1 step, 2 owner, 3 message.delta event JSON
-- Returns 1.
local run = redis.call('HMGET', KEYS[1], 'status', 'step', 'step_state', 'lease_owner')
if not run[1] then
  return redis.error_reply('NOT_FOUND run')
end
if run[1] ~= 'running' or run[2] ~= ARGV[1] or run[3] ~= 'inferring' or run[4] ~= ARGV[2] then
  return redis.error_reply('LEASE_LOST step ' .. ARGV[1] .. ' is not being inferred by ' .. ARGV[2])
end
local id = redis.call('XADD', KEYS[2], '*', 'e', ARGV[3])
redis.call('HSETNX', KEYS[1], 'delta_from', id)
return 1
