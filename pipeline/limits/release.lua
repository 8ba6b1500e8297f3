-- Release: free a holder's slot and hand its turn to the oldest waiter.
-- KEYS: 1 slots, 2 the tenant's slots, 3 waiters, 4 the batch's slots
-- ARGV[1]: {holder}
-- Returns the waiter woken, or false when none waits (or the holder held
-- no slot: its lease had ended, and whoever took the slot since wakes
-- the next one).
local slots_key, tenant_key, waiters_key, batch_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local holder = cjson.decode(ARGV[1]).holder
local held = redis.call('ZREM', slots_key, holder)
redis.call('ZREM', tenant_key, holder)
redis.call('ZREM', batch_key, holder)
if held == 0 then
  return false
end
local w = redis.call('ZPOPMIN', waiters_key)
if #w == 0 then
  return false
end
return w[1]
