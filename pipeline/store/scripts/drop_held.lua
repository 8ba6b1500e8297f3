-- DropHeld: reject a held decision that was never applied (its hold
-- expired, or its call will never park).
-- KEYS: 1 run hash, 2 call hash, 3 events stream, 4 seen decision ids set,
--       5 held decisions hash
-- ARGV[1]: {id (the decision's), call (its id), reason (for the outbox of
--   decision outcomes), event (decision.rejected; the script sets its step)}
-- Returns 1.
local run_key, call_key, events_key, seen_key, held_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local a = cjson.decode(ARGV[1])
local rstep = redis.call('HGET', run_key, 'step')
if not rstep then
  return redis.error_reply('NOT_FOUND run')
end
local held = redis.call('HGET', held_key, a.call)
if not held or cjson.decode(held).decision_id ~= a.id then
  return redis.error_reply('STALE decision ' .. a.id .. ' is not held for call ' .. a.call)
end
redis.call('HDEL', held_key, a.call)
redis.call('SADD', seen_key, a.id)
inherit(run_key, seen_key)
a.event.step = redis.call('HGET', call_key, 'step') or rstep
emit(events_key, a.event)
outcome(run_key, a.id, a.call, 'rejected', a.reason)
return 1
