-- ClaimCall: take the lease on a tool call and count the attempt, and
-- optionally on other calls of its step that wait for their first claim.
-- KEYS: 1 run hash, 2 events stream, 3 call hash
-- ARGV: 1 owner, 2 lease until (ms), 3 now (ms), 4 statuses, other than
--       running, that may move to running (",new,resuming,"), 5..10
--       tool_call.started and tool_call.retried JSON around the call's step
--       and the attempt number (before, between, after; twice), 11 how many
--       other calls of the step to claim with it, at most (absent or 0:
--       none), 12..14 tool_call.started JSON of such a call around its step
--       and its id (JSON-encoded here), 15.. tools whose calls are left to
--       their own requests
-- Returns the call hash as the claim leaves it; when ARGV 11 is above 0,
-- {that hash, then id, hash of each other call claimed}.
--
-- Other calls: only in a step that runs its calls in parallel (the run has
-- an open count) and while others are in flight; only calls that are new
-- and never claimed, in the same queue, of a tool not listed. Each gets
-- the lease of owner .. '/' .. k (k = 1, 2, ...) and its attempt 1, as its
-- own request's claim would have given it.
local r = redis.call('HMGET', KEYS[1], 'status', 'open')
local rstatus, open = r[1], r[2]
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
patch(call, at, set)
local ev
if n > 1 then
  ev = ARGV[8] .. step .. ARGV[9] .. n .. ARGV[10]
else
  ev = ARGV[5] .. step .. ARGV[6] .. n .. ARGV[7]
end
redis.call('XADD', KEYS[2], '*', 'e', ev)
local max = tonumber(ARGV[11] or '0')
if max == 0 then
  return call
end
local out = {call}
if (tonumber(open) or 0) < 2 then
  return out
end
local skip = {}
for i = 15, #ARGV do
  skip[ARGV[i]] = true
end
local base = string.sub(KEYS[1], 1, -4)
local k = 0
for _, id in ipairs(redis.call('LRANGE', base .. 'step:' .. step, 0, -1)) do
  local key = base .. 'call:' .. id
  if key ~= KEYS[3] then
    -- Read whole once, checked, and returned as the claim leaves it.
    local c, cat = read_hash(key)
    if c[cat.status] == 'new' and (tonumber(c[cat.attempts]) or 0) == 0 and (c[cat.queue] or '') == (call[at.queue] or '')
        and not skip[c[cat.tool]] then
      k = k + 1
      set = {'attempts', 1, 'status', 'running', 'lease_owner', ARGV[1] .. '/' .. k, 'lease_until', ARGV[2], 'updated_at', ARGV[3]}
      redis.call('HSET', key, unpack(set))
      patch(c, cat, set)
      redis.call('XADD', KEYS[2], '*', 'e', ARGV[12] .. step .. ARGV[13] .. cjson.encode(id) .. ARGV[14])
      out[#out + 1] = id
      out[#out + 1] = c
      if k == max then
        break
      end
    end
  end
end
return out
