-- Settle: end a holder's hold of a budget with what it used: the budget
-- counts the use instead of the hold. A hold already released (its holder
-- was taken for dead) counts the use on top. Release is a settle that
-- only acts on a hold that is there (holds.go: a claim's hold repaired from
-- its run's state).
-- KEYS: 1 the budget hash
-- ARGV[1]: {holder, tokens (used), cost (used), release}
-- Returns 1 when a hold was there, 0 when not.
local budget_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local hold = redis.call('HGET', budget_key, 'hold:' .. a.holder)
if not hold and a.release then
  return 0
end
local tokens, cost = 0, 0
if hold then
  local sp = string.find(hold, ' ', 1, true)
  tokens, cost = tonumber(string.sub(hold, 1, sp - 1)), tonumber(string.sub(hold, sp + 1))
  redis.call('HDEL', budget_key, 'hold:' .. a.holder)
end
local dt, dc = a.tokens - tokens, a.cost - cost
if dt ~= 0 then
  redis.call('HINCRBY', budget_key, 'spent', dt)
end
if dc ~= 0 then
  redis.call('HINCRBY', budget_key, 'spent_cost', dc)
end
if hold then
  return 1
end
return 0
