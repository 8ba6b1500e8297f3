-- OutcomesSent: delete published entries from the run's outbox of decision
-- outcomes and approval requests, end the claim on it, and delete the
-- stream once it is empty: an emptied stream would keep its few hundred
-- bytes for as long as the run lives (a parked run's included).
-- KEYS: 1 outcomes stream, 2 its claim
-- ARGV[1]: {ids (the entries' stream ids)}
-- Returns the number of entries deleted.
local outcomes_key, claim_key = KEYS[1], KEYS[2]
local a = cjson.decode(ARGV[1])
local n = 0
for i = 1, #a.ids, 1000 do -- unpack's limit is a few thousand values
  n = n + redis.call('XDEL', outcomes_key, unpack(a.ids, i, math.min(i + 999, #a.ids)))
end
redis.call('DEL', claim_key)
if redis.call('XLEN', outcomes_key) == 0 then
  redis.call('DEL', outcomes_key)
end
return n
