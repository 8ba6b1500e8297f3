-- ClaimStep: take the lease on step N of a run and count the attempt.
-- KEYS: 1 run hash, 2 events stream
-- ARGV[1]: {step, owner, lease_until (ms), now (ms),
--           created, running (the run statuses a claim finds: a created
--           run is started, moved to running),
--           from (the step states a claim takes a step from), to (the
--           state it moves it to, whose lease an expired one is),
--           started (the run.started entry), first and retried (the
--           step.started and step.retried entries, whose data, the
--           attempt, the script sets)}
-- Returns the run hash as the claim leaves it.
local run_key, events_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local run = read_fields(run_key)
local status, step, state, owner, lease_until = run.status, run.step, run.step_state, run.lease_owner, run.lease_until
if not status then
  return redis.error_reply('NOT_FOUND run')
end
if status ~= a.created and status ~= a.running then
  return redis.error_reply('STALE run is ' .. status)
end
if tonumber(step) ~= a.step then
  return redis.error_reply('STALE run is at step ' .. step)
end
local claimable = false
for _, s in ipairs(a.from) do
  claimable = claimable or s == state
end
if not claimable then
  return redis.error_reply('STALE step ' .. step .. ' is ' .. (state or '') .. ': already committed')
end
if state == a.to and (tonumber(lease_until) or 0) > a.now then
  return redis.error_reply('LEASE_HELD step ' .. step .. ' is held by ' .. (owner or '') .. ' until ' .. lease_until)
end
local n = (tonumber(run.attempts) or 0) + 1
local set = {'attempts', n, 'step_state', a.to, 'lease_owner', a.owner, 'lease_until', a.lease_until, 'updated_at', a.now}
if status == a.created then
  set[#set + 1], set[#set + 2] = 'status', a.running
  emit(events_key, a.started)
end
redis.call('HSET', run_key, unpack(set))
set_fields(run, set)
local ev = a.first
if n > 1 then
  ev = a.retried
end
ev.data = cjson.encode({attempt = n})
emit(events_key, ev)
return fields_reply(run)
