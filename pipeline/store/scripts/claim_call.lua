-- ClaimCall: take the lease on a tool call and count the attempt.
-- KEYS: 1 run hash, 2 events stream, 3 call hash
-- ARGV: 1 owner, 2 lease until (ms), 3 now (ms), 4 statuses, other than
--       running, that may move to running (",new,resuming,"), 5..10
--       tool_call.started and tool_call.retried JSON around the call's step
--       and the attempt number (before, between, after; twice)
-- Returns the call hash.
local rstatus = redis.call('HGET', KEYS[1], 'status')
if not rstatus then
  return redis.error_reply('NOT_FOUND run')
end
local call = redis.call('HMGET', KEYS[3], 'status', 'lease_owner', 'lease_until', 'step', 'attempts')
local status = call[1]
if not status then
  return redis.error_reply('NOT_FOUND call')
end
if rstatus == 'done' then
  return redis.error_reply('STALE run is done')
end
if status == 'running' then
  if (tonumber(call[3]) or 0) > tonumber(ARGV[3]) then
    return redis.error_reply('LEASE_HELD call is held by ' .. (call[2] or '') .. ' until ' .. call[3])
  end
elseif not string.find(ARGV[4], ',' .. status .. ',', 1, true) then
  return redis.error_reply('STALE call is ' .. status)
end
local n = (tonumber(call[5]) or 0) + 1
redis.call('HSET', KEYS[3], 'attempts', n, 'status', 'running', 'lease_owner', ARGV[1], 'lease_until', ARGV[2],
  'updated_at', ARGV[3])
local ev
if n > 1 then
  ev = ARGV[8] .. call[4] .. ARGV[9] .. n .. ARGV[10]
else
  ev = ARGV[5] .. call[4] .. ARGV[6] .. n .. ARGV[7]
end
redis.call('XADD', KEYS[2], '*', 'e', ev)
return redis.call('HGETALL', KEYS[3])
