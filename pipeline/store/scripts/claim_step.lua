-- ClaimStep: take the lease on step N of a run and count the attempt.
-- KEYS: 1 run hash, 2 events stream
-- ARGV: 1 step, 2 owner, 3 lease until (ms), 4 now (ms), 5 run.started event
--       JSON, 6..9 step.started and step.retried JSON around the attempt
--       number (before, after, before, after)
-- Returns the run hash as the claim leaves it.
local run, at = read_hash(KEYS[1])
local status, step, state = run[at.status], run[at.step], run[at.step_state]
local owner, lease_until = run[at.lease_owner], run[at.lease_until]
if not status then
  return redis.error_reply('NOT_FOUND run')
end
if status == 'done' or status == 'waiting' then
  return redis.error_reply('STALE run is ' .. status)
end
if tonumber(step) ~= tonumber(ARGV[1]) then
  return redis.error_reply('STALE run is at step ' .. step)
end
if state == 'tools' then
  return redis.error_reply('STALE step ' .. step .. ' is already committed')
end
if state == 'inferring' and (tonumber(lease_until) or 0) > tonumber(ARGV[4]) then
  return redis.error_reply('LEASE_HELD step ' .. step .. ' is held by ' .. (owner or '') .. ' until ' .. lease_until)
end
if status == 'created' then
  redis.call('HSET', KEYS[1], 'status', 'running')
  patch(run, at, {'status', 'running'})
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[5])
end
local n = (tonumber(run[at.attempts]) or 0) + 1
local set = {'attempts', n, 'step_state', 'inferring', 'lease_owner', ARGV[2], 'lease_until', ARGV[3],
  'updated_at', ARGV[4]}
redis.call('HSET', KEYS[1], unpack(set))
patch(run, at, set)
local ev
if n > 1 then
  ev = ARGV[8] .. n .. ARGV[9]
else
  ev = ARGV[6] .. n .. ARGV[7]
end
redis.call('XADD', KEYS[2], '*', 'e', ev)
return run
