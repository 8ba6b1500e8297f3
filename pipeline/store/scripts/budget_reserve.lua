-- Reserve: hold tokens and cost of a budget for a holder, unless that would
-- pass one of its limits (a limit of 0 is none). The hold is kept as
-- field "hold:<holder>" = "<tokens> <cost>" until it is settled or
-- released (budget_settle.lua).
-- KEYS: 1 the budget hash
-- ARGV[1]: {tokens, cost, limit (tokens), limit_cost, stored (read the
--   limits from the hash instead: a batch's), holder}
-- Returns {1, spent tokens, spent cost} when reserved, {0, ...} when not.
local budget_key = KEYS[1]
local a = cjson.decode(ARGV[1])
local limit, limitCost = a.limit, a.limit_cost
if a.stored then
  local l = redis.call('HMGET', budget_key, 'limit', 'limit_cost')
  limit, limitCost = tonumber(l[1] or '0'), tonumber(l[2] or '0')
end
local s = redis.call('HMGET', budget_key, 'spent', 'spent_cost')
local spent, spentCost = tonumber(s[1] or '0'), tonumber(s[2] or '0')
if limit <= 0 and limitCost <= 0 then
  return {0, spent, spentCost}
end
if limit > 0 and spent + a.tokens > limit or limitCost > 0 and spentCost + a.cost > limitCost then
  return {0, spent, spentCost}
end
spent = redis.call('HINCRBY', budget_key, 'spent', a.tokens)
if a.cost ~= 0 then
  spentCost = redis.call('HINCRBY', budget_key, 'spent_cost', a.cost)
end
redis.call('HSET', budget_key, 'hold:' .. a.holder, string.format('%d %d', a.tokens, a.cost))
return {1, spent, spentCost}
