-- DropHeld: reject a held decision that was never applied (its hold
-- expired, or its call will never park).
-- KEYS: 1 run hash, 2 call hash, 3 events stream, 4 seen decision ids set,
--       5 held decisions hash
-- ARGV: 1 decision id, 2 call id, 3 the held entry's prefix that names this
--       decision id, 4-5 decision.rejected event JSON around its step,
--       6 the reason, for the outbox of decision outcomes
-- Returns 1.
local rstep = redis.call('HGET', KEYS[1], 'step')
if not rstep then
  return redis.error_reply('NOT_FOUND run')
end
local held = redis.call('HGET', KEYS[5], ARGV[2])
if not held or string.sub(held, 1, #ARGV[3]) ~= ARGV[3] then
  return redis.error_reply('STALE decision ' .. ARGV[1] .. ' is not held for call ' .. ARGV[2])
end
local step = redis.call('HGET', KEYS[2], 'step') or rstep
redis.call('HDEL', KEYS[5], ARGV[2])
redis.call('SADD', KEYS[4], ARGV[1])
inherit(KEYS[1], KEYS[4])
redis.call('XADD', KEYS[3], '*', 'e', ARGV[4] .. step .. ARGV[5])
outcome(KEYS[1], ARGV[1], ARGV[2], 'rejected', ARGV[6])
return 1
