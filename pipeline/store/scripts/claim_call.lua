-- ClaimCall: take the lease on a tool call and count the attempt.
-- KEYS: 1 run hash, 2 events stream, 3 call hash
-- ARGV: 1 owner, 2 lease until (ms), 3 now (ms), 4 statuses, other than
--       running, that may move to running (",new,resuming,"), 5..10
--       tool_call.started and tool_call.retried JSON around the call's step
--       and the attempt number (before, between, after; twice)
-- Returns the call hash as the claim leaves it.
local rstatus = redis.call('HGET', KEYS[1], 'status')
if not rstatus then
  return redis.error_reply('NOT_FOUND run')
end
local call, at = read_hash(KEYS[3])
local status, owner, lease_until, step = call[at.status], call[at.lease_owner], call[at.lease_until], call[at.step]
if not status then
  return redis.error_reply('NOT_FOUND call')
end
if rstatus == 'done' then
  return redis.error_reply('STALE run is done')
end
if status == 'running' then
  if (tonumber(lease_until) or 0) > tonumber(ARGV[3]) then
    return redis.error_reply('LEASE_HELD call is held by ' .. (owner or '') .. ' until ' .. lease_until)
  end
elseif not string.find(ARGV[4], ',' .. status .. ',', 1, true) then
  return redis.error_reply('STALE call is ' .. status)
end
local n = (tonumber(call[at.attempts]) or 0) + 1
local set = {'attempts', n, 'status', 'running', 'lease_owner', ARGV[1], 'lease_until', ARGV[2], 'updated_at', ARGV[3]}
redis.call('HSET', KEYS[3], unpack(set))
patch(call, at, unpack(set))
local ev
if n > 1 then
  ev = ARGV[8] .. step .. ARGV[9] .. n .. ARGV[10]
else
  ev = ARGV[5] .. step .. ARGV[6] .. n .. ARGV[7]
end
redis.call('XADD', KEYS[2], '*', 'e', ev)
return call
