-- ClaimOutcomes: take the run's waiting decision outcomes for one publisher
-- at a time. A claim lasts `claim` ms by the caller's clock (the claim
-- holds when it was taken; its key expires after as long, to be cleaned
-- up); within it other publishers get nothing, after it (the publisher
-- died) the outcomes are there again.
-- KEYS: 1 outcomes stream, 2 its claim
-- ARGV[1]: {now (ms), claim (ms), count (at most this many)}
-- Returns the entries claimed, as XRANGE gives them ({} when none or
-- claimed by another).
local outcomes_key, claim_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local at = redis.call('GET', claim_key)
if at and tonumber(at) + a.claim > a.now then
  return {}
end
local entries = redis.call('XRANGE', outcomes_key, '-', '+', 'COUNT', a.count)
if #entries > 0 then
  redis.call('SET', claim_key, a.now, 'PX', a.claim)
end
return entries
