-- ClaimStep: take the lease on step N of a run and count the attempt.
-- KEYS: 1 run hash, 2 events stream
-- ARGV: 1 step, 2 owner, 3 lease until (ms), 4 now (ms), 5 run.started event
--       JSON, 6..9 step.started and step.retried JSON around the attempt
--       number (before, after, before, after)
-- Returns the run hash.
local run = read_hash(KEYS[1])
if not run then
  return redis.error_reply('NOT_FOUND run')
end
local status, step, state = run.status, run.step, run.step_state
if status == 'done' or status == 'waiting' then
  return redis.error_reply('STALE run is ' .. status)
end
if tonumber(step) ~= tonumber(ARGV[1]) then
  return redis.error_reply('STALE run is at step ' .. step)
end
if state == 'tools' then
  return redis.error_reply('STALE step ' .. step .. ' is already committed')
end
if state == 'inferring' and (tonumber(run.lease_until) or 0) > tonumber(ARGV[4]) then
  return redis.error_reply('LEASE_HELD step ' .. step .. ' is held by ' .. (run.lease_owner or '') .. ' until ' .. run.lease_until)
end
if status == 'created' then
  hset(KEYS[1], run, 'status', 'running')
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[5])
end
local n = (tonumber(run.attempts) or 0) + 1
hset(KEYS[1], run, 'attempts', tostring(n), 'step_state', 'inferring', 'lease_owner', ARGV[2],
  'lease_until', ARGV[3], 'updated_at', ARGV[4])
local ev
if n > 1 then
  ev = ARGV[8] .. n .. ARGV[9]
else
  ev = ARGV[6] .. n .. ARGV[7]
end
redis.call('XADD', KEYS[2], '*', 'e', ev)
return flat(run)
