-- ClaimOutcomes: take the run's waiting decision outcomes for one publisher
-- at a time. A claim lasts ARGV 2 ms by the caller's clock (the claim
-- holds when it was taken; its key expires after as long, to be cleaned
-- up); within it other publishers get nothing, after it (the publisher
-- died) the outcomes are there again.
-- KEYS: 1 outcomes stream, 2 its claim
-- ARGV: 1 now (ms), 2 claim (ms), 3 at most this many
-- Returns the entries claimed, as XRANGE gives them ({} when none or
-- claimed by another).
local at = redis.call('GET', KEYS[2])
if at and tonumber(at) + tonumber(ARGV[2]) > tonumber(ARGV[1]) then
  return {}
end
local entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', ARGV[3])
if #entries > 0 then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
end
return entries
