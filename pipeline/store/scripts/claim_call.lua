-- ClaimCall: take the lease on a tool call and count the attempt, and
-- optionally on other calls of its step that wait for their first claim.
-- KEYS: 1 run hash, 2 events stream, 3 call hash
-- ARGV[1]: {owner, untilms (the lease's end), now (ms), ended (run statuses
--   in which no call is claimed), claimable (call statuses that move to
--   `to`), to (the status a claimed call has: a call in it whose lease
--   expired is taken over), started, retried (the call's tool_call.started
--   and tool_call.retried entries: the script picks one by the attempt and
--   sets its step and its data {attempt}), siblings (absent: claim no other
--   call; else {max (how many at most), fresh (the status of a call never
--   claimed), skip (tools whose calls are left to their own requests)})}
-- Returns the call hash as the claim leaves it; with siblings, {that hash,
-- then id, hash of each other call claimed}.
--
-- Other calls: only in a step that runs its calls in parallel (the run
-- keeps an `open` count, lib.lua's move_open) and while another is in
-- flight; only calls in `fresh` never claimed, in the same queue, of a
-- tool not skipped. Each gets the lease of owner .. '/' .. k (k = 1, 2,
-- ...), its attempt 1 and its tool_call.started entry, as its own
-- request's claim would have given it.
local run_key, events_key, call_key = KEYS[1], KEYS[2], KEYS[3]
local a = cjson.decode(ARGV[1])
local r = redis.call('HMGET', run_key, 'status', 'open')
local rstatus, open = r[1], r[2]
if not rstatus then
  return redis.error_reply('NOT_FOUND run')
end
local call = read_fields(call_key)
local status, owner, lease_until, step = call.status, call.lease_owner, call.lease_until, call.step
if not status then
  return redis.error_reply('NOT_FOUND call')
end
if set_of(a.ended)[rstatus] then
  return redis.error_reply('STALE run is ' .. rstatus)
end
if status == a.to then
  if (tonumber(lease_until) or 0) > a.now then
    return redis.error_reply('LEASE_HELD call is held by ' .. (owner or '') .. ' until ' .. lease_until)
  end
elseif not set_of(a.claimable)[status] then
  return redis.error_reply('STALE call is ' .. status)
end
local n = (tonumber(call.attempts) or 0) + 1
local set = {'attempts', n, 'status', a.to, 'lease_owner', a.owner, 'lease_until', a.untilms, 'updated_at', a.now}
redis.call('HSET', call_key, unpack(set))
set_fields(call, set)
local e = a.started
if n > 1 then
  e = a.retried
end
e.step, e.data = step, cjson.encode({attempt = n})
emit(events_key, e)
local sib = a.siblings
if not sib then
  return fields_reply(call)
end
local out = {fields_reply(call)}
if (tonumber(open) or 0) < 2 then
  return out
end
local skip = set_of(sib.skip)
local k = 0
for _, id in ipairs(redis.call('LRANGE', part(run_key, 'step:' .. step), 0, -1)) do
  local key = part(run_key, 'call:' .. id)
  if key ~= call_key then
    -- Read whole once, checked, and returned as the claim leaves it.
    local c = read_fields(key)
    if c.status == sib.fresh and (tonumber(c.attempts) or 0) == 0 and (c.queue or '') == (call.queue or '')
        and not skip[c.tool] then
      k = k + 1
      set = {'attempts', 1, 'status', a.to, 'lease_owner', a.owner .. '/' .. k, 'lease_until', a.untilms, 'updated_at', a.now}
      redis.call('HSET', key, unpack(set))
      set_fields(c, set)
      emit(events_key, {type = a.started.type, step = step, call = id, at = a.started.at,
        data = cjson.encode({attempt = 1})})
      out[#out + 1] = id
      out[#out + 1] = fields_reply(c)
      if k == sib.max then
        break
      end
    end
  end
end
return out
