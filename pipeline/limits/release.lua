-- Release: free a holder's slot and hand its turn to the oldest waiter.
-- KEYS: 1 slots, 2 the tenant's slots, 3 waiters, 4 the batch's slots
-- ARGV: 1 holder
-- Returns the waiter woken, or false when none waits (or the holder held
-- no slot: its lease had ended, and whoever took the slot since wakes
-- the next one).
local held = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
if held == 0 then
  return false
end
local w = redis.call('ZPOPMIN', KEYS[3])
if #w == 0 then
  return false
end
return w[1]
